"""Log posterior density of (α, ρ, η) in unconstrained (logit) coordinates.

The posterior of ``docs/model.md`` is three Beta posteriors times the
binomial likelihood of the metric-only ratings,

    m₊ | α, ρ, η ~ Binomial(N_M, p),   p = α·ρ + (1 − α)·(1 − η).

Positions are logits ``x = logit(v)``; the density includes the Jacobian of
the logistic map, which turns a Beta(k + 1, n − k + 1) posterior into the
kernel v^(k+1)·(1 − v)^(n−k+1) in ``x``.

Accuracy. Every term has the form ``k·z − n·softplus(z)`` for a logit ``z``,
and is evaluated *centred* at a reference logit ẑ near its maximum:
``k·δ − n·(softplus(ẑ + δ) − softplus(ẑ))`` with δ = z − ẑ and the softplus
difference computed without cancellation. With N_M = 10^7 the raw log-likelihood
is of order 10^7, so an uncentred float32 evaluation would lose every digit
that matters; centred, the error stays near 1e-3 in float32 and 1e-9 in
float64. log p and log(1 − p) come from log-sum-exp of log α, log ρ, …, with
1 − p = α·(1 − ρ) + (1 − α)·η, so p near 0 or 1 keeps its relative accuracy.
The density is finite for every finite position, including empty groups
(N_Φ = 0, P = 0, N_ρη − P = 0), true α ∈ {0, 1}, and ρ + η ≤ 1.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import xlogy

from binmetric_sweep.kernels.counts import Counts

Array = jax.Array

__all__ = [
    "softplus_increment",
    "TermCentre",
    "term_centre",
    "binomial_logit_term",
    "logdensity_centres",
    "logdensity",
    "grid_logdensity",
    "logistic_parts",
    "position_size",
]


def softplus_increment(delta: Array, centre_prob: Array) -> Array:
    """softplus(ẑ + δ) − softplus(ẑ), where sigmoid(ẑ) = ``centre_prob``.

    Equal to log1p(v̂·expm1(δ)) for δ ≤ 0 and, without overflow, to
    δ + log1p((1 − v̂)·expm1(−δ)) for δ > 0: both are max(δ, 0) +
    log1p(w·expm1(−|δ|)) with w = v̂ or 1 − v̂, so one expm1 and one log1p
    serve either sign (this term is most of a leapfrog step's cost).
    """
    positive = delta > 0
    weight = jnp.where(positive, 1.0 - centre_prob, centre_prob)
    # where, not maximum/abs: their derivatives at δ = 0 are ½ and 0, not the branch's.
    shift = jnp.where(positive, delta, 0.0)
    return shift + jnp.log1p(weight * jnp.expm1(jnp.where(positive, -delta, delta)))


class TermCentre(NamedTuple):
    """Where :func:`binomial_logit_term` is centred: a probability and its logit."""

    prob: Array
    logit: Array


def term_centre(k: Array, n: Array) -> TermCentre:
    """The centre of the term for k successes in n trials: (k + ½)/(n + 1), interior even
    for k = 0 or k = n, and its logit."""
    prob = (k + 0.5) / (n + 1.0)
    return TermCentre(prob, jnp.log(prob) - jnp.log1p(-prob))


def binomial_logit_term(z: Array, k: Array, n: Array, centre: TermCentre | None = None) -> Array:
    """k·z − n·softplus(z), up to a constant, centred for accuracy.

    Args:
        z: logit of the success probability (any real).
        k: successes (≥ 0), as float.
        n: trials (≥ k), as float. With n = 0 the term is 0.
        centre: ``term_centre(k, n)``, or None to compute it here. A sampler
            passes it in: it depends on the counts alone, and XLA did not
            hoist it out of the sampling loop.
    """
    centre = term_centre(k, n) if centre is None else centre
    delta = z - centre.logit
    # k·δ is 0·(−inf) = NaN when a known ρ, η make p exactly 0 and k = 0.
    linear = jnp.where(k > 0, k * delta, 0.0)
    return linear - n * softplus_increment(delta, centre.prob)


def _log_metric_rates(log_a, log_1ma, log_r, log_1mr, log_e, log_1me):
    """(log p, log(1 − p)) from the logs of α, 1 − α, ρ, 1 − ρ, η, 1 − η."""
    log_p = jnp.logaddexp(log_a + log_r, log_1ma + log_1me)
    log_q = jnp.logaddexp(log_a + log_1mr, log_1ma + log_e)
    return log_p, log_q


def _floored_log(v: Array) -> Array:
    """log v, floored at log(1e-300) so that a known ρ or η of exactly 0 or 1
    keeps log p finite (and its gradient defined); the floor is far below any
    probability that matters."""
    return jnp.log(jnp.maximum(v, 1e-300))


def position_size(rho_eta_known: bool) -> int:
    """Dimension of the sampled position: 1 (logit α) or 3 (logits of α, ρ, η)."""
    return 1 if rho_eta_known else 3


def _logdensity_terms(counts: Counts) -> tuple[tuple[Array, Array], ...]:
    """(k, n) of :func:`logdensity`'s binomial terms: α, ρ, η (Beta(1, 1) priors
    and the logistic Jacobian as one more success and failure each), the metric."""
    return (
        (counts.n_pos + 1.0, counts.n_phi + 2.0),
        (counts.n_tp + 1.0, counts.n_pos_paired + 2.0),
        (counts.n_tn + 1.0, counts.n_neg_paired + 2.0),
        (counts.m_pos, counts.n_m),
    )


def logdensity_centres(counts: Counts) -> tuple[TermCentre, ...]:
    """The centres of :func:`logdensity`'s four terms, for one lane (or any batch shape)."""
    return tuple(term_centre(k, n) for k, n in _logdensity_terms(counts))


def logdensity(
    position: Array, counts: Counts, centres: tuple[TermCentre, ...] | None = None
) -> Array:
    """Log posterior density at ``position``, up to an additive constant.

    Args:
        position: ``(3,)`` logits (α, ρ, η), or ``(1,)`` logit α when ρ and η
            are known (``counts.rho_eta_known``); the size selects the model.
            A tuple of 3 or 1 scalars serves as well (:mod:`kernels.stepwise`).
        counts: one lane's counts (scalars).
        centres: ``logdensity_centres(counts)``, or None to compute them here
            (the same numbers either way).

    Returns:
        A scalar, finite for every finite position.
    """
    (k_a, n_a), (k_r, n_r), (k_e, n_e), (k_m, n_m) = _logdensity_terms(counts)
    c_a, c_r, c_e, c_m = logdensity_centres(counts) if centres is None else centres
    x_alpha = position[0]
    log_a = jax.nn.log_sigmoid(x_alpha)
    log_1ma = jax.nn.log_sigmoid(-x_alpha)
    value = binomial_logit_term(x_alpha, k_a, n_a, c_a)
    if len(position) == 3:
        x_rho, x_eta = position[1], position[2]
        log_r, log_1mr = jax.nn.log_sigmoid(x_rho), jax.nn.log_sigmoid(-x_rho)
        log_e, log_1me = jax.nn.log_sigmoid(x_eta), jax.nn.log_sigmoid(-x_eta)
        value += binomial_logit_term(x_rho, k_r, n_r, c_r)
        value += binomial_logit_term(x_eta, k_e, n_e, c_e)
    else:
        log_r, log_1mr = _floored_log(counts.rho), _floored_log(1.0 - counts.rho)
        log_e, log_1me = _floored_log(counts.eta), _floored_log(1.0 - counts.eta)
    log_p, log_q = _log_metric_rates(log_a, log_1ma, log_r, log_1mr, log_e, log_1me)
    z = log_p - log_q
    return value + binomial_logit_term(z, k_m, n_m, c_m)


def logistic_parts(x: Array) -> tuple[Array, Array, Array]:
    """(v, 1 − v, log(1 + e)) for v = sigmoid(x) and e = exp(−|x|): one exp, one log1p.

    v and 1 − v are each to full relative accuracy for any real x (one is
    e/(1 + e), the other 1/(1 + e)); their logs are −log(1 + e) less
    max(−x, 0) and max(x, 0), which callers combine as they need. For the
    grid densities, where the logistic of the innermost coordinate is most of
    the work at every node.
    """
    e = jnp.exp(-jnp.abs(x))
    inverse = 1.0 / (1.0 + e)
    positive = x >= 0
    v, one_m_v = jnp.where(positive, 1.0, e) * inverse, jnp.where(positive, e, 1.0) * inverse
    return v, one_m_v, jnp.log1p(e)


def grid_logdensity(x_alpha: Array, x_rho: Array, x_eta: Array, counts: Counts) -> Array:
    """:func:`logdensity` of the full model up to a constant, at positions given by components.

    ``x_alpha``, ``x_rho`` and ``x_eta`` (logits) broadcast together to the
    shape of the result, and every term is evaluated at the shape of the
    components it depends on: on the nodes of a tensor rule under a
    lower-triangular scale (``(n0, 1, 1)``, ``(n0, n1, 1)``, ``(n0, n1, n2)``)
    the full grid sees only η's term and the metric's, with p and 1 − p as
    sums of positive parts in linear scale (four logs, one exponential and one
    log1p per node). The metric's term is not centred: float64 only (accurate
    to ~1e-16 times N_M).
    """
    (k_a, n_a), (k_r, n_r), (k_e, n_e), _ = _logdensity_terms(counts)
    alpha, one_m_alpha = jax.nn.sigmoid(x_alpha), jax.nn.sigmoid(-x_alpha)
    rho, one_m_rho = jax.nn.sigmoid(x_rho), jax.nn.sigmoid(-x_rho)
    value = binomial_logit_term(x_alpha, k_a, n_a)
    value = value + binomial_logit_term(x_rho, k_r, n_r)
    eta, one_m_eta, softplus = logistic_parts(x_eta)
    # η's term uncentred, k·log η + (n − k)·log(1 − η), from the same e:
    # log η = −max(−x, 0) − log(1 + e), log(1 − η) = −max(x, 0) − log(1 + e).
    log_eta_kernel = jnp.where(x_eta >= 0, k_e - n_e, -k_e) * jnp.abs(x_eta)
    log_eta_kernel = log_eta_kernel - n_e * softplus
    p = alpha * rho + one_m_alpha * one_m_eta
    q = alpha * one_m_rho + one_m_alpha * eta
    metric = xlogy(counts.m_pos, p) + xlogy(counts.n_m - counts.m_pos, q)
    return value + log_eta_kernel + metric
