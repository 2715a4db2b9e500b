"""Scores of a simulated arena's leaderboard against its truth (kernels/arena/scores.py),
on draws whose ranks are worked by hand."""

import numpy as np
import pytest

from binmetric_sweep.kernels.arena.scores import score_rankings

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
