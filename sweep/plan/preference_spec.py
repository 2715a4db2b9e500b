"""A preference campaign's planning scenario (:class:`PreferencePlanSpec`), validated.

A human and J judges see two outputs, A (shown first) and B, and say which is better or
that they tie (MODEL.md, "Ratings with more than two classes, and several judges"): the
class shares are :func:`kernels.categorical.families.preference_shares` of ``win`` and
``tie``, each judge's confusion :func:`~kernels.categorical.families.preference_confusion`
of ``accuracy``, ``tie_rate`` and ``position_bias`` (every judge the same), their joint
confusion :func:`~kernels.categorical.families.copying_judges` with ``copy_rate``, as a
``ratings: preference`` sweep file builds them; θ = win + ½·tie.

Prices: a human verdict ``cost_human``, judge j's verdict ``cost_judge[j]`` (one value is
every judge's). A plan of (N_Φ, N_M) costs cost_human·N_Φ + Σ_j cost_judge_j·N_M, plus
cost_human·N for a separate paired set of N items. As in the binary planner
(:class:`~.spec.PlanSpec`), the judges' verdicts on the paired items (the N_Φ human-rated
items where they are shared, or the N of a separate set) are not priced: with a shared
set, pricing them is a human price of cost_human + Σ_j cost_judge_j.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from binmetric_sweep.kernels.categorical.counts import CategoricalDesign, Layout
from binmetric_sweep.kernels.categorical.families import (
    PREFERENCE_VALUES,
    copying_judges,
    preference_confusion,
    preference_shares,
)
from binmetric_sweep.kernels.paired import SHARED, PairedDesign
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.plan.spec import check_target, plan_paired, validated_fields

__all__ = ["MAX_JUDGES", "PreferencePlanSpec", "flag_preference_spec", "preference_spec"]

#: The most judges a preference plan prices (their joint verdicts: 3^J outcomes).
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


class PreferencePlanSpec(BaseModel):
    """One preference planning scenario (the fields of ``sweep plan --ratings preference``).

    Attributes:
        win: share of items on which A is better, in (0, 1).
        tie: share on which they tie, in [0, 1); win + tie < 1 (B is better on the rest).
        accuracy: probability a judge knows the answer (else it guesses), in [0, 1].
        tie_rate: a guess's probability of "tie", in [0, 1] (default ⅓).
        position_bias: a guess's lean towards A, the side shown first, in [−1, 1].
        judges: J, 1 to :data:`MAX_JUDGES`, each with that confusion.
        copy_rate: how often a later judge repeats judge 1's verdict, in [0, 1].
        eps: target difference ε between two systems' θ, in (0, 1).
        budget: most one system's campaign may cost.
        gamma, power: the two-sided test's level and the power it must reach at ε.
        cost_human: price of one human verdict (> 0).
        cost_judge: one judge verdict's price per judge (each > 0): one value (every
            judge's) or J.
        n_rho_eta: "shared", "known" (the judges' confusion is known) or N separately
            paired items (class shares π; they cost cost_human·N).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    win: float = Field(gt=0.0, lt=1.0)
    tie: float = Field(ge=0.0, lt=1.0)
    accuracy: float = Field(ge=0.0, le=1.0)
    tie_rate: float = Field(1.0 / 3.0, ge=0.0, le=1.0)
    position_bias: float = Field(0.0, ge=-1.0, le=1.0)
    judges: int = Field(1, ge=1, le=MAX_JUDGES)
    copy_rate: float = Field(0.0, ge=0.0, le=1.0)
    eps: float | None = Field(None, gt=0.0, lt=1.0)
    budget: float | None = Field(None, gt=0.0, allow_inf_nan=False)
    gamma: float = Field(0.05, gt=0.0, lt=1.0)
    power: float = Field(0.8, ge=0.5, lt=1.0)
    cost_human: float = Field(1.0, gt=0.0, allow_inf_nan=False)
    cost_judge: tuple[float, ...]
    n_rho_eta: Literal["shared", "known"] | int = "shared"
    _paired: PairedDesign = PrivateAttr(SHARED)

    @field_validator(
        "win", "tie", "accuracy", "tie_rate", "position_bias", "copy_rate", "eps", "budget",
        "gamma", "power", "cost_human",
        mode="before",
    )  # fmt: skip
    @classmethod
    def _not_a_flag(cls, raw: Any, info: ValidationInfo) -> Any:
        if isinstance(raw, bool):  # pydantic reads True as 1.0
            raise SweepError(f"{info.field_name}: {raw} is not a number")
        return raw

    @field_validator("judges", mode="before")
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

    @field_validator("cost_judge", mode="before")
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

    @field_validator("n_rho_eta", mode="before")
    @classmethod
    def _spelling(cls, raw: Any) -> Any:
        paired = plan_paired(raw)
        return paired.n_rho_eta if paired.separate else paired.kind.value

    @model_validator(mode="after")
    def _check(self) -> PreferencePlanSpec:
        self._paired = plan_paired(self.n_rho_eta)
        if self.win + self.tie >= 1.0:
            raise SweepError(
                f"tie: win {self.win:g} + tie {self.tie:g} is not below 1; B must be better on "
                "some items (allowed: win + tie < 1)"
            )
        if len(self.cost_judge) not in (1, self.judges):
            raise SweepError(
                f"cost_judge: {len(self.cost_judge)} prices for {self.judges} judge"
                f"{'s' * (self.judges > 1)}; give one price (every judge's) or one per judge"
            )
        check_target(self)
        return self

    @property
    def paired(self) -> PairedDesign:
        """The scenario's paired design (a separate set's class shares are π)."""
        return self._paired

    @property
    def layout(self) -> Layout:
        """The preference classes' values and the judges."""
        return Layout(PREFERENCE_VALUES, self.judges)

    @property
    def theta(self) -> float:
        """θ = win + ½·tie, A's win rate with ties counted half."""
        return self.win + 0.5 * self.tie

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

    def one_judge(self) -> PreferencePlanSpec:
        """The same campaign with judge 1 alone, at its price."""
        return self.model_copy(
            update={"judges": 1, "copy_rate": 0.0, "cost_judge": (self.prices[0],)}
        )

    def with_win(self, win: float) -> PreferencePlanSpec:
        """The same campaign of a system whose share of A-better items is ``win`` (ties
        kept): θ moves by the change in win."""
        return self.model_copy(update={"win": float(win)})

    def designs(self, n_phi, n_m, win=None) -> CategoricalDesign:
        """``(B,)`` NumPy :class:`CategoricalDesign` lanes at sizes ``n_phi``, ``n_m`` (and
        ``win``, default the scenario's), as a preference sweep builds them."""
        n_phi = np.asarray(n_phi, float)
        n_m = np.broadcast_to(np.asarray(n_m, float), n_phi.shape)
        b = n_phi.shape[0]
        win = np.full(b, self.win) if win is None else np.broadcast_to(np.asarray(win, float), b)
        shares = np.asarray(preference_shares(win, np.full(b, self.tie)))
        single = preference_confusion(
            np.full(b, self.accuracy), np.full(b, self.tie_rate), np.full(b, self.position_bias)
        )
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


def preference_spec(source: PreferencePlanSpec | dict) -> PreferencePlanSpec:
    """A validated :class:`PreferencePlanSpec`; errors name the field as an argument
    (``win: 1.2 is out of range; allowed: (0, 1)``)."""
    if isinstance(source, PreferencePlanSpec):
        return source
    return validated_fields(PreferencePlanSpec, dict(source), lambda field: field)


def flag_preference_spec(given: dict) -> PreferencePlanSpec:
    """The :class:`PreferencePlanSpec` of ``sweep plan --ratings preference``'s flags; errors
    name the flag and its range (``--win: 1.2 is out of range; allowed: (0, 1)``)."""
    return validated_fields(PreferencePlanSpec, given, lambda f: f"--{f.replace('_', '-')}")
