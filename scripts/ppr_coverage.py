"""Does prediction-powered ranking's covariance match the spread of its estimates? Simulated
balanced arenas, our Σ̂ beside the released code's formula.

Each replicate is one arena: S systems (``--systems``), ``--per-pair`` battles for every
pair, sides alternating (i on side A in battle 0, 2, …), each battle's truth drawn from
Davidson's Bradley–Terry with ties (MODEL.md, "Battles") at fixed strengths
(``--spread``: s evenly spaced in [−spread, spread], centred) and tie parameter ``--nu``.
The true win rate θ_i is the mean over j of P(i beats j) (balanced: every pair alike), its
ranking the true one.

Two cases: ``human``, a human verdict on every battle (θ̂ the human win rates, the
classical estimate); ``ppi``, the human verdict on ``--human-per-pair`` battles a pair
and a simulated judge's verdict on all, the judge's 3 × 3 confusion ``JUDGE`` (rows the
true outcome B better / tie / A better, columns its verdict; a position bias towards A),
λ power-tuned. Per case and system: the SD of θ̂_i over the replicates against the mean
of √Σ̂_ii, ours (kernels/arena/ppr.py) and the released code's formula
(``released_covariance``, at the same λ); the simultaneous coverage of the true ranking
by the rank sets at ``--level`` with each covariance, with its Monte Carlo SE, and the
mean rank-set size. The released code's own λ̂ is not used (its trace has the same form;
in a balanced arena its weights are equal across systems).

    python scripts/ppr_coverage.py [--replicates 400] [--systems 12] [--per-pair 15]
        [--human-per-pair 5] [--spread 1.0] [--nu 0.5] [--level 0.9] [--seed 0]
        [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from binmetric_sweep.kernels.arena.cells import NONE, count_cells
from binmetric_sweep.kernels.arena.ppr import ppr_win_rates, rank_sets, released_covariance
from binmetric_sweep.sweep.storage.records import provenance, write_record

#: The simulated judge: P(verdict | truth), rows and columns (B better, tie, A better).
JUDGE = np.array(
    [
        [0.70, 0.10, 0.20],
        [0.20, 0.40, 0.40],
        [0.05, 0.10, 0.85],
    ]
)


def davidson(strengths: np.ndarray, nu: float, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(B, 3)`` P(B better, tie, A better) of each battle (a on side A)."""
    la, lb = np.exp(strengths[a]), np.exp(strengths[b])
    tie = nu * np.sqrt(la * lb)
    total = la + lb + tie
    return np.column_stack([lb, tie, la]) / total[:, None]


def design(systems: int, per_pair: int, human_per_pair: int):
    """``(B,)`` a, b and whether each battle has a human verdict (the first few a pair)."""
    i, j = np.triu_indices(systems, 1)
    k = np.tile(np.arange(per_pair), len(i))
    i, j = np.repeat(i, per_pair), np.repeat(j, per_pair)
    a = np.where(k % 2 == 0, i, j)
    b = np.where(k % 2 == 0, j, i)
    return a, b, k < human_per_pair


def true_win_rates(strengths: np.ndarray, nu: float) -> np.ndarray:
    """``(S,)`` θ_i: the mean over j ≠ i of P(i beats j) (sides do not matter here)."""
    s = len(strengths)
    i, j = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
    p = davidson(strengths, nu, i.ravel(), j.ravel())[:, 2].reshape(s, s)
    np.fill_diagonal(p, 0.0)
    return p.sum(axis=1) / (s - 1)


def draw(rng, probabilities: np.ndarray) -> np.ndarray:
    """One class per row of ``(B, 3)`` probabilities."""
    u = rng.random(len(probabilities))
    return (u[:, None] > np.cumsum(probabilities, axis=1)[:, :2]).sum(axis=1)


def ranks(theta: np.ndarray) -> np.ndarray:
    """``(S,)`` 1 the highest."""
    order = np.argsort(-theta, kind="stable")
    out = np.empty(len(theta), int)
    out[order] = np.arange(1, len(theta) + 1)
    return out


def summary(estimates, sds_ours, sds_released, covered_ours, covered_released, sizes, theta):
    estimates = np.array(estimates)
    sd = estimates.std(axis=0, ddof=1)
    m = len(estimates)

    def coverage(hits):
        p = float(np.mean(hits))
        return {"coverage": p, "mcse": float(np.sqrt(p * (1 - p) / m))}

    ours, released = np.mean(sds_ours, axis=0), np.mean(sds_released, axis=0)
    return {
        "sd_of_theta_hat": sd.tolist(),
        "mean_sqrt_cov_ours": ours.tolist(),
        "mean_sqrt_cov_released": released.tolist(),
        "sd_over_se_ours": (sd / ours).tolist(),
        "sd_over_se_released": (sd / released).tolist(),
        "sd_over_se_relative_mcse": 1.0 / np.sqrt(2.0 * (m - 1)),
        "bias": (estimates.mean(axis=0) - theta).tolist(),
        "rank_sets_ours": {**coverage(covered_ours), "mean_size": float(np.mean(sizes[0]))},
        "rank_sets_released": {
            **coverage(covered_released),
            "mean_size": float(np.mean(sizes[1])),
        },
    }


def run_case(rng, args, strengths, human_per_pair: int, with_judge: bool) -> dict:
    a, b, has_human = design(args.systems, args.per_pair, human_per_pair)
    probabilities = davidson(strengths, args.nu, a, b)
    theta = true_win_rates(strengths, args.nu)
    truth_ranks = ranks(theta)
    judge = 0 if with_judge else None
    estimates, sds_ours, sds_released, lams = [], [], [], []
    covered_ours, covered_released, sizes = [], [], ([], [])
    for _ in range(args.replicates):
        truth = draw(rng, probabilities)
        said = draw(rng, JUDGE[truth])
        cells = count_cells(a, b, np.where(has_human, truth, NONE), said[:, None])
        est = ppr_win_rates(cells, args.systems, judge=judge)
        released = released_covariance(cells, args.systems, judge=judge, lam=est.lam)
        estimates.append(est.theta)
        lams.append(est.lam)
        for cov, sds, covered, size in (
            (est.cov, sds_ours, covered_ours, sizes[0]),
            (released, sds_released, covered_released, sizes[1]),
        ):
            sds.append(np.sqrt(np.diag(cov)))
            lower, upper = rank_sets(est.theta, cov, args.level)
            covered.append(bool(np.all((lower <= truth_ranks) & (truth_ranks <= upper))))
            size.append(float(np.mean(upper - lower + 1)))
    result = summary(
        estimates, sds_ours, sds_released, covered_ours, covered_released, sizes, theta
    )
    return {
        "human_per_pair": human_per_pair,
        "judge": JUDGE.tolist() if with_judge else None,
        "mean_lambda": float(np.mean(lams)),
        "true_theta": theta.tolist(),
        **result,
    }


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--systems", type=int, default=12)
    parser.add_argument("--per-pair", type=int, default=15)
    parser.add_argument("--human-per-pair", type=int, default=5)
    parser.add_argument("--spread", type=float, default=1.0)
    parser.add_argument("--nu", type=float, default=0.5)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)

    strengths = np.linspace(-args.spread, args.spread, args.systems)
    rng = np.random.default_rng(args.seed)
    record = {
        **provenance("ppr_coverage.py", argv),
        "settings": {
            "systems": args.systems,
            "per_pair": args.per_pair,
            "battles": args.per_pair * args.systems * (args.systems - 1) // 2,
            "strengths": strengths.tolist(),
            "nu": args.nu,
            "level": args.level,
            "replicates": args.replicates,
            "seed": args.seed,
            "sides": "alternating within each pair",
        },
        "human": run_case(rng, args, strengths, args.per_pair, with_judge=False),
        "ppi": run_case(rng, args, strengths, args.human_per_pair, with_judge=True),
    }
    print(write_record(record, args.out, "ppr-coverage"))
    for case in ("human", "ppi"):
        r = record[case]
        print(
            f"{case}: SD/SE ours {min(r['sd_over_se_ours']):.2f}–{max(r['sd_over_se_ours']):.2f}, "
            f"released {min(r['sd_over_se_released']):.2f}–{max(r['sd_over_se_released']):.2f}; "
            f"coverage ours {r['rank_sets_ours']['coverage']:.3f} ± "
            f"{r['rank_sets_ours']['mcse']:.3f} (size {r['rank_sets_ours']['mean_size']:.2f}), "
            f"released {r['rank_sets_released']['coverage']:.3f} ± "
            f"{r['rank_sets_released']['mcse']:.3f} "
            f"(size {r['rank_sets_released']['mean_size']:.2f}); λ̄ {r['mean_lambda']:.3f}"
        )


if __name__ == "__main__":
    main()
