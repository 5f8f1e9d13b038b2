"""``python -m search``: the ``search`` command line.

It ends without the interpreter's teardown, after running the ``atexit`` hooks (what they
close, the storages among them, is closed): unloading torch's and Ray's modules kept a
finished launch's prompt waiting a second.
"""

import atexit
import os
import sys

from search.cli import main

code = main()
atexit._run_exitfuncs()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
