"""What to judge next: the pairs whose next human verdicts shrink the rank intervals most.

For a pair p and k more human verdicts on it, the verdict counts y = (i worse, tie, i
better) follow the posterior predictive: a draw m of the posterior, then
y ~ Multinomial(k, π_p,m). Had y been seen, the posterior would be the current one
reweighted by its likelihood: draw m's weight is Π_c π_p,m,c^{y_c}, normalised (importance
reweighting of the draws already in hand, no new fit). The weighted central rank intervals
(:func:`weighted_rank_intervals`) then give the width after; its mean over a few dozen
simulated y is the expected width after k verdicts on p, and current − expected the
expected reduction. A human verdict is the truth and has no side, so the sides of the new
battles do not matter; the judges' verdicts on them are left out (they inform the
confusions, not the strengths, once the truth is seen).

The weights' effective sample size (Σw)²/Σw² says when reweighting can be trusted: k
verdicts that move the posterior far leave few draws with weight, and the quantiles of the
intervals' ends rest on them. An estimate is ``trusted`` when, in every simulation, the
effective draws beyond each end of an interval (ESS · tail) are at least
:data:`MIN_TAIL_DRAWS`.

Cost: O(Q · simulations · M · S²) for Q candidate pairs, M draws, S systems (a matrix
product of the weights with the draws' one-hot ranks), in chunks of :data:`CHUNK_BYTES`;
the one-hot ranks take M · S² · 8 bytes. Every pair of a few dozen systems is cheap; for
a hundred, pass ``candidates`` (the pairs with a system whose interval is wide, say) or
fewer draws.

The width is a step function of the weights, so that k verdicts can widen an interval
(a tail share crossing (1 − level)/2): a pair's expected reduction may be negative.

::

    result = next_verdicts(key, draws.strengths, draws.pairs, level=0.95)
    result.first[0], result.second[0]   # the pair to judge next
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.arena.posterior import rank_draws

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_K",
    "DEFAULT_SIMULATIONS",
    "MIN_TAIL_DRAWS",
    "NextVerdicts",
    "effective_sample_size",
    "interval_width",
    "log_weights",
    "next_verdicts",
    "simulate_verdicts",
    "weighted_rank_intervals",
]

#: Human verdicts bought on a pair, by default.
DEFAULT_K = 50
#: Simulated verdict counts per pair: the expected width's Monte Carlo SE is reported.
DEFAULT_SIMULATIONS = 32
#: The fewest effective draws beyond each end of an interval (ESS · tail) for a trusted
#: estimate: below about 5 a quantile in the tail rests on one or two draws.
MIN_TAIL_DRAWS = 5.0
#: The largest intermediate array (weights, or the weighted rank distributions) in bytes.
CHUNK_BYTES = 1 << 27
#: Slack on a cumulative weight reaching a quantile level, for its rounding: uniform weights
#: then give exactly :func:`~.posterior.rank_intervals`' ends.
_CDF_SLACK = 1e-9


class NextVerdicts(NamedTuple):
    """Each candidate pair's expected gain from k more human verdicts, best first.

    Attributes:
        pair: ``(Q,)`` int the pair's index among the S(S − 1)/2 unordered pairs (i < j,
            row-major, as :attr:`~.posterior.ArenaDraws.pairs`).
        first, second: ``(Q,)`` int its systems i < j.
        current_width: the summed width Σ_s (high_s − low_s) of the central rank intervals
            now (ranks; 0 where every rank is certain).
        expected_width: ``(Q,)`` its expected value after k verdicts on the pair.
        reduction: ``(Q,)`` current − expected width (ranks), the order of the rows
            (largest first; ties by pair index).
        reduction_se: ``(Q,)`` the reduction's Monte Carlo SE over the simulations.
        ess: ``(Q,)`` the weights' smallest effective sample size over the simulations
            (M at k = 0).
        trusted: ``(Q,)`` bool ess · tail ≥ :data:`MIN_TAIL_DRAWS`.
        k: the verdicts bought per pair.
    """

    pair: np.ndarray
    first: np.ndarray
    second: np.ndarray
    current_width: float
    expected_width: np.ndarray
    reduction: np.ndarray
    reduction_se: np.ndarray
    ess: np.ndarray
    trusted: np.ndarray
    k: int


def log_weights(log_pi: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``(..., M)`` normalised log weights Σ_c y_c log π_m,c − logsumexp, of one pair's
    ``(M, 3)`` log π per draw and ``(..., 3)`` verdict counts y."""
    log_pi = np.asarray(log_pi, float)
    log_w = np.asarray(counts, float) @ log_pi.T
    top = log_w.max(axis=-1, keepdims=True)
    return log_w - (top + np.log(np.exp(log_w - top).sum(axis=-1, keepdims=True)))


def effective_sample_size(log_w: np.ndarray) -> np.ndarray:
    """``(...,)`` (Σw)²/Σw² of ``(..., M)`` normalised log weights (M for uniform ones)."""
    w = np.exp(log_w)
    return 1.0 / np.square(w).sum(axis=-1)


def _one_hot_ranks(ranks: np.ndarray) -> np.ndarray:
    """``(M, S·S)`` float: draw m, system s, rank r (0-based) is 1 where s has rank r + 1."""
    m, s = ranks.shape
    hot = np.zeros((m, s, s))
    hot[np.arange(m)[:, None], np.arange(s)[None, :], ranks - 1] = 1.0
    return hot.reshape(m, s * s)


def _rank_masses(log_w: np.ndarray, hot: np.ndarray) -> np.ndarray:
    """``(..., S, S)`` each system's weighted rank distribution: ``(..., M)`` log weights
    times the ``(M, S·S)`` one-hot ranks, as one 2-D product: one large matrix product
    for BLAS rather than a stack of small ones."""
    s = int(round(np.sqrt(hot.shape[1])))
    flat = np.exp(log_w).reshape(-1, hot.shape[0]) @ hot
    return flat.reshape(*log_w.shape[:-1], s, s)


def _interval_ends(mass: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """``(..., S)`` ends of the central intervals of ``(..., S, S)`` rank distributions
    (system, rank 1..S): the smallest rank of positive mass whose cumulative weight
    reaches tail and 1 − tail (the inverted empirical CDF of the weighted draws)."""
    tail = (1.0 - level) / 2.0
    cdf = np.cumsum(mass, axis=-1)
    held = mass > 0
    low = np.argmax(held & (cdf >= tail - _CDF_SLACK), axis=-1) + 1
    high = np.argmax(held & (cdf >= 1.0 - tail - _CDF_SLACK), axis=-1) + 1
    return low, high


def weighted_rank_intervals(
    ranks: np.ndarray, log_w: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(..., S)`` int lower and upper ends of each system's central rank interval at
    ``level`` under weights: ``(M, S)`` ranks (1 the strongest, :func:`~.posterior.rank_draws`)
    and ``(..., M)`` normalised log weights. Uniform weights give
    :func:`~.posterior.rank_intervals`; weight w_m counts draw m w_m·M times."""
    ranks = np.asarray(ranks)
    log_w = np.asarray(log_w, float)
    return _interval_ends(_rank_masses(log_w, _one_hot_ranks(ranks)), level)


def interval_width(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``(...,)`` Σ_s (high_s − low_s) over the last axis."""
    return (np.asarray(high) - np.asarray(low)).sum(axis=-1)


def _predictive_uniforms(key: jax.Array, draws: int, k: int, simulations: int):
    """``(simulations,)`` draw indices uniform over ``draws`` and ``(simulations, k)``
    uniforms on [0, 1), from one key: one call of one shape per pair, so that a new
    number of candidates compiles nothing new."""
    u = np.asarray(jax.random.uniform(key, (simulations, k + 1), dtype=jnp.float32), float)
    m = np.minimum((u[:, 0] * draws).astype(np.int64), draws - 1)
    return m, u[:, 1:]


def _counts(pi: np.ndarray, m: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``(..., 3)`` verdict counts: each uniform of ``(..., k)`` ``u`` is the class where it
    falls in the cumulative π of its draw (``(M, 3)`` ``pi``, ``(...,)`` ``m``)."""
    edges = np.cumsum(pi, axis=-1)[m][..., None, :2]  # (..., 1, 2)
    verdicts = (np.asarray(u, float)[..., None] >= edges).sum(axis=-1)  # (..., k) in 0..2
    return np.stack([(verdicts == c).sum(axis=-1) for c in range(3)], axis=-1)


def simulate_verdicts(key: jax.Array, pi: np.ndarray, k: int, simulations: int) -> np.ndarray:
    """``(simulations, 3)`` int verdict counts from the posterior predictive of one pair's
    ``(M, 3)`` π per draw: a draw m uniform over the M, then Multinomial(k, π_m) as k
    categorical verdicts (inverse CDF of uniforms)."""
    pi = np.asarray(pi, float)
    return _counts(pi, *_predictive_uniforms(key, pi.shape[0], k, simulations))


def _chunk(rows_bytes: int) -> int:
    """How many pairs' simulations fit in :data:`CHUNK_BYTES` at ``rows_bytes`` per pair."""
    return max(1, CHUNK_BYTES // max(1, rows_bytes))


def next_verdicts(
    key: jax.Array,
    strengths: np.ndarray,
    pairs: np.ndarray,
    level: float = 0.95,
    k: int = DEFAULT_K,
    simulations: int = DEFAULT_SIMULATIONS,
    candidates: np.ndarray | None = None,
) -> NextVerdicts:
    """The expected reduction of the summed central rank-interval width at ``level`` from
    ``k`` more human verdicts on each candidate pair (see the module's text).

    Args:
        key: a JAX PRNG key; pair p's simulations use ``fold_in(key, p)``, so a pair's
            numbers do not depend on which other pairs are candidates.
        strengths: ``(M, S)`` the draws' strengths (:attr:`~.posterior.ArenaDraws.strengths`).
        pairs: ``(M, P, 3)`` each unordered pair's π over (i worse, tie, i better) per draw
            (:attr:`~.posterior.ArenaDraws.pairs`).
        level: the central intervals' level, in (0, 1).
        k: human verdicts bought on one pair, ≥ 0.
        simulations: simulated verdict counts per pair, ≥ 1.
        candidates: ``(Q,)`` int pair indices to evaluate (None: all P).

    Returns:
        :class:`NextVerdicts`, rows best first.
    """
    strengths = np.asarray(strengths, float)
    pairs = np.asarray(pairs, float)
    m, s = strengths.shape
    if pairs.shape != (m, s * (s - 1) // 2, 3):
        raise ValueError(f"pairs: shape {pairs.shape}, expected {(m, s * (s - 1) // 2, 3)}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level: {level}, expected a number in (0, 1)")
    if k < 0 or simulations < 1:
        raise ValueError(f"k = {k}, simulations = {simulations}: expected k ≥ 0, simulations ≥ 1")
    candidates = np.arange(pairs.shape[1]) if candidates is None else np.asarray(candidates, int)
    outside = candidates[(candidates < 0) | (candidates >= pairs.shape[1])]
    if outside.size:
        raise ValueError(f"candidates: pair {outside[0]}, expected 0..{pairs.shape[1] - 1}")
    ranks = rank_draws(strengths)
    hot = _one_hot_ranks(ranks)
    low, high = _interval_ends((np.full(m, 1.0 / m) @ hot).reshape(s, s), level)
    current = float(interval_width(low, high))
    log_pi = np.log(np.clip(pairs, np.finfo(float).tiny, None))

    per_pair = simulations * max(m, s * s) * 8
    widths = np.empty((len(candidates), simulations))
    ess = np.empty((len(candidates), simulations))
    step = _chunk(per_pair)
    for start in range(0, len(candidates), step):
        chosen = candidates[start : start + step]
        counts = np.stack(
            [
                simulate_verdicts(jax.random.fold_in(key, p), pairs[:, p], k, simulations)
                for p in chosen
            ]
        )  # (q, R, 3)
        log_w = np.stack(
            [log_weights(log_pi[:, p], counts[q]) for q, p in enumerate(chosen)]
        )  # (q, R, M)
        ends = _interval_ends(_rank_masses(log_w, hot), level)
        widths[start : start + len(chosen)] = interval_width(*ends)
        ess[start : start + len(chosen)] = effective_sample_size(log_w)

    expected = widths.mean(axis=1)
    reduction = current - expected
    se = (
        widths.std(axis=1, ddof=1) / np.sqrt(simulations)
        if simulations > 1
        else np.full_like(expected, np.nan)
    )
    ess_min = ess.min(axis=1)
    order = np.lexsort((candidates, -reduction))
    i, j = np.triu_indices(s, 1)
    tail = (1.0 - level) / 2.0
    return NextVerdicts(
        pair=candidates[order],
        first=i[candidates[order]],
        second=j[candidates[order]],
        current_width=current,
        expected_width=expected[order],
        reduction=reduction[order],
        reduction_se=se[order],
        ess=ess_min[order],
        trusted=ess_min[order] * tail >= MIN_TAIL_DRAWS,
        k=int(k),
    )
