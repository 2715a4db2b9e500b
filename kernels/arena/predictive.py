"""Where does Bradley–Terry fail? A posterior predictive check of each pair's human verdicts.

The strengths model gives every pair of systems the Davidson outcome distribution of
s_i − s_j and ν: S numbers for S(S − 1)/2 pairs' distributions. A pair whose human verdicts
disagree with what the strengths, fitted to every battle, predict for it is where the
assumption fails: an intransitive triple, or a pair that ties more often than ν allows.

For a pair with human verdicts y over n battles (i worse, tie, i better; i < j, sides
folded: the truth has no side) and each posterior draw m of its π_m, the discrepancy is
Pearson's

    D(y, π_m) = Σ_o (y_o − n·π_mo)² / (n·π_mo),

a replicate is y_rep ~ Multinomial(n, π_m), and the pair's posterior predictive p-value is
the share of draws with D(y_rep, π_m) ≥ D(y, π_m) (Gelman, Meng and Stern 1996), counted
as (1 + k)/(1 + M) of M draws. The draws
have seen y, so the p-values are conservative (their distribution under the model is
concentrated towards ½, not uniform); a small one is evidence against the model for that
pair. The pairs' p-values are Holm-adjusted together (:func:`.heterogeneity.holm`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from binmetric_sweep.kernels.arena.cells import NONE, BattleCells, pair_index
from binmetric_sweep.kernels.arena.heterogeneity import holm

__all__ = ["PairCheck", "pair_outcomes", "pair_predictive_check"]


class PairCheck(NamedTuple):
    """Each unordered pair's check (i < j, row-major, as ``ArenaDraws.pairs``).

    Attributes:
        observed: ``(P, 3)`` human verdicts (i worse, tie, i better).
        expected: ``(P, 3)`` their posterior predictive mean, n·E[π].
        p_value: ``(P,)`` the posterior predictive p-value (NaN for a pair without a human
            verdict).
        p_holm: ``(P,)`` Holm-adjusted over the pairs with a p-value.
        misfits: ``(P,)`` bool, p_holm < alpha.
        alpha: the level of ``misfits``.
    """

    observed: np.ndarray
    expected: np.ndarray
    p_value: np.ndarray
    p_holm: np.ndarray
    misfits: np.ndarray
    alpha: float


def pair_outcomes(cells: BattleCells, systems: int) -> np.ndarray:
    """``(P, 3)`` the human verdicts of each unordered pair i < j as (i worse, tie, i
    better), whichever side i was shown on."""
    known = cells.human != NONE
    a, b, human = cells.a[known], cells.b[known], cells.human[known]
    pair = pair_index(a, b, systems)
    outcome = np.where(a < b, human, 2 - human)  # classes are (B better, tie, A better)
    out = np.zeros((systems * (systems - 1) // 2, 3))
    np.add.at(out, (pair, outcome), cells.count[known])
    return out


def _pearson(y: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Σ over the last axis of (y − E)² / E, terms with E = 0 left out."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(expected > 0, (y - expected) ** 2 / expected, 0.0)
    return terms.sum(axis=-1)


def pair_predictive_check(
    pairs: np.ndarray, observed: np.ndarray, rng: np.random.Generator, alpha: float = 0.05
) -> PairCheck:
    """Each pair's posterior predictive p-value (see the module's text).

    Args:
        pairs: ``(M, P, 3)`` posterior draws of each pair's π (``ArenaDraws.pairs``).
        observed: ``(P, 3)`` :func:`pair_outcomes`.
        rng: the replicates' generator.
        alpha: the Holm-adjusted level of ``misfits``, in (0, 1).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha: {alpha}, expected a number in (0, 1)")
    n = observed.sum(axis=-1)  # (P,)
    pi = np.clip(pairs, 0.0, None)
    pi = pi / pi.sum(axis=-1, keepdims=True)
    expected = n[None, :, None] * pi  # (M, P, 3)
    replicates = rng.multinomial(np.broadcast_to(n.astype(np.int64), pi.shape[:2]), pi)
    exceeds = _pearson(replicates, expected) >= _pearson(observed[None], expected)
    # (1 + count)/(1 + M): a Monte Carlo p-value is never 0.
    p_value = np.where(n > 0, (1.0 + exceeds.sum(axis=0)) / (1.0 + len(pi)), np.nan)
    p_holm = holm(p_value)
    return PairCheck(
        observed=observed,
        expected=expected.mean(axis=0),
        p_value=p_value,
        p_holm=p_holm,
        misfits=np.where(n > 0, p_holm < alpha, False),
        alpha=float(alpha),
    )
