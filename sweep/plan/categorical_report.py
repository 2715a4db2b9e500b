"""A K-class campaign's plans and how they are shown: :class:`CategoricalPlan` (one
estimator's), :class:`CategoricalPlans` (one scenario's, with judge 1 alone beside several
judges), their readable lines and JSON-able dicts. The scenario's kind (a preference, a
scale) speaks only through its spec: its ``ratings`` name and ``campaign_words``
(:mod:`.categorical_spec`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import NamedTuple

from binmetric_sweep.sweep.plan.categorical_spec import JudgedPlanSpec
from binmetric_sweep.sweep.plan.report import HOLDS_MCSE, PER_SYSTEM
from binmetric_sweep.sweep.plan.spec import UNLIMITED

__all__ = ["CategoricalPlan", "CategoricalPlans", "NUTSCheck"]


class NUTSCheck(NamedTuple):
    """The posterior SD of θ measured by NUTS at a plan's expected counts.

    Attributes:
        sd: NUTS's posterior SD of θ.
        mcse: its Monte Carlo SE.
        rhat, ess, divergences: the fit's split R-hat, bulk ESS and divergent transitions.
        chains, warmup, samples: the sampler's settings.
        sd_asymptotic: the asymptotic SD at the same sizes (:mod:`.categorical_sd`).
    """

    sd: float
    mcse: float
    rhat: float
    ess: float
    divergences: int
    chains: int
    warmup: int
    samples: int
    sd_asymptotic: float = math.nan

    @property
    def ratio(self) -> float:
        """σ_NUTS/σ_asymptotic."""
        return self.sd / self.sd_asymptotic


class CategoricalPlan(NamedTuple):
    """One estimator's plan of a K-class scenario, per system (as :class:`~.report.Plan`).

    Attributes:
        estimator: its name.
        n_phi, n_m, cost, eps: the plan (0 and NaN where there is none).
        sd: the planning SD of θ at the plan (ε/(√2·z)): a classical estimator's SE; the
            posterior's asymptotic SD times ``kappa``.
        reachable: the target is met within the budget (budget mode: a plan was found).
        reason: "" where there is a plan, else why not.
        posterior: it is the posterior (planned by its asymptotic SD, checked by NUTS).
        kappa: σ_NUTS/σ_asymptotic the plan was re-solved with (1: not rescaled).
        checks: the posterior's NUTS checks: at the first plan, and at the re-solved one.
        n_phi_alone, n_phi_unlimited, eps_floor: as :class:`~.categorical.Sizes`.
        eps_tested: the difference the simulation tested (the target where reached).
        power, power_mcse, type1_rate, type1_mcse: the simulated rates (NaN: not run).
        replicates: campaigns per system simulated (0: none).
    """

    estimator: str
    n_phi: int
    n_m: int
    cost: float
    eps: float
    sd: float
    reachable: bool
    reason: str
    posterior: bool = False
    kappa: float = 1.0
    checks: tuple[NUTSCheck, ...] = ()
    n_phi_alone: int | None = None
    n_phi_unlimited: int | None = None
    eps_floor: float | None = None
    eps_tested: float = math.nan
    power: float = math.nan
    power_mcse: float = math.nan
    type1_rate: float = math.nan
    type1_mcse: float = math.nan
    replicates: int = 0

    @classmethod
    def none(cls, estimator: str, reason: str) -> CategoricalPlan:
        """No plan, and why."""
        nan = math.nan
        return cls(estimator, 0, 0, nan, nan, nan, False, reason)

    @property
    def sd_source(self) -> str:
        """Where σ comes from, in words."""
        if not self.posterior:
            return "its SE at expected counts"
        if not self.checks:
            return "asymptotic SD (not checked by NUTS)"
        if self.kappa != 1.0:
            return f"asymptotic SD × κ = {self.kappa:.3f} (NUTS)"
        return "asymptotic SD (NUTS agrees)"

    def holds(self, spec: JudgedPlanSpec) -> bool:
        """The simulated type-I rate is at most γ and the power at least the promised, each
        within :data:`~.report.HOLDS_MCSE` Monte Carlo SEs (False when not simulated)."""
        return bool(
            self.type1_rate <= spec.gamma + HOLDS_MCSE * self.type1_mcse
            and self.power >= spec.power - HOLDS_MCSE * self.power_mcse
        )

    def as_dict(self, spec: JudgedPlanSpec) -> dict:
        """JSON-able (NaN as None), with ``sd_source``, ``holds`` and the NUTS checks."""
        out = self._asdict()
        out["checks"] = [c._asdict() | {"ratio": c.ratio} for c in self.checks]
        out["sd_source"] = self.sd_source
        out["holds"] = self.holds(spec) if self.replicates else None
        return _clean(out)


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


@dataclass(frozen=True)
class CategoricalPlans:
    """One K-class scenario's plans, an estimator each.

    Attributes:
        spec: the scenario.
        plans: one :class:`CategoricalPlan` per estimator asked for.
        one_judge: with J ≥ 2, the same estimators' plans with judge 1 alone at its price
            (None otherwise).
        seed: the simulations' seed.
        default_replicates: the number of simulated campaigns was not given (the posterior
            is then not simulated).
    """

    spec: JudgedPlanSpec
    plans: tuple[CategoricalPlan, ...]
    one_judge: CategoricalPlans | None = None
    seed: int = 0
    default_replicates: bool = True

    @property
    def reachable(self) -> bool:
        """Every plan that applies meets its target within the budget."""
        return all(p.reachable or p.reason for p in self.plans)

    def best(self) -> CategoricalPlan | None:
        """The cheapest reachable plan (budget mode: the least ε) among those whose simulated
        promise holds where simulated."""
        key = "cost" if self.spec.eps is not None else "eps"
        ok = [
            p
            for p in self.plans
            if not p.reason and p.reachable and (not p.replicates or p.holds(self.spec))
        ]
        return min(ok, key=lambda p: getattr(p, key)) if ok else None

    def second_judge_pays(self, estimator: str) -> bool | None:
        """Whether the J judges' plan of ``estimator`` is cheaper (budget mode: a smaller ε)
        than judge 1's alone (None: one judge, or either has no plan)."""
        if self.one_judge is None:
            return None
        many = next(p for p in self.plans if p.estimator == estimator)
        one = next(p for p in self.one_judge.plans if p.estimator == estimator)
        if many.reason or one.reason or not (many.reachable and one.reachable):
            return None
        key = "cost" if self.spec.eps is not None else "eps"
        return getattr(many, key) < getattr(one, key)

    def as_dict(self) -> dict:
        """The scenario's fields, every plan, and judge 1's plans alone (JSON-able)."""
        return _clean(
            {
                "ratings": self.spec.ratings,
                "scenario": self.spec.model_dump() | {"theta": self.spec.theta},
                "judge_prices": list(self.spec.prices),
                "plans": [p.as_dict(self.spec) for p in self.plans],
                "one_judge": None if self.one_judge is None else self.one_judge.as_dict(),
                "second_judge_pays": None
                if self.one_judge is None
                else {p.estimator: self.second_judge_pays(p.estimator) for p in self.plans},
                "seed": self.seed,
            }
        )

    def json(self) -> str:
        """One JSON object."""
        return json.dumps(self.as_dict(), ensure_ascii=False)

    def _head(self) -> str:
        s = self.spec
        target = f"ε ≤ {s.eps:g}" if s.eps is not None else ""
        if s.budget is not None:
            target += (" within " if target else "") + f"budget {s.budget:,g}"
        prices = " + ".join(f"{p:g}" for p in s.prices)
        return (
            f"{s.campaign_words()}; {s.paired_words()}; {target} (γ = {s.gamma:g}, power "
            f"{s.power:g}); a human verdict {s.cost_human:g}, an item's judge verdicts {prices}:"
        )

    def table(self) -> list[str]:
        """One row per estimator: sizes, cost, ε, σ's source, simulated power and type-I."""
        s = self.spec
        out = [
            f"{'estimator':<13}{'N_Φ':>10}{'N_M':>13}{'cost':>13}{'ε':>9}"
            f"{'power':>15}{'type-I rate':>15}  SE source"
        ]
        for p in self.plans:
            if p.reason:
                out.append(f"{p.estimator:<13}  no plan: {p.reason}")
                continue
            sim = (
                f"{p.power:.3f} ± {p.power_mcse:.3f}".rjust(15)
                + f"{p.type1_rate:.3f} ± {p.type1_mcse:.3f}".rjust(15)
                if p.replicates
                else f"{'—':>15}{'—':>15}"
            )
            unmet = "" if p.reachable else "  (target unmet)"
            out.append(
                f"{p.estimator:<13}{p.n_phi:>10,}{p.n_m:>13,}{p.cost:>13,.2f}{p.eps:>9.5f}"
                f"{sim}  {p.sd_source}{unmet}"
            )
        for p in self.plans:
            for i, c in enumerate(p.checks):
                where = "at the plan" if i == len(p.checks) - 1 else "at the first plan"
                out.append(
                    f"{p.estimator} σ of θ {where}: asymptotic {c.sd_asymptotic:.5f}, NUTS "
                    f"{c.sd:.5f} ± {c.mcse:.5f} (ratio {c.ratio:.3f}; {c.chains} chains × "
                    f"({c.warmup} + {c.samples}), R-hat {c.rhat:.3f}, ESS {c.ess:,.0f}, "
                    f"{c.divergences} divergences)"
                )
        for p in self.plans:
            note = self._note(p)
            if note:
                out.append(f"{p.estimator}: {note}")
        if self.default_replicates and any(p.posterior and not p.reason for p in self.plans):
            out.append(
                "bayes is not simulated by default (3 × R NUTS fits, slow on a CPU: "
                "docs/performance.md): give --replicates R to simulate it too"
            )
        elif any(p.replicates for p in self.plans):
            out.append(
                f"simulated: {max(p.replicates for p in self.plans)} campaigns per system, "
                f"seed {self.seed}, at ε = the target (or the plan's ε where unmet); power "
                f"promised {s.power:g}, γ = {s.gamma:g}"
            )
        return out

    def _note(self, p: CategoricalPlan) -> str:
        """The plan's floors and alternatives, as binary's message says them."""
        s = self.spec
        if p.reason:
            if p.eps_floor is not None and s.eps is not None:
                cap = (
                    f" (the {s.paired.n_rho_eta:,} separately paired items cap what the judges' "
                    "confusion can be learnt to)"
                    if s.paired.separate
                    else ""
                )
                return (
                    f"UNREACHABLE: ε ≤ {s.eps:g} is below ε = {p.eps_floor:.5f}, the least "
                    f"that {UNLIMITED:,} human and judge verdicts give{cap}"
                )
            return ""
        parts = []
        if s.eps is not None and p.reachable:
            if p.n_phi_alone is not None and p.n_m > 0:
                alone = s.cost(p.n_phi_alone, 0)
                saving = 1.0 - p.cost / alone
                parts.append(
                    f"human verdicts alone would need N_Φ = {p.n_phi_alone:,} (cost {alone:,.2f})"
                    + (f": the judges save {100 * saving:.1f} %" if saving > 0 else "")
                )
            elif p.n_m == 0:
                parts.append("judge verdicts do not lower the cost here")
            if p.n_phi_unlimited and s.paired.shared and p.n_m > 0:
                parts.append(
                    f"even unlimited judge verdicts would need N_Φ ≥ {p.n_phi_unlimited:,} (the "
                    "judges' confusion is learnt from the paired items)"
                )
        elif s.eps is not None:
            if p.eps_floor is not None and p.eps_floor > s.eps:
                humans = math.floor((s.budget - s.fixed_cost()) / s.cost_human)
                parts.append(
                    f"UNREACHABLE: with the {humans:,} human verdicts the budget buys, even "
                    f"unlimited judge verdicts give ε ≥ {p.eps_floor:.5f}; the budget's least ε "
                    f"{p.eps:.5f} is shown"
                )
            else:
                parts.append(
                    f"UNREACHABLE within the budget {s.budget:,.2f}: ε ≤ {s.eps:g} costs more; "
                    f"its least ε {p.eps:.5f} is shown"
                )
        return "; ".join(parts)

    def comparison(self) -> list[str]:
        """With J ≥ 2 judges: each estimator's cost (budget mode: ε) with them and with judge
        1 alone, and which is cheaper."""
        if self.one_judge is None:
            return []
        s = self.spec
        key, unit = ("cost", ",.2f") if s.eps is not None else ("eps", ".5f")
        prices = " + ".join(f"{p:g}" for p in s.prices)
        out = [
            f"is a second judge worth its cost? {s.judges} judges at {prices} vs judge 1 alone "
            f"at {s.prices[0]:g} ({'cost' if key == 'cost' else 'ε'}):"
        ]
        for many in self.plans:
            one = next(p for p in self.one_judge.plans if p.estimator == many.estimator)

            def shown(p):
                return "no plan" if p.reason else format(getattr(p, key), unit)

            verdict = self.second_judge_pays(many.estimator)
            word = {True: f"{s.judges} judges", False: "judge 1 alone", None: "—"}[verdict]
            if verdict is not None and getattr(many, key) == getattr(one, key):
                word = "neither (the same cost)"
            elif verdict is not None and key == "cost":
                word += f" (saves {abs(many.cost - one.cost):,.2f})"
            out.append(
                f"  {many.estimator:<13}{s.judges} judges {shown(many):>12}   one judge "
                f"{shown(one):>12}   cheaper: {word}"
            )
        return out

    def lines(self) -> list[str]:
        """The readable answer: the scenario, the plans, the checks, the one-judge table."""
        out = [self._head(), *self.table()]
        if self.one_judge is not None:
            out.append("with judge 1 alone:")
            out += self.one_judge.table()
            out += self.comparison()
        best = self.best()
        what = "cheapest" if self.spec.eps is not None else "least ε"
        out.append(
            f"{what} among the plans that hold (or were not simulated): "
            + (f"{best.estimator} (cost {best.cost:,.2f}, ε = {best.eps:.5f})" if best else "none")
        )
        out.append(PER_SYSTEM.replace("N_m", "N_M").replace("N_phi", "N_Φ"))
        return out
