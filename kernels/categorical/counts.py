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

from binmetric_sweep.kernels.counts import Counts

Array = jax.Array

__all__ = ["Layout", "CategoricalDesign", "CategoricalCounts", "binary_counts"]


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
