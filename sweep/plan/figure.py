"""The planner's frontier as a figure for a paper, in the style of :mod:`sweep.display.plots`."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from binmetric_sweep.sweep.display.plots import (
    COLUMN_WIDTH,
    FONT,
    SYMBOLS,
    check_image_path,
    format_size,
    hide_overlapping_ticklabels,
    label,
    legend_below,
    log_ticks,
    new_figure,
    rate_phrases,
    save_figure,
    style_axes,
    tick_number,
    wrap_phrases,
)
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.plan.report import Plan
from binmetric_sweep.sweep.plan.spec import PlanSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["frontier_figure", "plan_phrases", "plot_frontier"]


def plan_phrases(spec: PlanSpec) -> list[str]:
    """Mathtext phrases for a planning scenario's settings (a :class:`PlanSpec`)."""
    phrases = [f"{SYMBOLS['alpha']} = {spec.alpha:g}"]
    phrases += rate_phrases({"rho": spec.rho, "eta": spec.eta}, known=spec.paired.known)
    if spec.paired.shared:
        phrases.append(r"$N_{\rho\eta} = N_\Phi$")
    elif spec.paired.separate:
        phrases.append(f"{SYMBOLS['n_rho_eta']} = {format_size(spec.paired.n_rho_eta)}")
    phrases += [f"{SYMBOLS['gamma']} = {spec.gamma:g}", f"power {spec.power:g}"]
    phrases.append(f"cost {spec.cost_human:g} per human, {spec.cost_metric:g} per metric rating")
    if spec.budget is not None:
        phrases.append(f"budget {spec.budget:,.0f}")
    return phrases


def frontier_figure(result: Plan, width: float = COLUMN_WIDTH) -> Figure:
    """The frontier of a target plan: least N_Φ against N_M (log), humans alone, the plan.

    Horizontal lines mark N_Φ with human ratings alone (N_M = 0) and with
    unlimited metric ratings; a star marks the plan. Titled with the target
    and the scenario (:func:`plan_phrases`), legend below the axes.
    """
    from matplotlib.ticker import FuncFormatter

    spec = result.spec
    fig = new_figure(width, 0.85 * width)
    ax = fig.add_subplot()
    style_axes(ax)
    pts = [pt for pt in result.frontier if pt.n_m > 0]
    target = rf"$\varepsilon \leq {spec.eps:g}$"
    ax.plot(
        [pt.n_m for pt in pts],
        [pt.n_phi for pt in pts],
        marker="o",
        markersize=3,
        linewidth=1.0,
        color="C0",
        label=r"least $N_\Phi$ for " + target,
    )
    if result.n_phi_alone is not None:
        alone = "human ratings alone" + (" (the plan)" if result.n_m == 0 else "")
        ax.axhline(result.n_phi_alone, ls="--", lw=0.9, color="0.45", label=alone)
    if result.n_phi_unlimited is not None:
        ax.axhline(result.n_phi_unlimited, ls=":", lw=1.0, color="0.45", label="unlimited $N_M$")
    if result.n_m > 0:
        ax.plot(
            [result.n_m],
            [result.n_phi],
            marker="*",
            markersize=9,
            color="C3",
            ls="none",
            label=f"plan: cost {result.cost:,.0f}",
        )
    ax.set_xscale("log")
    xs = [pt.n_m for pt in pts] + ([result.n_m] if result.n_m > 0 else [])
    if xs:
        log_ticks(ax.xaxis, min(xs), max(xs), "n_m")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_number("n_phi", v)))
    ax.set_xlabel(label("n_m"))
    ax.set_ylabel(label("n_phi"))
    ax.grid(True, which="major", linewidth=0.4, alpha=0.35)
    fig.suptitle(wrap_phrases(target, plan_phrases(spec), width), fontsize=FONT)
    legend_below(fig, ax, width)
    hide_overlapping_ticklabels(fig, ax)
    return fig


def plot_frontier(result: Plan, out: str | pathlib.Path) -> pathlib.Path:
    """Draw the frontier (least N_Φ against N_M), the plan and humans alone; returns the path.

    One paper column wide, titled with the target and the scenario, saved
    uncropped (:func:`frontier_figure`, :func:`binmetric_sweep.sweep.display.plots.save_figure`);
    the directory is created if missing.
    """
    if not result.frontier:
        raise SweepError("-o: there is no frontier to draw (it needs a target --eps)")
    path = check_image_path(out)
    return save_figure(frontier_figure(result), path)  # its directory made, whole or not at all
