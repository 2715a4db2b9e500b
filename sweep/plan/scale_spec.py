"""A scale's (or named classes') planning scenario (:class:`ScalePlanSpec`), validated.

A human and J judges each give every item one of K classes: a score on an ordered scale
whose classes are its ``values`` (``ratings: scale``, e.g. 1–5), or named ``classes``, each
with its value (``ratings: classes``), as a ``ratings: scale`` or ``classes`` sweep file
has them (:mod:`sweep.spec.scale`). θ = vᵀπ, the mean value, in the values' units (score
points on a 1–5 scale), and so are ε and the plan's SDs. The class shares ``shares`` are π;
each judge's confusion is the off-by-one family
(:func:`kernels.categorical.families.scale_confusion` of ``off_by_one`` and ``off_by_more``,
distance in the order the classes are listed) or an explicit K × K ``confusion`` (row k: the
judge's verdicts on items of class k), every judge the same; their joint confusion is
:func:`~kernels.categorical.families.copying_judges` with ``copy_rate``. The prices, and
what is not priced, are :mod:`.categorical_spec`'s.

**The power check's alternative** (:meth:`ScalePlanSpec.shifted`): the system at θ + ε has
a share δ = ε/(v_max − v_min) of its items moved from the lowest value's class to the
highest's, every other share kept; where the lowest class has no more than δ, θ − ε, δ
moved from the highest to the lowest. A preference (values 0, ½, 1) shifted so is the
preference planner's shift: ``win`` + ε with ties kept. It is the largest move of θ a share
δ can make, so it is the smallest change of the shares that gives ε (a tilt over every
class would move more items). A target ε that neither direction reaches (ε ≥ (v_max −
v_min)·max(π_lowest, π_highest)) is refused.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator, model_validator

from binmetric_sweep.kernels.categorical.counts import Layout
from binmetric_sweep.kernels.categorical.families import scale_confusion
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.plan.categorical_spec import MAX_JUDGES, JudgedPlanSpec
from binmetric_sweep.sweep.plan.spec import validated_fields
from binmetric_sweep.sweep.spec.config import MAX_CLASSES, MAX_OUTCOMES

__all__ = ["ScalePlanSpec", "flag_scale_spec", "scale_spec"]

#: How far a share vector's (or a confusion row's) total may be from 1.
_SUM_TOLERANCE = 1e-9


def _numbers(field: str, raw: Any, what: str) -> tuple[float, ...]:
    """``raw`` (``"1,2,3"`` or a list of numbers) as finite floats; ``what`` says what to
    give."""
    if isinstance(raw, str):
        try:
            raw = [float(p) for p in raw.split(",")]
        except ValueError:
            raise SweepError(f"{field}: {shown(raw)} is not numbers; give {what}") from None
    if not isinstance(raw, list | tuple) or not raw:
        raise SweepError(f"{field}: {shown(raw)} is not numbers; give {what}")
    for v in raw:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise SweepError(f"{field}: {shown(v)} is not a finite number; give {what}")
    return tuple(float(v) for v in raw)


def _listed(numbers) -> str:
    """``1, 2, 3``."""
    return ", ".join(f"{x:g}" for x in numbers)


def _shares(field: str, where: str, numbers: tuple[float, ...], k: int, per: str):
    """``numbers`` checked as K shares in [0, 1] summing to 1; ``where`` (``"row 3 "``)
    names a confusion's row, ``per`` what each share is of."""
    if len(numbers) != k:
        raise SweepError(
            f"{field}: {where}has {len(numbers)} shares; give {k}, one per {per}"
            if where
            else f"{field}: {len(numbers)} shares; give {k}, one per {per}"
        )
    for v in numbers:
        if not 0.0 <= v <= 1.0:
            raise SweepError(
                f"{field}: {where}has {v:g}, not a share in [0, 1]"
                if where
                else f"{field}: {v:g} is not a share in [0, 1]"
            )
    total = math.fsum(numbers)
    if abs(total - 1.0) > _SUM_TOLERANCE:
        raise SweepError(f"{field}: {where}sums to {total:.12g}, not 1")
    return numbers


class ScalePlanSpec(JudgedPlanSpec):
    """One scale (or named classes) planning scenario (the fields of ``sweep plan --ratings
    scale``).

    Attributes:
        ratings: "scale" (the classes are the values, increasing) or "classes" (named, each
            with its value, in any order).
        values: v, the K classes' values (2 to :data:`~sweep.spec.config.MAX_CLASSES`).
        classes: the K classes' names (``ratings: classes`` only).
        shares: π, each class's share of the items (each ≥ 0, summing to 1).
        off_by_one, off_by_more: the off-by-one family's rates (module docstring): a judge
            is one class off with probability ``off_by_one``, two or more with
            ``off_by_more`` (sum ≤ 1; ``off_by_more`` 0 with two classes).
        confusion: instead, one judge's K × K confusion, row k its verdicts' shares on
            items of class k (each row summing to 1).
        judges: J, 1 to :data:`MAX_JUDGES` (K^J ≤ 27 joint verdicts), each with that
            confusion.
        copy_rate: how often a later judge repeats judge 1's verdict, in [0, 1].
        eps: target difference ε between two systems' θ, in the values' units (> 0).
        budget: most one system's campaign may cost.
        gamma, power: the two-sided test's level and the power it must reach at ε.
        cost_human: price of one human rating (> 0).
        cost_judge: one judge verdict's price per judge (each > 0): one value (every
            judge's) or J.
        n_rho_eta: "shared", "known" (the judges' confusion is known) or N separately
            paired items (class shares π; they cost cost_human·N).
    """

    ratings: Literal["scale", "classes"] = "scale"
    values: tuple[float, ...]
    classes: tuple[str, ...] | None = None
    shares: tuple[float, ...]
    off_by_one: float | None = Field(None, ge=0.0, le=1.0)
    off_by_more: float | None = Field(None, ge=0.0, le=1.0)
    confusion: tuple[tuple[float, ...], ...] | None = None
    judges: int = Field(1, ge=1, le=MAX_JUDGES)
    copy_rate: float = Field(0.0, ge=0.0, le=1.0)
    eps: float | None = Field(None, gt=0.0, allow_inf_nan=False)
    budget: float | None = Field(None, gt=0.0, allow_inf_nan=False)
    gamma: float = Field(0.05, gt=0.0, lt=1.0)
    power: float = Field(0.8, ge=0.5, lt=1.0)
    cost_human: float = Field(1.0, gt=0.0, allow_inf_nan=False)
    cost_judge: tuple[float, ...]
    n_rho_eta: Literal["shared", "known"] | int = "shared"

    @field_validator("values", mode="before")
    @classmethod
    def _read_values(cls, raw: Any, info: ValidationInfo) -> Any:
        what = f"2 to {MAX_CLASSES} numbers, one per class, comma-separated"
        values = _numbers("values", raw, what)
        if not 2 <= len(values) <= MAX_CLASSES:
            raise SweepError(f"values: {len(values)} numbers; give {what}")
        if len(set(values)) != len(values):
            raise SweepError(f"values: {_listed(values)} repeats a value")
        if info.data.get("ratings") == "scale" and list(values) != sorted(values):
            raise SweepError(
                f"values: {_listed(values)} are not increasing; a scale lists its values "
                "in order (ratings classes takes them in any order)"
            )
        return values

    @field_validator("classes", mode="before")
    @classmethod
    def _read_classes(cls, raw: Any, info: ValidationInfo) -> Any:
        if raw is None:
            return raw
        if info.data.get("ratings") == "scale":
            raise SweepError("classes: a scale's classes are its values; use ratings classes")
        names = [p.strip() for p in raw.split(",")] if isinstance(raw, str) else raw
        k = len(info.data.get("values", ()))
        if not isinstance(names, list | tuple) or (k and len(names) != k):
            raise SweepError(f"classes: {shown(raw)} is not allowed; give {k} names, one per value")
        if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
            raise SweepError(f"classes: {shown(raw)} are not {len(names)} distinct names")
        return tuple(names)

    @field_validator("shares", mode="before")
    @classmethod
    def _read_shares(cls, raw: Any, info: ValidationInfo) -> Any:
        numbers = _numbers("shares", raw, "one share per value, comma-separated")
        if "values" not in info.data:
            return numbers  # the values' own error is the one shown
        return _shares("shares", "", numbers, len(info.data["values"]), "value")

    @field_validator("off_by_one", "off_by_more", mode="before")
    @classmethod
    def _not_a_number(cls, raw: Any, info: ValidationInfo) -> Any:
        if isinstance(raw, bool):  # pydantic reads True as 1.0
            raise SweepError(f"{info.field_name}: {raw} is not a number")
        return raw

    @field_validator("confusion", mode="before")
    @classmethod
    def _read_confusion(cls, raw: Any, info: ValidationInfo) -> Any:
        if raw is None:
            return raw
        k = len(info.data.get("values", ()))
        what = f"{k or 'K'} rows of {k or 'K'} shares, rows separated by ';'"
        rows = raw.split(";") if isinstance(raw, str) else raw
        if not isinstance(rows, list | tuple):
            raise SweepError(f"confusion: {shown(raw)} is not a matrix; give {what}")
        if k and len(rows) != k:
            raise SweepError(f"confusion: {len(rows)} rows; give {k}, one per true class")
        matrix = []
        for i, row in enumerate(rows, 1):
            numbers = _numbers(f"confusion: row {i}", row, f"{k or 'K'} shares, comma-separated")
            matrix.append(_shares("confusion", f"row {i} ", numbers, k or len(numbers), "class"))
        return tuple(matrix)

    @model_validator(mode="after")
    def _check(self) -> ScalePlanSpec:
        k = len(self.values)
        family = self.off_by_one is not None or self.off_by_more is not None
        if family == (self.confusion is not None):
            raise SweepError(
                "off_by_one, confusion: give each judge's confusion by the off-by-one family "
                "or as a matrix, " + ("not both" if family else "one of them")
            )
        if self.ratings == "classes" and self.classes is None:
            raise SweepError(f"classes: required with ratings classes; give {k} names")
        a, b = self.family_rates
        if family and k == 2 and b > 0:
            raise SweepError(
                f"off_by_more: {b:g} is not allowed with 2 classes (none is two away); allowed: 0"
            )
        if family and a + b > 1.0 + _SUM_TOLERANCE:
            raise SweepError(
                f"off_by_more: off_by_one {a:g} + off_by_more {b:g} is above 1; allowed: a sum "
                "≤ 1 (the judge is right on the rest)"
            )
        if k**self.judges > MAX_OUTCOMES:
            most = max(j for j in range(1, MAX_JUDGES + 1) if k**j <= MAX_OUTCOMES)
            raise SweepError(
                f"judges: {self.judges} judges of {k} classes make {k**self.judges} joint "
                f"verdicts; allowed: at most {MAX_OUTCOMES} ({most} judge{'s' * (most > 1)})"
            )
        if self.eps is not None and self.shifted(self.eps) is None:
            lo, hi = self._ends
            span = self.values[hi] - self.values[lo]
            raise SweepError(
                f"eps: {self.eps:g} is more than θ can move here: θ ± ε moves a share "
                f"ε/{span:g} of the items between the lowest value's class {self._name(lo)} "
                f"(share {self.shares[lo]:g}) and the highest's {self._name(hi)} (share "
                f"{self.shares[hi]:g}); allowed: ε < "
                f"{span * max(self.shares[lo], self.shares[hi]):g}"
            )
        self._check_prices_and_target()
        return self

    @property
    def family_rates(self) -> tuple[float, float]:
        """(off_by_one, off_by_more), a rate not given 0 (both 0 with an explicit matrix)."""
        return (self.off_by_one or 0.0, self.off_by_more or 0.0)

    @property
    def _ends(self) -> tuple[int, int]:
        """The classes of the lowest and the highest value."""
        return int(np.argmin(self.values)), int(np.argmax(self.values))

    def _name(self, i: int) -> str:
        return self.classes[i] if self.classes is not None else f"{self.values[i]:g}"

    @property
    def layout(self) -> Layout:
        """The classes' values and the judges."""
        return Layout(self.values, self.judges)

    @property
    def theta(self) -> float:
        """θ = vᵀπ, the mean value."""
        return math.fsum(v * p for v, p in zip(self.values, self.shares, strict=True))

    def shifted(self, eps: float) -> ScalePlanSpec | None:
        """The same campaign of a system at θ + ε (θ − ε where the lowest class has no more
        than a share ε/(v_max − v_min)) by the module docstring's move of shares; None
        where neither direction can move θ by ε."""
        lo, hi = self._ends
        delta = eps / (self.values[hi] - self.values[lo])
        if self.shares[lo] - delta > 0.0:
            source, sink = lo, hi
        elif self.shares[hi] - delta > 0.0:
            source, sink = hi, lo
        else:
            return None
        shares = list(self.shares)
        shares[source] -= delta
        shares[sink] += delta
        return self.model_copy(update={"shares": tuple(shares)})

    def single_confusion(self) -> np.ndarray:
        """``(K, K)`` one judge's confusion: the matrix given, or the family's."""
        if self.confusion is not None:
            return np.asarray(self.confusion, float)
        a, b = self.family_rates
        return np.asarray(scale_confusion(a, b, len(self.values)))

    def lane_rates(self, b: int):
        """``(b, K)`` π and ``(b, K, K)`` one judge's confusion (every lane the same)."""
        k = len(self.values)
        shares = np.tile(np.asarray(self.shares, float), (b, 1))
        single = np.broadcast_to(self.single_confusion(), (b, k, k))
        return shares, single

    def campaign_words(self) -> str:
        """The report's words for θ, the class shares, the judges and their confusion."""

        named = "" if self.classes is None else f"classes {', '.join(self.classes)} of "
        if self.confusion is None:
            a, b = self.family_rates
            confusion = f"off by one class with probability {a:g}, by two or more {b:g}"
        else:
            right = _listed(np.diag(self.single_confusion()))
            confusion = f"of the given confusion (right {right}, class by class)"
        return (
            f"{self.ratings} plan per system for θ = {self.theta:g} ({named}values "
            f"{_listed(self.values)} with shares {_listed(self.shares)}); {self.judges_words()} "
            f"{confusion}"
        )


def scale_spec(source: ScalePlanSpec | dict) -> ScalePlanSpec:
    """A validated :class:`ScalePlanSpec`; errors name the field as an argument
    (``shares: sums to 0.95, not 1``)."""
    if isinstance(source, ScalePlanSpec):
        return source
    return validated_fields(ScalePlanSpec, dict(source), lambda field: field)


def flag_scale_spec(given: dict) -> ScalePlanSpec:
    """The :class:`ScalePlanSpec` of ``sweep plan --ratings scale``'s (or ``classes``') flags;
    errors name the flag (``--confusion: row 3 sums to 0.9, not 1``)."""
    return validated_fields(ScalePlanSpec, given, lambda f: f"--{f.replace('_', '-')}")
