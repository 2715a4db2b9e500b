"""`sweep run`'s compilation cache: where it goes, what turns it off, the same numbers from it;
exported programs kept there, found again, and traced afresh when their file is damaged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import yaml

from binmetric_sweep.sweep.api import load_fits, load_surface
from binmetric_sweep.sweep.execution.compile_cache import (
    ENV_VAR,
    PROGRAMS_FOLDER,
    ExportedProgram,
    add_compile_listener,
    default_cache_dir,
    programs_dir,
    remove_compile_listener,
)

from .helpers import REPO, sorted_surface, tiny


def test_the_default_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "binmetric-sweep" / "xla"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "binmetric-sweep" / "xla"
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.setenv(ENV_VAR, "off")
    assert default_cache_dir() is None


def _cli(tmp_path, xdg: str, *args) -> subprocess.CompletedProcess:
    """``python -m binmetric_sweep.sweep`` with no JAX cache settings of its own.

    (The suite's are dropped.)
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE")) and k != ENV_VAR
    }
    env.update(PYTHONPATH=str(REPO), XDG_CACHE_HOME=str(tmp_path / xdg))
    return subprocess.run(
        [sys.executable, "-m", "binmetric_sweep.sweep", "run", *args, "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
    )


def test_a_run_from_the_cache_gives_the_same_numbers_and_a_bad_cache_exits_2(tmp_path):
    # ρ and η known: one small program to compile, so the subprocesses stay quick.
    sweep = tmp_path / "known.yaml"
    sweep.write_text(yaml.safe_dump(tiny(grid={**tiny()["grid"], "n_rho_eta": "known"})))
    cache = tmp_path / "xdg" / "binmetric-sweep" / "xla"
    first = _cli(tmp_path, "xdg", str(sweep), "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr
    entries = set(os.listdir(cache))
    assert entries  # the default directory, under XDG_CACHE_HOME
    exported = set(os.listdir(cache / PROGRAMS_FOLDER))
    assert any(name.startswith("quadrature_known-") for name in exported)
    # Named this time, and found there. (Not quite nothing new: now and then
    # one program more, compiled in one run and not the other. A flag named
    # --xla-… made every key new: JAX counts such arguments as XLA flags.)
    second = _cli(
        tmp_path, "other", str(sweep), "--out", str(tmp_path / "b"), "--compile-cache", cache
    )
    assert second.returncode == 0, second.stderr
    assert len(set(os.listdir(cache)) - entries) <= len(entries) // 20
    assert set(os.listdir(cache / PROGRAMS_FOLDER)) == exported  # each found, none traced again
    assert not (tmp_path / "other").exists()
    for load in (load_fits, load_surface):
        pd.testing.assert_frame_equal(
            sorted_surface(load(tmp_path / "a")), sorted_surface(load(tmp_path / "b"))
        )
    # Turned off: no directory made, even for a run with nothing left to compute.
    off = _cli(tmp_path, "third", str(sweep), "--out", str(tmp_path / "a"), "--no-compile-cache")
    assert off.returncode == 0 and "0 computed" in off.stdout, off.stderr
    assert not (tmp_path / "third").exists()
    on = _cli(tmp_path, "third", str(sweep), "--out", str(tmp_path / "a"))
    assert on.returncode == 0 and (tmp_path / "third" / "binmetric-sweep" / "xla").is_dir()
    # A directory that cannot be made: one line naming the flag, nothing written.
    (tmp_path / "file").write_text("")
    bad_dir = tmp_path / "file" / "x"
    bad = _cli(tmp_path, "xdg", str(sweep), "--out", tmp_path / "d", "--compile-cache", bad_dir)
    assert bad.returncode == 2
    assert bad.stderr.startswith("sweep: error: --compile-cache: ") and bad.stderr.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_an_exported_program_is_found_again_and_a_damaged_file_is_traced_afresh():
    """Kept in the suite's cache directory (tests/conftest.py), keyed by name, static and types."""
    directory = programs_dir()
    assert directory == Path(jax.config.jax_compilation_cache_dir) / PROGRAMS_FOLDER

    def jitted():
        return jax.jit(lambda x, n: {"sum": jnp.cumsum(jnp.sin(x)) * n, "n": n})

    x = np.linspace(0.0, 3.0, 7)
    name = f"test_program_{os.getpid()}"
    first = ExportedProgram(jitted(), name, (0.5,))
    want = jax.device_get(first(x, 2))
    (path,) = directory.glob(f"{name}-*")
    # Another shape, or other static values, is another program with a file of its own.
    first(x[:3], 2)
    ExportedProgram(jitted(), name, (0.25,))(x, 2)
    assert len(list(directory.glob(f"{name}-*"))) == 3
    # A new process's view: nothing in memory, the file read back (not written again);
    # then a damaged file, traced afresh and written whole again.
    for damage in (None, b"garbage", b""):
        if damage is not None:
            path.write_bytes(damage)
        before = path.stat().st_ino
        got = jax.device_get(ExportedProgram(jitted(), name, (0.5,))(x, 2))
        assert got.keys() == want.keys()
        assert all(np.array_equal(got[k], want[k]) for k in want)
        # A draft renamed over it is another file (both existed at once).
        assert (path.stat().st_ino == before) == (damage is None)
        assert path.stat().st_size > 100
    assert not list(directory.glob("*.tmp"))
    # Prepared ahead (as the benchmark does), a call prepares nothing more.
    events = []

    def listen(program, begun):
        events.append((program, begun))

    add_compile_listener(listen)
    try:
        ahead = ExportedProgram(jitted(), name, (0.75,))
        ahead.prepare(x, 2)
        assert events == [(name, True), (name, False)]
        ahead(x, 3)
        assert len(events) == 2
    finally:
        remove_compile_listener(listen)
