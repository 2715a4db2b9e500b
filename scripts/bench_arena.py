"""What an arena's fit costs (issue 67 item 7): ``kernels.arena.posterior.sample_arena`` cold
and warm, with its peak memory and its draws' health.

Cases, each in a fresh Python subprocess (``--case``), timed from the subprocess's start
(interpreter, imports, reading the file, counting the cells, the fit: cold) and then a
second fit in the same process with another key (warm):

- ``shipped-independent``: the shipped file (``--battles``, 20 systems, 26,919 battles), both
  judges, independent given the truth;
- ``shipped-joint``: the same, the judges' joint confusion;
- ``synthetic``: ``--systems`` systems and ``--battles`` battles drawn from the model with a
  fixed seed (strengths N(0, 1), ν = 0.5, one positionally biased judge on every battle,
  a human verdict on ``--human-share`` of them, sides and pairs uniform), written as a
  battles CSV (not timed) that the subprocess reads as the shipped one;
- ``compare-bayes``, ``compare-all``: ``sweep compare --battles --estimator bayes|all --json``
  as a user runs it, twice in fresh processes sharing one compile cache, empty at first
  (cold), then holding the first run's programs (warm); the record's ``all_over_bayes`` is
  the ratio of the two cases' times (target ≤ 2).

Each subprocess's peak resident memory is its ``ru_maxrss`` (``os.wait4``); R-hat max, ESS
min and divergences are the cold fit's (:class:`~kernels.arena.posterior.ArenaDraws`). The
sampler is the default: 4 chains × (500 + 1000). A table is printed and the record written
to ``--out`` as ``arena-<time>.json``.

Usage: python scripts/bench_arena.py [--battles ../shared/reference/arena_battles.csv]
           [--systems 100] [--battles-drawn 1000000] [--human-share 0.01]
           [--cases shipped-independent,shipped-joint,synthetic,compare-bayes,compare-all]
           [--out benchmarks/results]
"""

from __future__ import annotations

import time

START = time.perf_counter()  # before the imports: the cold clock starts with the process

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

SHIPPED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "arena_battles.csv"
#: ``sweep compare``'s cases: the estimator each runs.
COMPARE_CASES = {"compare-bayes": "bayes", "compare-all": "all"}
CASES = ("shipped-independent", "shipped-joint", "synthetic", *COMPARE_CASES)
#: The synthetic judge's confusion, rows the truth (B better, tie, A better), columns its
#: verdict: right 70-80 % off ties, and it leans to side A.
SYNTHETIC_CONFUSION = np.array([[0.7, 0.1, 0.2], [0.25, 0.4, 0.35], [0.08, 0.12, 0.8]])
SYNTHETIC_NU = 0.5
WORDS = np.array(["model_b", "tie", "model_a"])  # by class: B better, tie, A better


def draw_arena(systems: int, battles: int, human_share: float, seed: int = 0):
    """A battles table drawn from the model (module docstring) as a dict of columns, and the
    true centred strengths ``(S,)``."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=systems)
    s -= s.mean()
    a = rng.integers(0, systems, battles)
    b = (a + rng.integers(1, systems, battles)) % systems
    d = s[a] - s[b]
    weights = np.stack([np.exp(-d / 2), np.full(battles, SYNTHETIC_NU), np.exp(d / 2)], axis=1)
    truth = _categorical(rng, weights / weights.sum(axis=1, keepdims=True))
    judge = _categorical(rng, SYNTHETIC_CONFUSION[truth])
    human = np.where(rng.random(battles) < human_share, WORDS[truth], "")
    names = np.array([f"system-{i:03d}" for i in range(systems)])
    columns = {"model_a": names[a], "model_b": names[b], "human": human, "judge": WORDS[judge]}
    return columns, s


def _categorical(rng, p: np.ndarray) -> np.ndarray:
    """``(n,)`` one class per row of ``(n, K)`` probabilities."""
    return (rng.random((len(p), 1)) > np.cumsum(p, axis=1)).sum(axis=1)


def write_arena(path: Path, columns: dict) -> None:
    import pandas as pd

    pd.DataFrame(columns).to_csv(path, index=False)


def one_case(source: str, independent: bool) -> dict:
    """Run inside the subprocess: read, count, fit twice; the phases' seconds and health."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from binmetric_sweep.kernels.arena.logdensity import arena_data, arena_shape
    from binmetric_sweep.kernels.arena.posterior import DEFAULT_SETTINGS, sample_arena
    from binmetric_sweep.sweep.compare.battles import read_battles

    phases = {"imports": time.perf_counter() - START}
    battles = read_battles(source)
    phases["read_and_cells"] = time.perf_counter() - START
    systems = len(battles.systems)
    shape = arena_shape(systems, battles.cells.judges, independent)
    data = arena_data(battles.cells, systems)
    draws = sample_arena(jax.random.key(0), data, shape, DEFAULT_SETTINGS)
    cold = time.perf_counter() - START
    phases["cold_fit"] = cold - phases["read_and_cells"]
    t = time.perf_counter()
    again = sample_arena(jax.random.key(1), data, shape, DEFAULT_SETTINGS)
    warm = time.perf_counter() - t
    return {
        "systems": systems,
        "judges": list(battles.judges),
        "independent": shape.independent,
        "battles": battles.cells.battles,
        "human_verdicts": battles.human_verdicts,
        "cells": len(battles.cells.count),
        "dimension": shape.size,
        "cold_s": cold,
        "warm_s": warm,
        "phases_s": phases,
        "rhat_max": draws.rhat_max,
        "ess_min": draws.ess_min,
        "divergences": draws.divergences,
        "warm_rhat_max": again.rhat_max,
        "warm_ess_min": again.ess_min,
        "warm_divergences": again.divergences,
        "strengths_mean": draws.strengths.mean(axis=0).tolist(),
    }


def run_case(source: Path, independent: bool) -> dict:
    """One fresh subprocess of this script on ``source``; its record, wall time and peak RSS."""
    command = [sys.executable, __file__, "--one", str(source)]
    command += [] if independent else ["--joint"]
    t = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE)
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        raise SystemExit(f"the case on {source} failed (exit {os.waitstatus_to_exitcode(status)})")
    child.returncode = 0
    record = json.loads(output.decode().strip().splitlines()[-1])
    record["process_wall_s"] = wall
    record["peak_rss_mb"] = usage.ru_maxrss / 1024  # Linux: kilobytes
    return record


def run_compare(source: Path, estimator: str, cache: Path) -> dict:
    """``sweep compare SOURCE --estimator E --json`` twice, each a fresh process with the
    compile cache ``cache`` (empty before the first: cold); wall time and peak RSS of each."""
    command = [sys.executable, "-m", "binmetric_sweep.sweep", "compare", str(source)]
    command += ["--estimator", estimator, "--json"]
    env = {**os.environ, "BINMETRIC_SWEEP_COMPILE_CACHE": str(cache)}
    record = {"estimator": estimator}
    for phase in ("cold", "warm"):
        t = time.perf_counter()
        # Its warnings and notes are the same every run: kept to show only on a failure.
        with tempfile.TemporaryFile() as stderr:
            child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
            _, status, usage = os.wait4(child.pid, 0)
            if status != 0:
                stderr.seek(0)
                sys.stderr.write(stderr.read().decode())
                code = os.waitstatus_to_exitcode(status)
                raise SystemExit(f"sweep compare --estimator {estimator} failed (exit {code})")
        child.returncode = 0
        record[f"{phase}_s"] = time.perf_counter() - t
        record[f"{phase}_peak_rss_mb"] = usage.ru_maxrss / 1024
    return record


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", default=str(SHIPPED))
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--battles-drawn", type=int, default=1_000_000)
    parser.add_argument("--human-share", type=float, default=0.01)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--joint", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_case(args.one, not args.joint)))
        return 0
    cases = args.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        print(f"--cases: {', '.join(unknown)} is not one of {', '.join(CASES)}", file=sys.stderr)
        return 2

    from binmetric_sweep.kernels.arena.posterior import DEFAULT_SETTINGS
    from binmetric_sweep.sweep.storage.records import provenance, write_record

    result = {
        **provenance("bench_arena.py", argv),
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        "settings": DEFAULT_SETTINGS._asdict(),
        "targets": {
            "shipped_cold_s": 30,
            "synthetic_cold_s": 120,
            "synthetic_peak_rss_mb": 4096,
            "all_over_bayes": 2,
        },
        "cases": {},
        "compare": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            if case in COMPARE_CASES:
                cache = Path(tmp) / f"cache-{case}"
                record = run_compare(Path(args.battles), COMPARE_CASES[case], cache)
                result["compare"][case] = record
                print(f"{case}: {record['cold_s']:.1f} s cold", file=sys.stderr)
                continue
            if case == "synthetic":
                columns, truth = draw_arena(args.systems, args.battles_drawn, args.human_share)
                source = Path(tmp) / "synthetic.csv"
                write_arena(source, columns)
                record = run_case(source, True)
                record["drawn"] = {
                    "seed": 0,
                    "human_share": args.human_share,
                    "nu": SYNTHETIC_NU,
                    "confusion": SYNTHETIC_CONFUSION.tolist(),
                    "true_strengths": truth.tolist(),
                }
                estimate = np.asarray(record["strengths_mean"])
                record["largest_strength_error"] = float(np.abs(estimate - truth).max())
            else:
                record = run_case(Path(args.battles), case == "shipped-independent")
            record.pop("strengths_mean")
            result["cases"][case] = record
            print(f"{case}: {record['cold_s']:.1f} s cold", file=sys.stderr)
    compared = result["compare"]
    if len(compared) == len(COMPARE_CASES):
        result["all_over_bayes"] = {
            phase: compared["compare-all"][f"{phase}_s"] / compared["compare-bayes"][f"{phase}_s"]
            for phase in ("cold", "warm")
        }
    result["load_average_after"] = os.getloadavg()
    path = write_record(result, args.out, "arena")

    if result["cases"]:
        print(
            f"{'case':<22}{'S':>5}{'battles':>10}{'cold s':>9}{'warm s':>9}{'process s':>10}"
            f"{'peak MB':>9}{'R-hat':>8}{'ESS':>7}{'div':>5}"
        )
    for case, r in result["cases"].items():
        print(
            f"{case:<22}{r['systems']:>5}{r['battles']:>10,}{r['cold_s']:>9.1f}"
            f"{r['warm_s']:>9.1f}{r['process_wall_s']:>10.1f}{r['peak_rss_mb']:>9.0f}"
            f"{r['rhat_max']:>8.4f}"
            f"{r['ess_min']:>7.0f}{r['divergences']:>5}"
        )
    for case, r in compared.items():
        print(
            f"{case}: {r['cold_s']:.1f} s cold, {r['warm_s']:.1f} s warm, "
            f"{max(r['cold_peak_rss_mb'], r['warm_peak_rss_mb']):.0f} MB"
        )
    if "all_over_bayes" in result:
        ratio = result["all_over_bayes"]
        print(f"--estimator all / bayes: {ratio['cold']:.2f} cold, {ratio['warm']:.2f} warm")
    print(f"record: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
