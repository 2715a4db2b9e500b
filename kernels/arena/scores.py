"""How well one arena's posterior ranks its systems, scored against their true strengths.

A simulated arena knows its truth; these scores say what its leaderboard got right: the
share of systems whose central rank interval holds its true rank, whether the
simultaneous rank sets hold every system's at once, the intervals' mean width in places,
whether the highest posterior mean strength is the true leader's, and the posterior
P(rank 1) of the true leader. Averaged over an arena's replicates they are the coverage,
width and leader rows of a leaderboard study (``scripts/arena_coverage.py``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from binmetric_sweep.kernels.arena.posterior import (
    rank_draws,
    rank_intervals,
    simultaneous_rank_sets,
)

__all__ = ["RankScores", "score_rankings"]


class RankScores(NamedTuple):
    """Each arena's scores, ``(B,)`` arrays.

    Attributes:
        held: share of its systems whose central ``level`` rank interval holds the true
            rank, in [0, 1].
        all_held: whether its simultaneous ``level`` rank sets hold every true rank (bool).
        width: mean places in a central interval (high − low + 1), in [1, S].
        widest: places in its widest central interval, in [1, S] (float).
        leader_first: whether the system of highest posterior mean strength is the true
            leader (bool).
        p_leader: the posterior probability that the true leader ranks first, in [0, 1].
    """

    held: np.ndarray
    all_held: np.ndarray
    width: np.ndarray
    widest: np.ndarray
    leader_first: np.ndarray
    p_leader: np.ndarray


def score_rankings(strengths: np.ndarray, truth: np.ndarray, level: float) -> RankScores:
    """Score each arena's posterior draws of the strengths against its true strengths.

    Args:
        strengths: ``(B, chains, samples, S)`` draws of each arena's strengths
            (:attr:`kernels.arena.posterior.BatchDraws.strengths`), or ``(B, M, S)``.
        truth: ``(B, S)`` the true strengths (distinct: the true ranks are then unique).
        level: the rank intervals' and sets' level, in (0, 1).

    Returns:
        :class:`RankScores` of the B arenas.
    """
    strengths, truth = np.asarray(strengths), np.asarray(truth)
    b, s = truth.shape
    draws = strengths.reshape(b, -1, s)
    scores = []
    for flat, true in zip(draws, truth, strict=True):
        ranks, rank = rank_draws(flat), rank_draws(true[None])[0]
        low, high = rank_intervals(ranks, level)
        set_low, set_high = simultaneous_rank_sets(ranks, level)
        leader = int(np.argmax(true))
        scores.append(
            (
                np.mean((low <= rank) & (rank <= high)),
                np.all((set_low <= rank) & (rank <= set_high)),
                np.mean(high - low + 1),
                np.max(high - low + 1),
                int(np.argmax(flat.mean(axis=0))) == leader,
                np.mean(ranks[:, leader] == 1),
            )
        )
    columns = zip(*scores, strict=True)
    dtypes = (np.float64, bool, np.float64, np.float64, bool, np.float64)
    return RankScores(*(np.asarray(c, d) for c, d in zip(columns, dtypes, strict=True)))
