"""The progress bar: one unit (fits), a compiling phase without a time left, never past 100 %."""

from __future__ import annotations

import io
import warnings

import jax
import jax.numpy as jnp

from binmetric_sweep import sweep
from binmetric_sweep.sweep.display.progress import ProgressBar
from binmetric_sweep.sweep.execution.compile_cache import (
    ExportedProgram,
    add_compile_listener,
    remove_compile_listener,
)

from .helpers import tiny


def frames(stream: io.StringIO) -> list[str]:
    return [f.strip() for f in stream.getvalue().replace("\r", "\n").split("\n") if f.strip()]


def test_a_new_program_is_reported_while_it_compiles_and_not_after():
    events = []

    def listener(name, begun):
        events.append((name, begun))

    program = ExportedProgram(jax.jit(lambda x: x * 2.0 + 1.0), "progress_test_affine")
    add_compile_listener(listener)
    try:
        program(jnp.ones(3))
        program(jnp.zeros(3))  # the same signature: compiled already
        program(jnp.ones(5))
    finally:
        remove_compile_listener(listener)
    program(jnp.ones(7))  # no listener any more
    name = "progress_test_affine"
    assert events == [(name, True), (name, False), (name, True), (name, False)]


def test_the_bar_counts_fits_shows_compiling_and_a_time_left_only_while_fitting():
    stream = io.StringIO()
    with ProgressBar("demo", total=10, done=2, file=stream) as bar:
        bar._on_compile("p", True)
        compiling = frames(stream)[-1]
        bar._on_compile("p", False)
        bar.add(3)
        fitting = frames(stream)[-1]
        bar.add(5)
        bar.shards(2, 2)
    shown = frames(stream)
    assert "2/10 fits" in compiling and "compiling" in compiling and "left" not in compiling
    assert "5/10 fits" in fitting and "left" in fitting and "compiling" not in fitting
    assert "10/10 fits" in shown[-1] and "shards 2/2" in shown[-1] and "left" not in shown[-1]
    assert bar.n == 10


def test_a_sampled_sweep_ends_at_exactly_all_its_fits_without_a_warning(tmp_path, capsys):
    spec = tiny(shard_size=5)  # 16 configurations x 3 replicates, in 4 shards
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sweep.run(spec, tmp_path / "out", progress=True)
    shown = [f for f in capsys.readouterr().err.replace("\r", "\n").split("\n") if f.strip()]
    assert not [w for w in caught if "tqdm" in str(w.category).lower()], caught
    assert "48/48 fits" in shown[-1] and "shards 4/4" in shown[-1]
    assert all("configs" not in f and "-00:" not in f for f in shown)
    counts = [int(f.split("|")[2].split("/")[0]) for f in shown if "|" in f]
    assert counts == sorted(counts) and counts[-1] == 48
