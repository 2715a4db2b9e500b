"""Exact posterior of θ = vᵀπ with the judges' confusion known, for K ≤ 3 classes.

With C known the paired items say nothing of π beyond their human verdicts (there are
none: MODEL.md, "Ratings with more than two classes, and several judges"), and under the
Dirichlet(1) prior the posterior of π on the simplex is

    p(π | h, m) ∝ Π_k π_k^(h_k) · Π_l p_l^(m_l),   p = Cᵀπ,

a (K − 1)-dimensional density, log-concave (every factor is a power of a non-negative
linear function of π). θ's marginal is therefore log-concave too (Prékopa), so it has one
peak, and so does every section of the density along a line.

Coordinates. The classes are taken in the order of their values, lo, mid, hi, and θ is
carried as x = (θ − v_lo)/(v_hi − v_lo) ∈ [0, 1]. For K = 2, π_hi = x and the marginal is
the density itself. For K = 3, with r = (v_mid − v_lo)/(v_hi − v_lo) and u = π_mid,

    π_hi = x − r·u,   π_lo = 1 − x − (1 − r)·u,   |∂(π_hi, π_mid)/∂(x, u)| = 1,

so θ's marginal is f(x) = ∫_0^U(x) p(π(x, u)) du over the simplex's section at x,
U(x) = min(x/r, (1 − x)/(1 − r)). Along the section every π_k and p_l is linear in u, so
the inner integrand is log-concave in u with derivatives in closed form. U has a kink at
x = r (the section passes through the vertex of the middle class), and so may f.

Inner rule (K = 3). At each x: the mode of the log-integrand in u by safeguarded Newton
(bisection where Newton leaves the bracket), its window to where the log has fallen by
``drop`` (bounded by the tangent at a probe six curvature widths out, which a log-concave
function's fall lies above), and two Gauss–Legendre panels split at the mode.

Outer rule, in y = logit x (a power of x or 1 − x near a bound becomes an exponential
tail, whose log the quantiles below interpolate well; in x itself a density ∝ x near 0 put
an interval end of the flat Dirichlet 1.6e-5 off). The density of y is unimodal (f is
log-concave in x, and y ↦ x increasing), however narrow its peak: N_M = 10^7 judge
verdicts, or none at all. Its mode by a search that keeps the two fifths of the bracket
around the best of four points; on each side the points where its log has fallen by
``shoulder`` and by ``drop`` by bisection in the log of the distance from the mode (so a
width of 1e-6 or of 10 is found alike, and a cliff, where the section cuts the
likelihood's peak, gets a panel of its own); Gauss–Legendre panels between mode,
shoulders, edges and the kink x = r, each holding an analytic, one-sided piece of the
peak. Everything is in logs: with m_l up to 10^7 the integrand underflows anywhere but
at its peak.

Summaries. Mean and SD are sums over the outer nodes. Each end of the central interval
inverts the CDF within the panel that holds it: the log density is the Legendre series
through the panel's nodes (a peak is nearly a low-degree polynomial in the log), its
exponential integrated by Gauss–Legendre, the CDF inverted by safeguarded Newton.

Accuracy. On 512 lanes for each of the values (0, ½, 1), (1, 2, 3) and (0, 0, 1) (N_Φ up
to 10^4, N_M up to 10^7, a fifth of each zero; judges from useless to near-perfect, a fifth
with a zero in C), the default :class:`SimplexRule` (24 outer nodes a panel, 20 inner) is
within 3e-8 of a rule with twice the nodes in mean and SD, and within 2.5e-7 in the interval
ends; 16 outer nodes were 1e-6 off in the SD and 2e-5 in an end, 12 inner nodes 7e-8 in the
mean (tests/kernels/test_categorical_quadrature.py, ``-m yardstick``). Against the flat
Dirichlet and the binary model's rule at K = 2, 1e-13 and 1e-8. On 2 shared CPU cores,
~700 lanes a second (K = 3, calls of 64).

Everything here works on one lane; callers ``jax.vmap`` over lanes. Use float64
(``jax_enable_x64``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout
from binmetric_sweep.kernels.panels import (
    LOGIT_EDGE,
    Panels,
    gauss_legendre,
    gauss_panels,
    lse,
    panel_quantile,
)
from binmetric_sweep.kernels.quadrature import PosteriorSummary
from binmetric_sweep.kernels.roots import bracketed_newton, in_open_bracket_or_still

Array = jax.Array

__all__ = [
    "MAX_CLASSES",
    "SimplexRule",
    "DEFAULT_RULE",
    "applies",
    "theta_log_marginal",
    "posterior_summary",
]

#: The most classes the rule integrates: θ's marginal is then at most a 1-D integral at
#: each θ (K = 3); beyond, the section of the simplex is a polygon.
MAX_CLASSES = 3


class SimplexRule(NamedTuple):
    """Node counts and windows of the rule (static: hashable numbers).

    Attributes:
        x_nodes: Gauss–Legendre nodes per outer panel (up to 5 panels).
        u_nodes: nodes per panel of the inner rule along the section (2 panels; K = 3).
        drop: windows end where the log-density has fallen this far below its peak
            (30: the mass left outside is below 1e-12 of the total).
        shoulder: the outer window is also split where the log has fallen this far,
            so that a broad peak's long tails get panels of their own.
        mode_steps: steps of the search for the outer mode, each keeping 2/5 of the
            bracket (30: 72 in logit x shrinks to 1e-10, far below any posterior SD a
            sweep meets).
        edge_steps: bisection steps in the log of the distance for each outer window
            edge (12: within 0.6 % of the distance where the fall reaches its target).
        peak_steps: safeguarded Newton steps for the inner mode.
    """

    x_nodes: int = 24
    u_nodes: int = 20
    drop: float = 30.0
    shoulder: float = 4.0
    mode_steps: int = 30
    edge_steps: int = 12
    peak_steps: int = 32


#: The rule's defaults, as one value (an argument default that is not a call).
DEFAULT_RULE = SimplexRule()
#: The shortest distance from the mode at which an outer window edge is sought, as a
#: share of the room on that side (up to 2·LOGIT_EDGE in logit x): 7e-9 in logit x, far
#: below the posterior SD of 10^9 ratings.
_EDGE_FLOOR = 1e-10
#: Where, in curvature widths from the mode, the inner window's edge is probed: the
#: tangent to a Gaussian's fall at 6 widths reaches 30 at 8.
_TANGENT_PROBE = 6.0


class _Geometry(NamedTuple):
    """The classes in the order of their values (static, from the layout)."""

    lo: int  # class with the least value
    mid: int | None  # the third class (K = 3)
    hi: int  # class with the greatest value
    low: float  # v_lo
    span: float  # v_hi − v_lo
    middle: float  # r = (v_mid − v_lo)/(v_hi − v_lo); unused for K = 2


def applies(layout: Layout) -> bool:
    """Whether the rule answers this layout: 2 or 3 classes whose values are not all one."""
    values = np.asarray(layout.values, np.float64)
    return 2 <= len(values) <= MAX_CLASSES and float(np.ptp(values)) > 0.0


def _geometry(layout: Layout) -> _Geometry:
    if not applies(layout):
        raise ValueError(
            f"the known-confusion quadrature takes 2 to {MAX_CLASSES} classes with distinct "
            f"least and greatest values, got values {layout.values}"
        )
    values = np.asarray(layout.values, np.float64)
    order = np.argsort(values, kind="stable")
    lo, hi = int(order[0]), int(order[-1])
    mid = int(order[1]) if len(values) == 3 else None
    span = float(values[hi] - values[lo])
    middle = 0.0 if mid is None else float((values[mid] - values[lo]) / span)
    return _Geometry(lo, mid, hi, float(values[lo]), span, middle)


class _Lane(NamedTuple):
    """One lane's numbers: h ``(K,)``, m ``(L,)`` and the known C ``(K, L)``."""

    human: Array
    judged: Array
    confusion: Array


def _lane(counts: CategoricalCounts) -> _Lane:
    # Floored as the sampler's known C is (kernels.categorical.logdensity): a judged
    # verdict no class can give would make the posterior empty, not NaN.
    confusion = jnp.maximum(jnp.asarray(counts.confusion, jnp.float64), 1e-300)
    human, judged = (jnp.asarray(x, jnp.float64) for x in (counts.human, counts.judged))
    return _Lane(human, judged, confusion)


def _shares(x: Array, xc: Array, u: Array, g: _Geometry, k: int) -> tuple[Array, np.ndarray]:
    """π ``(..., K)`` at (x, u), clipped to [0, 1] against rounding, and ∂π/∂u ``(K,)``.

    ``xc`` is 1 − x, passed in (σ(−y) of the outer coordinate y = logit x), so that π_lo
    keeps its relative accuracy where x is near 1."""
    parts, slopes = [None] * k, np.zeros(k)
    if g.mid is None:
        parts[g.lo], parts[g.hi] = xc, x
    else:
        r = g.middle
        parts[g.lo] = xc - (1.0 - r) * u
        parts[g.mid] = u
        parts[g.hi] = x - r * u
        slopes[g.lo], slopes[g.mid], slopes[g.hi] = -(1.0 - r), 1.0, -r
    shape = jnp.broadcast_shapes(jnp.shape(x), jnp.shape(u))
    pi = jnp.stack([jnp.broadcast_to(p, shape) for p in parts], axis=-1)
    return jnp.clip(pi, 0.0, 1.0), slopes


def _log_density(x: Array, xc: Array, u: Array, lane: _Lane, g: _Geometry) -> Array:
    """log Π π_k^h_k Π p_l^m_l at (x, u), any broadcastable shapes (0 · log 0 = 0)."""
    pi, _ = _shares(x, xc, u, g, lane.human.shape[0])
    p = jnp.sum(pi[..., :, None] * lane.confusion, axis=-2)
    return jnp.sum(xlogy(lane.human, pi), axis=-1) + jnp.sum(xlogy(lane.judged, p), axis=-1)


def _u_slope(x: Array, xc: Array, u: Array, lane: _Lane, g: _Geometry) -> tuple[Array, Array]:
    """First and second derivatives in u of :func:`_log_density` at scalars (x, u)."""
    pi, b = _shares(x, xc, u, g, lane.human.shape[0])
    p = pi @ lane.confusion
    d = jnp.asarray(b) @ lane.confusion

    def sums(n, value, rate):
        # A factor absent from the density (n = 0) or constant along u (rate 0) adds nothing.
        on = (n > 0) & (rate != 0)
        q = jnp.where(on, rate / jnp.where(on, value, 1.0), 0.0)
        return jnp.sum(jnp.where(on, n * q, 0.0)), -jnp.sum(jnp.where(on, n * q * q, 0.0))

    g1, h1 = sums(lane.human, pi, jnp.asarray(b))
    g2, h2 = sums(lane.judged, p, d)
    return g1 + g2, h1 + h2


def _section_top(x: Array, xc: Array, g: _Geometry) -> Array:
    """U(x): the section of the simplex at x runs over u ∈ [0, U(x)] (K = 3)."""
    r = g.middle
    if r == 0.0:
        return xc
    if r == 1.0:
        return x
    return jnp.minimum(x / r, xc / (1.0 - r))


def _peak(slope_fn, lo: Array, hi: Array, steps: int) -> tuple[Array, Array]:
    """Mode and width of a log-concave function on [lo, hi] from its log-derivatives.

    ``slope_fn(u) -> (g, h)``. Newton within the bracket, bisecting where it would leave
    it; a mode at an end is that end. The width 1/√(−h + g²) is the curvature width at an
    interior mode and the exponential decay length 1/|g| at an end.
    """
    span = hi - lo
    eps = 1e-9 * span
    g_lo, _ = slope_fn(lo + eps)
    g_hi, _ = slope_fn(hi - eps)
    start = 0.5 * (lo + hi)
    u = bracketed_newton(
        slope_fn, lo, hi, start, steps, increasing=False, accept=in_open_bracket_or_still
    )
    u = jnp.where(g_lo <= 0, lo, jnp.where(g_hi >= 0, hi, u))
    g1, h1 = slope_fn(jnp.clip(u, lo + eps, hi - eps))
    width = 1.0 / jnp.sqrt(jnp.maximum(-h1, 0.0) + g1 * g1)
    return u, jnp.minimum(width, span)


def _tangent_window(log_f, slope_fn, mode, width, lo, hi, drop) -> tuple[Array, Array]:
    """Ends (a, b) around the mode of log-concave ``log_f`` on [lo, hi], beyond which it
    has fallen by at least ``drop``: its fall is convex, so it lies above the tangent at a
    probe :data:`_TANGENT_PROBE` widths out and reaches ``drop`` no further than it does."""
    sign = np.array([-1.0, 1.0])
    reach = sign * (jnp.stack([lo, hi]) - mode)
    step = jnp.minimum(_TANGENT_PROBE * width, reach)
    points = mode + sign * step
    fall = log_f(mode) - jax.vmap(log_f)(points)
    rate = -sign * jax.vmap(lambda u: slope_fn(u)[0])(points)
    beyond = jnp.where(rate > 0.0, (drop - fall) / jnp.where(rate > 0.0, rate, 1.0), jnp.inf)
    distance = jnp.minimum(jnp.where(fall >= drop, step, step + beyond), reach)
    ends = mode + sign * distance
    return ends[0], ends[1]


def _log_section(y: Array, lane: _Lane, g: _Geometry, rule: SimplexRule) -> Array:
    """log f(x) = log ∫_0^U(x) p(π(x, u)) du at x = σ(y), a scalar y (K = 3)."""
    x, xc = jax.nn.sigmoid(y), jax.nn.sigmoid(-y)
    top = _section_top(x, xc, g)
    empty = ~(top > 0.0)  # a vertex of the simplex: no length, no mass
    top = jnp.where(empty, 1.0, top)
    zero = jnp.zeros_like(top)

    def log_f(u):
        return _log_density(x, xc, u, lane, g)

    def slope(u):
        return _u_slope(x, xc, u, lane, g)

    mode, width = _peak(slope, zero, top, rule.peak_steps)
    a, b = _tangent_window(log_f, slope, mode, width, zero, top, rule.drop)
    panels = gauss_panels(jnp.stack([a, mode]), jnp.stack([mode, b]), rule.u_nodes, False)
    return jnp.where(empty, -jnp.inf, lse(panels.log_w + log_f(panels.x)))


def _log_marginal(y: Array, lane: _Lane, g: _Geometry, rule: SimplexRule) -> Array:
    """log f(x) up to a constant at x = σ(y), for y of any shape (no Jacobian)."""
    if g.mid is None:
        x, xc = jax.nn.sigmoid(y), jax.nn.sigmoid(-y)
        return _log_density(x, xc, jnp.zeros_like(y), lane, g)
    flat = jnp.reshape(y, -1)
    return jax.vmap(lambda z: _log_section(z, lane, g, rule))(flat).reshape(jnp.shape(y))


def _log_logit_density(y: Array, lane: _Lane, g: _Geometry, rule: SimplexRule) -> Array:
    """log of the density of y = logit x, up to a constant: log f + log x + log(1 − x).
    Unimodal: f is log-concave in x, and y ↦ x increasing (see the module docstring)."""
    return _log_marginal(y, lane, g, rule) + jax.nn.log_sigmoid(y) + jax.nn.log_sigmoid(-y)


def theta_log_marginal(
    theta: Array, counts: CategoricalCounts, layout: Layout, rule: SimplexRule = DEFAULT_RULE
) -> Array:
    """log of θ's posterior density up to an additive constant, at θ of any shape.

    Args:
        theta: points in (min v, max v).
        counts: one lane's counts; C is read from ``counts.confusion`` (taken as known;
            ``counts.paired`` is not read).
        layout: the classes' values and the judges (static; K ≤ :data:`MAX_CLASSES`).
        rule: the inner rule's nodes (K = 3).
    """
    g = _geometry(layout)
    x = (jnp.asarray(theta, jnp.float64) - g.low) / g.span
    return _log_marginal(jnp.log(x) - jnp.log1p(-x), _lane(counts), g, rule)


class _Search(NamedTuple):
    """The outer window's search (one lane): the mode's bracket, then the edges'."""

    a: Array  # the mode's bracket [a, b] in y
    b: Array
    mode: Array  # the best point yet
    peak: Array  # log_f there
    lo: Array  # (2, 2) log-distance brackets of the edges: (drop, shoulder) × (left, right)
    hi: Array


def _window(log_f, rule: SimplexRule) -> tuple[Array, Array]:
    """The mode of the unimodal ``log_f`` on [−LOGIT_EDGE, LOGIT_EDGE], and ``(2, 2)``
    distances from it to where ``log_f`` has fallen by (``drop``, ``shoulder``) (rows) to
    the (left, right) (columns), each at most the room there.

    One loop, four points through one call of ``log_f`` a step (so that the program holds
    one copy of it): ``rule.mode_steps`` steps of a search for the mode that keeps the two
    fifths of the bracket around the best of four points inside it; then
    ``rule.edge_steps`` steps of bisection in the log of each distance, between
    :data:`_EDGE_FLOOR` of the room and all of it, keeping the end where the fall has
    reached its target (the fall grows with the distance on either side; where it never
    reaches the target the end stays at the room's edge).
    """
    sign = np.array([-1.0, 1.0])
    drops = np.array([[rule.drop], [rule.shoulder]])
    fifths = np.arange(1.0, 5.0) / 5.0

    def step(i, state: _Search) -> _Search:
        seeking = i < rule.mode_steps
        inner = state.a + (state.b - state.a) * fifths
        distance = jnp.exp(0.5 * (state.lo + state.hi))
        outer = (state.mode + sign * distance).reshape(-1)
        values = log_f(jnp.where(seeking, inner, outer))
        best = jnp.argmax(values)
        ends = jnp.concatenate([state.a[None], inner, state.b[None]])
        reached = (state.peak - values.reshape(2, 2)) >= drops
        found = _Search(ends[best], ends[best + 2], inner[best], values[best], state.lo, state.hi)
        narrowed = state._replace(
            lo=jnp.where(reached, state.lo, 0.5 * (state.lo + state.hi)),
            hi=jnp.where(reached, 0.5 * (state.lo + state.hi), state.hi),
        )
        chosen = jax.tree.map(lambda x, y: jnp.where(seeking, x, y), found, narrowed)
        # Entering the edges' search: their brackets from the mode found.
        room = jnp.stack([chosen.mode + LOGIT_EDGE, LOGIT_EDGE - chosen.mode])
        log_room = jnp.broadcast_to(jnp.log(room), (2, 2))
        last = i == rule.mode_steps - 1
        return chosen._replace(
            lo=jnp.where(last, log_room + math.log(_EDGE_FLOOR), chosen.lo),
            hi=jnp.where(last, log_room, chosen.hi),
        )

    edge = jnp.array(LOGIT_EDGE)
    zeros = jnp.zeros((2, 2))
    start = _Search(-edge, edge, jnp.array(0.0), jnp.array(-jnp.inf), zeros, zeros)
    steps = rule.mode_steps + rule.edge_steps
    state = jax.lax.fori_loop(0, steps, step, start)
    return state.mode, jnp.exp(state.hi)


def _panels(log_f, g: _Geometry, rule: SimplexRule) -> Panels:
    """The outer rule's panels in y = logit x (nodes in y, weights without the logit's
    Jacobian): mode, shoulders, edges and the kink x = r."""
    mode, (far, near) = _window(log_f, rule)
    a, b = mode - far[0], mode + far[1]
    splits = [mode - near[0], mode, mode + near[1]]
    if g.mid is not None and 0.0 < g.middle < 1.0:
        splits.append(jnp.clip(math.log(g.middle / (1.0 - g.middle)), a, b))
    edges = jnp.sort(jnp.stack([a, *[jnp.clip(s, a, b) for s in splits], b]))
    return gauss_panels(edges[:-1], edges[1:], rule.x_nodes, False)


def posterior_summary(
    counts: CategoricalCounts,
    layout: Layout,
    level: float = 0.95,
    rule: SimplexRule = DEFAULT_RULE,
) -> PosteriorSummary:
    """Posterior mean, SD and central ``level`` interval of θ = vᵀπ for one lane, C known.

    Args:
        counts: one lane's counts (h ``(K,)``, m ``(L,)``, the known C ``(K, L)``;
            ``paired`` and ``known`` are not read: C is taken as known).
        layout: the classes' values and the judges (static; 2 ≤ K ≤ :data:`MAX_CLASSES`,
            any values whose least and greatest differ).
        level: credible level of the central interval, in (0, 1).
        rule: node counts and windows.

    Returns:
        :class:`kernels.quadrature.PosteriorSummary` of θ (in the values' units).
    """
    g = _geometry(layout)
    lane = _lane(counts)
    in_y = _panels(lambda y: _log_logit_density(y, lane, g, rule), g, rule)
    log_post = _log_logit_density(in_y.x, lane, g, rule) + in_y.log_w
    # The same panels with nodes in x = σ(y), weights with the logit's Jacobian (and
    # Panels.position mapping a panel's coordinate to x).
    panels = in_y._replace(x=jax.nn.sigmoid(in_y.x), log_w=log_post * 0.0, logit=True)
    log_total = lse(log_post)
    weights = jnp.exp(log_post - log_total)
    mean = jnp.sum(weights * panels.x)
    sd = jnp.sqrt(jnp.sum(weights * (panels.x - mean) ** 2))
    _, w, _ = gauss_legendre(rule.x_nodes)
    log_density = log_post - log_total - jnp.log(w)
    tail = 0.5 * (1.0 - level)
    # Both ends in one search, vmapped: one copy of the quantile in the program.
    search = jax.vmap(lambda q: panel_quantile(panels, log_density, q, rule.x_nodes))
    low, high = search(jnp.array([tail, 1.0 - tail]))
    return PosteriorSummary(
        g.low + g.span * mean, g.span * sd, g.low + g.span * low, g.low + g.span * high
    )
