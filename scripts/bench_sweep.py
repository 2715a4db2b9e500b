"""A whole sweep's throughput, with each number of shards begun ahead, side by side, as JSON.

``bench_kernels.py`` times the fits alone; a sweep also draws each shard's
counts, summarises its configurations and writes two Parquet files a shard,
and the in-process runner (:func:`sweep.runners.run_local`) computes its
shards one after another unless it begins some ahead. This runs a sweep file
end to end (:func:`sweep.run`, the local backend) into a fresh directory for
each ``--ahead`` value, once untimed first (every program compiled, into the
compilation cache) and then ``--repeats`` times in alternating order, and
reports seconds, configurations/s and fits/s (medians), their ratio to the
first value's, and whether every run's surface and fits came out the same,
bit for bit.

On a GPU, the legacy grid (158,400 configurations in 39 shards of 4096, NUTS
for all but the N_M = 0 ones) is the sweep the project was built for; on
CPU a small sweep will do (``configs/sampled-coverage.yaml``, quadrature).

Usage: python scripts/bench_sweep.py [configs/legacy-grid.yaml] [--ahead 0 1]
           [--repeats 2] [--out benchmarks/results] [--compile-cache DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import pandas as pd

from binmetric_sweep import sweep
from binmetric_sweep.sweep.config import load_sweep
from binmetric_sweep.sweep.grid import expand_grid
from binmetric_sweep.sweep.records import StageLog, provenance


def run_once(
    sweep_file: str, ahead: int, compile_cache: str
) -> tuple[float, pd.DataFrame, pd.DataFrame]:
    """Seconds the sweep took with ``ahead`` shards begun ahead, and its surface and fits."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        start = time.perf_counter()
        sweep.run(sweep_file, out, compile_cache=compile_cache, shards_ahead=ahead)
        seconds = time.perf_counter() - start
        keys = ["config_id", "gamma", "power"]
        surface = sweep.load_surface(out).drop(columns="shard", errors="ignore").sort_values(keys)
        fits = sweep.load_fits(out).drop(columns="shard", errors="ignore")
        fits = fits.sort_values(["config_id", "replicate"])
        return seconds, surface.reset_index(drop=True), fits.reset_index(drop=True)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_file", nargs="?", default="configs/legacy-grid.yaml")
    parser.add_argument("--ahead", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument(
        "--compile-cache",
        default=os.environ.get("JAX_COMPILATION_CACHE_DIR"),
        help="where programs are kept between the runs (default: $JAX_COMPILATION_CACHE_DIR, "
        "else a temporary directory)",
    )
    args = parser.parse_args(argv)
    spec = load_sweep(args.sweep_file)
    configurations = len(expand_grid(spec))
    fits = configurations * spec.replicates
    result = {
        **provenance("bench_sweep.py", argv),
        "sweep": args.sweep_file,
        "method": spec.method,
        "configurations": configurations,
        "fits": fits,
        "shard_size": spec.shard_size,
        "partial": True,
    }
    log = StageLog(result, args.out, "sweep")
    cache = args.compile_cache or tempfile.mkdtemp(prefix="bench-sweep-cache-")
    try:
        with log.stage(f"first run, ahead {args.ahead[0]} (programs compiled)"):
            _, surface, fitted = run_once(args.sweep_file, args.ahead[0], cache)
        seconds = {a: [] for a in args.ahead}
        same = True
        for r in range(args.repeats):
            order = args.ahead if r % 2 == 0 else args.ahead[::-1]
            for ahead in order:
                s, got_surface, got_fits = run_once(args.sweep_file, ahead, cache)
                log.record(f"run {r + 1}, {ahead} shard(s) ahead", s)
                seconds[ahead].append(s)
                same &= got_surface.equals(surface) and got_fits.equals(fitted)
                result["seconds_by_ahead"] = {str(a): v for a, v in seconds.items()}
                log.write()
    finally:
        if cache != args.compile_cache:
            shutil.rmtree(cache, ignore_errors=True)
    base = median(seconds[args.ahead[0]])
    result["by_ahead"] = {
        str(a): {
            "seconds": median(v),
            "configurations_per_s": configurations / median(v),
            "fits_per_s": fits / median(v),
            f"speedup_over_ahead_{args.ahead[0]}": base / median(v),
        }
        for a, v in seconds.items()
    }
    result["same_numbers"] = bool(same)
    del result["partial"]
    path = log.write()
    for a, row in result["by_ahead"].items():
        print(
            f"ahead {a}: {row['seconds']:.2f} s, {row['fits_per_s']:.0f} fits/s, "
            f"{row[f'speedup_over_ahead_{args.ahead[0]}']:.2f}x"
        )
    print(f"same numbers in every run: {same}; written {path}")


if __name__ == "__main__":
    main()
