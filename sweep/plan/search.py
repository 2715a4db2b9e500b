"""The integer search: from the relaxed optimum to integer sizes confirmed with the exact
quadrature (least sizes meeting a target, target plans and their frontier, budget plans)."""

from __future__ import annotations

import math

import numpy as np

from binmetric_sweep.sweep.plan.exact import EpsMemo
from binmetric_sweep.sweep.plan.relaxed import Relaxed, SolverSettings, relaxed_sd, solve_relaxed
from binmetric_sweep.sweep.plan.report import FrontierPoint
from binmetric_sweep.sweep.plan.spec import BUDGET_SLACK, UNLIMITED, PlanSpec, Problems, problems

__all__ = ["integer_plans"]

#: N_M around the relaxed optimum tried on integers: y*·2^(k/4), k = −3…3.
_NEAR = 2.0 ** (np.arange(-3, 4) / 4.0)


#: Exact evaluations a search round fills when few lanes are left: one compiled
#: quadrature chunk on CPU, which costs the same however many of its lanes are
#: padding (tuning constants: docs/performance.md).
_ROUND_LANES = 64


def _surrogate_root(p: Problems, index, axis, fixed, log_kappa) -> np.ndarray:
    """Real size s on ``axis`` (0: N_Φ, 1: N_M) where κ·σ̃ meets the target, the other
    size fixed; 0 if met at 0, inf if not met at :data:`UNLIMITED`. ``(K,)`` NumPy."""
    q = Problems(*(np.asarray(x)[index] for x in p))

    def gap(s):
        x, y = np.where(axis == 0, s, fixed), np.where(axis == 0, fixed, s)
        return np.log(relaxed_sd(x, y, q, np)) + log_kappa - q.log_sd_target

    lo, hi = np.zeros(len(index)), np.full(len(index), math.log1p(UNLIMITED))
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        above = gap(np.expm1(mid)) > 0
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    root = np.expm1(hi)
    root = np.where(gap(np.zeros(len(index))) <= 0, 0.0, root)
    return np.where(gap(np.full(len(index), float(UNLIMITED))) > 0, np.inf, root)


def _least_sizes(
    memo: EpsMemo, index, axis, fixed, log_kappa, metric_tol: float = 2e-3, max_rounds: int = 40
):
    """Least integer size on ``axis`` meeting each lane's target, the other size fixed.

    A boundary ε(s) ≤ target < ε(s − w) in [0, :data:`UNLIMITED`], w = 1 for
    N_Φ and w = max(1, ⌊metric_tol·s⌋) for N_M (metric ratings are cheap; the
    last 0.2 % of them is not worth exact bisection). The bracket (lo
    infeasible, hi feasible) is closed by evaluating ⌈ŝ⌉ − w and ⌈ŝ⌉ (N_M:
    shifted by w/2), ŝ the root of the κ-corrected surrogate with κ re-measured
    at the last exact evaluation; after four rounds, by bisection.

    Args:
        memo: the exact evaluations so far (extended in place).
        index: ``(K,)`` scenario of each lane.
        axis: ``(K,)`` 0 to search N_Φ (N_M fixed), 1 to search N_M (N_Φ fixed).
        fixed: ``(K,)`` the other size.
        log_kappa: ``(K,)`` starting log κ.

    Returns:
        ``(K,)`` int64 sizes, or UNLIMITED + 1 where even UNLIMITED misses the target.
    """
    p = memo.p
    index, axis = np.asarray(index, int), np.asarray(axis, int)
    fixed = np.asarray(fixed, np.int64)
    log_kappa = np.array(log_kappa, float)
    lo = np.full(len(index), -1, np.int64)
    hi = np.full(len(index), UNLIMITED + 1, np.int64)
    target = p.target[index]

    def width(lanes, size):
        metric = np.maximum(1, np.floor(metric_tol * size))
        return np.where(axis[lanes] == 1, metric, 1).astype(np.int64)

    every = np.arange(len(index))

    for round_ in range(max_rounds):
        closed = (hi - lo <= 1) | ((hi <= UNLIMITED) & (hi - lo <= width(every, hi)))
        a = np.flatnonzero(~closed)
        if len(a) == 0:
            break
        root = _surrogate_root(p, index[a], axis[a], fixed[a], log_kappa[a])
        w = width(a, np.minimum(root, UNLIMITED))
        guess = np.ceil(np.minimum(root + (w - 1) / 2.0, UNLIMITED)).astype(np.int64)
        if round_ >= 4:  # bisection when Newton has not closed the bracket
            guess = lo[a] + (np.minimum(hi[a], UNLIMITED + 1) - lo[a] + 1) // 2
        guess = np.clip(guess, lo[a] + 1, np.minimum(hi[a] - 1, UNLIMITED))
        # Two points per lane (⌈ŝ⌉ − w, ⌈ŝ⌉), more when few lanes are left: a compiled
        # chunk costs the same however many of its lanes are padding.
        per = int(np.clip(_ROUND_LANES // len(a), 2, 8))
        offsets = np.arange(-(per // 2), per - per // 2)
        points = [(j, g) for j, g in zip(a, guess, strict=True)]
        points += [
            (j, g + v * k)
            for j, g, v in zip(a, guess, w, strict=True)
            for k in offsets
            if k != 0 and lo[j] < g + v * k < min(hi[j], UNLIMITED + 1)
        ]
        lanes = np.array([j for j, _ in points])
        sizes = np.array([g for _, g in points], np.int64)
        n_phi = np.where(axis[lanes] == 0, sizes, fixed[lanes])
        n_m = np.where(axis[lanes] == 0, fixed[lanes], sizes)
        eps = memo.eps(index[lanes], n_phi, n_m)
        for j, size, e, x, y in zip(lanes, sizes, eps, n_phi, n_m, strict=True):
            if e <= target[j]:
                hi[j] = min(hi[j], size)
            else:
                lo[j] = max(lo[j], size)
            if size == guess[np.searchsorted(a, j)] and math.isfinite(e) and (x > 0 or y > 0):
                q = Problems(*(np.asarray(v)[index[j]] for v in p))
                sd = e / (math.sqrt(2.0) * p.z[index[j]])
                log_kappa[j] = math.log(sd) - math.log(float(relaxed_sd(x, y, q, np)))
        lo = np.where(lo >= hi, hi - 1, lo)  # a non-monotone step: keep the bracket valid
    return hi


def _frontier_n_m(n_m_star: float, n_phi_star: float) -> np.ndarray:
    """N_M values of the frontier: 0 and a 1-2-5 series from y*/20 to 20·y*."""
    centre = n_m_star if n_m_star >= 1 else 10.0 * max(n_phi_star, 100.0)
    lo, hi = centre / 20.0, min(centre * 20.0, UNLIMITED)
    series = [m * 10**k for k in range(0, 10) for m in (1, 2, 5)]
    return np.array([0] + [v for v in series if lo <= v <= hi], np.int64)


def _target_plans(memo: EpsMemo, rows: np.ndarray, relaxed: Relaxed, log_kappa, frontier: bool):
    """Integer target-mode plans of the scenarios ``rows``.

    Returns per row: (n_phi, n_m, eps, n_phi_alone, n_phi_unlimited, frontier points).
    """
    p = memo.p
    if len(rows) == 0:  # budget-mode scenarios only
        return []
    index, axis, fixed, kind = [], [], [], []
    for r in rows:
        y_star, x_star = float(relaxed.n_m[r]), float(relaxed.n_phi[r])
        near = np.unique(np.round(y_star * _NEAR).astype(np.int64))
        lanes = [("alone", 0, 0), ("unlimited", 0, UNLIMITED)]
        lanes += [("near", 0, int(v)) for v in near]
        floor_ceil = {math.floor(x_star), math.ceil(x_star)} - ({0} if p.shared[r] else set())
        lanes += [("near", 1, int(v)) for v in sorted(floor_ceil)]
        if not p.shared[r]:
            lanes.append(("near", 1, 0))
        if frontier:
            lanes += [("frontier", 0, int(v)) for v in _frontier_n_m(y_star, x_star)]
        for name, ax, value in lanes:
            index.append(r)
            axis.append(ax)
            fixed.append(min(max(value, 0), UNLIMITED))
            kind.append(name)
    index, axis, fixed = np.array(index), np.array(axis), np.array(fixed, np.int64)
    kind = np.array(kind)
    size = _least_sizes(memo, index, axis, fixed, log_kappa[index])
    n_phi = np.where(axis == 0, size, fixed)
    n_m = np.where(axis == 0, fixed, size)
    met = size <= UNLIMITED
    eps = np.full(len(index), np.inf)
    eps[met] = memo.eps(index[met], n_phi[met], n_m[met])
    cost = p.cost_human[index] * n_phi + p.cost_metric[index] * n_m + p.fixed_cost[index]
    cost = np.where(met, cost, np.inf)
    out = []
    for r in rows:
        mine = index == r
        best = np.flatnonzero(mine)[np.argmin(np.where(mine, cost, np.inf)[mine])]
        alone = np.flatnonzero(mine & (kind == "alone"))[0]
        unlimited = np.flatnonzero(mine & (kind == "unlimited"))[0]
        points = sorted(
            {
                (int(n_m[j]), int(n_phi[j]), float(cost[j]), float(eps[j]))
                for j in np.flatnonzero(mine & (kind == "frontier") & met)
            }
        )
        out.append(
            (
                int(n_phi[best]),
                int(n_m[best]),
                float(eps[best]),
                int(n_phi[alone]) if met[alone] else None,
                int(n_phi[unlimited]) if met[unlimited] else None,
                tuple(FrontierPoint(*pt) for pt in points),
            )
        )
    return out


def _affordable(p: Problems, r: int, n_m) -> tuple[np.ndarray, np.ndarray]:
    """For N_M tries, the most N_Φ the budget then buys, and the N_M its remainder buys."""
    spend = p.budget[r] - p.fixed_cost[r]
    n_m = np.minimum(np.asarray(n_m, float), UNLIMITED)
    n_phi = np.floor((spend - p.cost_metric[r] * n_m) / p.cost_human[r] * (1 + BUDGET_SLACK))
    n_phi = np.clip(n_phi, 0, UNLIMITED)
    rest = np.floor((spend - p.cost_human[r] * n_phi) / p.cost_metric[r] * (1 + BUDGET_SLACK))
    return n_phi.astype(np.int64), np.clip(rest, 0, UNLIMITED).astype(np.int64)


def _budget_plans(memo: EpsMemo, rows: np.ndarray, relaxed: Relaxed):
    """Integer budget-mode plans (least exact ε within the budget) of the scenarios ``rows``.

    Tries N_M = y*·2^(k/4) (k = −8…8), 0 and all-but-⌊N_Φ*⌋ on the budget line,
    then y_best·2^(k/32) (k = −4…4) around the best; each try spends the rest
    of the budget on human ratings, and what is left of it on metric ratings.

    Returns per row: (n_phi, n_m, eps, eps_floor).
    """
    p = memo.p

    def tries(r, n_m):
        n_phi, rest = _affordable(p, r, n_m)
        keep = (n_phi > 0) | ~p.shared[r]
        return n_phi[keep], rest[keep]

    def best_of(candidates):
        index = np.concatenate([np.full(len(x), r) for r, (x, _) in candidates.items()])
        n_phi = np.concatenate([x for x, _ in candidates.values()])
        n_m = np.concatenate([y for _, y in candidates.values()])
        eps = memo.eps(index, n_phi, n_m)
        out = {}
        for r in candidates:
            mine = np.flatnonzero(index == r)
            j = mine[np.lexsort((n_m[mine], eps[mine]))[0]]
            out[r] = (int(n_phi[j]), int(n_m[j]), float(eps[j]))
        return out

    first = {}
    for r in rows:
        y_star, x_star = float(relaxed.n_m[r]), math.floor(relaxed.n_phi[r])
        spend = p.budget[r] - p.fixed_cost[r]
        by_humans = max(spend - p.cost_human[r] * x_star, 0.0) / p.cost_metric[r]
        n_m = np.concatenate([np.round(y_star * 2.0 ** (np.arange(-8, 9) / 4.0)), [0, by_humans]])
        first[r] = tries(r, n_m)
    coarse = best_of(first)
    around = 2.0 ** (np.arange(-4, 5) / 32.0)
    fine = best_of({r: tries(r, np.round(max(coarse[r][1], 1) * around)) for r in rows})
    ceiling = {r: _affordable(p, r, 0)[0] for r in rows}
    floor = memo.eps(rows, [int(ceiling[r]) for r in rows], [UNLIMITED] * len(rows))
    out = []
    for k, r in enumerate(rows):
        a, b = coarse[r], fine[r]
        best = min(a, b, key=lambda t: (t[2], t[1]))
        out.append((*best, float(floor[k])))
    return out


def integer_plans(
    memo: EpsMemo,
    specs: list[PlanSpec],
    relaxed: Relaxed,
    log_kappa: np.ndarray,
    frontier: bool,
    settings: SolverSettings | None,
) -> dict[int, dict]:
    """Integer plans of every scenario, by row: ``n_phi``, ``n_m``, ``eps``; ``alone``,
    ``unlimited`` and ``frontier`` of a target plan; ``floor`` where there is a budget.

    Target plans first; a scenario without a target, or whose target plan costs more than
    its budget, then gets the budget plan (the least ε within the budget), from a relaxed
    solve in budget mode.

    Args:
        memo: the call's scenarios and exact evaluations (extended in place).
        specs: the scenarios, as ``memo.p`` holds them.
        relaxed: the relaxed optimum (:func:`~.relaxed.relax_with_kappa`).
        log_kappa: ``(S,)`` log κ measured there.
        frontier: also compute each target plan's frontier.
        settings: the relaxed solver's settings (for the budget-mode solve).
    """
    p = memo.p
    n = len(specs)
    result: dict[int, dict] = {r: {} for r in range(n)}
    targets = np.flatnonzero(p.by_target)
    for r, (x, y, e, alone, unlimited, points) in zip(
        targets, _target_plans(memo, targets, relaxed, log_kappa, frontier), strict=True
    ):
        result[r] = dict(n_phi=x, n_m=y, eps=e, alone=alone, unlimited=unlimited, frontier=points)
    over = [
        r
        for r in targets
        if specs[r].budget is not None
        and specs[r].cost(result[r]["n_phi"], result[r]["n_m"])
        > specs[r].budget * (1 + BUDGET_SLACK)
    ]
    by_budget = np.array(sorted(set(np.flatnonzero(~p.by_target)) | set(over)), int)
    if len(by_budget):
        q = problems(specs, by_target=[r not in set(by_budget) for r in range(n)])
        memo_b = EpsMemo(q, memo.chunk_size, memo.values)
        relaxed_b = solve_relaxed(q, log_kappa, settings=settings)
        for r, (x, y, e, floor) in zip(
            by_budget, _budget_plans(memo_b, by_budget, relaxed_b), strict=True
        ):
            result[r].update(n_phi=x, n_m=y, eps=e, floor=floor)
    for r in np.flatnonzero(p.by_target):  # the floor of a target plan that fits its budget
        if specs[r].budget is not None and "floor" not in result[r]:
            ceiling = _affordable(p, r, 0)[0]
            result[r]["floor"] = float(memo.eps([r], [ceiling], [UNLIMITED])[0])
    return result
