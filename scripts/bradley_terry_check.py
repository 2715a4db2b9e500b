"""Where does Bradley–Terry fail on a battles file? A pair-by-pair posterior predictive check.

Fits the strengths model (Bradley–Terry with Davidson's ties) to every human verdict of the
file (default: the shipped 26,919 Chatbot Arena battles), and for each pair of systems with
human verdicts compares them with what the fitted strengths predict for that pair
(:mod:`kernels.arena.predictive`: Pearson's discrepancy, posterior predictive p-values,
Holm over the pairs). Prints the pairs that misfit, with their observed and expected
(i worse, tie, i better) counts, and writes the record to ``--out`` as
``bradley-terry-check-<time>.json``.

Usage: python scripts/bradley_terry_check.py [--battles examples/arena_battles.csv]
           [--alpha 0.05] [--seed 67] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jax
import numpy as np

from binmetric_sweep.kernels.arena.cells import with_human_verdict
from binmetric_sweep.kernels.arena.logdensity import arena_data, arena_shape
from binmetric_sweep.kernels.arena.posterior import sample_arena
from binmetric_sweep.kernels.arena.predictive import pair_outcomes, pair_predictive_check
from binmetric_sweep.sweep.compare.battles import read_battles
from binmetric_sweep.sweep.storage.records import provenance, write_record

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", default=str(REPO / "examples" / "arena_battles.csv"))
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=67)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    start = time.perf_counter()
    jax.config.update("jax_enable_x64", True)

    battles = read_battles(args.battles)
    s, names = len(battles.systems), list(battles.systems)
    cells = with_human_verdict(battles.cells)
    draws = sample_arena(jax.random.key(args.seed), arena_data(cells, s, ()), arena_shape(s, 0))
    check = pair_predictive_check(
        draws.pairs, pair_outcomes(cells, s), np.random.default_rng(args.seed), args.alpha
    )
    i, j = np.triu_indices(s, 1)
    rows = [
        {
            "system": names[i[p]],
            "opponent": names[j[p]],
            "observed": check.observed[p].tolist(),
            "expected": np.round(check.expected[p], 2).tolist(),
            "p_value": float(check.p_value[p]),
            "p_holm": float(check.p_holm[p]),
            "misfits": bool(check.misfits[p]),
        }
        for p in range(len(i))
        if check.observed[p].sum() > 0
    ]
    misfits = sorted((r for r in rows if r["misfits"]), key=lambda r: r["p_value"])
    print(
        f"{len(rows)} pairs with human verdicts; {len(misfits)} misfit at Holm {args.alpha}; "
        f"p < 0.05 unadjusted: {sum(r['p_value'] < 0.05 for r in rows)}"
    )
    print("system vs opponent: observed (worse, tie, better) / expected, p, Holm")
    for r in misfits:
        print(
            f"  {r['system']} vs {r['opponent']}: {r['observed']} / {r['expected']}, "
            f"p {r['p_value']:.4f}, Holm {r['p_holm']:.3f}"
        )
    record = {
        "battles": Path(args.battles).name,
        "alpha": args.alpha,
        "seed": args.seed,
        "sampler": "4 chains × (500 + 1000)",
        "health": {
            "rhat_max": draws.rhat_max,
            "ess_min": draws.ess_min,
            "divergences": draws.divergences,
        },
        "pairs": rows,
        "misfits": len(misfits),
        "unadjusted_below_0.05": sum(r["p_value"] < 0.05 for r in rows),
        "seconds": time.perf_counter() - start,
        "cpus": os.cpu_count(),
        **provenance("bradley_terry_check.py", sys.argv[1:]),
    }
    print(f"wrote {write_record(record, args.out, 'bradley-terry-check')}")


if __name__ == "__main__":
    main()
