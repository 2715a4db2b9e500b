"""A preference campaign's planning scenario (:class:`PreferencePlanSpec`), validated.

A human and J judges see two outputs, A (shown first) and B, and say which is better or
that they tie (MODEL.md, "Ratings with more than two classes, and several judges"): the
class shares are :func:`kernels.categorical.families.preference_shares` of ``win`` and
``tie``, each judge's confusion :func:`~kernels.categorical.families.preference_confusion`
of ``accuracy``, ``tie_rate`` and ``position_bias`` (every judge the same), their joint
confusion :func:`~kernels.categorical.families.copying_judges` with ``copy_rate``, as a
``ratings: preference`` sweep file builds them; θ = win + ½·tie. The prices, and what is
not priced, are :mod:`.categorical_spec`'s.

The power check's alternative (:meth:`PreferencePlanSpec.shifted`): ``win`` moved by ε with
``tie`` kept (θ + ε), or by −ε where A could not be better that often.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator, model_validator

from binmetric_sweep.kernels.categorical.counts import Layout
from binmetric_sweep.kernels.categorical.families import (
    PREFERENCE_VALUES,
    preference_confusion,
    preference_shares,
)
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.plan.categorical_spec import MAX_JUDGES, JudgedPlanSpec
from binmetric_sweep.sweep.plan.spec import validated_fields

__all__ = ["MAX_JUDGES", "PreferencePlanSpec", "flag_preference_spec", "preference_spec"]


class PreferencePlanSpec(JudgedPlanSpec):
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

    #: The kind's name in the report's JSON and the simulation's keys.
    ratings: ClassVar[str] = "preference"

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

    @field_validator("win", "tie", "accuracy", "tie_rate", "position_bias", mode="before")
    @classmethod
    def _not_a_number(cls, raw: Any, info: ValidationInfo) -> Any:
        if isinstance(raw, bool):  # pydantic reads True as 1.0
            raise SweepError(f"{info.field_name}: {raw} is not a number")
        return raw

    @model_validator(mode="after")
    def _check(self) -> PreferencePlanSpec:
        if self.win + self.tie >= 1.0:
            raise SweepError(
                f"tie: win {self.win:g} + tie {self.tie:g} is not below 1; B must be better on "
                "some items (allowed: win + tie < 1)"
            )
        self._check_prices_and_target()
        return self

    @property
    def layout(self) -> Layout:
        """The preference classes' values and the judges."""
        return Layout(PREFERENCE_VALUES, self.judges)

    @property
    def theta(self) -> float:
        """θ = win + ½·tie, A's win rate with ties counted half."""
        return self.win + 0.5 * self.tie

    def shifted(self, eps: float) -> PreferencePlanSpec | None:
        """The same campaign of a system at θ + ε: ``win`` + ε, ties kept (B better on ε
        fewer items); at θ − ε (``win`` − ε) where win + ε + tie ≥ 1; None where neither is
        a preference campaign."""
        if self.win + eps + self.tie < 1.0:
            return self.model_copy(update={"win": float(self.win + eps)})
        if self.win - eps > 0.0:
            return self.model_copy(update={"win": float(self.win - eps)})
        return None

    def lane_rates(self, b: int):
        """``(b, 3)`` π of ``win`` and ``tie`` and ``(b, 3, 3)`` one judge's confusion of
        ``accuracy``, ``tie_rate`` and ``position_bias``, as a preference sweep builds them."""
        shares = np.asarray(preference_shares(np.full(b, self.win), np.full(b, self.tie)))
        single = preference_confusion(
            np.full(b, self.accuracy), np.full(b, self.tie_rate), np.full(b, self.position_bias)
        )
        return shares, single

    def campaign_words(self) -> str:
        """The report's words for θ, the class shares, the judges and their confusion."""
        return (
            f"preference plan per system for θ = {self.theta:g} (win {self.win:g}, tie "
            f"{self.tie:g}); {self.judges_words()} of accuracy {self.accuracy:g}, tie rate "
            f"{self.tie_rate:.3g}, position bias {self.position_bias:g}"
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
