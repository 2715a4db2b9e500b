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
  and ``human_only`` (the posterior of the split's human verdicts alone): every split too (a
  NUTS fit each, 4 chains × (500 + 1000), about 10 s on 2 cores); the central rank intervals
  and the simultaneous rank sets at ``--level``. Reference: the human-only posterior of
  every human verdict (its ranks by mean strength).

Resumable: each finished split (n, k) is one JSON file in ``--store`` (its rows and its
fits' health), written whole or not at all, and a rerun with the same settings does only the
splits missing, in the order k = 0, 1, … with every n at each k, so that a store cut short
holds about as many splits of each n. Split k of n keeps the verdicts
``np.random.default_rng([seed, n, k])`` draws and its fits use keys folded from (n, k), so a
split's numbers do not depend on which others were run, nor in which session. ``--budget``
starts no split after that many seconds; the record and figure then summarise every split in
the store.

Per (method, judge, n, interval kind), over splits: ``held`` (the share of systems whose
interval holds its reference rank; its MC SE over splits), ``all_held`` (the share of splits
where every system's does), ``size`` (mean places in an interval), ``tau`` (Kendall's τ
between the split's point ranking and the reference's). A table is printed, a figure drawn
and the record written to ``--out`` as ``real-ranking-<time>.json``.

Usage: python scripts/real_ranking.py [--battles examples/arena_battles.csv]
           [--n 500,1000,2000] [--splits 200] [--level 0.95] [--seed 67]
           [--store runs/real-ranking] [--budget SECONDS]
           [--out benchmarks/results] [--figure docs/figures/real-ranking.png]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

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


class Settings(NamedTuple):
    """What a store's splits were computed with: a rerun resumes only under the same."""

    battles_sha256: str
    seed: int
    level: float
    sampler: str

    @classmethod
    def of(cls, battles: Path, seed: int, level: float) -> Settings:
        digest = hashlib.sha256(battles.read_bytes()).hexdigest()
        return cls(digest, seed, level, "4 chains × (500 + 1000)")


def open_store(store: Path, settings: Settings) -> None:
    """Create ``store`` with its settings, or check that an existing one has the same."""
    path = store / "settings.json"
    if path.exists():
        found = json.loads(path.read_text())
        if found != settings._asdict():
            differ = ", ".join(k for k, v in settings._asdict().items() if found.get(k) != v)
            raise SystemExit(f"--store: {store} holds splits of other settings ({differ})")
        return
    store.mkdir(parents=True, exist_ok=True)
    write_record(settings._asdict(), store, "settings", path)


def split_path(store: Path, n: int, k: int) -> Path:
    return store / f"n{n:05d}-split{k:04d}.json"


def draw_split(split: Split, seed: int, n: int, k: int) -> BattleCells:
    """Split k of n: its own generator, so that it is the same whichever splits ran before."""
    return split.draw(np.random.default_rng([seed, n, k]), n)


class Context(NamedTuple):
    """What every split's fits share: the file's systems and judges, the references.

    Attributes:
        systems: S.
        names: the judges' short names, in the file's column order.
        level: the intervals' and sets' level.
        key: the seed's key; split (n, k)'s fits fold n, k and the method's index into it.
        posterior_methods: (method, judge label, judge columns) of each posterior fit.
        ppr_reference, posterior_reference: ``(S,)`` the reference ranks (module docstring).
    """

    systems: int
    names: list[str]
    level: float
    key: jax.Array
    posterior_methods: list[tuple[str, str, tuple[int, ...]]]
    ppr_reference: np.ndarray
    posterior_reference: np.ndarray


def split_rows(cells: BattleCells, n: int, k: int, context: Context) -> dict:
    """One split's rows (every method, judge and interval kind) and its fits' health."""
    s, names, level = context.systems, context.names, context.level
    rows, fits = [], []
    for judge in (None, *range(len(names))):
        est = ppr_win_rates(cells, s, judge)
        label = "none" if judge is None else names[judge]
        for method, cov in (
            ("ppr", est.cov),
            ("ppr_released", released_covariance(cells, s, judge)),
        ):
            low, high = rank_sets(est.theta, cov, level)
            rows.append(
                {"method": method, "judge": label, "n": n, "split": k, "interval": "set"}
                | scores(low, high, est.theta, context.ppr_reference)
            )
    split_key = jax.random.fold_in(jax.random.fold_in(context.key, n), k)
    for index, (method, label, judges) in enumerate(context.posterior_methods):
        ranks, mean, health = posterior_ranks(
            jax.random.fold_in(split_key, index), cells, s, judges
        )
        fits.append({"n": n, "split": k, "method": method, "judge": label, **health})
        for interval, (low, high) in (
            ("central", rank_intervals(ranks, level)),
            ("set", simultaneous_rank_sets(ranks, level)),
        ):
            rows.append(
                {"method": method, "judge": label, "n": n, "split": k, "interval": interval}
                | scores(low, high, mean, context.posterior_reference)
            )
    return {"rows": rows, "fits": fits}


def stored_splits(store: Path) -> list[dict]:
    """Every finished split in ``store``, in (n, k) order."""
    return [json.loads(p.read_text()) for p in sorted(store.glob("n*-split*.json"))]


def health_summary(fits: list[dict]) -> list[dict]:
    """Per (method, judge): the fits, the worst R-hat, the least ESS, the divergences, and
    the fits with R-hat above 1.01."""
    groups: dict[tuple, list[dict]] = {}
    for f in fits:
        groups.setdefault((f["method"], f["judge"]), []).append(f)
    return [
        {
            "method": method,
            "judge": judge,
            "fits": len(g),
            "rhat_max": max(f["rhat_max"] for f in g),
            "ess_min": min(f["ess_min"] for f in g),
            "divergences": sum(f["divergences"] for f in g),
            "fits_with_divergences": sum(f["divergences"] > 0 for f in g),
            "rhat_over_1_01": [f for f in g if f["rhat_max"] > 1.01],
        }
        for (method, judge), g in sorted(groups.items())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", default=str(REPO / "examples" / "arena_battles.csv"))
    parser.add_argument("--n", default="500,1000,2000")
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=67)
    parser.add_argument("--store", default=str(REPO / "runs" / "real-ranking"))
    parser.add_argument("--budget", type=float, default=float("inf"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    parser.add_argument("--figure", default=str(REPO / "docs" / "figures" / "real-ranking.png"))
    args = parser.parse_args()
    sizes = [int(n) for n in args.n.split(",")]
    start = time.perf_counter()
    store = Path(args.store)
    open_store(store, Settings.of(Path(args.battles), args.seed, args.level))

    battles = read_battles(args.battles)
    s, names = len(battles.systems), [SHORT.get(j, j) for j in battles.judges]
    split = Split(battles.cells)
    jax.config.update("jax_enable_x64", True)
    key = jax.random.key(args.seed)

    ranks, mean, health = posterior_ranks(key, battles.cells, s, ())
    posterior_methods = [("human_only", "none", ())]
    posterior_methods += [("bayes", names[j], (j,)) for j in range(len(names))]
    if len(names) > 1:
        posterior_methods.append(("bayes", "both", tuple(range(len(names)))))
    context = Context(
        systems=s,
        names=names,
        level=args.level,
        key=key,
        posterior_methods=posterior_methods,
        ppr_reference=ranking(ppr_win_rates(battles.cells, s, None).theta),
        posterior_reference=ranking(mean),
    )

    todo = [
        (n, k) for k in range(args.splits) for n in sizes if not split_path(store, n, k).exists()
    ]
    for done, (n, k) in enumerate(todo):
        if time.perf_counter() - start > args.budget:
            print(f"--budget: {len(todo) - done} splits left for a later run", flush=True)
            break
        result = split_rows(draw_split(split, args.seed, n, k), n, k, context)
        write_record(result, store, "split", split_path(store, n, k))
        # Every fit compiles its own programs, each holding memory maps of its code: freed,
        # or a long run passes the kernel's map limit (65,530 here) after about 110 fits.
        jax.clear_caches()
        print(
            f"n = {n}, split {k}: {done + 1} of {len(todo)} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )

    splits = [r for r in stored_splits(store) if r["rows"][0]["n"] in sizes]
    summary = summarise([row for r in splits for row in r["rows"]])
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
        "splits_wanted": args.splits,
        "splits_done": {str(n): sum(r["rows"][0]["n"] == n for r in splits) for n in sizes},
        "sampler": "4 chains × (500 + 1000)",
        "ppr_reference": context.ppr_reference.tolist(),
        "posterior_reference": context.posterior_reference.tolist(),
        "reference_fit": health,
        "summary": summary,
        "health": health_summary([f for r in splits for f in r["fits"]]),
        "seconds_this_run": time.perf_counter() - start,
        "cpus": os.cpu_count(),
        **provenance("real_ranking.py", sys.argv[1:]),
    }
    path = write_record(record, args.out, "real-ranking")
    draw_figure(summary, args.level, Path(args.figure))
    print(f"wrote {path} and {args.figure}")


if __name__ == "__main__":
    main()
