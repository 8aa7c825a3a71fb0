"""`python -m kernelvault.cli …`: the `kernelvault` command."""

import sys

from kernelvault.cli import main

sys.exit(main())
