"""The CLI: exit statuses, one-line errors, nothing written on bad input, and a SIGKILL resume."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from binmetric_sweep.sweep.cli import main

from .helpers import REPO, tiny


def write_sweep(path, sweep_dict) -> str:
    path.write_text(yaml.safe_dump(sweep_dict))
    return str(path)


def cli(*args, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "binmetric_sweep.sweep", *args],
        capture_output=True,
        text=True,
        env=env,
        **kwargs,
    )


BAD = [
    ({"counts": "expectd"}, "counts"),
    ({"counts": "expected"}, "replicates"),
    ({"grid": {**tiny()["grid"], "alpha": [1.2]}}, "grid.alpha"),
    ({"grid": {**tiny()["grid"], "n_phi": [-1]}}, "grid.n_phi"),
    ({"grid": {**tiny()["grid"], "rho": "eta", "eta": "rho"}}, "grid.rho"),
    ({"extra": 1}, "extra"),
]


@pytest.mark.parametrize(("change", "field"), BAD)
def test_bad_sweep_files_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, change, field):
    path = write_sweep(tmp_path / "bad.yaml", tiny(**change))
    out = tmp_path / "out"
    assert main(["run", path, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sweep: error: ") and "\n" not in err and field in err
    assert not out.exists()


def test_bad_options_exit_2(tmp_path, capsys):
    path = write_sweep(tmp_path / "ok.yaml", tiny())
    for argv in (
        ["run", path, "--out", str(tmp_path / "o"), "--backend", "slurm"],
        ["run", path, "--out", str(tmp_path / "o"), "--max-configurations", "-3"],
        ["run", path],
        ["status", str(tmp_path / "nothing-here")],
        ["frobnicate"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("sweep: error: ") and "\n" not in err, err
    assert not (tmp_path / "o").exists()
    big = write_sweep(
        tmp_path / "big.yaml", tiny(grid={**tiny()["grid"], "n_m": {"range": [0, 10**6, 1]}})
    )
    assert main(["run", big, "--out", str(tmp_path / "o")]) == 2
    assert "--max-configurations" in capsys.readouterr().err


def test_run_status_show_plot_through_the_console(tmp_path):
    path = write_sweep(tmp_path / "s.yaml", tiny(shard_size=8))
    out = tmp_path / "out"
    done = cli("run", path, "--out", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "2 computed" in done.stdout
    state = cli("status", str(out))
    assert state.returncode == 0 and "2 done, 0 to do, 0 corrupt" in state.stdout
    show = cli(
        "show",
        str(out),
        "--rows",
        "n_phi",
        "--cols",
        "n_m",
        "--value",
        "eps",
        "--where",
        "alpha=0.6",
        "rho=0.7",
        "gamma=0.05",
    )
    assert show.returncode == 0, show.stderr
    assert show.stdout.splitlines()[0].split() == ["n_phi\\n_m", "0", "1000"]
    assert show.stdout.splitlines()[1].split()[:2] == ["0", "1.000"]
    vague = cli("show", str(out), "--rows", "n_phi", "--cols", "n_m")
    assert vague.returncode == 2 and "--where must fix" in vague.stderr
    png = tmp_path / "eps.png"
    plot = cli(
        "plot",
        str(out),
        "--x",
        "n_m",
        "--lines",
        "n_phi",
        "--value",
        "eps",
        "--where",
        "alpha=0.6",
        "rho=0.7",
        "gamma=0.05",
        "-o",
        str(png),
    )
    assert plot.returncode == 0, plot.stderr
    assert png.stat().st_size > 1000
