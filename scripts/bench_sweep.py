"""A sweep end to end, cold and warm, where its time goes, side by side with an earlier version.

Each run is a fresh process, as a user's is (imports included), timed from the
outside with its peak memory (the process's maximum resident set):

* the sweep (by default the legacy grid, 158,400 configurations, with
  ``--method quadrature``) with an empty compile cache (cold), then
  ``--repeats`` times with the programs it cached (warm);
* the README's quick start sweep, cold;
* the first ``sweep compare examples/ratings.csv``, cold.

The present code also reports where each sweep run's time went
(:attr:`sweep.RunReport.stages`: start, counts, fits and of them programs,
summaries, Arrow tables, Parquet writes; and each rule's calls). With
``--baseline REF`` the same runs are made with the code at that git ref (a
worktree of it, put first on ``PYTHONPATH``), alternating with the present
code's, and the two versions' sweep outputs are compared field by field (the
same bits, or which columns differ). The record is written to ``--out`` as
``sweep-<device>-<time>.json`` as each run ends.

Usage: python scripts/bench_sweep.py [configs/legacy-grid.yaml] [--method quadrature]
           [--repeats 2] [--baseline REF] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import pandas as pd
import yaml

from binmetric_sweep.kernels.summaries import values_differ
from binmetric_sweep.sweep.storage.records import StageLog, provenance

ROOT = Path(__file__).resolve().parents[1]

#: What a child process runs for a sweep: it prints a JSON line with the run's
#: seconds and, where the version reports them, its stages.
RUN_SWEEP = """
import json, sys
from binmetric_sweep import sweep
report = sweep.run(sys.argv[1], sys.argv[2], compile_cache=sys.argv[3], progress=False)
print(json.dumps({"seconds": report.seconds, "stages": getattr(report, "stages", {}),
                  "rule_seconds": getattr(report, "rule_seconds", {})}))
"""


class Version:
    """A version of the package to run: the present checkout, or a git ref's worktree."""

    def __init__(self, name: str, pythonpath: str | None):
        self.name, self.pythonpath = name, pythonpath

    def env(self, **extra) -> dict:
        env = {**os.environ, **extra}
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath
        return env


def run_child(command: list[str], env: dict) -> tuple[float, float, str]:
    """Wall seconds, peak resident memory (MB) and standard output of a child process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = child.stdout.read()
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if status:
        raise RuntimeError(f"{' '.join(command)} failed:\n{err.decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, out.decode()


def sweep_run(version: Version, sweep_file: Path, out: Path, cache: Path) -> dict:
    """Run a sweep into ``out`` in a fresh process; its wall seconds, peak MB and report."""
    command = [sys.executable, "-c", RUN_SWEEP, str(sweep_file), str(out), str(cache)]
    seconds, peak, text = run_child(command, version.env())
    report = json.loads(text.strip().splitlines()[-1])
    return {"wall_s": seconds, "peak_mb": peak, **report}


def compare_run(version: Version, cache: Path) -> dict:
    """The first ``sweep compare examples/ratings.csv``, with an empty compile cache."""
    command = [sys.executable, "-m", "binmetric_sweep.sweep", "compare"]
    command.append(str(ROOT / "examples" / "ratings.csv"))
    env = version.env(BINMETRIC_SWEEP_COMPILE_CACHE=str(cache))
    seconds, peak, _ = run_child(command, env)
    return {"wall_s": seconds, "peak_mb": peak}


#: Columns renamed in 0.36.0 (the estimators), by their earlier names.
RENAMED = {"post_mean": "estimate", "post_sd": "se", "sd_mean": "se_mean", "sd_sd": "se_sd"}


def differing_columns(a: Path, b: Path) -> dict:
    """Per table, the columns whose values differ at all between two sweep outputs
    (the posterior's rows, columns under their present names)."""
    out = {}
    keys = {"fits": ["config_id", "replicate"], "surface": ["config_id", "gamma", "power"]}
    for table, by in keys.items():
        x, y = (
            _posterior_rows(pd.read_parquet(d / table).rename(columns=RENAMED))
            .drop(columns="shard", errors="ignore")
            .sort_values(by)
            .reset_index(drop=True)
            for d in (a, b)
        )
        columns = sorted(set(x.columns) & set(y.columns))
        out[table] = [c for c in columns if values_differ(x[c], y[c]).any()]
        only = sorted(set(x.columns) ^ set(y.columns))
        if only:
            out[f"{table}_in_one_only"] = only
    return out


def _posterior_rows(frame: pd.DataFrame) -> pd.DataFrame:
    if "estimator" in frame.columns:
        frame = frame[frame["estimator"] == "bayes"].drop(columns="estimator")
    return frame


def worktree(ref: str, where: Path) -> str:
    """A PYTHONPATH on which ``binmetric_sweep`` is the package at git ``ref``."""
    tree = where / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref],
        check=True,
        capture_output=True,
    )
    site = where / "site" / "binmetric_sweep"
    site.mkdir(parents=True)
    for package in ("sweep", "kernels"):
        (site / package).symlink_to(tree / package)
    return str(site.parent)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_file", nargs="?", default=str(ROOT / "configs/legacy-grid.yaml"))
    parser.add_argument("--method", choices=("nuts", "quadrature"), default="quadrature")
    parser.add_argument("--repeats", type=int, default=2, help="warm runs of the sweep")
    parser.add_argument("--baseline", help="a git ref to run side by side (e.g. v0.34.0's commit)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results"))
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    spec = yaml.safe_load(Path(args.sweep_file).read_text())
    spec["method"] = args.method
    sweep_file = work / "sweep.yaml"
    sweep_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    versions = [Version("present", None)]
    if args.baseline:
        versions.insert(0, Version(args.baseline, worktree(args.baseline, work / "baseline")))
    from binmetric_sweep.sweep.execution.shards import device_name

    result = {
        **provenance("bench_sweep.py", argv),
        "sweep": args.sweep_file,
        "method": args.method,
        "versions": {v.name: {} for v in versions},
        "partial": True,
    }
    log = StageLog(result, args.out, f"sweep-{device_name().split(':')[0]}")
    try:
        outputs = {}
        for v in versions:
            record = result["versions"][v.name]
            out = work / v.name.replace("/", "_") / "sweep"
            cache = work / v.name.replace("/", "_") / "cache"
            record["cold"] = sweep_run(v, sweep_file, out, cache)
            log.record(f"{v.name}: sweep, cold", record["cold"]["wall_s"])
            outputs[v.name] = out
        for r in range(args.repeats):
            for v in versions if r % 2 == 0 else versions[::-1]:
                record = result["versions"][v.name]
                out = work / v.name.replace("/", "_") / f"warm-{r}"
                cache = work / v.name.replace("/", "_") / "cache"
                record.setdefault("warm", []).append(sweep_run(v, sweep_file, out, cache))
                log.record(f"{v.name}: sweep, warm {r + 1}", record["warm"][-1]["wall_s"])
        for v in versions:
            record = result["versions"][v.name]
            quick = work / v.name.replace("/", "_") / "quickstart"
            record["quickstart_cold"] = sweep_run(
                v, ROOT / "configs/quickstart.yaml", quick / "out", quick / "cache"
            )
            log.record(f"{v.name}: quick start, cold", record["quickstart_cold"]["wall_s"])
            record["compare_cold"] = compare_run(v, work / v.name.replace("/", "_") / "c-cache")
            log.record(f"{v.name}: compare, cold", record["compare_cold"]["wall_s"])
    finally:
        if args.baseline:
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(ROOT),
                    "worktree",
                    "remove",
                    "--force",
                    str(work / "baseline" / "tree"),
                ],
                capture_output=True,
            )
    for v in versions:
        record = result["versions"][v.name]
        record["summary"] = {
            "sweep_cold_s": record["cold"]["wall_s"],
            "sweep_warm_s": median(w["wall_s"] for w in record["warm"]) if args.repeats else None,
            "sweep_peak_mb": max(w["peak_mb"] for w in [record["cold"], *record.get("warm", [])]),
            "quickstart_cold_s": record["quickstart_cold"]["wall_s"],
            "compare_cold_s": record["compare_cold"]["wall_s"],
        }
    if args.baseline:
        result["differing_columns"] = differing_columns(outputs[args.baseline], outputs["present"])
        old, new = (result["versions"][v.name]["summary"] for v in versions)
        result["present_over_baseline"] = {
            name: new[name] / old[name] for name in new if old[name] and new[name]
        }
    del result["partial"]
    path = log.write()
    for v in versions:
        summary = result["versions"][v.name]["summary"]
        print(v.name, json.dumps({k: round(x, 1) for k, x in summary.items() if x is not None}))
    if args.baseline:
        print("columns differing:", result["differing_columns"])
    print(f"written {path}")


if __name__ == "__main__":
    main()
