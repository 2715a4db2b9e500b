"""Surface → a figure: a heatmap over two axes, or lines along one axis.

::

    plot_surface(surface, "eps", where=["alpha=0.6", "rho=0.7", "eta=0.7", "gamma=0.05"],
                 rows="n_phi", cols="n_m", out="eps.png")
    plot_surface(surface, "eps", where=..., x="n_m", lines="n_phi", out="eps_lines.png")

Cells and points are chosen exactly as :func:`sweep.tables.pivot_surface`
chooses them (:func:`sweep.tables.select_cells`), so a figure and the table
printed from the same options agree. Matplotlib is imported inside
:func:`plot_surface` and drawn on a bare Agg canvas: importing this module is
cheap and pyplot's global figure list is never touched.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.tables import (
    INTEGER_VALUES,
    axis_columns,
    format_value,
    pivot_surface,
    select_cells,
)

__all__ = ["LABELS", "SYMBOLS", "SIZE_AXES", "label", "plot_surface"]

SYMBOLS: dict[str, str] = {
    "alpha": r"$\alpha$",
    "rho": r"$\rho$",
    "eta": r"$\eta$",
    "psi": r"$\psi$",
    "n_phi": r"$N_\Phi$",
    "n_m": r"$N_M$",
    "n_rho_eta": r"$N_{\rho\eta}$",
    "gamma": r"$\gamma$",
    "power": "power",
    "rho_eta_known": r"$\rho,\eta$ known",
    "shared_paired": "shared paired set",
    "eps": r"$\varepsilon_\gamma$",
}
"""Short symbols for axes, used in titles and legends (matplotlib mathtext)."""

LABELS: dict[str, str] = {
    "alpha": r"$\alpha$ (share of positives)",
    "rho": r"$\rho$ (metric true-positive rate)",
    "eta": r"$\eta$ (metric true-negative rate)",
    "psi": r"$\psi$",
    "n_phi": r"$N_\Phi$ (human ratings)",
    "n_m": r"$N_M$ (metric ratings)",
    "n_rho_eta": r"$N_{\rho\eta}$ (paired ratings)",
    "gamma": r"$\gamma$",
    "power": "power",
    "rho_eta_known": r"$\rho,\eta$ known",
    "shared_paired": "shared paired set",
    "counts": "counts",
    "method": "method",
    "eps": r"$\varepsilon_\gamma$",
    "sd_mean": "mean posterior SD",
    "sd_sd": "SD of the posterior SD",
    "bias_mean": r"mean bias of $\hat\alpha$",
    "bias_sd": r"SD of the bias of $\hat\alpha$",
    "bias_mcse": "Monte Carlo s.e. of the mean bias",
    "coverage": "coverage",
    "coverage_mcse": "Monte Carlo s.e. of coverage",
    "rhat_max": r"largest $\hat R$",
    "ess_min": "smallest ESS",
    "divergences": "divergent transitions",
    "nonfinite": "non-finite fits",
    "replicates": "replicates",
}
"""Axis and value labels for figure axes (matplotlib mathtext); other names show as-is."""

SIZE_AXES: tuple[str, ...] = ("n_phi", "n_m", "n_rho_eta")
"""Sample-size axes: a line plot along one of them goes log-x when it spans > 2 decades."""

_ANNOTATE_MAX = 15


def label(name: str) -> str:
    """The readable label for an axis or value column (the name itself when unknown)."""
    return LABELS.get(name, name)


def _symbol(name: str) -> str:
    return SYMBOLS.get(name, name)


def _title(
    value: str, frame: pd.DataFrame, where: Mapping[str, object] | Sequence[str] | None
) -> str:
    """``value`` and the fixed ``where`` values, read back from the selected rows."""
    if where is None:
        names: list[str] = []
    elif isinstance(where, Mapping):
        names = list(where)
    else:
        names = [str(item).partition("=")[0].strip() for item in where]
    fixed = [f"{_symbol(n)} = {format_value(frame[n].iloc[0])}" for n in names]
    return label(value) + (f"\n{', '.join(fixed)}" if fixed else "")


def _check_mode(rows, cols, x, lines, log_x) -> str:
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
    return path


def _heatmap(fig, frame: pd.DataFrame, value: str, rows: str, cols: str) -> None:
    """Draw the selected rows as a heatmap, ``rows`` axis down and ``cols`` across."""
    from matplotlib import colormaps

    table = pivot_surface(frame, rows, cols, value)
    fig.set_size_inches(
        max(5.0, 0.75 * len(table.columns) + 2.8), max(3.5, 0.45 * len(table.index) + 1.8)
    )
    cells = table.to_numpy(dtype=float, na_value=np.nan)
    masked = np.ma.masked_invalid(cells)
    cmap = colormaps["viridis"].with_extremes(bad="0.85")
    ax = fig.add_subplot()
    image = ax.imshow(masked, cmap=cmap, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(table.columns)), [format_value(c) for c in table.columns])
    ax.set_yticks(range(len(table.index)), [format_value(r) for r in table.index])
    ax.set_xlabel(label(cols))
    ax.set_ylabel(label(rows))
    if len(table.columns) > 8:
        ax.tick_params(axis="x", labelrotation=45)
    bar = fig.colorbar(image, ax=ax)
    bar.set_label(label(value))
    if len(table.index) <= _ANNOTATE_MAX and len(table.columns) <= _ANNOTATE_MAX:
        finite = cells[np.isfinite(cells)]
        whole = ptypes.is_integer_dtype(frame[value]) or (
            value in INTEGER_VALUES and bool(np.all(finite == np.round(finite)))
        )
        size = 8 if max(cells.shape) <= 8 else 6
        for (i, j), x in np.ndenumerate(cells):
            if math.isnan(x):
                text, color = "—", "0.3"
            else:
                text = f"{x:.0f}" if whole else f"{x:.3g}"
                r, g, b, _ = cmap(image.norm(x))
                color = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
            ax.text(j, i, text, ha="center", va="center", fontsize=size, color=color)


def _lines(
    fig, frame: pd.DataFrame, value: str, x: str, lines: str | None, log_x: bool | None
) -> list[str]:
    """Draw the selected rows as lines along ``x``; returns notes for the figure's foot."""
    notes: list[str] = []
    xs = frame[x].to_numpy(dtype=float, na_value=np.nan)
    if np.isnan(xs).any():
        notes.append(f"{int(np.isnan(xs).sum())} point(s) with no {x} value left out")
        frame, xs = frame.loc[~np.isnan(xs)], xs[~np.isnan(xs)]
    positive = xs[xs > 0]
    if log_x is None:
        log_x = (
            x in SIZE_AXES
            and positive.size > 0
            and float(positive.max()) > 100.0 * float(positive.min())
        )
    if log_x and positive.size == 0:
        raise SweepError(f"--log-x needs some --x {x!r} values above 0; they are all ≤ 0")
    ax = fig.add_subplot()
    ys = frame[value].to_numpy(dtype=float, na_value=np.nan)
    if lines is None:
        order = np.argsort(xs, kind="stable")
        ax.plot(xs[order], ys[order], marker="o")
    else:
        from matplotlib import colormaps

        groups = frame[lines]
        keys = sorted(groups.dropna().unique().tolist()) + ([None] if groups.isna().any() else [])
        palette = colormaps["tab10"] if len(keys) <= 10 else colormaps["viridis"]
        for k, key in enumerate(keys):
            mask = groups.isna().to_numpy() if key is None else (groups == key).to_numpy(bool)
            order = np.argsort(xs[mask], kind="stable")
            color = palette(k) if len(keys) <= 10 else palette(k / max(1, len(keys) - 1))
            ax.plot(
                xs[mask][order], ys[mask][order], marker="o", color=color, label=format_value(key)
            )
        ax.legend(title=label(lines), fontsize=8, title_fontsize=8)
    if log_x:
        if (xs <= 0).any():
            ax.set_xscale("symlog", linthresh=float(positive.min()), linscale=0.5)
            notes.append(f"x axis linear below {format_value(float(positive.min()))}")
        else:
            ax.set_xscale("log")
    ax.set_xlabel(label(x))
    ax.set_ylabel(label(value))
    ax.grid(True, alpha=0.3)
    return notes


def _numeric(column: pd.Series) -> bool:
    return ptypes.is_numeric_dtype(column) and not ptypes.is_bool_dtype(column)


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
    title: str | None = None,
) -> pathlib.Path:
    """Draw one value of the surface and save it to ``out``; returns ``out`` as a Path.

    Exactly one mode:

    - heatmap, ``rows`` and ``cols`` given: the table of
      :func:`~sweep.tables.pivot_surface` as coloured cells at categorical
      positions, ticks labelled with the axis values, cells annotated with
      their values when the grid is at most 15 × 15, a colorbar labelled with
      the value;
    - lines, ``x`` given: ``value`` against the numeric ``x`` axis, one line
      per value of ``lines`` (legend titled with that axis) when given. The x
      axis is logarithmic when ``log_x`` is true, or, when ``log_x`` is None,
      when ``x`` is a sample size (:data:`SIZE_AXES`) whose positive values
      span more than two decades; zeros then sit on a linear stretch
      (symlog) below the smallest positive value.

    ``where`` fixes the other axes as in :func:`~sweep.tables.filter_surface`
    and the same rule applies: every other axis that varies within a cell or
    point must be fixed. The title is ``title``, or the value's label and the
    fixed ``where`` values. Saved with ``dpi=150, bbox_inches="tight"``; the
    figure is released afterwards. Raises SweepError for a bad option or mode
    (none or both of the modes, ``lines`` without ``x``, ``--out`` with an
    unknown suffix or a missing directory).
    """
    mode = _check_mode(rows, cols, x, lines, log_x)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4))
    canvas = FigureCanvasAgg(fig)
    path = _check_out(out, canvas)
    notes: list[str] = []
    if mode == "heatmap":
        frame = select_cells(surface, {"--rows": rows, "--cols": cols}, value, where)
        _heatmap(fig, frame, value, rows, cols)
    else:
        if x in surface.columns and not _numeric(surface[x]):
            numeric = [a for a in axis_columns(surface) if _numeric(surface[a])]
            raise SweepError(f"--x {x!r} is not numeric; choose one of: {', '.join(numeric)}")
        frame = select_cells(
            surface, {"--x": x} if lines is None else {"--x": x, "--lines": lines}, value, where
        )
        notes = _lines(fig, frame, value, x, lines, log_x)
    fig.axes[0].set_title(title if title is not None else _title(value, frame, where), fontsize=10)
    if notes:
        fig.text(0.01, 0.0, "; ".join(notes), fontsize=7, color="0.4", ha="left", va="top")
    fig.savefig(path, dpi=150, bbox_inches="tight")
    fig.clear()
    return path
