"""Simulated leaderboards: do the arena posterior's rank intervals hold the true ranks?

Arenas drawn from the model (:mod:`kernels.arena.simulate`) over a small grid of what a
campaign sets: the number of systems S, the battles of each ordered pair, the share with a
human verdict; one judge with a positional confusion that leans to side A
(:data:`LEANING`). Each replicate draws its strengths from N(0, ``--spread``²), centred,
ν = ½, then its battles; ``bayes`` (human and judge verdicts) and ``human_only`` (the
human verdicts alone) are sampled for every replicate of a configuration in one batched
call (:func:`kernels.arena.posterior.sample_arenas`).

Per configuration and method, over replicates: ``held`` (share of systems whose central
``--level`` rank interval holds its true rank), ``all_held_sets`` (share of replicates where
the simultaneous rank sets hold every system's), ``width`` (mean places in a central
interval), ``leader_first`` (share of replicates whose highest posterior mean strength is
the true leader's), ``p_leader`` (mean posterior P(rank 1) of the true leader), and the fits'
worst R-hat and divergences. The record goes to ``--out`` as ``arena-coverage-<time>.json``.

Usage: python scripts/arena_coverage.py [--replicates 16] [--spread 0.5] [--level 0.95]
           [--seed 6] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.arena.logdensity import arena_shape
from binmetric_sweep.kernels.arena.posterior import SamplerSettings, sample_arenas
from binmetric_sweep.kernels.arena.scores import score_rankings
from binmetric_sweep.kernels.arena.simulate import ArenaDesign, cell_data, draw_arena_counts
from binmetric_sweep.sweep.storage.records import provenance, write_record

REPO = Path(__file__).resolve().parents[1]
#: The judge's confusion, rows the truth (B better, tie, A better), columns its verdict.
LEANING = np.array([[0.7, 0.1, 0.2], [0.25, 0.4, 0.35], [0.08, 0.12, 0.8]])
GRID = {"systems": (6, 10), "battles": (4, 16), "human_share": (0.1, 0.5)}
SETTINGS = SamplerSettings(chains=4, warmup=300, samples=500)


def designs(rng, replicates: int, systems: int, battles: int, share: float, spread: float):
    for _ in range(replicates):
        s = rng.normal(0.0, spread, systems)
        yield ArenaDesign(
            strengths=jnp.asarray(s - s.mean()),
            log_nu=jnp.asarray(np.log(0.5)),
            battles=jnp.asarray(battles * (1.0 - np.eye(systems))),
            human_share=jnp.asarray(share),
            confusions=jnp.asarray(LEANING[None]),
            copy=jnp.zeros(1),
        )


def scores(strengths: np.ndarray, truth: np.ndarray, level: float) -> dict:
    """``strengths`` ``(B, chains, samples, S)``, ``truth`` ``(B, S)``: the means over the B
    replicates of :func:`kernels.arena.scores.score_rankings`."""
    got = score_rankings(strengths, truth, level)
    return {
        "held": float(np.mean(got.held)),
        "held_se": float(np.std(got.held, ddof=1) / np.sqrt(len(got.held))),
        "all_held_sets": float(np.mean(got.all_held)),
        "width": float(np.mean(got.width)),
        "leader_first": float(np.mean(got.leader_first)),
        "p_leader": float(np.mean(got.p_leader)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=16)
    parser.add_argument("--spread", type=float, default=0.5)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    key = jax.random.key(args.seed)
    rows = []
    for c, (systems, battles, share) in enumerate(itertools.product(*GRID.values())):
        batch = list(designs(rng, args.replicates, systems, battles, share, args.spread))
        keys = jax.random.split(jax.random.fold_in(key, c), args.replicates)
        counts = [draw_arena_counts(k, d) for k, d in zip(keys, batch, strict=True)]
        truth = np.stack([np.asarray(d.strengths) for d in batch])
        layout = np.asarray(batch[0].battles)
        for method, judges in (("bayes", None), ("human_only", ())):
            data = jax.tree.map(
                lambda *x: jnp.stack(x), *[cell_data(n, layout, judges) for n in counts]
            )
            shape = arena_shape(systems, 1 if judges is None else 0)
            draws = sample_arenas(keys, data, shape, SETTINGS)
            row = {"systems": systems, "battles": battles, "human_share": share, "method": method}
            row |= scores(draws.strengths, truth, args.level)
            row |= {
                "rhat_max": float(draws.rhat_max.max()),
                "divergences": int(draws.divergences.sum()),
            }
            rows.append(row)
            print(
                f"S {systems:>2} battles {battles:>2} share {share:.1f} {method:10} "
                f"held {row['held']:.3f} ± {row['held_se']:.3f} sets {row['all_held_sets']:.2f} "
                f"width {row['width']:.2f} leader {row['leader_first']:.2f} "
                f"P(leader 1) {row['p_leader']:.2f} R-hat {row['rhat_max']:.3f} "
                f"div {row['divergences']} ({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    record = {
        "grid": GRID,
        "judge_confusion": LEANING.tolist(),
        "nu": 0.5,
        "spread": args.spread,
        "replicates": args.replicates,
        "level": args.level,
        "seed": args.seed,
        "sampler": f"{SETTINGS.chains} chains × ({SETTINGS.warmup} + {SETTINGS.samples})",
        "rows": rows,
        "seconds": time.perf_counter() - start,
        "cpus": os.cpu_count(),
        **provenance("arena_coverage.py", sys.argv[1:]),
    }
    print(f"wrote {write_record(record, args.out, 'arena-coverage')}")


if __name__ == "__main__":
    main()
