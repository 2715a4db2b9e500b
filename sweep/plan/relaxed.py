"""The relaxed problem: real-valued sizes, the Laplace posterior SD (:func:`relaxed_sd`),
and the augmented-Lagrangian solve with optax (:func:`solve_relaxed`)."""

from __future__ import annotations

import math
from functools import cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.sweep.plan.exact import EpsMemo
from binmetric_sweep.sweep.plan.spec import Problems
from binmetric_sweep.sweep.spec.config import MAX_SIZE
from binmetric_sweep.sweep.spec.lanes import require_float64

__all__ = ["Relaxed", "SolverSettings", "relax_with_kappa", "relaxed_sd", "solve_relaxed"]


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


class Relaxed(NamedTuple):
    """The relaxed plans of S scenarios (:func:`solve_relaxed`).

    Attributes:
        n_phi: ``(S,)`` real N_Φ.
        n_m: ``(S,)`` real N_M.
        constraint: ``(S,)`` log-σ or log-cost excess at the solution (≤ 0: met).
    """

    n_phi: np.ndarray
    n_m: np.ndarray
    constraint: np.ndarray


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
        return Relaxed(jnp.expm1(z[0]), jnp.expm1(z[1]), _terms(z, p, log_kappa)[1])

    return jax.jit(jax.vmap(one))


def _bucket(n: int) -> int:
    """Scenarios a relaxed solve is padded to: powers of two of at least 8 keep the
    jitted solver's compiled shapes few (tuning constants: docs/performance.md)."""
    return max(8, 1 << (max(n, 1) - 1).bit_length())


def solve_relaxed(
    p: Problems,
    log_kappa=None,
    start=None,
    settings: SolverSettings | None = None,
) -> Relaxed:
    """The relaxed plans of S scenarios: real (N_Φ, N_M), in one jitted call.

    Target mode minimises log cost subject to log σ̃ + log κ ≤ log σ_target;
    budget mode minimises log σ̃ + log κ subject to log(cost/budget) ≤ 0; σ̃ is
    :func:`relaxed_sd`. An augmented Lagrangian: ``settings.outer`` multiplier
    updates, each after ``settings.inner`` steps of optax Adam on
    z = (log(1 + N_Φ), log(1 + N_M)) (so that a size can reach 0 with steps of
    the same scale), clipped to N_Φ ≥ 1 (shared paired set) or ≥ 0, N_M ≥ 0,
    and both ≤ :data:`UNLIMITED`. tests/sweep/test_plan.py checks it against a
    dense scan of the same surrogate problem.

    Args:
        p: ``(S,)`` scenarios.
        log_kappa: ``(S,)`` log of the correction κ = σ_exact/σ̃ (default 0).
        start: ``(2, S)`` starting z (default: :func:`_start`).
        settings: solver settings (default :class:`SolverSettings`).

    Returns:
        ``(S,)`` N_Φ, N_M and the constraint's value there (≤ ~1e-4: met).
    """
    require_float64()
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
    return Relaxed(*(np.asarray(x)[:s] for x in out))


def relax_with_kappa(memo: EpsMemo, settings: SolverSettings | None) -> tuple[Relaxed, np.ndarray]:
    """Relax, measure κ with the exact quadrature at the rounded optimum, relax again with it
    (the planner's first stage, :func:`sweep.plan.plan_grid`).

    Args:
        memo: the call's scenarios and exact evaluations (extended in place).
        settings: the solver's settings (None: :class:`SolverSettings`).

    Returns:
        The second relaxed solution, and ``(S,)`` log κ (0 where it cannot be measured:
        no ratings at the rounded optimum, or an exact ε that is not finite).
    """
    p = memo.p
    n = len(p.alpha)
    relaxed = solve_relaxed(p, settings=settings)
    x0 = np.maximum(np.round(relaxed.n_phi), np.where(p.shared, 1, 0)).astype(int)
    y0 = np.round(relaxed.n_m).astype(int)
    sd0 = memo.eps(np.arange(n), x0, y0) / (math.sqrt(2.0) * p.z)
    log_kappa = np.log(sd0) - np.log(relaxed_sd(x0, y0, p, np))
    log_kappa = np.where(np.isfinite(log_kappa) & ((x0 > 0) | (y0 > 0)), log_kappa, 0.0)
    return solve_relaxed(p, log_kappa, settings=settings), log_kappa
