"""Scores of a simulated arena's leaderboard against its truth (kernels/arena/scores.py),
on draws whose ranks are worked by hand, and prediction-powered ranking's on simulated
arenas."""

import jax
import numpy as np
import pytest

from binmetric_sweep.kernels.arena.ppr import ppr_win_rates, rank_sets
from binmetric_sweep.kernels.arena.scores import score_ppr, score_rankings
from binmetric_sweep.kernels.arena.simulate import ArenaSetting, cells_of, draw_arena
from binmetric_sweep.kernels.categorical.families import preference_confusion

jax.config.update("jax_enable_x64", True)

# Four draws of three systems' strengths: in three, 0 > 1 > 2; in one, 1 > 0 > 2.
DRAWS = np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0], [2.0, 3.0, 1.0], [3.0, 2.0, 1.0]])


def test_ranks_worked_by_hand():
    """At level ½ (tails ¼): system 0's ranks {1, 1, 1, 2} give [1, 1], system 1's
    {1, 2, 2, 2} give [1, 2], system 2's [3, 3]; the simultaneous sets are the same
    intervals (three draws of four inside them). Truth 0 > 1 > 2: every rank held; truth
    1 > 0 > 2: system 0's rank 2 is outside [1, 1], and the leader is not first."""
    truth = np.array([[0.5, 0.0, -0.5], [0.0, 0.5, -0.5]])
    draws = np.stack([DRAWS, DRAWS]).reshape(2, 2, 2, 3)  # (B, chains, samples, S)
    got = score_rankings(draws, truth, 0.5)
    np.testing.assert_allclose(got.held, [1.0, 2.0 / 3.0])
    np.testing.assert_array_equal(got.all_held, [True, False])
    np.testing.assert_allclose(got.width, [4.0 / 3.0, 4.0 / 3.0])
    np.testing.assert_array_equal(got.widest, [2.0, 2.0])  # system 1's [1, 2]
    np.testing.assert_array_equal(got.leader_first, [True, False])
    np.testing.assert_allclose(got.p_leader, [0.75, 0.25])


def test_draws_at_the_truth_score_perfectly_and_the_reversed_order_fails():
    rng = np.random.default_rng(3)
    truth = rng.normal(size=(3, 7))
    near = truth[:, None, :] + 1e-9 * rng.normal(size=(3, 200, 7))
    got = score_rankings(near, truth, 0.95)
    assert got.held.tolist() == [1.0] * 3 and got.all_held.all() and got.leader_first.all()
    np.testing.assert_array_equal(got.width, 1.0)
    np.testing.assert_array_equal(got.widest, 1.0)
    np.testing.assert_array_equal(got.p_leader, 1.0)
    reversed_ = score_rankings(-near, truth, 0.95)
    assert reversed_.held.tolist() == [1.0 / 7.0] * 3  # only the middle rank is held
    assert not reversed_.all_held.any() and not reversed_.leader_first.any()
    np.testing.assert_array_equal(reversed_.p_leader, 0.0)


@pytest.mark.parametrize("level", [0.5, 0.9])
def test_wider_intervals_at_a_higher_level_hold_at_least_as_much(level):
    rng = np.random.default_rng(4)
    truth = np.linspace(-1.0, 1.0, 6)[None].repeat(5, axis=0)
    draws = truth[:, None, :] + 0.6 * rng.normal(size=(5, 400, 6))
    low, high = score_rankings(draws, truth, level), score_rankings(draws, truth, 0.99)
    assert (high.width >= low.width).all() and (high.held >= low.held).all()


def _arenas(lanes: int, systems: int, battles: int, share: float, seed: int = 0):
    """``lanes`` simulated arenas of one judge leaning to side A: truths and counts."""
    setting = ArenaSetting(
        spread=0.5,
        log_nu=np.log(0.5),
        battles=battles * (1.0 - np.eye(systems)),
        human_share=share,
        confusions=np.asarray(preference_confusion(0.6, 1 / 3, 0.6))[None],
        copy=np.zeros(1),
    )
    keys = jax.random.split(jax.random.key(seed), lanes)
    truth, counts = jax.vmap(lambda k: draw_arena(k, setting))(keys)
    return np.array(truth), np.array(counts)


def test_ppr_rank_sets_hold_every_true_rank_at_their_level():
    """χ² sets from PPI win rates with the delta method's covariance hold the whole true
    ranking in at least ``level`` of arenas (they are conservative), and PPR's leader is
    its highest estimated win rate."""
    truth, counts = _arenas(300, 6, 20, 0.3)
    got = score_ppr(counts, truth, 0.9)
    se = np.sqrt(0.9 * 0.1 / 300)
    assert got.all_held.mean() >= 0.9 - 3 * se
    np.testing.assert_array_equal(got.width, got.set_width)
    np.testing.assert_array_equal(got.widest >= got.width, True)
    assert np.isnan(got.p_leader).all()
    assert 1.0 < got.width.mean() < 6.0  # informative, yet not pinned
    first = ppr_win_rates(cells_of(counts[0]), 6, 0)
    assert first.lam > 0.0  # the judge's verdicts enter
    low, high = rank_sets(first.theta, first.cov, 0.9)
    np.testing.assert_allclose(got.width[0], np.mean(high - low + 1), rtol=1e-15)
    assert got.leader_first[0] == (np.argmax(first.theta) == np.argmax(truth[0]))


def test_ppr_ranks_nothing_where_a_system_lacks_human_verdicts_and_reads_humans_alone_at_share_1():
    truth, counts = _arenas(2, 4, 3, 0.5, seed=1)
    counts[0, 0, :, :, 1] = 0  # system 0 on side A: no battle keeps its human verdict
    counts[0, :, 0, :, 1] = 0  # nor on side B
    got = score_ppr(counts, truth, 0.9)
    assert got.held[0] == 1.0 and got.width[0] == 4.0 and not got.leader_first[0]
    truth, counts = _arenas(1, 4, 6, 1.0, seed=2)
    got = score_ppr(counts, truth, 0.9)
    alone = ppr_win_rates(cells_of(counts[0]), 4, None)
    low, high = rank_sets(alone.theta, alone.cov, 0.9)
    np.testing.assert_allclose(got.width[0], np.mean(high - low + 1), rtol=1e-15)
