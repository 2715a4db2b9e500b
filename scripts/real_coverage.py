"""Does each estimator's interval hold the truth on real ratings? Calibration splits of a
fully double-labelled file, beside simulations of the model at the same (α, ρ, η, N).

The file (default ``examples/arena_judge_gpt-4o-mini.csv``) gives every item a
human label and a judge's label, so each system's full-data human rate is
known. A *split* keeps the human labels of a random share h of each
system's items (the calibration set: paired ratings) and hides the rest,
which keep only the judge's label (metric-only ratings). ``--splits`` K
splits per share, every one through the code of ``sweep compare --estimator
all`` (each split's systems renamed ``SYSTEM@k``, all K in one comparison),
give per estimator and system: the coverage of the full-data human rate by
its ``--level`` interval with its Monte Carlo error, the mean interval width
and the mean |error|.

Beside them, the model's answer to the same question: a sweep
(``counts: sampled``, every estimator, ``--replicates`` campaigns) at each
system's α (its full-data human rate), ρ and η (the judge's rates on all its
items) and N (h·n paired, the rest metric-only). Where the two disagree the
real judge is not the model's binomial one; the record also gives the judge's
rates by the side the system was shown on (``claude_position``).

And the split the published vignette describes: 28 human labels of the
Gemini 2.5 Pro battles, 90 % intervals, one random draw (``--seed``).

    python scripts/real_coverage.py [--splits 500] [--shares 0.05 0.1 0.25] [--level 0.9]
        [--replicates 2000] [--out benchmarks/results] [--figure docs/figures/real-coverage.png]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from binmetric_sweep import sweep
from binmetric_sweep.sweep.compare import compare
from binmetric_sweep.sweep.storage.records import provenance, write_record

ROOT = Path(__file__).resolve().parents[1]
ARENA = ROOT / "examples" / "arena_judge_gpt-4o-mini.csv"
#: The published vignette's split: system, human labels kept, interval level.
VIGNETTE = ("vs-gemini-2.5-pro", 28, 0.9)
#: Its published numbers (one random draw): estimate, interval.
PUBLISHED = {
    "human_only": (0.161, None, None),
    "ppi": (0.161, 0.059, 0.371),
    "ppi_pp": (0.145, 0.065, 0.292),
}


def split_ratings(ratings: pd.DataFrame, keep: dict, splits: int, seed: int) -> pd.DataFrame:
    """``splits`` calibration splits, stacked: in split k, system s keeps the human labels of
    ``keep[s]`` random items (the rest keep the judge's only) and is named ``s@k``."""
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(splits):
        for system, group in ratings.groupby("system", sort=False):
            kept = np.zeros(len(group), bool)
            kept[rng.choice(len(group), keep[system], replace=False)] = True
            frame = group.assign(system=f"{system}@{k}")
            frame["human"] = frame["human"].where(kept)
            frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    return out[out["human"].notna() | out["metric"].notna()]  # an item left with no label


def real_coverage(ratings, share, splits, level, seed) -> tuple[pd.DataFrame, dict]:
    """Per (estimator, system): coverage of the full-data rate, its MC error, mean width,
    mean |error|, splits where it applies; and the human labels kept per system."""
    n = ratings.groupby("system", sort=False).size()
    keep = {s: max(2, round(share * count)) for s, count in n.items()}
    frame = split_ratings(ratings, keep, splits, seed)
    result = compare(frame[["system", "item", "human", "metric"]], estimator="all", level=level)
    table = result.systems.copy()
    table["base"] = table["system"].str.rsplit("@", n=1).str[0]
    truth = ratings.groupby("system")["human"].mean()
    table["truth"] = table["base"].map(truth)
    table["covered"] = (table["ci_low"] <= table["truth"]) & (table["truth"] <= table["ci_high"])
    table["width"] = table["ci_high"] - table["ci_low"]
    table["abs_error"] = (table["estimate"] - table["truth"]).abs()
    rows = []
    for (estimator, system), group in table.groupby(["estimator", "base"], sort=False):
        ok = group[group["applicable"]]
        c = float(ok["covered"].mean()) if len(ok) else float("nan")
        rows.append(
            {
                "estimator": estimator,
                "system": system,
                "share": share,
                "human_kept": keep[system],
                "coverage": c,
                "coverage_mcse": float(np.sqrt(c * (1 - c) / len(ok))) if len(ok) else None,
                "width_mean": float(ok["width"].mean()) if len(ok) else None,
                "abs_error_mean": float(ok["abs_error"].mean()) if len(ok) else None,
                "applicable": len(ok),
                "splits": len(group),
            }
        )
    return pd.DataFrame(rows), keep


def judge_rates(ratings: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """The judge's ρ (says 1 where the human says 1) and η, and the human rate, by ``by``."""
    r = ratings.dropna(subset=["metric"])
    return r.groupby(by).apply(
        lambda g: pd.Series(
            {
                "n": len(g),
                "alpha": g["human"].mean(),
                "rho": g.loc[g["human"] == 1, "metric"].mean(),
                "eta": 1 - g.loc[g["human"] == 0, "metric"].mean(),
                "agreement": (g["human"] == g["metric"]).mean(),
            }
        ),
        include_groups=False,
    )


def simulated_coverage(rates, keeps, level, replicates, seed) -> pd.DataFrame:
    """The model's coverage per estimator at each system's (α, ρ, η) and each share's N."""
    blocks, index = [], []
    for share, keep in keeps.items():
        for system, row in rates.iterrows():
            kept = keep[system]
            blocks.append(
                {
                    "alpha": round(float(row.alpha), 6),
                    "rho": round(float(row.rho), 6),
                    "eta": round(float(row.eta), 6),
                    "n_phi": kept,
                    "n_rho_eta": "n_phi",
                    "n_m": int(row.n) - kept,
                }
            )
            index.append((share, system, kept, int(row.n) - kept))
    spec = {
        "name": "real-coverage-model",
        "counts": "sampled",
        "replicates": replicates,
        "seed": seed,
        "method": "quadrature",
        "estimators": "all",
        "interval": level,
        "grid": blocks,
    }
    with tempfile.TemporaryDirectory() as out:
        sweep.run(spec, out, progress=False)
        surface = sweep.load_surface(out)
    rows = []
    for share, system, n_phi, n_m in index:
        mine = surface[(surface["n_phi"] == n_phi) & (surface["n_m"] == n_m)]
        alpha = float(rates.loc[system, "alpha"])
        mine = mine[np.isclose(mine["alpha"], round(alpha, 6))]
        for row in mine.itertuples():
            rows.append(
                {
                    "estimator": row.estimator,
                    "system": system,
                    "share": share,
                    "coverage": row.coverage,
                    "coverage_mcse": row.coverage_mcse,
                    "width_mean": row.width_mean,
                    "rmse": row.rmse,
                    "not_applicable": int(row.not_applicable),
                }
            )
    return pd.DataFrame(rows)


def vignette(ratings: pd.DataFrame, seed: int) -> list[dict]:
    """The vignette's split, one draw: each estimator's estimate and interval."""
    system, kept, level = VIGNETTE
    mine = ratings[ratings["system"] == system]
    frame = split_ratings(mine, {system: kept}, 1, seed)
    other = ratings[ratings["system"] != system]  # compare needs two systems; its rows unused
    result = compare(
        pd.concat([frame, other])[["system", "item", "human", "metric"]],
        estimator="all",
        level=level,
    )
    rows = result.systems[result.systems["system"] == f"{system}@0"]
    out = []
    for row in rows.itertuples():
        published = PUBLISHED.get(row.estimator)
        out.append(
            {
                "estimator": row.estimator,
                "estimate": row.estimate,
                "ci_low": row.ci_low,
                "ci_high": row.ci_high,
                "reason": row.reason,
                "published": None
                if published is None
                else dict(zip(("estimate", "ci_low", "ci_high"), published, strict=True)),
            }
        )
    return out


def figure(real: pd.DataFrame, model: pd.DataFrame, level: float, path: Path) -> None:
    """Coverage by estimator and share, real splits (filled) beside the model (hollow), a
    panel per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = list(dict.fromkeys(real["system"]))
    estimators = list(dict.fromkeys(real["estimator"]))
    shares = sorted(real["share"].unique())
    fig, axes = plt.subplots(1, len(systems), figsize=(7.0, 2.6), sharey=True)
    for ax, system in zip(np.atleast_1d(axes), systems, strict=True):
        for i, name in enumerate(estimators):
            color = f"C{i}"
            for frame, marker, fill in ((real, "o", color), (model, "o", "none")):
                mine = frame[(frame["system"] == system) & (frame["estimator"] == name)]
                mine = mine.set_index("share").reindex(shares)
                x = np.arange(len(shares)) + (i - len(estimators) / 2) * 0.08
                x = x + (0.03 if fill == "none" else 0.0)
                ax.errorbar(
                    x,
                    mine["coverage"],
                    yerr=mine["coverage_mcse"].astype(float),
                    fmt=marker,
                    color=color,
                    mfc=fill,
                    ms=3.5,
                    lw=0.8,
                    label=name if (fill != "none" and ax is np.atleast_1d(axes)[0]) else None,
                )
        ax.axhline(level, color="black", lw=0.6, ls="--")
        ax.set_xticks(range(len(shares)), [f"{100 * s:g} %" for s in shares], fontsize=7)
        ax.set_title(system.removeprefix("vs-"), fontsize=8)
        ax.set_xlabel("human labels kept", fontsize=7)
        ax.tick_params(labelsize=7)
    np.atleast_1d(axes)[0].set_ylabel(f"coverage of the {100 * level:g} % interval", fontsize=7)
    handles, labels = np.atleast_1d(axes)[0].get_legend_handles_labels()
    fig.legend(
        handles,
        [*labels[:-1], f"{labels[-1]}   (filled: real splits; hollow: the model)"],
        fontsize=6,
        loc="lower center",
        ncol=len(estimators),
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=200)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ratings", nargs="?", default=str(ARENA))
    parser.add_argument("--splits", type=int, default=500)
    parser.add_argument("--shares", type=float, nargs="+", default=[0.05, 0.1, 0.25])
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--figure", default="docs/figures/real-coverage.png")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    ratings = pd.read_csv(args.ratings)
    record = {**provenance("real_coverage.py", argv), "ratings": Path(args.ratings).name}
    rates = judge_rates(ratings, ["system"])
    record["judge_rates"] = rates.reset_index().to_dict("records")
    if "claude_position" in ratings.columns:
        by_side = judge_rates(ratings, ["system", "claude_position"])
        record["judge_rates_by_position"] = by_side.reset_index().to_dict("records")
    real, keeps = [], {}
    for share in args.shares:
        table, keeps[share] = real_coverage(ratings, share, args.splits, args.level, args.seed)
        real.append(table)
        print(f"share {share}: done", file=sys.stderr)
    real = pd.concat(real, ignore_index=True)
    model = simulated_coverage(rates, keeps, args.level, args.replicates, args.seed)
    record["real"] = real.to_dict("records")
    record["model"] = model.to_dict("records")
    record["vignette"] = vignette(ratings, args.seed)
    figure(real, model, args.level, Path(args.figure))
    record["figure"] = args.figure
    print(write_record(record, args.out, "real-coverage"))
    both = real.merge(model, on=["estimator", "system", "share"], suffixes=("", "_model"))
    print(
        both[
            [
                "estimator",
                "system",
                "share",
                "coverage",
                "coverage_model",
                "width_mean",
                "width_mean_model",
                "abs_error_mean",
            ]
        ]
        .round(3)
        .to_string(index=False)
    )


if __name__ == "__main__":
    main()
