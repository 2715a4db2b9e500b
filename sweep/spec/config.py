"""Sweep files: parse, validate and normalise a YAML sweep description.

A sweep file names the grid of configurations to simulate and how (see the
README's sweep-file reference). :func:`load_sweep` turns a path, YAML text or a
dict into a :class:`SweepSpec` whose grid axes are already normalised: every
axis is either a tuple of values or the name of the axis it is tied to (or
``"known"`` for ``n_rho_eta``). Anything wrong raises :class:`SweepError` with
one line naming the field, the value and what is allowed.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from binmetric_sweep.kernels.estimators import (
    POSTERIOR,
    Estimator,
    estimator_named,
    estimator_names,
    registered,
)
from binmetric_sweep.kernels.paired import PairedKind
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.spec.arena import ARENA_ESTIMATORS, ArenaEstimator
from binmetric_sweep.sweep.spec.categorical import JOINT, JUDGE_MODELS, JudgeModel
from binmetric_sweep.sweep.spec.rating_model import (
    ARENA,
    BINARY,
    PREFERENCE,
    RatingModel,
    scale_model,
)
from binmetric_sweep.sweep.spec.scale import ScaleSettings
from binmetric_sweep.sweep.spec.values import canonical_number
from binmetric_sweep.sweep.storage.columns import (
    GRID_AXES,
    PROBABILITY_AXES,
    SIZE_AXES,
    SURFACE,
    columns_of,
)

__all__ = [
    "AXES",
    "PROBABILITY_AXES",
    "SIZE_AXES",
    "MAX_SIZE",
    "SamplerSettings",
    "GridBlock",
    "SweepSpec",
    "load_sweep",
    "paired_kind",
    "spec_digest",
    "spec_from_canonical",
]

#: Grid axes in the order their Cartesian product varies (the last fastest), its
#: probabilities and its sample sizes: the column registry's (:mod:`sweep.storage.columns`).
AXES = GRID_AXES
#: The binary grid's sizes, the axes a binary size may be tied to.
_BINARY_SIZES = tuple(a for a in SIZE_AXES if a in GRID_AXES)
#: Largest sample size accepted (counts stay exact integers in float64 far beyond it).
MAX_SIZE = 10**9


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


#: Scientific notation that YAML 1.1 (PyYAML) reads as a string: ``1e4``, ``1.5e3``,
#: ``1e-3`` (its floats need a dot and a signed exponent, as ``1.5e+3``).
_SCIENTIFIC = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+")


def read_number(value: Any) -> Any:
    """``value`` as the number it writes if it is a string in scientific notation
    (``"1e4"`` → 10000, ``"1e-3"`` → 0.001), else unchanged.

    YAML reads ``n_m: 1e4`` as the string ``"1e4"``; a number field reads it as a
    number, and a size then says whether it is an integer.
    """
    if not (isinstance(value, str) and _SCIENTIFIC.fullmatch(value.strip())):
        return value
    number = Decimal(value.strip())
    if number == number.to_integral_value() and abs(number) < 2**63:
        return int(number)  # exact: a seed of 12345678901234567e0 is that seed
    return float(number)


def _read_numbers(raw: Any, fields: tuple[str, ...]) -> Any:
    """``raw`` with :func:`read_number` applied to the named fields (and their lists' items)."""
    if not isinstance(raw, dict) or not any(f in raw for f in fields):
        return raw
    out = dict(raw)
    for field in fields:
        if field in out:
            value = out[field]
            out[field] = (
                [read_number(v) for v in value] if isinstance(value, list) else read_number(value)
            )
    return out


#: Sampler keys and values that earlier versions took, and why they went: a sweep
#: file that still names one is refused with this reason.
REMOVED_SAMPLER_KEYS = {
    "dense_mass": (
        "was removed in 0.33.0: only NumPyro's transition loop adapted a dense mass "
        "matrix, and that loop ran at half the leapfrog loop's speed or less "
        "(docs/performance.md); delete the key (the mass matrix is diagonal)"
    ),
}
REMOVED_LOOPS = {
    "transition": (
        "was removed in 0.33.0: NumPyro's transition loop makes every lane wait for the "
        "batch's longest trajectory and ran at half the leapfrog loop's speed or less "
        "(docs/performance.md); use auto, leapfrog or kernel"
    ),
}
#: What the canonical form keeps of removed keys: the one value each can still be
#: said to have, so that a sweep's digest (and so its directory) is what it was.
_REMOVED_CANONICAL = {"dense_mass": False}


class SamplerSettings(_Strict):
    """NUTS settings of a sweep (``sampler:``); ignored by ``method: quadrature``."""

    chains: int = Field(4, ge=2, le=64)
    warmup: int = Field(500, ge=10, le=1_000_000)
    samples: int = Field(1000, ge=10, le=1_000_000)
    target_accept: float = Field(0.8, gt=0.0, lt=1.0)
    max_tree_depth: int = Field(10, ge=1, le=15)
    warmup_max_tree_depth: int = Field(6, ge=1, le=15)
    loop: Literal["auto", "leapfrog", "kernel"] = "auto"

    @model_validator(mode="before")
    @classmethod
    def _numbers(cls, raw: Any) -> Any:
        return _read_numbers(raw, tuple(f for f in cls.model_fields if f != "loop"))

    @model_validator(mode="before")
    @classmethod
    def _refuse_removed(cls, raw: Any) -> Any:
        if isinstance(raw, dict):
            for key, why in REMOVED_SAMPLER_KEYS.items():
                if key in raw:
                    raise SweepError(f"sampler.{key}: {why}")
            loop = raw.get("loop")
            if isinstance(loop, str) and loop in REMOVED_LOOPS:
                raise SweepError(f"sampler.loop: {shown(loop)} {REMOVED_LOOPS[loop]}")
        return raw


AxisSpec = tuple[float, ...] | str


def _number_list(field: str, raw: Any, length: int) -> list[float]:
    if isinstance(raw, list):
        raw = [read_number(v) for v in raw]
    if (
        not isinstance(raw, list)
        or len(raw) != length
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in raw)
    ):
        raise SweepError(f"grid.{field}: {shown(raw)} is not a list of {length} numbers")
    try:
        values = [float(v) for v in raw]
    except OverflowError:  # an int beyond float's range
        values = [math.inf]
    if not all(math.isfinite(v) for v in values):
        raise SweepError(f"grid.{field}: {shown(raw)} holds a non-finite number")
    return values


def _generated_values(field: str, raw: dict) -> tuple[list[float], bool]:
    """Values of a ``{linspace|logspace|range: [...]}`` axis, and whether to round sizes."""
    if len(raw) != 1 or next(iter(raw)) not in ("linspace", "logspace", "range"):
        raise SweepError(
            f"grid.{field}: {shown(raw)} is not an axis; allowed: a list of values, a number, "
            "the name of another axis, {linspace: [start, stop, num]}, "
            "{logspace: [start_exp, stop_exp, num]} or {range: [start, stop, step]}"
        )
    kind, args = next(iter(raw.items()))
    start, stop, third = _number_list(f"{field}.{kind}", args, 3)
    if kind == "range":
        if third <= 0:
            raise SweepError(f"grid.{field}.range: step {third:g} must be positive")
        count = math.ceil((stop - start) / third - 1e-9)
        if count > 10_000_000:
            raise SweepError(f"grid.{field}.range: {count} values; at most 10,000,000 per axis")
        return [start + i * third for i in range(max(count, 0))], False
    if third != int(third) or not 1 <= third <= 10_000_000:
        raise SweepError(
            f"grid.{field}.{kind}: num {third:g} must be an integer from 1 to 10,000,000"
        )
    values = np.linspace(start, stop, int(third))
    if kind == "logspace":
        values = 10.0**values
    return values.tolist(), True


def axis_values(field: str, raw: Any, low: float = 0.0, high: float = 1.0) -> AxisSpec:
    """Normalise one grid axis: a sorted-as-given tuple of distinct values, or a tie name.

    A size (:data:`SIZE_AXES`) is a whole number; any other value a number in
    [``low``, ``high``].

    Scientific notation that YAML leaves a string (``1e4``) is read as a number
    (:func:`read_number`), alone or in a list.
    """
    raw = read_number(raw)
    if isinstance(raw, str):
        return raw
    rounded = False
    if isinstance(raw, dict):
        values, rounded = _generated_values(field, raw)
    elif isinstance(raw, list):
        values = [read_number(v) for v in raw]
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        values = [raw]
    else:
        raise SweepError(
            f"grid.{field}: {shown(raw)} is not an axis; allowed: a list of values, a number, "
            "the name of another axis, or a {linspace|logspace|range: [...]} mapping"
        )
    if not values:
        raise SweepError(f"grid.{field}: the axis is empty; give at least one value")
    size = field in SIZE_AXES
    out: dict[float, None] = {}  # ordered and duplicate-free
    for v in values:
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or (isinstance(v, float) and not math.isfinite(v))  # an int is finite, if huge
        ):
            raise SweepError(f"grid.{field}: value {shown(v)} is not a finite number")
        if size:
            if rounded:
                v = math.floor(v + 0.5)
            if v != int(v) or not 0 <= v <= MAX_SIZE:
                why = "is not an integer" if v != int(v) else "is out of range"
                raise SweepError(
                    f"grid.{field}: value {shown(v)} {why}; sizes are integers "
                    f"from 0 to {MAX_SIZE:,}"
                )
            v = float(int(v))
        elif not low <= v <= high:
            raise SweepError(
                f"grid.{field}: value {shown(v)} is out of range; allowed: numbers in "
                f"[{low:g}, {high:g}]"
            )
        out[canonical_number(float(v))] = None
    return tuple(out)


def _shown(axis: AxisSpec) -> str:
    return (
        repr(axis) if isinstance(axis, str) else repr([int(v) if v == int(v) else v for v in axis])
    )


#: The sweep file's spellings of ``n_rho_eta`` that are not sizes or a tie: the shared
#: paired set (N_ρη = N_Φ, the default) and known ρ, η.
SHARED_SPELLING = "n_phi"
KNOWN_SPELLING = "known"


def paired_kind(n_rho_eta: AxisSpec) -> PairedKind:
    """The paired design a sweep file's ``n_rho_eta`` axis spells: ``n_phi`` the shared set,
    ``known`` known ρ and η, sizes or a tie to another size axis a separate set."""
    if n_rho_eta == SHARED_SPELLING:
        return PairedKind.SHARED
    if n_rho_eta == KNOWN_SPELLING:
        return PairedKind.KNOWN
    return PairedKind.SEPARATE


class _Block(_Strict):
    """What every grid block is: the Cartesian product of its axes (``axes``, in the order
    it varies), whose paired design its ``n_rho_eta`` spells."""

    axes: ClassVar[tuple[str, ...]] = ()

    @property
    def paired(self) -> PairedKind:
        """The block's paired design (:func:`paired_kind` of its ``n_rho_eta``)."""
        return paired_kind(self.n_rho_eta)

    def free_axes(self) -> tuple[str, ...]:
        """Axes with values of their own (the ones the Cartesian product runs over)."""
        return tuple(a for a in self.axes if not isinstance(getattr(self, a), str))

    def size(self) -> int:
        """Configurations this block makes before duplicates are removed."""
        return math.prod(len(getattr(self, a)) for a in self.free_axes())


class GridBlock(_Block):
    """One block of the grid: the Cartesian product of its axes (ties follow their axis).

    An axis is a tuple of values or the name of the axis it is tied to;
    ``n_rho_eta`` may also be ``"known"`` (ρ and η are known numbers) and its
    default, ``"n_phi"``, means the shared paired set (N_ρη = N_Φ, P = n₊).
    ``psi`` defaults to ``"alpha"``.
    """

    axes: ClassVar[tuple[str, ...]] = AXES
    alpha: AxisSpec
    rho: AxisSpec
    eta: AxisSpec
    n_phi: AxisSpec
    n_rho_eta: AxisSpec = "n_phi"
    psi: AxisSpec = "alpha"
    n_m: AxisSpec

    @field_validator("*", mode="before")
    @classmethod
    def _normalise(cls, raw: Any, info) -> AxisSpec:
        return axis_values(info.field_name, raw)

    @model_validator(mode="after")
    def _check_ties(self) -> GridBlock:
        ties = [field for field in AXES if isinstance(getattr(self, field), str)]
        for field in ties:  # every name first, so that a chain below follows only axes
            value = getattr(self, field)
            if value == KNOWN_SPELLING:
                if field != "n_rho_eta":
                    raise SweepError(
                        f"grid.{field}: 'known' applies only to n_rho_eta; give values or "
                        "the name of another axis"
                    )
                continue
            family = PROBABILITY_AXES if field in PROBABILITY_AXES else _BINARY_SIZES
            if value not in family:
                allowed = ", ".join(a for a in family if a != field)
                extra = " or 'known'" if field == "n_rho_eta" else ""
                raise SweepError(
                    f"grid.{field}: {shown(value)} names no axis it can be tied to; "
                    f"allowed: {allowed}{extra}"
                )
        for field in ties:
            if getattr(self, field) == KNOWN_SPELLING:
                continue
            chain = [field]
            while isinstance(getattr(self, chain[-1]), str):
                target = getattr(self, chain[-1])
                if target == KNOWN_SPELLING:
                    raise SweepError(f"grid.{field}: tied to n_rho_eta, which is 'known'")
                if target in chain:
                    raise SweepError(
                        f"grid.{field}: ties form a cycle {' -> '.join([*chain, target])}; "
                        "one axis of a tie must have values"
                    )
                chain.append(target)
        if not self.paired.separate and self.psi != "alpha":
            raise SweepError(
                f"grid.psi: {_shown(self.psi)} applies only to a separate paired set; with "
                f"n_rho_eta {self.n_rho_eta!r} the share of adequate paired items is α "
                "(leave psi out, or give n_rho_eta a list of sizes)"
            )
        return self

    def resolved(self, field: str) -> tuple[float, ...] | None:
        """The values an axis takes, following ties; None for a known n_rho_eta."""
        if field == "n_rho_eta" and self.paired.known:
            return None  # no axis can be tied to a known n_rho_eta (_check_ties)
        value = getattr(self, field)
        while isinstance(value, str):
            value = getattr(self, value)
        return value


#: The axes of a preference block (``ratings: preference``) and of a scale block
#: (``ratings: scale`` or ``classes``), in the order their Cartesian product varies: the
#: column registry's grid axes of each.
PREFERENCE_AXES = tuple(c.name for c in columns_of(SURFACE, "preference") if c.grid)
SCALE_AXES = tuple(c.name for c in columns_of(SURFACE, "scale") if c.grid)
#: Most judges a configuration may have: J judges' joint verdict is one of K^J outcomes.
MAX_JUDGES = 3
#: Most joint verdicts of a configuration's judges (three preference judges: 3³): the
#: joint model's confusion has K·(K^J − 1) free rates.
MAX_OUTCOMES = 27
#: Most classes of a scale.
MAX_CLASSES = 10
_DEFAULTS = {
    "tie_rate": (canonical_number(1.0 / 3.0),),
    "position_bias": (0.0,),
    "judges": (1.0,),
    "copy_rate": (0.0,),
}


def _judge_models(raw: Any) -> tuple[str, ...]:
    """The ``judge_model`` axis: distinct names of :data:`JUDGE_MODELS`, in the order given."""
    values = raw if isinstance(raw, list | tuple) else [raw]
    allowed = ", ".join(JUDGE_MODELS)
    if not values:
        raise SweepError(f"grid.judge_model: the list is empty; allowed: {allowed}")
    for value in values:
        JudgeModel.of(value, "grid.judge_model")
    if len(set(values)) != len(values):
        raise SweepError(f"grid.judge_model: {list(values)} repeats a value")
    return tuple(values)


def _categorical_axis(field: str, raw: Any) -> AxisSpec:
    """Normalise one numeric axis of a categorical block (or its ``judge_model``, or
    ``n_rho_eta``'s spellings): such a grid ties no axes."""
    if field == "judge_model":
        return _judge_models(raw)
    if field == "n_rho_eta" and raw in (SHARED_SPELLING, KNOWN_SPELLING):
        return raw
    if isinstance(raw, str):
        extra = " or 'n_phi' or 'known'" if field == "n_rho_eta" else ""
        raise SweepError(
            f"grid.{field}: {shown(raw)} is not an axis; give a list of values{extra} "
            "(a categorical grid ties no other axes)"
        )
    if field == "position_bias":
        return axis_values(field, raw, low=-1.0)
    if field == "judges":
        return _whole_numbers(field, raw, 1, MAX_JUDGES)
    return axis_values(field, raw)


def _whole_numbers(field: str, raw: Any, low: int, high: int) -> tuple[float, ...]:
    """An axis of whole numbers from ``low`` to ``high`` (a count that is not a size)."""
    values = axis_values(field, raw, low=float(low), high=float(high))
    bad = [v for v in values if v != int(v)]
    if bad:
        raise SweepError(
            f"grid.{field}: value {shown(bad[0])} is not a whole number; allowed: {low} to {high}"
        )
    return values


def _names(field: str, raw: Any) -> tuple[str, ...]:
    """An axis of names (``shares``, ``confusion``): distinct strings, in the order given."""
    values = [raw] if isinstance(raw, str) else raw
    if not isinstance(values, list | tuple) or not values:
        raise SweepError(f"grid.{field}: {shown(raw)} is not a list of names")
    for value in values:
        if not isinstance(value, str) or not value:
            raise SweepError(f"grid.{field}: {shown(value)} is not a name")
    if len(set(values)) != len(values):
        raise SweepError(f"grid.{field}: {list(values)} repeats a name")
    return tuple(values)


class _JudgesBlock(_Block):
    """What every categorical block has beside its class shares and confusion: the
    judges' number, copying and model (``judges`` default 1, ``copy_rate`` 0,
    ``judge_model`` names of :data:`JUDGE_MODELS`, default joint: the posterior's model
    of several judges, their joint verdict with any correlation, or independent given the
    truth) and the sizes. ``n_rho_eta`` is ``"n_phi"`` (the default: the human-rated items
    are the paired ones), ``"known"`` (the judges' confusion is known, no paired set) or
    sizes (a separate paired set, with the configuration's class shares)."""

    judges: AxisSpec = _DEFAULTS["judges"]
    copy_rate: AxisSpec = _DEFAULTS["copy_rate"]
    judge_model: tuple[str, ...] = (JOINT.name,)
    n_phi: AxisSpec
    n_rho_eta: AxisSpec = SHARED_SPELLING
    n_m: AxisSpec


class PreferenceBlock(_JudgesBlock):
    """One block of a preference grid: the Cartesian product of its axes.

    ``tie_rate`` defaults to ⅓ (a guess is uniform over the three verdicts when
    ``position_bias`` is 0), ``position_bias`` to 0; the judges and sizes are
    :class:`_JudgesBlock`'s.
    """

    axes: ClassVar[tuple[str, ...]] = PREFERENCE_AXES
    win: AxisSpec
    tie: AxisSpec
    accuracy: AxisSpec
    tie_rate: AxisSpec = _DEFAULTS["tie_rate"]
    position_bias: AxisSpec = _DEFAULTS["position_bias"]

    @field_validator("*", mode="before")
    @classmethod
    def _normalise(cls, raw: Any, info) -> AxisSpec:
        return _categorical_axis(info.field_name, raw)

    @model_validator(mode="after")
    def _check(self) -> PreferenceBlock:
        if max(self.win) + max(self.tie) > 1.0 + 1e-12:
            w = next(w for w in self.win if w + max(self.tie) > 1.0 + 1e-12)
            raise SweepError(
                f"grid.tie: win {w:g} + tie {max(self.tie):g} exceeds 1; the shares of items "
                "where A is better and where they tie must sum to at most 1"
            )
        return self


class ScaleBlock(_JudgesBlock):
    """One block of a scale (or classes) grid: the Cartesian product of its axes.

    ``shares`` names the sweep file's class-share vectors; each judge's confusion is
    either the family of ``off_by_one`` (and ``off_by_more``, default 0) or the sweep
    file's matrices named by ``confusion``, not both. The judges and sizes are
    :class:`_JudgesBlock`'s.
    """

    axes: ClassVar[tuple[str, ...]] = SCALE_AXES
    shares: tuple[str, ...]
    off_by_one: AxisSpec | None = None
    off_by_more: AxisSpec | None = None
    confusion: tuple[str, ...] | None = None

    @model_validator(mode="before")
    @classmethod
    def _off_by_more_default(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and "off_by_one" in raw and "off_by_more" not in raw:
            return {**raw, "off_by_more": [0.0]}
        return raw

    @field_validator("*", mode="before")
    @classmethod
    def _normalise(cls, raw: Any, info) -> AxisSpec:
        if raw is None and info.field_name in ("off_by_one", "off_by_more", "confusion"):
            return None  # the confusion given the other way (a canonical form keeps the key)
        if info.field_name in ("shares", "confusion"):
            return _names(info.field_name, raw)
        return _categorical_axis(info.field_name, raw)

    @model_validator(mode="after")
    def _check(self) -> ScaleBlock:
        family = self.off_by_one is not None or self.off_by_more is not None
        if family and self.confusion is not None:
            raise SweepError(
                "grid.confusion: a block gives each judge's confusion by name (confusion) or "
                "by off_by_one and off_by_more, not both"
            )
        if not family and self.confusion is None:
            raise SweepError(
                "grid.off_by_one: required field is missing; give off_by_one (and "
                "off_by_more) or confusion (names of the sweep file's confusions)"
            )
        if family:
            if self.off_by_one is None:
                raise SweepError("grid.off_by_one: required with off_by_more")
            if max(self.off_by_one) + max(self.off_by_more) > 1.0 + 1e-12:
                raise SweepError(
                    f"grid.off_by_more: off_by_one {max(self.off_by_one):g} + off_by_more "
                    f"{max(self.off_by_more):g} exceeds 1; they are shares of one judge's "
                    "verdicts"
                )
        return self

    def free_axes(self) -> tuple[str, ...]:
        """The axes the block gives (the confusion's family or names, not both)."""
        return tuple(a for a in super().free_axes() if getattr(self, a) is not None)


def _chosen_estimators(
    raw: Any, registered: tuple[str, ...], kind: str, allowed: str
) -> tuple[str, ...]:
    """The sweep file's ``estimators`` (a name, a list of names or ``all``) → names of
    ``registered``, in its order; a name outside it, a repeat or an empty list exits with
    one line that says ``kind`` (e.g. "an estimator") and lists what is ``allowed``."""
    allowed = f"{allowed}: {', '.join(registered)}, or all"
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list | tuple) or not names:
        raise SweepError(f"estimators: {shown(raw)} is not a list of estimators; {allowed}")
    for name in names:
        if name != "all" and name not in registered:
            raise SweepError(f"estimators: {shown(name)} is not {kind}; {allowed}")
    if "all" in names:
        return registered
    if len(set(names)) != len(names):
        raise SweepError(f"estimators: {shown(list(names))} names an estimator twice")
    return tuple(name for name in registered if name in names)


class SweepSpec(_Strict):
    """A validated sweep file."""

    name: Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]
    ratings: Literal["binary", "preference", "scale", "classes", "arena"] = "binary"
    counts: Literal["expected", "sampled"] = "expected"
    replicates: int = Field(1, ge=1, le=1_000_000)
    seed: int = Field(0, ge=0, lt=2**63)
    method: Literal["nuts", "quadrature"] = "nuts"
    sampler: SamplerSettings = SamplerSettings()
    estimators: tuple[str, ...] = (POSTERIOR.name,)
    interval: float = Field(0.95, gt=0.0, lt=1.0)
    gamma: tuple[Annotated[float, Field(gt=0.0, lt=1.0)], ...] = (0.05,)
    power: tuple[Annotated[float, Field(ge=0.5, lt=1.0)], ...] = (0.5,)
    grid: tuple[GridBlock, ...]
    shard_size: int = Field(2048, ge=1, le=1_000_000)

    @model_validator(mode="before")
    @classmethod
    def _numbers(cls, raw: Any) -> Any:
        numbers = ("replicates", "seed", "interval", "gamma", "power", "shard_size")
        return _read_numbers(raw, numbers)

    @field_validator("grid", mode="before")
    @classmethod
    def _blocks(cls, raw: Any) -> Any:
        if isinstance(raw, dict):
            return (raw,)
        if isinstance(raw, list) and not raw:
            raise SweepError("grid: the list of blocks is empty; give at least one block")
        return raw

    @field_validator("estimators", mode="before")
    @classmethod
    def _estimator_names(cls, raw: Any) -> Any:
        """A name, a list of names or ``all`` → the registered names, in the registry's order
        (:func:`kernels.estimators.estimator_names`)."""
        return _chosen_estimators(raw, estimator_names(), "an estimator", "allowed")

    @field_validator("gamma", "power", mode="before")
    @classmethod
    def _level_list(cls, raw: Any, info) -> Any:
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return (raw,)
        if isinstance(raw, list) and not raw:
            allowed = "(0, 1)" if info.field_name == "gamma" else "[0.5, 1)"
            raise SweepError(
                f"{info.field_name}: the list is empty; give at least one level in {allowed}"
            )
        return raw

    @model_validator(mode="after")
    def _check(self) -> SweepSpec:
        if self.counts == "expected" and self.replicates != 1:
            raise SweepError(
                f"replicates: {self.replicates} is not allowed with counts 'expected' "
                "(expected counts are one replicate); use 1, or counts 'sampled'"
            )
        for field in ("gamma", "power"):
            levels = getattr(self, field)
            if len(set(levels)) != len(levels):
                raise SweepError(f"{field}: {list(levels)} repeats a level")
        return self

    def configurations_upper_bound(self) -> int:
        """Configurations the grid makes before duplicates across blocks are removed."""
        return sum(block.size() for block in self.grid)

    @property
    def rating_model(self) -> RatingModel:
        """What the sweep's campaigns rate and how (:data:`sweep.spec.rating_model.BINARY`: one
        human and one binary judge label per item)."""
        return BINARY

    def surface_settings(self) -> dict[str, str]:
        """The sweep's settings a surface row records beside ``counts`` and ``method``
        (the column registry's sweep columns of its rating model)."""
        return {}

    def estimator_values(self) -> tuple[Estimator, ...]:
        """The sweep's estimators as registered values, in :attr:`estimators` order."""
        return tuple(estimator_named(name) for name in self.estimators)

    @property
    def has_posterior(self) -> bool:
        """Whether the sweep computes the posterior (fits, by :attr:`method`)."""
        return any(e.posterior for e in self.estimator_values())

    def canonical(self) -> dict:
        """The sweep as plain JSON-able data, defaults filled in (what identifies a sweep).

        Without the posterior, ``method`` and ``sampler`` change no number and
        are left out; with the posterior alone (the default), ``estimators`` is
        left out, so that a sweep file written before the key existed keeps its
        digest.
        """
        data = self.model_dump(mode="json")
        if self.ratings == "binary":
            del data["ratings"]  # a sweep file written before the key existed keeps its digest
        data["sampler"] = {**data["sampler"], **_REMOVED_CANONICAL}
        if self.estimators == (POSTERIOR.name,):
            del data["estimators"]
        elif not self.has_posterior:
            del data["method"], data["sampler"]
        return data


#: ``judge_model`` was a sweep key (0.40.0) before it was an axis; a canonical form keeps
#: it at "joint", which its blocks then all are, and :func:`spec_from_canonical` drops it.
_REMOVED_JUDGE_MODEL = {"judge_model": JOINT.name}


class _CategoricalSweepSpec(SweepSpec):
    """What every sweep of K-class ratings checks: the estimators have a K-class form,
    and the exact rule applies (C known, :attr:`n_classes` ≤ 3)."""

    @property
    def n_classes(self) -> int:
        """K."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _check_categorical(self) -> _CategoricalSweepSpec:
        # The exact rule integrates π alone (kernels/categorical/quadrature.py, K ≤ 3): with
        # C unknown its rows are in the posterior too.
        if self.has_posterior and self.method == "quadrature":
            if self.n_classes > 3:
                raise SweepError(
                    f"method: 'quadrature' integrates at most 3 classes; these ratings have "
                    f"{self.n_classes}: use nuts"
                )
            unknown = [i for i, block in enumerate(self.grid) if not block.paired.known]
            if unknown:
                i = unknown[0]
                where = "it" if len(self.grid) == 1 else f"grid[{i}]"
                raise SweepError(
                    f"method: 'quadrature' applies to a {self.ratings} posterior only with "
                    f"the judges' confusion known (n_rho_eta: known in every block; {where} "
                    f"has n_rho_eta {_shown(self.grid[i].n_rho_eta)}); otherwise π and every "
                    "row of the confusion are sampled: use nuts"
                )

        def has_form(e: Estimator) -> bool:
            return e.posterior or e.categorical is not None

        missing = [e.name for e in self.estimator_values() if not has_form(e)]
        if missing:
            allowed = ", ".join(e.name for e in registered() if has_form(e))
            raise SweepError(
                f"estimators: {missing[0]!r} has no form for K-class ratings; allowed with "
                f"ratings {self.ratings}: {allowed}"
            )
        return self

    def surface_settings(self) -> dict[str, str]:
        return {"ratings": self.ratings}


class PreferenceSweepSpec(_CategoricalSweepSpec):
    """A validated sweep file with ``ratings: preference`` (:class:`PreferenceBlock` grids).

    The posterior's model of several judges is a grid axis (``judge_model``,
    :class:`PreferenceBlock`).
    """

    ratings: Literal["preference"]
    grid: tuple[PreferenceBlock, ...]

    @property
    def n_classes(self) -> int:
        return 3

    @model_validator(mode="before")
    @classmethod
    def _judge_model_is_an_axis(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and "judge_model" in raw:
            raise SweepError(
                "judge_model: is a grid axis; give it in a block as a list, e.g. "
                "judge_model: [joint, independent]"
            )
        return raw

    @property
    def rating_model(self) -> RatingModel:
        """:data:`sweep.spec.rating_model.PREFERENCE`."""
        return PREFERENCE

    def canonical(self) -> dict:
        """As :meth:`SweepSpec.canonical`; a block with the default ``judge_model`` leaves it
        out, and a grid of such blocks keeps the removed sweep key at the one value it can
        still have (:data:`_REMOVED_JUDGE_MODEL`), so that a sweep written when the model
        was a sweep key keeps its digest."""
        data = super().canonical()
        for block in data["grid"]:
            if block["judge_model"] == [JOINT.name]:
                del block["judge_model"]
        if not any("judge_model" in block for block in data["grid"]):
            data.update(_REMOVED_JUDGE_MODEL)
        return data


def _vector(field: str, raw: Any, k: int) -> tuple[float, ...]:
    """K shares in [0, 1] that sum to 1 (a share vector, or a row of a confusion)."""
    if not isinstance(raw, list | tuple) or len(raw) != k:
        got = f"{len(raw)} numbers" if isinstance(raw, list | tuple) else shown(raw)
        raise SweepError(f"{field}: {got}; give {k}, one per class")
    for v in raw:
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= v <= 1.0:
            raise SweepError(f"{field}: {shown(v)} is not a share in [0, 1]")
    total = math.fsum(raw)
    if abs(total - 1.0) > 1e-9:
        raise SweepError(f"{field}: sums to {total:.12g}, not 1")
    return tuple(canonical_number(float(v)) for v in raw)


def _named(field: str, raw: Any, read) -> tuple[tuple[str, Any], ...]:
    """A mapping of names to what ``read(field.name, value)`` makes of each value."""
    if not isinstance(raw, dict) or not raw:
        raise SweepError(f"{field}: {shown(raw)} is not a mapping of names to values")
    for name in raw:
        if not isinstance(name, str) or not name:
            raise SweepError(f"{field}: {shown(name)} is not a name")
    return tuple((name, read(f"{field}.{name}", value)) for name, value in raw.items())


class ScaleSweepSpec(_CategoricalSweepSpec):
    """A validated sweep file with ``ratings: scale`` (an ordered scale whose classes are its
    ``values``, e.g. 1–5) or ``ratings: classes`` (``classes`` named, each with its value):
    :class:`ScaleBlock` grids, the class-share vectors ``shares`` and the confusion
    matrices ``confusions`` their blocks name (:mod:`sweep.spec.scale`)."""

    ratings: Literal["scale", "classes"]
    values: tuple[float, ...]
    classes: tuple[str, ...] | None = None
    shares: tuple[tuple[str, tuple[float, ...]], ...]
    confusions: tuple[tuple[str, tuple[tuple[float, ...], ...]], ...] = ()
    grid: tuple[ScaleBlock, ...]

    @property
    def n_classes(self) -> int:
        return len(self.values)

    @model_validator(mode="before")
    @classmethod
    def _read_classes(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        raw = dict(raw)
        values = raw.get("values")
        if values is None:
            raise SweepError("values: required field is missing; give each class's value")
        if not isinstance(values, list | tuple) or not 2 <= len(values) <= MAX_CLASSES:
            raise SweepError(
                f"values: {shown(values)} is not allowed; give 2 to {MAX_CLASSES} numbers, "
                "one per class"
            )
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise SweepError(f"values: {shown(v)} is not a finite number")
        if len(set(values)) != len(values):
            raise SweepError(f"values: {list(values)} repeats a value")
        ratings, names = raw.get("ratings"), raw.get("classes")
        if ratings == "scale":
            if list(values) != sorted(values):
                raise SweepError(
                    f"values: {list(values)} are not increasing; a scale lists its values in "
                    "order (ratings: classes takes them in any order)"
                )
            if names is not None:
                raise SweepError("classes: a scale's classes are its values; use ratings: classes")
        elif ratings == "classes":
            if not isinstance(names, list) or len(names) != len(values):
                raise SweepError(
                    f"classes: {shown(names)} is not allowed; give {len(values)} names, one per "
                    "value"
                )
            if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
                raise SweepError(f"classes: {shown(names)} are not {len(names)} distinct names")
        k = len(values)
        raw["values"] = tuple(float(v) for v in values)
        if "shares" not in raw:
            raise SweepError("shares: required field is missing; give named share vectors")
        raw["shares"] = _named("shares", raw["shares"], lambda f, v: _vector(f, v, k))

        def matrix(field: str, rows: Any) -> tuple[tuple[float, ...], ...]:
            if not isinstance(rows, list | tuple) or len(rows) != k:
                got = f"{len(rows)} rows" if isinstance(rows, list | tuple) else shown(rows)
                raise SweepError(f"{field}: {got}; give {k} rows, one per true class")
            return tuple(_vector(f"{field}[{i}]", row, k) for i, row in enumerate(rows))

        if raw.get("confusions", {}) != {}:  # a file may name none
            raw["confusions"] = _named("confusions", raw["confusions"], matrix)
        else:
            raw["confusions"] = ()
        return raw

    @model_validator(mode="after")
    def _check_scale(self) -> ScaleSweepSpec:
        k = self.n_classes
        shares, confusions = dict(self.shares), dict(self.confusions)
        for i, block in enumerate(self.grid):
            where = "grid" if len(self.grid) == 1 else f"grid[{i}]"
            for field, known in (("shares", shares), ("confusion", confusions)):
                for name in getattr(block, field) or ():
                    if name not in known:
                        allowed = ", ".join(known) or f"none (the sweep file has no {field}s)"
                        raise SweepError(
                            f"{where}.{field}: {name!r} is not one of the sweep file's "
                            f"{'shares' if field == 'shares' else 'confusions'}; allowed: "
                            f"{allowed}"
                        )
            if block.off_by_more is not None and k == 2 and max(block.off_by_more) > 0:
                raise SweepError(
                    f"{where}.off_by_more: {max(block.off_by_more):g} is not allowed with 2 "
                    "classes (none is two away); allowed: 0"
                )
            judges = int(max(block.judges))
            if k**judges > MAX_OUTCOMES:
                most = max(j for j in range(1, MAX_JUDGES + 1) if k**j <= MAX_OUTCOMES)
                raise SweepError(
                    f"{where}.judges: {judges} judges of {k} classes make {k**judges} joint "
                    f"verdicts; allowed: at most {MAX_OUTCOMES} ({most} judge"
                    f"{'s' if most > 1 else ''})"
                )
        return self

    @property
    def rating_model(self) -> RatingModel:
        """:func:`sweep.spec.rating_model.scale_model` of the sweep's values, shares and
        confusions."""
        return scale_model(ScaleSettings(self.values, self.shares, self.confusions))

    def canonical(self) -> dict:
        """As :meth:`SweepSpec.canonical`, the named vectors and matrices as mappings (as
        the sweep file gives them)."""
        data = super().canonical()
        data["shares"] = {name: list(v) for name, v in self.shares}
        data["confusions"] = {name: [list(r) for r in m] for name, m in self.confusions}
        if not data["confusions"]:
            del data["confusions"]
        if data["classes"] is None:
            del data["classes"]
        return data


#: The axes of an arena block (``ratings: arena``), in the order their Cartesian product
#: varies: the column registry's arena grid axes, those that set a fit's shape (systems,
#: judges, their model) first, so that a shard, which never spans a change of them,
#: holds many configurations.
ARENA_AXES = tuple(
    sorted(
        (c.name for c in columns_of(SURFACE, "arena") if c.grid),
        key=lambda name: name not in ARENA.layout_columns,
    )
)
#: Most systems of a simulated arena (a sweep fits many small arenas; ``sweep compare``
#: takes larger ones).
MAX_ARENA_SYSTEMS = 30
#: Most battles of one ordered pair in a simulated arena.
MAX_ARENA_BATTLES = 100_000
#: Largest spread of strengths and largest ν of a simulated arena.
MAX_SPREAD, MAX_NU = 5.0, 10.0


def _arena_axis(field: str, raw: Any) -> AxisSpec:
    """Normalise one axis of an arena block (the judges' as :func:`_categorical_axis`)."""
    if field not in ("systems", "spread", "nu", "battles", "human_share"):
        return _categorical_axis(field, raw)
    if isinstance(raw, str):
        raise SweepError(f"grid.{field}: {shown(raw)} is not an axis; give a list of values")
    if field == "systems":
        return _whole_numbers(field, raw, 2, MAX_ARENA_SYSTEMS)
    if field == "battles":
        values = axis_values(field, raw)
        bad = [v for v in values if not 1 <= v <= MAX_ARENA_BATTLES]
        if bad:
            raise SweepError(
                f"grid.battles: value {shown(int(bad[0]))} is out of range; allowed: whole numbers "
                f"from 1 to {MAX_ARENA_BATTLES:,} (battles of each ordered pair)"
            )
        return values
    high = {"spread": MAX_SPREAD, "nu": MAX_NU, "human_share": 1.0}[field]
    values = axis_values(field, raw, high=high)
    if 0.0 in values:
        why = {
            "spread": "equal strengths have no true ranks",
            "nu": "ν = 0 allows no ties, and log ν is the model's coordinate",
            "human_share": "the posterior needs human verdicts to learn the judges' confusion",
        }[field]
        raise SweepError(f"grid.{field}: value 0 is not allowed ({why}); allowed: (0, {high:g}]")
    return values


class ArenaBlock(_Block):
    """One block of an arena grid: the Cartesian product of its axes.

    ``nu`` defaults to ½ (two equal systems tie a fifth of the time), the judges' family
    and number as :class:`PreferenceBlock`'s and :class:`_JudgesBlock`'s: ``tie_rate`` ⅓,
    ``position_bias`` 0, ``judges`` 1, ``copy_rate`` 0, ``judge_model`` joint.
    """

    axes: ClassVar[tuple[str, ...]] = ARENA_AXES
    systems: AxisSpec
    spread: AxisSpec
    nu: AxisSpec = (0.5,)
    battles: AxisSpec
    human_share: AxisSpec
    accuracy: AxisSpec
    tie_rate: AxisSpec = _DEFAULTS["tie_rate"]
    position_bias: AxisSpec = _DEFAULTS["position_bias"]
    judges: AxisSpec = _DEFAULTS["judges"]
    copy_rate: AxisSpec = _DEFAULTS["copy_rate"]
    judge_model: tuple[str, ...] = (JOINT.name,)

    @field_validator("*", mode="before")
    @classmethod
    def _normalise(cls, raw: Any, info) -> AxisSpec:
        return _arena_axis(info.field_name, raw)


#: The sampler settings that NumPyro's NUTS of an arena (:func:`kernels.arena.posterior.
#: sample_arenas`) does not take, each with why.
_ARENA_SAMPLER_REFUSED = {
    "max_tree_depth": "an arena's NUTS is NumPyro's, whose tree depth is its own (10)",
    "warmup_max_tree_depth": "an arena's NUTS is NumPyro's, whose tree depth is its own (10)",
    "loop": "an arena's NUTS is NumPyro's kernel, vmapped over arenas and chains",
}
#: The keys of a sweep file that an arena sweep refuses, each with why.
_ARENA_REFUSED = {
    "gamma": "the level of ε, which an arena sweep does not report (it scores rank intervals "
    "at the interval level)",
    "power": "the power of ε, which an arena sweep does not report (it scores rank intervals "
    "at the interval level)",
}


class ArenaSweepSpec(SweepSpec):
    """A validated sweep file with ``ratings: arena`` (:class:`ArenaBlock` grids).

    Counts are sampled (each replicate an arena drawn from the model, its strengths
    too), the posterior is NUTS, ``interval`` is the rank intervals' and sets' level and
    ``estimators`` names :data:`sweep.spec.arena.ARENA_ESTIMATORS`.
    """

    ratings: Literal["arena"]
    counts: Literal["sampled"] = "sampled"
    grid: tuple[ArenaBlock, ...]
    #: A shard's arenas and their draws are held at once (battles by cell, S² × 6 × 3^J
    #: counts an arena; chains × samples × S strengths a fit): a shard of 16 configurations
    #: of 30 systems, 3 judges and 40 replicates holds about 1.4 GB.
    shard_size: int = Field(16, ge=1, le=1_000_000)

    @model_validator(mode="before")
    @classmethod
    def _arena_keys(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        for key, why in _ARENA_REFUSED.items():
            if key in raw:
                raise SweepError(f"{key}: not allowed with ratings arena: {why}")
        if raw.get("counts", "sampled") != "sampled":
            raise SweepError(
                f"counts: {shown(raw['counts'])} is not allowed with ratings arena; allowed: "
                "sampled (each replicate an arena drawn from the model, its strengths too)"
            )
        if raw.get("method", "nuts") != "nuts":
            raise SweepError(
                f"method: {shown(raw['method'])} is not allowed with ratings arena; allowed: "
                "nuts (the strengths' posterior has no quadrature)"
            )
        sampler = raw.get("sampler")
        for key, why in _ARENA_SAMPLER_REFUSED.items():
            if isinstance(sampler, dict) and key in sampler:
                raise SweepError(f"sampler.{key}: not allowed with ratings arena: {why}")
        return raw

    @field_validator("estimators", mode="before")
    @classmethod
    def _estimator_names(cls, raw: Any) -> Any:
        """A name, a list of names or ``all`` → :data:`ARENA_ESTIMATORS`' names, in its order."""
        return _chosen_estimators(
            raw, tuple(ARENA_ESTIMATORS), "an arena estimator", "allowed with ratings arena"
        )

    @property
    def rating_model(self) -> RatingModel:
        """:data:`sweep.spec.rating_model.ARENA`."""
        return ARENA

    def canonical(self) -> dict:
        """As :meth:`SweepSpec.canonical`, without what an arena sweep does not read
        (``gamma``, ``power``, the refused sampler settings)."""
        data = super().canonical()
        del data["gamma"], data["power"]
        data["sampler"] = {
            key: value
            for key, value in data["sampler"].items()
            if key in SamplerSettings.model_fields and key not in _ARENA_SAMPLER_REFUSED
        }
        return data

    def surface_settings(self) -> dict[str, str]:
        return {"ratings": self.ratings}

    def estimator_values(self) -> tuple[ArenaEstimator, ...]:
        """The sweep's estimators as :class:`sweep.spec.arena.ArenaEstimator` values, in order."""
        return tuple(ARENA_ESTIMATORS[name] for name in self.estimators)

    @property
    def has_posterior(self) -> bool:
        """True: every arena estimator is a posterior."""
        return True


#: The sweep file's classes by their ``ratings`` value.
SPECS: dict[str, type[SweepSpec]] = {
    "binary": SweepSpec,
    "preference": PreferenceSweepSpec,
    "scale": ScaleSweepSpec,
    "classes": ScaleSweepSpec,
    "arena": ArenaSweepSpec,
}


def _location(parts, single_block: bool) -> str:
    """``grid[1].alpha`` style; a grid given as one block drops its index."""
    text = ""
    for i, part in enumerate(parts):
        if isinstance(part, int):
            if not (single_block and i == 1 and parts[0] == "grid"):
                text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _unknown_key(loc: tuple, single_block: bool, spec: type[SweepSpec] = SweepSpec) -> str:
    """The line for an unknown key at ``loc``: its place, the closest allowed key, all of them."""
    parent = _location(loc[:-1], single_block)
    block = spec.model_fields["grid"].annotation.__args__[0]
    model = {"": spec, "sampler": SamplerSettings}.get(parent, block)
    allowed = list(block.axes if model is block else model.model_fields)
    key = loc[-1]
    close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    if model is block:
        what, where = "axis", ""
    else:
        what, where = "key", f" in {parent}" if parent else ""
    return (
        f"{_location(loc, single_block)}: unknown {what} {shown(key)}{where}{hint}; "
        f"allowed: {', '.join(allowed)}"
    )


def _format_validation_error(
    err: ValidationError, single_block: bool, spec: type[SweepSpec] = SweepSpec
) -> str:
    errors = err.errors(include_url=False)
    # An unknown key first: a misspelt one is why a required field is missing.
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = _location(first["loc"], single_block)
    if first["type"] == "extra_forbidden":
        return _unknown_key(first["loc"], single_block, spec)
    if first["type"] == "missing":
        return f"{loc}: required field is missing"
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, SweepError):
        return str(cause)
    if first["type"] == "int_from_float":
        return f"{loc}: {shown(first.get('input'))} is not an integer"
    return f"{loc or 'sweep file'}: {first['msg']} (got {shown(first.get('input'))})"


def load_sweep(source: str | Path | dict | SweepSpec) -> SweepSpec:
    """A validated :class:`SweepSpec` from a YAML path, YAML text, a dict or a spec.

    Raises:
        SweepError: one line naming the bad field, its value and what is allowed.
    """
    if isinstance(source, SweepSpec):
        return source
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source):
        path = Path(source)
        if not path.is_file():
            raise SweepError(f"sweep file: {str(path)!r} does not exist or is not a file")
        source = path.read_text()
    if isinstance(source, str):
        try:
            source = yaml.safe_load(source)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            raise SweepError(f"sweep file: not valid YAML{where}") from None
    if not isinstance(source, dict):
        raise SweepError(
            f"sweep file: the top level is {type(source).__name__}, not a mapping of "
            f"{', '.join(SweepSpec.model_fields)}"
        )
    if any(not isinstance(key, str) for key in source):
        raise SweepError(f"sweep file: keys must be strings (got {shown(list(source))})")
    ratings = source.get("ratings", "binary")
    if not isinstance(ratings, str) or ratings not in SPECS:
        raise SweepError(f"ratings: {shown(ratings)} is not allowed; allowed: {', '.join(SPECS)}")
    spec = SPECS[ratings]
    try:
        return spec.model_validate(source)
    except ValidationError as err:
        single_block = isinstance(source.get("grid"), dict)
        raise SweepError(_format_validation_error(err, single_block, spec)) from None


def spec_from_canonical(canonical: dict) -> SweepSpec:
    """The :class:`SweepSpec` of a sweep directory's canonical form (its ``sweep.json``).

    The canonical form keeps removed keys at the one value they can still have
    (:data:`_REMOVED_CANONICAL` of the sampler, :data:`_REMOVED_JUDGE_MODEL`); they
    are dropped before validation, which would refuse them in a sweep file.
    """
    sampler = {
        key: value
        for key, value in canonical.get("sampler", {}).items()
        if not (key in _REMOVED_CANONICAL and value == _REMOVED_CANONICAL[key])
    }
    sweep = {key: value for key, value in canonical.items() if key not in _REMOVED_JUDGE_MODEL}
    return load_sweep({**sweep, "sampler": sampler})


def spec_digest(spec: SweepSpec) -> str:
    """A short hex digest of the canonical sweep (what a directory's shards belong to)."""
    import hashlib

    text = json.dumps(spec.canonical(), sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
