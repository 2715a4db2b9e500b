"""binmetric-sweep orchestration: sweep files → configurations → shards → fits → Parquet.

Installed as ``binmetric_sweep.sweep`` (``from binmetric_sweep import sweep``). The
Python API is :func:`run`, :func:`status`, :func:`load_surface`, :func:`load_fits` and
:func:`plan` (a :class:`Plan`; more of the planner in ``binmetric_sweep.sweep.plan``) and
:func:`compare` (a :class:`Comparison`; ``sweep compare``);
``sweep`` (or ``binmetric-sweep``) on the command line is a thin layer over them.
"""

__version__ = "0.34.0"
#: The version that last changed a fit's numbers (its kernels or chunking) or
#: the columns of the tables written (0.34.0: the surface's coverage interval).
#: A sweep directory resumes under any version with the same one, so its shards
#: share one set of numbers and one schema; one written before 0.17.0 counts its
#: own version as its numbers'.
NUMBERS_VERSION = "0.34.0"

from binmetric_sweep.sweep.api import RunReport, SweepStatus, load_fits, load_surface, run, status  # noqa: E402
from binmetric_sweep.sweep.compare import Comparison, compare  # noqa: E402  (likewise)
from binmetric_sweep.sweep.errors import SweepError  # noqa: E402
from binmetric_sweep.sweep.plan import Plan, plan  # noqa: E402  (the function shadows the submodule's name)

__all__ = [
    "__version__",
    "NUMBERS_VERSION",
    "Comparison",
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
