"""What every K-class planning scenario shares (:class:`JudgedPlanSpec`): J judges each
priced, how their confusion is learnt, the target, and what the planner asks of a scenario.

A preference (:mod:`.preference_spec`) and a scale or named classes (:mod:`.scale_spec`)
are two subclasses. Each declares every field itself, its own first, so that its dump keeps
its own order; the shared ones are ``judges``, ``copy_rate``, ``eps``, ``budget``,
``gamma``, ``power``, ``cost_human``, ``cost_judge`` and ``n_rho_eta``, checked here. What
the planner (:mod:`.categorical`) and its report (:mod:`.categorical_report`) ask of a
subclass:

* ``ratings``: its kind's name (the report's JSON, and the simulation's keys);
* ``layout``: the classes' values and the judges; ``theta``: θ = vᵀπ;
* ``lane_rates(b)``: ``(b, K)`` π and ``(b, K, K)`` one judge's C, as a sweep builds them;
* ``shifted(eps)``: the same campaign of a system at θ + ε (or θ − ε), the power check's
  alternative, or None where there is none;
* ``campaign_words()``: the report's words for θ, the classes and the judges.

Prices: a human rating ``cost_human``, judge j's verdict ``cost_judge[j]`` (one value is
every judge's). A plan of (N_Φ, N_M) costs cost_human·N_Φ + Σ_j cost_judge_j·N_M, plus
cost_human·N for a separate paired set of N items. As in the binary planner
(:class:`~.spec.PlanSpec`), the judges' verdicts on the paired items (the N_Φ human-rated
items where they are shared, or the N of a separate set) are not priced: with a shared
set, pricing them is a human price of cost_human + Σ_j cost_judge_j.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationInfo, field_validator

from binmetric_sweep.kernels.categorical.counts import CategoricalDesign
from binmetric_sweep.kernels.categorical.families import copying_judges
from binmetric_sweep.kernels.paired import SHARED, PairedDesign
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.plan.spec import check_target, plan_paired

__all__ = ["MAX_JUDGES", "JudgedPlanSpec"]

#: The most judges a K-class plan prices (their joint verdicts: K^J outcomes).
MAX_JUDGES = 3


def _prices(raw: Any) -> Any:
    """``--cost-judge``'s spellings (``0.01``, ``"0.01,0.02"``, a list) as a tuple of numbers,
    each checked by the field."""
    if isinstance(raw, str):
        parts = [p.strip() for p in raw.split(",")]
        try:
            return tuple(float(p) for p in parts)
        except ValueError:
            raise SweepError(
                f"cost_judge: {shown(raw)} is not a price; give one price > 0 (every judge's) "
                "or one per judge, comma-separated"
            ) from None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return (float(raw),)
    return raw


class JudgedPlanSpec(BaseModel):
    """The validators and prices of a K-class scenario whose J judges rate every item (module
    docstring); the fields are a subclass's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    _paired: PairedDesign = PrivateAttr(SHARED)

    @field_validator(
        "copy_rate", "eps", "budget", "gamma", "power", "cost_human",
        mode="before", check_fields=False,
    )  # fmt: skip
    @classmethod
    def _not_a_flag(cls, raw: Any, info: ValidationInfo) -> Any:
        if isinstance(raw, bool):  # pydantic reads True as 1.0
            raise SweepError(f"{info.field_name}: {raw} is not a number")
        return raw

    @field_validator("judges", mode="before", check_fields=False)
    @classmethod
    def _whole(cls, raw: Any) -> Any:
        value = raw
        if isinstance(raw, str) and raw.strip().isdigit():
            value = int(raw)
        elif isinstance(raw, float) and math.isfinite(raw) and raw == int(raw):
            value = int(raw)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_JUDGES:
            raise SweepError(
                f"judges: {shown(raw)} is not allowed; give a whole number from 1 to {MAX_JUDGES}"
            )
        return value

    @field_validator("cost_judge", mode="before", check_fields=False)
    @classmethod
    def _price_list(cls, raw: Any) -> Any:
        prices = _prices(raw)
        if not isinstance(prices, tuple | list) or not prices:
            raise SweepError(
                f"cost_judge: {shown(raw)} is not a price; give one price > 0 (every judge's) "
                "or one per judge, comma-separated"
            )
        for p in prices:
            ok = isinstance(p, int | float) and not isinstance(p, bool)
            if not ok or not math.isfinite(p) or p <= 0:
                raise SweepError(
                    f"cost_judge: {shown(p)} is not allowed; each judge's price must be a "
                    "finite number > 0"
                )
        return tuple(float(p) for p in prices)

    @field_validator("n_rho_eta", mode="before", check_fields=False)
    @classmethod
    def _spelling(cls, raw: Any) -> Any:
        paired = plan_paired(raw)
        return paired.n_rho_eta if paired.separate else paired.kind.value

    def _check_prices_and_target(self) -> None:
        """A subclass's last check: one price or one per judge, and a target (eps or budget)
        that a budget covers; sets the paired design."""
        self._paired = plan_paired(self.n_rho_eta)
        if len(self.cost_judge) not in (1, self.judges):
            raise SweepError(
                f"cost_judge: {len(self.cost_judge)} prices for {self.judges} judge"
                f"{'s' * (self.judges > 1)}; give one price (every judge's) or one per judge"
            )
        check_target(self)

    @property
    def paired(self) -> PairedDesign:
        """The scenario's paired design (a separate set's class shares are π)."""
        return self._paired

    @property
    def prices(self) -> tuple[float, ...]:
        """Each of the J judges' price of a verdict."""
        return self.cost_judge * self.judges if len(self.cost_judge) == 1 else self.cost_judge

    @property
    def judge_price(self) -> float:
        """Σ_j cost_judge_j: what the judges' verdicts on one judge-only item cost."""
        return float(sum(self.prices))

    def fixed_cost(self) -> float:
        """The cost of a separate paired set (0 when shared or known)."""
        return self.cost_human * self.paired.n_pair if self.paired.separate else 0.0

    def cost(self, n_phi, n_m):
        """cost_human·N_Φ + Σ_j cost_judge_j·N_M + the fixed cost (NumPy or float)."""
        return self.cost_human * n_phi + self.judge_price * n_m + self.fixed_cost()

    def one_judge(self):
        """The same campaign with judge 1 alone, at its price."""
        return self.model_copy(
            update={"judges": 1, "copy_rate": 0.0, "cost_judge": (self.prices[0],)}
        )

    def lane_rates(self, b: int) -> tuple[np.ndarray, Any]:
        """``(b, K)`` π and ``(b, K, K)`` one judge's confusion of ``b`` lanes (a subclass's)."""
        raise NotImplementedError

    def designs(self, n_phi, n_m) -> CategoricalDesign:
        """``(B,)`` NumPy :class:`CategoricalDesign` lanes at sizes ``n_phi``, ``n_m``, as a
        sweep of this kind builds them: the judges' joint confusion is
        :func:`~kernels.categorical.families.copying_judges` of one judge's, with
        ``copy_rate``."""
        n_phi = np.asarray(n_phi, float)
        n_m = np.broadcast_to(np.asarray(n_m, float), n_phi.shape)
        b = n_phi.shape[0]
        shares, single = self.lane_rates(b)
        confusion = np.asarray(copying_judges(single, self.judges, np.full(b, self.copy_rate)))
        paired = self.paired
        n_pair = np.full(b, float(paired.n_pair if paired.separate else 0))
        return CategoricalDesign(
            shares=shares,
            confusion=confusion,
            n_phi=n_phi,
            n_rho_eta=np.where(paired.shared, n_phi, n_pair),
            paired_shares=shares,
            n_m=np.array(n_m),
            shared_paired=np.full(b, paired.shared),
            known=np.full(b, paired.known),
        )

    def paired_words(self) -> str:
        """How the judges' confusion is learnt, in the report's words."""
        if self.paired.separate:
            return f"{self.paired.n_rho_eta:,} separately paired items"
        return {"shared": "paired on the human-rated items", "known": "confusion known"}[
            self.n_rho_eta
        ]

    def judges_words(self) -> str:
        """``1 judge``, ``2 judges (copy rate 0.3)``."""
        words = f"{self.judges} judge{'s' * (self.judges > 1)}"
        if self.judges > 1:
            words += f" (copy rate {self.copy_rate:g})"
        return words
