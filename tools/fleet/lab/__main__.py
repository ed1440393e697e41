"""``python -m fleet.lab ACTION ...``: ``fleet lab ACTION ...`` (the Makefile's lab targets)."""

import sys

from fleet.cli import main

sys.exit(main(["lab", *sys.argv[1:]]))
