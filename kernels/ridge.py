"""Ridge coordinates for the full model: sample the metric's rate p directly.

When the metric-only ratings are many (N_M up to 10^7) they pin
p = α·ρ + (1 − α)·(1 − η) far more tightly than the human and paired ratings
pin α, ρ and η. In the logits of (α, ρ, η) the posterior is then a thin,
curved sheet around the surface p = p̂, and NUTS needs hundreds of leapfrog
steps per transition (or never mixes). In the coordinates of
:mod:`kernels.quadrature`,

    ρ = t + (1 − α)·s,   η = 1 − t + α·s,   p = t,   |∂(ρ, η)/∂(t, s)| = 1,

the sheet becomes an axis: t carries the likelihood's sharp peak, (α, s) the
broad Beta posteriors. The position is ``x = (logit α, logit t, logit u)``,
with s = s_lo + L·u spanning the exact interval where ρ, η ∈ (0, 1):

    ρ = ρ_lo + (1 − α)·L·u,   1 − ρ = (1 − ρ_hi) + (1 − α)·L·(1 − u),
    η = η_lo + α·L·u,         1 − η = (1 − η_hi) + α·L·(1 − u),

ρ_lo = max(0, (t + α − 1)/α), ρ_hi = min(1, t/α), η_lo = max(0, 1 − t/(1 − α)),
η_hi = min(1, (1 − t)/(1 − α)), L = s_hi − s_lo. The density in x carries the
Jacobian α(1 − α)·t(1 − t)·L·u(1 − u). Every log above is assembled from logs
of positive parts, so ρ or η near 0 or 1 keep their relative accuracy.

The map has kinks (continuous, with a jump in the gradient) at t = α and
t = 1 − α, where the interval's end points move from one edge of the unit
square to another; NUTS tolerates them.

Where the human and paired ratings pin p as well as the metric does, or
better, the natural logits are the better coordinates (the sheet is then not
thin); :func:`prefers_ridge` picks per lane.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import xlogy

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.logdensity import (
    TermCentre,
    binomial_logit_term,
    logistic_parts,
    term_centre,
)

Array = jax.Array

#: ``term_centre(1, 2)`` as Python floats, (0.5, logit 0.5 = 0): the u term's
#: centre, the same numbers, with no arrays made from constants (a kernel that
#: Pallas compiles would make them float32).
_ONE_IN_TWO = TermCentre(0.5, 0.0)

__all__ = [
    "RidgeLogs",
    "ridge_logs",
    "ridge_centres",
    "ridge_logdensity",
    "ridge_grid_logdensity",
    "ridge_position",
    "prefers_ridge",
]


class RidgeLogs(NamedTuple):
    """Logs of the natural parameters at a ridge position (scalars).

    Attributes:
        log_alpha, log_1m_alpha: log α and log(1 − α).
        log_rho, log_1m_rho: log ρ and log(1 − ρ).
        log_eta, log_1m_eta: log η and log(1 − η).
        log_length: log L, the length of the s-interval (the one factor of
            the Jacobian that is not a logistic one).
    """

    log_alpha: Array
    log_1m_alpha: Array
    log_rho: Array
    log_1m_rho: Array
    log_eta: Array
    log_1m_eta: Array
    log_length: Array


def _log_part(value: Array, log_denominator: Array) -> Array:
    """log(value) − log_denominator where value > 0, else −inf (with finite gradients).

    The sign test is on the value itself: a separate test such as t > 1 − α
    can disagree with it by a rounding at the kinks and take log 0.
    """
    positive = value > 0.0
    safe = jnp.where(positive, value, 1.0)
    return jnp.where(positive, jnp.log(safe) - log_denominator, -jnp.inf)


class _Segment(NamedTuple):
    """Logs of the segment of (ρ, η) with p = t at given α: ρ = ρ_lo + spanρ·u, etc."""

    log_rho_lo: Array
    log_1m_rho_hi: Array
    log_eta_lo: Array
    log_1m_eta_hi: Array
    log_span_rho: Array  # log((1 − α)·L)
    log_span_eta: Array  # log(α·L)
    log_length: Array


def _segment(x_alpha: Array, x_t: Array) -> _Segment:
    """The segment at logit α and logit t (arrays that broadcast together)."""
    a, t = jax.nn.sigmoid(x_alpha), jax.nn.sigmoid(x_t)
    log_a, log_1ma = jax.nn.log_sigmoid(x_alpha), jax.nn.log_sigmoid(-x_alpha)
    log_t, log_1mt = jax.nn.log_sigmoid(x_t), jax.nn.log_sigmoid(-x_t)
    # L = s_hi − s_lo, a sum of two positive parts.
    log_hi = jnp.where(t <= a, log_t - log_a, log_1mt - log_1ma)
    log_lo = jnp.where(t <= 1.0 - a, log_t - log_1ma, log_1mt - log_a)
    log_length = jnp.logaddexp(log_hi, log_lo)
    # t + α − 1 = α − (1 − t) and α − t, computed from the sigmoids (absolute error ~1e-16).
    return _Segment(
        log_rho_lo=_log_part(a - jax.nn.sigmoid(-x_t), log_a),
        log_1m_rho_hi=_log_part(a - t, log_a),
        log_eta_lo=_log_part(jax.nn.sigmoid(-x_alpha) - t, log_1ma),
        log_1m_eta_hi=_log_part(t - a, log_1ma),
        log_span_rho=log_1ma + log_length,
        log_span_eta=log_a + log_length,
        log_length=log_length,
    )


def ridge_logs(position: Array) -> RidgeLogs:
    """Logs of α, ρ, η at a ridge position ``(3,)`` = (logit α, logit t, logit u)."""
    x_alpha, x_t, x_u = position[0], position[1], position[2]
    seg = _segment(x_alpha, x_t)
    log_u, log_1mu = jax.nn.log_sigmoid(x_u), jax.nn.log_sigmoid(-x_u)
    return RidgeLogs(
        log_alpha=jax.nn.log_sigmoid(x_alpha),
        log_1m_alpha=jax.nn.log_sigmoid(-x_alpha),
        log_rho=jnp.logaddexp(seg.log_rho_lo, seg.log_span_rho + log_u),
        log_1m_rho=jnp.logaddexp(seg.log_1m_rho_hi, seg.log_span_rho + log_1mu),
        log_eta=jnp.logaddexp(seg.log_eta_lo, seg.log_span_eta + log_u),
        log_1m_eta=jnp.logaddexp(seg.log_1m_eta_hi, seg.log_span_eta + log_1mu),
        log_length=seg.log_length,
    )


def _ridge_terms(counts: Counts) -> tuple[tuple[Array, Array], ...]:
    """(k, n) of :func:`ridge_logdensity`'s binomial terms in α, ρ, η and t (u's is constant)."""
    return (
        (counts.n_pos + 1.0, counts.n_phi + 2.0),
        (counts.n_tp, counts.n_pos_paired),
        (counts.n_tn, counts.n_neg_paired),
        (counts.m_pos + 1.0, counts.n_m + 2.0),
    )


def ridge_centres(counts: Counts) -> tuple[TermCentre, ...]:
    """The centres of :func:`ridge_logdensity`'s terms in α, ρ, η and t (see
    :func:`kernels.logdensity.term_centre`)."""
    return tuple(term_centre(k, n) for k, n in _ridge_terms(counts))


def ridge_logdensity(
    position: Array, counts: Counts, centres: tuple[TermCentre, ...] | None = None
) -> Array:
    """Log posterior density at a ridge position ``(3,)``, up to an additive constant.

    The same posterior as :func:`kernels.logdensity.logdensity` with a
    ``(3,)`` position, pushed to ridge coordinates: both differ by the log
    Jacobian of the change of coordinates plus a constant. Terms are centred as
    there; the metric's term is exactly centred in logit t. ``centres``:
    ``ridge_centres(counts)``, or None to compute them here.
    """
    (k_a, n_a), (k_r, n_r), (k_e, n_e), (k_t, n_t) = _ridge_terms(counts)
    c_a, c_r, c_e, c_t = ridge_centres(counts) if centres is None else centres
    logs = ridge_logs(position)
    x_alpha, x_t, x_u = position[0], position[1], position[2]
    value = binomial_logit_term(x_alpha, k_a, n_a, c_a)
    z_rho = logs.log_rho - logs.log_1m_rho
    z_eta = logs.log_eta - logs.log_1m_eta
    value += binomial_logit_term(z_rho, k_r, n_r, c_r)
    value += binomial_logit_term(z_eta, k_e, n_e, c_e)
    # The logistic Jacobians t(1 − t) and u(1 − u) ride in the centred terms
    # as α's does; L is the rest of the Jacobian.
    value += binomial_logit_term(x_t, k_t, n_t, c_t)
    value += binomial_logit_term(x_u, 1.0, 2.0, _ONE_IN_TWO)
    return value + logs.log_length


def ridge_grid_logdensity(x_alpha: Array, x_t: Array, x_u: Array, counts: Counts) -> Array:
    """:func:`ridge_logdensity` up to a constant, at positions given by broadcasting components.

    ``x_alpha``, ``x_t`` and ``x_u`` (logits of α, t, u) broadcast together to
    the shape of the result, and every term is evaluated at the shape of the
    components it depends on. On the nodes of a tensor rule under a
    lower-triangular scale (logit α varying along one axis, logit t along two,
    logit u along all three: ``(n0, 1, 1)``, ``(n0, n1, 1)``, ``(n0, n1, n2)``)
    the full grid then sees only what depends on u: ρ, η and their complements
    as sums of positive parts in linear scale, four logs, one exponential and
    one log1p per node, where :func:`ridge_logdensity` takes about forty
    transcendental functions. Terms are not centred: float64 only (each is
    then accurate to ~1e-16 times its count, ~1e-10 at 10^6 paired ratings).
    """
    (k_a, n_a), _, _, (k_t, n_t) = _ridge_terms(counts)
    seg = _segment(x_alpha, x_t)
    value = binomial_logit_term(x_alpha, k_a, n_a)
    value = value + binomial_logit_term(x_t, k_t, n_t)
    value = value + seg.log_length
    u, one_m_u, softplus = logistic_parts(x_u)
    span_rho, span_eta = jnp.exp(seg.log_span_rho), jnp.exp(seg.log_span_eta)
    rho = jnp.exp(seg.log_rho_lo) + span_rho * u
    one_m_rho = jnp.exp(seg.log_1m_rho_hi) + span_rho * one_m_u
    eta = jnp.exp(seg.log_eta_lo) + span_eta * u
    one_m_eta = jnp.exp(seg.log_1m_eta_hi) + span_eta * one_m_u
    n_fp = counts.n_pos_paired - counts.n_tp
    n_fn = counts.n_neg_paired - counts.n_tn
    # log u(1 − u), the logistic Jacobian of u, is −|x_u| − 2·log(1 + e).
    return (
        value
        + xlogy(counts.n_tp, rho)
        + xlogy(n_fp, one_m_rho)
        + xlogy(counts.n_tn, eta)
        + xlogy(n_fn, one_m_eta)
        - jnp.abs(x_u)
        - 2.0 * softplus
    )


def ridge_position(alpha: Array, rho: Array, eta: Array) -> Array:
    """The ridge position ``(3,)`` of a point (α, ρ, η) inside the unit cube."""
    t = alpha * rho + (1.0 - alpha) * (1.0 - eta)
    rho_lo = jnp.maximum(0.0, (t + alpha - 1.0) / alpha)
    rho_hi = jnp.minimum(1.0, t / alpha)
    eta_lo = jnp.maximum(0.0, 1.0 - t / (1.0 - alpha))
    eta_hi = jnp.minimum(1.0, (1.0 - t) / (1.0 - alpha))
    # u from whichever of ρ, η spans the wider range (better conditioned).
    u = jnp.where(
        rho_hi - rho_lo >= eta_hi - eta_lo,
        (rho - rho_lo) / (rho_hi - rho_lo),
        (eta - eta_lo) / (eta_hi - eta_lo),
    )
    u = jnp.clip(u, 1e-12, 1.0 - 1e-12)
    t = jnp.clip(t, 1e-300, 1.0 - 1e-16)

    def logit(v):
        return jnp.log(v) - jnp.log1p(-v)

    return jnp.stack([logit(alpha), logit(t), logit(u)])


def prefers_ridge(counts: Counts) -> Array:
    """Whether the metric pins p more tightly than the paired ratings pin ρ and η (a bool).

    Ridge coordinates straighten the metric's constraint on p but bend the
    paired ratings' constraints on ρ and η; the tighter constraint should be
    the straight one. Both are compared on the scale of p: the binomial
    variance p̂(1 − p̂)/N_M of the metric's estimate against
    α²·Var ρ + (1 − α)²·Var η under the Beta posteriors given the paired
    ratings (delta method).
    """

    def beta(k, n):
        mean = (k + 1.0) / (n + 2.0)
        return mean, mean * (1.0 - mean) / (n + 3.0)

    a, _ = beta(counts.n_pos, counts.n_phi)
    _, var_r = beta(counts.n_tp, counts.n_pos_paired)
    _, var_e = beta(counts.n_tn, counts.n_neg_paired)
    var_p = a**2 * var_r + (1.0 - a) ** 2 * var_e
    p_hat = (counts.m_pos + 0.5) / (counts.n_m + 1.0)
    return var_p * counts.n_m > p_hat * (1.0 - p_hat)
