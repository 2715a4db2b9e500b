"""Posteriors of several systems' α and the probability that one beats another.

Each system s has its counts (:class:`kernels.counts.Counts`, one lane per
system). Two models of the metric's rates (docs/model.md, "Comparing real
systems"):

- **per-system**: each system has its own (ρ_s, η_s); the α-marginals are
  independent, each the model's posterior of one campaign
  (:func:`kernels.quadrature.alpha_log_marginal`), and
  P(α_a > α_b) = ∫ π_a(x) F_b(x) dx.
- **shared**: one (ρ, η) with the pooled paired counts. Given (ρ, η) the α_s
  are independent, each with the closed-form conditional density
  q_s(α | ρ, η) ∝ Beta(α; n₊ + 1, N_Φ − n₊ + 1)·p^m₊(1 − p)^(N_M − m₊); the
  joint is integrated over (ρ, η) by a Gauss–Hermite rule in logit
  coordinates centred at the mode of (ρ, η)'s marginal posterior, whose
  density is the pooled Betas times Π_s Z_s(ρ, η), Z_s the integral of q_s.
  Every marginal and every P(α_a > α_b) = Σ_k W_k P(α_a > α_b | ρ_k, η_k)
  comes from that one joint.

A density of α is carried on Gauss–Legendre panels (:class:`PanelDensity`):
its normalised masses at the nodes, and in each panel the Legendre series of
the density through its nodes, whose antiderivative gives the CDF at any
point. The pairs are summed on one composite Gauss–Legendre rule common to
all systems (:func:`grid_rule`), P(α_a > α_b) = Σ_g m_a,g F_b(x_g), for every
pair at once as a matrix product (:func:`p_greater_matrix`,
:func:`shared_p_greater`).

The densities are one system per call (callers ``jax.vmap``); the pair
functions take every system at once. Use float64.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlog1py, xlogy

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.panels import normal_rule

Array = jax.Array

__all__ = [
    "PanelDensity",
    "panel_nodes",
    "panel_density",
    "density_cdf",
    "density_moments",
    "density_quantile",
    "density_on_grid",
    "grid_rule",
    "p_greater_matrix",
    "shared_p_greater",
    "conditional_log_density",
    "conditional_window",
    "pooled_rates",
    "SharedRule",
    "shared_outer_rule",
]

#: Bisection steps of a quantile (interval ends to below 1e-15 of the window).
_QUANTILE_STEPS = 60
#: The step lengths a Newton step of the shared model's mode tries, longest first.
_BACKTRACK = 0.5 ** np.arange(12)


class PanelDensity(NamedTuple):
    """A normalised density of α on J Gauss–Legendre panels of n nodes, [lo, hi] (one system).

    Attributes:
        lo, hi: the window (α), outside which the density is taken as 0.
        x: ``(J, n)`` nodes.
        mass: ``(J, n)`` normalised masses at the nodes (sum 1).
        coeffs: ``(J, n)`` Legendre coefficients of the normalised density in each
            panel's coordinate y in [−1, 1] (density per unit α).
        cum: ``(J + 1,)`` the CDF at the panel edges.
        sd: the density's SD (to choose the narrower of two).
    """

    lo: Array
    hi: Array
    x: Array
    mass: Array
    coeffs: Array
    cum: Array
    sd: Array


def panel_nodes(lo: Array, hi: Array, panels: int, n: int) -> Array:
    """``(panels, n)`` Gauss–Legendre nodes of ``panels`` equal panels over [lo, hi]."""
    y, _ = np.polynomial.legendre.leggauss(n)
    half = 0.5 * (hi - lo) / panels
    starts = lo + 2.0 * half * jnp.arange(panels)
    return starts[:, None] + half * (y[None, :] + 1.0)


def _legendre_matrix(y: np.ndarray, degree: int) -> np.ndarray:
    """``(len(y), degree)`` P_k(y) for k < degree."""
    return np.stack([np.polynomial.legendre.Legendre.basis(k)(y) for k in range(degree)], axis=1)


def _antiderivative_matrix(y: Array, degree: int) -> Array:
    """``(..., degree)`` ∫_{−1}^{y} P_k, by (P_{k+1} − P_{k−1})/(2k + 1) (k = 0: y + 1)."""
    p = [jnp.ones_like(y), y]
    for k in range(1, degree):
        p.append(((2 * k + 1) * y * p[k] - k * p[k - 1]) / (k + 1))
    cols = [y + 1.0] + [(p[k + 1] - p[k - 1]) / (2 * k + 1) for k in range(1, degree)]
    return jnp.stack(cols, axis=-1)


def panel_density(lo: Array, hi: Array, x: Array, log_density: Array) -> PanelDensity:
    """The :class:`PanelDensity` of the (unnormalised) ``log_density`` at nodes ``x`` = panel_nodes.

    A panel's Legendre coefficients come from its n values by Gauss–Legendre
    (exact for the interpolating polynomial of degree n − 1).
    """
    panels, n = x.shape
    y, w = np.polynomial.legendre.leggauss(n)
    half = 0.5 * (hi - lo) / panels
    top = jnp.max(log_density)
    values = jnp.exp(log_density - top)
    raw = half * w[None, :] * values
    total = jnp.sum(raw)
    mass = raw / total
    density = values / total
    basis = _legendre_matrix(y, n)
    scale = (2.0 * np.arange(n) + 1.0) / 2.0
    coeffs = (density * w[None, :]) @ basis * scale[None, :]
    cum = jnp.concatenate([jnp.zeros(1), jnp.cumsum(jnp.sum(mass, axis=1))])
    mean = jnp.sum(mass * x)
    sd = jnp.sqrt(jnp.maximum(jnp.sum(mass * (x - mean) ** 2), 0.0))
    return PanelDensity(lo, hi, x, mass, coeffs, cum, sd)


def density_cdf(d: PanelDensity, x: Array) -> Array:
    """F(x) at points ``x`` (any shape), 0 below the window and 1 above it."""
    panels, n = d.coeffs.shape
    width = (d.hi - d.lo) / panels
    position = (x - d.lo) / width
    j = jnp.clip(jnp.floor(position), 0, panels - 1).astype(jnp.int32)
    y = jnp.clip(2.0 * (position - j) - 1.0, -1.0, 1.0)
    partial = 0.5 * width * jnp.sum(_antiderivative_matrix(y, n) * d.coeffs[j], axis=-1)
    inside = d.cum[j] + partial
    return jnp.where(x <= d.lo, 0.0, jnp.where(x >= d.hi, 1.0, jnp.clip(inside, 0.0, 1.0)))


def density_moments(d: PanelDensity) -> tuple[Array, Array]:
    """Mean and SD of the density."""
    mean = jnp.sum(d.mass * d.x)
    return mean, d.sd


def density_quantile(cdf, lo: Array, hi: Array, q: Array) -> Array:
    """The x in [lo, hi] where the monotone ``cdf(x)`` reaches ``q``, by bisection."""

    def step(bounds, _):
        a, b = bounds
        mid = 0.5 * (a + b)
        below = cdf(mid) < q
        return (jnp.where(below, mid, a), jnp.where(below, b, mid)), None

    (a, b), _ = jax.lax.scan(step, (lo, hi), None, length=_QUANTILE_STEPS)
    return 0.5 * (a + b)


def _legendre_values(y: Array, degree: int) -> Array:
    """``(..., degree)`` P_k(y) for k < degree, by Bonnet's recursion."""
    p = [jnp.ones_like(y), y]
    for k in range(1, degree - 1):
        p.append(((2 * k + 1) * y * p[k] - k * p[k - 1]) / (k + 1))
    return jnp.stack(p[:degree], axis=-1)


def density_on_grid(d: PanelDensity, x: Array) -> tuple[Array, Array]:
    """The density and its CDF at points ``x`` ``(G,)``: 0 and 0 below the window, 0 and 1
    above it; inside, the panel's Legendre series and its antiderivative."""
    panels, n = d.coeffs.shape
    width = (d.hi - d.lo) / panels
    position = (x - d.lo) / width
    j = jnp.clip(jnp.floor(position), 0, panels - 1).astype(jnp.int32)
    y = jnp.clip(2.0 * (position - j) - 1.0, -1.0, 1.0)
    c = d.coeffs[j]
    pdf = jnp.sum(_legendre_values(y, n) * c, axis=-1)
    cdf = d.cum[j] + 0.5 * width * jnp.sum(_antiderivative_matrix(y, n) * c, axis=-1)
    inside = (x > d.lo) & (x < d.hi)
    pdf = jnp.where(inside, jnp.maximum(pdf, 0.0), 0.0)
    cdf = jnp.where(x <= d.lo, 0.0, jnp.where(x >= d.hi, 1.0, jnp.clip(cdf, 0.0, 1.0)))
    return pdf, cdf


def grid_rule(lo: Array, hi: Array, panels: int, n: int) -> tuple[Array, Array]:
    """``(panels·n,)`` nodes and weights of the composite Gauss–Legendre rule over [lo, hi]."""
    _, w = np.polynomial.legendre.leggauss(n)
    x = panel_nodes(lo, hi, panels, n).reshape(-1)
    weight = jnp.tile(0.5 * (hi - lo) / panels * w, panels)
    return x, weight


def _pair_sums(values, s: int, x: Array, w: Array, pairs):
    """Σ_g mass_a,g · cdf_b,g over the common rule (x, w) ``(B, G)``, block by block.

    ``values(cum, xb, wb)`` gives the S densities' values and CDFs at a block's
    nodes, each ``(S, G)``, and the CDFs at the block's end ``(S,)`` from those
    at its start, ``cum``. Returns ``(S, S)``, or ``(P,)`` for ``pairs = (a, b)``.
    """

    def per_block(carry, block):
        total, cum = carry
        xb, wb = block
        pdf, cdf, cum = values(cum, xb, wb)
        mass = pdf * wb[None, :]
        if pairs is None:
            return (total + mass @ cdf.T, cum), None
        a, b = pairs
        return (total + jnp.sum(mass[a] * cdf[b], axis=1), cum), None

    shape = (s, s) if pairs is None else pairs[0].shape
    (total, _), _ = jax.lax.scan(per_block, (jnp.zeros(shape, x.dtype), jnp.zeros(s)), (x, w))
    return total


def p_greater_matrix(
    densities: PanelDensity, x: Array, w: Array, pairs: tuple[Array, Array] | None = None
) -> Array:
    """``(S, S)`` P(α_i > α_j) = ∫ p_i(α) F_j(α) dα for S independent densities (fields
    ``(S, ...)``), every pair at once; or ``(P,)`` for the listed ``pairs`` (a, b).

    The integral is taken on one common composite Gauss–Legendre rule, nodes
    ``x`` and weights ``w`` ``(B, G)`` in B blocks of G nodes, fine enough for
    the narrowest density; each density's value and CDF there come from its
    panels' Legendre series. Over every pair the sum is one matrix product
    per block, masses times CDFs, in memory ``(S, G)`` whatever the rule's length.
    """

    def values(cum, xb, wb):
        pdf, cdf = jax.vmap(lambda d: density_on_grid(d, xb))(densities)
        return pdf, cdf, cum

    return _pair_sums(values, densities.lo.shape[0], x, w, pairs)


def _panel_cdf_matrix(n: int) -> np.ndarray:
    """``(n, n)`` A with ∫_{−1}^{y_i} f = Σ_l A[i, l] f(y_l) for the polynomial f of degree
    < n through f's values at the n Gauss–Legendre nodes y."""
    y, w = np.polynomial.legendre.leggauss(n)
    basis = _legendre_matrix(y, n)  # (node, k)
    to_coeffs = (basis * w[:, None] * ((2.0 * np.arange(n) + 1.0) / 2.0)).T  # (k, node)
    legendre = np.polynomial.legendre.Legendre
    integrals = np.stack([legendre.basis(k).integ(lbnd=-1.0)(y) for k in range(n)], axis=1)
    return integrals @ to_coeffs


def shared_p_greater(
    counts: Counts,
    rho: Array,
    eta: Array,
    log_weight: Array,
    x: Array,
    w: Array,
    pairs: tuple[Array, Array] | None = None,
    n: int = 16,
) -> Array:
    """``(S, S)`` P(α_i > α_j) under the shared model, Σ_k W_k ∫ q_i(α | k) F_j(α | k) dα
    over K outer nodes (``rho``, ``eta``, ``log_weight`` ``(K,)``); or ``(P,)`` for the
    listed ``pairs`` (a, b).

    As :func:`p_greater_matrix`, on the common rule ``(B, G)`` of panels of
    ``n`` nodes, but each conditional density q_s(α | ρ_k, η_k) is evaluated
    in closed form (:func:`conditional_log_density`) at the nodes and
    normalised there; its CDF is the sum of the panels before plus, within a
    panel, the integral of the interpolant through the panel's nodes.
    """
    panel_cdf = jnp.asarray(_panel_cdf_matrix(n))
    s = counts.n_phi.shape[0]

    def log_q(xb, rho_k, eta_k):
        return jax.vmap(lambda c: conditional_log_density(xb, c, rho_k, eta_k))(counts)

    def per_node(total, node):
        rho_k, eta_k, lw = node

        def add_block(log_z, block):
            xb, wb = block
            terms = log_q(xb, rho_k, eta_k) + jnp.log(wb)[None, :]
            return jnp.logaddexp(log_z, jax.nn.logsumexp(terms, axis=1)), None

        log_z, _ = jax.lax.scan(add_block, jnp.full(s, -jnp.inf), (x, w))

        def values(cum, xb, wb):
            pdf = jnp.exp(log_q(xb, rho_k, eta_k) - log_z[:, None])
            panels = pdf.reshape(s, -1, n)
            weights = wb.reshape(-1, n)
            mass = jnp.sum(panels * weights[None], axis=2)  # (S, panels of the block)
            half = 0.5 * jnp.sum(weights, axis=1)  # each panel's half-width
            before = cum[:, None] + jnp.cumsum(mass, axis=1) - mass
            within = (panels @ panel_cdf.T) * half[None, :, None]
            cdf = jnp.clip(before[..., None] + within, 0.0, 1.0).reshape(s, -1)
            return pdf, cdf, cum + jnp.sum(mass, axis=1)

        return total + jnp.exp(lw) * _pair_sums(values, s, x, w, pairs), None

    shape = (s, s) if pairs is None else pairs[0].shape
    out, _ = jax.lax.scan(per_node, jnp.zeros(shape, x.dtype), (rho, eta, log_weight))
    return out


def conditional_log_density(alpha: Array, counts: Counts, rho: Array, eta: Array) -> Array:
    """log q(α | ρ, η) up to a constant: the human Beta kernel times the metric's binomial."""
    a = counts.n_pos
    b = counts.n_phi - counts.n_pos
    p = alpha * rho + (1.0 - alpha) * (1.0 - eta)
    q = alpha * (1.0 - rho) + (1.0 - alpha) * eta
    return (
        xlogy(a, alpha)
        + xlog1py(b, -alpha)
        + xlogy(counts.m_pos, p)
        + xlogy(counts.n_m - counts.m_pos, q)
    )


def conditional_window(counts: Counts, rho: Array, eta: Array, width: float) -> tuple[Array, Array]:
    """[lo, hi] holding q(α | ρ, η): its mode ± ``width`` SDs of its Laplace approximation.

    The log density is concave in α (sums of log-linear terms), so its mode is
    found by bisection on the slope, and the SD from the curvature there.
    """

    def ratio(k, v, power):
        """k / v**power, 0 where k = 0 (a count of zero adds nothing, even at v = 0)."""
        return jnp.where(k > 0, k / jnp.maximum(v, 1e-150) ** power, 0.0)

    def slope_and_curvature(alpha):
        a = counts.n_pos
        b = counts.n_phi - counts.n_pos
        d = rho + eta - 1.0
        p = alpha * rho + (1.0 - alpha) * (1.0 - eta)
        q = 1.0 - p
        m, rest = counts.m_pos, counts.n_m - counts.m_pos
        slope = (
            ratio(a, alpha, 1) - ratio(b, 1 - alpha, 1) + d * (ratio(m, p, 1) - ratio(rest, q, 1))
        )
        curve = -ratio(a, alpha, 2) - ratio(b, 1 - alpha, 2)
        curve = curve - d * d * (ratio(m, p, 2) + ratio(rest, q, 2))
        return slope, curve

    def step(bounds, _):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        rising = slope_and_curvature(mid)[0] > 0
        return (jnp.where(rising, mid, lo), jnp.where(rising, hi, mid)), None

    (lo, hi), _ = jax.lax.scan(step, (jnp.zeros(()), jnp.ones(())), None, length=60)
    mode = 0.5 * (lo + hi)
    _, curve = slope_and_curvature(mode)
    sd = 1.0 / jnp.sqrt(jnp.maximum(-curve, 1.0))
    return jnp.maximum(mode - width * sd, 0.0), jnp.minimum(mode + width * sd, 1.0)


def pooled_rates(counts: Counts) -> tuple[Array, Array, Array, Array]:
    """Beta parameters (a_ρ, b_ρ, a_η, b_η) of the pooled paired counts of all systems."""
    return (
        jnp.sum(counts.n_tp) + 1.0,
        jnp.sum(counts.n_pos_paired - counts.n_tp) + 1.0,
        jnp.sum(counts.n_tn) + 1.0,
        jnp.sum(counts.n_neg_paired - counts.n_tn) + 1.0,
    )


class SharedRule(NamedTuple):
    """The outer (ρ, η) rule of the shared model: K nodes and their normalised weights.

    Attributes:
        rho, eta: ``(K,)`` nodes.
        log_weight: ``(K,)`` log of each node's posterior weight W_k (Σ W_k = 1),
            the pooled Betas, Π_s Z_s and the rule's own weight included.
        densities: the conditional α-densities at each node, each field ``(K, S, ...)``.
    """

    rho: Array
    eta: Array
    log_weight: Array
    densities: PanelDensity


def _conditionals(counts: Counts, rho: Array, eta: Array, panels: int, n: int, width: float):
    """Each system's conditional α-density at (ρ, η), and log Z_s (its integral)."""

    def one(c: Counts):
        # The window only places the nodes: no derivative flows through it.
        lo, hi = jax.lax.stop_gradient(conditional_window(c, rho, eta, width))
        x = panel_nodes(lo, hi, panels, n)
        log_q = conditional_log_density(x, c, rho, eta)
        _, w = np.polynomial.legendre.leggauss(n)
        half = 0.5 * (hi - lo) / panels
        log_z = jax.nn.logsumexp(log_q + jnp.log(half * w)[None, :])
        return panel_density(lo, hi, x, log_q), log_z

    return jax.vmap(one)(counts)


def _log_outer(u: Array, counts: Counts, panels: int, n: int, width: float) -> Array:
    """log density of (logit ρ, logit η) under the shared model, up to a constant."""
    rho, eta = jax.nn.sigmoid(u[0]), jax.nn.sigmoid(u[1])
    a_r, b_r, a_e, b_e = pooled_rates(counts)
    _, log_z = _conditionals(counts, rho, eta, panels, n, width)
    log_prior = a_r * jax.nn.log_sigmoid(u[0]) + b_r * jax.nn.log_sigmoid(-u[0])
    log_prior = log_prior + a_e * jax.nn.log_sigmoid(u[1]) + b_e * jax.nn.log_sigmoid(-u[1])
    return log_prior + jnp.sum(log_z)


def shared_outer_rule(
    counts: Counts, nodes: int, panels: int = 4, n: int = 16, width: float = 14.0
) -> SharedRule:
    """The shared model's joint posterior as a ``nodes × nodes`` Gauss–Hermite rule in (logit ρ,
    logit η), centred and scaled by Newton's mode and Hessian of their marginal log density.

    ``counts``: ``(S,)`` systems. The Beta(a, b) prior-times-likelihood of ρ in logit u is
    a·log σ(u) + b·log σ(−u) (the Jacobian included), as for η.
    """
    a_r, b_r, a_e, b_e = pooled_rates(counts)
    start = jnp.array([jnp.log(a_r / b_r), jnp.log(a_e / b_e)])
    log_f = lambda u: _log_outer(u, counts, panels, n, width)  # noqa: E731
    grad, hess = jax.grad(log_f), jax.hessian(log_f)

    def newton(u, _):
        g, h = grad(u), hess(u)
        # A concave step; fall back to gradient ascent scaled by the prior's curvature.
        step = -jnp.linalg.solve(h, g)
        ok = jnp.all(jnp.isfinite(step)) & (jnp.linalg.eigvalsh(h)[-1] < 0)
        prior_curve = jnp.array([a_r * b_r / (a_r + b_r), a_e * b_e / (a_e + b_e)])
        step = jnp.clip(jnp.where(ok, step, g / prior_curve), -2.0, 2.0)
        # Backtracking: the longest of step·2^-j that does not lower the density. A full
        # step from far away can land where the density is not concave, and Newton's
        # steps from there can cycle (1,000 systems of 5 human ratings each did).
        tries = u[None, :] + _BACKTRACK[:, None] * step[None, :]
        better = jax.vmap(log_f)(tries) >= log_f(u)
        return jnp.where(jnp.any(better), tries[jnp.argmax(better)], u), None

    mode, _ = jax.lax.scan(newton, start, None, length=30)
    cov = jnp.linalg.inv(-hess(mode))
    chol = jnp.linalg.cholesky(0.5 * (cov + cov.T))
    z, log_w = normal_rule(nodes)
    zz = jnp.stack(jnp.meshgrid(z, z, indexing="ij"), axis=-1).reshape(-1, 2)
    log_wz = (log_w[:, None] + log_w[None, :]).reshape(-1)
    u = mode[None, :] + zz @ chol.T
    # ∫ f(u) du ≈ |L| Σ w_i f(u_i) / φ(z_i): the standard normal's log density is removed.
    log_phi = -0.5 * jnp.sum(zz * zz, axis=1) - jnp.log(2.0 * jnp.pi)
    log_f_nodes = jax.vmap(log_f)(u)
    log_weight = log_wz + log_f_nodes - log_phi
    log_weight = log_weight - jax.nn.logsumexp(log_weight)
    rho, eta = jax.nn.sigmoid(u[:, 0]), jax.nn.sigmoid(u[:, 1])
    densities, _ = jax.vmap(lambda r, e: _conditionals(counts, r, e, panels, n, width))(rho, eta)
    return SharedRule(rho, eta, log_weight, densities)
