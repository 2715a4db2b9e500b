"""Documented families of class shares and judge confusions, for sweeps' grids.

Each function builds one lane's π or C from a few numbers a campaign can reason
about (docs/ratings.md); NumPy or JAX arrays alike (``xp``-free: only arithmetic
and stacking through ``jnp``), so a shard builds them for all its lanes at once.

Preferences order their classes (B better, tie, A better), A being the output
shown first, with values v = (0, ½, 1): θ = π_A + ½·π_tie is A's win rate with
ties counted half.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array

__all__ = [
    "PREFERENCE_VALUES",
    "preference_shares",
    "preference_confusion",
    "scale_confusion",
    "copying_judges",
]

#: The values of the preference classes (B better, tie, A better).
PREFERENCE_VALUES = (0.0, 0.5, 1.0)


def preference_shares(win: Array, tie: Array) -> Array:
    """``(..., 3)`` π = (1 − win − tie, tie, win): A is better on a share ``win`` of the
    items, they tie on ``tie`` (win + tie ≤ 1)."""
    win, tie = jnp.asarray(win), jnp.asarray(tie)
    return jnp.stack([1.0 - win - tie, tie, win], axis=-1)


def preference_confusion(accuracy: Array, tie_rate: Array, position_bias: Array) -> Array:
    """``(..., 3, 3)`` C of a preference judge that knows the answer with probability
    ``accuracy`` and otherwise guesses.

    A guess is "tie" with probability ``tie_rate``, else "A better" or "B better" with
    probabilities (1 ± ``position_bias``)/2 (``position_bias`` in [−1, 1]: +1 always A,
    the side shown first; 0 no preferred side). So C[k] = accuracy·e_k + (1 −
    accuracy)·g, g = ((1 − t)(1 − b)/2, t, (1 − t)(1 + b)/2): the judge is right with
    probability accuracy + (1 − accuracy)·g_k (a guess may be right), every row sums
    to 1, and a judge with accuracy 0 answers g whatever the truth (no information).
    """
    a, t, b = (jnp.asarray(x)[..., None, None] for x in (accuracy, tie_rate, position_bias))
    guess = jnp.concatenate([(1.0 - t) * (1.0 - b) / 2.0, t, (1.0 - t) * (1.0 + b) / 2.0], axis=-1)
    return a * jnp.eye(3) + (1.0 - a) * guess


def scale_confusion(off_by_one: Array, off_by_more: Array, classes: int) -> Array:
    """``(..., K, K)`` C of a judge on an ordered scale of K classes (a 1–5 score) that is
    off by one class with probability ``off_by_one`` and off by two or more with
    probability ``off_by_more``, and otherwise right.

    Distance is in the order the classes are listed. An error of one class goes to the
    class's neighbours equally (all of it to the one neighbour of an end class); an
    error of more goes equally to every class two or more away. A class with none two
    or more away (K = 2; the middle of K = 3) keeps that share right, so every row sums
    to 1 (``off_by_one + off_by_more`` ≤ 1).
    """
    a, b = (jnp.asarray(x)[..., None, None] for x in (off_by_one, off_by_more))
    distance = jnp.abs(jnp.arange(classes)[:, None] - jnp.arange(classes)[None, :])
    near = (distance == 1).astype(a.dtype)
    far = (distance >= 2).astype(a.dtype)
    n_far = far.sum(axis=-1, keepdims=True)
    near_share = near / near.sum(axis=-1, keepdims=True)
    far_share = far / jnp.maximum(n_far, 1.0)
    right = 1.0 - a - jnp.where(n_far > 0, b, 0.0)
    return right * jnp.eye(classes) + a * near_share + b * far_share


def copying_judges(confusion: Array, judges: int, copy: Array) -> Array:
    """``(..., K, K^J)`` joint confusion of ``judges`` judges, each with confusion
    ``confusion`` ``(..., K, K)``, whose errors are correlated through ``copy``.

    Judge 1 answers from its row; each later judge repeats judge 1's verdict with
    probability ``copy`` and otherwise answers from its own row, independently given
    the truth: C[k, (l₁, …, l_J)] = C[k, l₁]·Π_{j≥2} ((1 − c)·C[k, l_j] + c·[l_j = l₁]).
    With c = 0 the judges err independently given the truth; with c = 1 every judge
    says what the first says. Each later judge's own confusion is then (1 − c)·C + c·C
    = C: copying changes how the judges agree, not how accurate each is. Joint
    verdicts are numbered row-major, judge 1 first (:class:`kernels.categorical.counts.Layout`).
    """
    confusion = jnp.asarray(confusion)
    k = confusion.shape[-1]
    c = jnp.asarray(copy)[..., None, None, None]
    joint = confusion  # (..., K, K^j) after j judges
    for _ in range(judges - 1):
        # (..., K, K^j, K): the next judge's verdict given the first's (l₁ is the leading
        # digit of the joint verdict: index // K^(j−1)).
        width = joint.shape[-1]
        first = jnp.arange(width) // (width // k)
        repeats = (first[:, None] == jnp.arange(k)[None, :]).astype(confusion.dtype)
        later = (1.0 - c) * confusion[..., :, None, :] + c * repeats
        joint = (joint[..., :, :, None] * later).reshape(*confusion.shape[:-1], width * k)
    return joint
