"""A conjugate Gibbs sampler of the categorical posterior: the tests' yardstick for NUTS.

Written from MODEL.md alone, independently of kernels/categorical's density and sampler
(it imports neither). Data augmentation (Tanner & Wong 1987): the judge-only items' true
classes are the missing data, and given them every parameter has a Dirichlet conditional.

- z given (π, C): for each joint verdict l, the m_l items' classes ~ Mult(m_l, π_k C[k, l]
  / Σ_k' π_k' C[k', l]).
- π given z: Dir(h + 1 + Σ_l z_kl).
- C given z: joint judges, row k ~ Dir(T_k + 1 + z_k·); independent judges, judge j's row
  k ~ Dir(T_j[k] + 1 + z_j[k]), from each judge's marginal counts of the paired and the
  augmented items, and C[k, l] = Π_j C_j[k, l_j]; known C stays as given.

Vectorised in NumPy over (lanes, chains); θ = vᵀπ is kept at every iteration.
"""

from __future__ import annotations

import numpy as np


def _dirichlet(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    """Dir(a) over the last axis, any leading shape (normalised Gammas)."""
    g = rng.standard_gamma(a)
    return g / g.sum(-1, keepdims=True)


def _per_judge(x: np.ndarray, verdicts: np.ndarray, k: int) -> np.ndarray:
    """``(..., J, K, K)``: Σ over joint outcomes l with judge j saying c of x[..., k, l]."""
    onehot = (verdicts.T[:, :, None] == np.arange(k)).astype(float)  # (J, L, K)
    return np.einsum("...kl,jlc->...jkc", x, onehot)


def _joint_confusion(per_judge: np.ndarray, verdicts: np.ndarray) -> np.ndarray:
    """``(..., K, L)`` Π_j C_j[k, l_j] from ``(..., J, K, K)`` judge matrices."""
    out = 1.0
    for j in range(verdicts.shape[1]):
        out = out * np.take(per_judge[..., j, :, :], verdicts[:, j], axis=-1)
    return out


def gibbs_theta(
    human: np.ndarray,
    paired: np.ndarray,
    judged: np.ndarray,
    values,
    judges: int = 1,
    independent: bool = False,
    confusion: np.ndarray | None = None,
    chains: int = 8,
    iterations: int = 5000,
    burn: int = 500,
    seed: int = 0,
) -> np.ndarray:
    """θ draws of the categorical posterior by data-augmentation Gibbs.

    Args:
        human: ``(B, K)`` h.
        paired: ``(B, K, L)`` T (ignored where ``confusion`` is given).
        judged: ``(B, L)`` m.
        values: the K classes' values v.
        judges: J (L = K^J; joint verdicts in row-major order of the judges' classes).
        independent: judges independent given the truth.
        confusion: ``(B, K, L)`` a known C, or None to sample it.
        chains, iterations, burn: chains per lane, iterations kept, iterations discarded.
        seed: NumPy's generator seed.

    Returns:
        ``(B, chains, iterations)`` θ = vᵀπ.
    """
    rng = np.random.default_rng(seed)
    h, t, m = (np.asarray(x, float) for x in (human, paired, judged))
    b, k = h.shape
    values = np.asarray(values, float)
    verdicts = np.array(np.unravel_index(np.arange(k**judges), (k,) * judges)).T
    h = np.repeat(h[:, None], chains, 1)
    t = np.repeat(t[:, None], chains, 1)
    m_int = np.repeat(m[:, None], chains, 1).astype(np.int64)
    factorised = independent and judges > 1

    def draw_confusion(extra):
        if factorised:
            return _joint_confusion(
                _dirichlet(rng, _per_judge(t + extra, verdicts, k) + 1.0), verdicts
            )
        return _dirichlet(rng, t + extra + 1.0)

    # Start from the posterior without the judge-only items.
    pi = _dirichlet(rng, h + 1.0)
    if confusion is not None:
        c = np.repeat(np.asarray(confusion, float)[:, None], chains, 1)
    else:
        c = draw_confusion(0.0)
    out = np.empty((b, chains, iterations))
    for i in range(burn + iterations):
        w = pi[..., :, None] * c  # (B, chains, K, L)
        total = w.sum(-2, keepdims=True)
        # A verdict no class can give (a known C's zero column) has m_l = 0: any p serves.
        probs = np.where(total > 0, w / np.where(total > 0, total, 1.0), 1.0 / k)
        z = rng.multinomial(m_int, np.moveaxis(probs, -1, -2))  # (B, chains, L, K)
        z = np.moveaxis(z, -1, -2).astype(float)  # (B, chains, K, L)
        pi = _dirichlet(rng, h + 1.0 + z.sum(-1))
        if confusion is None:
            c = draw_confusion(z)
        if i >= burn:
            out[..., i - burn] = pi @ values
    return out
