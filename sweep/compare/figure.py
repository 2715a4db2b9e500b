"""``sweep compare -o FIG``: the systems' α intervals beside the matrix of P(α_row > α_col).

::

    fig = comparison_figure(systems, pairs, settings)
    plot_comparison(systems, pairs, settings, "compare.png")

Two panels sharing their rows, one row per system, best at the top (the
order of ``systems``):

- left, a forest plot: each system's posterior mean of α as a dot and its
  central ``settings["level"]`` interval as a line, on α's 0–1 scale zoomed
  to the intervals, the systems' names as the row labels;
- right, the matrix P(α_row > α_col) over all ordered pairs (``pairs`` gives
  one of each unordered pair; the other is 1 − p), on a diverging colour
  scale fixed to 0..1 and centred at 0.5, the diagonal grey; the pairs
  significant at γ (two-sided, or adjusted when ``settings["adjust"]`` names
  an adjustment that adjusts, ``"holm"`` or ``"bh"``: :data:`~.analysis.ADJUSTMENTS`)
  are outlined in black, and the colorbar marks γ/2 and 1 − γ/2 when no
  adjustment moves those thresholds. The cells carry their probabilities
  (two decimals) when there are few systems and the text fits.
  The matrix's rows are the forest's rows, so they are not named again; its
  columns are named by system while the names fit across, else numbered by
  rank (every k-th: 1, 10, 20, …), ranks then also at the matrix's right edge.

With ``--estimator`` (``systems`` in long form, an ``estimator`` column:
:mod:`~.by_estimator`), the forest draws every estimator's interval of a
system side by side in its row, each estimator in its own colour and
marker, named in a legend with how many systems it does not apply to (no
interval drawn there). The rows follow the matrix's estimator: the
posterior's P matrix where ``bayes`` is among them (``--estimator all``);
for one classical estimator its z-test's Φ(z), z = (â_row − â_col)/se of
the difference, on the same scale: 1 − Φ(z) is the one-sided p-value, the
two-sided test is significant at γ exactly where Φ(z) > 1 − γ/2 or < γ/2,
and a pair it cannot test is grey. The title says which.

The title names the ratings file (``source``) besides the rates, the
method (for the posterior) or the estimator, γ and the intervals' level.

The figure is two paper columns wide (:data:`FIGURE_WIDTH`) with 7–8 pt text,
as tall as its rows need up to :data:`MAX_HEIGHT` (100 systems fit, their
names in smaller type, or every k-th named when even that does not fit). As
in :mod:`binmetric_sweep.sweep.display.plots`, matplotlib is imported inside the
functions and drawn on a bare Agg canvas, never through pyplot.
"""

from __future__ import annotations

import math
import pathlib
import re
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from binmetric_sweep.kernels.estimators import is_posterior
from binmetric_sweep.sweep.compare.analysis import ADJUSTMENTS, NO_ADJUSTMENT, Adjustment
from binmetric_sweep.sweep.display.plots import (
    DPI,
    FONT,
    SMALL,
    SYMBOLS,
    check_image_path,
    save_figure,
)
from binmetric_sweep.sweep.errors import SweepError, shown

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "DPI",
    "FIGURE_WIDTH",
    "MAX_HEIGHT",
    "comparison_figure",
    "comparison_title",
    "figure_height",
    "plot_comparison",
    "probability_matrix",
    "significance_column",
]

FIGURE_WIDTH = 7.0
"""Figure width in inches: both columns of a two-column paper (two panels side by side)."""

MAX_HEIGHT = 9.0
"""The tallest figure in inches: a page of a two-column paper, its caption aside."""

MIN_HEIGHT = 2.4
"""The shortest figure in inches, so that a few systems still get a readable matrix."""

ROW_PITCH = 0.13
"""Inches per system row while the figure is below :data:`MAX_HEIGHT` (7 pt names, spaced)."""

MAX_ROTATED = 1.1
"""Inches: a longer name is not written up the matrix's columns (they are numbered instead)."""

ANNOTATE_MAX = 8
"""The most systems whose matrix cells carry their probabilities."""

MIN_FONT = 5.0
"""Smallest point size for a name or a cell's text; below it rows are labelled every k-th."""

SYSTEM_COLUMNS = ("system", "alpha_mean", "ci_low", "ci_high")
PAIR_COLUMNS = ("a", "b", "p_a_better")
SETTINGS = ("rates", "gamma", "level", "method", "adjust")
#: The long (by-estimator) tables' columns, and their settings (``method`` where the
#: posterior is among them).
ESTIMATOR_SYSTEM_COLUMNS = ("estimator", "system", "estimate", "ci_low", "ci_high")
ESTIMATOR_PAIR_COLUMNS = ("estimator", "a", "b", "diff_mean", "significant")
ESTIMATOR_SETTINGS = ("rates", "gamma", "level", "adjust")
#: Each estimator's colour and marker in the forest, in the order they come.
COLOURS = ("black", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")

_METHODS = {"quadrature": "quadrature", "nuts": "NUTS"}
_CMAP = "RdBu"
_OVERHEAD = 0.95
"""Inches of a figure's height that are not rows: the title, x tick labels and x labels."""


# --- inputs -----------------------------------------------------------------------------


def _check_inputs(
    systems: pd.DataFrame,
    pairs: pd.DataFrame,
    settings: Mapping[str, Any],
    by_estimator: bool = False,
):
    """Refuse (SweepError) missing columns or settings, repeated systems, pairs of unknowns.

    ``pairs`` may be empty without columns (one system: nothing to compare);
    ``by_estimator``: the tables come from :func:`_by_estimator`, whose settings it checked."""
    checked = [("systems", systems, SYSTEM_COLUMNS)]
    checked += [("pairs", pairs, PAIR_COLUMNS)] if len(pairs) else []
    for what, frame, needed in checked:
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise SweepError(f"{what}: missing column(s) {', '.join(missing)}")
    absent = [k for k in SETTINGS if k not in settings and not by_estimator]
    if absent:
        raise SweepError(f"settings: missing {', '.join(absent)}")
    if len(systems) == 0:
        raise SweepError("systems: no system to draw")
    names = systems["system"].astype(str)
    if names.duplicated().any():
        raise SweepError(f"systems: {shown(names[names.duplicated()].iloc[0])} appears twice")
    known = set(names)
    for column in ("a", "b") if len(pairs) else ():
        unknown = sorted(set(pairs[column].astype(str)) - known)
        if unknown:
            raise SweepError(f"pairs: {column} = {shown(unknown[0])} is not among the systems")


def significance_column(pairs: pd.DataFrame, settings: Mapping[str, Any]) -> pd.Series:
    """Which pairs are significant at γ: the ``significant`` column (adjusted when the
    analysis was), or, when ``pairs`` has none, P(α_a > α_b) > 1 − γ/2 or < γ/2."""
    if "significant" in pairs.columns:
        return pairs["significant"].fillna(False).astype(bool)
    gamma = float(settings["gamma"])
    p = pairs["p_a_better"].astype(float)
    return (p > 1 - gamma / 2) | (p < gamma / 2)


def probability_matrix(
    systems: pd.DataFrame, pairs: pd.DataFrame, settings: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """P(α_row > α_col) and its significance over all ordered pairs, in ``systems``' order.

    Each row (a, b, p) of ``pairs`` fills [a, b] with p and [b, a] with 1 − p;
    the diagonal and pairs not given are NaN (and not significant).
    """
    names = systems["system"].astype(str).tolist()
    index = {name: i for i, name in enumerate(names)}
    p = np.full((len(names), len(names)), np.nan)
    significant = np.zeros(p.shape, dtype=bool)
    if len(pairs) == 0:
        return p, significant
    flags = significance_column(pairs, settings).to_numpy(bool)
    rows = zip(
        pairs["a"].astype(str), pairs["b"].astype(str), pairs["p_a_better"], flags, strict=True
    )
    seen: set[frozenset[int]] = set()
    for a, b, value, flag in rows:
        i, j = index[a], index[b]
        if i == j:
            raise SweepError(f"pairs: {shown(a)} is paired with itself")
        if frozenset((i, j)) in seen:
            raise SweepError(f"pairs: {shown(a)} and {shown(b)} are paired twice")
        seen.add(frozenset((i, j)))
        p[i, j], p[j, i] = float(value), 1.0 - float(value)
        significant[i, j] = significant[j, i] = bool(flag)
    return p, significant


# --- text -------------------------------------------------------------------------------


def _adjustment(settings: Mapping[str, Any]) -> Adjustment:
    """The adjustment ``settings["adjust"]`` names (:data:`~.analysis.ADJUSTMENTS`); a name
    it does not know, as none (each pair's own two-sided test)."""
    return ADJUSTMENTS.get(str(settings["adjust"]), NO_ADJUSTMENT)


def _percent(level: float) -> str:
    """An interval level as a percentage: 0.95 → ``95 %``, 0.999 → ``99.9 %``."""
    return f"{100 * float(level):.10g} %"


def comparison_title(
    settings: Mapping[str, Any], source: str | None = None, estimators: Sequence[str] = ()
) -> str:
    """``ratings.csv — rates: per-system, quadrature; γ = 0.05, 95 % intervals`` (γ marked
    Holm or BH when adjusted; the file's name first where ``source`` is given).

    With ``estimators`` (the by-estimator tables'), the title says whose intervals are drawn
    and what the matrix is: the posterior's P (and its method) where ``bayes`` is among
    them, else the z-test's Φ(z) of the one classical estimator.
    """
    gamma = f"{SYMBOLS['gamma']} = {float(settings['gamma']):g}"
    adjustment = _adjustment(settings)
    if adjustment.adjusts:
        gamma += f" ({adjustment.label})"
    level = _percent(settings["level"])
    if not estimators:
        method = _METHODS.get(str(settings["method"]), str(settings["method"]))
        title = f"rates: {settings['rates']}, {method}; {gamma}, {level} intervals"
    else:
        if len(estimators) == 1:
            drawn = f"{estimators[0]}'s {level} intervals"
        else:
            drawn = f"{len(estimators)} estimators' {level} intervals"
        if any(map(is_posterior, estimators)):
            method = _METHODS.get(str(settings["method"]), str(settings["method"]))
            matrix = f"matrix: the posterior's P(row > col), {method}"
        else:
            matrix = f"matrix: {estimators[0]}'s z-test, Φ(z) of row − col"
        title = f"{drawn}; rates: {settings['rates']}; {matrix}; {gamma}"
    return title if source is None else f"{source} — {title}"


# --- size and canvas --------------------------------------------------------------------


def figure_height(n_systems: int, column_labels: float = 0.0) -> float:
    """Inches for ``n_systems`` rows at :data:`ROW_PITCH`, plus ``column_labels`` inches of
    names under the matrix, between :data:`MIN_HEIGHT` and :data:`MAX_HEIGHT`."""
    wanted = _OVERHEAD + column_labels + ROW_PITCH * n_systems
    return min(MAX_HEIGHT, max(MIN_HEIGHT, wanted))


def _blank_figure(width: float, height: float) -> Figure:
    """An empty figure on a bare Agg canvas, laid out by constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    fig.get_layout_engine().set(w_pad=0.03, h_pad=0.03, wspace=0.04)
    FigureCanvasAgg(fig)
    return fig


def _style(ax: Axes) -> None:
    """Paper text sizes and light lines on ``ax`` (as in
    :mod:`~binmetric_sweep.sweep.display.plots`)."""
    ax.tick_params(labelsize=SMALL, length=2.5, width=0.6, pad=2)
    ax.xaxis.label.set_fontsize(FONT)
    ax.yaxis.label.set_fontsize(FONT)
    for spine in ax.spines.values():
        spine.set_linewidth(0.6)


def _text_size(text: str, size: float) -> tuple[float, float]:
    """Width and height in points of ``text`` set at ``size`` points (font metrics, no
    mathtext, independent of the resolution)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    width, height, _ = TextToPath().get_text_width_height_descent(
        text, FontProperties(size=size), ismath=False
    )
    return width, height


# --- the forest -------------------------------------------------------------------------


def _alpha_limits(systems: pd.DataFrame) -> tuple[float, float]:
    """The forest's x range: the intervals and means with 6 % of their span either side
    (at least 0.02), within 0..1."""
    values = systems[["ci_low", "ci_high", "alpha_mean"]].to_numpy(float)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 1.0
    low, high = float(finite.min()), float(finite.max())
    margin = max(0.02, 0.06 * (high - low))
    return max(0.0, low - margin), min(1.0, high + margin)


def _forest(ax: Axes, systems: pd.DataFrame, settings: Mapping[str, Any]) -> None:
    """Means as dots and intervals as lines, one row per system, the first at the top."""
    n = len(systems)
    rows = np.arange(n)
    small = n > 40
    ax.hlines(
        rows,
        systems["ci_low"].to_numpy(float),
        systems["ci_high"].to_numpy(float),
        color="0.25",
        linewidth=0.7 if small else 1.0,
        gid="alpha-interval",
    )
    ax.plot(
        systems["alpha_mean"].to_numpy(float),
        rows,
        ls="none",
        marker="o",
        markersize=1.8 if small else 3.2,
        color="black",
        gid="alpha-mean",
    )
    _alpha_axis(ax, systems, n, settings, "mean")
    ax.set_label("forest")


def _alpha_axis(ax, values: pd.DataFrame, n: int, settings: dict, point: str) -> None:
    """α across ``ax`` (limits from ``values``' intervals), ``n`` systems down it, first on
    top; the label names the ``point`` drawn ("mean", "estimate") and the interval's level."""
    ax.set_xlim(*_alpha_limits(values))
    ax.set_ylim(n - 0.5, -0.5)
    ax.grid(True, axis="x", linewidth=0.4, alpha=0.35)
    ax.set_axisbelow(True)
    level = _percent(settings["level"])
    ax.set_xlabel(f"{SYMBOLS['alpha']} (share of adequate outputs)\n{point} and {level} interval")


# --- the matrix -------------------------------------------------------------------------


def _matrix(ax: Axes, p: np.ndarray):
    """P(α_row > α_col) as coloured cells on 0..1 (RdBu, 0.5 white), the diagonal mid-grey
    (darker than the near-white 0.5, so it cannot be read as a probability)."""
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    cmap = colormaps[_CMAP].with_extremes(bad="0.6")
    image = ax.imshow(
        np.ma.masked_invalid(p),
        cmap=cmap,
        norm=Normalize(0.0, 1.0),
        aspect="auto",
        interpolation="nearest",
    )
    image.set_gid("probability")
    ax.set_ylim(len(p) - 0.5, -0.5)
    ax.tick_params(axis="y", left=False, labelleft=False)
    ax.set_label("matrix")
    return image


def _outline_segments(mask: np.ndarray) -> list[list[tuple[float, float]]]:
    """The edges between a marked cell and an unmarked one (or the border): the outline of
    the marked region, as line segments in the matrix's data coordinates."""
    padded = np.pad(mask, 1)
    segments = []
    # A vertical edge lies left of column j where padded[i+1, j] != padded[i+1, j+1].
    for i, j in zip(*np.nonzero(padded[1:-1, :-1] != padded[1:-1, 1:]), strict=True):
        segments.append([(j - 0.5, i - 0.5), (j - 0.5, i + 0.5)])
    for i, j in zip(*np.nonzero(padded[:-1, 1:-1] != padded[1:, 1:-1]), strict=True):
        segments.append([(j - 0.5, i - 0.5), (j + 0.5, i - 0.5)])
    return segments


def _mark_significant(ax: Axes, significant: np.ndarray) -> None:
    """Outline the significant cells (each region once, in black) over the matrix."""
    from matplotlib.collections import LineCollection

    width = 1.3 if len(significant) <= 20 else 0.5
    lines = LineCollection(
        _outline_segments(significant),
        colors="black",
        linewidths=width,
        capstyle="projecting",
        joinstyle="miter",
        gid="significant",
    )
    lines.set_clip_on(False)
    ax.add_collection(lines, autolim=False)


def _colorbar(
    fig: Figure, ax: Axes, image, settings: Mapping[str, Any], tall: bool, label=None
) -> None:
    """The colorbar labelled P(α_row > α_col) (or ``label``), with γ/2 and 1 − γ/2 marked
    when unadjusted."""
    shrink = 0.45 if tall else 1.0
    bar = fig.colorbar(image, ax=ax, fraction=0.08, pad=0.03, aspect=22 * shrink, shrink=shrink)
    default = r"$P(\alpha_{\mathrm{row}} > \alpha_{\mathrm{col}})$"
    bar.set_label(default if label is None else label, fontsize=FONT)
    bar.set_ticks([0.0, 0.25, 0.5, 0.75, 1.0], labels=["0", "0.25", "0.5", "0.75", "1"])
    bar.ax.tick_params(labelsize=SMALL, length=2, width=0.5)
    bar.outline.set_linewidth(0.5)
    bar.ax.set_label("colorbar")
    if not _adjustment(settings).adjusts:
        gamma = float(settings["gamma"])
        for at in (gamma / 2, 1 - gamma / 2):
            bar.ax.axhline(at, color="black", linewidth=0.8, gid="threshold")


def _annotate(fig: Figure, ax: Axes, p: np.ndarray) -> None:
    """Write each cell's probability (two decimals), black or white for contrast, when the
    systems are few (≤ :data:`ANNOTATE_MAX`) and the text fits its cell at ≥ :data:`MIN_FONT`."""
    from matplotlib import colormaps

    n = len(p)
    if n > ANNOTATE_MAX or n < 2:
        return
    fig.draw_without_rendering()
    box = ax.get_window_extent()
    cell_w = box.width / n * 72.0 / fig.dpi
    cell_h = box.height / n * 72.0 / fig.dpi
    width, height = _text_size("0.00", SMALL)
    size = min(SMALL, SMALL * 0.8 * cell_w / width, SMALL * 0.7 * cell_h / height)
    if size < MIN_FONT:
        return
    cmap = colormaps[_CMAP]
    for (i, j), value in np.ndenumerate(p):
        if math.isnan(value):
            continue
        r, g, b, _ = cmap(value)
        colour = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=size, color=colour)


# --- labels -----------------------------------------------------------------------------


def _step(count: int, room: float, need: float) -> int:
    """Label every k-th of ``count`` items ``room`` points apart that need ``need`` points:
    1, or the smallest of 2, 5, 10, 20, 50, … that leaves room."""
    if need <= room:
        return 1
    for k in (2, 5, 10, 20, 50, 100, 200, 500, 1000):
        if need <= k * room or k >= count:
            return k
    return count


def _fitting_size(pitch: float) -> float:
    """The largest point size (≤ :data:`SMALL`, in quarter points) whose labels, one line
    high, stay apart at ``pitch`` points: a label's box is as high as its size."""
    return min(SMALL, math.floor((pitch - 0.8) * 4) / 4)


def _name_rows(fig: Figure, ax: Axes, names: Sequence[str]) -> tuple[float, int]:
    """Name the forest's rows at :data:`SMALL`, smaller (down to :data:`MIN_FONT`) when the
    rows are too close, or every k-th when even that does not fit; returns (size, k)."""
    fig.draw_without_rendering()
    pitch = ax.get_window_extent().height / len(names) * 72.0 / fig.dpi
    size = max(MIN_FONT, _fitting_size(pitch))
    k = _step(len(names), pitch, size + 0.8)
    ticks = list(range(0, len(names), k))
    ax.set_yticks(ticks, [names[i] for i in ticks])
    ax.tick_params(axis="y", labelsize=size, length=0 if k == 1 else 2, pad=2)
    return size, k


def _column_plan(names: Sequence[str], room: float) -> tuple[str, float]:
    """How to label the matrix's columns ``room`` points apart: ``("across", size)`` when every
    name fits horizontally, ``("up", size)`` rotated by 90° (size ≥ :data:`MIN_FONT`, at most
    40 systems, none longer than :data:`MAX_ROTATED`), else ``("rank", SMALL)``."""
    widest = max(_text_size(name, SMALL)[0] for name in names)
    if widest + 4.0 <= room:
        return "across", SMALL
    size = _fitting_size(room)
    longest = max(_text_size(name, size)[0] for name in names) if size > 0 else math.inf
    if size >= MIN_FONT and len(names) <= 40 and longest <= 72.0 * MAX_ROTATED:
        return "up", size
    return "rank", SMALL


def _significance_note(settings: Mapping[str, Any]) -> str:
    """What the outlines mean: ``outlined: significant at γ (two-sided)``, or ``(Holm)``."""
    how = _adjustment(settings).label or "two-sided"
    return f"outlined: significant at {SYMBOLS['gamma']} ({how})"


def _name_columns(ax: Axes, names: Sequence[str], plan: tuple[str, float], note: str) -> None:
    """Label the matrix's columns by ``plan`` (:func:`_column_plan`), ranks also on the right;
    the x label names the columns, ``note`` on its second line."""
    how, size = plan
    n = len(names)
    if how == "rank":
        _number_by_rank(ax, n)
        ax.set_xlabel(f"column: rank (rows' order)\n{note}")
        return
    ax.set_xticks(range(n), list(names), rotation=0 if how == "across" else 90)
    ax.tick_params(axis="x", labelsize=size, length=0)
    ax.set_xlabel(f"column system\n{note}")


def _rank_ticks(n: int) -> list[int]:
    """0-based positions of the ranks to print for ``n`` systems: 1 and the multiples of a
    step of 1, 2, 5, 10, 20, 50, … giving at most about ten."""
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 10**9) if n / s <= 11)
    return sorted({0, *range(step - 1, n, step)})


def _number_by_rank(ax: Axes, n: int) -> None:
    """Rank numbers (1-based) under the matrix and at its right edge."""
    ticks = _rank_ticks(n)
    texts = [str(t + 1) for t in ticks]
    ax.set_xticks(ticks, texts)
    ax.tick_params(axis="x", labelsize=SMALL, length=2)
    ax.set_yticks(ticks, texts)
    ax.tick_params(axis="y", right=True, labelright=True, labelsize=SMALL, length=2)


def _wrap(text: str, size: float, room: float) -> str:
    """``text`` with each of its lines broken at spaces (not before ``%``) into lines of at
    most ``room`` points at ``size`` points (a word longer than that stays whole)."""
    lines = []
    for line in text.split("\n"):
        current = ""
        for word in re.split(r" (?!%)", line):
            joined = f"{current} {word}" if current else word
            if current and _text_size(joined.replace("$", ""), size)[0] > room:
                lines.append(current)
                joined = word
            current = joined
        lines.append(current)
    return "\n".join(lines)


def _title_lines(text: str, size: float, room: float) -> str:
    """``text`` in lines of at most ``room`` points at ``size`` points, broken after a
    ``;`` or a ``—`` where it can be (a part longer than a line by :func:`_wrap`)."""
    lines: list[str] = []
    for part in re.split(r"(?<=[;—]) ", text):
        joined = f"{lines[-1]} {part}" if lines else part
        if lines and _text_size(joined.replace("$", ""), size)[0] <= room:
            lines[-1] = joined
        else:
            lines.append(part)
    return "\n".join(_wrap(line, size, room) for line in lines)


def _fit_xlabels(fig: Figure, axes: Sequence[Axes]) -> None:
    """Break each x label into as many lines as it needs to stay within its axes' width
    (a narrow figure), so that the two panels' labels never run into each other."""
    fig.draw_without_rendering()
    for ax in axes:
        room = ax.get_window_extent().width * 72.0 / fig.dpi
        label = ax.xaxis.label
        label.set_text(_wrap(label.get_text(), label.get_fontsize(), room))


def _hide_overlaps(fig: Figure, axis) -> None:
    """Hide any tick label that would touch the one kept before it (a last resort)."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    at = 0 if axis.axis_name == "x" else 1
    labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
    boxes = sorted(
        ((t.get_window_extent(renderer), t) for t in labels),
        key=lambda b: b[0].get_points()[0][at],
    )
    end = -math.inf
    for box, text in boxes:
        lo, hi = box.get_points()[0][at], box.get_points()[1][at]
        if lo < end + 0.5:
            text.set_visible(False)
        else:
            end = hi


# --- several estimators ------------------------------------------------------------------

#: The colorbar's label where the matrix is a classical estimator's z-test.
Z_TEST_LABEL = r"$\Phi(z)$, $z = (\hat a_{\mathrm{row}} - \hat a_{\mathrm{col}})/\mathrm{se}$"


def _by_estimator(systems: pd.DataFrame, pairs: pd.DataFrame, settings: Mapping[str, Any]):
    """The by-estimator tables as the figure draws them: the estimators in their order,
    each one's intervals (a frame per estimator, rows in the matrix's order), and the
    matrix's estimator (``bayes`` where present, else the first) as one-per-system tables:
    its P(α_a > α_b), or for a classical estimator Φ(diff_mean/se_diff) (NaN where the
    pair is not tested), and whether each pair is significant (a pair not tested is not)."""
    for what, frame, needed in (
        ("systems", systems, ESTIMATOR_SYSTEM_COLUMNS),
        ("pairs", pairs, ESTIMATOR_PAIR_COLUMNS),
    ):
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise SweepError(f"{what}: missing column(s) {', '.join(missing)}")
    absent = [k for k in ESTIMATOR_SETTINGS if k not in settings]
    if absent:
        raise SweepError(f"settings: missing {', '.join(absent)}")
    if len(systems) == 0:
        raise SweepError("systems: no system to draw")
    kinds = systems["estimator"].astype(str)
    names = tuple(dict.fromkeys(kinds))
    main = next((name for name in names if is_posterior(name)), names[0])
    needed = ("p_a_better",) if is_posterior(main) else ("se_diff",)
    missing = [c for c in needed if c not in pairs.columns]
    if missing:
        raise SweepError(f"pairs: missing column(s) {', '.join(missing)} ({main}'s matrix)")
    if is_posterior(main) and "method" not in settings:
        raise SweepError("settings: missing method")
    twice = systems[systems.duplicated(["estimator", "system"])]
    if len(twice):
        row = twice.iloc[0]
        raise SweepError(f"systems: {shown(row['system'])} appears twice for {row['estimator']}")
    first = systems[kinds == main].assign(system=lambda f: f["system"].astype(str))
    order = first["system"].tolist()
    intervals = {}
    for name in names:
        mine = systems[kinds == name].assign(system=lambda f: f["system"].astype(str))
        unknown = sorted(set(mine["system"]) ^ set(order))
        if unknown:
            raise SweepError(f"systems: {shown(unknown[0])} is not rated by every estimator")
        columns = ["estimate", "ci_low", "ci_high"]
        intervals[name] = mine.set_index("system").loc[order, columns].astype(float)
    wide = pd.DataFrame(
        {
            "system": order,
            "alpha_mean": first["estimate"].to_numpy(float),
            "ci_low": first["ci_low"].to_numpy(float),
            "ci_high": first["ci_high"].to_numpy(float),
        }
    )
    mine = pairs[pairs["estimator"].astype(str) == main]
    if is_posterior(main):
        p = mine["p_a_better"].to_numpy(float)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            z = mine["diff_mean"].to_numpy(float) / mine["se_diff"].to_numpy(float)
        normal = NormalDist()
        p = np.array([normal.cdf(v) if not math.isnan(v) else math.nan for v in z])
    flags = mine["significant"].astype("boolean").fillna(False).astype(bool)
    wide_pairs = pd.DataFrame(
        {"a": mine["a"].to_numpy(), "b": mine["b"].to_numpy(), "p_a_better": p}
    ).assign(significant=flags.to_numpy())
    return names, intervals, wide, wide_pairs


def _forest_by_estimator(
    ax: Axes, intervals: Mapping[str, pd.DataFrame], settings: Mapping[str, Any]
) -> None:
    """Each estimator's estimates (markers) and intervals (lines) side by side in each
    system's row, one colour and marker per estimator, named in a legend
    (with the systems it does not apply to, where nothing is drawn): the figure's, at its
    foot, so that it does not widen the panel."""
    from matplotlib.lines import Line2D

    names = list(intervals)
    k = len(names)
    n = len(next(iter(intervals.values())))
    step = min(0.8 / k, 0.16) if k > 1 else 0.0
    small = n * k > 60
    handles = []
    for i, name in enumerate(names):
        frame = intervals[name]
        colour, marker = COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)]
        estimate, low, high = (frame[c].to_numpy(float) for c in ("estimate", "ci_low", "ci_high"))
        y = np.arange(n) + (i - (k - 1) / 2) * step
        drawn = np.isfinite(estimate) & np.isfinite(low) & np.isfinite(high)
        ax.hlines(
            y[drawn],
            low[drawn],
            high[drawn],
            color=colour,
            linewidth=0.6 if small else 0.9,
            gid=f"interval-{name}",
        )
        ax.plot(
            estimate[drawn],
            y[drawn],
            ls="none",
            marker=marker,
            markersize=1.6 if small else 2.6,
            color=colour,
            gid=f"estimate-{name}",
        )
        missing = int(n - drawn.sum())
        label = name + (f" (n/a: {missing} of {n})" if missing else "")
        handles.append(
            Line2D([], [], color=colour, marker=marker, markersize=3, linewidth=0.9, label=label)
        )
    shown_values = pd.concat(
        [f.rename(columns={"estimate": "alpha_mean"}) for f in intervals.values()]
    )
    _alpha_axis(ax, shown_values, n, settings, "estimate")
    legend = ax.figure.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(k, 6 if sum(len(h.get_label()) for h in handles) <= 90 else 4),
        fontsize=SMALL,
        frameon=False,
        handlelength=1.8,
        columnspacing=1.2,
        borderaxespad=0.1,
    )
    legend.set_gid("estimators")
    ax.set_label("forest")


# --- the figure -------------------------------------------------------------------------


def comparison_figure(
    systems: pd.DataFrame,
    pairs: pd.DataFrame,
    settings: Mapping[str, Any],
    width: float | None = None,
    source: str | None = None,
) -> Figure:
    """The figure :func:`plot_comparison` saves, drawn but not saved (see the module's text).

    ``systems`` one row per system, best first (``system``, ``alpha_mean``,
    ``ci_low``, ``ci_high``); ``pairs`` one row per unordered pair (``a``,
    ``b``, ``p_a_better`` = P(α_a > α_b), ``significant``, adjusted when
    ``adjust`` is "holm" or "bh"); ``settings`` with ``rates``, ``gamma``, ``level``,
    ``method`` and ``adjust``. Or the by-estimator tables (:mod:`~.by_estimator`:
    ``estimator``, ``system``, ``estimate``, ``ci_low``, ``ci_high``; pairs with
    ``estimator``, ``diff_mean``, ``significant`` and ``se_diff`` or, for
    ``bayes``, ``p_a_better``), ``method`` needed only with ``bayes``.
    ``width`` in inches, :data:`FIGURE_WIDTH` by default; the height follows
    the number of systems (:func:`figure_height`). ``source``, the ratings
    file's name, heads the title. Raises SweepError for a missing column or
    setting, a system listed twice, or a pair naming an unknown system or
    given twice.
    """
    estimators: tuple[str, ...] = ()
    intervals = None
    if "estimator" in systems.columns:
        estimators, intervals, systems, pairs = _by_estimator(systems, pairs, settings)
    _check_inputs(systems, pairs, settings, bool(estimators))
    width = FIGURE_WIDTH if width is None else float(width)
    names = systems["system"].astype(str).tolist()
    n = len(names)
    p, significant = probability_matrix(systems, pairs, settings)
    fig = _blank_figure(width, MIN_HEIGHT)
    plan = _column_plan(names, room=0.40 * width * 72.0 / n)
    rotated = max(_text_size(x, plan[1])[0] for x in names) / 72.0 if plan[0] == "up" else 0
    rows = n * (1.0 + 0.3 * (len(estimators) - 1)) if len(estimators) > 1 else n
    fig.set_size_inches(width, figure_height(rows, rotated))
    grid = fig.add_gridspec(1, 2, width_ratios=(1.0, 1.05))
    forest = fig.add_subplot(grid[0])
    matrix = fig.add_subplot(grid[1])
    for ax in (forest, matrix):
        _style(ax)
    if intervals is None:
        _forest(forest, systems, settings)
    else:
        _forest_by_estimator(forest, intervals, settings)
    image = _matrix(matrix, p)
    _mark_significant(matrix, significant)
    z_test = bool(estimators) and not any(map(is_posterior, estimators))
    label = Z_TEST_LABEL if z_test else None
    _colorbar(fig, matrix, image, settings, tall=fig.get_figheight() > 4.5, label=label)
    note = _significance_note(settings)
    _name_columns(
        matrix, names, plan, note.replace("significant", "z-test significant") if z_test else note
    )
    title = comparison_title(settings, source, estimators)
    fig.suptitle(_title_lines(title, FONT, 0.96 * width * 72.0), fontsize=FONT)
    _fit_xlabels(fig, (forest, matrix))
    _name_rows(fig, forest, names)
    for axis in (forest.yaxis, matrix.xaxis, matrix.yaxis):
        _hide_overlaps(fig, axis)
    _annotate(fig, matrix, p)
    return fig


def plot_comparison(
    systems: pd.DataFrame,
    pairs: pd.DataFrame,
    settings: Mapping[str, Any],
    out: str | pathlib.Path,
    source: str | None = None,
) -> pathlib.Path:
    """Draw :func:`comparison_figure` and save it to ``out``; returns ``out`` as a Path.

    The format follows the suffix (``.png`` at :data:`DPI`, ``.pdf``, ``.svg``, …,
    whatever matplotlib writes; else SweepError naming ``-o`` and the allowed
    suffixes); the file is saved uncropped, so it is exactly the figure's
    width, and its directory is created when missing. ``source`` (the ratings
    file's name) heads the title.
    """
    path = check_image_path(out)
    fig = comparison_figure(systems, pairs, settings, source=source)
    return save_figure(fig, path)  # its directory made, whole or not at all
