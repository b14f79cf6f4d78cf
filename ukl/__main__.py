"""Allow `python3 -m ukl`."""
import sys

from ukl.cli import main

sys.exit(main())
