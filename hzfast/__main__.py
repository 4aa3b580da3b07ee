"""``python -m hzfast``: the ``hzfast`` command line."""
import sys

from hzfast.cli import main

if __name__ == "__main__":
    sys.exit(main())
