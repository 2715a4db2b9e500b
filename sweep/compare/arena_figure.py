"""``sweep compare -o FIG`` on battles: the leaderboard, its ranks and the judges' confusions.

::

    fig = leaderboard_figure(systems, {"bayes": draws, "human_only": human, "ppr": rates},
                             level=0.95, judges=("gpt-4", "gpt-3.5"))
    draw_leaderboard("leaderboard.png", systems, methods, 0.95, judges)

``methods`` maps each method's name to its result: an arena posterior's
:class:`~binmetric_sweep.kernels.arena.posterior.ArenaDraws` (``bayes``, ``human_only``,
``judge_only``, ``--model pairs``), or prediction-powered ranking's
:class:`~binmetric_sweep.kernels.arena.ppr.PPRWinRates`. Rows are the systems, best at the
top in the first method's order (its point win rate, highest first); each method is drawn in
its own colour and marker, side by side within a row, and named in a legend at the foot.

- Left, **win rates**: each system's win rate against the field, a point and its central
  ``level`` interval: for a posterior, the mean and the central interval of
  :attr:`~.posterior.ArenaDraws.win_rates` (the mean over the other systems of P(i beats j)
  + ½·P(tie)); for ``ppr``, θ̂ (the share of its battles won, a tie no win: not the same
  quantity, the axis label says so) and θ̂ ± z·√Σ̂_ii.
- Right, **ranks** (1 the strongest): a posterior's median rank as the point, its central
  ``level`` interval as a thick line and its simultaneous ``level`` rank set
  (:func:`~.posterior.simultaneous_rank_sets`: every system's rank inside at once) as a thin
  one; ``ppr``'s rank set of the χ²_S ellipsoid (:func:`~.ppr.rank_sets`, simultaneous too)
  as a thin line, its point the rank of θ̂.
- Below, with ``judges``, one **confusion** heatmap per judge: P(judge says l | human
  verdict y), rows the human verdict (A better, tie, B better, in positions), columns the
  judge's; each cell its posterior mean and central ``level`` interval, from the first
  posterior with the judges' confusions (or the one ``confusion_from`` names). A judge
  that prefers side A has a heavy "A" column.

The figure is two paper columns wide (:data:`~.figure.FIGURE_WIDTH`) with 7–8 pt text, as
tall as its rows need up to :data:`~.figure.MAX_HEIGHT`; drawn on a bare Agg canvas as
:mod:`~.figure` is, never through pyplot. Bad input raises :class:`SweepError`, one line
naming the method or field, and nothing is written.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from binmetric_sweep.kernels.arena.posterior import (
    ArenaDraws,
    rank_draws,
    rank_intervals,
    simultaneous_rank_sets,
)
from binmetric_sweep.kernels.arena.ppr import PPRWinRates, rank_sets
from binmetric_sweep.sweep.compare.figure import (
    COLOURS,
    FIGURE_WIDTH,
    MARKERS,
    MAX_HEIGHT,
    MIN_HEIGHT,
    ROW_PITCH,
)
from binmetric_sweep.sweep.display.plots import (
    FONT,
    SMALL,
    check_image_path,
    hide_overlapping_ticklabels,
    new_figure,
    save_figure,
    style_axes,
)
from binmetric_sweep.sweep.errors import SweepError, shown

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "CONFUSION_HEIGHT",
    "MethodSummary",
    "confusion_summary",
    "draw_leaderboard",
    "leaderboard_figure",
    "summarise_method",
]

CONFUSION_HEIGHT = 1.9
"""Inches of the judges' heatmap row (3 × 3 cells that hold two lines of 5.5 pt text)."""

_OVERHEAD = 1.45
"""Inches of the top panels that are not rows: the title, x tick labels, x labels, legend."""

#: The heatmaps' row and column order (A better first) as indices of the cells' classes.
_SHOWN = (2, 1, 0)
_ROW_NAMES = ("A better", "tie", "B better")
_COLUMN_NAMES = ("A", "tie", "B")


class MethodSummary(NamedTuple):
    """One method's numbers as the figure draws them, ``(S,)`` each, in the systems' order.

    Attributes:
        win: the point win rate (posterior mean, or ppr's θ̂).
        win_low, win_high: its central ``level`` interval.
        rank: the point rank (posterior median, or the rank of θ̂), 1 the strongest.
        rank_low, rank_high: the central rank interval (NaN for ppr: it has none).
        set_low, set_high: the simultaneous rank set.
        share_won: True for ppr's θ (share of battles won, ties 0), False for the posterior's
            win rate against the field (ties ½).
    """

    win: np.ndarray
    win_low: np.ndarray
    win_high: np.ndarray
    rank: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    set_low: np.ndarray
    set_high: np.ndarray
    share_won: bool


def _point_ranks(values: np.ndarray) -> np.ndarray:
    """``(S,)`` ranks of point values (1 the highest; ties by index)."""
    return rank_draws(np.asarray(values, float)[None, :])[0].astype(float)


def summarise_method(result: ArenaDraws | PPRWinRates, level: float) -> MethodSummary:
    """:class:`MethodSummary` of a posterior's draws or of ppr's estimate at ``level``."""
    tail = (1.0 - level) / 2.0
    if isinstance(result, PPRWinRates):
        theta = np.asarray(result.theta, float)
        z = NormalDist().inv_cdf(1.0 - tail)
        half = z * np.sqrt(np.clip(np.diag(np.asarray(result.cov, float)), 0.0, None))
        low, high = rank_sets(theta, result.cov, level)
        missing = np.full(theta.shape, np.nan)
        return MethodSummary(
            theta,
            theta - half,
            theta + half,
            _point_ranks(theta),
            missing,
            missing,
            low.astype(float),
            high.astype(float),
            True,
        )
    win = np.asarray(result.win_rates, float)
    ranks = rank_draws(np.asarray(result.strengths, float))
    rank_low, rank_high = rank_intervals(ranks, level)
    set_low, set_high = simultaneous_rank_sets(ranks, level)
    median = np.quantile(ranks, 0.5, axis=0, method="inverted_cdf")
    return MethodSummary(
        win.mean(axis=0),
        np.quantile(win, tail, axis=0),
        np.quantile(win, 1.0 - tail, axis=0),
        median.astype(float),
        rank_low.astype(float),
        rank_high.astype(float),
        set_low.astype(float),
        set_high.astype(float),
        False,
    )


def confusion_summary(log_confusion: np.ndarray, level: float) -> tuple[np.ndarray, ...]:
    """``(J, 3, 3)`` posterior mean, lower and upper central ``level`` ends of each judge's
    P(says l | truth y) from ``(M, J, 3, 3)`` log confusions draws (classes as the cells')."""
    c = np.exp(np.asarray(log_confusion, float))
    tail = (1.0 - level) / 2.0
    return c.mean(axis=0), np.quantile(c, tail, axis=0), np.quantile(c, 1.0 - tail, axis=0)


# --- inputs -----------------------------------------------------------------------------


def _checked(
    systems: Sequence[str],
    methods: Mapping[str, ArenaDraws | PPRWinRates],
    level: float,
    judges: Sequence[str],
    confusion_from: str | None,
) -> str | None:
    """Refuse bad input (SweepError, one line); the method whose confusions are drawn."""
    s = len(systems)
    if s < 2:
        raise SweepError(f"systems: {s} given, a leaderboard needs at least 2")
    if len(set(systems)) != s:
        twice = next(x for x in systems if list(systems).count(x) > 1)
        raise SweepError(f"systems: {shown(twice)} appears twice")
    if not methods:
        raise SweepError("methods: none given, at least one is needed")
    if not 0.0 < float(level) < 1.0:
        raise SweepError(f"level: {level}, expected a number in (0, 1)")
    for name, result in methods.items():
        if isinstance(result, PPRWinRates):
            width = np.asarray(result.theta).size
        elif isinstance(result, ArenaDraws):
            width = np.asarray(result.win_rates).shape[1]
        else:
            raise SweepError(
                f"methods: {shown(name)} is a {type(result).__name__}, "
                "expected ArenaDraws or PPRWinRates"
            )
        if width != s:
            raise SweepError(f"methods: {shown(name)} ranks {width} systems, not {s}")
    if not judges:
        return None
    with_confusion = [
        name
        for name, result in methods.items()
        if isinstance(result, ArenaDraws) and result.log_confusion is not None
    ]
    chosen = confusion_from if confusion_from is not None else next(iter(with_confusion), None)
    if chosen not in with_confusion:
        what = "no method" if chosen is None else shown(chosen)
        raise SweepError(f"judges: {what} has the judges' confusions to draw")
    drawn = np.asarray(methods[chosen].log_confusion).shape[1]
    if drawn != len(judges):
        raise SweepError(f"judges: {len(judges)} named, {shown(chosen)} has {drawn} confusions")
    return chosen


# --- panels -----------------------------------------------------------------------------


def _offsets(k: int) -> np.ndarray:
    """Each method's vertical offset within a system's row."""
    step = min(0.8 / k, 0.18) if k > 1 else 0.0
    return (np.arange(k) - (k - 1) / 2) * step


def _win_limits(summaries) -> tuple[float, float]:
    """The win-rate axis: the points and intervals with 5 % of their span either side (at
    least 0.02), within 0..1 (a normal interval of ppr's can run past either end)."""
    values = np.concatenate([np.r_[s.win, s.win_low, s.win_high] for s in summaries])
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 1.0
    low, high = float(finite.min()), float(finite.max())
    margin = max(0.02, 0.05 * (high - low))
    return max(0.0, low - margin), min(1.0, high + margin)


def _win_panel(ax: Axes, summaries: Mapping[str, MethodSummary], order, level: float) -> None:
    """Win-rate points and intervals, methods side by side in each system's row."""
    n = len(order)
    thin = n * len(summaries) > 60
    offsets = _offsets(len(summaries))
    for i, (name, summary) in enumerate(summaries.items()):
        dy = offsets[i]
        colour, marker = COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)]
        y = np.arange(n) + dy
        ax.hlines(
            y,
            summary.win_low[order],
            summary.win_high[order],
            color=colour,
            linewidth=0.6 if thin else 0.9,
            gid=f"win-interval-{name}",
        )
        ax.plot(
            summary.win[order],
            y,
            ls="none",
            marker=marker,
            markersize=1.6 if thin else 2.6,
            color=colour,
            gid=f"win-{name}",
        )
    ax.set_xlim(*_win_limits(summaries.values()))
    ax.set_ylim(n - 0.5, -0.5)
    ax.grid(True, axis="x", linewidth=0.4, alpha=0.35)
    ax.set_axisbelow(True)
    label = f"win rate against the field\npoint and {_percent(level)} interval"
    if any(s.share_won for s in summaries.values()):
        label += "\nppr: share of battles won, ties 0"
    ax.set_xlabel(label)
    ax.set_label("win-rates")


def _rank_panel(ax: Axes, summaries: Mapping[str, MethodSummary], order, level: float) -> None:
    """Rank sets (thin), central rank intervals (thick) and point ranks, one row a system."""
    n = len(order)
    thin = n * len(summaries) > 60
    offsets = _offsets(len(summaries))
    for i, (name, summary) in enumerate(summaries.items()):
        dy = offsets[i]
        colour, marker = COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)]
        y = np.arange(n) + dy
        ax.hlines(
            y,
            summary.set_low[order] - 0.3,
            summary.set_high[order] + 0.3,
            color=colour,
            linewidth=0.5 if thin else 0.7,
            gid=f"rank-set-{name}",
        )
        central = np.isfinite(summary.rank_low[order])
        ax.hlines(
            y[central],
            summary.rank_low[order][central] - 0.3,
            summary.rank_high[order][central] + 0.3,
            color=colour,
            linewidth=1.4 if thin else 2.2,
            gid=f"rank-interval-{name}",
        )
        ax.plot(
            summary.rank[order],
            y,
            ls="none",
            marker=marker,
            markersize=1.6 if thin else 2.6,
            color=colour,
            markerfacecolor="white",
            markeredgewidth=0.6,
            gid=f"rank-{name}",
        )
    ax.set_xlim(0.4, n + 0.6)
    ax.set_ylim(n - 0.5, -0.5)
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 10**9) if n / s <= 12)
    ax.set_xticks(range(1, n + 1, step) if step <= 2 else [1, *range(step, n + 1, step)])
    ax.tick_params(axis="y", left=False, labelleft=False)
    ax.grid(True, axis="x", linewidth=0.4, alpha=0.35)
    ax.set_axisbelow(True)
    level_text = _percent(level)
    ax.set_xlabel(
        f"rank (1 the strongest)\nthick: central {level_text} interval\n"
        f"thin: simultaneous {level_text} rank set"
    )
    ax.set_label("ranks")


def _confusion_panel(ax: Axes, judge: str, mean, low, high, first: bool) -> None:
    """One judge's P(says l | human y), rows and columns A, tie, B; each cell its mean and
    interval, in white on the dark cells."""
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    shown_order = list(_SHOWN)
    cells = mean[np.ix_(shown_order, shown_order)]
    cmap, norm = colormaps["Blues"], Normalize(0.0, 1.0)
    image = ax.imshow(cells, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    image.set_gid(f"confusion-{judge}")
    for r, y in enumerate(shown_order):
        for c, verdict in enumerate(shown_order):
            value = mean[y, verdict]
            ax.text(
                c,
                r,
                f"{value:.2f}\n{low[y, verdict]:.2f}–{high[y, verdict]:.2f}",
                ha="center",
                va="center",
                fontsize=5.5,
                linespacing=1.1,
                color="white" if norm(value) > 0.55 else "black",
            )
    ax.set_xticks(range(3), _COLUMN_NAMES)
    ax.set_yticks(range(3), _ROW_NAMES if first else [""] * 3)
    ax.tick_params(length=0)
    ax.set_xlabel("judge says")
    if first:
        ax.set_ylabel("human verdict")
    ax.set_title(judge, fontsize=SMALL, pad=3)
    ax.set_label(f"confusion-{judge}")


def _percent(level: float) -> str:
    """0.95 → ``95 %``."""
    return f"{100 * float(level):.10g} %"


def _name_rows(ax: Axes, names: Sequence[str], height: float) -> None:
    """The systems' names down ``ax``, as large as the rows allow (7 pt down to 4 pt)."""
    pitch_points = 72.0 * height / max(1, len(names))
    ax.set_yticks(range(len(names)), names)
    ax.tick_params(axis="y", labelsize=max(4.0, min(SMALL, 0.85 * pitch_points)), length=2)


# --- the figure -------------------------------------------------------------------------


def _height(n: int, k: int, judges: int) -> tuple[float, float]:
    """The figure's and the top panels' heights in inches."""
    rows = n * (1.0 + 0.3 * (k - 1)) if k > 1 else n
    top = min(MAX_HEIGHT - (CONFUSION_HEIGHT if judges else 0.0), _OVERHEAD + ROW_PITCH * rows)
    top = max(MIN_HEIGHT, top)
    return top + (CONFUSION_HEIGHT if judges else 0.0), top


def leaderboard_figure(
    systems: Sequence[str],
    methods: Mapping[str, ArenaDraws | PPRWinRates],
    level: float,
    judges: Sequence[str] = (),
    source: str | None = None,
    confusion_from: str | None = None,
    width: float | None = None,
) -> Figure:
    """The figure :func:`draw_leaderboard` saves, drawn but not saved (the module's text).

    Args:
        systems: the S systems' names, in the order the results index them.
        methods: method name → :class:`~.posterior.ArenaDraws` or :class:`~.ppr.PPRWinRates`
            (at least one; the first sets the rows' order).
        level: the intervals' and rank sets' level, in (0, 1).
        judges: the judges' names, one per confusion of the drawn posterior (empty: no
            heatmaps).
        source: the battles file's name, heading the title.
        confusion_from: the method whose confusions are drawn (None: the first that has
            them).
        width: inches, :data:`~.figure.FIGURE_WIDTH` by default.

    Raises:
        SweepError: fewer than 2 systems or one named twice, no method, a method of another
            type or number of systems, a level outside (0, 1), judges without a posterior
            holding as many confusions.
    """
    systems = [str(x) for x in systems]
    judges = [str(x) for x in judges]
    chosen = _checked(systems, methods, level, judges, confusion_from)
    summaries = {name: summarise_method(result, level) for name, result in methods.items()}
    first = next(iter(summaries.values()))
    order = np.lexsort((np.arange(len(systems)), -first.win))
    names = [systems[i] for i in order]

    width = FIGURE_WIDTH if width is None else float(width)
    total, top = _height(len(systems), len(methods), len(judges))
    fig = new_figure(width, total)
    fig.get_layout_engine().set(w_pad=0.03, h_pad=0.04, wspace=0.04, hspace=0.06)
    rows = [top, CONFUSION_HEIGHT] if judges else [top]
    grid = fig.add_gridspec(len(rows), 1, height_ratios=rows)
    upper = grid[0].subgridspec(1, 2, width_ratios=(1.0, 0.9))
    wins, ranks = fig.add_subplot(upper[0]), fig.add_subplot(upper[1])
    for ax in (wins, ranks):
        style_axes(ax)
    _win_panel(wins, summaries, order, level)
    _rank_panel(ranks, summaries, order, level)
    _name_rows(wins, names, top - _OVERHEAD)
    if judges:
        mean, low, high = confusion_summary(methods[chosen].log_confusion, level)
        # At least 3 columns, so that one judge's cells are as wide as two judges'.
        lower = grid[1].subgridspec(1, max(3, len(judges)))
        for j, judge in enumerate(judges):
            ax = fig.add_subplot(lower[j])
            style_axes(ax)
            _confusion_panel(ax, judge, mean[j], low[j], high[j], first=j == 0)
    _legend(fig, list(methods))
    title = f"leaderboard: {len(methods)} method{'s' if len(methods) > 1 else ''}, "
    title += f"{_percent(level)} intervals"
    if judges:
        title += f"; judges' confusions from {chosen}"
    fig.suptitle(title if source is None else f"{source} — {title}", fontsize=FONT)
    hide_overlapping_ticklabels(fig, wins)
    return fig


def _legend(fig: Figure, names: Sequence[str]) -> None:
    """The methods' colours and markers, at the figure's foot, in as many columns as the
    longest name lets fit across the figure."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.lines import Line2D
    from matplotlib.textpath import TextToPath

    handles = [
        Line2D(
            [],
            [],
            color=COLOURS[i % len(COLOURS)],
            marker=MARKERS[i % len(MARKERS)],
            markersize=3,
            linewidth=0.9,
            label=name,
        )
        for i, name in enumerate(names)
    ]
    measure = TextToPath()
    widest = max(
        measure.get_text_width_height_descent(name, FontProperties(size=SMALL), ismath=False)[0]
        for name in names
    )
    # Each entry: its handle (1.8 em), the gap to its text (0.8 em) and the column gap (1.2 em).
    entry = widest + (1.8 + 0.8 + 1.2) * SMALL
    columns = max(1, min(len(names), 6, int(0.96 * fig.get_figwidth() * 72.0 // entry)))
    legend = fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=columns,
        fontsize=SMALL,
        frameon=False,
        handlelength=1.8,
        columnspacing=1.2,
        borderaxespad=0.1,
    )
    legend.set_gid("methods")


def draw_leaderboard(
    path: str | pathlib.Path,
    systems: Sequence[str],
    methods: Mapping[str, ArenaDraws | PPRWinRates],
    level: float,
    judges: Sequence[str] = (),
    source: str | None = None,
    confusion_from: str | None = None,
) -> pathlib.Path:
    """Draw :func:`leaderboard_figure` and save it to ``path`` (``-o``); returns it as a Path.

    The format follows the suffix (``.png`` at :data:`~.plots.DPI`, ``.pdf``, ``.svg``, …;
    else SweepError naming ``-o``); whole or not at all, uncropped, its directory made.
    Every input is checked before anything is written.
    """
    out = check_image_path(path)
    fig = leaderboard_figure(systems, methods, level, judges, source, confusion_from)
    return save_figure(fig, out)
