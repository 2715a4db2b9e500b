"""Faults injected for real (kills, corrupt files, a file-size limit, a second writer, edits,
NaN) and bad input thrown at the parser: nothing lost, nothing duplicated, bit for bit.

Each test compares the finished directory with an undisturbed run of the same
sweep and seed, and records the injection (see ``tests/sweep/faults.py``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binmetric_sweep import sweep
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.spec.config import load_sweep
from binmetric_sweep.sweep.spec.grid import expand_grid

from .faults import check_against_reference, record, visible_files_are_whole
from .helpers import REPO, tiny

SPEC = tiny(shard_size=4)  # 16 configurations in 4 shards, 3 replicates each
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "out"
    sweep.run(SPEC, out)
    return sweep.load_surface(out), sweep.load_fits(out)


@pytest.fixture
def sweep_file(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    return path


def run_cli(sweep_file, out, *extra, **kwargs):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sweep",
            "run",
            str(sweep_file),
            "--out",
            str(out),
            "--no-progress",
            *extra,
        ],
        capture_output=True,
        text=True,
        env=ENV,
        **kwargs,
    )


# A driver that dies by SIGKILL at its k-th Parquet write, half-way through the file.
KILL_AT_WRITE = textwrap.dedent(
    """
    import os, signal, sys
    from binmetric_sweep import sweep
    from binmetric_sweep.sweep.storage import store
    target, count, write_table = int(sys.argv[3]), [0], store.pq.write_table

    def write_then_die(table, where, **kwargs):
        count[0] += 1
        if count[0] == target:
            where.write(b"PAR1" + os.urandom(4096))
            where.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        return write_table(table, where, **kwargs)

    store.pq.write_table = write_then_die
    sweep.run(sys.argv[1], sys.argv[2])
    """
)


# A driver that stops once it has written its first shard's two Parquet files (fits, then
# surface; before their renames), says so in argv[3], and waits for argv[4] to go on.
HOLD_AFTER_SHARD = textwrap.dedent(
    """
    import os, sys, time
    from binmetric_sweep import sweep
    from binmetric_sweep.sweep.storage import store
    held, release, count, write_table = sys.argv[3], sys.argv[4], [0], store.pq.write_table

    def write_then_wait(table, where, **kwargs):
        written = write_table(table, where, **kwargs)
        count[0] += 1
        if count[0] == 2:
            open(held, "w").close()
            deadline = time.monotonic() + 300
            while not os.path.exists(release) and time.monotonic() < deadline:
                time.sleep(0.05)
        return written

    store.pq.write_table = write_then_wait
    sweep.run(sys.argv[1], sys.argv[2])
    """
)


# The CLI with no file allowed to grow beyond 12 kB (shard files are larger): RLIMIT_FSIZE.
LIMITED = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_FSIZE, (12_000, 12_000))
    from binmetric_sweep.sweep.cli import main
    sys.exit(main(["run", sys.argv[1], "--out", sys.argv[2], "--no-progress"]))
    """
)


@pytest.mark.parametrize("write", [1, 2, 5])
def test_sigkill_during_a_shard_write(tmp_path, sweep_file, reference, write):
    out = tmp_path / "out"
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AT_WRITE, str(sweep_file), str(out), str(write)],
        env=ENV,
        capture_output=True,
    )
    assert killed.returncode == -signal.SIGKILL
    visible_files_are_whole(out)
    assert sweep.status(out).done == (write - 1) // 2  # fits then surface, per shard
    resumed = run_cli(sweep_file, out)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.count("\n") == 1 and "removed 1 temporary" in resumed.stdout
    check_against_reference(out, reference, "SIGKILL during a shard write")


@pytest.mark.parametrize("delay", [0.0, 0.3])
def test_sigkill_at_a_random_point(tmp_path, sweep_file, reference, delay):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "binmetric_sweep.sweep",
            "run",
            str(sweep_file),
            "--out",
            str(out),
            "--no-progress",
        ],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and list((out / "fits").glob("*shard-*")):
            break
        time.sleep(0.01)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    visible_files_are_whole(out)
    assert run_cli(sweep_file, out).returncode == 0
    check_against_reference(out, reference, "SIGKILL at a random point")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "other shard"])
def test_corrupt_shard_file_is_reported_and_only_it_recomputed(tmp_path, reference, damage):
    out = tmp_path / "out"
    sweep.run(SPEC, out)
    victim = out / "surface" / "shard-00003.parquet"
    if damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:100])
    elif damage == "garbage":
        victim.write_bytes(np.random.default_rng(0).bytes(victim.stat().st_size))
    else:
        victim.write_bytes((out / "surface" / "shard-00001.parquet").read_bytes())
    state = sweep.status(out)
    assert list(state.corrupt) == [3] and state.done == 3
    assert any("corrupt: shard 3" in line for line in state.lines())
    report = sweep.run(SPEC, out)
    assert (report.computed, report.recomputed_corrupt) == (1, [3])
    check_against_reference(out, reference, f"shard file {damage}")


def test_file_size_limit_stops_cleanly_and_resumes(tmp_path, sweep_file, reference):
    out = tmp_path / "out"

    full = subprocess.run(
        [sys.executable, "-c", LIMITED, str(sweep_file), str(out)],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert full.returncode == 2
    assert full.stderr.count("\n") == 1 and "no room to write" in full.stderr
    visible_files_are_whole(out)
    assert not list(out.rglob("*.tmp"))
    assert run_cli(sweep_file, out).returncode == 0
    check_against_reference(out, reference, "file-size limit during a write")


def test_second_writer_is_refused_while_the_first_runs(tmp_path, reference):
    slow = tmp_path / "slow.yaml"
    slow.write_text(yaml.safe_dump({**SPEC, "shard_size": 1}))
    out, held, release = tmp_path / "out", tmp_path / "held", tmp_path / "release"
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD_AFTER_SHARD, str(slow), str(out), str(held), str(release)],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not held.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held.exists(), "the first writer never wrote a shard"
        second = run_cli(slow, out)
    finally:
        release.touch()
        _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert second.returncode == 2 and "is being written by pid" in second.stderr
    assert sweep.status(out).done == 16
    check_against_reference(out, reference, "two runs on one directory")


def test_edited_sweep_file_is_refused_naming_the_change(tmp_path, sweep_file, reference):
    out = tmp_path / "out"
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AT_WRITE, str(sweep_file), str(out), "5"],
        env=ENV,
        capture_output=True,
    )
    assert killed.returncode == -signal.SIGKILL
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump({**SPEC, "seed": 12, "gamma": [0.05]}))
    before = sorted(p.name for p in out.rglob("*"))
    refused = run_cli(edited, out)
    assert refused.returncode == 2 and "differs in gamma, seed" in refused.stderr
    assert sorted(p.name for p in out.rglob("*")) == before
    assert run_cli(sweep_file, out).returncode == 0
    check_against_reference(out, reference, "sweep file edited before the resume")


def test_nonfinite_kernel_output_is_flagged_not_averaged(tmp_path, reference):
    def inject(fits):
        values = {
            name: np.array(getattr(fits, name), dtype=float, copy=True)
            for name in ("post_mean", "post_sd", "ci_low")
        }
        # lanes are (configuration, replicate) pairs: poison one replicate of the first
        # configuration and two of the second, so each keeps a finite fit to average
        values["post_mean"][0] = np.nan
        values["post_sd"][4] = np.inf
        values["ci_low"][5] = -np.inf
        return fits._replace(**values)

    sweep.run(SPEC, tmp_path / "out", fault=inject)
    fits = sweep.load_fits(tmp_path / "out")
    flagged = fits[~fits.finite]
    assert len(flagged) == 3 * 4  # three poisoned lanes in each of the 4 shards
    surface = sweep.load_surface(tmp_path / "out")
    assert surface.groupby("config_id").nonfinite.first().sum() == 12
    assert np.isfinite(surface.se_mean).all() and np.isfinite(surface.bias_mean).all()
    clean = reference[0].set_index(["config_id", "gamma"]).sort_index()
    hit = surface.set_index(["config_id", "gamma"]).sort_index()
    changed = hit.nonfinite > 0
    assert (hit.se_mean[~changed] == clean.se_mean[~changed]).all()
    record("NaN or infinity in a kernel's output", True)


# --- bad input -----------------------------------------------------------------------------

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.lists(st.floats(-2, 2) | st.integers(-5, 10**10), max_size=4),
    st.dictionaries(st.text(max_size=6), st.integers() | st.text(max_size=3), max_size=2),
    st.sampled_from(["rho", "eta", "alpha", "n_phi", "known", "gamma", ""]),
    st.fixed_dictionaries({"linspace": st.lists(st.floats(-5, 5), max_size=4)}),
    st.fixed_dictionaries({"range": st.lists(st.integers(-3, 10**9), max_size=4)}),
)
TOP = [
    "name",
    "counts",
    "replicates",
    "seed",
    "method",
    "sampler",
    "interval",
    "gamma",
    "power",
    "grid",
    "shard_size",
    "typo",
]
AXES = ["alpha", "rho", "eta", "n_phi", "n_rho_eta", "psi", "n_m", "alhpa"]


@st.composite
def mutated_sweeps(draw):
    spec = tiny()
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            spec[draw(st.sampled_from(TOP))] = draw(JUNK)
        elif isinstance(spec.get("grid"), dict):
            spec["grid"] = {**spec["grid"], draw(st.sampled_from(AXES)): draw(JUNK)}
    if draw(st.booleans()):
        spec.pop(draw(st.sampled_from(["name", "grid"])), None)
    return spec


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_sweeps())
def test_generated_sweep_files_are_accepted_or_refused_in_one_line(spec):
    try:
        expand_grid(load_sweep(spec), max_configurations=100_000)
    except SweepError as err:
        message = str(err)
        assert message and "\n" not in message
        assert message.split(":")[0].strip(), message  # starts with the field


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mutated_sweeps())
def test_refused_sweep_files_exit_2_and_write_nothing(tmp_path_factory, spec):
    try:
        expand_grid(load_sweep(spec), max_configurations=100_000)
        return  # an accepted mutation: nothing to check here
    except SweepError:
        pass
    where = tmp_path_factory.mktemp("bad")
    path = where / "bad.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert (
        main(
            [
                "run",
                str(path),
                "--out",
                str(where / "out"),
                "--no-progress",
                "--max-configurations",
                "100000",
            ]
        )
        == 2
    )
    assert not (where / "out").exists()
    record("bad sweep file (generated)", True)
