"""JAX's persistent compilation cache for sweep runs: each program compiled once per machine.

A NUTS program takes tens of seconds to compile on CPU, and the quadrature
driver's programs together about as long, often more than a small sweep's
fits. With the programs on disk a later process loads them instead: on the
2-core development CPU ``sweep run configs/quickstart.yaml`` took 22 s cold
and 11 s with its programs cached, a 4-configuration NUTS sweep 22.6 s and
6.8 s (ad hoc, 2026-11-26). A resumed sweep, the next sweep, and each Ray
worker process on a node after the first find them there. A cached
executable is the compiled program itself, so the numbers are the same bit
for bit (the test suite runs with one cache throughout).

JAX trusts its cache: whoever can write to the directory can make the
process run code. The default is under the user's own cache directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

from sweep.errors import SweepError

__all__ = ["DEFAULT", "ENV_VAR", "default_cache_dir", "use_compilation_cache"]

#: Ask :func:`use_compilation_cache` for :func:`default_cache_dir`.
DEFAULT = "default"
#: Environment variable naming the default directory, or "off" for none.
ENV_VAR = "BINMETRIC_SWEEP_COMPILE_CACHE"


def default_cache_dir() -> Path | None:
    """``$BINMETRIC_SWEEP_COMPILE_CACHE`` (None if "off"), else ``binmetric-sweep/xla`` in
    ``$XDG_CACHE_HOME`` or ``~/.cache``."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value:
        return None if value.lower() == "off" else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache"
    return Path(base) / "binmetric-sweep" / "xla"


def use_compilation_cache(path: str | Path | None = DEFAULT, strict: bool = True) -> Path | None:
    """Turn on JAX's persistent compilation cache in this process; the directory used, or None.

    Args:
        path: a directory (created if need be), :data:`DEFAULT` for
            :func:`default_cache_dir`, or None to leave JAX as it is.
        strict: whether a directory named by ``path`` that cannot be
            created is an error (:class:`SweepError` naming ``--compile-cache``)
            rather than a run without the cache. The default directory never is.

    A cache directory JAX already has (``JAX_COMPILATION_CACHE_DIR``, or set
    in code) is kept, with its settings. Otherwise every program is cached,
    however quickly it compiled: the quadrature driver's many small ones add up.
    """
    if path is None:
        return None
    if jax.config.jax_compilation_cache_dir:
        return Path(jax.config.jax_compilation_cache_dir)
    named = path != DEFAULT
    directory = Path(path).expanduser() if named else default_cache_dir()
    if directory is None:
        return None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not os.access(directory, os.W_OK):
            raise PermissionError("not writable")
    except OSError as err:
        if named and strict:
            reason = err.strerror or str(err)
            raise SweepError(
                f"--compile-cache: cannot use {str(directory)!r} as a cache directory ({reason}); "
                "name a writable directory, or pass --no-compile-cache"
            ) from None
        return None
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return directory
