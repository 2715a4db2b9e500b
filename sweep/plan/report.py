"""A plan and how it is shown: :class:`Plan` (with its readable lines and JSON-able
dict), its message, the table and JSON lines of many, and the frontier's figure."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

from binmetric_sweep.kernels.estimators import POSTERIOR, is_posterior
from binmetric_sweep.sweep.plan.pilot import Pilot
from binmetric_sweep.sweep.plan.spec import PlanSpec

__all__ = [
    "HOLDS_MCSE",
    "PER_SYSTEM",
    "EstimatorPlan",
    "FrontierPoint",
    "Plan",
    "estimators_json",
    "estimators_text",
    "plan_message",
    "plan_table",
    "plans_json",
]

#: How far (in Monte Carlo SEs) a simulated power or type-I rate may miss its promise
#: before a plan is said not to hold.
HOLDS_MCSE = 2.0


class FrontierPoint(NamedTuple):
    """One point of the target's frontier: the least N_Φ that meets the target at this N_M."""

    n_m: int
    n_phi: int
    cost: float
    eps: float


@dataclass(frozen=True)
class Plan:
    """A plan for one scenario under one estimator (the modes: :mod:`binmetric_sweep.sweep.plan`).

    Sizes and costs are **per system**: ε is the difference between two systems' α that
    the test detects when *each* of them is rated so, so comparing two systems costs twice
    ``cost``; the budget is one system's too.

    Attributes:
        spec: the scenario.
        n_phi: human ratings N_Φ of one system.
        n_m: metric-only ratings N_M of one system.
        cost: one system's cost (including a separate paired set's), in the unit of
            ``spec.cost_human``.
        eps: its ε_{γ,β}: the posterior's exact one (rounded expected counts,
            quadrature); a classical estimator's from its closed-form SE.
        sd: the posterior SD of α at the plan (a classical estimator: its SE).
        reachable: the target is met within the budget (True in budget mode).
        n_phi_alone: N_Φ that human ratings alone need for the target (None without one).
        cost_alone: their cost.
        n_phi_unlimited: least N_Φ with unlimited metric ratings (N_M = :data:`UNLIMITED`).
        eps_floor: smallest ε any N_M gives with all of the budget spent on human
            ratings (None without a budget, and for a classical estimator).
        eps_tested: the difference the simulation tested: the target where the plan
            reaches it, else the plan's own ``eps``.
        empirical_power: share of simulated campaigns whose z-test rejects at α vs α ± ε.
        empirical_power_mcse: its Monte Carlo SE √(p(1 − p)/R).
        type1_rate: share that reject with both systems at α.
        type1_mcse: its Monte Carlo SE.
        replicates: R, the simulated campaigns per rate (0: not simulated, rates NaN).
        seed: the simulation's seed.
        frontier: for several N_M, the least N_Φ meeting the target (target mode;
            the posterior's only).
        message: one or two plain sentences on the answer.
        estimator: the name of the estimator planned for: the posterior's ("bayes"), or
            one planned by its closed-form SE (N_Φ alone is then ``human_only``'s, and
            ``n_phi_unlimited`` is None).
        pilot: the pilot file α, ρ, η were read from (:func:`~.pilot.read_pilot`), or None.
    """

    spec: PlanSpec
    n_phi: int
    n_m: int
    cost: float
    eps: float
    sd: float
    reachable: bool
    n_phi_alone: int | None
    cost_alone: float | None
    n_phi_unlimited: int | None
    eps_floor: float | None
    eps_tested: float
    empirical_power: float
    empirical_power_mcse: float
    type1_rate: float
    type1_mcse: float
    replicates: int
    seed: int
    frontier: tuple[FrontierPoint, ...] = field(default=())
    message: str = ""
    estimator: str = POSTERIOR.name
    pilot: Pilot | None = None

    @property
    def holds(self) -> bool:
        """The simulated type-I rate is at most γ and the power at least the promised, each
        within :data:`HOLDS_MCSE` Monte Carlo SEs (False when not simulated)."""
        s = self.spec
        return bool(
            self.type1_rate <= s.gamma + HOLDS_MCSE * self.type1_mcse
            and self.empirical_power >= s.power - HOLDS_MCSE * self.empirical_power_mcse
        )

    def as_dict(self) -> dict:
        """The plan as JSON-able data (NaN as None); the scenario's fields are included."""
        out = self.spec.model_dump()
        skip = ("spec", "frontier", "pilot")
        out.update({k: v for k, v in asdict(self).items() if k not in skip})
        out["frontier"] = [point._asdict() for point in self.frontier]
        out["pilot"] = None if self.pilot is None else self.pilot.as_dict()
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in out.items()
        }

    def lines(self) -> list[str]:
        """A readable answer: the pilot read, the plan (per system), the alternatives, the
        simulation, the frontier."""
        s = self.spec
        test = f"γ = {s.gamma:g}, power {s.power:g}"
        who = "" if is_posterior(self.estimator) else f" ({self.estimator})"
        out = [] if self.pilot is None else [self.pilot.line(s)]
        out += [
            f"plan per system{who}: N_Φ = {self.n_phi:,} human + N_M = {self.n_m:,} metric "
            "ratings"
            + (f" (+ {s.paired.n_rho_eta:,} paired)" if s.paired.separate else "")
            + f": cost {self.cost:,.2f} (two systems {2 * self.cost:,.2f}), ε = "
            f"{self.eps:.5f} ({test})",
            self.message,
        ]
        if self.replicates:
            out.append(
                f"simulated ({self.replicates} campaigns, ε = {self.eps_tested:.5f}, "
                f"seed {self.seed}): power {self.empirical_power:.3f} ± "
                f"{self.empirical_power_mcse:.3f} (promised {s.power:g}); type-I rate "
                f"{self.type1_rate:.3f} ± {self.type1_mcse:.3f} (γ = {s.gamma:g})"
            )
        if self.frontier:
            out.append("frontier (least N_Φ meeting the target at each N_M):")
            out.append(f"{'N_M':>14} {'N_Φ':>12} {'cost':>14} {'eps':>9}")
            for pt in self.frontier:
                mark = "  <- plan" if (pt.n_m, pt.n_phi) == (self.n_m, self.n_phi) else ""
                out.append(f"{pt.n_m:>14,} {pt.n_phi:>12,} {pt.cost:>14,.2f} {pt.eps:>9.5f}{mark}")
        return out


def plan_message(spec: PlanSpec, n_phi, n_m, cost, eps, reachable, alone, unlimited, floor) -> str:
    """:attr:`Plan.message`: one or two plain sentences on what the plan means.

    Args:
        spec: the scenario.
        n_phi, n_m, cost, eps: the plan's sizes, cost and ε.
        reachable: whether it meets the target within the budget.
        alone: the least N_Φ meeting the target without metric ratings (None: none does).
        unlimited: the least N_Φ meeting it with unlimited metric ratings (None: none does).
        floor: the least ε the budget reaches with unlimited metric ratings (None: no budget).
    """
    parts = []
    if spec.eps is not None:
        alone_text = (
            f"N_Φ alone would need {alone:,} (cost {spec.cost(alone, 0):,.2f})"
            if alone is not None
            else "N_Φ alone cannot reach it"
        )
        if reachable:
            saving = 1.0 - cost / spec.cost(alone, 0) if alone is not None else float("nan")
            parts.append(
                f"cheapest plan for ε ≤ {spec.eps:g}; {alone_text}"
                + (f": the metric saves {100 * saving:.1f} %" if saving > 0 else "")
                + "."
            )
            if n_m == 0:
                parts.append("Metric ratings do not lower the cost here.")
            elif unlimited is not None and not spec.paired.known:
                parts.append(
                    f"Even unlimited metric ratings would need N_Φ ≥ {unlimited:,} (ρ and η are "
                    "learnt from the paired items, which caps what the metric can replace)."
                )
        elif floor is not None and floor > spec.eps:
            humans = int(math.floor((spec.budget - spec.fixed_cost()) / spec.cost_human))
            parts.append(
                f"UNREACHABLE: no amount of metric ratings reaches ε ≤ {spec.eps:g} within the "
                f"budget {spec.budget:,.2f}: with the {humans:,} human ratings it buys, even "
                f"unlimited metric ratings give ε ≥ {floor:.5f} (the metric saturates once ρ and "
                f"η are uncertain); {alone_text}. The budget reaches ε = {eps:.5f} at best: that "
                "plan is shown, and simulated at that ε."
            )
        else:
            parts.append(
                f"UNREACHABLE within the budget {spec.budget:,.2f}: ε ≤ {spec.eps:g} costs more; "
                f"{alone_text}. The budget reaches ε = {eps:.5f} at best: that plan is shown, "
                "and simulated at that ε."
            )
    else:
        parts.append(f"smallest ε within the budget {spec.budget:,.2f}.")
        if floor is not None:
            parts.append(
                f"With all of it on human ratings and unlimited metric ratings ε would be "
                f"{floor:.5f}."
            )
    return " ".join(parts)


#: What every plan's sizes and cost are, said under a table of them.
PER_SYSTEM = (
    "N_phi, N_m and cost are per system: comparing two systems rates each so (twice the cost)"
)


def plan_table(plans: Sequence[Plan]) -> str:
    """One row per plan: the scenario's varying inputs and the answer."""
    head = (
        f"{'#':>3} {'alpha':>6} {'rho':>5} {'eta':>5} {'paired':>8} {'target':>8} {'budget':>10} "
        f"{'N_phi':>10} {'N_m':>12} {'cost':>12} {'eps':>8} {'power':>13} {'type-I':>13} reach"
    )
    rows = [head]
    for i, pl in enumerate(plans):
        s = pl.spec
        sim = (
            (
                f"{pl.empirical_power:.3f}±{pl.empirical_power_mcse:.3f}",
                f"{pl.type1_rate:.3f}±{pl.type1_mcse:.3f}",
            )
            if pl.replicates
            else ("-", "-")
        )
        rows.append(
            f"{i:>3} {s.alpha:>6g} {s.rho:>5g} {s.eta:>5g} {s.n_rho_eta!s:>8} "
            f"{'-' if s.eps is None else f'{s.eps:g}':>8} "
            f"{'-' if s.budget is None else f'{s.budget:,.0f}':>10} "
            f"{pl.n_phi:>10,} {pl.n_m:>12,} {pl.cost:>12,.2f} {pl.eps:>8.5f} "
            f"{sim[0]:>13} {sim[1]:>13} {'yes' if pl.reachable else 'NO'}"
        )
    rows.append(PER_SYSTEM)
    return "\n".join(rows)


def plans_json(plans: Sequence[Plan]) -> str:
    """One JSON object per line."""
    return "\n".join(json.dumps(pl.as_dict(), ensure_ascii=False) for pl in plans)


class EstimatorPlan(NamedTuple):
    """One estimator's plan of a scenario (a row of :func:`~.planner.plan_estimators`),
    per system as :class:`Plan`'s, checked by campaigns simulated with that estimator.

    Attributes:
        estimator: its name.
        n_phi, n_m, cost, eps, reachable: its plan (:class:`Plan`'s fields; 0 and NaN where
            it does not apply).
        reason: "" where it applies, else why not.
        power, power_mcse, type1_rate, type1_mcse: the simulated rates (NaN: not simulated).
        holds: :attr:`Plan.holds`.
        best: the cheapest plan that holds among the rows (budget mode: the least ε).
    """

    estimator: str
    n_phi: int
    n_m: int
    cost: float
    eps: float
    reachable: bool
    reason: str
    power: float
    power_mcse: float
    type1_rate: float
    type1_mcse: float
    holds: bool = False
    best: bool = False

    @classmethod
    def of(cls, plan: Plan) -> EstimatorPlan:
        """The row of a :class:`Plan` (``best`` left to the table)."""
        return cls(
            plan.estimator,
            plan.n_phi,
            plan.n_m,
            plan.cost,
            plan.eps,
            plan.reachable,
            "",
            plan.empirical_power,
            plan.empirical_power_mcse,
            plan.type1_rate,
            plan.type1_mcse,
            plan.holds,
        )


def estimators_text(rows: Sequence[EstimatorPlan], spec) -> str:
    """:func:`~.planner.plan_estimators`' rows as a table, an estimator a row, and which is
    cheapest (budget mode: the least ε) among those whose simulated promise holds."""
    target = f"ε = {spec.eps:g}" if spec.eps is not None else f"budget {spec.budget:,g}"
    lines = [
        f"plans per system for α = {spec.alpha:g}, ρ = {spec.rho:g}, η = {spec.eta:g}, {target} "
        f"(γ = {spec.gamma:g}, power {spec.power:g}; a human rating {spec.cost_human:g}, a "
        f"metric rating {spec.cost_metric:g}); each simulated with its own estimator:",
        f"{'estimator':<13}{'N_Φ':>9}{'N_M':>12}{'cost':>13}{'ε':>9}"
        f"{'power':>16}{'type-I rate':>16}  holds",
    ]
    for r in (row._asdict() for row in rows):
        if r["reason"]:
            lines.append(f"{r['estimator']:<13}  does not apply: {r['reason']}")
            continue
        sim = (
            f"{r['power']:.3f} ± {r['power_mcse']:.3f}".rjust(16)
            + f"{r['type1_rate']:.3f} ± {r['type1_mcse']:.3f}".rjust(16)
            if math.isfinite(r["power"])
            else f"{'—':>16}{'—':>16}"
        )
        mark = "yes" if r["holds"] else "no"
        lines.append(
            f"{r['estimator']:<13}{r['n_phi']:>9,}{r['n_m']:>12,}{r['cost']:>13,.2f}"
            f"{r['eps']:>9.5f}{sim}  {mark}" + ("" if r["reachable"] else "  (target unmet)")
        )
    best = next((r._asdict() for r in rows if r.best), None)
    what = "cheapest" if spec.eps is not None else "least ε"
    lines.append(
        f"{what} among those whose simulated power and type-I rate hold: "
        + (
            f"{best['estimator']} (cost {best['cost']:,.2f}, ε = {best['eps']:.5f})"
            if best
            else "none"
        )
    )
    return "\n".join(lines)


def estimators_json(rows: Sequence[EstimatorPlan], pilot: Pilot | None = None) -> str:
    """:func:`~.planner.plan_estimators`' rows as a JSON list (null for a number not computed),
    each with the ``pilot`` its rates were read from (null without one)."""

    def value(v):
        return None if isinstance(v, float) and not math.isfinite(v) else v

    read = None if pilot is None else pilot.as_dict()
    return json.dumps(
        [{k: value(v) for k, v in row._asdict().items()} | {"pilot": read} for row in rows],
        ensure_ascii=False,
    )
