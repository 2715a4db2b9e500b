"""Adaptive Gauss–Hermite quadrature of the full model: the fast exact path.

Where every sample size is moderate, the posterior of (α, ρ, η) in logits
(or, where the metric dominates, in the ridge coordinates of
:mod:`kernels.ridge`) is close to a Gaussian. Centred at the mode x* and
scaled by the Cholesky factor C of the inverse negative Hessian there, a
tensor Gauss–Hermite rule in z (x = x* + C·z; adaptive Gauss–Hermite
quadrature, Naylor & Smith 1982, Liu & Pierce 1994) then integrates the
posterior to near machine precision with a dozen or so nodes per axis, where
the nested rules of :mod:`kernels.quadrature` need several hundred thousand
evaluations.

With logit α the first coordinate and C lower-triangular, logit α depends on
z₀ alone, so the rule also gives the α-marginal: at each z₀ node, the sum
over (z₁, z₂) of the weighted ratio of posterior to Gaussian, r(z₀). Its
moments need nothing more. For the central interval, log r is taken as the
polynomial through those values (expanded in probabilists' Hermite
polynomials He_k), and the CDF of r(z)·φ(z) is integrated numerically and
inverted by Newton's method (:func:`_hermite_quantiles`). Interpolating r
itself, whose CDF is closed-form (c₀·Φ(z) − φ(z)·Σ c_k·He_{k−1}(z)), put
interval ends up to 8e-5 off where the moments were right to 1e-9.

Where the posterior is far from Gaussian (a handful of human or paired
ratings, a mode on a kink of the ridge map) the rule is wrong. Every lane is
therefore integrated twice, by a finer and a coarser rule
(:class:`LaplaceRule`), and accepted only where the two agree within
``tolerance`` on the mean and SD and ``interval_tolerance`` on both interval
ends; callers fall back to :func:`kernels.quadrature.posterior_summary` for
the rest. Use float64 (``jax_enable_x64``).

Where few human and paired ratings leave the position along the ridge far
from Gaussian, :func:`alpha_t_summary` keeps Gauss–Hermite axes for logit α
and logit t only and integrates s at each node with the nested rule's s rule.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.logdensity import grid_logdensity, logdensity
from binmetric_sweep.kernels.panels import normal_rule
from binmetric_sweep.kernels.quadrature import (
    PosteriorSummary,
    QuadratureRule,
    hermite_t_allows,
    log_segment_integral,
    summaries_agree,
)
from binmetric_sweep.kernels.ridge import ridge_grid_logdensity, ridge_logdensity, ridge_position
from binmetric_sweep.kernels.roots import bracketed_newton

Array = jax.Array

__all__ = ["LaplaceRule", "laplace_summary", "counts_allow", "AlphaTRule", "alpha_t_summary"]


class LaplaceRule(NamedTuple):
    """Static settings of the adaptive Gauss–Hermite rule.

    Attributes:
        logit_nodes: Gauss–Hermite nodes on each axis of the rule whose numbers
            are kept, in the logits of (α, ρ, η).
        logit_check_nodes: the same for the coarser rule it is checked against.
        ridge_nodes, ridge_check_nodes: the two rules in ridge coordinates,
            where the second axis moves t = p given α (see :func:`laplace_summary`).
        newton_steps: most damped Newton steps from the Beta posterior means to
            the mode (8, 12 and 20 accept the same lanes with the same worst
            errors on the benchmark's 1024 lanes and 1005 drawn ones; see
            docs/performance.md).
        tolerance: largest accepted |difference| of the two rules' posterior
            mean and SD.
        interval_tolerance: the same for the interval ends: the issue asks for
            the SD within 1e-5, and the nested rule's own interval ends are
            off by up to 2.5e-5 (``scripts/quadrature_accuracy.py``).
        min_count: fewest successes and failures in each of the four binomial
            counts for the rule to be tried at all; with fewer, a Beta
            factor is too skewed (or flat) for a Gaussian to stand in for it.
        newton_tolerance: Newton stops earlier once a step moves no coordinate
            (logits, or ridge coordinates) by more than this; the posterior
            SDs there are 1e-4 or more up to N_M = 10^7. On the benchmark's
            lanes half the lanes stopped moving after 4 steps, but a few in
            a hundred never did, by rounding at a flat peak.
    """

    logit_nodes: tuple[int, int, int] = (10, 10, 8)
    logit_check_nodes: tuple[int, int, int] = (8, 8, 8)
    ridge_nodes: tuple[int, int, int] = (16, 5, 16)
    ridge_check_nodes: tuple[int, int, int] = (12, 4, 12)
    newton_steps: int = 12
    tolerance: float = 1e-6
    interval_tolerance: float = 1e-5
    min_count: float = 3.0
    newton_tolerance: float = 1e-8


def _probabilists_hermite(z: Array, degree: int) -> list[Array]:
    """[He_0(z), …, He_degree(z)] by the recurrence He_{k+1} = z·He_k − k·He_{k−1}."""
    values = [jnp.ones_like(z), z]
    for k in range(1, degree):
        values.append(z * values[k] - k * values[k - 1])
    return values[: degree + 1]


def _covariance_factor(precision: Array) -> Array:
    """Lower-triangular C ``(3, 3)`` with C·Cᵀ = precision⁻¹, for a symmetric ``(3, 3)`` precision.

    The precision is factored in reverse order, P = U·Uᵀ with U upper
    triangular (Cholesky's recurrence from the last coordinate up), so that
    P⁻¹ = U⁻ᵀ·U⁻¹ and C = U⁻ᵀ, with no inverse formed. Not finite where P is
    not positive definite. Written out: batched over lanes, LAPACK's 3 × 3
    eigendecomposition, solve, inverse and Cholesky took a third of the
    mode's time on CPU.
    """
    p = precision
    u22 = jnp.sqrt(p[2, 2])
    u12, u02 = p[1, 2] / u22, p[0, 2] / u22
    u11 = jnp.sqrt(p[1, 1] - u12 * u12)
    u01 = (p[0, 1] - u02 * u12) / u11
    u00 = jnp.sqrt(p[0, 0] - u01 * u01 - u02 * u02)
    zero = jnp.zeros_like(u00)
    return jnp.stack(
        [
            jnp.stack([1.0 / u00, zero, zero]),
            jnp.stack([-u01 / (u00 * u11), 1.0 / u11, zero]),
            jnp.stack([(u01 * u12 - u02 * u11) / (u00 * u11 * u22), -u12 / (u11 * u22), 1.0 / u22]),
        ]
    )


def _gradient_and_precision(log_f, x: Array) -> tuple[Array, Array]:
    """The gradient ``(3,)`` of ``log_f`` at x and its negative Hessian ``(3, 3)``, in one pass."""

    def grad_twice(y):
        g = jax.grad(log_f)(y)
        return g, g

    hessian, g = jax.jacfwd(grad_twice, has_aux=True)(x)
    return g, -hessian


class _NewtonState(NamedTuple):
    step: Array  # steps taken
    x: Array  # (3,) the current point
    value: Array  # log_f(x)
    moving: Array  # whether the last step moved x by more than the tolerance


def _mode(log_f, start: Array, steps: int, tolerance: float) -> Array:
    """Maximiser of ``log_f`` by Newton steps, each halved up to 7 times until it ascends.

    Where the negative Hessian is not positive definite the step is a scaled
    gradient step instead. A step that finds no ascent leaves the point. Stops
    after ``steps`` steps, or once a step moves no coordinate by more than
    ``tolerance`` (Newton's next would move it by about its square). Under
    ``jax.vmap`` the loop runs until every lane has stopped, and a stopped
    lane stays as it is, so a lane's mode does not depend on the others.
    """
    fractions = 2.0 ** -jnp.arange(8.0)

    def step(state: _NewtonState) -> _NewtonState:
        x = state.x
        g, precision = _gradient_and_precision(log_f, x)
        factor = _covariance_factor(precision)
        definite = jnp.all(jnp.isfinite(factor))
        newton = factor @ (jnp.where(definite, factor, 0.0).T @ g)
        direction = jnp.where(definite, newton, g / (jnp.abs(jnp.diag(precision)) + 1.0))
        trial = x + fractions[:, None] * direction
        values = jax.vmap(log_f)(trial)
        values = jnp.where(jnp.isfinite(values), values, -jnp.inf)
        best = jnp.argmax(values)
        ascent = values[best] > state.value
        moved = jnp.max(jnp.abs(fractions[best] * direction))
        return _NewtonState(
            state.step + 1,
            jnp.where(ascent, trial[best], x),
            jnp.where(ascent, values[best], state.value),
            ascent & (moved > tolerance),
        )

    state = _NewtonState(jnp.array(0), start, log_f(start), jnp.array(True))
    state = jax.lax.while_loop(lambda s: s.moving & (s.step < steps), step, state)
    return state.x


def _marginal_summary(log_grid, mode, chol, nodes: tuple[int, ...], level: float):
    """Mean, SD and central interval of α = sigmoid(x₀) from a tensor rule.

    ``log_grid(x0, x1, …)``: the log-density at positions given by
    broadcasting components (:func:`kernels.ridge.ridge_grid_logdensity`,
    :func:`kernels.logdensity.grid_logdensity`). With ``chol``
    lower-triangular, x_k varies along the first k + 1 axes of the tensor
    grid only, so each term is evaluated on the nodes it varies over.
    ``nodes``: Gauss–Hermite nodes on each axis of z (any number of axes).
    """
    axes = [normal_rule(k) for k in nodes]
    z, log_w = axes[0]
    zs = np.ix_(*[z_k for z_k, _ in axes])
    xs = [mode[k] + sum(chol[k, j] * zs[j] for j in range(k + 1)) for k in range(len(nodes))]
    log_ratio = log_grid(*xs) - log_grid(*mode) + 0.5 * sum(z_k**2 for z_k in zs)
    log_ratio = jnp.where(jnp.isfinite(log_ratio), log_ratio, -jnp.inf)
    rest_w = sum(np.ix_(*[w_k for _, w_k in axes[1:]]))
    # log r(z₀_i): the rule over the other axes of the ratio at each z₀ node. Summed
    # without logsumexp's shift by the maximum: at the mode the ratio is 1 and
    # a term is at most ~e^(z₀²/2) (~e^15) where the mode is right, so nothing
    # overflows; where it is wrong the lane comes out non-finite and is
    # rejected. A second reduction over the values (the maximum) made XLA on
    # CPU evaluate the log-density at every node twice, once fused into each.
    log_r = jnp.log(jnp.sum(jnp.exp(log_ratio + rest_w), axis=tuple(range(1, len(nodes)))))
    log_r = log_r - jax.scipy.special.logsumexp(log_r + log_w)
    r = jnp.exp(log_r)
    alpha = jax.nn.sigmoid(mode[0] + chol[0, 0] * z)
    weights = jnp.exp(log_w) * r
    mean = jnp.sum(weights * alpha)
    sd = jnp.sqrt(jnp.sum(weights * (alpha - mean) ** 2))
    tail = 0.5 * (1.0 - level)
    to_alpha = lambda v: jax.nn.sigmoid(mode[0] + chol[0, 0] * v)  # noqa: E731
    low, high = _hermite_quantiles(z, log_w, log_r, tail)
    return PosteriorSummary(mean, sd, to_alpha(low), to_alpha(high))


#: Gauss–Legendre nodes of the CDF integral between the outermost Gauss–Hermite nodes.
_CDF_NODES = 24
#: Safeguarded Newton steps of each quantile from the Gaussian guess.
_QUANTILE_STEPS = 12


def _hermite_quantiles(z: np.ndarray, log_w: np.ndarray, log_r: Array, tail: float):
    """The ``tail`` and 1 − ``tail`` quantiles, in z, of the density r(z)·φ(z).

    ``z``, ``log_w``: the n-point Gauss–Hermite rule; ``log_r`` ``(n,)``: log r
    at its nodes, with Σ w·r = 1. The moments need nothing but these values;
    the CDF needs r between them. log r, nearly quadratic where the rule is
    right, is taken as the polynomial through its values, expanded in
    probabilists' Hermite polynomials (c_k = Σ_i w_i·log r_i·He_k(z_i)/k!, by
    the discrete orthogonality of the rule); expanding r itself (whose CDF is
    closed-form) put interval ends up to 8e-5 off where the moments were
    right to 1e-9. Between the outermost nodes the CDF is a Gauss–Legendre
    integral. Beyond them the density is continued as an exponential with the
    slope of log(r·φ) between the two outermost nodes (each tail holds
    ~1e-11·r of the mass at 16 nodes, ~1e-8·r at 12); a density that does not
    fall there makes the quantiles NaN, and the lane is rejected. Each
    quantile is Newton's within a bracket, from the Gaussian guess, the lower
    one counted from the left and the upper one from the right.
    """
    n = z.shape[0]
    he = jnp.stack(_probabilists_hermite(jnp.asarray(z), n - 1))
    factorials = np.array([float(np.prod(np.arange(1, k + 1))) for k in range(n)])
    coeffs = (he @ (jnp.exp(log_w) * log_r)) / factorials

    def log_density(v):
        """log r(v) + log φ(v)."""
        values = _probabilists_hermite(v, n - 1)
        log_r_v = sum(c * h for c, h in zip(coeffs, values, strict=True))
        return log_r_v - 0.5 * v * v - 0.5 * np.log(2.0 * np.pi)

    order = np.argsort(z)
    lo, hi = float(z[order[0]]), float(z[order[-1]])
    log_phi = -0.5 * z * z - 0.5 * np.log(2.0 * np.pi)
    log_f = log_r + log_phi

    def tail_mass(outer, inner):
        """f(e)/k beyond the outer node e, where log f falls outwards at rate k > 0."""
        rate = (log_f[inner] - log_f[outer]) / abs(float(z[outer] - z[inner]))
        return jnp.where(rate > 0.0, jnp.exp(log_f[outer]) / rate, jnp.nan)

    y, w = np.polynomial.legendre.leggauss(_CDF_NODES)

    def mass_between(a, b):
        half = 0.5 * (b - a)
        return half * jnp.sum(w * jnp.exp(log_density(a + half * (y + 1.0))))

    below, above = tail_mass(order[0], order[1]), tail_mass(order[-1], order[-2])
    total = below + mass_between(lo, hi) + above
    mean_z = jnp.sum(jnp.exp(log_w + log_r) * z)
    sd_z = jnp.sqrt(jnp.maximum(jnp.sum(jnp.exp(log_w + log_r) * z * z) - mean_z**2, 0.0))
    guess = jax.scipy.stats.norm.ppf(tail)

    def quantile(upper: bool):
        # h(v), increasing: F(v) − tail from the left, or tail − (1 − F(v)) from the right.
        def excess(v):
            if upper:
                return tail * total - above - mass_between(v, hi)
            return below + mass_between(lo, v) - tail * total

        def excess_and_density(v):
            """h(v) and its derivative, the density at v."""
            return excess(v), jnp.exp(log_density(v))

        start = mean_z - guess * sd_z if upper else mean_z + guess * sd_z
        start = jnp.clip(start, lo, hi)
        # No guard: the density is never negative, and where it is 0 Newton's
        # point (±∞ or NaN) is in no bracket. (A guard's select would also stop
        # XLA rewriting h / exp(y) as h·exp(−y), which moves the last bits.)
        a, b = jnp.array(lo), jnp.array(hi)
        return bracketed_newton(
            excess_and_density, a, b, start, _QUANTILE_STEPS, guard=False, zero_below=True
        )

    return quantile(False), quantile(True)


def _trusted(fine: PosteriorSummary, coarse: PosteriorSummary, rule) -> Array:
    """Whether fine and coarse agree within the tolerances of ``rule``
    (:class:`LaplaceRule` or :class:`AlphaTRule`) and the interval lies in (0, 1).
    """
    agree = summaries_agree(fine, coarse, rule.tolerance, rule.interval_tolerance)
    return agree & (fine.ci_low > 0.0) & (fine.ci_high < 1.0)


def counts_allow(counts: Counts, min_count: float) -> Array:
    """Whether every binomial count has at least ``min_count`` successes and failures.

    :func:`laplace_summary` never accepts a lane without it, so callers can
    send such lanes straight to the nested rule. Works on one lane or ``(B,)``
    arrays, JAX or NumPy.
    """
    pairs = (
        (counts.n_pos, counts.n_phi),
        (counts.n_tp, counts.n_pos_paired),
        (counts.n_tn, counts.n_neg_paired),
        (counts.m_pos, counts.n_m),
    )
    # Operators only, so that NumPy counts (the planner's, on the host) stay NumPy:
    # jnp.stack and jnp.all would dispatch a dozen device ops for every plan.
    allowed = True
    for k, n in pairs:
        allowed = allowed & (k >= min_count) & (n - k >= min_count)
    return allowed


def _laplace_point(
    log_f, counts: Counts, ridge: bool, steps: int, tolerance: float
) -> tuple[Array, Array]:
    """The mode ``(3,)`` of ``log_f`` and the lower Cholesky factor ``(3, 3)`` of the inverse
    negative Hessian there (logit α first: logit α = mode₀ + C₀₀·z₀).

    Newton starts from the Beta posterior means of α, ρ, η, carried to ridge
    coordinates or logits.
    """
    means = (
        (counts.n_pos + 1.0) / (counts.n_phi + 2.0),
        (counts.n_tp + 1.0) / (counts.n_pos_paired + 2.0),
        (counts.n_tn + 1.0) / (counts.n_neg_paired + 2.0),
    )
    if ridge:
        start = ridge_position(*means)
    else:
        start = jnp.stack([jnp.log(v) - jnp.log1p(-v) for v in means])
    mode = _mode(log_f, start, steps, tolerance)
    return mode, _covariance_factor(_gradient_and_precision(log_f, mode)[1])


def laplace_summary(
    counts: Counts, ridge: bool, level: float = 0.95, rule: LaplaceRule = LaplaceRule()
) -> tuple[PosteriorSummary, Array]:
    """Posterior mean, SD and central interval of α for one full-model lane, and a trust flag.

    Args:
        counts: one lane's counts (scalars); ρ, η unknown and N_M > 0.
        ridge: static; integrate in ridge coordinates (:mod:`kernels.ridge`)
            rather than the logits of (α, ρ, η).
        level: credible level of the central interval, in (0, 1).
        rule: node counts, Newton steps and tolerance.

    Returns:
        The summary of the finer rule, and a bool: whether it agrees with the
        coarser one within the rule's tolerances (False also where anything is
        not finite).
    """
    if ridge:
        log_f = lambda x: ridge_logdensity(x, counts)  # noqa: E731
        log_grid = lambda *x: ridge_grid_logdensity(*x, counts)  # noqa: E731
    else:
        log_f = lambda x: logdensity(x, counts)  # noqa: E731
        log_grid = lambda *x: grid_logdensity(*x, counts)  # noqa: E731
    mode, chol = _laplace_point(log_f, counts, ridge, rule.newton_steps, rule.newton_tolerance)
    # In ridge coordinates z₁ moves t = p given α, which the metric pins: a
    # Beta(m₊ + 1, N_M − m₊ + 1) kernel, close to Gaussian (every count is at
    # least min_count), needs fewer nodes than α and the position along the
    # ridge, which need more than in logits (12 × 7 × 12 against 10 × 5 × 10
    # accepts what 12³ against 10³ does, at 0.55 times the cost; 16 × 7 × 16
    # against 12 × 5 × 12 accepts 4 % more of the benchmark's lanes). The node
    # counts, on the benchmark's 4096 lanes and the accuracy script's 1005 drawn
    # ones that the counts allow, against the nested rule with twice its nodes:
    # 16 × 5 × 16 against 12 × 4 × 12 accepts 2380 ridge lanes where
    # 16 × 7 × 16 against 12 × 5 × 12 takes 2383, with the same worst errors
    # (2.3e-7 in the moments, 3.2e-6 at an interval end); in logits
    # 10 × 10 × 8 against 8³ accepts 1176 of 1183, within 2.6e-7 and 6.8e-7.
    # The innermost logit axis has 8 nodes, not 10: on the development CPU
    # (AVX-512) one of 10 costs twice as much a node as one of 8 or 16. Rules
    # that share an axis are no check: 12 × 5 × 8 against 8 × 4 × 8 let lanes
    # 8e-4 off through. See docs/performance.md.
    nodes, check = (
        (rule.ridge_nodes, rule.ridge_check_nodes)
        if ridge
        else (rule.logit_nodes, rule.logit_check_nodes)
    )
    fine = _marginal_summary(log_grid, mode, chol, nodes, level)
    coarse = _marginal_summary(log_grid, mode, chol, check, level)
    return fine, counts_allow(counts, rule.min_count) & _trusted(fine, coarse, rule)


class AlphaTRule(NamedTuple):
    """Static settings of :func:`alpha_t_summary`.

    Attributes:
        nodes: Gauss–Hermite nodes on the (logit α, logit t) axes of the rule
            whose numbers are kept.
        check_nodes: the same for the coarser rule it is checked against.
        newton_steps, newton_tolerance: the search for the mode, as in
            :class:`LaplaceRule`.
        tolerance, interval_tolerance: largest accepted |difference| of the
            two rules' mean and SD, and of their interval ends (those of
            :class:`LaplaceRule`).

    The node counts, on the benchmark's 286 lanes of 4096 that the rule may
    take (N_Φ = 100 mostly), against the driver's numbers: (16, 8) against
    (12, 6) accept 72 %, (20, 8) against (16, 6) 74 % at twice the cost.
    With 24 α nodes (against 20) it accepts 12 %, with 32 none: the moments
    are better, but the interval breaks (the polynomial through log r at the
    outermost nodes, :func:`_hermite_quantiles`, swings between them). The
    same t rule in both (16, 8 against 16, 8) lets a 1.4e-6 error in the mean
    through. See docs/performance.md.
    """

    nodes: tuple[int, int] = (16, 8)
    check_nodes: tuple[int, int] = (12, 6)
    newton_steps: int = 12
    newton_tolerance: float = 1e-8
    tolerance: float = 1e-6
    interval_tolerance: float = 1e-5


def alpha_t_summary(
    counts: Counts,
    level: float = 0.95,
    rule: AlphaTRule = AlphaTRule(),
    s_rule: QuadratureRule = QuadratureRule(),
) -> tuple[PosteriorSummary, Array]:
    """Posterior summary of α from Gauss–Hermite axes in (logit α, logit t), and a trust flag.

    In the ridge coordinates of :mod:`kernels.ridge`, the third axis (the
    position u along the s-interval) carries the product of the Beta
    posteriors of ρ and η, which with a hundred or so paired ratings is too
    skewed, and bounded, for a Gaussian rule; logit α and logit t are
    nearly Gaussian there. So α and t get a tensor Gauss–Hermite rule,
    placed by the leading 2 × 2 block of the ridge Laplace approximation
    (the Cholesky factor of the (α, t) marginal covariance), and s the
    nested rule's own s rule (:func:`kernels.quadrature.log_segment_integral`)
    at each of its nodes. The density integrated is

        α^(n₊+1) (1 − α)^(N_Φ−n₊+1) · t^(m₊+1) (1 − t)^(N_M−m₊+1) · S(α, t),

    S the s-integral, the powers including the logit Jacobians. Like
    :func:`laplace_summary` it is computed twice, with ``rule.nodes`` and
    ``rule.check_nodes``, and trusted where the two agree within the rule's
    tolerances, the interval lies inside (0, 1) and
    :func:`kernels.quadrature.hermite_t_allows` (no kink in t).

    Args:
        counts: one full-model lane's counts (scalars).
        level: credible level of the central interval, in (0, 1).
        rule: the two tensor rules, the search for the mode and the tolerances.
        s_rule: the s rule (its ``s_nodes`` and ``drop``).

    Returns:
        The summary of the finer rule, and whether to trust it.
    """
    log_f = lambda x: ridge_logdensity(x, counts)  # noqa: E731
    mode, chol = _laplace_point(log_f, counts, True, rule.newton_steps, rule.newton_tolerance)
    mode, chol = mode[:2], chol[:2, :2]
    a, b = counts.n_pos + 1.0, counts.n_phi - counts.n_pos + 1.0
    k, n = counts.m_pos + 1.0, counts.n_m - counts.m_pos + 1.0

    def log_grid(x_alpha, x_t):
        x_alpha, x_t = jnp.broadcast_arrays(x_alpha, x_t)
        segment = jax.vmap(lambda alpha, t: log_segment_integral(alpha, t, counts, s_rule))
        log_s = segment(jax.nn.sigmoid(x_alpha).reshape(-1), jax.nn.sigmoid(x_t).reshape(-1))
        return (
            a * jax.nn.log_sigmoid(x_alpha)
            + b * jax.nn.log_sigmoid(-x_alpha)
            + k * jax.nn.log_sigmoid(x_t)
            + n * jax.nn.log_sigmoid(-x_t)
            + log_s.reshape(x_alpha.shape)
        )

    fine = _marginal_summary(log_grid, mode, chol, rule.nodes, level)
    coarse = _marginal_summary(log_grid, mode, chol, rule.check_nodes, level)
    return fine, hermite_t_allows(counts) & _trusted(fine, coarse, rule)
