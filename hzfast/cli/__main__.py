"""``python -m hzfast.cli``: the ``hzfast`` console script."""
import sys

from hzfast.cli import main

if __name__ == "__main__":
    sys.exit(main())
