"""Exact posterior of α by deterministic quadrature.

The α-marginal is π(α) ∝ Beta(α; n₊ + 1, N_Φ − n₊ + 1) · Λ(α), with

    Λ(α) = E_{ρ,η}[ p^m₊ (1 − p)^(N_M − m₊) ],   p = αρ + (1 − α)(1 − η),

the binomial likelihood averaged over the Beta posteriors of ρ and η.

Coordinates. For fixed α the likelihood depends on (ρ, η) only through p, so
Λ is integrated in coordinates (t, s) with

    ρ = t + (1 − α)·s,   η = 1 − t + α·s,   p = t,   |∂(ρ, η)/∂(t, s)| = 1.

The likelihood is then a function of t alone, and the inner integral over s
(for fixed α, t) is over a product of two Beta densities on an exact interval,
smooth inside. This makes a sharp likelihood (N_M up to 10^7) an axis-aligned
peak instead of a thin oblique ridge through the unit square.

Kinks. Where the (ρ, η) densities are non-zero at the corners (0, 0) or
(1, 1), the s-interval's end points switch at t = 1 − α and t = α, which puts
kinks into the t-integrand and, through a sharp likelihood, into π(α) at
α ≈ p̂ and α ≈ 1 − p̂. Each rule is therefore composite: Gauss–Legendre panels
between those break points, so that every panel integrates an analytic
function.

Placement. Where the log-integrand (or a good stand-in for it) is cheap, a
rule is centred at its mode (Newton for the inner s-integral, an exact Beta
product for t, the exact marginal for the "beta" and "known" kinds), its window
ends where the log has fallen by ``drop`` on either side (probed on a ladder;
for s, whose integrand is log-concave, bounded by the tangent at one probe),
and it is split at the mode so that each Gauss–Legendre panel holds a smooth,
one-sided peak; the t and one-dimensional α rules are split once more on each
side where the log has fallen by 4, so that long exponential tails (a broad
posterior, or a likelihood flat towards t = 1 when every metric rating is
positive) get panels of their own. For α in the full model only a rough
placement is available, so its panels use the map x = c + h·sinh(u), which
degrades gradually, not at once, when the placement is off. On 1005 count
tuples drawn across the issue's ranges the posterior SD is within 1.6e-6 of a
rule with at least twice the nodes, and within 1.7e-6 of the exact α-marginal
(a finite Beta mixture) on the 457 of them with N_M ≤ 2000
(scripts/quadrature_accuracy.py).

Interval. Within each α panel the log of the integrand is expanded in
Legendre polynomials from its values at the Gauss nodes (a peak is nearly a
low-degree polynomial in the log, not in itself); the CDF is the integral of
the series' exponential, inverted by bisection for the central credible
interval.

A cheaper variant (:func:`hermite_t_summary`) replaces the t panels by a
few Gauss–Hermite nodes in logit t where the t-integrand is smooth, and
checks itself lane by lane.

Everything here works on one lane; callers ``jax.vmap`` over lanes. Use
float64 (``jax_enable_x64``): this is the yardstick.
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
    log_beta_slope,
    logit_beta_kernel,
    paired_betas,
    paired_moments,
)
from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.panels import (
    Panels,
    gauss_legendre,
    gauss_panels,
    lse,
    normal_rule,
    panel_quantile,
    sinh_panels,
    to_logit,
)
from binmetric_sweep.kernels.roots import bracketed_newton, in_open_bracket_or_still

Array = jax.Array

__all__ = [
    "QuadratureRule",
    "PosteriorSummary",
    "MODEL_KINDS",
    "model_kind",
    "posterior_inputs",
    "posterior_summary",
    "alpha_log_marginal",
    "EXACT_PAIRED_NODES",
    "paired_rule_is_exact",
    "log_segment_integral",
    "HermiteTRule",
    "hermite_t_allows",
    "hermite_t_summary",
    "logit_hermite_rule",
    "summaries_agree",
]

#: Lane kinds, each integrated by its own rule: the α-marginal is a Beta
#: (N_M = 0), a 1-D integral (ρ, η known), or a 3-D one.
MODEL_KINDS = ("beta", "known", "full")


class QuadratureRule(NamedTuple):
    """Node counts and window of the nested rules (static: hashable numbers).

    Attributes:
        alpha_nodes: Gauss–Legendre nodes per α panel (up to 3 panels in the
            full model, 4 in the others).
        t_nodes: nodes per panel of the metric-rate coordinate t (up to 6 panels).
        s_nodes: nodes per panel of the innermost coordinate s (2 panels).
        width: half-width of the α window, in approximate SDs.
        drop: the t and s windows end where the log-integrand (or its stand-in)
            has fallen this far below its peak (30: mass left outside < 1e-12).
        t_hermite: with n > 0 the t rule is instead n Gauss–Hermite nodes in
            logit t, with no window, no panels and no split at kinks: right
            only where the t-integrand is smooth (see :func:`hermite_t_summary`).
    """

    alpha_nodes: int = 40
    t_nodes: int = 12
    s_nodes: int = 12
    width: float = 30.0
    drop: float = 30.0
    t_hermite: int = 0


class HermiteTRule(NamedTuple):
    """Static settings of :func:`hermite_t_summary`.

    Attributes:
        nodes: Gauss–Hermite nodes of the t rule whose numbers are kept.
        check_nodes: the same for the coarser t rule it is checked against.
        tolerance: largest accepted |difference| of the two posterior means and SDs.
        interval_tolerance: the same for the interval ends.
        check_alpha_nodes: nodes per α panel of the coarser rule, so that the
            check covers the α rule too (the finer one has the rule's
            ``alpha_nodes``). With the same α rule in both, lanes of
            ``tests.kernels.helpers.full_model_lanes(600, 11)`` were accepted
            with interval ends up to 5.3e-6 off the nested rule with twice the
            nodes, which the t rules' check cannot see; with 32 against 40, up to
            3.9e-7 (419 lanes accepted of 466 allowed, against 433). Fewer
            nodes for the finer rule fail it: 32 against 24 accepted 158.
    """

    nodes: int = 8
    check_nodes: int = 6
    tolerance: float = 1e-7
    interval_tolerance: float = 1e-6
    check_alpha_nodes: int = 32


class PosteriorSummary(NamedTuple):
    """Posterior of α for one fit (scalars, or ``(B,)`` when vmapped).

    Attributes:
        mean: posterior mean of α.
        sd: posterior standard deviation of α.
        ci_low: lower end of the central credible interval.
        ci_high: upper end of the central credible interval.
    """

    mean: Array
    sd: Array
    ci_low: Array
    ci_high: Array


def model_kind(n_m, rho_eta_known) -> np.ndarray:
    """Index into :data:`MODEL_KINDS` for each lane (host-side, NumPy)."""
    n_m = np.asarray(n_m)
    return np.where(n_m == 0, 0, np.where(np.asarray(rho_eta_known, bool), 1, 2))


def posterior_inputs(counts: Counts) -> np.ndarray:
    """``(B, 11)`` (host-side, NumPy): what each lane's exact posterior of α depends on.

    Columns: the model kind, then n₊, N_Φ, n_ρ, P, n_η, N_ρη − P, m₊, N_M, ρ and
    η, each zero where the lane's rule does not read it: a Beta lane (N_M = 0)
    reads n₊ and N_Φ alone, a full-model lane every count but not ρ and η (the
    known rates of a "known" lane). Lanes with equal rows have the same
    posterior from every rule, bit for bit (the tests perturb the rest).
    """
    kind = model_kind(counts.n_m, counts.rho_eta_known)
    fields = ("n_pos", "n_phi", "n_tp", "n_pos_paired", "n_tn", "n_neg_paired", "m_pos", "n_m")
    columns = [np.asarray(getattr(counts, name), np.float64) for name in fields]
    beta = kind == 0
    columns[2:] = [np.where(beta, 0.0, c) for c in columns[2:]]
    known = kind == 1
    rates = [
        np.where(known, np.asarray(getattr(counts, name), np.float64), 0.0)
        for name in ("rho", "eta")
    ]
    return np.column_stack([kind.astype(np.float64), *columns, *rates])


#: Multiples of the scale at which a window's edge is probed: finely up to 16
#: (a Gaussian falls by 30 at 7.7 scales), then by doubling. Every rung is one
#: more evaluation of the log-integrand (the s rule, at every t node, had a
#: quarter of its time in it until :func:`_tangent_window`): more rungs cost
#: time and gained no accuracy (scripts/quadrature_accuracy.py; docs/performance.md).
_LADDER = np.array([2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0])
#: Where the t rule and the α rules of the one-dimensional kinds split body
#: from tails: a fall of 4 in the log (density e^−4 of its peak). Without it a
#: broad posterior (N_Φ = 0, 50 metric ratings, ρ, η known) came out 2.3e-5 off
#: in SD, and one with every rating positive (ρ ~ Beta(910, 1)) 8e-5.
_SHOULDER = 4.0
#: Nodes of the s rule that is exact for few paired ratings (``exact_paired``).
EXACT_PAIRED_NODES = 8


def _window_edges(log_f, centre, scale, lo, hi, drops):
    """For each fall in ``drops``, the window edges ``(2,)`` (left, right) around ``centre``.

    On either side the edge is the first probe centre ± k·scale (k on the
    ladder) where log_f has fallen by that much. Probes are clipped at ``lo``
    and ``hi``; reaching one ends the window there. All probes go through
    log_f in one call: probing each side on its own, XLA on CPU ran the
    comparison fused with the log-integrand at half the speed of the nodes'
    evaluation, and the probes took 55 % of the nested rule's time.
    """
    sign = np.array([[-1.0], [1.0]])
    limit = jnp.stack([lo, hi])[:, None]
    points = centre + sign * _LADDER * scale
    points = jnp.where(sign * (points - limit) >= 0, limit, points)
    fall = log_f(centre) - log_f(points)
    edges = []
    for drop in drops:
        fallen = (fall >= drop) | (points == limit)
        first = jnp.argmax(fallen, axis=1)[:, None]
        found = jnp.take_along_axis(fallen, first, axis=1)[:, 0]
        edges.append(
            jnp.where(found, jnp.take_along_axis(points, first, axis=1)[:, 0], points[:, -1])
        )
    return edges


#: Where, in scales from the mode, :func:`_tangent_window` probes a log-concave
#: integrand: the tangent to a Gaussian's fall at 6 scales reaches 30 at 8.
_TANGENT_PROBE = 6.0


def _tangent_window(log_f, slope_fn, centre, scale, lo, hi, drop):
    """Edges ``(2,)`` (left, right) around the mode ``centre`` of log-concave ``log_f`` on [lo, hi].

    Beyond each edge ``log_f`` has fallen by at least ``drop``. Its fall from
    the mode is convex, so it lies above its tangent at a probe
    :data:`_TANGENT_PROBE` scales out, and reaches ``drop`` no further out
    than the tangent does; a probe where it has already fallen that far is
    itself the edge. One probe a side, with its slope (``slope_fn(x) -> (g,
    h)``, as :func:`_log_concave_peak`), where :func:`_window_edges` probes a
    ladder of nine.
    """
    sign = np.array([-1.0, 1.0])
    reach = sign * (jnp.stack([lo, hi]) - centre)
    step = jnp.minimum(_TANGENT_PROBE * scale, reach)
    points = centre + sign * step
    fall = log_f(centre) - log_f(points)
    rate = -sign * slope_fn(points)[0]  # of the fall, outwards
    beyond = jnp.where(rate > 0.0, (drop - fall) / jnp.where(rate > 0.0, rate, 1.0), jnp.inf)
    distance = jnp.minimum(jnp.where(fall >= drop, step, step + beyond), reach)
    return centre + sign * distance


def _probed_panels(
    log_f, lo, hi, centre, scale, breaks, n, drop, logit=False, shoulder=None
) -> Panels:
    """Gauss–Legendre panels around the mode of a peaked log-integrand ``log_f`` on [lo, hi].

    The window runs, on either side of ``centre`` (the mode), to where
    ``log_f`` has fallen by ``drop``, probed on a ladder of multiples of
    ``scale``, and is split at the mode and at ``breaks`` (kinks): each panel
    then holds a one-sided, smooth piece of the peak, which Gauss–Legendre
    integrates to ~1e-8 with a dozen nodes whether it is Gaussian, exponential
    or truncated. With ``shoulder`` each side is split once more where the log
    has fallen by that much, so that a peak with long exponential tails (a
    broad posterior on the logit scale) gets panels for its body and its tails.
    With ``logit`` all arguments are in u = logit(x) (``log_f`` including the
    Jacobian); nodes come back in x, weights include dx/du.
    """
    centre = jnp.clip(centre, lo, hi)
    drops = (drop,) if shoulder is None else (drop, shoulder)
    (a, b), *inner = _window_edges(log_f, centre, scale, lo, hi, drops)
    splits = [centre, *breaks, *[edge for pair in inner for edge in pair]]
    edges = jnp.stack([a, *[jnp.clip(x, a, b) for x in splits], b])
    if len(splits) > 1:
        # a ≤ centre ≤ b already; XLA's sort of a few elements per lane is slow
        # (docs/performance.md), so a single split is left unsorted.
        edges = jnp.sort(edges)
    return gauss_panels(edges[:-1], edges[1:], n, logit)


def _log_concave_peak(slope_fn, lo, hi, start, iterations: int = 32):
    """Mode and scale of a log-concave function on [lo, hi] from its log-derivatives.

    ``slope_fn(x) -> (g, h)`` gives the first and second derivatives of the log.
    Newton steps that leave the bracket fall back to bisection, so the search
    always converges; a mode at an end point is that end point. The scale is
    1/sqrt(−h + g²): the curvature width at an interior mode, and the
    exponential decay length 1/|g| at a boundary mode.
    """
    span = hi - lo
    eps = 1e-9 * span
    g_lo, _ = slope_fn(lo + eps)
    g_hi, _ = slope_fn(hi - eps)

    # Not at an end: next to a factor's zero, Newton only doubles the distance
    # to it per step (seen: 30 of the 32 steps spent leaving s_hi − 1e-9).
    start = jnp.clip(start, lo + span / 64, hi - span / 64)
    x = bracketed_newton(
        slope_fn, lo, hi, start, iterations, increasing=False, accept=in_open_bracket_or_still
    )
    x = jnp.where(g_lo <= 0, lo, jnp.where(g_hi >= 0, hi, x))
    g, h = slope_fn(jnp.clip(x, lo + eps, hi - eps))
    scale = 1.0 / jnp.sqrt(jnp.maximum(-h, 0.0) + g * g)
    return x, jnp.minimum(scale, span)


def paired_rule_is_exact(counts: Counts):
    """Whether ``exact_paired`` integrates a lane's s-integral exactly (bool, per lane).

    The s-integrand is a product of the Beta kernels of ρ and η, both linear
    in s: a polynomial in s of degree N_ρη = P + (N_ρη − P), which a
    Gauss–Legendre rule of n nodes integrates exactly when N_ρη ≤ 2n − 1.
    """
    return counts.n_pos_paired + counts.n_neg_paired <= 2 * EXACT_PAIRED_NODES - 1


def _segment_rates(alpha: Array, t: Array, s: Array) -> tuple[Array, Array, Array, Array]:
    """ρ, 1 − ρ, η and 1 − η at s on the segment p = t (ρ = t + (1 − α)s,
    η = 1 − t + αs), each clipped to [0, 1] against rounding at the limits."""
    beta = 1.0 - alpha
    clip = lambda v: jnp.clip(v, 0.0, 1.0)  # noqa: E731
    return (
        clip(t + beta * s),
        clip(1.0 - t - beta * s),
        clip(1.0 - t + alpha * s),
        clip(t - alpha * s),
    )


def log_segment_integral(
    alpha: Array, t: Array, counts: Counts, rule: QuadratureRule, exact_paired: bool = False
) -> Array:
    """log ∫ ρ^n_ρ (1 − ρ)^(P − n_ρ) η^n_η (1 − η)^(N_ρη − P − n_η) ds along p = t, at given α.

    The inner integral of Λ (see the module docstring): ρ = t + (1 − α)·s and
    η = 1 − t + α·s over the s-interval where both lie in [0, 1]; scalars α,
    t in (0, 1). The s rule is two Gauss–Legendre panels of ``rule.s_nodes``
    split at the mode (Newton within a bracket) over the window where the
    log-integrand has fallen by ``rule.drop`` (:func:`_tangent_window`). With
    ``exact_paired`` (static; only where :func:`paired_rule_is_exact`) it is
    one panel of :data:`EXACT_PAIRED_NODES` over the whole s-interval, exact,
    with no search for the peak or the window.
    """
    a_r, b_r, a_e, b_e = paired_betas(counts)
    beta = 1.0 - alpha
    # ρ = t + βs and η = 1 − t + αs stay inside [0, 1] for s in [s_lo, s_hi].
    s_lo = jnp.maximum(-t / beta, (t - 1.0) / alpha)
    s_hi = jnp.minimum((1.0 - t) / beta, t / alpha)

    def log_f(s):
        rho, one_m_rho, eta, one_m_eta = _segment_rates(alpha, t, s)
        return log_beta_kernel(rho, one_m_rho, a_r, b_r) + log_beta_kernel(eta, one_m_eta, a_e, b_e)

    def slope(s):
        gr, hr = log_beta_slope(t + beta * s, 1.0 - t - beta * s, a_r, b_r)
        ge, he = log_beta_slope(1.0 - t + alpha * s, t - alpha * s, a_e, b_e)
        return beta * gr + alpha * ge, beta**2 * hr + alpha**2 * he

    # At t = 0 or 1 (to rounding) the segment is a point: no mass.
    empty = s_hi <= s_lo
    s_hi = jnp.where(empty, s_lo + 1.0, s_hi)
    if exact_paired:
        return jnp.where(empty, -jnp.inf, _log_exact_segment(alpha, t, s_lo, s_hi, counts))
    # Start from the precision-weighted centre of the two factors in s.
    mean_r, sd_r = beta_moments(a_r, b_r)
    mean_e, sd_e = beta_moments(a_e, b_e)
    w_r, w_e = (beta / sd_r) ** 2, (alpha / sd_e) ** 2
    start = (w_r * (mean_r - t) / beta + w_e * (mean_e - 1.0 + t) / alpha) / (w_r + w_e)
    centre, scale = _log_concave_peak(slope, s_lo, s_hi, start)
    # The s-integrand is a product of powers of linear functions: log-concave.
    a, b = _tangent_window(log_f, slope, centre, scale, s_lo, s_hi, rule.drop)
    p = gauss_panels(jnp.stack([a, centre]), jnp.stack([centre, b]), rule.s_nodes, False)
    return jnp.where(empty, -jnp.inf, lse(p.log_w + log_f(p.x)))


#: Binary digits of the paired counts that the exact s rule raises to a power:
#: enough for every count up to 2·EXACT_PAIRED_NODES − 1.
_EXACT_POWER_BITS = (2 * EXACT_PAIRED_NODES - 1).bit_length()


def _whole_power(base: Array, exponent: Array) -> Array:
    """base ** exponent for a whole exponent below 2 ** _EXACT_POWER_BITS, by squaring.

    ``exponent`` is a scalar; 0 ** 0 = 1, as ``xlogy`` has it. A few
    multiplications where exp(k·log v) takes a logarithm: the exact s rule's
    integrand is four such powers at each node.
    """
    result, square = jnp.ones_like(base), base
    for bit in range(_EXACT_POWER_BITS):
        result = jnp.where(jnp.floor(exponent / 2**bit) % 2 == 1, result * square, result)
        square = square * square
    return result


def _log_exact_segment(alpha: Array, t: Array, s_lo: Array, s_hi: Array, counts: Counts) -> Array:
    """log of the s-integral over [s_lo, s_hi] by one Gauss–Legendre panel of
    :data:`EXACT_PAIRED_NODES`, exact where :func:`paired_rule_is_exact`.

    The integrand, a polynomial of degree N_ρη ≤ 15 with every factor in
    [0, 1], is summed in linear scale: each node's value is at least its
    smallest factor to the 15th power, so nothing underflows where the
    segment carries mass. The sum is within 7e-15 of the log-scale sum, at a
    third of its cost.
    """
    y, w = np.polynomial.legendre.leggauss(EXACT_PAIRED_NODES)
    half = 0.5 * (s_hi - s_lo)
    rho, one_m_rho, eta, one_m_eta = _segment_rates(alpha, t, s_lo + half * (y + 1.0))
    values = (
        _whole_power(rho, counts.n_tp)
        * _whole_power(one_m_rho, counts.n_pos_paired - counts.n_tp)
        * _whole_power(eta, counts.n_tn)
        * _whole_power(one_m_eta, counts.n_neg_paired - counts.n_tn)
    )
    return jnp.log(half * jnp.sum(w * values))


def logit_hermite_rule(centre, scale, n: int) -> tuple[Array, Array]:
    """An n-node Gauss–Hermite rule for ∫ g(x) dx over x in (0, 1), in u = logit x.

    Centred at ``centre`` with scale ``scale`` (both in u): nodes x ``(n,)``
    and the logs of their weights, the logit Jacobian included, so that
    Σ w·g(x) ≈ ∫ g(x) dx for g that is close to a Gaussian in u there.
    """
    # ∫ g(u) du = h·E[g(c + h·z) / φ(z)] for z standard normal.
    z, log_w = normal_rule(n)
    u = centre + scale * z
    log_w = log_w + 0.5 * z * z + 0.5 * np.log(2.0 * np.pi) + jnp.log(scale)
    log_w = log_w + jax.nn.log_sigmoid(u) + jax.nn.log_sigmoid(-u)
    return jax.nn.sigmoid(u), log_w


def _log_lambda_full(alpha, counts: Counts, rule: QuadratureRule, exact_paired=False) -> Array:
    """log Λ(α) for unknown ρ, η: a t rule (up to 6 panels) over :func:`log_segment_integral`."""
    a_r, b_r, a_e, b_e = paired_betas(counts)
    mean_r, sd_r = beta_moments(a_r, b_r)
    mean_e, sd_e = beta_moments(a_e, b_e)
    m, n = counts.m_pos, counts.n_m
    beta = 1.0 - alpha

    # Placement in t: the likelihood's Beta(m + 1, N − m + 1) kernel times a
    # Beta matched to the moments of p = αρ + (1 − α)(1 − η).
    mean_q = alpha * mean_r + beta * (1.0 - mean_e)
    sd_q = jnp.sqrt((alpha * sd_r) ** 2 + (beta * sd_e) ** 2)
    a_q, b_q = beta_from_moments(mean_q, sd_q)
    log_f, mode, scale = logit_beta_kernel(m + a_q, n - m + b_q)
    lo, hi, centre, scale, breaks = to_logit(0.0, 1.0, mode, scale, (alpha, beta))
    if rule.t_hermite:
        t, log_w = logit_hermite_rule(centre, scale, rule.t_hermite)
    else:
        p = _probed_panels(
            log_f, lo, hi, centre, scale, breaks, rule.t_nodes, rule.drop, True, _SHOULDER
        )
        t, log_w = p.x.reshape(-1), p.log_w.reshape(-1)
    log_l = xlogy(m, t) + xlog1py(n - m, -t)
    log_inner = jax.vmap(lambda t: log_segment_integral(alpha, t, counts, rule, exact_paired))
    return lse(log_w + log_l + log_inner(t))


def _log_lambda_known(alpha, counts: Counts) -> Array:
    """log Λ(α) for known ρ, η: the binomial likelihood itself."""
    p = alpha * counts.rho + (1.0 - alpha) * (1.0 - counts.eta)
    q = alpha * (1.0 - counts.rho) + (1.0 - alpha) * counts.eta
    return xlogy(counts.m_pos, p) + xlogy(counts.n_m - counts.m_pos, q)


def alpha_log_marginal(
    alpha: Array, counts: Counts, kind: str, rule: QuadratureRule, exact_paired: bool = False
) -> Array:
    """log π(α | counts) up to a constant, at interior points ``alpha`` of any shape.

    ``exact_paired``: see :func:`posterior_summary`.
    """
    log_prior = log_beta_kernel(
        alpha, 1.0 - alpha, counts.n_pos + 1.0, counts.n_phi - counts.n_pos + 1.0
    )
    if kind == "beta":
        return log_prior
    if kind == "known":
        return log_prior + _log_lambda_known(alpha, counts)
    flat = alpha.reshape(-1)
    log_lambda = jax.vmap(lambda a: _log_lambda_full(a, counts, rule, exact_paired))(flat)
    return log_prior + log_lambda.reshape(alpha.shape)


def _alpha_placement(counts: Counts, kind: str):
    """(centre, scale, breaks) that place the α rule.

    The human ratings' Beta(n₊ + 1, N_Φ − n₊ + 1) kernel times a Beta matched
    to what the metric alone says of α (:func:`alpha_given_rate`, with the
    rate and its spread from the metric's own Beta(m₊ + 1, N_M − m₊ + 1)).
    Break points at α = p̂ and 1 − p̂, where π(α) can have kinks (see the
    module docstring).
    """
    a_a, b_a = counts.n_pos + 1.0, counts.n_phi - counts.n_pos + 1.0
    if kind == "beta":
        _, centre, scale = logit_beta_kernel(a_a, b_a)
        return centre, scale, ()
    m, n = counts.m_pos, counts.n_m
    mean_l, sd_l = beta_moments(m + 1.0, n - m + 1.0)
    if kind == "known":
        centre, scale = alpha_given_rate(counts, mean_l, sd_l**2, counts.rho, counts.eta, 0.0, 0.0)
        return (*_known_logit_mode(counts, centre), ())
    centre, scale = alpha_given_rate(counts, mean_l, sd_l**2, *paired_moments(counts))
    return centre, scale, (mean_l, 1.0 - mean_l)


def _known_logit_mode(counts: Counts, start):
    """Mode and scale, on the α scale, of the "known" kind's exact α-marginal in u = logit α.

    In u the marginal with its Jacobian is ψ(α) = log π(α) + log α + log(1 − α),
    concave in α (every term is the log of a linear function of α), so its
    mode is found by Newton within [0, 1]. The stand-in of
    :func:`alpha_given_rate` cannot replace it where the metric's rate lies
    outside the rates ρ, η allow (below 1 − η, say): it then centres on the
    human ratings alone, and the window probed from there holds the sharp peak
    at the bound in one panel (a lane with n₊ = 3 of 10, m₊ = 44,000 of 10⁵,
    ρ = 0.6, η = 0.55 came out 7 % of its SD off).
    """
    a, b = counts.n_pos + 1.0, counts.n_phi - counts.n_pos + 1.0
    m, rest = counts.m_pos, counts.n_m - counts.m_pos
    slope = counts.rho + counts.eta - 1.0

    def term(k, x, d):
        # k·log(x) differentiated through x = x(α), x′ = d; 0 where k = 0.
        safe = jnp.where(k > 0, x, 1.0)
        return jnp.where(k > 0, k * d / safe, 0.0), jnp.where(k > 0, -k * (d / safe) ** 2, 0.0)

    def slope_fn(alpha):
        p = alpha * counts.rho + (1.0 - alpha) * (1.0 - counts.eta)
        parts = (term(a, alpha, 1.0), term(b, 1.0 - alpha, -1.0))
        parts += (term(m, p, slope), term(rest, 1.0 - p, -slope))
        return sum(g for g, _ in parts), sum(h for _, h in parts)

    return _log_concave_peak(slope_fn, 0.0, 1.0, start)


def posterior_summary(
    counts: Counts,
    kind: str,
    level: float = 0.95,
    rule: QuadratureRule = QuadratureRule(),
    exact_paired: bool = False,
) -> PosteriorSummary:
    """Posterior mean, SD and central ``level`` interval of α for one lane.

    Args:
        counts: one lane's counts (scalars).
        kind: one of :data:`MODEL_KINDS`, static; "beta" requires N_M = 0
            and "known" requires ``counts.rho_eta_known``.
        level: credible level of the central interval, in (0, 1).
        rule: node counts and window.
        exact_paired: static, full model only: integrate over s with a rule
            that is exact for few paired ratings and wrong otherwise; only for
            lanes where :func:`paired_rule_is_exact`. Cheaper: no search for the
            s-peak and its window at each t node (docs/performance.md).
    """
    if kind not in MODEL_KINDS:
        raise ValueError(f"kind must be one of {MODEL_KINDS}, got {kind!r}")
    centre, scale, breaks = _alpha_placement(counts, kind)
    if kind == "full":
        panels = sinh_panels(0.0, 1.0, centre, scale, breaks, rule.alpha_nodes, rule.width, True)
    else:
        # The exact log-marginal is cheap here: probe it for the window.
        def log_f(u):
            x = jax.nn.sigmoid(u)
            return alpha_log_marginal(x, counts, kind, rule) + jnp.log(x) + jnp.log1p(-x)

        lo, hi, centre, scale, _ = to_logit(0.0, 1.0, centre, scale, ())
        # The stand-in's mode may sit off the exact one; the window is still
        # right because it is probed on the exact log-marginal, both ways.
        panels = _probed_panels(
            log_f, lo, hi, centre, scale, (), rule.alpha_nodes, rule.drop, True, _SHOULDER
        )
    log_post = alpha_log_marginal(panels.x, counts, kind, rule, exact_paired) + panels.log_w
    log_total = lse(log_post)
    weights = jnp.exp(log_post - log_total)
    mean = jnp.sum(weights * panels.x)
    sd = jnp.sqrt(jnp.sum(weights * (panels.x - mean) ** 2))
    # log of density·dx/dy in each panel, normalised: the weights divided by w_i.
    _, w, _ = gauss_legendre(rule.alpha_nodes)
    log_density = log_post - log_total - jnp.log(w)
    tail = 0.5 * (1.0 - level)
    ends = (tail, 1.0 - tail)
    if kind == "full":
        # Both ends in one search, vmapped: one loop, half the trips an accelerator
        # launches. Not for the one-dimensional kinds, whose calls are few and cheap:
        # vmapped whole on CPU, one loop moved their interval ends by an ulp there.
        search = jax.vmap(lambda q: panel_quantile(panels, log_density, q, rule.alpha_nodes))
        low, high = search(jnp.array(ends))
    else:
        low, high = (panel_quantile(panels, log_density, q, rule.alpha_nodes) for q in ends)
    return PosteriorSummary(mean, sd, low, high)


def hermite_t_allows(counts: Counts):
    """Whether the (ρ, η) posterior density vanishes at the corners (0, 0) and (1, 1) (bool).

    For fixed α the t-integrand is smooth except at t = α and t = 1 − α,
    where the ends of the s-interval switch over at the corners (1, 1) and
    (0, 0). Where the density there is not zero (no paired disagreements at
    all, or no paired agreements) it has a kink, which no Gauss–Hermite rule
    in t integrates, and two such rules are off alike (seen: 2.6e-5 in the
    mean, the two within 3e-7 of each other), so no check catches it.
    Works on one lane or ``(B,)`` arrays, JAX or NumPy.
    """
    agree = counts.n_tp + counts.n_tn
    disagree = counts.n_pos_paired + counts.n_neg_paired - agree
    return (agree >= 1) & (disagree >= 1)


def hermite_t_summary(
    counts: Counts,
    level: float = 0.95,
    rule: QuadratureRule = QuadratureRule(),
    check: HermiteTRule = HermiteTRule(),
    exact_paired: bool = False,
) -> tuple[PosteriorSummary, Array]:
    """The full model's posterior summary with a Gauss–Hermite t rule, and a trust flag.

    The nested rule spends most of its nodes on t (up to 6 panels of
    ``rule.t_nodes``, placed by probing). Where the t-integrand is smooth, a
    Gauss–Hermite rule in logit t centred and scaled at the peak of the
    likelihood times the stand-in for the density of p (the placement of the
    panels) needs 8: on the benchmark's lanes that the adaptive Gauss–Hermite
    rule rejects, within 1e-8 of the nested rule at a ninth of its cost. So
    the lane is integrated with ``check.nodes`` t-nodes, α and s as in
    ``rule``, and again with ``check.check_nodes`` t-nodes and
    ``check.check_alpha_nodes`` per α panel, and trusted where
    :func:`hermite_t_allows` and the two agree within the check's tolerances.

    Args:
        counts: one full-model lane's counts (scalars).
        level: credible level of the central interval, in (0, 1).
        rule: the α and s rules.
        check: the two t rules, the coarser α rule and the tolerances.
        exact_paired: as in :func:`posterior_summary`.

    Returns:
        The summary with ``check.nodes`` t-nodes, and whether to trust it.
    """
    fine = posterior_summary(
        counts, "full", level, rule._replace(t_hermite=check.nodes), exact_paired
    )
    coarse_rule = rule._replace(t_hermite=check.check_nodes, alpha_nodes=check.check_alpha_nodes)
    coarse = posterior_summary(counts, "full", level, coarse_rule, exact_paired)
    agree = summaries_agree(fine, coarse, check.tolerance, check.interval_tolerance)
    return fine, hermite_t_allows(counts) & agree


def summaries_agree(
    fine: PosteriorSummary, coarse: PosteriorSummary, tolerance: float, interval_tolerance: float
) -> Array:
    """Whether two rules' summaries agree, as a rule that checks itself asks (bool).

    Mean and SD within ``tolerance``, interval ends within
    ``interval_tolerance``; False for any NaN.
    """
    gaps = jnp.stack([jnp.abs(a - b) for a, b in zip(fine, coarse, strict=True)])
    tolerances = jnp.array([tolerance] * 2 + [interval_tolerance] * 2)
    return jnp.all(gaps <= tolerances)
