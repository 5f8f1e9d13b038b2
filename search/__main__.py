"""``python -m search``: the ``search`` command line."""

import sys

from search.cli import main

sys.exit(main())
