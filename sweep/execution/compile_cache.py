"""Programs kept on disk for later runs: traced once (:mod:`jax.export`), compiled once per machine.

A NUTS program takes tens of seconds to compile on CPU, and the quadrature
driver's programs together about as long, often more than a small sweep's
fits. With the programs on disk a later process loads them instead, and a
small sweep runs in a fraction of its cold time (docs/design.md). A resumed
sweep, the next sweep, and each Ray worker process on a node after the first
find them there. A cached executable is the compiled program itself, so the
numbers are the same bit for bit (the test suite runs with one cache
throughout).

Before it compiles, a process traces each program, and the quadrature
rules are large: tracing a tiny sweep's four rules takes several seconds,
most of a cached run's time. So every program of :mod:`sweep.execution.programs` is run
through :mod:`jax.export` (:class:`ExportedProgram`): traced once, the
export then compiled and called. Where JAX has a cache directory, the
export is kept in its ``binmetric-sweep-programs`` folder too, and a later
process with the same code, versions and settings deserializes it instead
of tracing. Cached or traced afresh, it is the same export, so the numbers
do not depend on the cache.

JAX trusts its cache, and so does this: whoever can write to the directory
can make the process run code. The default is under the user's own cache
directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import os
import pickle
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import jax

from binmetric_sweep.sweep.errors import SweepError

__all__ = [
    "CompileClock",
    "DEFAULT",
    "ENV_VAR",
    "PROGRAMS_FOLDER",
    "ExportedProgram",
    "add_compile_listener",
    "default_cache_dir",
    "programs_dir",
    "remove_compile_listener",
    "use_compilation_cache",
]

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
    however quickly it compiled: the quadrature driver's many small ones add
    up (docs/performance.md).
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


#: The folder of JAX's cache directory that holds exported programs.
PROGRAMS_FOLDER = "binmetric-sweep-programs"
#: The code a program is traced from: any change to it makes every key new.
_TRACED_SOURCES = (
    "kernels",
    "sweep/execution/programs.py",
    "sweep/execution/compile_cache.py",
    "sweep/compare/analysis.py",
)
#: Packages whose versions are part of every key.
_VERSIONED = ("jax", "jaxlib", "numpyro", "numpy")
#: JAX settings that change what a function traces to.
_TRACING_FLAGS = (
    "jax_enable_x64",
    "jax_default_prng_impl",
    "jax_threefry_partitionable",
    "jax_default_matmul_precision",
    "jax_numpy_dtype_promotion",
    "jax_numpy_rank_promotion",
)


def programs_dir() -> Path | None:
    """Where exported programs are kept: :data:`PROGRAMS_FOLDER` in JAX's cache directory.

    None when JAX has no cache directory, or when the ``flatbuffers`` package
    that :mod:`jax.export` serializes with is missing.
    """
    directory = jax.config.jax_compilation_cache_dir
    if not directory:
        return None
    try:
        import flatbuffers  # noqa: F401 - what Exported.serialize needs
    except ImportError:
        return None
    return Path(directory) / PROGRAMS_FOLDER


@cache
def _code_fingerprint() -> str:
    """A digest of the traced code, the package versions and the JAX platform."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for source in _TRACED_SOURCES:
        path = root / source
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(str(file.relative_to(root)).encode())
            digest.update(file.read_bytes())
    for package in _VERSIONED:  # as imported, which an editable install's metadata may not be
        version = getattr(importlib.import_module(package), "__version__", "?")
        digest.update(f"{package}={version}".encode())
    digest.update(jax.default_backend().encode())
    return digest.hexdigest()


def _aval(x) -> str:
    typeof = getattr(jax, "typeof", None) or jax.core.get_aval
    aval = typeof(x)
    return f"{aval.str_short()}{'~' if getattr(aval, 'weak_type', False) else ''}"


#: Custom calls whose exports JAX does not promise to load under other
#: versions: Triton's, which the NUTS chain kernel makes on a GPU
#: (kernels.chain_kernel). An export here is kept for, and loaded by, the
#: same versions only (its key holds them), so it may hold one.
_UNVERSIONED_CALLS = [jax.export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")]


class ExportedProgram:
    """A jitted function called through its :mod:`jax.export` export, kept on disk if it can be.

    Calling it with arguments of a new structure, shape or dtype looks for
    the export in :func:`programs_dir` (by a key of ``name``, ``static``,
    the arguments' types, the traced code, the package versions and JAX's
    tracing settings); if absent it exports ``jitted`` and stores the export
    (written whole, then renamed into place). Either way the export is what
    runs, compiled once per process (and by JAX's own cache, once per
    machine).

    Args:
        jitted: a ``jax.jit`` function of arrays (pytrees of them).
        name: the program's name (``jit_<name>`` in HLO and profiles).
        static: everything else its program depends on (the arguments of the
            factory that built ``jitted``), by its ``repr``.
    """

    def __init__(self, jitted: Callable, name: str, static: tuple = ()):
        self.jitted, self.name, self.static = jitted, name, static
        self._calls: dict = {}
        self._lock = threading.Lock()

    def __call__(self, *args):
        call, out_tree, leaves = self._resolve(args)
        return jax.tree.unflatten(out_tree, call(*leaves))

    def prepare(self, *args) -> None:
        """Trace or load, then compile, the program these arguments run, ahead of a call.

        Thread-safe: each program is prepared once per signature, and a call
        that needs it meanwhile waits for it. Several programs can be prepared at
        once, in threads of their own (XLA compiles without the GIL).
        """
        self._resolve(args)

    @staticmethod
    def _signature(leaves, in_tree) -> tuple:
        return (str(in_tree), tuple(_aval(x) for x in leaves))

    def _resolve(self, args):
        leaves, in_tree = jax.tree.flatten(args)
        signature = self._signature(leaves, in_tree)
        found = self._calls.get(signature)
        if found is None:
            with self._lock:
                if signature not in self._calls:
                    with _compiling(self.name):
                        self._calls[signature] = self._load_or_export(leaves, in_tree, signature)
            found = self._calls[signature]
        call, out_tree = found
        return call, out_tree, leaves

    def _load_or_export(self, leaves, in_tree, signature):
        directory = programs_dir()
        if directory is None:
            return self._compile(None, leaves, in_tree)
        flags = tuple(getattr(jax.config, flag, None) for flag in _TRACING_FLAGS)
        key = repr((self.name, self.static, signature, flags, _code_fingerprint()))
        path = directory / f"{self.name}-{hashlib.sha256(key.encode()).hexdigest()[:40]}"
        # Processes that need the same program at once (Ray workers on a node, or two
        # runs) take turns: the first traces and compiles it, the others then find
        # the export and JAX's compiled program in the cache instead of compiling too.
        with _turn(path.with_name(f".{path.name}.lock")):
            return self._compile(path, leaves, in_tree)

    def _compile(self, path: Path | None, leaves, in_tree):
        found = _read(path) if path is not None else None
        if found is not None:
            exported, out_tree = found
        else:
            exported, out_tree = self._export(leaves, in_tree)
            if path is not None:
                _write(path, exported, out_tree)

        def program(*xs):
            return exported.call(*xs)

        program.__name__ = program.__qualname__ = self.name
        # Compiled here, once (JAX's own cache first): a jitted function called from two
        # threads at once could compile it twice.
        return jax.jit(program).lower(*leaves).compile(), out_tree

    def _export(self, leaves, in_tree):
        out_trees = []

        def flat(*xs):
            out, out_tree = jax.tree.flatten(self.jitted(*jax.tree.unflatten(in_tree, xs)))
            out_trees.append(out_tree)
            return out

        flat.__name__ = flat.__qualname__ = self.name
        exported = jax.export.export(jax.jit(flat), disabled_checks=_UNVERSIONED_CALLS)(*leaves)
        return exported, out_trees[0]


_listeners: list[Callable[[str, bool], None]] = []
_listeners_lock = threading.Lock()


def add_compile_listener(listener: Callable[[str, bool], None]) -> None:
    """Call ``listener(name, True)`` when an :class:`ExportedProgram` begins preparing a program
    (tracing or loading its export, then compiling it) and ``listener(name, False)`` when done.

    A process-wide hook, as :mod:`jax.monitoring`'s are: a progress bar uses it to show a
    compiling phase, during which no fits finish. It may be called from several threads.
    """
    with _listeners_lock:
        _listeners.append(listener)


def remove_compile_listener(listener: Callable[[str, bool], None]) -> None:
    """Stop calling a listener added by :func:`add_compile_listener` (absent: nothing)."""
    with _listeners_lock:
        if listener in _listeners:
            _listeners.remove(listener)


class CompileClock:
    """Wall seconds during which some program was being prepared (traced or loaded, then
    compiled), from :func:`add_compile_listener`'s events, while it is open.

    Programs prepared at once in several threads count once: it is the time a run
    spent waiting on programs, not the sum of their compile times.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._open = 0
        self._since = 0.0
        self.seconds = 0.0

    def _event(self, name: str, begun: bool) -> None:
        now = time.perf_counter()
        with self._lock:
            if begun:
                if self._open == 0:
                    self._since = now
                self._open += 1
            elif self._open:
                self._open -= 1
                if self._open == 0:
                    self.seconds += now - self._since

    def __enter__(self) -> CompileClock:
        add_compile_listener(self._event)
        return self

    def __exit__(self, *exc) -> None:
        remove_compile_listener(self._event)


@contextmanager
def _compiling(name: str) -> Iterator[None]:
    with _listeners_lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(name, True)
    try:
        yield
    finally:
        for listener in listeners:
            listener(name, False)


@contextmanager
def _turn(lock: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock`` (created if need be; without one where it cannot be)."""
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock, "a+")  # noqa: SIM115 - held for the duration of the context
    except OSError:
        yield
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()  # releases the lock


def _read(path: Path):
    """``(exported, out_tree)`` from ``path``, or None if it is absent or unreadable."""
    try:
        data, out_tree = pickle.loads(path.read_bytes())
        return jax.export.deserialize(bytearray(data)), out_tree
    except Exception:  # absent, half-copied, from another layout: trace afresh
        return None


def _write(path: Path, exported, out_tree) -> None:
    """Store an export whole or not at all (a failure to write only costs a later trace)."""
    draft = None
    try:
        data = pickle.dumps((bytes(exported.serialize()), out_tree))
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as f:
            draft = f.name
            f.write(data)
        os.replace(draft, path)
    except Exception:  # no room, no permission, a program jax.export cannot serialize
        if draft is not None:
            Path(draft).unlink(missing_ok=True)
