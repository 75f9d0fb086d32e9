"""``python -m attnwidgets``: the same command line as ``attnwidgets`` (see :mod:`attnwidgets.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
