"""Planning inputs: a scenario (:class:`PlanSpec`), validated; a YAML grid of them; the
scenarios as arrays (:class:`Problems`) for the solvers."""

from __future__ import annotations

import difflib
import math
import pathlib
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any, Literal, NamedTuple

import numpy as np
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from binmetric_sweep.kernels.paired import KNOWN, SHARED, PairedDesign, separate
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.spec.config import MAX_SIZE

__all__ = [
    "BUDGET_SLACK",
    "UNLIMITED",
    "PlanSpec",
    "Problems",
    "as_spec",
    "check_target",
    "flag_spec",
    "load_plan_grid",
    "plan_paired",
    "problems",
    "validated_fields",
]

#: N_M standing for "unlimited metric ratings" (the largest size a sweep accepts).
UNLIMITED = MAX_SIZE


#: Relative slack when comparing a cost with the budget (decimal prices in binary floats).
BUDGET_SLACK = 1e-9


#: ``sweep plan``'s spellings of the paired design (``--n-rho-eta``, a plan grid's
#: ``n_rho_eta``) other than a number of separately paired items.
PLAN_SPELLINGS = {"shared": SHARED, "known": KNOWN}


def check_target(spec) -> None:
    """Refuse a scenario (binary or preference) with neither ``eps`` nor ``budget``, or a
    budget that does not cover its separate paired set (``spec.fixed_cost()``)."""
    if spec.eps is None and spec.budget is None:
        raise SweepError("eps, budget: give a target difference eps, a budget, or both")
    if spec.budget is not None and spec.budget <= spec.fixed_cost():
        raise SweepError(
            f"budget: {spec.budget:g} does not cover the {spec.n_rho_eta} separately paired "
            f"items (cost {spec.fixed_cost():g}); allowed: more than that"
        )


def plan_paired(raw: Any) -> PairedDesign:
    """The paired design ``sweep plan`` spells ``raw``: ``shared``, ``known`` or a number N
    of separately paired items (an integer, or a string or float of one), from 1 to
    :data:`MAX_SIZE`; their share of adequate items is the scenario's α. A
    :class:`~kernels.paired.PairedDesign` without its own ψ is taken as it is.

    Raises:
        SweepError: anything else, in one line naming ``n_rho_eta`` and what is allowed.
    """
    if isinstance(raw, PairedDesign) and raw.psi is None:  # then checked as its spelling
        raw = raw.n_rho_eta if raw.separate else raw.kind.value
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw)
    elif isinstance(raw, float) and math.isfinite(raw) and raw == int(raw):
        raw = int(raw)
    if isinstance(raw, str) and raw in PLAN_SPELLINGS:
        return PLAN_SPELLINGS[raw]
    if isinstance(raw, int) and not isinstance(raw, bool) and 1 <= raw <= MAX_SIZE:
        return separate(raw)
    raise SweepError(
        f"n_rho_eta: {shown(raw)} is not allowed; give 'shared', 'known' or a number of "
        f"paired items from 1 to {MAX_SIZE:,}"
    )


class PlanSpec(BaseModel):
    """One planning scenario, validated (the fields of ``sweep plan``'s flags).

    Attributes:
        alpha: the system's success rate α, in (0, 1).
        rho: metric true-positive rate ρ, in [0, 1].
        eta: metric true-negative rate η, in [0, 1].
        eps: target difference ε (target mode), in (0, 1).
        budget: most one campaign may cost (budget mode, or a cap on the target plan).
        gamma: significance level of the two-sided test, in (0, 1).
        power: power the test must reach at a difference ε, in [0.5, 1).
        cost_human: price of one human rating (> 0).
        cost_metric: price of one metric rating (> 0).
        n_rho_eta: "shared" (the human-rated items are the paired ones),
            "known" (ρ and η are known numbers), or N ≥ 1 separately paired
            items (share of adequate ones α; they cost cost_human·N), as given;
            :attr:`paired` is the design it spells (:func:`plan_paired`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    alpha: float = Field(gt=0.0, lt=1.0)
    rho: float = Field(ge=0.0, le=1.0)
    eta: float = Field(ge=0.0, le=1.0)
    eps: float | None = Field(None, gt=0.0, lt=1.0)
    budget: float | None = Field(None, gt=0.0, allow_inf_nan=False)
    gamma: float = Field(0.05, gt=0.0, lt=1.0)
    power: float = Field(0.8, ge=0.5, lt=1.0)
    cost_human: float = Field(1.0, gt=0.0, allow_inf_nan=False)
    cost_metric: float = Field(gt=0.0, allow_inf_nan=False)
    n_rho_eta: Literal["shared", "known"] | int = "shared"
    _paired: PairedDesign = PrivateAttr(SHARED)

    @field_validator(
        "alpha", "rho", "eta", "eps", "budget", "gamma", "power", "cost_human", "cost_metric",
        mode="before",
    )  # fmt: skip
    @classmethod
    def _not_a_flag(cls, raw: Any, info: ValidationInfo) -> Any:
        # pydantic reads True as 1.0: a YAML ``rho: yes`` would plan a perfect metric.
        if isinstance(raw, bool):
            raise SweepError(f"{info.field_name}: {raw} is not a number")
        return raw

    @field_validator("n_rho_eta", mode="before")
    @classmethod
    def _spelling(cls, raw: Any) -> Any:
        paired = plan_paired(raw)  # the field keeps the spelling (it seeds the simulations)
        return paired.n_rho_eta if paired.separate else paired.kind.value

    @model_validator(mode="after")
    def _check(self) -> PlanSpec:
        self._paired = plan_paired(self.n_rho_eta)
        check_target(self)
        return self

    @property
    def paired(self) -> PairedDesign:
        """The scenario's paired design (ψ = α for a separate set)."""
        return self._paired

    def fixed_cost(self) -> float:
        """The cost of a separate paired set (0 when shared or known)."""
        return self.cost_human * self.paired.n_pair if self.paired.separate else 0.0

    def cost(self, n_phi, n_m):
        """cost_human·N_Φ + cost_metric·N_M + the fixed cost (NumPy or float)."""
        return self.cost_human * n_phi + self.cost_metric * n_m + self.fixed_cost()


def _allowed(name: str, model: type[BaseModel] = PlanSpec) -> str:
    """A field's allowed range as an interval: ``(0, 1)``, ``[0.5, 1)``, ``> 0``."""
    bounds = {type(m).__name__: m for m in model.model_fields[name].metadata}
    low = bounds.get("Gt") or bounds.get("Ge")
    high = bounds.get("Lt") or bounds.get("Le")
    left = "(" if "Gt" in bounds else "["
    right = ")" if "Lt" in bounds else "]"
    low_value = getattr(low, "gt", getattr(low, "ge", None))
    high_value = getattr(high, "lt", getattr(high, "le", None))
    if high is None:
        return f"{'>' if left == '(' else '≥'} {low_value:g}"
    return f"{left}{low_value:g}, {high_value:g}{right}"


#: pydantic's error types for a number outside its bounds, and for what is not a number.
_OUT_OF_RANGE = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")
_NOT_A_NUMBER = ("float_parsing", "float_type", "finite_number")


def _refusal(
    err: ValidationError, name: Callable[[str], str], model: type[BaseModel] = PlanSpec
) -> str:
    """One line for a scenario's (a :class:`PlanSpec`, or another ``model`` of plan fields)
    first validation error, each field called by ``name`` (``--rho`` for a flag, ``rho`` for
    an argument, ``scenarios[1].rho`` in a grid): ``rho: 1.2 is out of range; allowed: [0,
    1]``."""
    first = err.errors(include_url=False)[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, SweepError):  # our validators' lines begin with the fields they name
        head, _, rest = str(cause).partition(": ")
        fields = head.split(", ")
        if rest and all(f in model.model_fields for f in fields):
            return ", ".join(name(f) for f in fields) + ": " + rest
        return str(cause)
    label = name(field)
    value = shown(first.get("input"))
    if first["type"] in _OUT_OF_RANGE:
        return f"{label}: {value} is out of range; allowed: {_allowed(field, model)}"
    if first["type"] in _NOT_A_NUMBER:
        finite = "finite " if first["type"] == "finite_number" else ""
        return f"{label}: {value} is not a {finite}number; allowed: {_allowed(field, model)}"
    if first["type"] == "missing":
        return f"{label}: required field is missing"
    return f"{label}: {first['msg']} (got {value})"


def _validated(fields: dict, name: Callable[[str], str]) -> PlanSpec:
    return validated_fields(PlanSpec, fields, name)


def validated_fields(model: type[BaseModel], fields: dict, name: Callable[[str], str]):
    """``model`` (a scenario's pydantic class) of ``fields``; its first validation error
    becomes one :class:`SweepError` line, each field called by ``name`` (``--rho: 1.2 is out
    of range; allowed: [0, 1]``)."""
    try:
        return model.model_validate(fields)
    except ValidationError as err:
        raise SweepError(_refusal(err, name, model)) from None


def flag_spec(given: dict) -> PlanSpec:
    """The :class:`PlanSpec` of ``sweep plan``'s flags; errors name the flag and its range
    (``--alpha: 1.2 is out of range; allowed: (0, 1)``)."""
    return _validated(given, lambda field: f"--{field.replace('_', '-')}")


def as_spec(source: PlanSpec | dict, where: str = "") -> PlanSpec:
    """A validated :class:`PlanSpec`; errors become one-line :class:`SweepError` naming the
    field as an argument (``rho: 1.2 is out of range; allowed: [0, 1]``), or, with
    ``where``, as a key of that scenario (``scenarios[1].rho: …``). An unknown key is named
    before any field it leaves missing (``cost_metirc`` is a typo, not a missing field)."""
    if isinstance(source, PlanSpec):
        return source
    if not isinstance(source, dict):
        raise SweepError(f"{where or 'scenario'}: {shown(source)} is not a mapping of plan fields")
    unknown = [key for key in source if key not in PlanSpec.model_fields]
    if unknown:
        key = unknown[0]
        near = difflib.get_close_matches(str(key), PlanSpec.model_fields, n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise SweepError(
            f"{where or 'scenario'}: unknown key {shown(key)}{hint}; allowed keys: "
            + ", ".join(PlanSpec.model_fields)
        )
    return _validated(source, lambda field: f"{where}.{field}" if where else field)


def load_plan_grid(source: str | pathlib.Path | list) -> list[PlanSpec]:
    """Scenarios from a YAML file (or text, or a list): a list of mappings of plan fields.

    Raises:
        SweepError: one line naming the scenario (``scenarios[i]``) and the field.
    """
    if isinstance(source, pathlib.Path) or (isinstance(source, str) and "\n" not in source):
        path = pathlib.Path(source)
        if not path.is_file():
            raise SweepError(f"--grid: {str(path)!r} does not exist or is not a file")
        source = path.read_text()
    if isinstance(source, str):
        try:
            source = yaml.safe_load(source)
        except yaml.YAMLError:
            raise SweepError("--grid: not valid YAML") from None
    if not isinstance(source, list) or not source:
        raise SweepError(
            "--grid: the file must hold a non-empty list of scenarios, each a mapping of "
            + ", ".join(PlanSpec.model_fields)
        )
    return [as_spec(s, f"scenarios[{i}]") for i, s in enumerate(source)]


class Problems(NamedTuple):
    """S scenarios as ``(S,)`` float64/bool arrays (NumPy or JAX).

    Attributes:
        alpha, rho, eta: the model's rates.
        n_pair: N_ρη of a separate paired set (0 otherwise).
        shared: the human-rated items are the paired ones.
        known: ρ and η are known numbers.
        cost_human, cost_metric: prices of one rating.
        fixed_cost: cost_human·N for a separate paired set, else 0.
        target: the target ε (NaN without one).
        log_sd_target: log of the σ at which ε_{γ,β} equals the target (NaN without one).
        budget: the budget (inf without one).
        by_target: target mode (else budget mode).
        gamma, power: the test's level and power.
        z: z₁₋γ/₂ + z_power, so that ε = √2·z·σ.
    """

    alpha: Any
    rho: Any
    eta: Any
    n_pair: Any
    shared: Any
    known: Any
    cost_human: Any
    cost_metric: Any
    fixed_cost: Any
    target: Any
    log_sd_target: Any
    budget: Any
    by_target: Any
    gamma: Any
    power: Any
    z: Any


def _z(spec: PlanSpec) -> float:
    normal = NormalDist()
    return normal.inv_cdf(1.0 - 0.5 * spec.gamma) + normal.inv_cdf(spec.power)


def problems(specs: Sequence[PlanSpec], by_target: Sequence[bool] | None = None) -> Problems:
    """``(S,)`` NumPy :class:`Problems` of the scenarios (target mode where they have ``eps``)."""
    if by_target is None:
        by_target = [s.eps is not None for s in specs]

    def col(fn, dtype=float):
        return np.array([fn(s) for s in specs], dtype)

    z = col(_z)
    target = col(lambda s: np.nan if s.eps is None else s.eps)
    return Problems(
        alpha=col(lambda s: s.alpha),
        rho=col(lambda s: s.rho),
        eta=col(lambda s: s.eta),
        n_pair=col(lambda s: s.paired.n_pair),
        shared=col(lambda s: s.paired.shared, bool),
        known=col(lambda s: s.paired.known, bool),
        cost_human=col(lambda s: s.cost_human),
        cost_metric=col(lambda s: s.cost_metric),
        fixed_cost=col(lambda s: s.fixed_cost()),
        target=target,
        log_sd_target=np.log(target / (math.sqrt(2.0) * z)),
        budget=col(lambda s: np.inf if s.budget is None else s.budget),
        by_target=np.asarray(by_target, bool),
        gamma=col(lambda s: s.gamma),
        power=col(lambda s: s.power),
        z=z,
    )
