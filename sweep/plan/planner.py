"""The planner's entry points: :func:`plan_grid` (many scenarios, batched; ``sweep plan``)
and :func:`plan` (one scenario; ``sweep.plan``), which put the stages together."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable
from typing import Literal

import jax
import numpy as np

from binmetric_sweep.kernels.estimators import (
    HUMAN_ONLY,
    POSTERIOR,
    Estimator,
    estimator_named,
    estimator_names,
)
from binmetric_sweep.kernels.paired import PairedDesign
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.execution.compile_cache import DEFAULT, use_compilation_cache
from binmetric_sweep.sweep.plan.exact import EpsMemo
from binmetric_sweep.sweep.plan.pilot import read_pilot
from binmetric_sweep.sweep.plan.relaxed import SolverSettings, relax_with_kappa
from binmetric_sweep.sweep.plan.report import EstimatorPlan, Plan, plan_message
from binmetric_sweep.sweep.plan.search import integer_plans
from binmetric_sweep.sweep.plan.simulate import simulate_tests
from binmetric_sweep.sweep.plan.spec import BUDGET_SLACK, PlanSpec, as_spec, problems

__all__ = ["plan", "plan_estimators", "plan_grid"]


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
    specs = [as_spec(s, f"scenarios[{i}]") for i, s in enumerate(scenarios)]
    if not specs:
        raise SweepError("scenarios: the list is empty; give at least one scenario")
    _check_replicates(replicates)
    p = problems(specs)
    memo = EpsMemo(p, chunk_size, {})
    n = len(specs)
    relaxed, log_kappa = relax_with_kappa(memo, settings)
    result = integer_plans(memo, specs, relaxed, log_kappa, frontier, settings)

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
        got["eps"] <= spec.eps and (spec.budget is None or cost <= spec.budget * (1 + BUDGET_SLACK))
    )


def _plan_of(
    spec: PlanSpec,
    got: dict,
    z,
    tested,
    checks,
    replicates: int,
    seed: int,
    *,
    reachable: bool | None = None,
    estimator: str = POSTERIOR.name,
) -> Plan:
    """The :class:`Plan` of one scenario.

    Args:
        spec: the scenario.
        got: its integer plan (:func:`~binmetric_sweep.sweep.plan.search.integer_plans`).
        z: z₁₋γ/₂ + z_power.
        tested: the difference the simulation tested.
        checks: the simulation's power, its MCSE, type-I rate and its MCSE (NaN: not run).
        replicates, seed: the simulation's.
        reachable: whether it meets the target (None: :func:`_reachable` of ``got``).
        estimator: the estimator it was planned and simulated with.
    """
    x, y, e = got["n_phi"], got["n_m"], float(got["eps"])
    cost = float(spec.cost(x, y))
    reachable = _reachable(spec, got) if reachable is None else reachable
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
        message=plan_message(spec, x, y, cost, e, reachable, alone, unlimited, floor),
        estimator=estimator,
    )


def plan(
    alpha: float | None = None,
    rho: float | None = None,
    eta: float | None = None,
    *,
    cost_metric: float,
    eps: float | None = None,
    budget: float | None = None,
    gamma: float = 0.05,
    power: float = 0.8,
    cost_human: float = 1.0,
    n_rho_eta: Literal["shared", "known"] | int | PairedDesign = "shared",
    replicates: int = 400,
    seed: int = 0,
    frontier: bool = True,
    chunk_size: int | None = None,
    estimator: str | Estimator = POSTERIOR.name,
    pilot: str | os.PathLike | None = None,
) -> Plan:
    """The plan of one scenario under one estimator (see :mod:`binmetric_sweep.sweep.plan`);
    ``sweep plan`` on the command line. N_Φ, N_M and the cost are per system.

    ::

        p = sweep.plan(0.6, 0.8, 0.8, eps=0.02, power=0.8, cost_metric=0.002)
        p.n_phi, p.n_m, p.cost, p.eps, p.empirical_power, p.reachable
        q = sweep.plan(eps=0.02, cost_metric=0.002, pilot="examples/pilot.csv")
        q.spec.alpha, q.spec.rho, q.spec.eta, q.pilot  # the pilot's posterior means

    Args:
        alpha, rho, eta: the scenario's rates; each may be left to ``pilot``.
        cost_metric: price of one metric (judge) rating, in the unit of ``cost_human``.
        estimator: a registered estimator or its name: the posterior ("bayes", planned by
            its exact SD), or one planned under its closed-form SE and simulated with its
            own estimates (:func:`plan_estimators` gives several, one row each).
        pilot: a file of one system's paired ratings (:func:`~.pilot.read_pilot`): the
            posterior means of α, ρ and η where those are not given.
        The others: :class:`~.spec.PlanSpec`'s fields and :func:`plan_grid`'s arguments.

    Raises:
        SweepError: a bad argument (one line naming it, the value and what is allowed), a
            bad pilot file, or an estimator that gives no plan for the scenario.
    """
    estimator = _estimator_of(estimator)
    rates = dict(alpha=alpha, rho=rho, eta=eta)
    read = None
    if pilot is not None:
        read = read_pilot(pilot)
        rates = read.rates() | {k: v for k, v in rates.items() if v is not None}
    for name, value in rates.items():
        if value is None:
            raise SweepError(f"{name}: required (or give pilot=FILE)")
    fields = dict(
        **rates,
        eps=eps,
        budget=budget,
        gamma=gamma,
        power=power,
        cost_human=cost_human,
        cost_metric=cost_metric,
        n_rho_eta=n_rho_eta,
    )
    spec = as_spec(fields)
    if estimator.posterior:
        answer = plan_grid(
            [spec], replicates=replicates, seed=seed, frontier=frontier, chunk_size=chunk_size
        )[0]
    else:
        _check_replicates(replicates)
        found = _closed_form_plan(estimator, spec)
        if found.reason:
            raise SweepError(f"estimator: {estimator.name} gives no plan here: {found.reason}")
        answer = _classical_plan_of(spec, estimator, found, replicates, seed, chunk_size)
    return answer if read is None else dataclasses.replace(answer, pilot=read)


def _estimator_of(estimator) -> Estimator:
    """A registered estimator, or the one its name names (``plan`` plans one)."""
    if isinstance(estimator, Estimator):
        return estimator
    try:
        return estimator_named(estimator)
    except KeyError:
        allowed = ", ".join(estimator_names())
        why = "plans several estimators; plan_estimators gives them" if estimator == "all" else ""
        raise SweepError(
            f"estimator: {shown(estimator)} {why or 'is not an estimator'}; "
            f"allowed: one of {allowed}"
        ) from None


def _closed_form_plan(estimator: Estimator, spec: PlanSpec):
    """:func:`~.classical.classical_plan`, or a plan that says why not where the estimator
    carries no planning SE."""
    from binmetric_sweep.sweep.plan.classical import ClassicalPlan, classical_plan

    if estimator.planning is None:
        nan = math.nan
        return ClassicalPlan(estimator.name, 0, 0, nan, nan, False, "it has no planning SE")
    return classical_plan(estimator, spec)


def _check_replicates(replicates) -> None:
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 0:
        raise SweepError(f"replicates: {shown(replicates)} is not allowed; give an integer ≥ 0")


def _classical_plan_of(
    spec: PlanSpec,
    estimator: Estimator,
    found,
    replicates: int,
    seed: int,
    chunk_size: int | None = None,
) -> Plan:
    """The :class:`Plan` of ``estimator``'s integer plan ``found``
    (:class:`~.classical.ClassicalPlan`, one that applies): its ε from the closed-form SE, N_Φ
    alone that of human-only (:data:`kernels.estimators.HUMAN_ONLY`), checked by campaigns
    simulated with that estimator."""
    from binmetric_sweep.sweep.plan.classical import classical_plan

    z = problems([spec]).z[0]
    reachable = found.reachable
    tested = spec.eps if spec.eps is not None and reachable else found.eps
    checks = (math.nan,) * 4
    if replicates:
        simulated = simulate_tests(
            [spec], [found.n_phi], [found.n_m], [tested], replicates, seed,
            chunk_size=chunk_size, estimator=estimator,
        )  # fmt: skip
        checks = tuple(float(v[0]) for v in simulated)
    alone = None
    if spec.eps is not None:
        humans = classical_plan(HUMAN_ONLY, spec.model_copy(update={"budget": None}))
        alone = None if humans.reason else humans.n_phi
    got = {"n_phi": found.n_phi, "n_m": found.n_m, "eps": found.eps, "alone": alone}
    return _plan_of(
        spec, got, z, tested, checks, replicates, seed,
        reachable=reachable, estimator=found.estimator,
    )  # fmt: skip


def plan_estimators(
    spec: PlanSpec | dict,
    estimators: Iterable[str | Estimator],
    *,
    replicates: int = 400,
    seed: int = 0,
) -> list[EstimatorPlan]:
    """The plan of one scenario under each of ``estimators`` (registered values or names),
    each checked by simulated campaigns of that estimator: one
    :class:`~.report.EstimatorPlan` row per estimator.

    The posterior: :func:`plan_grid`'s plan; another estimator:
    :func:`~.classical.classical_plan` (its closed-form SE), as :func:`plan` gives them.
    A row has the plan's sizes, cost, ε and ``reachable``, ``reason`` ("" where it applies;
    else why not, and no plan), the simulated power and type-I rate with their MCSEs,
    ``holds`` (:attr:`Plan.holds`) and ``best``: the cheapest plan that holds (in budget
    mode, the least ε).
    """
    jax.config.update("jax_enable_x64", True)
    use_compilation_cache(DEFAULT, strict=False)
    spec = as_spec(spec)
    _check_replicates(replicates)
    rows = []
    for estimator in map(_estimator_of, estimators):
        if estimator.posterior:
            p = plan_grid([spec], replicates=replicates, seed=seed)[0]
        else:
            found = _closed_form_plan(estimator, spec)
            if found.reason:
                nan = math.nan
                rows.append(
                    EstimatorPlan(
                        estimator.name, 0, 0, nan, nan, False, found.reason, nan, nan, nan, nan
                    )
                )
                continue
            p = _classical_plan_of(spec, estimator, found, replicates, seed)
        rows.append(EstimatorPlan.of(p))
    held = [r for r in rows if r.holds and r.reachable]
    key = "cost" if spec.eps is not None else "eps"
    best = min(held, key=lambda r: getattr(r, key)).estimator if held else None
    return [r._replace(best=r.estimator == best) for r in rows]
