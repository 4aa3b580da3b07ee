import sys

from hzfast.cli import main

sys.exit(main())
