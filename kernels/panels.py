"""Composite Gauss–Legendre rules, the Gauss–Hermite rule, and Legendre series on a panel.

The quadrature rules (:mod:`kernels.quadrature`, :mod:`kernels.t_outer`,
:mod:`kernels.gauss_hermite`, :mod:`kernels.compare`) integrate on panels of
Gauss–Legendre nodes, optionally under a sinh map and on the logit scale, and
read quantiles off the Legendre series of a panel's values. Everything here
works on one lane (or is a host-side table); use float64.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.roots import bracketed_newton

Array = jax.Array

__all__ = [
    "LOGIT_EDGE",
    "Panels",
    "exp_series_integral",
    "gauss_legendre",
    "gauss_panels",
    "legendre_antiderivative",
    "legendre_polynomials",
    "lse",
    "normal_rule",
    "panel_quantile",
    "sinh_panels",
    "to_logit",
]


@cache
def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes y, weights w on [−1, 1], and P_j(y_i) for j = 0..n as an (n+1, n) table.

    NumPy's rule: nodes the eigenvalues of the symmetric tridiagonal Jacobi
    matrix (Golub & Welsch 1969), polished by a Newton step.
    """
    y, w = np.polynomial.legendre.leggauss(n)
    table = np.stack([np.polynomial.legendre.Legendre.basis(j)(y) for j in range(n + 1)])
    return y, w, table


@cache
def normal_rule(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes z and log weights of the n-point Gauss–Hermite rule for the standard normal.

    From NumPy's physicists' rule (nodes by Golub & Welsch 1969, as
    :func:`gauss_legendre`), scaled to the weight φ(z).
    """
    y, w = np.polynomial.hermite.hermgauss(n)
    return np.sqrt(2.0) * y, np.log(w / np.sqrt(np.pi))


def _logit(x):
    return jnp.log(x) - jnp.log1p(-x)


def lse(log_values: Array) -> Array:
    """log Σ exp over every element; −inf (not NaN) when all are −inf."""
    top = jnp.max(log_values)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    return top + jnp.log(jnp.sum(jnp.exp(log_values - top)))


class Panels(NamedTuple):
    """A composite rule: P panels of n Gauss–Legendre nodes in v.

    u = c + h·sinh(v) with the sinh map, u = v without; x = sigmoid(u) on the
    logit scale, x = u otherwise.
    """

    x: Array  # (P, n) nodes
    log_w: Array  # (P, n) log of w_i·dv/dy·du/dv·dx/du; −inf on empty panels
    left: Array  # (P,) panel start in v
    right: Array  # (P,) panel end in v
    centre: Array  # (P,) c of the sinh map (unused without it)
    scale: Array  # (P,) h of the sinh map (unused without it)
    sinh: bool
    logit: bool

    def position(self, panel: Array, y: Array) -> Array:
        """x at y ∈ [−1, 1] of panel ``panel``."""
        v = 0.5 * (self.left[panel] * (1.0 - y) + self.right[panel] * (1.0 + y))
        u = self.centre[panel] + self.scale[panel] * jnp.sinh(v) if self.sinh else v
        return jax.nn.sigmoid(u) if self.logit else u


#: Logit windows stop at |u| = 36 (x within 2.3e-16 of a bound, where 1 − x is
#: still representable): no posterior with sample sizes below 10^14 has mass beyond.
LOGIT_EDGE = 36.0


def to_logit(lo, hi, centre, scale, breaks):
    """Carry a placement on the probability scale over to u = logit(x)."""
    edge = 1.0 / (1.0 + np.exp(LOGIT_EDGE))
    c = jnp.clip(centre, edge, 1.0 - edge)
    scale = scale / (c * (1.0 - c))
    lo = jnp.maximum(_logit(jnp.maximum(lo, edge)), -LOGIT_EDGE)
    hi = jnp.minimum(_logit(jnp.minimum(hi, 1.0 - edge)), LOGIT_EDGE)
    return lo, hi, _logit(c), scale, tuple(_logit(jnp.clip(b, edge, 1.0 - edge)) for b in breaks)


def gauss_panels(left, right, n, logit, centre=None, scale=None) -> Panels:
    """Gauss–Legendre panels on [left_p, right_p] in v, optionally sinh-mapped."""
    y, w, _ = gauss_legendre(n)
    half = 0.5 * (right - left)
    v = 0.5 * (left + right)[:, None] + half[:, None] * y
    log_w = jnp.log(jnp.maximum(half[:, None] * w, 0.0))
    sinh = centre is not None
    if sinh:
        u = centre[:, None] + scale[:, None] * jnp.sinh(v)
        log_w = log_w + jnp.log(scale[:, None] * jnp.cosh(v))
    else:
        u, centre, scale = v, left, jnp.ones_like(left)
    if logit:
        log_w = log_w + jax.nn.log_sigmoid(u) + jax.nn.log_sigmoid(-u)
        u = jax.nn.sigmoid(u)
    return Panels(u, log_w, left, right, centre, scale, sinh, logit)


def sinh_panels(lo, hi, centre, scale, breaks, n, width, logit=False) -> Panels:
    """Gauss–Legendre panels under the map u = c + h·sinh(v), for a rough placement.

    Used where only an approximate centre c and scale h are known: the window
    is c ± width·h clipped to [lo, hi], split at ``breaks`` (kinks of the
    integrand); the map packs nodes near c and spaces them logarithmically
    further out, so a misjudged scale costs accuracy gradually, not at once.
    With ``logit`` the placement is on the probability scale of a variable in
    [0, 1] and the rule is built in u = logit(x), where Beta-like factors are
    smooth bells and near-bound behaviour becomes exponential tails.
    """
    if logit:
        lo, hi, centre, scale, breaks = to_logit(lo, hi, centre, scale, breaks)
    a = jnp.maximum(lo, centre - width * scale)
    b = jnp.minimum(hi, centre + width * scale)
    missed = a >= b
    a, b = jnp.where(missed, lo, a), jnp.where(missed, hi, b)
    edges = jnp.sort(jnp.stack([a, *[jnp.clip(x, a, b) for x in breaks], b]))
    c = jnp.clip(centre, edges[:-1], edges[1:])
    h = jnp.broadcast_to(scale, c.shape)
    left, right = jnp.arcsinh((edges[:-1] - c) / h), jnp.arcsinh((edges[1:] - c) / h)
    return gauss_panels(left, right, n, logit, c, h)


def legendre_polynomials(y: Array, degree: int) -> list[Array]:
    """[P_0(y), …, P_degree(y)] by the three-term recurrence, for ``y`` of any shape."""
    values = [jnp.ones_like(y), y]
    for j in range(1, degree):
        values.append(((2 * j + 1) * y * values[j] - j * values[j - 1]) / (j + 1))
    return values[: degree + 1]


def legendre_antiderivative(coeffs: Array, y: Array) -> Array:
    """∫_{−1}^{y} Σ_j c_j P_j, for coefficients ``(n,)`` and a scalar y."""
    n = coeffs.shape[0]
    legendre = legendre_polynomials(y, n)
    total = coeffs[0] * (y + 1.0)
    for j in range(1, n):
        total += coeffs[j] * (legendre[j + 1] - legendre[j - 1]) / (2 * j + 1)
    return total


def exp_series_integral(coeffs: Array, y: Array) -> Array:
    """∫_{−1}^{y} exp(Σ_j c_j P_j), by an n-node Gauss–Legendre rule on [−1, y] (scalar y)."""
    n = coeffs.shape[0]
    nodes, w, _ = gauss_legendre(n)
    half = 0.5 * (y + 1.0)
    legendre = legendre_polynomials(-1.0 + half * (nodes + 1.0), n - 1)
    log_values = sum(c * p for c, p in zip(coeffs, legendre, strict=True))
    return half * jnp.sum(w * jnp.exp(log_values))


#: Safeguarded Newton steps of :func:`panel_quantile` (bisection where Newton leaves
#: the bracket), in place of 60 bisections, which were a large share of the
#: middle rule's time (docs/performance.md). 12 steps reach the bisections' answer to 7e-16 on the
#: benchmark's lanes that the middle rule takes and on full_model_lanes(300, 21);
#: 8 do not (1.5e-10). See docs/performance.md.
_PANEL_QUANTILE_STEPS = 16


def panel_quantile(panels: Panels, log_density: Array, q: Array, n: int) -> Array:
    """The q-quantile from log panel values ``log_density`` (P, n) of π(x)·dx/dy, normalised.

    Within the panel that holds it, the quantile inverts the CDF of the
    interpolant of the *log* density through the panel's n Gauss nodes. A
    peak is close to a low-degree polynomial in the log, so this is as
    accurate as the panel's moments; interpolating the density itself, a
    narrow peak in a wide panel came out up to 6e-5 off. A panel with a
    non-finite node value falls back to the interpolant of the density. The
    CDF is inverted by Newton's method (its derivative is the interpolant)
    within a bracket, from where a flat density would put the quantile.
    """
    y, w, table = gauss_legendre(n)
    scale = (2.0 * np.arange(n) + 1.0) / 2.0
    density = jnp.exp(log_density)
    mass = jnp.sum(density * w, axis=1)
    cumulative = jnp.cumsum(mass)
    # A binary search (a loop of known trips), not every end compared at once: that
    # comparison's sum, likely fused with all that computes the panels, made one kernel
    # of the exact-s program take minutes to compile on a GPU (docs/performance.md).
    panel = jnp.clip(jnp.searchsorted(cumulative, q), 0, mass.shape[0] - 1)
    target = q - (cumulative[panel] - mass[panel])
    log_values = log_density[panel]
    smooth = jnp.all(jnp.isfinite(log_values))
    log_coeffs = scale * (table[:n] @ (w * jnp.where(smooth, log_values, 0.0)))
    coeffs = scale * (table[:n] @ (w * density[panel]))

    def excess(b):
        """F(b) − target within the panel, and its derivative, the density at b."""
        legendre = legendre_polynomials(b, n - 1)
        log_value = sum(c * p for c, p in zip(log_coeffs, legendre, strict=True))
        value = sum(c * p for c, p in zip(coeffs, legendre, strict=True))
        cdf = jnp.where(
            smooth, exp_series_integral(log_coeffs, b), legendre_antiderivative(coeffs, b)
        )
        return cdf - target, jnp.where(smooth, jnp.exp(log_value), value)

    # Start where the CDF would reach the target if the density were flat.
    start = jnp.clip(2.0 * target / mass[panel] - 1.0, -1.0, 1.0)
    b = bracketed_newton(excess, jnp.array(-1.0), jnp.array(1.0), start, _PANEL_QUANTILE_STEPS)
    return panels.position(panel, b)
