"""Plans for an estimator with a closed-form SE: the cheapest integer sizes.

The posterior's plan (:func:`~.planner.plan_grid`) needs the exact quadrature
because its SD has no closed form. An estimator that carries a planning SE
(:attr:`kernels.estimators.Estimator.planning`, the closed forms of
:mod:`kernels.planning_se`) is planned here from it: ε = √2·σ·(z₁₋γ/₂ +
z_power) as for the posterior. The search is over integers: for each N_M on a
grid, the least N_Φ meeting the target (σ falls as N_Φ grows) where the SE
reads human ratings, else N_Φ = 0; then the cheapest, refined on integers
around it to 0.2 % of N_M, as the posterior's planner does.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from binmetric_sweep.kernels.estimators import Estimator, estimator_named
from binmetric_sweep.sweep.plan.spec import BUDGET_SLACK, UNLIMITED, PlanSpec

__all__ = ["ClassicalPlan", "classical_plan", "classical_sd"]

#: N_M values tried before refining: 0 and a geometric grid to UNLIMITED.
_GRID = np.unique(np.concatenate([[0.0], np.round(np.geomspace(1, UNLIMITED, 1200))]))


def classical_sd(estimator: Estimator | str, spec: PlanSpec, n_phi, n_m) -> np.ndarray:
    """The estimator's (a value or a registered name) asymptotic SE at sizes ``n_phi``,
    ``n_m`` (arrays; NaN where it does not apply: no human ratings, no metric-only ones
    where it needs them, J ≤ 0)."""
    if isinstance(estimator, str):
        estimator = estimator_named(estimator)
    x, y = np.asarray(n_phi, float), np.asarray(n_m, float)
    var = estimator.planning.variance(spec.alpha, spec.rho, spec.eta, spec.paired, x, y)
    return np.sqrt(var)


class ClassicalPlan(NamedTuple):
    """The cheapest integer sizes for one estimator (or the least ε within the budget).

    ``reason``: "" where a plan was found, else why not (the estimator does
    not apply to the design, or no sizes up to the limit reach the target).
    """

    estimator: str
    n_phi: int
    n_m: int
    cost: float
    eps: float
    reachable: bool
    reason: str


def classical_plan(estimator: Estimator | str, spec: PlanSpec) -> ClassicalPlan:
    """The plan of ``spec`` under ``estimator`` (a value or a registered name), one with a
    planning SE (module docstring)."""
    if isinstance(estimator, str):
        estimator = estimator_named(estimator)
    if estimator.planning is None:
        raise ValueError(f"classical_plan: {estimator.name} has no closed-form planning SE")
    name = estimator.name
    z = NormalDist().inv_cdf(1 - spec.gamma / 2) + NormalDist().inv_cdf(spec.power)
    eps_of = lambda x, y: math.sqrt(2.0) * z * classical_sd(estimator, spec, x, y)  # noqa: E731
    uses_phi = estimator.planning.searches_humans(spec.paired)
    if spec.eps is not None:
        x = _least_phi(eps_of, _GRID, spec.eps) if uses_phi else np.zeros_like(_GRID)
        ok = np.isfinite(x) & (eps_of(x, _GRID) <= spec.eps)
        cost = np.where(ok, spec.cost(x, _GRID), np.inf)
        if spec.budget is not None:
            cost = np.where(cost <= spec.budget * (1 + BUDGET_SLACK), cost, np.inf)
        if np.isfinite(cost).any():
            y = _refine(lambda g: _target_cost(eps_of, spec, g, uses_phi), _GRID[np.argmin(cost)])
            x = float(_least_phi(eps_of, np.array([y]), spec.eps)[0]) if uses_phi else 0.0
            return _plan(name, spec, x, y, eps_of(x, y), True)
        if spec.budget is None:
            return ClassicalPlan(name, 0, 0, math.nan, math.nan, False, _why(estimator, spec))
    # Budget mode (or a target the budget cannot buy): the least ε within the budget.
    room = (spec.budget - spec.fixed_cost() - spec.cost_metric * _GRID) / spec.cost_human
    x = np.floor(np.maximum(room, 0)) if uses_phi else np.zeros_like(_GRID)
    ok = room >= 0
    e = np.where(ok, eps_of(x, _GRID), np.nan)
    if not np.isfinite(e).any():
        return ClassicalPlan(name, 0, 0, math.nan, math.nan, False, _why(estimator, spec))
    best = _GRID[np.nanargmin(e)]
    y = _refine(lambda g: _budget_eps(eps_of, spec, g, uses_phi), best)
    room = (spec.budget - spec.fixed_cost() - spec.cost_metric * y) / spec.cost_human
    x = math.floor(max(room, 0)) if uses_phi else 0
    eps = float(eps_of(x, y))
    return _plan(name, spec, x, y, eps, spec.eps is None or eps <= spec.eps)


def _least_phi(eps_of, n_m: np.ndarray, target: float) -> np.ndarray:
    """Least integer N_Φ ≥ 1 with ε ≤ target at each N_M (inf where none up to UNLIMITED)."""
    lo, hi = np.zeros(len(n_m)), np.full(len(n_m), float(UNLIMITED))
    reach = eps_of(hi, n_m) <= target
    for _ in range(64):
        mid = np.floor(0.5 * (lo + hi))
        good = eps_of(np.maximum(mid, 1), n_m) <= target
        lo, hi = np.where(good, lo, mid), np.where(good, mid, hi)
    return np.where(reach, np.maximum(hi, 1), np.inf)


def _target_cost(eps_of, spec, n_m, uses_phi):
    x = _least_phi(eps_of, n_m, spec.eps) if uses_phi else np.zeros_like(n_m)
    ok = np.isfinite(x) & (eps_of(x, n_m) <= spec.eps)
    return np.where(ok, spec.cost(x, n_m), np.inf)


def _budget_eps(eps_of, spec, n_m, uses_phi):
    room = (spec.budget - spec.fixed_cost() - spec.cost_metric * n_m) / spec.cost_human
    x = np.floor(np.maximum(room, 0)) if uses_phi else np.zeros_like(n_m)
    return np.where(room >= 0, np.nan_to_num(eps_of(x, n_m), nan=np.inf), np.inf)


def _refine(score, y0: float) -> float:
    """The integer N_M near ``y0`` (within a grid step either side) with the least ``score``,
    to 0.2 % of N_M."""
    lo, hi = max(0.0, math.floor(y0 / 1.02) - 1), min(float(UNLIMITED), math.ceil(y0 * 1.02) + 1)
    step = max(1.0, math.floor(2e-3 * y0))
    grid = np.arange(lo, hi + step, step)
    return float(grid[np.argmin(score(grid))])


def _plan(name, spec, x, y, eps, reachable) -> ClassicalPlan:
    x, y = int(x), int(y)
    return ClassicalPlan(name, x, y, float(spec.cost(x, y)), float(eps), bool(reachable), "")


def _why(estimator: Estimator, spec: PlanSpec) -> str:
    """Why no plan: the scenario the estimator never applies to, else the sizes' limit."""
    why = estimator.planning.not_planned(spec.alpha, spec.rho, spec.eta, spec.paired)
    return why or "no sizes up to the limit reach the target"
