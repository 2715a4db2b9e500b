"""``python -m binmetric_sweep.sweep``: the same as the ``sweep`` command."""

import sys

from binmetric_sweep.sweep.cli import main

sys.exit(main())
