"""The planner's entry points: :func:`plan_grid` (many scenarios, batched; ``sweep plan``)
and :func:`plan` (one scenario; ``sweep.plan``), which put the stages together."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

import jax
import numpy as np

from binmetric_sweep.sweep.compile_cache import DEFAULT, use_compilation_cache
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.plan.exact import _Memo
from binmetric_sweep.sweep.plan.relaxed import SolverSettings, _relax_with_kappa
from binmetric_sweep.sweep.plan.report import Plan, _message
from binmetric_sweep.sweep.plan.search import _integer_plans
from binmetric_sweep.sweep.plan.simulate import simulate_tests
from binmetric_sweep.sweep.plan.spec import _BUDGET_SLACK, PlanSpec, _spec, problems


def plan_grid(
    scenarios: Iterable[PlanSpec | dict],
    *,
    replicates: int = 400,
    seed: int = 0,
    frontier: bool = False,
    chunk_size: int | None = None,
    settings: SolverSettings | None = None,
) -> list[Plan]:
    """Plans for many scenarios, batched: one relaxed solve, shared exact-quadrature calls.

    Args:
        scenarios: :class:`PlanSpec` or dicts of its fields.
        replicates: simulated campaigns per system for the power check (0: skip).
        seed: the simulation's seed.
        frontier: also compute each target plan's frontier.
        chunk_size: lanes per compiled quadrature call (default 64 on CPU, 1024 elsewhere).
        settings: the relaxed solver's settings.

    Raises:
        SweepError: a bad scenario (one line naming it and the field).
    """
    # The entry point (``sweep plan``; :func:`plan` calls it): every stage below in float64,
    # with compiled programs kept for the next plan, as ``sweep run`` keeps them.
    jax.config.update("jax_enable_x64", True)
    use_compilation_cache(DEFAULT, strict=False)
    specs = [_spec(s, f"scenarios[{i}]") for i, s in enumerate(scenarios)]
    if not specs:
        raise SweepError("scenarios: the list is empty; give at least one scenario")
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 0:
        raise SweepError(f"replicates: {shown(replicates)} is not allowed; give an integer ≥ 0")
    p = problems(specs)
    memo = _Memo(p, chunk_size, {})
    n = len(specs)
    relaxed, log_kappa = _relax_with_kappa(memo, settings)
    result = _integer_plans(memo, specs, relaxed, log_kappa, frontier, settings)

    sizes = np.array([[result[r]["n_phi"], result[r]["n_m"]] for r in range(n)], np.int64)
    # The difference each plan is simulated at: its target where it reaches it, else the
    # ε it does reach (an unreachable target's power would describe no plan shown).
    reachable = [_reachable(spec, result[r]) for r, spec in enumerate(specs)]
    tested = np.array(
        [
            s.eps if s.eps is not None and ok else result[r]["eps"]
            for r, (s, ok) in enumerate(zip(specs, reachable, strict=True))
        ]
    )
    if replicates:
        checks = simulate_tests(
            specs, sizes[:, 0], sizes[:, 1], tested, replicates, seed, chunk_size=chunk_size
        )
    else:
        checks = (np.full(n, np.nan),) * 4
    return [
        _plan_of(spec, result[r], p.z[r], tested[r], [c[r] for c in checks], replicates, seed)
        for r, spec in enumerate(specs)
    ]


def _reachable(spec: PlanSpec, got: dict) -> bool:
    """Whether the integer plan ``got`` meets the scenario's target within its budget."""
    cost = float(spec.cost(got["n_phi"], got["n_m"]))
    return spec.eps is None or bool(
        got["eps"] <= spec.eps
        and (spec.budget is None or cost <= spec.budget * (1 + _BUDGET_SLACK))
    )


def _plan_of(spec: PlanSpec, got: dict, z, tested, checks, replicates: int, seed: int) -> Plan:
    """The :class:`Plan` of one scenario.

    Args:
        spec: the scenario.
        got: its integer plan (:func:`~binmetric_sweep.sweep.plan.search._integer_plans`).
        z: z₁₋γ/₂ + z_power.
        tested: the difference the simulation tested.
        checks: the simulation's power, its MCSE, type-I rate and its MCSE (NaN: not run).
        replicates, seed: the simulation's.
    """
    x, y, e = got["n_phi"], got["n_m"], float(got["eps"])
    cost = float(spec.cost(x, y))
    reachable = _reachable(spec, got)
    alone, unlimited, floor = got.get("alone"), got.get("unlimited"), got.get("floor")
    power, power_se, type1, type1_se = checks
    return Plan(
        spec=spec,
        n_phi=x,
        n_m=y,
        cost=cost,
        eps=e,
        sd=e / (math.sqrt(2.0) * float(z)),
        reachable=reachable,
        n_phi_alone=alone,
        cost_alone=None if alone is None else float(spec.cost(alone, 0)),
        n_phi_unlimited=unlimited,
        eps_floor=None if floor is None else float(floor),
        eps_tested=float(tested),
        empirical_power=float(power),
        empirical_power_mcse=float(power_se),
        type1_rate=float(type1),
        type1_mcse=float(type1_se),
        replicates=int(replicates),
        seed=int(seed),
        frontier=got.get("frontier", ()),
        message=_message(spec, x, y, cost, e, reachable, alone, unlimited, floor),
    )


def plan(
    alpha: float,
    rho: float,
    eta: float,
    *,
    cost_metric: float,
    eps: float | None = None,
    budget: float | None = None,
    gamma: float = 0.05,
    power: float = 0.8,
    cost_human: float = 1.0,
    n_rho_eta: Literal["shared", "known"] | int = "shared",
    replicates: int = 400,
    seed: int = 0,
    frontier: bool = True,
    chunk_size: int | None = None,
    estimator: str = "bayes",
) -> Plan | list[dict]:
    """The plan for one scenario (see :mod:`binmetric_sweep.sweep.plan`); ``sweep plan`` on the
    command line. With ``estimator`` another than "bayes" (a classical one, or "all"), the
    rows of :func:`plan_estimators` instead.

    ::

        p = sweep.plan(0.6, 0.8, 0.8, eps=0.02, power=0.8, cost_metric=0.002)
        p.n_phi, p.n_m, p.cost, p.eps, p.empirical_power, p.reachable

    Raises:
        SweepError: a bad field (one line naming it, the value and what is allowed).
    """
    fields = dict(
        alpha=alpha,
        rho=rho,
        eta=eta,
        eps=eps,
        budget=budget,
        gamma=gamma,
        power=power,
        cost_human=cost_human,
        cost_metric=cost_metric,
        n_rho_eta=n_rho_eta,
    )
    spec = _spec(fields)
    if estimator != "bayes":
        from binmetric_sweep.sweep.estimates import estimator_names

        return plan_estimators(spec, estimator_names(estimator), replicates=replicates, seed=seed)
    return plan_grid(
        [spec], replicates=replicates, seed=seed, frontier=frontier, chunk_size=chunk_size
    )[0]


#: How far (in Monte Carlo SEs) a simulated power or type-I rate may miss its promise
#: before a plan is said not to hold.
HOLDS_MCSE = 2.0


def plan_estimators(
    spec: PlanSpec | dict,
    names: Iterable[str],
    *,
    replicates: int = 400,
    seed: int = 0,
) -> list[dict]:
    """The plan of one scenario under each estimator of ``names``, each checked by simulated
    campaigns of that estimator, one dict per estimator.

    ``bayes``: :func:`plan_grid`'s plan; a classical estimator:
    :func:`~.classical.classical_plan` (its closed-form SE). Each dict has
    ``estimator``, ``n_phi``, ``n_m``, ``cost``, ``eps``, ``reachable``,
    ``reason`` ("" where it applies), the simulated ``power``, ``type1_rate``
    and their MCSEs, ``holds`` (type-I rate ≤ γ and power ≥ the promised, each
    within :data:`HOLDS_MCSE` MCSEs) and ``best``: the cheapest plan that
    holds (in budget mode, the least ε).
    """
    from binmetric_sweep.sweep.plan.classical import classical_plan

    jax.config.update("jax_enable_x64", True)
    use_compilation_cache(DEFAULT, strict=False)
    spec = _spec(spec)
    rows = []
    for name in names:
        if name == "bayes":
            p = plan_grid([spec], replicates=replicates, seed=seed)[0]
            row = {"estimator": name, "n_phi": p.n_phi, "n_m": p.n_m, "cost": p.cost}
            row |= {"eps": p.eps, "reachable": p.reachable, "reason": ""}
            checks = (p.empirical_power, p.empirical_power_mcse, p.type1_rate, p.type1_mcse)
        else:
            c = classical_plan(name, spec)
            row = c._asdict()
            checks = (math.nan,) * 4
            if not c.reason and replicates:
                tested = spec.eps if spec.eps is not None and c.reachable else c.eps
                found = simulate_tests(
                    [spec], [c.n_phi], [c.n_m], [tested], replicates, seed, estimator=name
                )
                checks = tuple(float(v[0]) for v in found)
        power, power_se, type1, type1_se = checks
        row |= {"power": power, "power_mcse": power_se, "type1_rate": type1}
        row["type1_mcse"] = type1_se
        row["holds"] = bool(
            not row["reason"]
            and type1 <= spec.gamma + HOLDS_MCSE * type1_se
            and power >= spec.power - HOLDS_MCSE * power_se
        )
        rows.append(row)
    held = [r for r in rows if r["holds"] and r["reachable"]]
    key = "cost" if spec.eps is not None else "eps"
    best = min(held, key=lambda r: r[key])["estimator"] if held else None
    for row in rows:
        row["best"] = row["estimator"] == best
    return rows
