"""Surface → a figure for a paper: a heatmap over two axes, or lines along one axis.

::

    plot_surface(surface, "eps", where=["alpha=0.6", "rho=0.7", "eta=0.7", "gamma=0.05"],
                 rows="n_phi", cols="n_m", out="eps.png")
    plot_surface(surface, "eps", where=..., x="n_m", lines="n_phi", out="eps_lines.pdf")

Cells and points are chosen exactly as :func:`sweep.display.tables.pivot_surface`
chooses them (:func:`sweep.display.tables.select_cells`), so a figure and the table
printed from the same options agree. Every figure is one paper column wide
(:data:`COLUMN_WIDTH`) with 7–8 pt text, titled with the settings its rows
share, and saved uncropped, so the file is exactly that wide: at :data:`DPI`
for a raster suffix (``.png``), as vectors for ``.pdf``, ``.svg`` or ``.eps``.
The planner's frontier (:mod:`sweep.plan.figure`) and the comparison's figure
(:mod:`sweep.compare.figure`) are drawn with the helpers here.
Matplotlib is imported inside the functions and drawn on a bare Agg canvas:
importing this module is cheap and pyplot's global figure list is never touched.
"""

from __future__ import annotations

import itertools
import math
import pathlib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from binmetric_sweep.kernels.estimators import POSTERIOR, is_posterior
from binmetric_sweep.sweep.display.tables import (
    axis_columns,
    format_value,
    mark_table,
    pivot_surface,
    select_cells,
    surface_interval,
    undercovered,
)
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.paths import check_file_path, writing
from binmetric_sweep.sweep.storage.columns import (
    INTEGER_COLUMNS,
    INTERVAL_VALUES,
    LABELS,
    SIZE_AXES,
    SYMBOLS,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure


__all__ = [
    "check_image_path",
    "hide_overlapping_ticklabels",
    "legend_below",
    "log_ticks",
    "new_figure",
    "rate_phrases",
    "style_axes",
    "tick_number",
    "COLUMN_WIDTH",
    "DPI",
    "LABELS",
    "SYMBOLS",
    "SIZE_AXES",
    "cell_format",
    "colour_scale",
    "format_size",
    "label",
    "plot_surface",
    "save_figure",
    "setting_phrases",
    "surface_figure",
    "wrap_phrases",
]

COLUMN_WIDTH = 3.4
"""Figure width in inches: one column of a two-column paper (3.3–3.5 in)."""

DPI = 300
"""Resolution of raster files (dots per inch), enough for print."""

FONT = 8
"""Point size of titles and axis labels."""

SMALL = 7
"""Point size of tick labels, legends, cell labels and notes."""

_MIN_CELL_FONT = 4.5
"""Smallest point size worth printing a heatmap cell's value in."""

# Each column's figure label (LABELS: axes' labels, other names show as-is), its symbol
# for titles and legends (SYMBOLS) and whether it is a sample size (SIZE_AXES: logarithmic
# by default in a line plot, ticks written 2.5k, 100k, 1M) are the column registry's
# (sweep.storage.columns), imported above and exported from here as before.

_METHODS = {"quadrature": "quadrature", "nuts": "NUTS"}


def label(name: str, frame: pd.DataFrame | None = None) -> str:
    """The readable label for an axis or value column (the name itself when unknown); of a
    value of a categorical sweep's rows (``frame`` with a ``theta`` column), its estimand θ."""
    text = LABELS.get(name, name)
    if frame is not None and "theta" in frame.columns:
        text = text.replace(r"\alpha", r"\theta").replace("α", "θ")
    return text


def _symbol(name: str) -> str:
    return SYMBOLS.get(name, name)


def format_size(value: float) -> str:
    """A sample size as a short tick or legend text: ``0``, ``250``, ``2.5k``, ``100k``, ``1M``."""
    number = float(value)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(number) >= scale:
            return f"{number / scale:.3g}{suffix}"
    return f"{number:.3g}"


def _axis_text(name: str, value: object) -> str:
    """A tick or legend text for one value of axis ``name`` (sizes short, see format_size)."""
    if name in SIZE_AXES and isinstance(value, int | float | np.integer | np.floating):
        if not (isinstance(value, float | np.floating) and math.isnan(value)):
            return format_size(float(value))
    return format_value(value)


# --- titles -----------------------------------------------------------------------------


def _single(frame: pd.DataFrame, name: str, shown: Collection[str]) -> tuple[bool, object]:
    """(True, v) when column ``name`` is not ``shown`` and holds v (None: null) in every row."""
    if name in shown or name not in frame.columns or len(frame) == 0:
        return False, None
    column = frame[name]
    if column.isna().all():
        return True, None
    if column.isna().any() or column.nunique() != 1:
        return False, None
    value = column.dropna().iloc[0]
    return True, value.item() if isinstance(value, np.generic) else value


#: A categorical surface's settings named in a title where fixed, after α, ρ, η (absent
#: from a binary surface's columns, whose titles they leave as they were).
_JUDGE_SETTINGS = (
    *("theta", "shares", "accuracy", "tie_rate", "position_bias"),
    *("off_by_one", "off_by_more", "confusion", "judges", "copy_rate", "judge_model"),
)


def setting_phrases(frame: pd.DataFrame, shown: Collection[str] = ()) -> list[str]:
    """Mathtext phrases naming each setting held fixed in ``frame``'s rows, ``shown`` axes aside.

    In this order, where fixed: the estimator (``bayes (NUTS)``: the method
    only for the posterior, which alone it computes); α; ρ and η (``ρ = η =
    0.7`` when equal, ``η = ρ`` when they vary together, ``(known)`` when
    known numbers); a categorical surface's θ and judges (:data:`_JUDGE_SETTINGS`);
    N_Φ and N_M; the paired design (``N_ρη = N_Φ`` shared, or
    a separate set's N_ρη and ψ); γ; power; counts; the posterior's method
    when the estimators shown include ``bayes`` (or the rows have no
    estimator column, as a bayes-only surface of an older version);
    replicates when more than one. Values are read from the rows, not from
    the filters.
    """

    def fixed(name: str) -> tuple[bool, object]:
        return _single(frame, name, shown)

    has_method, method = fixed("method")
    method_text = _METHODS.get(str(method), str(method)) if has_method and method else None
    has_estimator, estimator = fixed("estimator")
    phrases: list[str] = []
    if has_estimator and estimator is not None:
        bayes = is_posterior(str(estimator)) and method_text
        phrases.append(f"{estimator} ({method_text})" if bayes else str(estimator))
        method_text = None
    elif (
        "estimator" in frame.columns and not frame["estimator"].astype(str).map(is_posterior).any()
    ):
        method_text = None  # no posterior among the rows: the method computed none of them
    elif "estimator" in frame.columns and method_text:
        method_text = f"{POSTERIOR.name} by {method_text}"
    has_alpha, alpha = fixed("alpha")
    if has_alpha:
        phrases.append(f"{_symbol('alpha')} = {format_value(alpha)}")
    has_known, known = fixed("rho_eta_known")
    rates = {n: v for n, (ok, v) in (("rho", fixed("rho")), ("eta", fixed("eta"))) if ok}
    phrases += _tied_rates(frame, rates, shown)
    phrases += rate_phrases(rates, known=has_known and bool(known))
    for name in _JUDGE_SETTINGS:  # a categorical surface's estimand and judges
        has, value = fixed(name)
        if isinstance(value, str):
            phrases.append(f"{_symbol(name)} {value}")
        elif has and value is not None:  # 3 digits: the default tie rate is ⅓ to 12
            phrases.append(f"{_symbol(name)} = {float(value):.3g}")
    for size in ("n_phi", "n_m"):
        has, value = fixed(size)
        if has and value is not None:
            phrases.append(f"{_symbol(size)} = {_axis_text(size, value)}")
    if not (has_known and known):
        phrases += _design_phrases(fixed)
    for name, text in (("gamma", "{} = {}"), ("power", "power {1}"), ("counts", "{1} counts")):
        has, value = fixed(name)
        if has and value is not None:
            phrases.append(text.format(_symbol(name), format_value(value)))
    if method_text:
        phrases.append(method_text)
    has_replicates, replicates = fixed("replicates")
    if has_replicates and replicates is not None and int(replicates) > 1:
        phrases.append(f"{int(replicates)} replicates")
    return phrases


def _tied_rates(
    frame: pd.DataFrame, rates: Mapping[str, object], shown: Collection[str]
) -> list[str]:
    """``η = ρ`` when ρ and η vary (one on an axis of the figure) but are equal in every row."""
    if len(rates) == 2 or not {"rho", "eta"} <= set(frame.columns) or len(frame) == 0:
        return []
    if {"rho", "eta"} <= set(shown):
        return []
    if not (frame["rho"] == frame["eta"]).fillna(False).all():
        return []
    rho, eta = _symbol("rho"), _symbol("eta")
    return [f"{rho} = {eta}" if "eta" in shown else f"{eta} = {rho}"]


def rate_phrases(rates: Mapping[str, object], known: bool) -> list[str]:
    """ρ and η as phrases (``ρ = η = 0.7`` when equal), marked ``(known)`` when they are."""
    if len(rates) == 2 and rates["rho"] == rates["eta"]:
        phrases = [f"{_symbol('rho')} = {_symbol('eta')} = {format_value(rates['rho'])}"]
    else:
        phrases = [f"{_symbol(n)} = {format_value(v)}" for n, v in rates.items()]
    if known and phrases:
        phrases[-1] += " (known)"
    elif known:
        phrases.append(SYMBOLS["rho_eta_known"])
    return phrases


def _design_phrases(fixed: Callable[[str], tuple[bool, object]]) -> list[str]:
    """The paired design: shared (N_ρη = N_Φ), or a separate set's N_ρη and ψ."""
    has_known, known = fixed("rho_eta_known")
    has_shared, shared = fixed("shared_paired")
    if has_shared and shared:
        return [r"$N_{\rho\eta} = N_\Phi$"]
    if not (has_known and has_shared):
        return []
    phrases = []
    has_pairs, pairs = fixed("n_rho_eta")
    if has_pairs and pairs is not None:
        phrases.append(f"{_symbol('n_rho_eta')} = {_axis_text('n_rho_eta', pairs)}")
    has_psi, psi = fixed("psi")
    if has_psi and psi is not None:
        phrases.append(f"{_symbol('psi')} = {format_value(psi)}")
    return phrases


def _visible_length(text: str) -> int:
    """Roughly how many characters ``text`` shows once its mathtext is rendered."""
    shown = re.sub(r"\\[A-Za-z]+", "x", text)
    return len(re.sub(r"[${}_^]", "", shown))


def wrap_phrases(head: str, phrases: Sequence[str], width: float) -> str:
    """``head`` then ``phrases`` joined by commas, broken into lines that fit ``width`` inches."""
    limit = _line_limit(width)
    lines: list[str] = []
    line = head
    for phrase in phrases:
        joint = ": " if line == head and head else ", "
        if not line:
            line = phrase
        elif _visible_length(line + joint + phrase) <= limit:
            line += joint + phrase
        else:
            lines.append(line + ("," if joint == ", " else ":"))
            line = phrase
    lines.append(line)
    return "\n".join(lines)


# --- figure, axes, saving ---------------------------------------------------------------


def new_figure(width: float, height: float) -> Figure:
    """An empty figure of ``width`` × ``height`` inches, laid out by constrained layout, on Agg."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    fig.get_layout_engine().set(w_pad=0.02, h_pad=0.02)
    FigureCanvasAgg(fig)
    return fig


def style_axes(ax: Axes) -> None:
    """Paper-column text sizes and light lines on ``ax``."""
    ax.tick_params(labelsize=SMALL, length=2.5, width=0.6, pad=2)
    ax.tick_params(which="minor", length=1.5, width=0.5)
    ax.xaxis.label.set_fontsize(FONT)
    ax.yaxis.label.set_fontsize(FONT)
    for spine in ax.spines.values():
        spine.set_linewidth(0.6)


def _check_out(out: str | pathlib.Path, canvas) -> pathlib.Path:
    path = pathlib.Path(out)
    suffix = path.suffix.lower().lstrip(".")
    supported = canvas.get_supported_filetypes()
    if suffix not in supported:
        raise SweepError(
            f"--out {str(path)!r} has no known image suffix; choose one of: "
            f"{', '.join('.' + s for s in sorted(supported))}"
        )
    if not path.parent.is_dir():
        raise SweepError(f"--out {str(path)!r}: directory {str(path.parent)!r} does not exist")
    return check_file_path(path, "--out")


def save_figure(fig: Figure, path: str | pathlib.Path, option: str = "-o") -> pathlib.Path:
    """Write ``fig`` to ``path`` (format from the suffix, :data:`DPI` for rasters) and release it.

    Not cropped (no ``bbox_inches="tight"``): the file keeps the figure's width,
    so a paper can include it at 100 % and its text keeps its point size. Whole
    or not at all: saved under ``path``'s own name in a scratch directory beside
    it (the bytes a direct save writes), then renamed over it; a failed write (a
    read-only mount, a full disk) is one :class:`SweepError` line naming ``option``.
    """
    import os
    import shutil
    import tempfile

    path = pathlib.Path(path)
    try:
        with writing(option, path):
            path.parent.mkdir(parents=True, exist_ok=True)
            scratch = tempfile.mkdtemp(prefix=".binmetric-sweep-figure-", dir=path.parent)
            try:
                fig.savefig(os.path.join(scratch, path.name), dpi=DPI)
                os.replace(os.path.join(scratch, path.name), path)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    finally:
        fig.clear()
    return path


def _shown_ticklabels(axis, index: int) -> list:
    """The non-empty, visible tick labels of ``axis`` whose ticks lie in its view."""
    low, high = sorted(axis.get_view_interval())
    return [
        t
        for t in axis.get_ticklabels(which="both")
        if t.get_visible() and t.get_text() and low <= t.get_position()[index] <= high
    ]


def hide_overlapping_ticklabels(fig: Figure, ax: Axes, rotate_names: bool = False) -> None:
    """Hide any tick label that would overlap the one kept before it (after a layout pass).

    With ``rotate_names``, x labels that would overlap are turned 45° instead, every one
    kept: names (estimators) cannot be read off their neighbours as numbers can, and
    slanted labels lie side by side (their boxes overlap, their text does not).
    """
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    axes = [(ax.xaxis, 0, "x0", "x1"), (ax.yaxis, 1, "y0", "y1")]
    if rotate_names and _overlapping(_boxes(ax.xaxis, 0, renderer), "x0", "x1"):
        for text in ax.get_xticklabels():
            text.set(rotation=45, horizontalalignment="right", rotation_mode="anchor")
        axes = axes[1:]
    for axis, index, lo, hi in axes:
        end = -math.inf
        for box, text in sorted(_boxes(axis, index, renderer), key=lambda b: getattr(b[0], lo)):
            if getattr(box, lo) < end + 2:
                text.set_visible(False)
            else:
                end = getattr(box, hi)


def _boxes(axis, index: int, renderer) -> list:
    """(window extent, text) of each tick label ``axis`` shows."""
    return [(t.get_window_extent(renderer), t) for t in _shown_ticklabels(axis, index)]


def _overlapping(boxes: list, lo: str, hi: str) -> bool:
    """Whether any two of ``boxes``, in order along the axis, come within 2 pixels."""
    spans = sorted((getattr(box, lo), getattr(box, hi)) for box, _ in boxes)
    return any(start < end + 2 for (_, end), (start, _) in itertools.pairwise(spans))


# --- heatmap ----------------------------------------------------------------------------


def colour_scale(cells: np.ndarray) -> tuple[Normalize, str]:
    """The colour norm for a heatmap's cells and the colorbar's ``extend``.

    Positive values spanning more than a decade get a logarithmic norm over
    their whole range: a size sweep's ε runs from 1 (no ratings) to about 0.01,
    and equal ratios get equal colour steps, so 0.013 and 0.13 differ as much
    as 0.13 and 1. Otherwise the limits are the quartiles ± 3 interquartile
    ranges, clipped to the data: a few extreme cells (N_Φ = 0's coverage of 1
    or bias of −0.1) take the end colours, the colorbar's arrows mark that they
    lie beyond, and the rest of the cells spread over the whole scale.
    """
    from matplotlib.colors import LogNorm, Normalize

    finite = cells[np.isfinite(cells)]
    if finite.size == 0:
        return Normalize(0.0, 1.0), "neither"
    low, high = float(finite.min()), float(finite.max())
    if low > 0 and high > 10 * low:
        return LogNorm(low, high), "neither"
    q1, q3 = np.percentile(finite, [25, 75])
    vmin, vmax = max(low, q1 - 3 * (q3 - q1)), min(high, q3 + 3 * (q3 - q1))
    if vmax <= vmin:
        vmin, vmax = low, high
    if vmax <= vmin:
        pad = 0.5 if vmin == 0 else 0.05 * abs(vmin)
        return Normalize(vmin - pad, vmax + pad), "neither"
    extend = {(False, False): "neither", (True, False): "min", (False, True): "max"}
    return Normalize(vmin, vmax), extend.get((low < vmin, high > vmax), "both")


def _minus(text: str) -> str:
    """``text`` with a typographic minus sign (as matplotlib's own tick labels have)."""
    return text.replace("-", "\N{MINUS SIGN}")


def _significant(x: float, digits: int = 2) -> str:
    """``x`` in fixed point with ``digits`` significant digits: 1.0, 0.73, 0.013, 120."""
    if x == 0:
        return "0"
    rounded = float(f"{x:.{digits - 1}e}")
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return _minus(f"{rounded:.{decimals}f}")


def cell_format(norm: Normalize, whole: bool) -> tuple[Callable[[float], str], int]:
    """How to write every cell of one heatmap, so that all carry the same precision.

    Returns the formatter and the power of ten p its texts are in units of
    (the value × 10^p is written; 0 but for small linear ranges). Counts as
    integers; on a logarithmic scale two significant digits each (a relative
    precision, as the colours show ratios); on a linear scale a fixed number
    of decimals that gives the colour range two significant digits, and when
    that range is below 0.01 (biases, Monte Carlo errors) the values in units
    of 10^−p with one decimal, so that ``-0.0017`` reads ``-1.7``.
    """
    from matplotlib.colors import LogNorm

    if whole:
        return (lambda x: f"{x:.0f}"), 0
    if isinstance(norm, LogNorm):
        return _significant, 0
    span = float(norm.vmax - norm.vmin)
    decimals = min(12, max(0, 1 - math.floor(math.log10(span)))) if span > 0 else 3
    power = decimals - 1 if decimals >= 4 else 0

    def fixed(x: float) -> str:
        text = f"{x * 10.0**power:.{decimals - power}f}"
        return _minus(text[1:] if re.fullmatch(r"-0\.?0*", text) else text)

    return fixed, power


def _heatmap_size(width: float, n_rows: int) -> tuple[float, float]:
    """The heatmap's figure size: ``width`` wide, 0.24 in a row plus title and labels, at most
    1.3 ``width`` high."""
    return width, min(1.3 * width, max(2.0, 1.15 + 0.24 * n_rows))


def _heatmap(
    fig: Figure,
    frame: pd.DataFrame,
    value: str,
    rows: str,
    cols: str,
    marks: pd.DataFrame | None = None,
) -> None:
    """Draw the selected rows as a heatmap, ``rows`` axis down and ``cols`` across.

    Cells ``marks`` marks (:func:`sweep.display.tables.mark_table`) are hatched.
    """
    from matplotlib import colormaps

    table = pivot_surface(frame, rows, cols, value)
    fig.set_size_inches(*_heatmap_size(fig.get_figwidth(), len(table.index)))
    cells = table.to_numpy(dtype=float, na_value=np.nan)
    norm, extend = colour_scale(cells)
    cmap = colormaps["viridis"].with_extremes(bad="0.85")
    ax = fig.add_subplot()
    style_axes(ax)
    image = ax.imshow(
        np.ma.masked_invalid(cells), cmap=cmap, norm=norm, aspect="auto", interpolation="nearest"
    )
    ax.set_xticks(range(len(table.columns)), [_axis_text(cols, c) for c in table.columns])
    ax.set_yticks(range(len(table.index)), [_axis_text(rows, r) for r in table.index])
    ax.tick_params(length=0)
    ax.set_xlabel(label(cols))
    ax.set_ylabel(label(rows))
    finite = cells[np.isfinite(cells)]
    whole = ptypes.is_integer_dtype(frame[value]) or (
        value in INTEGER_COLUMNS and bool(np.all(finite == np.round(finite)))
    )
    fmt, power = cell_format(norm, whole)
    _colorbar(fig, ax, image, value, extend, power, label(value, frame))
    names = not ptypes.is_numeric_dtype(table.columns.dtype)
    hide_overlapping_ticklabels(fig, ax, rotate_names=names)
    _annotate(fig, ax, cells, norm, cmap, fmt)
    if marks is not None:
        _hatch(ax, np.asarray(marks, dtype=bool), cells, norm, cmap)


def _contrast(x: float, norm, cmap) -> str:
    """Black or white, whichever reads better on the colour of value ``x``."""
    if math.isnan(x):
        return "0.35"
    r, g, b, _ = cmap(norm(x))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _hatch(ax: Axes, marks: np.ndarray, cells: np.ndarray, norm, cmap) -> None:
    """Hatch the marked cells (in the colour of their text), under the cells' values."""
    from matplotlib.patches import Rectangle

    for (i, j), flag in np.ndenumerate(marks):
        if flag:
            ax.add_patch(
                Rectangle(
                    (j - 0.5, i - 0.5),
                    1.0,
                    1.0,
                    fill=False,
                    hatch="////",
                    edgecolor=_contrast(cells[i, j], norm, cmap),
                    linewidth=0.0,
                    alpha=0.55,
                    zorder=1.5,
                )
            )


def _colorbar(fig: Figure, ax: Axes, image, value: str, extend: str, power: int, text: str) -> None:
    """A slim colorbar labelled ``text``, the value's label (in units of 10^−``power``, as
    the cells are); plain-number ticks on a logarithmic norm."""
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FuncFormatter

    bar = fig.colorbar(image, ax=ax, extend=extend, fraction=0.06, pad=0.03, aspect=25)
    unit = rf" ($\times 10^{{{-power}}}$)" if power else ""
    bar.set_label(text + unit, fontsize=FONT)
    bar.ax.tick_params(labelsize=SMALL, length=2, width=0.5)
    bar.outline.set_linewidth(0.5)
    if isinstance(image.norm, LogNorm):
        log_ticks(bar.ax.yaxis, image.norm.vmin, image.norm.vmax, value)
    elif power:
        bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _minus(f"{v * 10.0**power:g}")))


def _annotate(fig: Figure, ax: Axes, cells: np.ndarray, norm, cmap, fmt) -> None:
    """Write each cell's value in it, black or white for contrast, when the cells are big enough.

    The point size fits the longest text in a cell (at most :data:`SMALL`); below
    :data:`_MIN_CELL_FONT` nothing is written, as that would not be readable.
    """
    from matplotlib.font_manager import FontProperties

    texts = [["—" if math.isnan(x) else fmt(x) for x in row] for row in cells]
    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=SMALL)
    widest = max(
        renderer.get_text_width_height_descent(t, font, ismath=False)[0]
        for t in {t for row in texts for t in row}
    )
    box = ax.get_window_extent(renderer)
    cell_w, cell_h = box.width / cells.shape[1], box.height / cells.shape[0]
    size = min(SMALL, SMALL * 0.85 * cell_w / widest, 0.7 * cell_h * 72.0 / fig.dpi)
    if size < _MIN_CELL_FONT:
        return
    for (i, j), x in np.ndenumerate(cells):
        color = _contrast(x, norm, cmap)
        ax.text(j, i, texts[i][j], ha="center", va="center", fontsize=size, color=color, zorder=3)


# --- log axes ---------------------------------------------------------------------------


def log_ticks(axis, low: float, high: float, name: str, zero: bool = False) -> None:
    """Ticks for a logarithmic ``axis`` over [low, high] (and at 0 when ``zero``).

    Labelled ticks at the powers of ten, or at 1, 2 and 5 times them when the
    range holds fewer than three powers of ten; unlabelled minor ticks at the
    other integer multiples. Sizes are written short (``10k``), other values plainly.
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    decades = [10.0**k for k in range(first, last + 1)]
    inside = [d for d in decades if low * (1 - 1e-9) <= d <= high * (1 + 1e-9)]
    subs = (1,) if len(inside) >= 3 else (1, 2, 5)
    major = [m * d for d in decades for m in subs]
    minor = [m * d for d in decades for m in range(2, 10) if m not in subs]
    axis.set_major_locator(FixedLocator(([0.0] if zero else []) + major))
    axis.set_minor_locator(FixedLocator(minor))
    axis.set_major_formatter(FuncFormatter(lambda v, _: tick_number(name, v)))
    axis.set_minor_formatter(NullFormatter())


def tick_number(name: str, value: float) -> str:
    """A tick text: sizes short (``2.5k``), other values plainly, powers of ten far from 1."""
    if value == 0:
        return "0"
    if name in SIZE_AXES:
        return format_size(value)
    if 1e-3 <= abs(value) < 1e4:
        return _minus(f"{value:g}")
    mantissa, exponent = f"{value:.2e}".split("e")
    power = rf"10^{{{int(exponent)}}}"
    lead = float(mantissa)
    return rf"${power}$" if lead == 1 else rf"${lead:g}\times{power}$"


def _break_marks(ax: Axes, at: float) -> None:
    """Two short slanted strokes across the x axis at data ``at``: the scale changes there."""
    from matplotlib.transforms import ScaledTranslation

    for points in (-1.6, 1.6):
        shift = ScaledTranslation(points / 72, 0, ax.figure.dpi_scale_trans)
        ax.plot(
            [at],
            [0.0],
            marker=[(-0.5, -1.0), (0.5, 1.0)],
            markersize=5,
            color="black",
            mew=0.7,
            ls="none",
            clip_on=False,
            transform=ax.get_xaxis_transform() + shift,
        )


def _auto_log_x(xs: np.ndarray, x: str) -> bool:
    """The automatic ``log_x``: a sample size whose positive values span at least a decade."""
    positive = xs[xs > 0]
    return x in SIZE_AXES and positive.size > 0 and positive.max() >= 10 * positive.min()


def _x_scale(ax: Axes, xs: np.ndarray, x: str, log_x: bool) -> None:
    """Logarithmic x when ``log_x``; zeros then sit one decade left of the first power of ten.

    With zeros the axis is symlog, linear over [0, t] for t the largest power
    of ten not above the smallest positive value, that stretch drawn one
    decade wide and marked by break strokes; only 0 is labelled in it.
    """
    positive = xs[xs > 0]
    if not log_x:
        if x in SIZE_AXES:
            from matplotlib.ticker import FuncFormatter, MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_number(x, v)))
        return
    if positive.size == 0:
        raise SweepError(f"--log-x needs some --x {x!r} values above 0; they are all ≤ 0")
    low, high = float(positive.min()), float(positive.max())
    zero = bool((xs <= 0).any())
    if zero:
        threshold = 10.0 ** math.floor(math.log10(low))
        ax.set_xscale("symlog", linthresh=threshold, linscale=1.0)
        _break_marks(ax, 0.55 * threshold)
    else:
        ax.set_xscale("log")
    log_ticks(ax.xaxis, low, high, x, zero=zero)


def _y_scale(ax: Axes, ys: np.ndarray, value: str, log_y: bool | None) -> None:
    """Logarithmic y when ``log_y``, or (None) when the values are positive and span > a decade."""
    finite = ys[np.isfinite(ys)]
    positive = finite.size > 0 and bool(finite.min() > 0)
    if log_y is None:
        log_y = positive and finite.max() > 10 * finite.min()
    if not log_y:
        return
    if not positive:
        raise SweepError(f"--log-y needs every --value {value!r} above 0; some are ≤ 0")
    ax.set_yscale("log")
    log_ticks(ax.yaxis, float(finite.min()), float(finite.max()), value)


# --- lines ------------------------------------------------------------------------------


def _line_label(name: str, key: object) -> str:
    """A legend text for the line of ``name`` = ``key``: ``$N_\\Phi$ = 2.5k``."""
    if key is None and name == "n_rho_eta":
        return SYMBOLS["rho_eta_known"]
    if name == "estimator":
        return str(key)
    return f"{_symbol(name)} = {_axis_text(name, key)}"


def _palette(keys: list[object]):
    """Colours for the lines: ordered (viridis) for numbers, distinct (tab10) otherwise."""
    from matplotlib import colormaps

    numeric = all(
        isinstance(k, int | float | np.integer | np.floating) and not isinstance(k, bool)
        for k in keys
        if k is not None
    )
    if (numeric and len(keys) > 2) or len(keys) > 10:
        ramp = colormaps["viridis"]
        return [ramp(0.85 * k / max(1, len(keys) - 1)) for k in range(len(keys))]
    return [colormaps["tab10"](k) for k in range(len(keys))]


def legend_below(fig: Figure, ax: Axes, width: float) -> None:
    """The lines' legend below the axes, in as many columns as fit the figure's width."""
    handles, texts = ax.get_legend_handles_labels()
    entry = max(_visible_length(t) for t in texts) * 0.56 * SMALL + 2.6 * SMALL
    ncols = max(1, min(len(texts), int(width * 72 * 0.95 // entry)))
    rows = math.ceil(len(texts) / ncols)
    ncols = math.ceil(len(texts) / rows)
    # Matplotlib fills a legend column by column; this order reads row by row.
    order = [r * ncols + c for c in range(ncols) for r in range(rows) if r * ncols + c < len(texts)]
    fig.legend(
        [handles[i] for i in order],
        [texts[i] for i in order],
        loc="outside lower center",
        ncols=ncols,
        fontsize=SMALL,
        frameon=False,
        handlelength=1.6,
        handletextpad=0.4,
        columnspacing=1.0,
        borderaxespad=0.2,
    )


def _lines(
    fig: Figure,
    frame: pd.DataFrame,
    value: str,
    x: str,
    lines: str | None,
    log_x: bool | None,
    log_y: bool | None,
    marked: np.ndarray | None = None,
) -> list[str]:
    """Draw the selected rows as lines along ``x``; returns notes for under the title.

    Points whose row ``marked`` marks (:func:`sweep.display.tables.undercovered`) are hollow.
    """
    notes: list[str] = []
    marked = np.zeros(len(frame), dtype=bool) if marked is None else np.asarray(marked, bool)
    xs = frame[x].to_numpy(dtype=float, na_value=np.nan)
    if np.isnan(xs).any():
        missing = int(np.isnan(xs).sum())
        notes.append(f"{missing} point{'s' * (missing > 1)} with no {_symbol(x)} left out")
        keep = ~np.isnan(xs)
        frame, xs, marked = frame.loc[keep], xs[keep], marked[keep]
    ax = fig.add_subplot()
    style_axes(ax)
    ys = frame[value].to_numpy(dtype=float, na_value=np.nan)
    style = {"marker": "o", "markersize": 3, "linewidth": 1.0}

    def line(mask: np.ndarray, color, **more) -> None:
        order = np.argsort(xs[mask], kind="stable")
        ax.plot(xs[mask][order], ys[mask][order], color=color, **style, **more)
        hollow = mask & marked
        if hollow.any():
            ax.plot(
                xs[hollow],
                ys[hollow],
                ls="none",
                marker="o",
                markersize=3.6,
                markerfacecolor="white",
                markeredgecolor=color,
                markeredgewidth=0.9,
                zorder=3,
            )

    if lines is None:
        line(np.ones(len(xs), dtype=bool), "C0")
    else:
        groups = frame[lines]
        keys = sorted(groups.dropna().unique().tolist()) + ([None] if groups.isna().any() else [])
        for key, color in zip(keys, _palette(keys), strict=True):
            mask = groups.isna() if key is None else (groups == key).fillna(False)
            line(mask.to_numpy(bool), color, label=_line_label(lines, key))
    _x_scale(ax, xs, x, _auto_log_x(xs, x) if log_x is None else log_x)
    _y_scale(ax, ys, value, log_y)
    ax.set_xlabel(label(x))
    ax.set_ylabel(label(value, frame))
    ax.grid(True, which="major", linewidth=0.4, alpha=0.35)
    if lines is not None:
        legend_below(fig, ax, fig.get_figwidth())
    return notes


def _numeric(column: pd.Series) -> bool:
    return ptypes.is_numeric_dtype(column) and not ptypes.is_bool_dtype(column)


def _check_mode(rows, cols, x, lines, log_x, log_y) -> str:
    if x is not None and (rows is not None or cols is not None):
        given = "--rows" if rows is not None else "--cols"
        raise SweepError(
            f"--x {x!r} cannot be combined with {given}; give --rows and --cols for a heatmap "
            "or --x (and optionally --lines) for lines"
        )
    if x is None:
        if lines is not None:
            raise SweepError(f"--lines {lines!r} needs --x; give --x for a line plot")
        if log_x is not None:
            raise SweepError("--log-x applies to a line plot only; give --x for a line plot")
        if log_y is not None:
            raise SweepError("--log-y applies to a line plot only; give --x for a line plot")
        if rows is None and cols is None:
            raise SweepError(
                "--rows/--cols/--x: none given; give --rows and --cols for a heatmap "
                "or --x (and optionally --lines) for lines"
            )
        if rows is None:
            raise SweepError(
                f"--rows is missing; a heatmap needs --rows as well as --cols {cols!r}"
            )
        if cols is None:
            raise SweepError(
                f"--cols is missing; a heatmap needs --cols as well as --rows {rows!r}"
            )
        return "heatmap"
    return "lines"


def surface_figure(
    surface: pd.DataFrame,
    value: str,
    *,
    where: Mapping[str, object] | Sequence[str] | None,
    rows: str | None = None,
    cols: str | None = None,
    x: str | None = None,
    lines: str | None = None,
    log_x: bool | None = None,
    log_y: bool | None = None,
    title: str | None = None,
    width: float = COLUMN_WIDTH,
    interval: float | None = None,
) -> Figure:
    """The figure :func:`plot_surface` saves (same arguments but ``out``), drawn but not saved."""
    mode = _check_mode(rows, cols, x, lines, log_x, log_y)
    fig = new_figure(width, 0.8 * width)
    if mode == "heatmap":
        frame = select_cells(surface, {"--rows": rows, "--cols": cols}, value, where)
        shown = (rows, cols)
    else:
        if x in surface.columns and not _numeric(surface[x]):
            numeric = [a for a in axis_columns(surface) if _numeric(surface[a])]
            raise SweepError(f"--x {x!r} is not numeric; choose one of: {', '.join(numeric)}")
        axes = {"--x": x} if lines is None else {"--x": x, "--lines": lines}
        frame = select_cells(surface, axes, value, where)
        shown = (x, lines)
    if title is None:
        head = SYMBOLS.get(value, label(value, frame))
        title = wrap_phrases(head, setting_phrases(frame, shown), width)
    mark = "hatched" if mode == "heatmap" else "hollow"
    notes = [n for n in (_coverage_note(frame, value, mark, interval), _unfinished(surface)) if n]

    def heading(notes: list[str]) -> str:
        return "\n".join([title, *(_wrap_note(f"({n})", width) for n in notes)])

    if mode == "heatmap":
        fig.suptitle(heading(notes), fontsize=FONT)  # first: the cells' text fits what is left
        _heatmap(fig, frame, value, rows, cols, mark_table(frame, rows, cols, value, interval))
        return fig
    marked = undercovered(frame, interval) if value in INTERVAL_VALUES else None
    notes = _lines(fig, frame, value, x, lines, log_x, log_y, marked) + notes
    fig.suptitle(heading(notes), fontsize=FONT)
    hide_overlapping_ticklabels(fig, fig.axes[0])
    return fig


#: For a figure's note on marked cells: what too narrow an interval makes of each value.
_INVALID = {
    "eps": r"$\varepsilon$ not valid",
    "se_mean": "SE too small",
    "width_mean": "interval too narrow",
    "coverage": "interval too narrow",
}


def _coverage_note(
    frame: pd.DataFrame, value: str, mark: str, interval: float | None
) -> str | None:
    """The note under a figure's title on its marked cells
    (:func:`sweep.display.tables.undercovered`)."""
    if value not in INTERVAL_VALUES:
        return None
    marked = undercovered(frame, interval)
    if not marked.any():
        return None
    expected = (
        "counts" in frame.columns and (frame.loc[marked, "counts"].astype(str) == "expected").all()
    )
    if expected:
        why = r"interval misses the true $\alpha$"
    else:
        why = f"coverage far below {surface_interval(frame, interval):g}"
    return f"{mark}: {why}; {_INVALID[value]}"


def _unfinished(surface: pd.DataFrame) -> str | None:
    """``3 of 5 shards done: part of the sweep`` for the surface of an unfinished sweep."""
    shards, done = surface.attrs.get("shards"), surface.attrs.get("shards_done")
    if shards is None or done is None or done >= shards:
        return None
    return f"{done} of {shards} shards done: part of the sweep"


def _wrap_note(text: str, width: float) -> str:
    """``text`` broken at spaces into lines that fit ``width`` inches (mathtext as rendered)."""
    limit = _line_limit(width)
    lines = [""]
    for word in text.split(" "):
        joined = f"{lines[-1]} {word}" if lines[-1] else word
        if lines[-1] and _visible_length(joined) > limit:
            lines.append(word)
        else:
            lines[-1] = joined
    return "\n".join(lines)


def _line_limit(width: float) -> int:
    """Characters of title text that fit on one line of a figure ``width`` inches wide."""
    return max(20, int(width * 72 / (0.56 * FONT)))


def plot_surface(
    surface: pd.DataFrame,
    value: str,
    *,
    where: Mapping[str, object] | Sequence[str] | None,
    out: str | pathlib.Path,
    rows: str | None = None,
    cols: str | None = None,
    x: str | None = None,
    lines: str | None = None,
    log_x: bool | None = None,
    log_y: bool | None = None,
    title: str | None = None,
    width: float = COLUMN_WIDTH,
    interval: float | None = None,
) -> pathlib.Path:
    """Draw one value of the surface and save it to ``out``; returns ``out`` as a Path.

    Exactly one mode:

    - heatmap, ``rows`` and ``cols`` given: the table of
      :func:`~sweep.display.tables.pivot_surface` as coloured cells at categorical
      positions (``rows`` down, ascending), on the scale of :func:`colour_scale`
      (logarithmic for positive values spanning more than a decade, else
      robust limits with arrows for the cells beyond), each cell labelled with
      its value at one precision (:func:`cell_format`) where the cells are big
      enough to read it, a colorbar labelled with the value;
    - lines, ``x`` given: ``value`` against the numeric ``x`` axis, one line
      per value of ``lines`` (legend below, ``$N_\\Phi$ = 100``) when given.
      The x axis is logarithmic when ``log_x`` is true, or, when ``log_x`` is
      None, when ``x`` is a sample size (:data:`SIZE_AXES`) whose positive
      values span at least a decade; zeros then sit on a linear stretch one
      decade wide, labelled only at 0 and marked by break strokes. The y axis
      is logarithmic when ``log_y`` is true, or, when None, when every value
      is positive and they span more than a decade.

    ``where`` fixes the other axes as in :func:`~sweep.display.tables.filter_surface`
    and the same rule applies: every other axis that varies within a cell or
    point must be fixed. Where the value rests on the estimator's interval or
    SE (:data:`~sweep.display.tables.INTERVAL_VALUES`: ε, ``se_mean``, ``width_mean``,
    coverage) and the estimator covers far less often than the nominal
    ``interval`` (:func:`~sweep.display.tables.undercovered`; None: the sweep's, from
    ``surface.attrs``, else 0.95), its heatmap cells are hatched and its points
    hollow. The title is ``title``, or the value's symbol and every setting
    the selected rows share (:func:`setting_phrases`), then a line per note
    (points without an ``x`` value left out, what the hatched cells or hollow
    points are, ``3 of 5 shards done`` for an unfinished sweep). The figure
    is ``width`` inches wide (one paper column by default), saved by
    :func:`save_figure` and released. Raises SweepError for a bad option or
    mode (none or both of the modes, ``lines`` without ``x``, a log axis with
    nothing above 0, ``--out`` with an unknown suffix, a missing directory or one
    no file can be created in).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    _check_mode(rows, cols, x, lines, log_x, log_y)
    path = _check_out(out, FigureCanvasAgg(Figure()))
    fig = surface_figure(
        surface,
        value,
        where=where,
        rows=rows,
        cols=cols,
        x=x,
        lines=lines,
        log_x=log_x,
        log_y=log_y,
        title=title,
        width=width,
        interval=interval,
    )
    return save_figure(fig, path, option="--out")


def check_image_path(out: str | pathlib.Path) -> pathlib.Path:
    """``out`` as a path, if matplotlib can write its suffix and a file can be made there
    (missing directories above it are created when it is saved), else :class:`SweepError`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = pathlib.Path(out)
    supported = FigureCanvasAgg(Figure()).get_supported_filetypes()
    if path.suffix.lstrip(".").lower() not in supported:
        allowed = ", ".join(sorted(supported))
        raise SweepError(f"-o: {str(path)!r} has no supported image suffix; allowed: {allowed}")
    return check_file_path(path, "-o")
