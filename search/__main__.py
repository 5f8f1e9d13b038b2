"""``python -m search``: the ``search`` command line (:func:`search.cli.main`, which ends the
process once the command is done)."""

from search.cli import main

main()
