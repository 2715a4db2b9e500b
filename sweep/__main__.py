"""``python -m sweep``: the same as the ``sweep`` command."""

import sys

from sweep.cli import main

sys.exit(main())
