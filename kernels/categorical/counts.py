"""Counts of a campaign with K-class ratings and J judges, and what they are laid out over.

A :class:`Layout` is static (hashable): the classes' values v and the number of
judges J, each judge answering in the same K classes, so that the judges' joint
verdict is one of L = K^J outcomes, numbered in row-major order of (l₁, …, l_J)
(judge 1 the most significant digit). :class:`CategoricalCounts` are one campaign's
observations on that layout (MODEL.md): h, T, m; and, where C is known, C itself.

Every function works on one lane (scalars and per-lane arrays); callers ``jax.vmap``.
Counts are floats (exact integers far beyond any size a sweep takes).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.counts import Counts, round_half_up

Array = jax.Array

__all__ = [
    "Layout",
    "CategoricalDesign",
    "CategoricalCounts",
    "binary_counts",
    "judged_rates",
    "rounded_parts",
    "expected_counts",
    "draw_multinomial",
    "draw_counts",
]


class Layout(NamedTuple):
    """What is rated and by how many judges (static).

    Attributes:
        values: v, the K classes' values, in class order (binary (0, 1); a preference
            between A, shown first, and B: (0, ½, 1) for (B better, tie, A better)).
        judges: J ≥ 1, the judges rating the same items, each in the K classes.
    """

    values: tuple[float, ...]
    judges: int = 1

    @property
    def classes(self) -> int:
        """K."""
        return len(self.values)

    @property
    def outcomes(self) -> int:
        """L = K^J joint verdicts."""
        return self.classes**self.judges

    def verdicts(self) -> np.ndarray:
        """``(L, J)`` int: judge j's class in joint outcome l (row-major, judge 1 first)."""
        k, j = self.classes, self.judges
        return np.array(np.unravel_index(np.arange(k**j), (k,) * j)).T.reshape(k**j, j)

    def judge_values(self) -> np.ndarray:
        """``(L, J)``: judge j's value v_{l_j} in joint outcome l."""
        return np.asarray(self.values, np.float64)[self.verdicts()]

    @property
    def is_binary(self) -> bool:
        """K = 2 and one judge: the binary model's layout (its values may be any two)."""
        return self.classes == 2 and self.judges == 1


class CategoricalDesign(NamedTuple):
    """One configuration of the categorical model (one lane; leading ``(B,)`` in a batch).

    Attributes:
        shares: ``(K,)`` π, the true share of each class (sums to 1).
        confusion: ``(K, L)`` C, the judges' joint confusion: C[k, l] = P(joint verdict l |
            true class k); each row sums to 1.
        n_phi: human-rated items N_Φ.
        n_rho_eta: paired items N_ρη (ignored for a shared paired set, where it is N_Φ,
            and where C is known, where there is none).
        paired_shares: ``(K,)`` ψ, the class shares of a separate paired set.
        n_m: judge-only items N_M.
        shared_paired: the human-rated items are the paired ones (T's row sums are h).
        known: C is known (no paired set).
    """

    shares: Array
    confusion: Array
    n_phi: Array
    n_rho_eta: Array
    paired_shares: Array
    n_m: Array
    shared_paired: Array
    known: Array


class CategoricalCounts(NamedTuple):
    """What one campaign observes (one lane; leading ``(B,)`` in a batch).

    Attributes:
        human: ``(K,)`` h, human-rated items per class (N_Φ = Σh).
        paired: ``(K, L)`` T, paired items by (human class, joint judge verdict)
            (N_ρη = ΣT; all zero where C is known).
        judged: ``(L,)`` m, judge-only items per joint verdict (N_M = Σm).
        confusion: ``(K, L)`` the known C where ``known``; otherwise unused.
        known: C is known.
    """

    human: Array
    paired: Array
    judged: Array
    confusion: Array
    known: Array


def binary_counts(counts: CategoricalCounts) -> Counts:
    """The binary model's :class:`kernels.counts.Counts` of K = 2, J = 1 counts (class 1 is
    "adequate", a judge's verdict 1 "says adequate"): the same campaign, so that the binary
    kernels (quadrature, NUTS, estimators) answer it. Leading axes are kept."""
    h, t, m, c = counts.human, counts.paired, counts.judged, counts.confusion
    return Counts(
        n_pos=h[..., 1],
        n_phi=h[..., 0] + h[..., 1],
        n_tp=t[..., 1, 1],
        n_pos_paired=t[..., 1, 0] + t[..., 1, 1],
        n_tn=t[..., 0, 0],
        n_neg_paired=t[..., 0, 0] + t[..., 0, 1],
        m_pos=m[..., 1],
        n_m=m[..., 0] + m[..., 1],
        rho=c[..., 1, 1],
        eta=c[..., 0, 0],
        rho_eta_known=jnp.asarray(counts.known, bool),
    )


def _as_float(design: CategoricalDesign) -> CategoricalDesign:
    dtype = jnp.result_type(float)
    floats = ("shares", "confusion", "n_phi", "n_rho_eta", "paired_shares", "n_m")
    return design._replace(
        **{name: jnp.asarray(getattr(design, name), dtype) for name in floats},
        shared_paired=jnp.asarray(design.shared_paired, bool),
        known=jnp.asarray(design.known, bool),
    )


def judged_rates(shares: Array, confusion: Array) -> Array:
    """``(L,)`` p = Cᵀπ, the probability of each joint verdict on an item of unknown class.

    Summed over classes in class order, without a matrix product: for K = 2 this is
    binary p = α·ρ + (1 − α)·(1 − η) to the bit (a product's accumulation order or a
    fused multiply-add could round it otherwise)."""
    return jnp.sum(shares[..., :, None] * confusion, axis=-2)


def rounded_parts(total: Array, parts: Array) -> Array:
    """Expected parts of ``total``, rounded so that they add up to it.

    Cumulative rounding from the highest part: S_j = round_half_up(Σ_{i≥j} x_i) (S_0 is
    ``total`` itself), part_j = S_j − S_{j+1}. Each part is within 1 of x_j, and the
    highest is round_half_up(x_top), as a binary count of successes is rounded.

    Args:
        total: N, ``(...)``.
        parts: x, ``(..., M)`` with Σx = N (up to rounding).

    Returns:
        ``(..., M)`` integer-valued floats summing to N exactly.
    """
    tails = jnp.cumsum(parts[..., ::-1], axis=-1)[..., ::-1]
    tails = round_half_up(tails[..., 1:])
    # The rounded tails never exceed the total, nor fall below 0 (parts of a negative
    # x from representation error).
    tails = jnp.clip(tails, 0.0, total[..., None])
    upper = jnp.concatenate([total[..., None], tails], axis=-1)
    lower = jnp.concatenate([tails, jnp.zeros_like(total)[..., None]], axis=-1)
    return upper - lower


def _counts(design, human, outcomes, judged) -> CategoricalCounts:
    known = design.known
    return CategoricalCounts(
        human=human,
        paired=jnp.where(known, 0.0, outcomes),
        judged=judged,
        confusion=design.confusion,
        known=known,
    )


def _row_totals(design: CategoricalDesign, human: Array, separate: Array) -> Array:
    """``(K,)`` T's row sums: h (shared paired set), a separate set's classes, or 0 (C known)."""
    rows = jnp.where(design.shared_paired, human, separate)
    return jnp.where(design.known, 0.0, rows)


def expected_counts(design: CategoricalDesign) -> CategoricalCounts:
    """Every count at its expected value, each total kept (:func:`rounded_parts`).

    h from N_Φ·π; T's rows total h (shared), the parts of N_ρη·ψ (separate) or 0 (C
    known), and row k's outcomes are the parts of T_k·C_k; m from N_M·Cᵀπ. For K = 2,
    J = 1 this gives the binary model's n₊, P, n_ρ and m₊ to the bit; its n_η is the
    complement of the rounded count of paired negatives the judge calls 1, which differs
    from binary's round(η·(N_ρη − P)) by one where η·(N_ρη − P) is an exact half.
    """
    design = _as_float(design)
    human = rounded_parts(design.n_phi, design.n_phi * design.shares)
    separate = rounded_parts(design.n_rho_eta, design.n_rho_eta * design.paired_shares)
    rows = _row_totals(design, human, separate)
    outcomes = rounded_parts(rows, rows[:, None] * design.confusion)
    rates = judged_rates(design.shares, design.confusion)
    judged = rounded_parts(design.n_m, design.n_m * rates)
    return _counts(design, human, outcomes, judged)


def draw_multinomial(key: Array, total: Array, probs: Array) -> Array:
    """Multinomial(N, p) draws by conditional binomials, from the highest part down.

    x_top ~ Bin(N, p_top), then each part given the ones above it, x_j ~ Bin(N − Σ_{i>j}
    x_i, p_j / Σ_{i≤j} p_i), and x_0 the remainder, so that the parts add up to N
    exactly. Each step draws every row at once (one binomial per step; the rows
    independent), the step's key ``fold_in(key, j)``.

    Args:
        key: a PRNG key.
        total: N, ``(...)`` integer-valued floats.
        probs: p, ``(..., M)``, each row summing to 1 (up to rounding; rows with
            Σp = 0 are given all of N in part 0).

    Returns:
        ``(..., M)`` counts, summing to N over the last axis.
    """
    dtype = total.dtype
    # Σ_{i≤j} p_i for each j, from the probabilities themselves (not 1 − the rest).
    heads = jnp.cumsum(probs, axis=-1)
    conditional = jnp.where(heads > 0, probs / jnp.where(heads > 0, heads, 1.0), 0.0)
    conditional = jnp.clip(conditional, 0.0, 1.0)

    def step(left, j):
        part = jax.random.binomial(
            jax.random.fold_in(key, j), left, conditional[..., j], dtype=dtype
        )
        return left - part, part

    size = probs.shape[-1]
    left, upper = jax.lax.scan(step, total, jnp.arange(size - 1, 0, -1))
    return jnp.concatenate([left[..., None], jnp.moveaxis(upper[::-1], 0, -1)], axis=-1)


def draw_counts(key: Array, design: CategoricalDesign) -> CategoricalCounts:
    """Fresh multinomial counts of one replicate (the sampled method).

    h ~ Mult(N_Φ, π); T's rows total h (shared) or ~ Mult(N_ρη, ψ) (separate), none where
    C is known; row k's outcomes ~ Mult(T_k·, C_k); m ~ Mult(N_M, Cᵀπ). Every total is
    kept exactly.

    Args:
        key: the replicate's key (:func:`kernels.counts.replicate_key`); the counts use
            ``fold_in(key, 0)`` (other consumers take other tags), split four ways:
            human, separate paired set, paired outcomes, judge-only.
        design: one configuration (one lane).
    """
    design = _as_float(design)
    k_human, k_paired, k_outcomes, k_judged = jax.random.split(jax.random.fold_in(key, 0), 4)
    human = draw_multinomial(k_human, design.n_phi, design.shares)
    separate = draw_multinomial(k_paired, design.n_rho_eta, design.paired_shares)
    rows = _row_totals(design, human, separate)
    outcomes = draw_multinomial(k_outcomes, rows, design.confusion)
    rates = judged_rates(design.shares, design.confusion)
    judged = draw_multinomial(k_judged, design.n_m, rates)
    return _counts(design, human, outcomes, judged)
