"""NUTS against quadrature on the lanes of tests/kernels/test_nuts.py, as numbers.

The test asserts the issue's bounds; this prints what was measured (and writes
it as JSON under benchmarks/results/): mean error in MCSEs, SD error, R-hat,
divergences, the published ε by NUTS, and the wall time of the NUTS call.
``--natural`` samples every lane in the logits of (α, ρ, η) and
``--warmup-depth 10`` lifts the warm-up tree-depth cap, to reproduce what the
sampler did before those changes; ``--loop leapfrog`` runs
:mod:`kernels.stepwise`, and ``--loop kernel`` runs the stepwise chains whole
in one Pallas kernel per block of lanes (:mod:`kernels.chain_kernel`;
compiled by Triton on a GPU); ``auto`` (the default) picks the kernel on a GPU
and the leapfrog loop elsewhere.

Usage: python scripts/nuts_agreement.py [--natural] [--warmup-depth 6]
           [--loop auto|leapfrog|kernel] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test helpers' lanes

from binmetric_sweep.kernels.nuts import LOOPS, NUTSSettings, resolve_loop  # noqa: E402
from binmetric_sweep.kernels.summaries import epsilon  # noqa: E402
from binmetric_sweep.sweep.execution.fits import fit_lanes  # noqa: E402
from binmetric_sweep.sweep.execution.schedule import schedule_for  # noqa: E402
from binmetric_sweep.sweep.spec.lanes import lane_keys  # noqa: E402
from binmetric_sweep.sweep.storage.records import provenance, write_record  # noqa: E402
from tests.kernels.helpers import agreement_lanes  # noqa: E402


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--natural", action="store_true", help="no ridge coordinates")
    parser.add_argument("--warmup-depth", type=int, default=NUTSSettings().warmup_max_tree_depth)
    parser.add_argument("--loop", choices=list(LOOPS), default=NUTSSettings().loop)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)
    settings = resolve_loop(
        NUTSSettings(
            ridge=not args.natural, warmup_max_tree_depth=args.warmup_depth, loop=args.loop
        ),
        schedule_for().device,
    )

    table, c = agreement_lanes()
    b = len(c.n_m)
    keys = lane_keys(3, np.stack([np.arange(b), np.ones(b)], 1), np.zeros(b))
    exact = fit_lanes(c, keys, "quadrature").fits
    start = time.perf_counter()
    fit = fit_lanes(c, keys, "nuts", nuts=settings).fits
    seconds = time.perf_counter() - start

    s = ~fit.exact
    draws = s.sum() * settings.chains * settings.samples
    sd_error = np.abs(fit.post_sd / exact.post_sd - 1)[s]
    mean_error = np.abs(fit.post_mean - exact.post_mean)[s] / (fit.post_sd / np.sqrt(fit.ess))[s]
    n = len(table)
    eps = np.asarray(epsilon(fit.post_sd[:n], table.gamma.values))
    eps = np.where((table.n_phi == 0) & (table.n_m == 0), 1.0, eps)
    eps_error = np.abs(eps - table.eps.values)
    flat = (table.n_phi == 0).values
    # test_nuts_published's bound: 0.003, or 4 Monte Carlo SEs of ε where 4000 draws
    # cannot resolve 0.003 (ε is proportional to the SD).
    eps_mcse = eps * fit.sd_mcse[:n] / fit.post_sd[:n]
    within_test_bound = eps_error <= np.maximum(0.003, 4 * eps_mcse)
    result = {
        **provenance("nuts_agreement.py", argv),
        "nuts_settings": settings._asdict(),
        "sampled_fits": int(s.sum()),
        "nuts_seconds_with_compile": seconds,
        "mean_error_max_mcse": float(mean_error.max()),
        "sd_relative_error_max": float(sd_error.max()),
        "sd_relative_error_median": float(np.median(sd_error)),
        "sd_over_6_percent": int((sd_error > 0.06).sum()),
        "rhat_below_1_01_share": float(np.mean(fit.rhat[s] < 1.01)),
        "rhat_max": float(np.nanmax(fit.rhat[s])),
        "divergent_share": float(fit.divergences[s].sum() / draws),
        "published_cells": n,
        "published_within_0_003": int((eps_error <= 0.003).sum()),
        "published_max_error_n_phi_positive": float(eps_error[~flat].max()),
        "published_max_error_n_phi_zero": float(eps_error[flat].max()),
        "published_within_test_bound": int(within_test_bound.sum()),
        # Over the sampled cells (the exact ones, N_M = 0, have no Monte Carlo error).
        "published_max_error_over_mcse": float(np.max((eps_error / eps_mcse)[eps_mcse > 0])),
    }
    print(json.dumps(result, indent=2))
    write_record(result, args.out, f"nuts-agreement-{jax.devices()[0].platform}")


if __name__ == "__main__":
    main()
