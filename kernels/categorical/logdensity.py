"""Log posterior density of (π, C) in unconstrained coordinates (MODEL.md, "Ratings with more
than two classes, and several judges").

    p(π, C | h, T, m) ∝ Dir(π; h + 1) · Π_k Dir(C_k; T_k + 1) · Mult(m | N_M, Cᵀπ)

Coordinates. Each distribution q over M parts (π over the K classes, a row of C over its
outcomes) is sampled in its additive log-ratios with part 0 as the reference, y_i = log q_i
− log q_0 (i ≥ 1), so that q = softmax(0, y). The map's Jacobian is |∂(q_1…q_{M−1})/∂y| =
Π_{i=0}^{M−1} q_i (the determinant of diag(q') − q'q'ᵀ), so a Dirichlet with exponents a
has density Π_i q_i^(a_i − 1) · Π_i q_i = Π_i q_i^(a_i) in y: with a = h + 1, the log
density's term is Σ_k (h_k + 1) log π_k. For K = 2 the coordinate is logit π_1, the binary
model's logit α, and the term its (n₊ + 1)·x − (N_Φ + 2)·softplus(x).

Judges. With J ≥ 2 judges C's rows are distributions over the L = K^J joint verdicts:
``joint`` samples each row of C itself (any correlation between the judges);
``independent`` samples each judge's K × K matrix C_j, C[k, l] = Π_j C_j[k, l_j], and
T enters through each judge's marginal counts (the paired likelihood Π T_kl log C_kl is
Σ_j Σ_c T_j[k, c] log C_j[k, c]), with Dirichlet(1) priors on each row of each C_j. For
J = 1 the two are one model. Where C is known only π is sampled.

Accuracy. log p_l = logsumexp_k(log π_k + log C[k, l]) from the log-softmax of the
coordinates, so no probability loses relative accuracy near 0; every term Σ_i n_i log q_i
is evaluated *centred*, Σ_i n_i (log q_i − log q̂_i) at the observed shares q̂ (the counts
plus ½, normalised), so near the mode the density is of order the dimension, not of N_M
(10^7 items make an uncentred value of order 10^7, whose last digits an energy difference
would need in float32). The density is finite at every finite position, empty groups
included; a known C with zeros has them floored at 1e-300 (as the binary model's known ρ,
η), which keeps log p finite and its gradient defined.

Every function here is one lane's and is written over each coordinate's scalar (a
position is a tuple of d arrays, or a ``(d,)`` array), as :mod:`kernels.stepwise` and
the chain kernel take it: nothing slices, gathers or reduces across a lane's coordinates.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout

Array = jax.Array

__all__ = [
    "position_size",
    "row_sizes",
    "DensityTerms",
    "density_terms",
    "log_simplex",
    "log_parameters",
    "theta",
    "logdensity",
    "alr",
]


def row_sizes(layout: Layout, independent: bool = False, known: bool = False) -> tuple[int, ...]:
    """The parts of each sampled distribution, in the position's order: π's K, then
    each row of C (K rows of L joint outcomes) or of each judge's C_j (J·K rows of K,
    judge by judge) with ``independent``; no rows where C is known."""
    k, outcomes = layout.classes, layout.outcomes
    if known:
        return (k,)
    if independent and layout.judges > 1:
        return (k,) + (k,) * (layout.judges * k)
    return (k,) + (outcomes,) * k


def position_size(layout: Layout, independent: bool = False, known: bool = False) -> int:
    """Dimension d of the sampled position: K − 1 (C known); (K − 1) + K·(L − 1) (joint);
    (K − 1) + J·K·(K − 1) (independent judges). For K = 2, J = 1: 1 or 3, as binary."""
    return sum(size - 1 for size in row_sizes(layout, independent, known))


class DensityTerms(NamedTuple):
    """The numbers one lane's density reads, each a scalar (``(B,)`` in a batch).

    Laid out as tuples of scalars so that every leaf is one number per lane, as the
    chain kernel takes its arguments (:mod:`kernels.chain_kernel`).

    Attributes:
        exponents: one tuple per sampled distribution (:func:`row_sizes`' order): its
            Dirichlet exponents in the coordinates, the counts + 1 (prior and Jacobian).
        centres: the same shape: log of the exponents' shares, where each term is centred.
        judged: ``(L,)`` m.
        judged_centres: ``(L,)`` log((m_l + ½)/(N_M + L/2)).
        log_confusion: K tuples of L: log C (floored) where C is known; else empty.
    """

    exponents: tuple[tuple[Array, ...], ...]
    centres: tuple[tuple[Array, ...], ...]
    judged: tuple[Array, ...]
    judged_centres: tuple[Array, ...]
    log_confusion: tuple[tuple[Array, ...], ...]


def _judge_marginals(paired: Array, layout: Layout) -> Array:
    """``(..., J, K, K)``: T_j[k, c], paired items of class k that judge j calls c."""
    verdicts = layout.verdicts()  # (L, J)
    k = layout.classes
    # (J, L, K) indicators: joint outcome l has judge j saying c.
    onehot = (verdicts.T[:, :, None] == np.arange(k)).astype(np.float64)
    return jnp.einsum("...kl,jlc->...jkc", paired, jnp.asarray(onehot, paired.dtype))


def _centred(counts: Array) -> Array:
    """log((n_i + ½)/(Σn + M/2)) over the last axis: interior even for empty parts."""
    shifted = counts + 0.5
    return jnp.log(shifted) - jnp.log(jnp.sum(shifted, axis=-1, keepdims=True))


def _unstack(x: Array) -> tuple[Array, ...]:
    return tuple(x[..., i] for i in range(x.shape[-1]))


def density_terms(
    counts: CategoricalCounts, layout: Layout, independent: bool = False, known: bool = False
) -> DensityTerms:
    """:class:`DensityTerms` of counts with any leading axes (a lane, or ``(B,)`` lanes).

    ``known`` is static and selects the model (the counts' own ``known`` is not read).
    """
    human, paired, judged = counts.human, counts.paired, counts.judged
    if known:
        rows = ()
        log_c = jnp.log(jnp.maximum(counts.confusion, 1e-300))
        log_confusion = tuple(_unstack(log_c[..., k, :]) for k in range(layout.classes))
    elif independent and layout.judges > 1:
        marginals = _judge_marginals(paired, layout)  # (..., J, K, K)
        rows = tuple(
            marginals[..., j, k, :] for j in range(layout.judges) for k in range(layout.classes)
        )
        log_confusion = ()
    else:
        rows = tuple(paired[..., k, :] for k in range(layout.classes))
        log_confusion = ()
    exponents = tuple(x + 1.0 for x in (human, *rows))
    return DensityTerms(
        exponents=tuple(_unstack(a) for a in exponents),
        centres=tuple(_unstack(_centred(a)) for a in exponents),
        judged=_unstack(judged),
        judged_centres=_unstack(_centred(judged)),
        log_confusion=log_confusion,
    )


def _max(xs) -> Array:
    return functools.reduce(jnp.maximum, xs)


def _logsumexp(xs) -> Array:
    """log Σ exp(x) over a sequence of scalars, shifted by their maximum."""
    top = _max(xs)
    return top + jnp.log(sum(jnp.exp(x - top) for x in xs))


def log_simplex(ratios) -> tuple[Array, ...]:
    """log q of q = softmax(0, y): the M log-probabilities from M − 1 log-ratios y."""
    zero = jnp.zeros_like(ratios[0])
    parts = (zero, *ratios)
    total = _logsumexp(parts)
    return tuple(x - total for x in parts)


def _split(position, sizes: tuple[int, ...]) -> list[tuple[Array, ...]]:
    coordinates = [position[i] for i in range(sum(s - 1 for s in sizes))]
    out, start = [], 0
    for size in sizes:
        out.append(tuple(coordinates[start : start + size - 1]))
        start += size - 1
    return out


def log_parameters(
    position, layout: Layout, independent: bool = False, terms: DensityTerms | None = None
) -> tuple[tuple[Array, ...], tuple[tuple[Array, ...], ...]]:
    """(log π, log C) at ``position``: K scalars, and K tuples of L.

    Where ``terms`` carries a known C (its ``log_confusion``), the position is π's alone.
    With ``independent`` judges log C[k, l] = Σ_j log C_j[k, l_j].
    """
    known = terms is not None and len(terms.log_confusion) > 0
    sizes = row_sizes(layout, independent, known)
    groups = [log_simplex(g) for g in _split(position, sizes)]
    log_pi, rows = groups[0], groups[1:]
    if known:
        return log_pi, terms.log_confusion
    k = layout.classes
    if independent and layout.judges > 1:
        verdicts = layout.verdicts()
        per_judge = [rows[j * k : (j + 1) * k] for j in range(layout.judges)]
        log_c = tuple(
            tuple(
                sum(per_judge[j][row][int(verdicts[l, j])] for j in range(layout.judges))
                for l in range(layout.outcomes)  # noqa: E741 - MODEL.md's l
            )
            for row in range(k)
        )
        return log_pi, log_c
    return log_pi, tuple(rows)


def theta(position, layout: Layout) -> Array:
    """θ = vᵀπ at ``position`` (π's coordinates come first, in every model)."""
    log_pi = log_simplex([position[i] for i in range(layout.classes - 1)])
    return sum(v * jnp.exp(x) for v, x in zip(layout.values, log_pi, strict=True))


def _term(log_probs, counts, centres) -> Array:
    """Σ_i n_i (log q_i − log q̂_i); an empty part adds 0 (also where log q_i = −inf)."""
    return sum(
        jnp.where(n > 0, n * (x - c), 0.0)
        for x, n, c in zip(log_probs, counts, centres, strict=True)
    )


def logdensity(position, terms: DensityTerms, layout: Layout, independent: bool = False) -> Array:
    """Log posterior density at ``position``, up to an additive constant.

    Args:
        position: ``(d,)`` or d scalars, d = :func:`position_size` of the model (C known
            where ``terms.log_confusion`` is non-empty).
        terms: one lane's :func:`density_terms`.
        layout: the classes' values and the number of judges (static).
        independent: judges independent given the truth (static; as in
            :func:`density_terms`).

    Returns:
        A scalar, finite at every finite position.
    """
    known = len(terms.log_confusion) > 0
    sizes = row_sizes(layout, independent, known)
    groups = [log_simplex(g) for g in _split(position, sizes)]
    value = sum(
        _term(g, a, c) for g, a, c in zip(groups, terms.exponents, terms.centres, strict=True)
    )
    log_pi, log_c = log_parameters(position, layout, independent, terms)
    log_p = [
        _logsumexp([log_pi[k] + log_c[k][l] for k in range(layout.classes)])
        for l in range(layout.outcomes)  # noqa: E741
    ]
    return value + _term(log_p, terms.judged, terms.judged_centres)


def alr(probs: Array) -> Array:
    """``(..., M − 1)`` log-ratios log q_i − log q_0 of ``(..., M)`` probabilities (floored
    at 1e-300): the inverse of :func:`log_simplex`, to start chains from drawn q."""
    logs = jnp.log(jnp.maximum(probs, 1e-300))
    return logs[..., 1:] - logs[..., :1]
