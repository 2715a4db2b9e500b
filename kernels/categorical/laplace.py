"""Per-lane Laplace whitening of the confusion's coordinates, for NUTS on the categorical
posterior.

The judge-only items pin p = Cᵀπ far more tightly than the human and paired items pin
π and C, so in the log-ratio coordinates x of :mod:`logdensity` the posterior is a thin
sheet around p = p̂ that ties C to π along directions a diagonal mass matrix cannot
follow (the categorical form of the binary model's ridge, :mod:`kernels.ridge`).

Here each lane's posterior is approximated at its mode x̂ by the Gaussian of precision
P = −∇² log p(x̂), and the sampler runs in coordinates z where π's log-ratios are kept
(z_π = x_π, so θ is read from the position as before) and C's are whitened given π:

    x_C = x̂_C + B·(z_π − x̂_π) + L·z_C,   B = −P_CC⁻¹ P_Cπ,   L Lᵀ = P_CC⁻¹,

B the Gaussian's regression of C on π and L the Cholesky factor of C's conditional
covariance. The map is linear with Jacobian determinant det L, a constant, so the density
of z is that of x up to a constant and the posterior is unchanged. Under the
approximation, z_C given z_π is standard normal, whatever π.

The mode is found by a fixed number of damped Newton steps from the Dirichlet means of
h + 1 and of each T_k + 1 (the posterior without the judge-only items); each step goes
along the Newton direction of the Hessian with its eigenvalues made positive, and takes
the best of a fixed ladder of step lengths (0 among them, so no step lowers the
density). Where the steps stop short of the mode, P is the Hessian with its eigenvalues
made positive (any positive-definite P gives a valid map, if a less apt one); a lane whose
numbers are not finite keeps the identity map (x̂ = 0, B = 0, L = I): z = x.

Every leaf of a :class:`Whitening` is one scalar per lane, as the chain kernel takes its
arguments; :func:`to_log_ratios` is written over each coordinate's scalar.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from binmetric_sweep.kernels.categorical.counts import Layout
from binmetric_sweep.kernels.categorical.logdensity import (
    DensityTerms,
    alr,
    logdensity,
    position_size,
)

Array = jax.Array

__all__ = [
    "NEWTON_STEPS",
    "Whitening",
    "posterior_mode",
    "whitening",
    "to_log_ratios",
    "from_log_ratios",
]

#: Newton steps to the mode. A lane far off its sheet (N_Φ = 5, N_M = 10^7) starts among
#: saddles and needs about 40; the steps cost little beside the chains' leapfrogs.
NEWTON_STEPS = 50

#: Step lengths tried along each Newton direction (the best is taken).
_LADDER = (1.0, 0.5, 0.25, 0.125, 1 / 16, 1 / 64, 1 / 256, 0.0)


class Whitening(NamedTuple):
    """The map z ↦ x of one lane (leading ``(B,)`` in a batch), as tuples of scalars.

    Attributes:
        mode_pi: K − 1 scalars, x̂_π.
        mode_c: n scalars, x̂_C (n = d − K + 1).
        regression: n tuples of K − 1 scalars, B.
        factor: n tuples, row i of L's lower triangle (i + 1 scalars).
    """

    mode_pi: tuple[Array, ...]
    mode_c: tuple[Array, ...]
    regression: tuple[tuple[Array, ...], ...]
    factor: tuple[tuple[Array, ...], ...]


def _start(terms: DensityTerms) -> Array:
    """``(d,)`` log-ratios of the Dirichlet means of the exponents (h + 1, T_k + 1)."""
    return jnp.concatenate([alr(jnp.stack(a) / sum(a)) for a in terms.exponents])


def posterior_mode(terms: DensityTerms, layout: Layout, independent: bool = False) -> Array:
    """``(d,)`` the mode of one lane's :func:`logdensity`, by :data:`NEWTON_STEPS` damped
    Newton steps from the Dirichlet means (no data-dependent control flow)."""
    f = lambda x: logdensity(x, terms, layout, independent)  # noqa: E731

    def step(x, _):
        g, h = jax.grad(f)(x), jax.hessian(f)(x)
        w, v = jnp.linalg.eigh(-h)
        # Eigenvalues made positive (a saddle's negative curvature is followed uphill).
        floor = 1e-10 * jnp.max(jnp.abs(w)) + 1e-300
        direction = v @ ((v.T @ g) / jnp.maximum(jnp.abs(w), floor))
        candidates = x + jnp.asarray(_LADDER)[:, None] * direction
        values = jax.vmap(f)(candidates)
        values = jnp.where(jnp.isfinite(values), values, -jnp.inf)
        best = candidates[jnp.argmax(values)]
        return jnp.where(jnp.all(jnp.isfinite(best)), best, x), None

    x, _ = jax.lax.scan(step, _start(terms), None, length=NEWTON_STEPS)
    return x


def whitening(terms: DensityTerms, layout: Layout, independent: bool = False) -> Whitening:
    """One lane's :class:`Whitening` from the Laplace approximation at its mode; the
    identity map where its numbers are not finite."""
    k = layout.classes - 1
    d = position_size(layout, independent)
    n = d - k
    mode = posterior_mode(terms, layout, independent)
    w, v = jnp.linalg.eigh(-jax.hessian(lambda x: logdensity(x, terms, layout, independent))(mode))
    # Where the steps stopped short of the mode (or it is a saddle), the Hessian's
    # eigenvalues made positive: any positive-definite P gives a valid map.
    floor = 1e-10 * jnp.max(jnp.abs(w)) + 1e-300
    precision = (v * jnp.maximum(jnp.abs(w), floor)) @ v.T
    p_cc, p_cpi = precision[k:, k:], precision[k:, :k]
    root = jnp.linalg.cholesky(p_cc)  # P_CC = R Rᵀ
    eye = jnp.eye(n, dtype=mode.dtype)
    # P_CC⁻¹ = R⁻ᵀR⁻¹; its Cholesky factor from the inverse itself (symmetrised).
    root_inv = jax.scipy.linalg.solve_triangular(root, eye, lower=True)
    covariance = root_inv.T @ root_inv
    factor = jnp.linalg.cholesky(0.5 * (covariance + covariance.T))
    regression = -covariance @ p_cpi
    ok = jnp.all(jnp.isfinite(factor)) & jnp.all(jnp.isfinite(regression))
    ok = ok & jnp.all(jnp.isfinite(mode)) & jnp.all(jnp.diag(factor) > 0)
    mode = jnp.where(ok, mode, 0.0)
    regression = jnp.where(ok, regression, 0.0)
    factor = jnp.where(ok, factor, eye)
    return Whitening(
        mode_pi=tuple(mode[i] for i in range(k)),
        mode_c=tuple(mode[k + i] for i in range(n)),
        regression=tuple(tuple(regression[i, j] for j in range(k)) for i in range(n)),
        factor=tuple(tuple(factor[i, j] for j in range(i + 1)) for i in range(n)),
    )


def to_log_ratios(z, w: Whitening) -> tuple[Array, ...]:
    """x = (z_π, x̂_C + B·(z_π − x̂_π) + L·z_C): d scalars from d scalars (or a ``(d,)``)."""
    k = len(w.mode_pi)
    shift = [z[j] - w.mode_pi[j] for j in range(k)]
    x_c = tuple(
        w.mode_c[i]
        + sum(b * s for b, s in zip(w.regression[i], shift, strict=True))
        + sum(w.factor[i][j] * z[k + j] for j in range(i + 1))
        for i in range(len(w.mode_c))
    )
    return tuple(z[j] for j in range(k)) + x_c


def from_log_ratios(x: Array, w: Whitening) -> Array:
    """``(d,)`` z of ``(d,)`` log-ratios x (the inverse of :func:`to_log_ratios`)."""
    k = len(w.mode_pi)
    mode_pi, mode_c = jnp.stack(w.mode_pi), jnp.stack(w.mode_c)
    regression = jnp.array([list(row) for row in w.regression])
    n = len(w.mode_c)
    factor = jnp.array(
        [[w.factor[i][j] if j <= i else 0.0 * w.factor[i][0] for j in range(n)] for i in range(n)]
    )
    rest = x[k:] - mode_c - regression @ (x[:k] - mode_pi)
    z_c = jax.scipy.linalg.solve_triangular(factor, rest, lower=True)
    return jnp.concatenate([x[:k], z_c])
