"""``python -m memtide ARGS``: the ``memtide`` command (for environments whose scripts
directory is not on PATH)."""

import sys

from memtide._cli import main

if __name__ == "__main__":
    sys.exit(main())
