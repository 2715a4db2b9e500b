"""How well one arena's posterior ranks its systems, scored against their true strengths.

A simulated arena knows its truth; these scores say what its leaderboard got right: the
share of systems whose central rank interval holds its true rank, whether the
simultaneous rank sets hold every system's at once, the intervals' and the sets' mean
width in places, whether the highest posterior mean strength is the true leader's, and the
posterior P(rank 1) of the true leader (:func:`score_rankings`). Averaged over an arena's
replicates they are the coverage, width and leader rows of a leaderboard study
(``scripts/arena_coverage.py``, arena sweeps).

Prediction-powered ranking (:mod:`kernels.arena.ppr`) has rank sets and no posterior:
:func:`score_ppr` scores its sets as both the intervals and the sets, its highest estimated
win rate as the leader named, and has no P(rank 1) (NaN).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from binmetric_sweep.kernels.arena.cells import NONE
from binmetric_sweep.kernels.arena.posterior import (
    rank_draws,
    rank_intervals,
    simultaneous_rank_sets,
)
from binmetric_sweep.kernels.arena.ppr import battles_played, ppr_win_rates, rank_sets
from binmetric_sweep.kernels.arena.simulate import cells_of

__all__ = ["RankScores", "score_ppr", "score_rankings"]


class RankScores(NamedTuple):
    """Each arena's scores, ``(B,)`` arrays.

    Attributes:
        held: share of its systems whose central ``level`` rank interval holds the true
            rank, in [0, 1].
        all_held: whether its simultaneous ``level`` rank sets hold every true rank (bool).
        width: mean places in a central interval (high − low + 1), in [1, S].
        widest: places in its widest central interval, in [1, S] (float).
        set_width: mean places in a simultaneous rank set, in [1, S].
        leader_first: whether the system of highest posterior mean strength is the true
            leader (bool).
        p_leader: the posterior probability that the true leader ranks first, in [0, 1].
    """

    held: np.ndarray
    all_held: np.ndarray
    width: np.ndarray
    widest: np.ndarray
    set_width: np.ndarray
    leader_first: np.ndarray
    p_leader: np.ndarray


def _scored(rows: list[tuple]) -> RankScores:
    """:class:`RankScores` of one tuple of scores per arena, in the fields' order."""
    dtypes = (np.float64, bool, np.float64, np.float64, np.float64, bool, np.float64)
    columns = zip(*rows, strict=True)
    return RankScores(*(np.asarray(c, d) for c, d in zip(columns, dtypes, strict=True)))


def _row(low, high, set_low, set_high, rank, named_leader: bool, p_leader: float) -> tuple:
    """One arena's scores from its intervals and sets ``(S,)`` and its true ranks ``(S,)``."""
    return (
        np.mean((low <= rank) & (rank <= high)),
        np.all((set_low <= rank) & (rank <= set_high)),
        np.mean(high - low + 1),
        np.max(high - low + 1),
        np.mean(set_high - set_low + 1),
        named_leader,
        p_leader,
    )


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
    rows = []
    for flat, true in zip(draws, truth, strict=True):
        ranks, rank = rank_draws(flat), rank_draws(true[None])[0]
        leader = int(np.argmax(true))
        named = int(np.argmax(flat.mean(axis=0))) == leader
        p_leader = np.mean(ranks[:, leader] == 1)
        rows.append(
            _row(
                *rank_intervals(ranks, level),
                *simultaneous_rank_sets(ranks, level),
                rank,
                named,
                p_leader,
            )
        )
    return _scored(rows)


def score_ppr(counts: np.ndarray, truth: np.ndarray, level: float, judge: int = 0) -> RankScores:
    """Score prediction-powered ranking's rank sets of simulated arenas against the truth.

    Each arena's PPI win rates (:func:`kernels.arena.ppr.ppr_win_rates`, λ power-tuned) from
    its human verdicts and judge ``judge``'s verdicts on every battle (the human verdicts
    alone where every battle has one, or the arena has no judge), and their χ² rank sets at
    ``level`` (:func:`kernels.arena.ppr.rank_sets`). Where a system has no battle with a
    human verdict the estimate does not exist: every set is the whole board and no leader
    is named. The true ranks are the strengths' order, which is the true win rates' where
    every ordered pair plays equally often (an arena sweep's design).

    Args:
        counts: ``(B, S, S, 3, 2, 3^J)`` each arena's battles by cell
            (:func:`kernels.arena.simulate.draw_arena_counts`).
        truth: ``(B, S)`` the true strengths (distinct).
        level: the rank sets' level, in (0, 1).
        judge: the judge whose verdicts enter.

    Returns:
        :class:`RankScores` of the B arenas; the sets stand in for the central intervals too,
        and ``p_leader`` is NaN.
    """
    counts, truth = np.asarray(counts), np.asarray(truth)
    s = truth.shape[1]
    rows = []
    for lane, true in zip(counts, truth, strict=True):
        cells = cells_of(lane)
        rank = rank_draws(true[None])[0]
        seen = cells.human != NONE
        if np.any(battles_played(cells.a[seen], cells.b[seen], cells.count[seen], s) == 0):
            whole = np.ones(s, int), np.full(s, s)
            rows.append(_row(*whole, *whole, rank, False, np.nan))
            continue
        judged = cells.judges > 0 and not np.all(seen)
        estimate = ppr_win_rates(cells, s, judge if judged else None)
        sets = rank_sets(estimate.theta, estimate.cov, level)
        named = int(np.argmax(estimate.theta)) == int(np.argmax(true))
        rows.append(_row(*sets, *sets, rank, named, np.nan))
    return _scored(rows)
