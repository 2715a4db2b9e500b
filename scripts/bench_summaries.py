"""The host's cost of a NUTS call's per-fit summaries, side by side, written as JSON.

After each NUTS call ``fit_lanes`` computes, on the host, every fit's mean,
SD, interval, split R-hat, bulk ESS and SD MCSE. On an accelerator that is
time the device may wait (benchmarks/GPU-NOTES.md). On the same draws this
times, in one run, interleaved:

* ``numpyro_fit_by_fit``: version 0.19.0's way, NumPyro's
  ``effective_sample_size`` called fit by fit for the bulk ESS (ranks from a
  stable sort, ties broken by position) and for the SD's MCSE;
* ``one_thread``: ``kernels.nuts.summarize_draws`` (the ESS vectorised over
  fits, ``kernels.diagnostics``);
* ``threads``: the same with its blocks on every core, as ``fit_lanes``
  runs it;

and reports milliseconds a fit (medians), the ratios, and how far the first
way's ESS is from the others' (they differ where draws tie).

The draws are synthetic, chains of NUTS's length: AR(1) with φ from −0.6
(antithetic, as NUTS often is) to 0.9, each draw repeated with probability
0.03 (NUTS repeats a draw when its trajectory picks the start), on the
probability scale.

Usage: python scripts/bench_summaries.py [--fits 4096] [--chains 4]
           [--samples 1000] [--repeats 3] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from statistics import NormalDist

import jax
import numpy as np
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

from binmetric_sweep.kernels.nuts import DrawSummary, summarize_draws
from binmetric_sweep.sweep.execution.schedule import usable_cores
from binmetric_sweep.sweep.storage.records import provenance, write_record


def synthetic_draws(fits: int, chains: int, samples: int, seed: int = 0) -> np.ndarray:
    """``(fits, chains, samples)`` α draws: AR(1) logits, 3 % of draws repeating the last."""
    r = np.random.default_rng(seed)
    phi = r.uniform(-0.6, 0.9, (fits, 1))
    noise = r.normal(size=(fits, chains, samples))
    x = np.empty_like(noise)
    x[..., 0] = noise[..., 0]
    repeat = r.random((fits, chains, samples)) < 0.03
    for t in range(1, samples):
        step = phi * x[..., t - 1] + noise[..., t]
        x[..., t] = np.where(repeat[..., t], x[..., t - 1], step)
    centre = r.normal(size=(fits, 1, 1))
    return 1.0 / (1.0 + np.exp(-(centre + r.uniform(0.01, 0.5, (fits, 1, 1)) * x)))


def numpyro_fit_by_fit(alpha: np.ndarray, level: float) -> DrawSummary:
    """0.19.0's summaries: NumPyro's ESS one fit at a time."""
    b, c, s = alpha.shape
    flat = alpha.reshape(b, -1)
    tail = 0.5 * (1.0 - level)
    low, high = np.quantile(flat, [tail, 1.0 - tail], axis=1)
    rhat = np.asarray(split_gelman_rubin(np.moveaxis(alpha, 0, -1)))
    half = s // 2
    split = np.concatenate([alpha[:, :, :half], alpha[:, :, half : 2 * half]], axis=1)
    pooled = split.reshape(b, -1)
    order = np.argsort(pooled, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(pooled.shape[1])[None, :], axis=1)
    n = pooled.shape[1]
    scores = np.array([NormalDist().inv_cdf((k + 1 - 0.375) / (n + 0.25)) for k in range(n)])
    z = scores[ranks].reshape(b, 2 * c, half)
    ess = np.array([float(effective_sample_size(fit[:, :, None])[0]) for fit in z])
    d = (alpha - flat.mean(axis=1)[:, None, None]) ** 2
    ess_d = np.array([float(effective_sample_size(fit[:, :, None])[0]) for fit in d])
    d_flat = d.reshape(b, -1)
    mcse = np.sqrt(d_flat.var(axis=1, ddof=1) / (4.0 * d_flat.mean(axis=1) * ess_d))
    mean, sd = flat.mean(axis=1), flat.std(axis=1, ddof=1)
    return DrawSummary(mean, sd, low, high, rhat, ess, mcse)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=4096)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each way")
    parser.add_argument("--out", default="benchmarks/results")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    for name in ("fits", "chains", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: at least 1")
    if args.samples < 4:
        parser.error("--samples: at least 4 (split R-hat)")
    alpha = synthetic_draws(args.fits, args.chains, args.samples)
    cores = usable_cores()
    with ThreadPoolExecutor(cores) as pool:
        ways = {
            "numpyro_fit_by_fit": lambda: numpyro_fit_by_fit(alpha, 0.95),
            "one_thread": lambda: summarize_draws(alpha, 0.95),
            "threads": lambda: summarize_draws(alpha, 0.95, pool.map),
        }
        results = {name: way() for name, way in ways.items()}  # untimed: tables, threads
        seconds = {name: [] for name in ways}
        for _ in range(args.repeats):
            for name, way in ways.items():
                start = time.perf_counter()
                way()
                seconds[name].append(time.perf_counter() - start)
    median = {name: float(np.median(s)) for name, s in seconds.items()}
    reference = results["numpyro_fit_by_fit"]
    record = {
        **provenance("bench_summaries.py", argv),
        "fits": args.fits,
        "chains": args.chains,
        "samples": args.samples,
        "threads": cores,
        "seconds": seconds,
        "ms_per_fit": {name: 1e3 * s / args.fits for name, s in median.items()},
        "speedup_over_numpyro_fit_by_fit": {
            name: median["numpyro_fit_by_fit"] / s for name, s in median.items()
        },
        "max_relative_ess_difference_to_numpyro_fit_by_fit": {
            name: float(np.max(np.abs(r.ess / reference.ess - 1.0))) for name, r in results.items()
        },
        "same_bits_one_thread_and_threads": all(
            np.array_equal(x, y, equal_nan=True)
            for x, y in zip(results["one_thread"], results["threads"], strict=True)
        ),
    }
    path = write_record(record, args.out, f"summaries-{jax.devices()[0].platform}")
    print({k: record[k] for k in ("ms_per_fit", "speedup_over_numpyro_fit_by_fit", "threads")})
    print(path)


if __name__ == "__main__":
    main()
