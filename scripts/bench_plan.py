"""Planner throughput, single and batched, against brute force; JSON under benchmarks/results/.

Measures, on whatever device JAX has (compile time excluded by a warm-up call):
  * plans/s planning scenarios one call each (``sweep.plan.plan_grid([s])``);
  * plans/s planning them all in one batched call (``plan_grid(scenarios)``);
  * plans/s of a brute-force search: for each N_M on {0} ∪ 2^4…2^24 and then
    2^(k/10)·(coarse best), k = −10…10, the least N_Φ by integer bisection with
    the exact quadrature (all scenarios batched), the cheapest over that grid;
  * the planner's cost over the brute force's, per scenario;
  * the simulation check (R campaigns × 3 systems) per plan, separately.

Scenarios are random, with the shared paired set (the 3-D posterior) unless
``--n-rho-eta`` says otherwise.

Usage: python scripts/bench_plan.py [--scenarios 8] [--single 3] [--replicates 400] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

from binmetric_sweep.sweep.plan import PlanSpec, exact_eps, plan_grid, problems, simulate_tests  # noqa: E402
from binmetric_sweep.sweep.storage.records import provenance, write_record  # noqa: E402


def scenarios(n: int, seed: int, n_rho_eta: str) -> list[PlanSpec]:
    r = np.random.default_rng(seed)
    paired = n_rho_eta if n_rho_eta in ("shared", "known") else int(n_rho_eta)
    return [
        PlanSpec(
            alpha=float(r.choice([0.2, 0.3, 0.5, 0.6, 0.8])),
            rho=float(r.choice([0.6, 0.7, 0.8, 0.9, 0.95])),
            eta=float(r.choice([0.6, 0.7, 0.8, 0.9, 0.95])),
            eps=float(r.choice([0.02, 0.03, 0.05, 0.08, 0.12])),
            power=float(r.choice([0.5, 0.8, 0.9])),
            gamma=float(r.choice([0.05, 0.01])),
            cost_metric=float(r.choice([0.001, 0.002, 0.01, 0.05])),
            n_rho_eta=paired,
        )
        for _ in range(n)
    ]


def least_n_phi(p, index, n_m, hi) -> np.ndarray:
    """Least N_Φ in [0, hi] meeting each lane's target at its N_M (integer bisection;
    ``hi`` doubled until it meets it)."""
    lo, hi = np.full(len(index), -1, np.int64), np.array(hi, np.int64)
    target = p.target[index]
    todo = np.arange(len(index))
    while len(todo):
        good = exact_eps(p, index[todo], hi[todo], n_m[todo]) <= target[todo]
        bad = todo[~good]
        lo[bad], hi[bad] = hi[bad], 2 * hi[bad] + 1
        todo = bad
    while (open_ := np.flatnonzero(hi - lo > 1)).size:
        mid = (lo[open_] + hi[open_]) // 2
        met = exact_eps(p, index[open_], mid, n_m[open_]) <= target[open_]
        hi[open_] = np.where(met, mid, hi[open_])
        lo[open_] = np.where(met, lo[open_], mid)
    return hi


def brute_force(specs: list[PlanSpec]) -> np.ndarray:
    """Cheapest cost over a coarse then a fine grid of N_M, each with its least N_Φ."""
    p = problems(specs)
    n = len(specs)
    rows = np.arange(n)
    alone = least_n_phi(p, rows, np.zeros(n, np.int64), np.full(n, 64))
    coarse = np.concatenate([[0], 2 ** np.arange(4, 25)])
    index, y = np.repeat(rows, len(coarse)), np.tile(coarse, n)
    x = least_n_phi(p, index, y, alone[index])
    best_y = {}
    costs = {i: [] for i in rows}
    for i, a, b in zip(index, x, y, strict=True):
        costs[i].append(specs[i].cost(a, b))
    for i in rows:
        best_y[i] = max(int(y[index == i][np.argmin(costs[i])]), 16)
    fine = {i: np.unique(np.round(best_y[i] * 2.0 ** (np.arange(-10, 11) / 10.0))) for i in rows}
    index2 = np.concatenate([np.full(len(fine[i]), i) for i in rows])
    y2 = np.concatenate([fine[i] for i in rows]).astype(np.int64)
    x2 = least_n_phi(p, index2, y2, alone[index2])
    for i, a, b in zip(index2, x2, y2, strict=True):
        costs[i].append(specs[i].cost(a, b))
    return np.array([min(costs[i]) for i in rows])


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=8, help="scenarios planned in a batch")
    parser.add_argument("--single", type=int, default=3, help="of them, planned one by one")
    parser.add_argument("--replicates", type=int, default=400, help="for the simulation check")
    parser.add_argument("--n-rho-eta", default="shared")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/results")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    specs = scenarios(args.scenarios, args.seed, args.n_rho_eta)
    warm = specs[0].model_copy(update={"eps": 0.2})
    plan_grid([warm], replicates=0)  # compile the kernels for every kind used here
    plan_grid([warm.model_copy(update={"n_rho_eta": "known"})], replicates=0)
    _, single_s = timed(lambda: [plan_grid([s], replicates=0) for s in specs[: args.single]])
    plans, batched_s = timed(lambda: plan_grid(specs, replicates=0))
    reference, brute_s = timed(lambda: brute_force(specs))
    cost = np.array([pl.cost for pl in plans])
    simulation = None
    if args.replicates:
        pl = plans[0]
        simulate_tests([pl.spec], [pl.n_phi], [pl.n_m], [pl.spec.eps], 8, seed=0)  # warm-up
        (power, _, type1, _), sim_s = timed(
            lambda: simulate_tests(
                [pl.spec], [pl.n_phi], [pl.n_m], [pl.spec.eps], args.replicates, seed=0
            )
        )
        simulation = {
            "replicates": args.replicates,
            "fits": 3 * args.replicates,
            "seconds_per_plan": sim_s,
            "empirical_power": float(power[0]),
            "promised_power": pl.spec.power,
            "type1_rate": float(type1[0]),
            "gamma": pl.spec.gamma,
        }
    result = {
        **provenance("bench_plan.py", argv),
        "n_rho_eta": args.n_rho_eta,
        "scenarios": len(specs),
        "single": {"plans": args.single, "plans_per_s": args.single / single_s},
        "batched": {"plans": len(specs), "plans_per_s": len(specs) / batched_s},
        "brute_force": {"plans": len(specs), "plans_per_s": len(specs) / brute_s},
        "speedup_batched_over_brute_force": brute_s / batched_s,
        "cost_over_brute_force": {
            "max": float(np.max(cost / reference)),
            "min": float(np.min(cost / reference)),
            "per_scenario": [float(v) for v in cost / reference],
        },
        "all_meet_target": bool(all(pl.eps <= pl.spec.eps for pl in plans)),
        "simulation_check": simulation,
    }
    print(json.dumps(result, indent=2))
    write_record(result, args.out, f"plan-{jax.devices()[0].platform}")


if __name__ == "__main__":
    main()
