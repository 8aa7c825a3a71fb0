"""`python -m kernelvault …`: the `kernelvault` command (for an environment whose scripts are not on PATH)."""

import sys

from kernelvault.cli import main

sys.exit(main())
