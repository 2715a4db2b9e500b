"""binmetric-sweep orchestration: sweep files → configurations → shards → fits → Parquet.

Installed as ``binmetric_sweep.sweep`` (``from binmetric_sweep import sweep``). The
Python API is :func:`run`, :func:`status`, :func:`load_surface`, :func:`load_fits` and
:func:`plan` (a :class:`Plan`; more of the planner in ``binmetric_sweep.sweep.plan``) and
:func:`compare` (a :class:`Comparison`; of a battles file, a leaderboard by method:
``binmetric_sweep.sweep.compare.compare_battles``; ``sweep compare``);
``sweep`` (or ``binmetric-sweep``) on the command line is a thin layer over them.
"""

from binmetric_sweep.sweep.api import (
    IncompleteSweepWarning,
    RunReport,
    SweepStatus,
    load_fits,
    load_surface,
    run,
    status,
)
from binmetric_sweep.sweep.compare import Comparison, compare
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.plan import Plan, plan  # the function shadows the submodule's name
from binmetric_sweep.sweep.version import NUMBERS_VERSION, __version__

__all__ = [
    "__version__",
    "NUMBERS_VERSION",
    "Comparison",
    "IncompleteSweepWarning",
    "RunReport",
    "SweepError",
    "SweepStatus",
    "compare",
    "load_fits",
    "load_surface",
    "Plan",
    "plan",
    "run",
    "status",
]
