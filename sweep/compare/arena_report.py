"""An :class:`~.arena.ArenaComparison` as text, JSON and Parquet.

- :func:`arena_text`: what was read, then one method's ranked leaderboard (strength,
  win rate against the field, rank with its central interval, P(rank 1), the
  simultaneous rank set; ppr's win rate, SE and interval), or under several methods their
  ranks and rank sets side by side; the sampler's health; each judge's confusion and
  position bias; what to judge next (the best few pairs).
- :func:`arena_json`: ``{"leaderboard", "pairs", "judges", "health", "next",
  "heterogeneity": [rows], "settings", "read", "warnings", "notes"}``.
- :func:`draw_arena`: the figure (:mod:`~.arena_figure`): every fit's win rates and ranks
  side by side, bayes's judges' confusions.
- :func:`write_arena_tables`: ``leaderboard``, ``pairs``, ``judges``, ``health``, ``next``
  and ``heterogeneity`` ``.parquet``, the settings in their metadata, each file written
  whole or not at all.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from binmetric_sweep.sweep.compare.arena import (
    ARENA_MODELS,
    CONFUSION,
    RHAT_LIMIT,
    ArenaComparison,
    fit_title,
)
from binmetric_sweep.sweep.compare.report import json_records, write_parquet_tables

__all__ = ["arena_json", "arena_text", "draw_arena", "write_arena_tables"]

#: The tables :func:`write_arena_tables` writes, by file name.
TABLES = ("leaderboard", "pairs", "judges", "health", "next", "heterogeneity")
#: The pairs to judge next shown on the terminal (all of them with --json or --out).
NEXT_SHOWN = 5


def _read(result: ArenaComparison) -> dict:
    """What was read: the file, systems, judges, battles, columns left out."""
    b = result.battles
    return {
        "source": b.source,
        "systems": list(b.systems),
        "judges": list(b.judges),
        "battles": b.cells.battles,
        "human_verdicts": b.human_verdicts,
        "ignored": list(b.ignored),
    }


def arena_json(result: ArenaComparison) -> str:
    """One JSON object (module docstring); NaN and NA are null."""
    return json.dumps(
        {
            **{name: json_records(getattr(result, name)) for name in TABLES},
            "settings": result.settings,
            "read": _read(result),
            "warnings": list(result.warnings),
            "notes": list(result.notes),
        },
        ensure_ascii=False,
    )


def write_arena_tables(result: ArenaComparison, out: str | os.PathLike, source: str) -> list[Path]:
    """:data:`TABLES` as Parquet in ``out`` (created), with the settings, the file's name and
    what was read in each file's metadata (:func:`~.report.write_parquet_tables`: none
    half-written)."""
    meta = {
        "settings": json.dumps(result.settings, ensure_ascii=False),
        "battles": source,
        "read": json.dumps(_read(result), ensure_ascii=False),
    }
    return write_parquet_tables({name: getattr(result, name) for name in TABLES}, out, meta)


# --- text ------------------------------------------------------------------------------


def draw_arena(result: ArenaComparison, path: str | os.PathLike, source: str) -> Path:
    """The figure of every fit (:func:`~.arena_figure.draw_leaderboard`), each named as
    :func:`~.arena.fit_title` names it, the judges' confusions from the first fit that
    reads them (bayes); returns the path written."""
    from binmetric_sweep.sweep.compare.arena_figure import draw_leaderboard

    methods = {fit_title(f.task): f.draws if f.draws is not None else f.ppr for f in result.fits}
    judged = next((f for f in result.fits if f.task.judges), None)
    return draw_leaderboard(
        path,
        result.battles.systems,
        methods,
        result.settings["level"],
        judges=judged.task.judges if judged is not None else (),
        source=source,
        confusion_from=fit_title(judged.task) if judged is not None else None,
    )


def _fit_title(method: str, judge: str) -> str:
    return f"{method} ({judge})" if judge else method


def _percent(level: float) -> str:
    return f"{100 * level:g} %"


def _interval(low, high, digits: int = 2) -> str:
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def _span(low, high) -> str:
    return f"{low}" if low == high else f"{low}–{high}"


def _table(header: list[str], rows: list[list[str]], left: int) -> list[str]:
    """Columns padded to their widest cell; the first ``left`` columns left-aligned."""
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]

    def line(cells):
        return "  ".join(
            c.ljust(w) if k < left else c.rjust(w)
            for k, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), *(line(r) for r in rows)]


def _posterior_block(rows: pd.DataFrame, level: float) -> list[str]:
    pct = _percent(level)
    header = [
        "#",
        "system",
        "battles",
        f"strength [{pct}]",
        f"win rate [{pct}]",
        f"rank [{pct}]",
        "P(1st)",
        "rank set",
    ]
    body = [
        [
            str(r.rank),
            r.system,
            f"{r.battles:,}",
            f"{r.strength_mean:+.2f} {_interval(r.strength_low, r.strength_high)}",
            f"{r.win_rate_mean:.3f} {_interval(r.win_rate_low, r.win_rate_high, 3)}",
            f"{r.rank_median} [{_span(r.rank_low, r.rank_high)}]",
            f"{r.p_rank1:.2f}",
            _span(r.rank_set_low, r.rank_set_high),
        ]
        for r in rows.itertuples()
    ]
    return _table(header, body, left=2)


def _ppr_block(rows: pd.DataFrame, level: float) -> list[str]:
    pct = _percent(level)
    header = ["#", "system", "battles", "win rate", "SE", f"[{pct}]", "rank set"]
    body = [
        [
            str(r.rank),
            r.system,
            f"{r.battles:,}",
            f"{r.ppr_theta:.3f}",
            f"{r.ppr_se:.3f}",
            _interval(r.ppr_low, r.ppr_high, 3),
            _span(r.rank_set_low, r.rank_set_high),
        ]
        for r in rows.itertuples()
    ]
    return _table(header, body, left=2)


def _fits(result: ArenaComparison):
    """Each fit's rows, in the methods' order: ((method, judge), rows)."""
    board = result.leaderboard
    keys = list(dict.fromkeys(zip(board["method"], board["judge"], strict=True)))
    for method, judge in keys:
        rows = board[(board["method"] == method) & (board["judge"] == judge)]
        yield (method, judge), rows


def _one_fit(result: ArenaComparison, key, rows: pd.DataFrame) -> list[str]:
    method, judge = key
    s, level = result.settings, result.settings["level"]
    if rows["ppr_theta"].notna().all():
        lam = rows["ppr_lambda"].iloc[0]
        what = f"λ = {lam:.2f}" if judge else "the human verdicts alone"
        lines = [
            f"{_fit_title(method, judge)}: prediction-powered ranking ({what}); win rate = share "
            f"of its battles won (a tie no win), {_percent(level)} intervals, rank sets "
            "simultaneous"
        ]
        return lines + _ppr_block(rows, level)
    model = ARENA_MODELS[s["model"]].description
    lines = [
        f"{_fit_title(method, judge)}: {model}; win rate against the field (a tie half), "
        f"{_percent(level)} intervals, rank sets simultaneous"
    ]
    return lines + _posterior_block(rows, level)


def _side_by_side(result: ArenaComparison) -> list[str]:
    """Every fit's rank and rank set, one column each, systems in the first fit's order."""
    fits = list(_fits(result))
    first = fits[0][1]["system"].tolist()
    every = ",".join(result.battles.judges)
    # A fit that reads every judge of several (bayes) is named by its method alone here.
    header = ["system"] + [
        method if judge == every and len(result.battles.judges) > 1 else _fit_title(method, judge)
        for (method, judge), _ in fits
    ]
    body = []
    for system in first:
        row = [system]
        for _, rows in fits:
            r = rows[rows["system"] == system].iloc[0]
            row.append(f"{r['rank']} ({_span(r['rank_set_low'], r['rank_set_high'])})")
        body.append(row)
    level = result.settings["level"]
    return [
        f"rank (rank set, simultaneous at {_percent(level)}) by method; the full tables with "
        "--json or --out",
        *_table(header, body, left=1),
    ]


def _health(result: ArenaComparison) -> list[str]:
    lines = []
    for r in result.health.itertuples():
        flag = "" if r.rhat_max <= RHAT_LIMIT and r.divergences == 0 else "  ← check (see warning)"
        lines.append(
            f"NUTS {_fit_title(r.method, r.judge)}: R-hat max {r.rhat_max:.3f}, ESS min "
            f"{r.ess_min:.0f}, {r.divergences} divergent; {r.chains} chains × ({r.warmup} + "
            f"{r.samples}){flag}"
        )
    return lines


def _mean_interval(row) -> str:
    return f"{row['mean']:.2f} {_interval(row['ci_low'], row['ci_high'])}"


def _judges(result: ArenaComparison) -> list[str]:
    """Each judge's confusion P(says verdict | truth), rows the truth, and its bias."""
    judges = result.judges
    if judges.empty:
        return []
    level = result.settings["level"]
    lines = [f"judges (bayes): P(says column | truth row), mean [{_percent(level)}]"]
    for judge in dict.fromkeys(judges["judge"]):
        mine = judges[judges["judge"] == judge]
        cells = mine[mine["measure"] == CONFUSION]
        verdicts = list(dict.fromkeys(cells["verdict"]))
        body = []
        for truth in dict.fromkeys(cells["truth"]):
            row = cells[cells["truth"] == truth].set_index("verdict")
            body.append([truth] + [_mean_interval(row.loc[v]) for v in verdicts])
        lines.append(f"  {judge}")
        lines += ["    " + x for x in _table(["truth", *(f"says {v}" for v in verdicts)], body, 1)]
        bias = mine[mine["measure"] != CONFUSION]
        lines += [f"    {r['measure']}: {_mean_interval(r)}" for _, r in bias.iterrows()]
    return lines


def _next(result: ArenaComparison) -> list[str]:
    following = result.next
    if following.empty:
        return []
    k, level = int(following["k"].iloc[0]), result.settings["level"]
    width = following["current_width"].iloc[0]
    if width == 0:
        return [f"judge next: every rank is certain at {_percent(level)}; no pair shrinks them"]
    lines = [
        f"judge next ({following['method'].iloc[0]}): {k} more human verdicts on a pair shrink "
        f"the summed {_percent(level)} rank-interval width ({width:g} now) by"
    ]
    for r in following.head(NEXT_SHOWN).itertuples():
        trust = "" if r.trusted else " (few effective draws: rough)"
        lines.append(
            f"  {r.system_i} vs {r.system_j}: {r.reduction:.2f} ± {r.reduction_se:.2f}{trust}"
        )
    return lines


def arena_text(result: ArenaComparison) -> str:
    """The comparison for a terminal (module docstring)."""
    lines = [result.battles.reading()]
    fits = list(_fits(result))
    if len(fits) == 1:
        lines += ["", *_one_fit(result, *fits[0])]
    else:
        lines += ["", *_side_by_side(result)]
    health = _health(result)
    if health:
        lines += ["", *health]
    for part in (_judges(result), _next(result)):
        if part:
            lines += ["", *part]
    return "\n".join(lines)
