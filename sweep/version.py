"""The package's version, and the version of the numbers and columns it writes.

Its own module, below everything else in :mod:`binmetric_sweep.sweep`, so that the
writers (the store, the records, the CLI) read it without importing the package's
``__init__``.
"""

__all__ = ["NUMBERS_VERSION", "__version__"]

__version__ = "0.44.0"
#: The version that last changed a fit's numbers (its kernels or chunking) or
#: the columns of the tables written (0.36.0: a row per estimator, ``estimate``
#: and ``se`` for ``post_mean`` and ``post_sd``, ``se_mean`` for ``sd_mean``;
#: 0.44.0: the exact posterior with ρ, η known, whose window is now placed at
#: its mode).
#: A sweep directory resumes under any version with the same one, so its shards
#: share one set of numbers and one schema; one written before 0.17.0 counts its
#: own version as its numbers'.
NUMBERS_VERSION = "0.44.0"
