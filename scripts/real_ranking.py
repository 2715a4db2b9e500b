"""Leaderboards from a few human verdicts, checked on the real Arena battles (issue 67 item 5).

Calibration splits of a battles file (default: the shipped 26,919 Chatbot Arena battles):
each split keeps the human verdict on n battles drawn at random without replacement (n from
``--n``) and every judge's verdict on every battle. Each method ranks the systems from the
split; its rank intervals are checked against the **reference**: the ranking the same kind
of method gives from every human verdict of the file.

- ``ppr`` (prediction-powered ranking, :mod:`kernels.arena.ppr`): per judge (GPT-4, GPT-3.5)
  and the human verdicts alone (judge ``none``), χ² rank sets at ``--level`` with our
  covariance, and with the released code's (``ppr_released``, :func:`released_covariance`):
  every split. Reference: the win rates of every human verdict.
- ``bayes`` (the arena posterior, every judge named or both, independent given the truth)
  and ``human_only`` (the posterior of the split's human verdicts alone): the first
  ``--posterior-splits`` splits of each n (a NUTS fit each, 4 chains × (500 + 1000)); the
  central rank intervals and the simultaneous rank sets at ``--level``. Reference: the
  human-only posterior of every human verdict (its ranks by mean strength).

Per (method, judge, n, interval kind), over splits: ``held`` (the share of systems whose
interval holds its reference rank; its MC SE over splits), ``all_held`` (the share of splits
where every system's does), ``size`` (mean places in an interval), ``tau`` (Kendall's τ
between the split's point ranking and the reference's). A table is printed, a figure drawn
and the record written to ``--out`` as ``real-ranking-<time>.json``.

Usage: python scripts/real_ranking.py [--battles examples/arena_battles.csv]
           [--n 500,1000,2000] [--splits 200] [--posterior-splits 5] [--level 0.95]
           [--seed 67] [--out benchmarks/results] [--figure docs/figures/real-ranking.png]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jax
import numpy as np

from binmetric_sweep.kernels.arena.cells import NONE, BattleCells, count_cells, with_human_verdict
from binmetric_sweep.kernels.arena.logdensity import arena_data, arena_shape
from binmetric_sweep.kernels.arena.posterior import (
    rank_draws,
    rank_intervals,
    sample_arena,
    simultaneous_rank_sets,
)
from binmetric_sweep.kernels.arena.ppr import ppr_win_rates, rank_sets, released_covariance
from binmetric_sweep.sweep.compare.battles import read_battles
from binmetric_sweep.sweep.storage.records import provenance, write_record

REPO = Path(__file__).resolve().parents[1]
SHORT = {"gpt-4-0125-preview": "gpt-4", "gpt-3.5-turbo": "gpt-3.5"}


class Split:
    """One split's battles as cells: the human verdict kept on ``n`` battles drawn at random."""

    def __init__(self, cells: BattleCells):
        rows = np.repeat(np.arange(len(cells.count)), cells.count)  # one per battle
        self.a, self.b = cells.a[rows], cells.b[rows]
        self.human, self.judged = cells.human[rows], cells.judged[rows]
        self.with_human = np.flatnonzero(self.human != NONE)

    def draw(self, rng: np.random.Generator, n: int) -> BattleCells:
        kept = rng.choice(self.with_human, size=n, replace=False)
        human = np.full_like(self.human, NONE)
        human[kept] = self.human[kept]
        return count_cells(self.a, self.b, human, self.judged)


def ranking(score: np.ndarray) -> np.ndarray:
    """``(S,)`` each system's rank by ``score``, 1 the highest (ties by index)."""
    ranks = np.empty(len(score), dtype=np.int64)
    ranks[np.argsort(-np.asarray(score), kind="stable")] = np.arange(1, len(score) + 1)
    return ranks


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ of two rankings without ties."""
    i, j = np.triu_indices(len(x), 1)
    return float(np.mean(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])))


def posterior_ranks(key, cells: BattleCells, systems: int, judges: tuple[int, ...]):
    """The posterior's rank draws ``(M, S)`` and the fit's health."""
    data = arena_data(cells if judges else with_human_verdict(cells), systems, judges)
    draws = sample_arena(key, data, arena_shape(systems, len(judges)))
    health = {
        "rhat_max": float(draws.rhat_max),
        "ess_min": float(draws.ess_min),
        "divergences": int(draws.divergences),
    }
    return rank_draws(draws.strengths), draws.strengths.mean(axis=0), health


def scores(low, high, point, reference) -> dict:
    return {
        "held": float(np.mean((low <= reference) & (reference <= high))),
        "size": float(np.mean(high - low + 1)),
        "tau": kendall_tau(ranking(point), reference),
    }


def summarise(rows: list[dict]) -> list[dict]:
    """Per (method, judge, n, interval): means over splits with MC SEs."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["method"], r["judge"], r["n"], r["interval"]), []).append(r)
    out = []
    for (method, judge, n, interval), g in groups.items():
        held = np.array([r["held"] for r in g])
        k = len(g)
        se = float(held.std(ddof=1) / np.sqrt(k)) if k > 1 else float("nan")
        out.append(
            {
                "method": method,
                "judge": judge,
                "n": n,
                "interval": interval,
                "splits": k,
                "held": float(held.mean()),
                "held_se": se,
                "all_held": float(np.mean(held == 1.0)),
                "size": float(np.mean([r["size"] for r in g])),
                "tau": float(np.mean([r["tau"] for r in g])),
            }
        )
    return out


def draw_figure(summary: list[dict], level: float, path: Path) -> None:
    """Per n: the share of systems held, the mean interval size and τ; a colour per (method,
    judge), solid for rank sets, dashed for the posterior's central intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), layout="constrained")
    fits = sorted({(r["method"], r["judge"]) for r in summary})
    colours = dict(zip(fits, plt.get_cmap("tab10").colors, strict=False))
    sizes = sorted({r["n"] for r in summary})
    for method, judge, interval in sorted(
        {(r["method"], r["judge"], r["interval"]) for r in summary}
    ):
        rs = sorted(
            (
                r
                for r in summary
                if (r["method"], r["judge"], r["interval"]) == (method, judge, interval)
            ),
            key=lambda r: r["n"],
        )
        style = dict(
            color=colours[method, judge],
            ls="--" if interval == "central" else "-",
            marker="o",
            ms=3,
            lw=1,
        )
        label = f"{method} ({judge})" + (", central" if interval == "central" else "")
        n = [r["n"] for r in rs]
        axes[0].errorbar(
            n, [r["held"] for r in rs], [r["held_se"] for r in rs], label=label, **style
        )
        axes[1].plot(n, [r["size"] for r in rs], **style)
        axes[2].plot(n, [r["tau"] for r in rs], **style)
    axes[0].axhline(level, color="grey", lw=0.8)
    titles = (
        "share of systems whose interval holds the reference rank",
        "mean places in an interval",
        "Kendall's τ with the reference",
    )
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("human verdicts kept (n)")
        ax.set_title(title, fontsize=9)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=4, fontsize=7)
    fig.savefig(path, dpi=150)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", default=str(REPO / "examples" / "arena_battles.csv"))
    parser.add_argument("--n", default="500,1000,2000")
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--posterior-splits", type=int, default=5)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=67)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    parser.add_argument("--figure", default=str(REPO / "docs" / "figures" / "real-ranking.png"))
    args = parser.parse_args()
    sizes = [int(n) for n in args.n.split(",")]
    start = time.perf_counter()

    battles = read_battles(args.battles)
    s, names = len(battles.systems), [SHORT.get(j, j) for j in battles.judges]
    split = Split(battles.cells)
    jax.config.update("jax_enable_x64", True)
    key = jax.random.key(args.seed)

    ppr_reference = ranking(ppr_win_rates(battles.cells, s, None).theta)
    ranks, mean, health = posterior_ranks(key, battles.cells, s, ())
    posterior_reference = ranking(mean)
    fits = [{"n": "all", "method": "human_only", "judge": "none", **health}]
    rows = []
    posterior_methods = [("human_only", "none", ())]
    posterior_methods += [("bayes", names[j], (j,)) for j in range(len(names))]
    if len(names) > 1:
        posterior_methods.append(("bayes", "both", tuple(range(len(names)))))

    rng = np.random.default_rng(args.seed)
    for n in sizes:
        for k in range(args.splits):
            cells = split.draw(rng, n)
            for judge in (None, *range(len(names))):
                est = ppr_win_rates(cells, s, judge)
                label = "none" if judge is None else names[judge]
                for method, cov in (
                    ("ppr", est.cov),
                    ("ppr_released", released_covariance(cells, s, judge)),
                ):
                    low, high = rank_sets(est.theta, cov, args.level)
                    rows.append(
                        {
                            "method": method,
                            "judge": label,
                            "n": n,
                            "split": k,
                            "interval": "set",
                            **scores(low, high, est.theta, ppr_reference),
                        }
                    )
            if k >= args.posterior_splits:
                continue
            for method, label, judges in posterior_methods:
                fit_key = jax.random.fold_in(key, len(fits))
                ranks, mean, health = posterior_ranks(fit_key, cells, s, judges)
                fits.append({"n": n, "split": k, "method": method, "judge": label, **health})
                for interval, (low, high) in (
                    ("central", rank_intervals(ranks, args.level)),
                    ("set", simultaneous_rank_sets(ranks, args.level)),
                ):
                    rows.append(
                        {
                            "method": method,
                            "judge": label,
                            "n": n,
                            "split": k,
                            "interval": interval,
                            **scores(low, high, mean, posterior_reference),
                        }
                    )
            print(
                f"n = {n}: posterior split {k + 1} of {args.posterior_splits} "
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )

    summary = summarise(rows)
    print(
        f"{'method':14} {'judge':7} {'n':>5} {'interval':8} {'splits':>6} {'held':>14} "
        f"{'all held':>8} {'size':>6} {'tau':>6}"
    )
    for r in sorted(summary, key=lambda r: (r["method"], r["judge"], r["interval"], r["n"])):
        print(
            f"{r['method']:14} {r['judge']:7} {r['n']:>5} {r['interval']:8} {r['splits']:>6} "
            f"{r['held']:.3f} ± {r['held_se']:.3f} {r['all_held']:>8.3f} {r['size']:>6.2f} "
            f"{r['tau']:>6.3f}"
        )
    record = {
        "battles": Path(args.battles).name,
        "systems": list(battles.systems),
        "judges": list(battles.judges),
        "level": args.level,
        "seed": args.seed,
        "splits": args.splits,
        "posterior_splits": args.posterior_splits,
        "sampler": "4 chains × (500 + 1000)",
        "ppr_reference": ppr_reference.tolist(),
        "posterior_reference": posterior_reference.tolist(),
        "summary": summary,
        "fits": fits,
        "seconds": time.perf_counter() - start,
        "cpus": os.cpu_count(),
        **provenance("real_ranking.py", sys.argv[1:]),
    }
    path = write_record(record, args.out, "real-ranking")
    draw_figure(summary, args.level, Path(args.figure))
    print(f"wrote {path} and {args.figure}")


if __name__ == "__main__":
    main()
