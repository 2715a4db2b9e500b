"""A :class:`~binmetric_sweep.sweep.compare.analysis.Comparison` as text, JSON and Parquet.

- :func:`comparison_text`: the systems, then the published layout (each cell
  ``diff (P)``, significant pairs marked) when it fits a terminal, else the
  pairs that are not significant;
- :func:`comparison_json`: ``{"systems": [...], "pairs": [...], "settings": {...}}``;
- :func:`write_tables`: ``systems.parquet`` and ``pairs.parquet``, the settings in
  their key-value metadata, each file written whole or not at all.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from binmetric_sweep.kernels.estimators import POSTERIOR, is_posterior
from binmetric_sweep.sweep.compare.analysis import ADJUSTMENTS, RATE_MODELS, Adjustment, Comparison
from binmetric_sweep.sweep.paths import check_out_dir, writing

__all__ = [
    "MATRIX_MAX_SYSTEMS",
    "comparison_text",
    "comparison_json",
    "json_records",
    "json_value",
    "write_parquet_tables",
    "write_tables",
]

#: Up to this many systems the pairs are printed as the published matrix.
MATRIX_MAX_SYSTEMS = 8
#: Above this many systems (a leaderboard) no pair is listed: the ranking, the count of
#: significant pairs and, unadjusted, the advice to adjust.
LISTED_MAX_SYSTEMS = 30
#: Pairs listed on the terminal when the matrix would not fit.
LISTED_PAIRS = 30
#: Key-value metadata keys of the Parquet files.
META_PREFIX = "binmetric_sweep."


def json_value(value):
    """A table cell as JSON has it: NA and non-finite floats as null, NumPy scalars as Python's."""
    if value is pd.NA:  # a pair not tested: its ``significant`` is neither true nor false
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_records(frame: pd.DataFrame) -> list[dict]:
    """A frame's rows as JSON objects, each cell by :func:`json_value`."""
    return [{k: json_value(v) for k, v in row.items()} for row in frame.to_dict("records")]


def comparison_json(result: Comparison) -> str:
    """One JSON object: ``systems`` and ``pairs`` (their columns as fields), ``settings`` and
    ``read`` (what the ratings file held, how its labels were combined)."""
    return json.dumps(
        {
            "systems": json_records(result.systems),
            "pairs": json_records(result.pairs),
            "settings": {k: json_value(v) for k, v in result.settings.items()},
            "read": _read(result),
        },
        ensure_ascii=False,
    )


def _read(result: Comparison) -> dict | None:
    """What was read (:class:`~.ratings.Reading`) with its notes, or None."""
    if result.reading is None:
        return None
    return {**result.reading.as_dict(), "notes": result.reading.notes()}


#: The methods, in words.
METHOD_WORDS = {"quadrature": "exact posterior (quadrature)", "nuts": "posterior draws (NUTS)"}


def _rate_words(settings: dict) -> str:
    """The settings' rate model in words (:attr:`~.analysis.RateModel.description`)."""
    if "classes" in settings:  # a K-class comparison (sweep.compare.categorical)
        model = settings["judge_model"]
        return f"each system's own class shares and judges' confusion ({model} judges)"
    model = RATE_MODELS.get(settings["rates"])
    return settings["rates"] if model is None else model.description


def _adjusted(settings: dict) -> Adjustment | None:
    """The settings' adjustment where it adjusts the pairs' tests (its header and the name
    of an adjusted value: :class:`~.analysis.Adjustment`); None where each pair is alone."""
    adjustment = ADJUSTMENTS.get(settings["adjust"])
    return adjustment if adjustment is not None and adjustment.adjusts else None


def signed(x: float, digits: int) -> str:
    """``x`` with its sign and ``digits`` decimals, without a sign where it rounds to 0."""
    text = f"{x:+.{digits}f}"
    return f"{0.0:.{digits}f}" if float(text) == 0 else text


def comparison_text(result: Comparison) -> str:
    """The systems (best first) and the pairs, for a terminal."""
    if not is_posterior(result.settings.get("estimator", POSTERIOR.name)):
        return _estimators_text(result)
    if "classes" in result.settings:
        return _classes_text(result)
    s = result.settings
    level = f"{100 * s['level']:g} %"
    adjusted = _adjusted(s)
    head = (
        f"{len(result.systems)} systems; {_rate_words(s)}; "
        f"{METHOD_WORDS.get(s['method'], s['method'])}; γ = {s['gamma']:g}"
        + (f", {adjusted.header}" if adjusted else "")
        + "\nalpha: share of adequate outputs (posterior mean); sd: its posterior SD; "
        "human counts every human rating, paired those that also have a metric rating"
    )
    if result.reading is not None:
        head = result.reading.summary() + "\n" + head
    systems = result.systems
    width = max(6, *(len(str(n)) for n in systems["system"]))
    lines = [
        head,
        "",
        f"{'system':<{width}}  {'alpha':>6}  {'sd':>6}  {level + ' interval':>16}  "
        f"{'outputs':>8}  {'human':>7}  {'paired':>7}  {'metric':>8}",
    ]
    for row in systems.itertuples():
        lines.append(
            f"{row.system:<{width}}  {row.alpha_mean:6.3f}  {row.alpha_sd:6.3f}  "
            f"{f'[{row.ci_low:.3f}, {row.ci_high:.3f}]':>16}  "
            f"{row.n_outputs:>8,}  {row.n_human:>7,}  {row.n_paired:>7,}  {row.n_metric:>8,}"
        )
    lines.append("")
    if len(systems) <= MATRIX_MAX_SYSTEMS:
        lines += _matrix(result)
    elif len(systems) <= LISTED_MAX_SYSTEMS:
        lines += _not_significant(result)
    else:
        lines += _leaderboard(result)
    if "add_cost" in result.pairs.columns:
        lines += ["", *_next(result)]
    return "\n".join(line.rstrip() for line in lines)


def _next(result: Comparison) -> list[str]:
    """The pairs not significant, cheapest to settle first, with the ratings that would."""
    pairs = result.pairs[~result.pairs["significant"].to_numpy(bool)]
    if not len(pairs):
        return ["what to rate next: nothing; every pair is significant"]
    from binmetric_sweep.sweep.compare.next_ratings import next_level

    pairs = pairs.sort_values("add_cost", kind="stable", na_position="last")
    adjusted = _adjusted(result.settings)
    rule = adjusted.held_rule if adjusted else ""
    held = f"; planned at the level each pair is held to, {rule} = {next_level(result):.2g}"
    out = [
        "what to rate next (cheapest first; ratings to add to each system of the pair"
        + (held if rule else "")
        + "):"
    ]
    for row in pairs.head(LISTED_PAIRS).itertuples():
        if not math.isfinite(row.add_cost):
            out.append(f"  {row.a} vs {row.b} (diff {signed(row.diff_mean, 3)}): out of reach")
            continue
        if row.add_cost == 0:  # the model's SD at its sizes is below its posterior's
            out.append(
                f"  {row.a} vs {row.b} (diff {signed(row.diff_mean, 3)}): no plan; its ratings "
                "already meet the plan at the pair's means, but its posterior is wider than the "
                f"model's at these sizes (eps {row.eps:.3f})"
            )
            continue
        out.append(
            f"  {row.a} vs {row.b} (diff {signed(row.diff_mean, 3)}): "
            f"{row.a} +{row.add_human_a:,.0f} "
            f"human +{row.add_metric_a:,.0f} metric, {row.b} +{row.add_human_b:,.0f} human "
            f"+{row.add_metric_b:,.0f} metric; cost {row.add_cost:,.2f}"
        )
    if len(pairs) > LISTED_PAIRS:
        out.append(f"  … and {len(pairs) - LISTED_PAIRS:,} more (all in --json or --out)")
    return out


def _matrix(result: Comparison, mean_column: str = "alpha_mean", symbol: str = "α") -> list[str]:
    """The published layout: row a, column b, each cell ``diff (P(α_a > α_b))`` (θ for α in
    a K-class comparison: ``mean_column`` and ``symbol``)."""
    systems = result.systems
    names = [f"{n} ({m:.2f})" for n, m in zip(systems["system"], systems[mean_column], strict=True)]
    mean = systems[mean_column].to_numpy()
    adjusted = _adjusted(result.settings)
    shown = _pair_matrix(result, "p_adjusted") if adjusted else result.p_better
    significant = _significant_matrix(result)
    cells = [
        [
            "—"
            if i == j
            else f"{signed(mean[i] - mean[j], 2)} ({shown[i, j]:.3f})"
            + ("*" if significant[i, j] else " ")
            for j in range(len(names))
        ]
        for i in range(len(names))
    ]
    first = max(len(n) for n in names)
    widths = [max(len(names[j]), *(len(row[j]) for row in cells)) for j in range(len(names))]
    out = ["  ".join([" " * first, *(n.rjust(w) for n, w in zip(names, widths, strict=True))])]
    for name, row in zip(names, cells, strict=True):
        out.append(
            "  ".join([name.ljust(first), *(c.rjust(w) for c, w in zip(row, widths, strict=True))])
        )
    g = result.settings["gamma"]
    if adjusted:
        out.append(
            f"cell: row's {symbol} − column's {symbol}, posterior mean ({adjusted.value_name} "
            f"two-sided tail 2·min(P, 1 − P), P = P(row's {symbol} > column's {symbol})); "
            f"* adjusted value ≤ γ = {g:g}"
        )
    else:
        out.append(
            f"cell: row's {symbol} − column's {symbol}, posterior mean "
            f"(P(row's {symbol} > column's {symbol})); * significant at γ = {g:g} (two-sided)"
        )
    return out


def _pair_matrix(result: Comparison, column: str) -> np.ndarray:
    """A pairs column as a symmetric ``(S, S)`` matrix in the systems' order."""
    index = {name: i for i, name in enumerate(result.systems["system"])}
    out = np.full((len(index),) * 2, np.nan)
    for a, b, value in zip(result.pairs["a"], result.pairs["b"], result.pairs[column], strict=True):
        out[index[a], index[b]] = out[index[b], index[a]] = value
    return out


def _significant_matrix(result: Comparison) -> np.ndarray:
    return np.nan_to_num(_pair_matrix(result, "significant")).astype(bool)


def _not_significant(result: Comparison) -> list[str]:
    pairs = result.pairs
    weak = pairs[~pairs["significant"].to_numpy(bool)]
    out = [
        f"pairs: {len(pairs) - len(weak):,} of {len(pairs):,} significant at "
        f"γ = {result.settings['gamma']:g}; not significant:"
        if len(weak)
        else f"pairs: all {len(pairs):,} significant at γ = {result.settings['gamma']:g}"
    ]
    words = _adjusted(result.settings)
    for row in weak.head(LISTED_PAIRS).itertuples():
        adjusted = f", {words.value_name} {row.p_adjusted:.3f}" if words else ""
        out.append(
            f"  {row.a} vs {row.b}: diff {signed(row.diff_mean, 3)}, P(a better) = "
            f"{row.p_a_better:.3f}{adjusted}, ε = {row.eps:.3f}"
        )
    if len(weak) > LISTED_PAIRS:
        out.append(f"  … and {len(weak) - LISTED_PAIRS:,} more (all in --json or --out)")
    return out


def _estimators_text(result: Comparison) -> str:
    """Estimators other than the posterior alone: one, its systems and pairs; or all, a
    systems × estimators table and each one's count of significant pairs."""
    s, systems, pairs = result.settings, result.systems, result.pairs
    level = f"{100 * s['level']:g} %"
    adjusted = _adjusted(s)
    names = list(dict.fromkeys(systems["estimator"]))
    head = [
        f"{systems['system'].nunique()} systems; "
        + (f"estimator {names[0]}" if len(names) == 1 else "every estimator")
        + f"; {_rate_words(s)}; {level} intervals; γ = {s['gamma']:g}"
        + (f", {adjusted.header}" if adjusted else ""),
        "pairs of a classical estimator: two-sided z-test of the difference of the estimates; "
        f"bayes: P(a's {_symbol(s)} > b's {_symbol(s)})",
    ]
    if result.reading is not None:
        head.insert(0, result.reading.summary())
    lines = [*head, ""]
    if len(names) == 1:
        lines += _one_estimator(systems, level)
    else:
        lines += _estimator_grid(systems)
    lines.append("")
    for name in names:
        mine = pairs[pairs["estimator"] == name]
        tested = int(mine["significant"].notna().sum())
        called = int(mine["significant"].fillna(False).astype(bool).sum())
        if tested == len(mine):
            lines.append(f"{name}: {called:,} of {len(mine):,} pairs significant")
        elif tested:
            lines.append(
                f"{name}: {called:,} of {tested:,} tested pairs significant; "
                f"{len(mine) - tested:,} not tested (with a system it does not apply to)"
            )
        else:
            lines.append(f"{name}: no pair tested (each has a system it does not apply to)")
    if len(names) == 1 and len(systems) <= LISTED_MAX_SYSTEMS:
        for row in pairs.head(LISTED_PAIRS).itertuples():
            if pd.isna(row.significant):
                lines.append(f"  {row.a} vs {row.b}: not tested")
                continue
            extra = f", {adjusted.value_name} {row.p_adjusted:.3f}" if adjusted else ""
            lines.append(
                f"  {row.a} vs {row.b}: diff {signed(row.diff_mean, 3)}, p = {row.p_value:.3g}"
                f"{extra}" + (" *" if row.significant else "")
            )
    return "\n".join(line.rstrip() for line in lines)


def _symbol(settings: dict) -> str:
    """What is estimated: α, or θ = vᵀπ in a K-class comparison (its settings name classes)."""
    return "θ" if "classes" in settings else "α"


def _classes_text(result: Comparison) -> str:
    """A K-class comparison's posterior (:mod:`~.categorical`): the systems with θ and their
    sampler health, then the pairs as :func:`comparison_text` shows binary ones."""
    s = result.settings
    level = f"{100 * s['level']:g} %"
    adjusted = _adjusted(s)
    values = ", ".join(f"{n} = {v:g}" for n, v in zip(s["classes"], s["values"], strict=True))
    head = [
        result.reading.summary() if result.reading is not None else "",
        f"{len(result.systems)} systems; {_rate_words(s)}; posterior draws (NUTS, "
        f"{s['chains']} chains × ({s['warmup']} + {s['draws'] // s['chains']})); "
        f"γ = {s['gamma']:g}" + (f", {adjusted.header}" if adjusted else ""),
        f"theta: θ = Σ v_k π_k, the mean class value ({values}; posterior mean); sd: its "
        "posterior SD; human counts every human rating, paired those the judges also rated, "
        "judge those only the judges rated; rhat, ess: sampler health",
    ]
    systems = result.systems
    width = max(6, *(len(str(n)) for n in systems["system"]))
    lines = [
        *(h for h in head if h),
        "",
        f"{'system':<{width}}  {'theta':>6}  {'sd':>6}  {level + ' interval':>16}  "
        f"{'outputs':>8}  {'human':>7}  {'paired':>7}  {'judge':>8}  {'rhat':>5}  {'ess':>6}",
    ]
    for row in systems.itertuples():
        lines.append(
            f"{row.system:<{width}}  {row.theta_mean:6.3f}  {row.theta_sd:6.3f}  "
            f"{f'[{row.ci_low:.3f}, {row.ci_high:.3f}]':>16}  "
            f"{row.n_outputs:>8,}  {row.n_human:>7,}  {row.n_paired:>7,}  {row.n_metric:>8,}  "
            f"{row.rhat:5.3f}  {row.ess:6.0f}"
        )
    lines.append("")
    if len(systems) <= MATRIX_MAX_SYSTEMS:
        lines += _matrix(result, "theta_mean", "θ")
    elif len(systems) <= LISTED_MAX_SYSTEMS:
        lines += _not_significant(result)
    else:
        lines += _leaderboard(result)
    return "\n".join(line.rstrip() for line in lines)


def _one_estimator(systems: pd.DataFrame, level: str) -> list[str]:
    width = max(6, *(len(str(n)) for n in systems["system"]))
    out = [
        f"{'system':<{width}}  {'estimate':>8}  {'se':>6}  {level + ' interval':>16}  "
        f"{'outputs':>8}  {'human':>7}  {'paired':>7}  {'metric':>8}"
    ]
    for row in systems.itertuples():
        counts = f"{row.n_outputs:>8,}  {row.n_human:>7,}  {row.n_paired:>7,}  {row.n_metric:>8,}"
        if row.applicable:
            numbers = (
                f"{row.estimate:8.3f}  {row.se:6.3f}  "
                f"{f'[{row.ci_low:.3f}, {row.ci_high:.3f}]':>16}"
            )
        else:
            numbers = f"{'—':>8}  {'—':>6}  {'—':>16}"
        out.append(
            f"{row.system:<{width}}  {numbers}  {counts}"
            + ("" if row.applicable else f"  does not apply: {row.reason}")
        )
    return out


def _estimator_grid(systems: pd.DataFrame) -> list[str]:
    """Systems (rows, in the first estimator's order) × estimators: estimate ± SE, or the
    number of a reason listed below."""
    names = list(dict.fromkeys(systems["estimator"]))
    order = list(systems.loc[systems["estimator"] == names[0], "system"])
    reasons: list[str] = []
    cells = {}
    for row in systems.itertuples():
        if row.applicable:
            cells[row.system, row.estimator] = f"{row.estimate:.3f} ± {row.se:.3f}"
        else:
            if row.reason not in reasons:
                reasons.append(row.reason)
            cells[row.system, row.estimator] = f"n/a ({reasons.index(row.reason) + 1})"
    width = max(6, *(len(str(n)) for n in order))
    widths = [max(len(n), 13) for n in names]
    out = []
    for first, row in [("system", names), *((s, [cells[s, n] for n in names]) for s in order)]:
        padded = (c.rjust(w) for c, w in zip(row, widths, strict=True))
        out.append("  ".join([f"{first:<{width}}", *padded]))
    out += [f"n/a ({i + 1}): {reason}" for i, reason in enumerate(reasons)]
    return out


def _leaderboard(result: Comparison) -> list[str]:
    """Too many pairs to read: how many are significant, and, unadjusted, what that means."""
    pairs, gamma = result.pairs, result.settings["gamma"]
    called = int(pairs["significant"].sum())
    words = _adjusted(result.settings)
    how = f", {words.value_name}" if words else " (each pair's own two-sided test)"
    out = [
        f"pairs: {called:,} of {len(pairs):,} significant at γ = {gamma:g}{how}; every pair "
        "in --json or --out"
    ]
    if not words:
        out.append(
            f"with {len(pairs):,} pairs, each tested at γ = {gamma:g}, about γ of the pairs "
            "whose systems are equal are called different: a leaderboard needs --adjust holm "
            "(no false call, with probability 1 − γ) or --adjust bh (false calls at most a "
            "share γ of those made)"
        )
    return out


def write_tables(result: Comparison, out: str | os.PathLike, source: str) -> list[Path]:
    """``systems.parquet`` and ``pairs.parquet`` in ``out`` (created), with the settings, the
    ratings file's name and what was read of it in each file's metadata
    (:func:`write_parquet_tables`).
    """
    meta = {
        "settings": json.dumps(result.settings),
        "ratings": source,
        "read": json.dumps(_read(result), ensure_ascii=False),
    }
    return write_parquet_tables({"systems": result.systems, "pairs": result.pairs}, out, meta)


def write_parquet_tables(
    frames: Mapping[str, pd.DataFrame], out: str | os.PathLike, meta: Mapping[str, str]
) -> list[Path]:
    """Each frame as ``NAME.parquet`` in ``out`` (created), ``meta`` and the version in each
    file's metadata (keys prefixed :data:`META_PREFIX`); all written whole to temporary
    files before any is renamed, so that a failed write (one SweepError line naming
    ``--out``) leaves no half-written file.
    """
    directory = check_out_dir(out)
    with writing("--out", directory):
        directory.mkdir(parents=True, exist_ok=True)
    from binmetric_sweep.sweep.version import __version__

    meta = {META_PREFIX + k: v for k, v in {**meta, "version": __version__}.items()}
    drafts = {}
    try:
        with writing("--out", directory):
            for name, frame in frames.items():
                table = pa.Table.from_pandas(frame, preserve_index=False)
                table = table.replace_schema_metadata({**(table.schema.metadata or {}), **meta})
                # Written as sweep run writes its shards: created with the umask's mode
                # (0644), whole under a temporary name, then renamed.
                draft = directory / f".{name}.parquet.{os.getpid()}.tmp"
                drafts[directory / f"{name}.parquet"] = draft
                with open(draft, "wb") as handle:
                    pq.write_table(table, handle)
            for path, draft in drafts.items():
                os.replace(draft, path)
    finally:
        for draft in drafts.values():
            with contextlib.suppress(OSError):  # gone, renamed, or never a file
                draft.unlink()
    return list(drafts)
