"""What the classical estimators cost: beside a quadrature sweep, and alone on 10^6 fits.

Each run is a fresh process with the compile cache warmed first (the programs
compiled once, as after a first run), timed from outside and by
:attr:`sweep.RunReport.seconds` (counts, fits, estimators, summaries, tables,
Parquet writes):

* the quadrature sweep (default: the legacy grid, 158,400 configurations) with
  ``estimators: [bayes]`` and with ``all``, alternating, ``--repeats`` times
  each: the five classical estimators' share of its time (target ≤ 10 %);
* a classical-only sweep of ``--fits`` fits (rows of the fits table: sampled
  counts, 2,000 replicates a configuration, the five estimators), its fits/s
  (target ≥ 10^5 on the 2-core CPU).

The record is written to ``--out`` as ``estimators-<device>-<time>.json``.

Usage: python scripts/bench_estimators.py [configs/legacy-grid.yaml] [--repeats 2]
           [--fits 1000000] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path
from statistics import median

import yaml
from bench_sweep import ROOT, Version, sweep_run

from binmetric_sweep.sweep.storage.records import StageLog, provenance

CLASSICAL = ["human_only", "judge_only", "rogan_gladen", "ppi", "ppi_pp"]
REPLICATES = 2000


def classical_sweep(fits: int) -> dict:
    """Sampled counts over a grid of about ``fits`` / (5 × 2000) configurations."""
    configurations = max(1, math.ceil(fits / (len(CLASSICAL) * REPLICATES)))
    n_m = [0, 1000, 10_000, 100_000]
    n_phi = [max(2, 10 * (i + 1)) for i in range(math.ceil(configurations / len(n_m)))]
    return {
        "name": "classical-only",
        "counts": "sampled",
        "replicates": REPLICATES,
        "seed": 1,
        "estimators": CLASSICAL,
        "grid": {"alpha": [0.3], "rho": [0.8], "eta": "rho", "n_phi": n_phi, "n_m": n_m},
        "shard_size": 64,
    }


def _beside_fits(run: dict) -> float:
    """A run's seconds in the stages other than the posterior's fits."""
    stages = run["stages"]
    return sum(stages.get(k, 0.0) for k in ("estimators", "summaries", "tables", "writes"))


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_file", nargs="?", default=str(ROOT / "configs/legacy-grid.yaml"))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--fits", type=int, default=1_000_000)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results"))
    args = parser.parse_args(argv)
    from binmetric_sweep.sweep.execution.shards import device_name

    work = Path(tempfile.mkdtemp(prefix="bench-estimators-"))
    present = Version("present", None)
    base = yaml.safe_load(Path(args.sweep_file).read_text())
    files = {}
    for name, estimators in (("bayes", ["bayes"]), ("all", "all")):
        spec = {**base, "method": "quadrature", "estimators": estimators}
        files[name] = work / f"{name}.yaml"
        files[name].write_text(yaml.safe_dump(spec, sort_keys=False))
    files["classical"] = work / "classical.yaml"
    files["classical"].write_text(yaml.safe_dump(classical_sweep(args.fits), sort_keys=False))
    result = {
        **provenance("bench_estimators.py", argv),
        "sweep": args.sweep_file,
        "runs": {},
        "partial": True,
    }
    log = StageLog(result, args.out, f"estimators-{device_name().split(':')[0]}")
    cache = work / "cache"
    for name in ("all", "classical"):  # warm the cache: every program compiled once
        sweep_run(present, files[name], work / f"warm-{name}", cache)
        log.record(f"{name}: compile", 0.0)
    for r in range(args.repeats):
        for name in ("bayes", "all") if r % 2 == 0 else ("all", "bayes"):
            run = sweep_run(present, files[name], work / f"{name}-{r}", cache)
            result["runs"].setdefault(name, []).append(run)
            log.record(f"{name}: run {r + 1}", run["wall_s"])
    run = sweep_run(present, files["classical"], work / "classical", cache)
    result["runs"]["classical"] = [run]
    log.record("classical only", run["wall_s"])
    bayes = median(x["seconds"] for x in result["runs"]["bayes"])
    every = median(x["seconds"] for x in result["runs"]["all"])
    # The fits' time varies by more than the classical estimators cost between runs, so
    # their cost is also taken from the stages they add to: all but the posterior's fits.
    added = median(_beside_fits(x) for x in result["runs"]["all"]) - median(
        _beside_fits(x) for x in result["runs"]["bayes"]
    )
    rows = yaml.safe_load(files["classical"].read_text())
    configurations = len(rows["grid"]["n_phi"]) * len(rows["grid"]["n_m"])
    fits = configurations * REPLICATES * len(CLASSICAL)
    result["summary"] = {
        "sweep_bayes_s": bayes,
        "sweep_all_s": every,
        "classical_share": every / bayes - 1.0,
        "classical_stage_s": added,
        "classical_stage_share": added / bayes,
        "classical_only_fits": fits,
        "classical_only_s": run["seconds"],
        "classical_only_wall_s": run["wall_s"],
        "classical_only_fits_per_s": fits / run["seconds"],
    }
    result["partial"] = False
    log.write()
    s = result["summary"]
    print(
        f"quadrature sweep: bayes {bayes:.1f} s, with the five classical estimators "
        f"{every:.1f} s (+{100 * s['classical_share']:.1f} %); the stages they add to "
        f"(estimators, summaries, tables, writes) +{added:.2f} s "
        f"(+{100 * s['classical_stage_share']:.1f} %, target <= 10 %)"
    )
    print(
        f"classical only: {fits:,} fits in {run['seconds']:.2f} s "
        f"({s['classical_only_fits_per_s']:,.0f} fits/s, target >= 100,000); "
        f"process {run['wall_s']:.2f} s"
    )
    print(f"record: {log.path}")


if __name__ == "__main__":
    main()
