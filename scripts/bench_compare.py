"""sweep compare at scale: S systems × R ratings each, from the ratings file to every pair, timed.

The target: 100 systems × 10,000 ratings (4,950 pairs) in at most 60 s on the
2-core development CPU, in both rate models. Each system's ratings are drawn
from the model (α_s uniform in [0.4, 0.8], one metric with ρ = 0.85,
η = 0.8): a tenth human-rated, half of those also metric-rated (paired), the
rest metric-only. The file is Parquet; each rate model is run ``--repeats``
times in one process, the first run compiling its programs (or loading them
from the compile cache), so the record holds both the first and the later
runs' seconds, and the stages (read, analyse) of each.

    python scripts/bench_compare.py [--systems 100] [--ratings 10000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
import pandas as pd

from binmetric_sweep.sweep.compare import compare
from binmetric_sweep.sweep.compare.ratings import read_ratings
from binmetric_sweep.sweep.compile_cache import DEFAULT, use_compilation_cache
from binmetric_sweep.sweep.records import provenance, write_record

#: Share of a system's ratings that are human (half of them paired).
HUMAN_SHARE = 0.1


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
                    "system": f"system-{s:03d}",
                    "item": np.arange(ratings),
                    "human": human,
                    "metric": shown,
                }
            )
        )
    pd.concat(frames, ignore_index=True).to_parquet(path)
    return {"alpha": alpha.tolist(), "rho": rho, "eta": eta}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--ratings", type=int, default=10_000, help="ratings per system")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each rate model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/results")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    use_compilation_cache(DEFAULT, strict=False)
    record = {
        **provenance("bench_compare.py", argv),
        "systems": args.systems,
        "ratings_per_system": args.ratings,
        "pairs": args.systems * (args.systems - 1) // 2,
        "target_s": 60.0,
        "runs": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ratings.parquet"
        truth = ratings_file(path, args.systems, args.ratings, args.seed)
        for rates in ("per-system", "shared"):
            runs = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                counts = read_ratings(path).counts
                read = time.perf_counter() - start
                result = compare(counts, rates=rates)
                total = time.perf_counter() - start
                runs.append({"read_s": read, "total_s": total})
                print(f"{rates}: {total:.1f} s (read {read:.2f} s)", file=sys.stderr)
            mean = result.systems.set_index("system")["alpha_mean"]
            true = pd.Series(truth["alpha"], index=[f"system-{s:03d}" for s in range(args.systems)])
            record["runs"][rates] = {
                "seconds": runs,
                "first_s": runs[0]["total_s"],
                "later_s": min(r["total_s"] for r in runs[1:]) if len(runs) > 1 else None,
                "significant_pairs": int(result.pairs["significant"].sum()),
                "warnings": result.warnings,
                # The model's truth: how far the posterior means fall from the α's drawn.
                "max_abs_error_over_sd": float(
                    np.max(
                        np.abs(mean - true.loc[mean.index])
                        / result.systems.set_index("system")["alpha_sd"]
                    )
                ),
            }
    written = write_record(record, args.out, f"compare-{jax.devices()[0].platform}")
    print({r: (v["first_s"], v["later_s"]) for r, v in record["runs"].items()})
    print(written)


if __name__ == "__main__":
    main()
