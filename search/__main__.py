"""``python -m search``: the ``search`` command line."""

import sys

from search._cli import main

sys.exit(main())
