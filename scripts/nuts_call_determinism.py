"""Does a NUTS fit come out the same whatever the size of the call it runs in?

On CPU the tests check it (XLA computes a lane alike in batches of up to
128 chains, the slots of every call there). On an accelerator each call
holds all of its chains at once, up to ``sweep.fits`` 's cap of 4096 fits,
and fewer where a group of lanes is smaller, so a sweep's numbers are the
same on any number of shards only if a lane's are the same in calls of
every size up to the cap. This script fits the benchmark's lanes
(``bench_kernels.sample_designs``) with each of ``--chunks`` as the call
size and counts the fits whose summaries differ from the first's at all.

Usage: python scripts/nuts_call_determinism.py [--fits 4096]
           [--chunks 4096 1024] [--out DIR] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
from bench_kernels import lanes, sample_designs, timed_fits, values_differ  # noqa: E402 - beside this script
from result_record import provenance, write_record  # noqa: E402 - beside this script

from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop  # noqa: E402

#: Summaries compared fit by fit (ESS is computed on the host from the draws).
FIELDS = ("post_mean", "post_sd", "ci_low", "ci_high", "steps", "divergences", "ess")


def compare(counts, keys, chunks: list[int], settings: NUTSSettings) -> dict:
    """Fits differing from the first call size's, per field, and each size's fit time."""
    fitted = {c: timed_fits(counts, keys, "nuts", c, settings) for c in chunks}
    first = fitted[chunks[0]][0]
    out = {"seconds_by_chunk": {str(c): s for c, (_, s) in fitted.items()}, "by_chunk": {}}
    for c in chunks[1:]:
        other = fitted[c][0]
        diff = {}
        for name in FIELDS:
            x, y = np.asarray(getattr(first, name)), np.asarray(getattr(other, name))
            differ = values_differ(x, y)
            # Where one is NaN and the other not, the gap is NaN: max_abs_diff says so.
            gap = np.abs(x.astype(float) - y.astype(float))[differ]
            diff[name] = {
                "fits_differing": int(differ.sum()),
                "max_abs_diff": float(gap.max()) if gap.size else 0.0,
            }
        out["by_chunk"][str(c)] = diff
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=4096)
    parser.add_argument("--chunks", type=int, nargs="+", default=[4096, 1024])
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--seed", type=int, default=0)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if len(args.chunks) < 2:
        parser.error("--chunks: at least two call sizes to compare")
    counts, keys = lanes(sample_designs(args.fits, args.seed), args.seed)
    settings = resolve_loop(NUTSSettings())  # the loop "auto" runs here
    result = {
        **provenance("nuts_call_determinism.py", argv),
        "fits": args.fits,
        "chunks": args.chunks,
        "nuts_settings": settings._asdict(),
        **compare(counts, keys, args.chunks, settings),
    }
    print(json.dumps(result, indent=2))
    write_record(result, args.out, f"nuts-determinism-{jax.devices()[0].platform}")


if __name__ == "__main__":
    main()
