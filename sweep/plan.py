"""``sweep plan``: the cheapest mix of human and metric ratings for a target ε, power and budget.

A *scenario* (:class:`PlanSpec`) fixes the system's α, the metric's ρ and η,
how ρ and η are learnt (``n_rho_eta``: the human-rated items are the paired
ones, "shared"; ρ and η are "known" numbers; or a separate paired set of N
items), the test (γ, power) and the prices of one human and one metric rating.
A *plan* is the integer sample sizes (N_Φ, N_M) of one campaign:

* **target mode** (``eps``): the cheapest (N_Φ, N_M) whose
  ε_{γ,β} = √2·σ·(z₁₋γ/₂ + z_power) is at most ``eps``, σ being the exact
  posterior SD of α from expected counts (the published method);
* **budget mode** (``budget`` alone): the smallest ε whose cost is within the budget;
* both: the target plan when it fits the budget; otherwise the budget plan,
  marked unreachable.

Cost = cost_human·N_Φ + cost_metric·N_M, plus cost_human·N for a separate
paired set of N items (a fixed cost). With the shared paired set the human
ratings are the paired ones and cost nothing extra.

How (see :func:`plan_grid`):

1. **Relax.** The counts become real numbers and σ a smooth function of
   (log N_Φ, log N_M). The exact quadrature cannot be differentiated (its
   tangents are NaN: empty Gauss panels put ``log 0`` into its weights) and
   costs ~20 ms a lane on CPU, so the relaxed problem uses
   :func:`relaxed_sd`, the Laplace (delta-method) posterior SD of α under
   the same Beta posteriors, scaled by κ = σ_exact/σ_relaxed measured with the
   exact quadrature at the relaxed optimum. The surrogate alone is within 1 %
   of the exact σ for N_Φ ≥ 50 (8 % at N_Φ ≈ 25); with κ it is exact where κ
   was measured.
2. **Solve** min cost s.t. ε ≤ target (or min ε s.t. cost ≤ budget) for all
   scenarios at once: an augmented Lagrangian, each subproblem minimised by
   optax Adam on (log(1 + N_Φ), log(1 + N_M)), vmapped over scenarios and run as one
   jitted ``lax.scan`` (:func:`solve_relaxed`); twice, the second time with κ.
3. **Confirm on integers** with the exact quadrature
   (:func:`sweep.fits.fit_lanes`, every lane of every scenario batched into
   one call per round): for N_M at the relaxed optimum ×2^(k/4), k = −4…4, at
   0 (humans alone) and at :data:`UNLIMITED` (the metric's floor), the least
   N_Φ meeting the target, and for N_Φ = ⌊N_Φ*⌋, ⌈N_Φ*⌉ (and 0 where ρ, η do
   not come from the human ratings) the least N_M. Each least size is a
   boundary, ε(n) ≤ target < ε(n − 1), found by Newton steps on the
   κ-corrected surrogate with κ re-measured at every exact evaluation, and by
   bisection when those do not close the bracket. The cheapest of these is
   the plan; every plan returned meets its target at its integer sizes.

**Reachable** means the target is met within the budget. Without a budget
every target in (0, 1) is reachable by human ratings alone. With a shared
paired set, metric ratings can replace only part of them: as N_M → ∞ the
posterior SD falls to a floor set by the uncertainty of ρ and η, which are
learnt from the same N_Φ items (``n_phi_unlimited`` is the least N_Φ with
unlimited metric ratings; ``eps_floor`` the smallest ε any N_M gives with all
of the budget spent on human ratings). A target below that floor is reported
as unreachable, with what N_Φ alone would need, not answered with a huge N_M.

**Checked by simulation** (:func:`simulate_tests`): R campaigns of two systems
at the planned sizes, α and α + ε (α − ε where α + ε > 1), with sampled counts
and quadrature posteriors; the two-sided z-test at γ on the two posterior
means gives the empirical power with its Monte Carlo SE, and two systems both
at α give the type-I error rate. ε is the target (budget mode: the plan's ε).
"""

from __future__ import annotations

import hashlib
import json
import math
import pathlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from statistics import NormalDist
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import yaml
from binmetric_sweep.kernels.counts import Design
from binmetric_sweep.kernels.quadrature import QuadratureRule
from binmetric_sweep.kernels.summaries import epsilon
from binmetric_sweep.sweep.config import MAX_SIZE
from binmetric_sweep.sweep.errors import SweepError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = [
    "UNLIMITED",
    "PlanSpec",
    "Problems",
    "SolverSettings",
    "FrontierPoint",
    "Plan",
    "problems",
    "relaxed_sd",
    "solve_relaxed",
    "exact_eps",
    "simulate_tests",
    "plan",
    "plan_grid",
    "load_plan_grid",
    "plan_table",
    "plans_json",
    "check_image_path",
    "plot_frontier",
]

#: N_M standing for "unlimited metric ratings" (the largest size a sweep accepts).
UNLIMITED = MAX_SIZE
#: Relative slack when comparing a cost with the budget (decimal prices in binary floats).
_BUDGET_SLACK = 1e-9
#: N_M around the relaxed optimum tried on integers: y*·2^(k/4), k = −3…3.
_NEAR = 2.0 ** (np.arange(-3, 4) / 4.0)
#: Exact evaluations that cost the same as one on CPU (a compiled chunk's lanes).
_ROUND_LANES = 64


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
            items (share of adequate ones α; they cost cost_human·N).
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

    @field_validator("n_rho_eta", mode="before")
    @classmethod
    def _paired(cls, raw: Any) -> Any:
        if isinstance(raw, str) and raw.strip().isdigit():
            raw = int(raw)
        elif isinstance(raw, float) and math.isfinite(raw) and raw == int(raw):
            raw = int(raw)
        if raw in ("shared", "known") or (
            isinstance(raw, int) and not isinstance(raw, bool) and 1 <= raw <= MAX_SIZE
        ):
            return raw
        raise SweepError(
            f"n_rho_eta: {raw!r} is not allowed; give 'shared', 'known' or a number of "
            f"paired items from 1 to {MAX_SIZE:,}"
        )

    @model_validator(mode="after")
    def _check(self) -> PlanSpec:
        if self.eps is None and self.budget is None:
            raise SweepError("eps, budget: give a target difference eps, a budget, or both")
        if self.budget is not None and self.budget <= self.fixed_cost():
            raise SweepError(
                f"budget: {self.budget:g} does not cover the {self.n_rho_eta} separately paired "
                f"items (cost {self.fixed_cost():g}); allowed: more than that"
            )
        return self

    def fixed_cost(self) -> float:
        """The cost of a separate paired set (0 when shared or known)."""
        return self.cost_human * self.n_rho_eta if isinstance(self.n_rho_eta, int) else 0.0

    def cost(self, n_phi, n_m):
        """cost_human·N_Φ + cost_metric·N_M + the fixed cost (NumPy or float)."""
        return self.cost_human * n_phi + self.cost_metric * n_m + self.fixed_cost()


def _spec(source: PlanSpec | dict, where: str = "") -> PlanSpec:
    """A validated :class:`PlanSpec`; errors become one-line :class:`SweepError`."""
    if isinstance(source, PlanSpec):
        return source
    if not isinstance(source, dict):
        raise SweepError(f"{where or 'scenario'}: {source!r} is not a mapping of plan fields")
    try:
        return PlanSpec.model_validate(source)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in first["loc"] if not str(p).startswith(("literal", "int")))
        prefix = f"{where}." if where else ""
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(PlanSpec.model_fields)
            raise SweepError(
                f"{prefix}{loc}: unknown key {first['loc'][-1]!r}; allowed keys: {allowed}"
            ) from None
        if first["type"] == "missing":
            raise SweepError(f"{prefix}{loc}: required field is missing") from None
        cause = first.get("ctx", {}).get("error")
        if isinstance(cause, SweepError):
            raise SweepError(f"{prefix}{cause}") from None
        raise SweepError(f"{prefix}{loc}: {first['msg']} (got {first.get('input')!r})") from None


# --------------------------------------------------------------------------------------------
# Scenarios as arrays, and the relaxed (real-valued) posterior SD


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
        n_pair=col(lambda s: s.n_rho_eta if isinstance(s.n_rho_eta, int) else 0),
        shared=col(lambda s: s.n_rho_eta == "shared", bool),
        known=col(lambda s: s.n_rho_eta == "known", bool),
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


def _beta_var(a, b):
    total = a + b
    return a * b / (total * total * (total + 1.0))


def relaxed_sd(n_phi, n_m, p: Problems, xp=jnp):
    """The Laplace (delta-method) posterior SD of α at real-valued expected counts.

    Human ratings give α ~ Beta(αN_Φ + 1, (1 − α)N_Φ + 1) with variance v_α, the
    paired items ρ, η ~ Beta posteriors with variances v_ρ, v_η (P = αN_Φ
    paired positives when shared, ψN = αN when separate, none when known), and
    N_M metric ratings Fisher information k = N_M/(p(1 − p)) on
    p = αρ + (1 − α)(1 − η), whose gradient in (α, ρ, η) is
    (d, α, −(1 − α)) with d = ρ + η − 1. The α entry of the inverse of the
    summed precision is then (Sherman–Morrison)

        σ² = v_α·(1 + k·S)/(1 + k·(v_α·d² + S)),   S = α²·v_ρ + (1 − α)²·v_η,

    which falls to v_α·S/(v_α·d² + S) > 0 as N_M → ∞ unless ρ, η are known.

    Args:
        n_phi: N_Φ ≥ 0, any shape broadcasting with ``p``'s ``(S,)`` fields.
        n_m: N_M ≥ 0, likewise.
        p: the scenarios (only alpha, rho, eta, n_pair, shared, known are used).
        xp: ``jax.numpy`` (differentiable) or ``numpy``.

    Returns:
        σ, the posterior SD of α (probability units), of the broadcast shape.
    """
    a, r, e = p.alpha, p.rho, p.eta
    v_a = _beta_var(a * n_phi + 1.0, (1.0 - a) * n_phi + 1.0)
    pos = xp.where(p.shared, a * n_phi, a * p.n_pair)
    neg = xp.where(p.shared, (1.0 - a) * n_phi, (1.0 - a) * p.n_pair)
    v_r = _beta_var(r * pos + 1.0, (1.0 - r) * pos + 1.0)
    v_e = _beta_var(e * neg + 1.0, (1.0 - e) * neg + 1.0)
    spread = xp.where(p.known, 0.0, a * a * v_r + (1.0 - a) ** 2 * v_e)
    rate = a * r + (1.0 - a) * (1.0 - e)
    k = n_m / xp.maximum(rate * (1.0 - rate), 1e-300)
    d = r + e - 1.0
    return xp.sqrt(v_a * (1.0 + k * spread) / (1.0 + k * (v_a * d * d + spread)))


# --------------------------------------------------------------------------------------------
# The relaxed problem, solved with optax


class SolverSettings(NamedTuple):
    """Augmented-Lagrangian settings of :func:`solve_relaxed` (static, hashable).

    Attributes:
        outer: multiplier updates.
        inner: Adam steps per multiplier update.
        learning_rate: Adam's first step size, in units of log(1 + N).
        final_learning_rate: the step size it decays to (exponentially) by the last step.
        penalty: the first penalty weight μ.
        penalty_growth: μ's factor per multiplier update.
        max_penalty: μ's ceiling.
    """

    outer: int = 15
    inner: int = 200
    learning_rate: float = 0.15
    final_learning_rate: float = 1e-4
    penalty: float = 10.0
    penalty_growth: float = 2.5
    max_penalty: float = 1e5


class _Relaxed(NamedTuple):
    n_phi: np.ndarray  # (S,) real N_Φ
    n_m: np.ndarray  # (S,) real N_M
    constraint: np.ndarray  # (S,) log-σ or log-cost excess at the solution (≤ 0: met)


def _bounds(p: Problems):
    """Bounds of z = (log(1 + N_Φ), log(1 + N_M)): N_Φ ≥ 1 when ρ, η are learnt from it."""
    lower_phi = jnp.where(p.shared, math.log(2.0), 0.0)
    lower = jnp.stack([lower_phi, jnp.zeros_like(lower_phi)])
    return lower, jnp.full_like(lower, math.log1p(MAX_SIZE))


def _terms(z, p: Problems, log_kappa):
    """(objective, constraint) of one scenario at z = (log(1 + N_Φ), log(1 + N_M))."""
    n_phi, n_m = jnp.expm1(z[0]), jnp.expm1(z[1])
    cost = p.cost_human * n_phi + p.cost_metric * n_m + p.fixed_cost
    log_sd = jnp.log(relaxed_sd(n_phi, n_m, p)) + log_kappa
    target = jnp.where(p.by_target, p.log_sd_target, 0.0)
    budget = jnp.where(jnp.isfinite(p.budget), p.budget, 1.0)  # no inf·0 in the gradient
    # Both modes in log units: relative changes of cost and of σ weigh alike.
    objective = jnp.where(p.by_target, jnp.log(cost), log_sd)
    constraint = jnp.where(p.by_target, log_sd - target, jnp.log(cost / budget))
    return objective, constraint


def _alone_log_n_phi(p: Problems, log_kappa):
    """log of the N_Φ whose Beta variance alone meets the target (a scale, ≥ 1)."""
    var = jnp.exp(2.0 * (jnp.where(p.by_target, p.log_sd_target, 0.0) - log_kappa))
    return jnp.log(jnp.maximum(p.alpha * (1.0 - p.alpha) / var - 3.0, 1.0))


def _start(p: Problems, log_kappa):
    """Starting z: humans alone ×0.8 and 10× as many metric ratings (target mode),
    or half the budget to each (budget mode)."""
    alone = _alone_log_n_phi(p, log_kappa)
    spend = jnp.where(jnp.isfinite(p.budget), p.budget - p.fixed_cost, 1.0)
    by_budget = jnp.stack(
        [jnp.log1p(0.5 * spend / p.cost_human), jnp.log1p(0.5 * spend / p.cost_metric)]
    )
    by_target = jnp.stack([jnp.log1p(0.8 * jnp.exp(alone)), jnp.log1p(10.0 * jnp.exp(alone))])
    return jnp.where(p.by_target, by_target, by_budget)


@cache
def _solver(settings: SolverSettings):
    import optax  # the planner's only optax use; importing ``sweep`` stays light

    steps = settings.outer * settings.inner
    schedule = optax.exponential_decay(
        settings.learning_rate,
        transition_steps=steps,
        decay_rate=settings.final_learning_rate / settings.learning_rate,
    )
    optimizer = optax.adam(schedule)

    def one(p: Problems, log_kappa, start):
        lower, upper = _bounds(p)

        def lagrangian(z, lam, mu):
            objective, constraint = _terms(z, p, log_kappa)
            excess = jnp.maximum(0.0, lam + mu * constraint)
            return objective + (excess * excess - lam * lam) / (2.0 * mu)

        grad = jax.grad(lagrangian)

        def inner(carry, _):
            z, state, lam, mu = carry
            updates, state = optimizer.update(grad(z, lam, mu), state, z)
            z = jnp.clip(optax.apply_updates(z, updates), lower, upper)
            return (z, state, lam, mu), None

        def outer(carry, _):
            carry, _ = jax.lax.scan(inner, carry, None, length=settings.inner)
            z, state, lam, mu = carry
            _, constraint = _terms(z, p, log_kappa)
            lam = jnp.maximum(0.0, lam + mu * constraint)
            mu = jnp.minimum(mu * settings.penalty_growth, settings.max_penalty)
            return (z, state, lam, mu), None

        z0 = jnp.clip(start, lower, upper)
        init = (z0, optimizer.init(z0), jnp.zeros(()), jnp.asarray(settings.penalty))
        (z, _, _, _), _ = jax.lax.scan(outer, init, None, length=settings.outer)
        return _Relaxed(jnp.expm1(z[0]), jnp.expm1(z[1]), _terms(z, p, log_kappa)[1])

    return jax.jit(jax.vmap(one))


def _bucket(n: int) -> int:
    return max(8, 1 << (max(n, 1) - 1).bit_length())


def solve_relaxed(
    p: Problems,
    log_kappa=None,
    start=None,
    settings: SolverSettings | None = None,
) -> _Relaxed:
    """The relaxed plans of S scenarios: real (N_Φ, N_M), in one jitted call.

    Target mode minimises log cost subject to log σ̃ + log κ ≤ log σ_target;
    budget mode minimises log σ̃ + log κ subject to log(cost/budget) ≤ 0; σ̃ is
    :func:`relaxed_sd`. An augmented Lagrangian: ``settings.outer`` multiplier
    updates, each after ``settings.inner`` steps of optax Adam on
    z = (log(1 + N_Φ), log(1 + N_M)) (so that a size can reach 0 with steps of
    the same scale), clipped to N_Φ ≥ 1 (shared paired set) or ≥ 0, N_M ≥ 0,
    and both ≤ :data:`UNLIMITED`. Against a dense scan of the same surrogate
    problem on 200 random scenarios it is within 0.15 % of the optimum.

    Args:
        p: ``(S,)`` scenarios.
        log_kappa: ``(S,)`` log of the correction κ = σ_exact/σ̃ (default 0).
        start: ``(2, S)`` starting z (default: :func:`_start`).
        settings: solver settings (default :class:`SolverSettings`).

    Returns:
        ``(S,)`` N_Φ, N_M and the constraint's value there (≤ ~1e-4: met).
    """
    jax.config.update("jax_enable_x64", True)
    s = len(p.alpha)
    log_kappa = np.zeros(s) if log_kappa is None else np.asarray(log_kappa, float)
    jp = Problems(*(jnp.asarray(x) for x in p))
    if start is None:
        start = _start(jp, jnp.asarray(log_kappa))
    size = _bucket(s)

    def pad(x):
        x = jnp.asarray(x)
        return jnp.concatenate([x, jnp.repeat(x[..., :1], size - s, axis=-1)], axis=-1)

    out = _solver(settings or SolverSettings())(
        Problems(*(pad(x) for x in jp)), pad(log_kappa), jnp.moveaxis(pad(start), 0, -1)
    )
    return _Relaxed(*(np.asarray(x)[:s] for x in out))


# --------------------------------------------------------------------------------------------
# Exact ε on integers


def _designs(p: Problems, index, n_phi, n_m, alpha=None) -> Design:
    """``(K,)`` designs of lanes (scenario ``index``, sizes), at ``alpha`` if given."""
    index = np.asarray(index, int)
    a = p.alpha[index] if alpha is None else np.asarray(alpha, float)
    return Design(
        alpha=a,
        rho=p.rho[index],
        eta=p.eta[index],
        n_phi=np.asarray(n_phi, float),
        n_rho_eta=p.n_pair[index],
        psi=a,
        n_m=np.asarray(n_m, float),
        shared_paired=p.shared[index],
        rho_eta_known=p.known[index],
    )


def exact_eps(
    p: Problems,
    index,
    n_phi,
    n_m,
    *,
    chunk_size: int | None = None,
    rule: QuadratureRule = QuadratureRule(),
) -> np.ndarray:
    """ε_{γ,β} at integer sizes: rounded expected counts, exact quadrature, as the surface does.

    Args:
        p: ``(S,)`` scenarios.
        index: ``(K,)`` scenario of each lane.
        n_phi: ``(K,)`` integer N_Φ.
        n_m: ``(K,)`` integer N_M.
        chunk_size: lanes per compiled call (default 64 on CPU, 1024 elsewhere).
        rule: quadrature rule.

    Returns:
        ``(K,)`` √2·σ·(z₁₋γ/₂ + z_power); 1 where N_Φ = N_M = 0 (no evidence,
        the surfaces' convention); +inf where the fit is not finite.
    """
    from binmetric_sweep.sweep.fits import fit_lanes, lane_counts, lane_keys

    jax.config.update("jax_enable_x64", True)
    index = np.asarray(index, int)
    k = len(index)
    if k == 0:
        return np.zeros(0)
    size = _lane_bucket(k)
    index, n_phi, n_m = (_pad(np.asarray(v), size) for v in (index, n_phi, n_m))
    keys = lane_keys(0, np.zeros((size, 2), np.uint32), np.zeros(size, np.uint32))  # unused
    counts = _first(lane_counts(_designs(p, index, n_phi, n_m), keys, "expected"), k)
    fits = fit_lanes(counts, keys[:k], "quadrature", chunk_size=chunk_size, rule=rule)
    sd = _pad(np.asarray(fits.post_sd), size)
    eps = np.asarray(epsilon(sd, p.gamma[index], p.power[index]))[:k]
    eps = np.where(np.isfinite(eps), eps, np.inf)
    return np.where((n_phi[:k] == 0) & (n_m[:k] == 0), 1.0, eps)


def _lane_bucket(k: int) -> int:
    """Lanes a batch of k is padded to before the JAX steps that compile per shape."""
    return max(64, 1 << (max(k, 1) - 1).bit_length())


def _pad(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` along axis 0, padded to ``size`` by repeating its first row.

    Eagerly run jax.numpy operations compile once per shape (~2 s a shape on the
    CPU here); padding to a few bucket sizes keeps a planning call's rounds, whose
    lane counts all differ, from paying that every round.
    """
    return np.concatenate([values, np.repeat(values[:1], size - len(values), axis=0)])


def _first(tree, k: int):
    return jax.tree.map(lambda v: np.asarray(v)[:k], tree)


class _Memo(NamedTuple):
    """Exact ε already computed, by (scenario, N_Φ, N_M); shared by every stage of one call."""

    p: Problems
    chunk_size: int | None
    values: dict


def _memo_eps(memo: _Memo, index, n_phi, n_m) -> np.ndarray:
    """:func:`exact_eps` of the lanes, computing only those not yet in ``memo``."""
    keys = [(int(i), int(x), int(y)) for i, x, y in zip(index, n_phi, n_m, strict=True)]
    todo = sorted({key for key in keys if key not in memo.values})
    if todo:
        i, x, y = (np.array(v, np.int64) for v in zip(*todo, strict=True))
        values = exact_eps(memo.p, i, x, y, chunk_size=memo.chunk_size)
        memo.values.update(zip(todo, values.tolist(), strict=True))
    return np.array([memo.values[key] for key in keys], float)


def _surrogate_root(p: Problems, index, axis, fixed, log_kappa) -> np.ndarray:
    """Real size s on ``axis`` (0: N_Φ, 1: N_M) where κ·σ̃ meets the target, the other
    size fixed; 0 if met at 0, inf if not met at :data:`UNLIMITED`. ``(K,)`` NumPy."""
    q = Problems(*(np.asarray(x)[index] for x in p))

    def gap(s):
        x, y = np.where(axis == 0, s, fixed), np.where(axis == 0, fixed, s)
        return np.log(relaxed_sd(x, y, q, np)) + log_kappa - q.log_sd_target

    lo, hi = np.zeros(len(index)), np.full(len(index), math.log1p(UNLIMITED))
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        above = gap(np.expm1(mid)) > 0
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    root = np.expm1(hi)
    root = np.where(gap(np.zeros(len(index))) <= 0, 0.0, root)
    return np.where(gap(np.full(len(index), float(UNLIMITED))) > 0, np.inf, root)


def _least_sizes(
    memo: _Memo, index, axis, fixed, log_kappa, metric_tol: float = 2e-3, max_rounds: int = 40
):
    """Least integer size on ``axis`` meeting each lane's target, the other size fixed.

    A boundary ε(s) ≤ target < ε(s − w) in [0, :data:`UNLIMITED`], w = 1 for
    N_Φ and w = max(1, ⌊metric_tol·s⌋) for N_M (metric ratings are cheap; the
    last 0.2 % of them is not worth exact bisection). The bracket (lo
    infeasible, hi feasible) is closed by evaluating ⌈ŝ⌉ − w and ⌈ŝ⌉ (N_M:
    shifted by w/2), ŝ the root of the κ-corrected surrogate with κ re-measured
    at the last exact evaluation; after four rounds, by bisection.

    Args:
        memo: the exact evaluations so far (extended in place).
        index: ``(K,)`` scenario of each lane.
        axis: ``(K,)`` 0 to search N_Φ (N_M fixed), 1 to search N_M (N_Φ fixed).
        fixed: ``(K,)`` the other size.
        log_kappa: ``(K,)`` starting log κ.

    Returns:
        ``(K,)`` int64 sizes, or UNLIMITED + 1 where even UNLIMITED misses the target.
    """
    p = memo.p
    index, axis = np.asarray(index, int), np.asarray(axis, int)
    fixed = np.asarray(fixed, np.int64)
    log_kappa = np.array(log_kappa, float)
    lo = np.full(len(index), -1, np.int64)
    hi = np.full(len(index), UNLIMITED + 1, np.int64)
    target = p.target[index]

    def width(lanes, size):
        metric = np.maximum(1, np.floor(metric_tol * size))
        return np.where(axis[lanes] == 1, metric, 1).astype(np.int64)

    every = np.arange(len(index))

    for round_ in range(max_rounds):
        closed = (hi - lo <= 1) | ((hi <= UNLIMITED) & (hi - lo <= width(every, hi)))
        a = np.flatnonzero(~closed)
        if len(a) == 0:
            break
        root = _surrogate_root(p, index[a], axis[a], fixed[a], log_kappa[a])
        w = width(a, np.minimum(root, UNLIMITED))
        guess = np.ceil(np.minimum(root + (w - 1) / 2.0, UNLIMITED)).astype(np.int64)
        if round_ >= 4:  # bisection when Newton has not closed the bracket
            guess = lo[a] + (np.minimum(hi[a], UNLIMITED + 1) - lo[a] + 1) // 2
        guess = np.clip(guess, lo[a] + 1, np.minimum(hi[a] - 1, UNLIMITED))
        # Two points per lane (⌈ŝ⌉ − w, ⌈ŝ⌉), more when few lanes are left: a compiled
        # chunk costs the same however many of its lanes are padding.
        per = int(np.clip(_ROUND_LANES // len(a), 2, 8))
        offsets = np.arange(-(per // 2), per - per // 2)
        points = [(j, g) for j, g in zip(a, guess, strict=True)]
        points += [
            (j, g + v * k)
            for j, g, v in zip(a, guess, w, strict=True)
            for k in offsets
            if k != 0 and lo[j] < g + v * k < min(hi[j], UNLIMITED + 1)
        ]
        lanes = np.array([j for j, _ in points])
        sizes = np.array([g for _, g in points], np.int64)
        n_phi = np.where(axis[lanes] == 0, sizes, fixed[lanes])
        n_m = np.where(axis[lanes] == 0, fixed[lanes], sizes)
        eps = _memo_eps(memo, index[lanes], n_phi, n_m)
        for j, size, e, x, y in zip(lanes, sizes, eps, n_phi, n_m, strict=True):
            if e <= target[j]:
                hi[j] = min(hi[j], size)
            else:
                lo[j] = max(lo[j], size)
            if size == guess[np.searchsorted(a, j)] and math.isfinite(e) and (x > 0 or y > 0):
                q = Problems(*(np.asarray(v)[index[j]] for v in p))
                sd = e / (math.sqrt(2.0) * p.z[index[j]])
                log_kappa[j] = math.log(sd) - math.log(float(relaxed_sd(x, y, q, np)))
        lo = np.where(lo >= hi, hi - 1, lo)  # a non-monotone step: keep the bracket valid
    return hi


# --------------------------------------------------------------------------------------------
# Plans


class FrontierPoint(NamedTuple):
    """One point of the target's frontier: the least N_Φ that meets the target at this N_M."""

    n_m: int
    n_phi: int
    cost: float
    eps: float


@dataclass(frozen=True)
class Plan:
    """A plan for one scenario (see the module docstring for the modes).

    Attributes:
        spec: the scenario.
        n_phi: human ratings N_Φ.
        n_m: metric-only ratings N_M.
        cost: its cost (including a separate paired set's).
        eps: its exact ε_{γ,β} (rounded expected counts, quadrature).
        sd: its exact posterior SD of α.
        reachable: the target is met within the budget (True in budget mode).
        n_phi_alone: N_Φ that human ratings alone need for the target (None without one).
        cost_alone: their cost.
        n_phi_unlimited: least N_Φ with unlimited metric ratings (N_M = :data:`UNLIMITED`).
        eps_floor: smallest ε any N_M gives with all of the budget spent on human
            ratings (None without a budget).
        eps_tested: the difference the simulation tested (the target, else ``eps``).
        empirical_power: share of simulated campaigns whose z-test rejects at α vs α ± ε.
        empirical_power_mcse: its Monte Carlo SE √(p(1 − p)/R).
        type1_rate: share that reject with both systems at α.
        type1_mcse: its Monte Carlo SE.
        replicates: R, the simulated campaigns per rate (0: not simulated, rates NaN).
        seed: the simulation's seed.
        frontier: for several N_M, the least N_Φ meeting the target (target mode).
        message: one or two plain sentences on the answer.
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

    def as_dict(self) -> dict:
        """The plan as JSON-able data (NaN as None); the scenario's fields are included."""
        out = self.spec.model_dump()
        out.update({k: v for k, v in asdict(self).items() if k not in ("spec", "frontier")})
        out["frontier"] = [point._asdict() for point in self.frontier]
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in out.items()
        }

    def lines(self) -> list[str]:
        """A readable answer: the plan, the alternatives, the simulation, the frontier."""
        s = self.spec
        test = f"γ = {s.gamma:g}, power {s.power:g}"
        out = [
            f"plan: N_Φ = {self.n_phi:,} human + N_M = {self.n_m:,} metric ratings"
            + (f" (+ {s.n_rho_eta:,} paired)" if isinstance(s.n_rho_eta, int) else "")
            + f": cost {self.cost:,.2f}, ε = {self.eps:.5f} ({test})",
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


def _frontier_n_m(n_m_star: float, n_phi_star: float) -> np.ndarray:
    """N_M values of the frontier: 0 and a 1-2-5 series from y*/20 to 20·y*."""
    centre = n_m_star if n_m_star >= 1 else 10.0 * max(n_phi_star, 100.0)
    lo, hi = centre / 20.0, min(centre * 20.0, UNLIMITED)
    series = [m * 10**k for k in range(0, 10) for m in (1, 2, 5)]
    return np.array([0] + [v for v in series if lo <= v <= hi], np.int64)


def _target_plans(memo: _Memo, rows: np.ndarray, relaxed: _Relaxed, log_kappa, frontier: bool):
    """Integer target-mode plans of the scenarios ``rows``.

    Returns per row: (n_phi, n_m, eps, n_phi_alone, n_phi_unlimited, frontier points).
    """
    p = memo.p
    index, axis, fixed, kind = [], [], [], []
    for r in rows:
        y_star, x_star = float(relaxed.n_m[r]), float(relaxed.n_phi[r])
        near = np.unique(np.round(y_star * _NEAR).astype(np.int64))
        lanes = [("alone", 0, 0), ("unlimited", 0, UNLIMITED)]
        lanes += [("near", 0, int(v)) for v in near]
        floor_ceil = {math.floor(x_star), math.ceil(x_star)} - ({0} if p.shared[r] else set())
        lanes += [("near", 1, int(v)) for v in sorted(floor_ceil)]
        if not p.shared[r]:
            lanes.append(("near", 1, 0))
        if frontier:
            lanes += [("frontier", 0, int(v)) for v in _frontier_n_m(y_star, x_star)]
        for name, ax, value in lanes:
            index.append(r)
            axis.append(ax)
            fixed.append(min(max(value, 0), UNLIMITED))
            kind.append(name)
    index, axis, fixed = np.array(index), np.array(axis), np.array(fixed, np.int64)
    kind = np.array(kind)
    size = _least_sizes(memo, index, axis, fixed, log_kappa[index])
    n_phi = np.where(axis == 0, size, fixed)
    n_m = np.where(axis == 0, fixed, size)
    met = size <= UNLIMITED
    eps = np.full(len(index), np.inf)
    eps[met] = _memo_eps(memo, index[met], n_phi[met], n_m[met])
    cost = p.cost_human[index] * n_phi + p.cost_metric[index] * n_m + p.fixed_cost[index]
    cost = np.where(met, cost, np.inf)
    out = []
    for r in rows:
        mine = index == r
        best = np.flatnonzero(mine)[np.argmin(np.where(mine, cost, np.inf)[mine])]
        alone = np.flatnonzero(mine & (kind == "alone"))[0]
        unlimited = np.flatnonzero(mine & (kind == "unlimited"))[0]
        points = sorted(
            {
                (int(n_m[j]), int(n_phi[j]), float(cost[j]), float(eps[j]))
                for j in np.flatnonzero(mine & (kind == "frontier") & met)
            }
        )
        out.append(
            (
                int(n_phi[best]),
                int(n_m[best]),
                float(eps[best]),
                int(n_phi[alone]) if met[alone] else None,
                int(n_phi[unlimited]) if met[unlimited] else None,
                tuple(FrontierPoint(*pt) for pt in points),
            )
        )
    return out


def _affordable(p: Problems, r: int, n_m) -> tuple[np.ndarray, np.ndarray]:
    """For N_M tries, the most N_Φ the budget then buys, and the N_M its remainder buys."""
    spend = p.budget[r] - p.fixed_cost[r]
    n_m = np.minimum(np.asarray(n_m, float), UNLIMITED)
    n_phi = np.floor((spend - p.cost_metric[r] * n_m) / p.cost_human[r] * (1 + _BUDGET_SLACK))
    n_phi = np.clip(n_phi, 0, UNLIMITED)
    rest = np.floor((spend - p.cost_human[r] * n_phi) / p.cost_metric[r] * (1 + _BUDGET_SLACK))
    return n_phi.astype(np.int64), np.clip(rest, 0, UNLIMITED).astype(np.int64)


def _budget_plans(memo: _Memo, rows: np.ndarray, relaxed: _Relaxed):
    """Integer budget-mode plans (least exact ε within the budget) of the scenarios ``rows``.

    Tries N_M = y*·2^(k/4) (k = −8…8), 0 and all-but-⌊N_Φ*⌋ on the budget line,
    then y_best·2^(k/32) (k = −4…4) around the best; each try spends the rest
    of the budget on human ratings, and what is left of it on metric ratings.

    Returns per row: (n_phi, n_m, eps, eps_floor).
    """
    p = memo.p

    def tries(r, n_m):
        n_phi, rest = _affordable(p, r, n_m)
        keep = (n_phi > 0) | ~p.shared[r]
        return n_phi[keep], rest[keep]

    def best_of(candidates):
        index = np.concatenate([np.full(len(x), r) for r, (x, _) in candidates.items()])
        n_phi = np.concatenate([x for x, _ in candidates.values()])
        n_m = np.concatenate([y for _, y in candidates.values()])
        eps = _memo_eps(memo, index, n_phi, n_m)
        out = {}
        for r in candidates:
            mine = np.flatnonzero(index == r)
            j = mine[np.lexsort((n_m[mine], eps[mine]))[0]]
            out[r] = (int(n_phi[j]), int(n_m[j]), float(eps[j]))
        return out

    first = {}
    for r in rows:
        y_star, x_star = float(relaxed.n_m[r]), math.floor(relaxed.n_phi[r])
        spend = p.budget[r] - p.fixed_cost[r]
        by_humans = max(spend - p.cost_human[r] * x_star, 0.0) / p.cost_metric[r]
        n_m = np.concatenate([np.round(y_star * 2.0 ** (np.arange(-8, 9) / 4.0)), [0, by_humans]])
        first[r] = tries(r, n_m)
    coarse = best_of(first)
    around = 2.0 ** (np.arange(-4, 5) / 32.0)
    fine = best_of({r: tries(r, np.round(max(coarse[r][1], 1) * around)) for r in rows})
    ceiling = {r: _affordable(p, r, 0)[0] for r in rows}
    floor = _memo_eps(memo, rows, [int(ceiling[r]) for r in rows], [UNLIMITED] * len(rows))
    out = []
    for k, r in enumerate(rows):
        a, b = coarse[r], fine[r]
        best = min(a, b, key=lambda t: (t[2], t[1]))
        out.append((*best, float(floor[k])))
    return out


def _words(spec: PlanSpec, role: str) -> np.ndarray:
    """Two uint32 words naming (scenario, system) for :func:`sweep.fits.lane_keys`."""
    text = f"plan|{spec.model_dump_json()}|{role}"
    value = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return np.array([value & 0xFFFFFFFF, value >> 32], np.uint32)


def simulate_tests(
    specs: Sequence[PlanSpec],
    n_phi,
    n_m,
    eps,
    replicates: int,
    seed: int = 0,
    *,
    chunk_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Empirical power and type-I rate of the two-sided z-test at the planned sizes.

    For each scenario, R campaigns each of three systems at the same sizes:
    α, α + ε (α − ε where α + ε > 1) and a second one at α; sampled counts
    (:func:`kernels.counts.draw_counts`, each lane keyed by scenario, system
    and replicate), quadrature posteriors; z = (m₁ − m₂)/√(s₁² + s₂²) rejects
    when |z| > z₁₋γ/₂. Power: α vs α ± ε; type I: α vs α.

    Args:
        specs: S scenarios.
        n_phi, n_m: ``(S,)`` planned sizes.
        eps: ``(S,)`` the difference to detect.
        replicates: R ≥ 1.
        seed: the simulation's seed.
        chunk_size: lanes per compiled call (default 64 on CPU, 1024 elsewhere).

    Returns:
        ``(S,)`` power, its MCSE, type-I rate, its MCSE (finite fits only).
    """
    from binmetric_sweep.sweep.fits import fit_lanes, lane_counts, lane_keys

    jax.config.update("jax_enable_x64", True)
    s, r = len(specs), int(replicates)
    p = problems(specs)
    alpha = p.alpha
    eps = np.asarray(eps, float)
    shifted = np.where(alpha + eps <= 1.0, alpha + eps, alpha - eps)
    rates = np.stack([alpha, shifted, alpha], 1)  # (S, 3)
    roles = ("base", "shifted", "null")
    words = np.stack([[_words(spec, role) for role in roles] for spec in specs])  # (S, 3, 2)
    index = np.repeat(np.arange(s), 3 * r)
    lane_alpha = np.repeat(rates.reshape(-1), r)
    lane_words = np.repeat(words.reshape(-1, 2), r, axis=0)
    replicate = np.tile(np.arange(r), 3 * s)
    k = len(index)
    size = _lane_bucket(k)
    index, lane_alpha, lane_words, replicate = (
        _pad(v, size) for v in (index, lane_alpha, lane_words, replicate)
    )
    keys = lane_keys(seed, lane_words, replicate)
    designs = _designs(p, index, np.asarray(n_phi)[index], np.asarray(n_m)[index], lane_alpha)
    counts = _first(lane_counts(designs, keys, "sampled"), k)
    fits = fit_lanes(counts, keys[:k], "quadrature", chunk_size=chunk_size)
    mean = np.asarray(fits.post_mean).reshape(s, 3, r)
    sd = np.asarray(fits.post_sd).reshape(s, 3, r)
    crit = np.array([NormalDist().inv_cdf(1.0 - 0.5 * spec.gamma) for spec in specs])[:, None]

    def rate(other: int):
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (mean[:, 0] - mean[:, other]) / np.sqrt(sd[:, 0] ** 2 + sd[:, other] ** 2)
        finite = np.isfinite(z)
        n = np.maximum(finite.sum(1), 1)
        share = np.sum(finite & (np.abs(z) > crit), 1) / n
        return share, np.sqrt(share * (1.0 - share) / n)

    power, power_se = rate(1)
    type1, type1_se = rate(2)
    return power, power_se, type1, type1_se


def _message(spec: PlanSpec, n_phi, n_m, cost, eps, reachable, alone, unlimited, floor) -> str:
    """One or two plain sentences on what the plan means."""
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
            elif unlimited is not None and spec.n_rho_eta != "known":
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
                f"η are uncertain); {alone_text}. Shown: the smallest ε within the budget."
            )
        else:
            parts.append(
                f"UNREACHABLE within the budget {spec.budget:,.2f}: ε ≤ {spec.eps:g} costs more; "
                f"{alone_text}. Shown: the smallest ε within the budget."
            )
    else:
        parts.append(f"smallest ε within the budget {spec.budget:,.2f}.")
        if floor is not None:
            parts.append(
                f"With all of it on human ratings and unlimited metric ratings ε would be "
                f"{floor:.5f}."
            )
    return " ".join(parts)


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
    jax.config.update("jax_enable_x64", True)
    specs = [_spec(s, f"scenarios[{i}]") for i, s in enumerate(scenarios)]
    if not specs:
        raise SweepError("scenarios: the list is empty; give at least one scenario")
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 0:
        raise SweepError(f"replicates: {replicates!r} is not allowed; give an integer ≥ 0")
    p = problems(specs)
    memo = _Memo(p, chunk_size, {})
    n = len(specs)
    # Relax, measure κ at the rounded optimum, relax again with it.
    relaxed = solve_relaxed(p, settings=settings)
    x0 = np.maximum(np.round(relaxed.n_phi), np.where(p.shared, 1, 0)).astype(int)
    y0 = np.round(relaxed.n_m).astype(int)
    sd0 = _memo_eps(memo, np.arange(n), x0, y0) / (math.sqrt(2.0) * p.z)
    log_kappa = np.log(sd0) - np.log(relaxed_sd(x0, y0, p, np))
    log_kappa = np.where(np.isfinite(log_kappa) & ((x0 > 0) | (y0 > 0)), log_kappa, 0.0)
    relaxed = solve_relaxed(p, log_kappa, settings=settings)

    result: dict[int, dict] = {r: {} for r in range(n)}
    targets = np.flatnonzero(p.by_target)
    for r, (x, y, e, alone, unlimited, points) in zip(
        targets, _target_plans(memo, targets, relaxed, log_kappa, frontier), strict=True
    ):
        result[r] = dict(n_phi=x, n_m=y, eps=e, alone=alone, unlimited=unlimited, frontier=points)
    over = [
        r
        for r in targets
        if specs[r].budget is not None
        and specs[r].cost(result[r]["n_phi"], result[r]["n_m"])
        > specs[r].budget * (1 + _BUDGET_SLACK)
    ]
    by_budget = np.array(sorted(set(np.flatnonzero(~p.by_target)) | set(over)), int)
    if len(by_budget):
        q = problems(specs, by_target=[r not in set(by_budget) for r in range(n)])
        memo_b = _Memo(q, chunk_size, memo.values)
        relaxed_b = solve_relaxed(q, log_kappa, settings=settings)
        for r, (x, y, e, floor) in zip(
            by_budget, _budget_plans(memo_b, by_budget, relaxed_b), strict=True
        ):
            result[r].update(n_phi=x, n_m=y, eps=e, floor=floor)
    for r in np.flatnonzero(p.by_target):  # the floor of a target plan that fits its budget
        if specs[r].budget is not None and "floor" not in result[r]:
            ceiling = _affordable(p, r, 0)[0]
            result[r]["floor"] = float(_memo_eps(memo, [r], [ceiling], [UNLIMITED])[0])

    sizes = np.array([[result[r]["n_phi"], result[r]["n_m"]] for r in range(n)], np.int64)
    tested = np.array(
        [s.eps if s.eps is not None else result[r]["eps"] for r, s in enumerate(specs)]
    )
    if replicates:
        power, power_se, type1, type1_se = simulate_tests(
            specs, sizes[:, 0], sizes[:, 1], tested, replicates, seed, chunk_size=chunk_size
        )
    else:
        power = power_se = type1 = type1_se = np.full(n, np.nan)
    plans = []
    for r, spec in enumerate(specs):
        got = result[r]
        x, y, e = got["n_phi"], got["n_m"], got["eps"]
        cost = float(spec.cost(x, y))
        reachable = spec.eps is None or (
            e <= spec.eps and (spec.budget is None or cost <= spec.budget * (1 + _BUDGET_SLACK))
        )
        alone, unlimited, floor = got.get("alone"), got.get("unlimited"), got.get("floor")
        plans.append(
            Plan(
                spec=spec,
                n_phi=x,
                n_m=y,
                cost=cost,
                eps=e,
                sd=e / (math.sqrt(2.0) * p.z[r]),
                reachable=bool(reachable),
                n_phi_alone=alone,
                cost_alone=None if alone is None else float(spec.cost(alone, 0)),
                n_phi_unlimited=unlimited,
                eps_floor=floor,
                eps_tested=float(tested[r]),
                empirical_power=float(power[r]),
                empirical_power_mcse=float(power_se[r]),
                type1_rate=float(type1[r]),
                type1_mcse=float(type1_se[r]),
                replicates=int(replicates),
                seed=int(seed),
                frontier=got.get("frontier", ()),
                message=_message(spec, x, y, cost, e, reachable, alone, unlimited, floor),
            )
        )
    return plans


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
) -> Plan:
    """The plan for one scenario (see the module docstring); ``sweep plan`` on the command line.

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
    return plan_grid(
        [spec], replicates=replicates, seed=seed, frontier=frontier, chunk_size=chunk_size
    )[0]


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
    return [_spec(s, f"scenarios[{i}]") for i, s in enumerate(source)]


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
    return "\n".join(rows)


def plans_json(plans: Sequence[Plan]) -> str:
    """One JSON object per line."""
    return "\n".join(json.dumps(pl.as_dict(), ensure_ascii=False) for pl in plans)


def check_image_path(out: str | pathlib.Path) -> pathlib.Path:
    """``out`` as a path, if matplotlib can write its suffix (else :class:`SweepError`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = pathlib.Path(out)
    supported = FigureCanvasAgg(Figure()).get_supported_filetypes()
    if path.suffix.lstrip(".").lower() not in supported:
        allowed = ", ".join(sorted(supported))
        raise SweepError(f"-o: {str(path)!r} has no supported image suffix; allowed: {allowed}")
    return path


def plot_frontier(result: Plan, out: str | pathlib.Path) -> pathlib.Path:
    """Draw the frontier (least N_Φ against N_M), the plan and humans alone; returns the path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not result.frontier:
        raise SweepError("-o: there is no frontier to draw (it needs a target --eps)")
    path = check_image_path(out)
    fig = Figure(figsize=(6.4, 4.4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    pts = [pt for pt in result.frontier if pt.n_m > 0]
    ax.plot([pt.n_m for pt in pts], [pt.n_phi for pt in pts], marker="o", label="least N_Φ")
    if result.n_phi_alone is not None:
        ax.axhline(result.n_phi_alone, ls="--", color="grey", label="human ratings alone")
    if result.n_phi_unlimited is not None:
        ax.axhline(result.n_phi_unlimited, ls=":", color="grey", label="unlimited metric ratings")
    if result.n_m > 0:
        ax.plot(
            [result.n_m],
            [result.n_phi],
            marker="*",
            ms=14,
            color="C3",
            ls="none",
            label=f"plan (cost {result.cost:,.0f})",
        )
    ax.set_xscale("log")
    ax.set_xlabel(r"$N_M$ (metric ratings)")
    ax.set_ylabel(r"$N_\Phi$ (human ratings)")
    s = result.spec
    ax.set_title(
        rf"$\alpha$={s.alpha:g}, $\rho$={s.rho:g}, $\eta$={s.eta:g}: $\varepsilon\leq${s.eps:g} "
        rf"at $\gamma$={s.gamma:g}, power {s.power:g}",
        fontsize=9,
    )
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    return path
