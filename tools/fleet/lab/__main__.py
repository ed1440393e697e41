import sys

from fleet.lab.cli import main

sys.exit(main())
