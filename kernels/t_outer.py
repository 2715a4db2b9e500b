"""The full model with t outermost: α panels that break exactly at the kinks.

The nested rules of :mod:`kernels.quadrature` integrate α outermost, so the
kinks of π(α) at α = t and α = 1 − t (see that module's docstring) are
smeared over the likelihood's width in t: they can only split α at
α ≈ p̂ and 1 − p̂ and spend 3 × 40 nodes on the rest. Where few paired
ratings leave the (ρ, η) density non-zero at a corner (every paired rating
agrees with the human one, or none does) the t-integrand has kinks too and
no Gauss–Hermite t rule integrates it.

Swapping the order removes both. With t outermost, each t node fixes the
break points, and the α rule at that node splits its panels at exactly
α = t and 1 − t, so every panel holds an analytic function. The t-integrand,
∫ π(α, t) dα, is the likelihood t^m₊ (1 − t)^(N_M − m₊) times the density
of p = αρ + (1 − α)(1 − η) under the three Beta posteriors: a kink along
α = t is integrated out, and what is left is smooth, so a Gauss–Hermite rule
in logit t needs few nodes. s is innermost and exact: the rule is for lanes
whose s rule is (:func:`kernels.quadrature.paired_rule_is_exact`, N_ρη ≤ 15).

The α panels are in α itself, under the nested rule's sinh map (placed by
the human ratings' Beta and what t says of α), not in logit α: with a few
human ratings the Beta factor is a polynomial in α, whose logit-scale
tails fall only at the rate n₊ + 1 (see :class:`TOuterRule`).

The α-marginal's moments are sums over the nodes. For the interval, within
each α panel at each t node the density is the Legendre series through its
nodes, and the CDF, a weighted sum over the t nodes of the panel CDFs, is
inverted by Newton's method.

Like the Gauss–Hermite rules it checks itself: a finer and a coarser rule
(:class:`TOuterRule`), trusted where the two agree. Where the quantile sits
inside the likelihood's width in t the CDF's t-integrand has a kink after
all (a panel edge at α = t crosses the quantile), which both rules miss
alike; the tolerances are therefore tighter than the Gauss–Hermite rules'
(those of :class:`kernels.quadrature.HermiteTRule`). Use float64.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlog1py, xlogy

from binmetric_sweep.kernels.betas import (
    alpha_given_rate,
    beta_from_moments,
    beta_moments,
    log_beta_kernel,
    logit_beta_kernel,
    paired_moments,
)
from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.panels import (
    gauss_legendre,
    legendre_antiderivative,
    legendre_polynomials,
    lse,
    sinh_panels,
    to_logit,
)
from binmetric_sweep.kernels.quadrature import (
    PosteriorSummary,
    QuadratureRule,
    log_segment_integral,
    logit_hermite_rule,
    summaries_agree,
)
from binmetric_sweep.kernels.roots import bracketed_newton

Array = jax.Array

__all__ = ["TOuterRule", "t_outer_summary"]


class TOuterRule(NamedTuple):
    """Static settings of :func:`t_outer_summary`.

    Attributes:
        t_nodes, alpha_nodes: Gauss–Hermite nodes in logit t, and
            Gauss–Legendre nodes per α panel (three panels: split at t and
            1 − t), of the rule whose numbers are kept.
        check_t_nodes, check_alpha_nodes: the same for the coarser rule.
        width: half-width of each t node's α window, in approximate SDs
            (the sinh map of :mod:`kernels.quadrature`).
        quantile_steps: safeguarded Newton steps for each interval end.
        tolerance, interval_tolerance: largest accepted |difference| of the
            two rules' mean and SD, and of their interval ends.

    The node counts, on the 608 lanes of the benchmark's 4096 whose s rule
    is exact (N_Φ = N_ρη = 10), against the nested rule with more nodes: 18
    against 16 α nodes accept 599 (79 of the 82 with a kink), within 9.1e-9
    in the moments and 9.1e-7 at an interval end; 16 against 14 accept 509,
    16 against 12 only 327. In logit α (the nested rule's coordinate) 16
    nodes a panel leave the moments up to 4.5e-6 off, and 24 against 20
    accept fewer (572) at 1.4 times the cost, with interval ends up to
    2.9e-6 off. 16 t nodes change nothing. See docs/performance.md.
    """

    t_nodes: int = 8
    alpha_nodes: int = 18
    check_t_nodes: int = 6
    check_alpha_nodes: int = 16
    width: float = 30.0
    quantile_steps: int = 12
    tolerance: float = 1e-7
    interval_tolerance: float = 1e-6


def _t_rule(counts: Counts, n: int) -> tuple[Array, Array]:
    """``(n,)`` t nodes and the logs of their weights times the likelihood.

    Placed at the peak of the likelihood's Beta(m₊ + 1, N_M − m₊ + 1) kernel
    times a Beta matched to the mean and variance of p = α(ρ + η − 1) + 1 − η
    under the three independent Beta posteriors, in logit t.
    """
    mean_r, mean_e, var_r, var_e = paired_moments(counts)
    mean_a, sd_a = beta_moments(counts.n_pos + 1.0, counts.n_phi - counts.n_pos + 1.0)
    # p = αY + Z with Y = ρ + η − 1 and Z = 1 − η (Y and Z share η).
    mean_y, mean_z = mean_r + mean_e - 1.0, 1.0 - mean_e
    square_y = var_r + var_e + mean_y**2
    square_z = var_e + mean_z**2
    cross = mean_r * mean_z - square_z  # E[YZ] = E ρ·E Z − E[Z²]
    mean_p = mean_a * mean_y + mean_z
    var_p = (sd_a**2 + mean_a**2) * square_y + 2.0 * mean_a * cross + square_z - mean_p**2
    a_p, b_p = beta_from_moments(mean_p, jnp.sqrt(jnp.maximum(var_p, 0.0)))
    m, n_m = counts.m_pos, counts.n_m
    _, mode, scale = logit_beta_kernel(m + a_p, n_m - m + b_p)
    _, _, centre, scale, _ = to_logit(0.0, 1.0, mode, scale, ())
    t, log_w = logit_hermite_rule(centre, scale, n)
    return t, log_w + xlogy(m, t) + xlog1py(n_m - m, -t)


def _grid(counts: Counts, t_nodes: int, alpha_nodes: int, width: float):
    """The α panels at each t node, ``(T, 3, n)``, and the log of each node's
    weighted posterior density (unnormalised), same shape.
    """
    t, log_wt = _t_rule(counts, t_nodes)
    paired = paired_moments(counts)
    a_a, b_a = counts.n_pos + 1.0, counts.n_phi - counts.n_pos + 1.0
    exact_s = QuadratureRule()  # unused by the exact s rule, which has its own nodes

    def at_t(t):
        centre, scale = alpha_given_rate(counts, t, 0.0, *paired)
        panels = sinh_panels(0.0, 1.0, centre, scale, (t, 1.0 - t), alpha_nodes, width)
        alpha = panels.x.reshape(-1)
        log_s = jax.vmap(lambda a: log_segment_integral(a, t, counts, exact_s, True))(alpha)
        log_prior = log_beta_kernel(panels.x, 1.0 - panels.x, a_a, b_a)
        return panels, log_prior + log_s.reshape(panels.x.shape) + panels.log_w

    panels, log_values = jax.vmap(at_t)(t)
    return panels, log_values + log_wt[:, None, None]


def _summary(
    counts: Counts, t_nodes: int, alpha_nodes: int, level: float, rule: TOuterRule
) -> tuple[PosteriorSummary, Array]:
    """The summary with ``t_nodes`` × 3 panels of ``alpha_nodes``, and whether
    both interval ends converged (:func:`_quantile`)."""
    panels, log_values = _grid(counts, t_nodes, alpha_nodes, rule.width)
    log_total = lse(log_values)
    weights = jnp.exp(log_values - log_total)
    mean = jnp.sum(weights * panels.x)
    sd = jnp.sqrt(jnp.sum(weights * (panels.x - mean) ** 2))
    tail = 0.5 * (1.0 - level)
    # Both ends in one search, vmapped: one loop, half the trips an accelerator launches.
    ends, ok = jax.vmap(lambda q: _quantile(panels, weights, q, mean, sd, rule.quantile_steps))(
        jnp.array([tail, 1.0 - tail])
    )
    return PosteriorSummary(mean, sd, ends[0], ends[1]), ok[0] & ok[1]


#: Largest |F(α) − q| at an interval end that the rule trusts: at a density
#: above 1e-3 that is an end within 1e-7.
_QUANTILE_RESIDUAL = 1e-10


def _quantile(panels, weights: Array, q: float, mean, sd, steps: int):
    """The q-quantile of α from the ``(T, P, n)`` panels of every t node.

    ``weights``: the nodes' normalised posterior weights. The CDF at α is the
    mass of the panels below it plus, in the panel that holds it at each t
    node, the integral of the Legendre series of the density through that
    panel's nodes. In α (not logit α) the density is itself close to a
    polynomial in each panel (a Beta kernel of a few human ratings times the
    smooth s-integral); the series of the log density, which the nested rule
    inverts, puts interval ends up to 6e-5 off here.
    Newton's method, safeguarded by bisection in [0, 1], from the normal
    approximation's quantile; with it, whether the CDF there is within
    :data:`_QUANTILE_RESIDUAL` of q. Where Newton fails (seen: a start clipped
    to 1, where the density is zero) the steps bisect, and two rules with
    different nodes bisect alike: 2.4e-4 off, and agreeing.
    """
    n = weights.shape[-1]
    _, w, table = gauss_legendre(n)
    density = weights / w  # π(α)·dα/dy at the nodes
    coeffs = (2.0 * np.arange(n) + 1.0) / 2.0 * jnp.einsum("kn,tpn->tpk", table[:n] * w, density)
    mass = jnp.sum(weights, axis=-1)
    below = jnp.cumsum(mass, axis=1) - mass  # mass of the panels before each, per t node
    span = panels.right - panels.left
    right_end = panels.centre + panels.scale * jnp.sinh(panels.right)
    rows = jnp.arange(mass.shape[0])

    def within(c, y):
        """Mass of one panel below y ∈ [−1, 1], and its density per unit y there."""
        value = sum(a * p for a, p in zip(c, legendre_polynomials(y, n - 1), strict=True))
        return legendre_antiderivative(c, y), value

    def cdf(alpha):
        """F(α) and its derivative."""
        # The panel holding α at each t node (the last one past every panel).
        k = jnp.minimum(jnp.sum(right_end <= alpha, axis=1), mass.shape[1] - 1)
        c, h = panels.centre[rows, k], panels.scale[rows, k]
        width = jnp.where(span[rows, k] > 0, span[rows, k], 1.0)
        y = (
            2.0 * jnp.arcsinh((alpha - c) / h) - panels.left[rows, k] - panels.right[rows, k]
        ) / width
        inside = (y > -1.0) & (y < 1.0) & (span[rows, k] > 0)
        part, value = jax.vmap(within)(coeffs[rows, k], jnp.clip(y, -1.0, 1.0))
        part = jnp.where(y >= 1.0, mass[rows, k], jnp.where(inside, part, 0.0))
        dy = 2.0 / (width * jnp.sqrt((alpha - c) ** 2 + h**2))
        return jnp.sum(below[rows, k] + part), jnp.sum(jnp.where(inside, value * dy, 0.0))

    def excess(alpha):
        """F(α) − q and its derivative."""
        f, slope = cdf(alpha)
        return f - q, slope

    start = jnp.clip(mean + sd * jax.scipy.special.ndtri(q), 1e-12, 1.0 - 1e-12)
    alpha = bracketed_newton(excess, jnp.array(0.0), jnp.array(1.0), start, steps)
    return alpha, jnp.abs(cdf(alpha)[0] - q) <= _QUANTILE_RESIDUAL


def t_outer_summary(
    counts: Counts, level: float = 0.95, rule: TOuterRule = TOuterRule()
) -> tuple[PosteriorSummary, Array]:
    """Posterior summary of α with t outermost and s exact, and a trust flag.

    Args:
        counts: one full-model lane's counts (scalars) whose s rule is exact
            (:func:`kernels.quadrature.paired_rule_is_exact`); on others the
            numbers are wrong and may be trusted.
        level: credible level of the central interval, in (0, 1).
        rule: the two rules and the tolerances.

    Returns:
        The finer rule's summary, and whether it agrees with the coarser one
        within the rule's tolerances with the interval inside (0, 1) (False
        also where anything is not finite).
    """
    fine, converged = _summary(counts, rule.t_nodes, rule.alpha_nodes, level, rule)
    coarse, _ = _summary(counts, rule.check_t_nodes, rule.check_alpha_nodes, level, rule)
    agree = summaries_agree(fine, coarse, rule.tolerance, rule.interval_tolerance)
    return fine, agree & converged & (fine.ci_low > 0.0) & (fine.ci_high < 1.0)
