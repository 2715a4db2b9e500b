"""Test-wide settings.

- The kernels are checked in float64, as the runner uses them.
- One persistent XLA compilation cache for the whole session, shared through
  the environment with the subprocesses (CLI runs, killed drivers) and Ray
  workers the tests start: each compiles nothing this process has compiled.
  A cached executable is the same program, so results stay bit-identical.
"""

import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="binmetric-sweep-xla-")
os.environ["JAX_COMPILATION_CACHE_DIR"] = _CACHE
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"

import jax  # noqa: E402 - after the cache settings, which jax reads at import

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_compilation_cache_dir", _CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CACHE, ignore_errors=True)
