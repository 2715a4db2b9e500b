"""The CLI: exit statuses, one-line errors, nothing written on bad input, and a SIGKILL resume."""

from __future__ import annotations

import os
import subprocess
import sys

import matplotlib.image
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
    assert show.stderr.splitlines()[0].startswith(
        "eps at γ = 0.05, power 0.5: ε, the smallest difference"
    )
    assert "s of wall time between the first and the last shard written" in state.stdout
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
    wide = tmp_path / "wide.png"
    where = ["--where", "alpha=0.6", "rho=0.7", "gamma=0.05"]
    flags = [
        "--x",
        "n_m",
        "--lines",
        "n_phi",
        "--no-log-x",
        "--log-y",
        "--width",
        "7",
        "-o",
        str(wide),
    ]
    assert main(["plot", str(out), *where, *flags]) == 0
    assert matplotlib.image.imread(wide).shape[1] == 7 * 300  # 7 inches at 300 dpi


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path):
    """``sweep status DIR | head``, ``sweep show … | head``: no traceback, SIGPIPE's status."""
    out = tmp_path / "out"
    assert cli("run", write_sweep(tmp_path / "s.yaml", tiny()), "--out", str(out)).returncode == 0
    show = f"show {out} --rows n_phi --cols n_m --where alpha=0.6 rho=0.7 gamma=0.05"
    for command in (f"status {out}", show):
        for _ in range(3):  # the reader may go before or after the first write
            done = subprocess.run(
                f"set -o pipefail; {sys.executable} -m binmetric_sweep.sweep {command} | head -c 1",
                shell=True,
                executable="/bin/bash",
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
            # stderr may hold the table's note, never a traceback.
            assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
            assert len(done.stdout) == 1
            assert done.returncode in (0, 141)


def test_messages_read_as_a_person_writes_them(tmp_path, capsys):
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sweep: error: argument COMMAND: invalid choice: 'frobnicate'")
    assert err.count("sweep") == 1
    assert main(["plan", "--alpha"]) == 2
    assert capsys.readouterr().err.startswith("sweep: error: plan: argument --alpha")
    out = tmp_path / "out"
    assert (
        main(["run", write_sweep(tmp_path / "s.yaml", tiny(shard_size=16)), "--out", str(out)]) == 0
    )
    line = capsys.readouterr().out
    assert "1 shard (16 configurations)" in line, line
    assert main(["status", str(out)]) == 0
    status = capsys.readouterr().out
    assert "node: " in status and "(1 shard)" in status and "device: cpu (1 shard)" in status
    assert "cpu: cpu" not in status and "shards)" not in status


def test_every_plan_option_says_what_it_is_and_its_default_or_range(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option, needle in [
        ("--alpha A", "success rate α, in (0, 1)"),
        ("--rho R", "true-positive rate ρ, in [0, 1]"),
        ("--eta E", "true-negative rate η, in [0, 1]"),
        ("--eps EPS", "target difference ε"),
        ("--budget B", "most a campaign may cost"),
        ("--gamma G", "(default 0.05)"),
        ("--power P", "(default 0.8)"),
        ("--cost-human C", "(default 1)"),
        ("--cost-metric C", "price of one metric rating"),
        ("--n-rho-eta shared|known|N", "the default"),
        ("--replicates N", "(default 400)"),
        ("--seed N", "(default 0)"),
    ]:
        assert f"{option} " in text and needle in text, (option, needle)


def test_every_option_of_every_command_is_described_in_its_help():
    """A test that walks all parsers: each argument but -h has a help text."""
    import argparse

    from binmetric_sweep.sweep.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    undescribed = [
        f"sweep {name} {action.option_strings or action.metavar or action.dest}"
        for name, sub in commands.choices.items()
        for action in sub._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert not undescribed, undescribed
    assert all(choice.help for choice in commands._choices_actions)


def test_a_bare_sweep_lists_the_commands(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    for command in ("run", "status", "show", "plot", "plan", "compare"):
        assert f"    {command} " in out, command


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (["--alpha", "1.2"], "--alpha: 1.2 is out of range; allowed: (0, 1)"),
        (["--power", "0.3"], "--power: 0.3 is out of range; allowed: [0.5, 1)"),
        (["--cost-human", "0"], "--cost-human: 0.0 is out of range; allowed: > 0"),
    ],
)
def test_plan_flags_are_refused_in_flag_terms(flag, message, capsys):
    given = {"--alpha": "0.6", "--rho": "0.8", "--eta": "0.8", "--eps": "0.02"}
    given["--cost-metric"] = "0.002"
    given[flag[0]] = flag[1]
    assert main(["plan", *(x for pair in given.items() for x in pair)]) == 2
    assert capsys.readouterr().err.strip() == f"sweep: error: {message}"


def test_run_out_under_a_file_is_refused_in_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    path = write_sweep(tmp_path / "s.yaml", tiny())
    assert main(["run", path, "--out", str(blocker / "sub"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    expected = f"--out: {str(blocker / 'sub')!r} cannot be made: {str(blocker)!r} is a file"
    assert err == f"sweep: error: {expected}"


def test_compare_label_rules_list_what_works_and_refuse_all_before_anything(tmp_path, capsys):
    """--annotators/--judges offer refuse and majority; all (each label its own rating) is
    refused saying why, before the file is read: exit 2, one line, nothing written."""
    import argparse

    from binmetric_sweep.sweep.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    compare = commands.choices["compare"]
    for flag in ("--annotators", "--judges"):
        action = next(a for a in compare._actions if flag in a.option_strings)
        assert action.metavar == "{refuse,majority}" and action.default == "refuse"
        assert " all" not in action.help and "majority" in action.help
    out, fig = tmp_path / "out", tmp_path / "fig.png"
    for flag in ("--annotators", "--judges"):
        argv = ["compare", str(tmp_path / "absent.csv"), flag, "all", "--out", str(out)]
        assert main([*argv, "-o", str(fig)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(
            f"sweep: error: {flag}: 'all' is not allowed: the labels of one item share one truth"
        )
        assert f"use {flag} majority" in err
    assert not out.exists() and not fig.exists()


def test_compare_names_a_misspelt_column_as_the_api_does(tmp_path, capsys):
    """The same table, as a file or a DataFrame, is refused with the same words (the file's
    layout rule), not as a counts table missing n_phi."""
    import pandas as pd

    from binmetric_sweep.sweep.compare import compare
    from binmetric_sweep.sweep.errors import SweepError

    frame = pd.DataFrame({"system": ["A", "B"], "item": ["q1", "q1"], "humna": [1, 0]})
    frame["metric"] = [1, None]
    path = tmp_path / "misspelt.csv"
    frame.to_csv(path, index=False)
    assert main(["compare", str(path)]) == 2
    said = (
        "no column 'human'; a ratings table has columns system, human, metric and optionally "
        "item (others are ignored); columns found: 'system', 'item', 'humna', 'metric'"
    )
    assert capsys.readouterr().err == f"sweep: error: {path}: {said}\n"
    with pytest.raises(SweepError) as caught:
        compare(frame)
    assert str(caught.value) == f"ratings: {said}"


UNWRITABLE = "/proc/binmetric-test"  # nothing can be created under /proc, even by root
CANNOT_MAKE = f"cannot be made: cannot create a directory in '/proc': {os.strerror(2)}"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["run", "SWEEP", "--out", f"{UNWRITABLE}/out"],
            f"--out: '{UNWRITABLE}/out' {CANNOT_MAKE}",
        ),
        (
            ["run", "SWEEP", "--out", "/proc"],
            f"--out: '/proc' cannot be written: cannot create a file in it: {os.strerror(2)}",
        ),
        (
            ["compare", "RATINGS", "--out", f"{UNWRITABLE}/t"],
            f"--out: '{UNWRITABLE}/t' {CANNOT_MAKE}",
        ),
        (
            ["compare", "RATINGS", "-o", f"{UNWRITABLE}/c.png"],
            f"-o: '{UNWRITABLE}/c.png' {CANNOT_MAKE}",
        ),
        (
            ["compare", "RATINGS", "-o", "/proc/c.png"],
            f"-o: '/proc/c.png' cannot be written: cannot create a file in '/proc': "
            f"{os.strerror(2)}",
        ),
        # Refused before the sweep's directory (here none) is read.
        (
            ["plot", "NOSWEEP", "--rows", "n_phi", "--cols", "n_m", "-o", f"{UNWRITABLE}/p.png"],
            f"-o: '{UNWRITABLE}/p.png' {CANNOT_MAKE}",
        ),
        (
            ["plan", "--alpha", "0.6", "--rho", "0.8", "--eta", "0.8", "--eps", "0.05"]
            + ["--cost-metric", "0.01", "-o", f"{UNWRITABLE}/f.png"],
            f"-o: '{UNWRITABLE}/f.png' {CANNOT_MAKE}",
        ),
    ],
)
def test_unwritable_outputs_exit_2_in_one_line_before_any_work(tmp_path, capsys, argv, message):
    """run, compare, plot and plan: checked before anything is computed or read; no
    traceback, nothing printed to standard output, nothing written."""
    sweep = write_sweep(tmp_path / "s.yaml", tiny())
    where = {"SWEEP": sweep, "RATINGS": str(REPO / "examples" / "ratings.csv")}
    where["NOSWEEP"] = str(tmp_path / "none")
    argv = [where.get(a, a) for a in argv] + ["--no-progress"] * (argv[0] == "run")
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"sweep: error: {message}\n")
    assert [p.name for p in tmp_path.iterdir()] == ["s.yaml"]
