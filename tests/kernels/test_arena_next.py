"""What to judge next (kernels/arena/next_verdicts.py): the weighted rank intervals against
draws repeated by their weights, uniform weights at k = 0, the posterior predictive's
counts, and the pair it puts first on draws whose structure is known.

The draws are synthetic: strengths from independent normals (two close systems measured
poorly among well-separated, well-measured ones), each pair's π the Davidson probabilities
of its strength difference (ν = 1), as ArenaDraws.pairs holds them.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from binmetric_sweep.kernels.arena.logdensity import davidson_log_probabilities
from binmetric_sweep.kernels.arena.next_verdicts import (
    MIN_TAIL_DRAWS,
    effective_sample_size,
    interval_width,
    log_weights,
    next_verdicts,
    simulate_verdicts,
    weighted_rank_intervals,
)
from binmetric_sweep.kernels.arena.posterior import rank_draws, rank_intervals

#: Systems 2 and 3 close (0.4 apart) and poorly measured (SD 0.2); the rest 0.6–0.7 apart
#: with SD 0.05, so that only 2 and 3 have rank intervals wider than one rank.
MEANS = np.array([1.5, 0.8, 0.2, -0.2, -0.8, -1.5])
SDS = np.array([0.05, 0.05, 0.2, 0.2, 0.05, 0.05])


def synthetic_draws(seed: int, draws: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """``(M, S)`` centred strengths and ``(M, P, 3)`` each pair's π (i worse, tie, i better)."""
    rng = np.random.default_rng(seed)
    s = MEANS + SDS * rng.standard_normal((draws, len(MEANS)))
    s -= s.mean(axis=1, keepdims=True)
    i, j = np.triu_indices(len(MEANS), 1)
    # Davidson's (B better, tie, A better) with i on side A is (i worse, tie, i better).
    pi = np.exp(np.asarray(davidson_log_probabilities(s[:, i] - s[:, j], np.zeros(()))))
    return s, pi


def test_weighted_intervals_are_those_of_the_draws_repeated_by_their_weights():
    """Integer weights w_m (zeros included): the weighted intervals are rank_intervals of
    the sample in which draw m appears w_m times, at several levels."""
    rng = np.random.default_rng(4)
    for trial in range(40):
        m, s = int(rng.integers(3, 60)), int(rng.integers(2, 7))
        ranks = rank_draws(rng.normal(size=(m, s)))
        w = rng.integers(0, 5, m)
        w[rng.integers(m)] += 1  # at least one draw counts
        level = float(rng.choice([0.5, 0.8, 0.9, 0.95, rng.uniform(0.05, 0.99)]))
        with np.errstate(divide="ignore"):
            log_w = np.log(w / w.sum())
        got = weighted_rank_intervals(ranks, log_w, level)
        want = rank_intervals(np.repeat(ranks, w, axis=0), level)
        assert np.array_equal(got[0], want[0]), (trial, level)
        assert np.array_equal(got[1], want[1]), (trial, level)


def test_uniform_weights_give_the_draws_intervals_and_batch_alike():
    rng = np.random.default_rng(5)
    ranks = rank_draws(rng.normal(size=(400, 5)) * np.arange(1, 6))
    uniform = np.full(400, -np.log(400))
    for level in (0.5, 0.9, 0.95):
        low, high = weighted_rank_intervals(ranks, uniform, level)
        want = rank_intervals(ranks, level)
        assert np.array_equal(low, want[0]) and np.array_equal(high, want[1])
    # A stack of weight vectors is each one's intervals.
    stack = np.stack([uniform, log_weights(rng.normal(size=(400, 3)), np.array([3, 1, 2]))])
    low, high = weighted_rank_intervals(ranks, stack, 0.9)
    for row in range(2):
        one = weighted_rank_intervals(ranks, stack[row], 0.9)
        assert np.array_equal(low[row], one[0]) and np.array_equal(high[row], one[1])


def test_log_weights_and_effective_sample_size():
    """w_m ∝ Π_c π_m,c^{y_c}, normalised; ESS = (Σw)²/Σw² (M for uniform weights, 1 for
    one draw holding all the weight)."""
    pi = np.array([[0.2, 0.3, 0.5], [0.5, 0.3, 0.2], [1 / 3, 1 / 3, 1 / 3]])
    y = np.array([2, 0, 3])
    raw = np.prod(pi**y, axis=1)
    assert np.allclose(np.exp(log_weights(np.log(pi), y)), raw / raw.sum(), rtol=1e-12)
    assert effective_sample_size(np.log(raw / raw.sum())) == pytest.approx(
        raw.sum() ** 2 / np.square(raw).sum(), rel=1e-12
    )
    assert effective_sample_size(np.full(7, -np.log(7))) == pytest.approx(7)
    with np.errstate(divide="ignore"):
        assert effective_sample_size(np.log([1.0, 0.0, 0.0])) == pytest.approx(1)


def test_the_posterior_predictive_counts():
    """Counts sum to k; over many simulations their mean is k times the draws' mean π (a
    z-test of each class at 5 SE)."""
    rng = np.random.default_rng(6)
    pi = rng.dirichlet([2, 1, 3], size=50)
    counts = simulate_verdicts(jax.random.key(1), pi, 20, 4000)
    assert counts.shape == (4000, 3) and np.all(counts.sum(axis=1) == 20)
    mean = counts.mean(axis=0)
    se = counts.std(axis=0) / np.sqrt(4000)
    assert np.all(np.abs(mean - 20 * pi.mean(axis=0)) < 5 * se)


def test_the_close_poorly_measured_pair_ranks_first():
    """Only systems 2 and 3 have a rank in doubt (width 2 in all): buying verdicts on their
    pair shrinks the intervals most, by about one rank, for several draw sets and keys."""
    for seed in range(3):
        s, pi = synthetic_draws(seed)
        result = next_verdicts(jax.random.key(seed), s, pi, level=0.95)
        assert result.current_width == 2
        assert (result.first[0], result.second[0]) == (2, 3)
        assert result.reduction[0] > result.reduction[1] + result.reduction_se[0]
        assert np.all(np.diff(result.reduction) <= 0)
        assert result.k == 50 and len(result.pair) == 15


def test_k_zero_leaves_the_posterior_as_it_is():
    s, pi = synthetic_draws(0, draws=500)
    result = next_verdicts(jax.random.key(0), s, pi, level=0.9, k=0, simulations=4)
    want = interval_width(*rank_intervals(rank_draws(s), 0.9))
    assert result.current_width == want
    assert np.all(result.expected_width == want) and np.all(result.reduction == 0)
    assert np.allclose(result.ess, 500) and np.all(result.trusted)
    assert np.array_equal(result.pair, np.arange(15))  # ties by pair index


def test_deterministic_given_the_key_and_independent_of_the_other_candidates():
    s, pi = synthetic_draws(1, draws=800)
    one = next_verdicts(jax.random.key(3), s, pi, simulations=8)
    again = next_verdicts(jax.random.key(3), s, pi, simulations=8)
    for field in ("pair", "expected_width", "reduction", "reduction_se", "ess"):
        assert np.array_equal(getattr(one, field), getattr(again, field))
    other = next_verdicts(jax.random.key(4), s, pi, simulations=8)
    assert not np.array_equal(np.sort(one.ess), np.sort(other.ess))
    # Pair 9's numbers alone, and among all.
    alone = next_verdicts(jax.random.key(3), s, pi, simulations=8, candidates=np.array([9]))
    row = int(np.flatnonzero(one.pair == 9)[0])
    assert alone.expected_width[0] == one.expected_width[row]
    assert alone.ess[0] == one.ess[row]
    assert (alone.first[0], alone.second[0]) == (2, 3)


def test_few_effective_draws_are_not_trusted():
    """k = 2000 verdicts on the doubtful pair leave a handful of draws with weight."""
    s, pi = synthetic_draws(2, draws=300)
    result = next_verdicts(
        jax.random.key(0), s, pi, k=2000, simulations=4, candidates=np.array([9, 14])
    )
    doubtful = result.pair == 9  # systems 2 and 3
    assert result.ess[doubtful][0] * 0.025 < MIN_TAIL_DRAWS
    assert not result.trusted[doubtful][0]


def test_bad_shapes_and_settings_are_refused():
    s, pi = synthetic_draws(0, draws=50)
    with pytest.raises(ValueError, match="pairs: shape"):
        next_verdicts(jax.random.key(0), s, pi[:, :-1])
    with pytest.raises(ValueError, match="level"):
        next_verdicts(jax.random.key(0), s, pi, level=1.0)
    with pytest.raises(ValueError, match="k = -1"):
        next_verdicts(jax.random.key(0), s, pi, k=-1)
    with pytest.raises(ValueError, match="candidates: pair 15, expected 0..14"):
        next_verdicts(jax.random.key(0), s, pi, candidates=np.array([3, 15]))
