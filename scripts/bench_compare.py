"""``sweep compare`` at scale, as a user runs it: S systems × R ratings each, timed end to end.

The targets: 1,000 systems × 50 ratings and × 1,000 ratings (499,500 pairs)
each in at most 60 s and 2 GB peak on the 2-core development CPU, in both
rate models; and 100 systems × 10,000 ratings in 60 s. Each system's ratings
are drawn from the model (α_s uniform in [0.4, 0.8], one metric with
ρ = 0.85, η = 0.8): a tenth human-rated, half of those also metric-rated
(paired), the rest metric-only, in one Parquet file with an ``item`` column.

Every run is ``python -m binmetric_sweep.sweep compare FILE --rates R --out DIR``
in a fresh process, timed from the outside with its peak resident memory:
first with an empty compile cache (cold), then with the programs it cached
(warm). With ``--baseline REF`` the same runs are made with the code at that
git ref (a worktree of it, first on ``PYTHONPATH``), alternating with the
present code's, each cut off at ``--timeout`` seconds; where both finish,
their pair probabilities are compared (largest difference). The record is
written to ``--out`` as ``compare-<device>-<time>.json``.

With ``--estimators bayes all`` each ``--estimator`` is also run (present code
only), and the record gives its warm time over ``bayes``'s (the target for
``all``: at most 1.5 times, 100 systems × 10,000 ratings).

    python scripts/bench_compare.py [--sizes 1000x50 1000x1000] [--baseline REF]
        [--estimators bayes all] [--timeout 300] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sweep import Version, worktree  # noqa: E402

from binmetric_sweep.sweep.storage.records import provenance, write_record  # noqa: E402

#: Share of a system's ratings that are human (half of them paired).
HUMAN_SHARE = 0.1
TARGET_S, TARGET_MB = 60.0, 2048.0


def ratings_file(path: Path, systems: int, ratings: int, seed: int) -> dict:
    """Write a ratings table of ``systems`` × ``ratings`` rows to ``path``; its true α's."""
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.4, 0.8, systems)
    rho, eta = 0.85, 0.8
    n_human = int(HUMAN_SHARE * ratings)
    n_paired = n_human // 2
    frames = []
    for s in range(systems):
        truth = rng.random(ratings) < alpha[s]
        metric = np.where(truth, rng.random(ratings) < rho, rng.random(ratings) > eta)
        human = np.where(np.arange(ratings) < n_human, truth.astype(float), np.nan)
        shown = np.where(
            (np.arange(ratings) < n_paired) | (np.arange(ratings) >= n_human), metric, np.nan
        )
        frames.append(
            pd.DataFrame(
                {
                    "system": f"system-{s:04d}",
                    "item": np.arange(ratings),
                    "human": human,
                    "metric": shown,
                }
            )
        )
    pd.concat(frames, ignore_index=True).to_parquet(path)
    return {"alpha": alpha.tolist(), "rho": rho, "eta": eta}


def compare_run(
    version: Version, ratings: Path, rates: str, estimator: str, out: Path, cache: Path, timeout
):
    """One ``sweep compare`` in a fresh process: wall seconds and peak MB, or a timeout."""
    command = [sys.executable, "-m", "binmetric_sweep.sweep", "compare", str(ratings)]
    command += ["--rates", rates, "--out", str(out)]
    if estimator != "bayes":  # the option is newer than some baselines
        command += ["--estimator", estimator]
    env = version.env(BINMETRIC_SWEEP_COMPILE_CACHE=str(cache))
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
        while True:  # os.wait4 gives the child's own peak memory
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                child.kill()
                os.wait4(child.pid, 0)
                return {"wall_s": None, "timed_out_after_s": timeout}
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        err.seek(0)
        stderr = err.read().decode(errors="replace")[-2000:]
    run = {"wall_s": seconds, "peak_mb": usage.ru_maxrss / 1024, "stderr": stderr}
    if status:
        run["failed"] = True
    return run


def largest_difference(a: Path, b: Path) -> float:
    """The largest difference in P(α_a > α_b) between two outputs' pairs tables."""
    key = ["a", "b"]
    x, y = (pd.read_parquet(d / "pairs.parquet").set_index(key)["p_a_better"] for d in (a, b))
    # The versions may rank two tied systems differently: compare P(a > b) = 1 − P(b > a).
    flipped = 1.0 - y.rename_axis(["b", "a"]).reorder_levels(key)
    y = y.combine_first(flipped)
    return float(np.max(np.abs(x - y.reindex(x.index))))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1000x50", "1000x1000"], metavar="SxR")
    parser.add_argument("--rates", nargs="+", default=["per-system", "shared"])
    parser.add_argument(
        "--estimators",
        nargs="+",
        default=["bayes"],
        help="--estimator values to run (each after bayes's runs, sharing its compile cache)",
    )
    parser.add_argument("--baseline", metavar="REF", help="a git ref to run side by side")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/results")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    record = {
        **provenance("bench_compare.py", argv),
        "target_s": TARGET_S,
        "target_peak_mb": TARGET_MB,
        "runs": [],
    }
    written = None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        versions = [Version("present", None)]
        if args.baseline:
            versions.append(Version(args.baseline, worktree(args.baseline, tmp / "baseline")))
        for size in args.sizes:
            systems, ratings = (int(v) for v in size.split("x"))
            path = tmp / f"ratings-{size}.parquet"
            ratings_file(path, systems, ratings, args.seed)
            for rates, estimator in itertools.product(args.rates, args.estimators):
                outs = {}
                for version in versions if estimator == "bayes" else versions[:1]:
                    cache = tmp / f"cache-{version.name}-{size}-{rates}"
                    row = {"version": version.name, "systems": systems, "ratings": ratings}
                    row |= {"pairs": systems * (systems - 1) // 2, "rates": rates}
                    row["estimator"] = estimator
                    for phase in ("cold", "warm"):
                        name = f"{version.name}-{size}-{rates}-{estimator}-{phase}"
                        run = compare_run(
                            version, path, rates, estimator, tmp / name, cache, args.timeout
                        )
                        row[phase] = run
                        print(
                            f"{name}: {run.get('wall_s')} s, {run.get('peak_mb')} MB",
                            file=sys.stderr,
                        )
                        if run.get("wall_s") is None:
                            break  # a run that timed out cold is not repeated warm
                        if "failed" not in run:
                            outs[version.name] = tmp / name
                    record["runs"].append(row)
                if len(outs) == 2:
                    record["runs"][-1]["largest_p_difference"] = largest_difference(*outs.values())
                written = write_record(record, args.out, "compare-cpu", written)
    record["estimator_ratios"] = _ratios(record["runs"])
    written = write_record(record, args.out, "compare-cpu", written)
    print(written)


def _ratios(runs: list[dict]) -> list[dict]:
    """Each estimator's warm seconds over ``bayes``'s, the present code, same size and rates."""
    present = [r for r in runs if r["version"] == "present" and r.get("warm", {}).get("wall_s")]
    base = {
        (r["systems"], r["ratings"], r["rates"]): r["warm"]["wall_s"]
        for r in present
        if r["estimator"] == "bayes"
    }
    return [
        {
            "systems": r["systems"],
            "ratings": r["ratings"],
            "rates": r["rates"],
            "estimator": r["estimator"],
            "warm_ratio_to_bayes": r["warm"]["wall_s"]
            / base[r["systems"], r["ratings"], r["rates"]],
        }
        for r in present
        if r["estimator"] != "bayes" and (r["systems"], r["ratings"], r["rates"]) in base
    ]


if __name__ == "__main__":
    main()
