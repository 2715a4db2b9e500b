import jax
import numpy as np
import pytest

from binmetric_sweep.kernels.counts import (
    draw_counts,
    expected_counts,
    replicate_key,
    round_half_up,
)
from tests.kernels.helpers import design


def test_round_half_up_takes_decimal_halves_up():
    assert np.asarray(round_half_up(np.array([0.35 * 10, 0.5, 1.5, 2.4999, 0.0]))).tolist() == [
        4.0,
        1.0,
        2.0,
        2.0,
        0.0,
    ]


def test_expected_counts_follow_model_md():
    d = design(alpha=[0.6], rho=[0.7], eta=[0.7], n_phi=[250], n_m=[1000])
    c = jax.vmap(expected_counts)(d)
    assert float(c.n_pos[0]) == 150  # round(0.6·250)
    assert float(c.n_pos_paired[0]) == 150 and float(c.n_neg_paired[0]) == 100  # shared set
    assert float(c.n_tp[0]) == 105 and float(c.n_tn[0]) == 70
    assert float(c.m_pos[0]) == 540  # (0.42 + 0.12)·1000


def test_expected_counts_separate_paired_set_and_known():
    d = design(
        alpha=[0.6, 0.6],
        rho=0.9,
        eta=0.8,
        n_phi=100,
        n_rho_eta=[50, 50],
        psi=[0.3, 0.3],
        shared_paired=False,
        rho_eta_known=[False, True],
    )
    c = jax.vmap(expected_counts)(d)
    assert c.n_pos_paired.tolist() == [15.0, 0.0]  # round(0.3·50); nothing paired when known
    assert c.n_neg_paired.tolist() == [35.0, 0.0]
    assert c.n_tn.tolist() == [28.0, 0.0]


def _draw(d, seeds, reps):
    base = jax.random.key(7)
    words = np.stack([np.asarray(seeds), np.zeros(len(seeds))], 1).astype(np.uint32)
    keys = jax.vmap(lambda w, r: replicate_key(base, w, r))(words, np.asarray(reps))
    return jax.vmap(draw_counts)(keys, d)


def test_sampled_counts_depend_only_on_configuration_and_replicate():
    d = design(alpha=[0.2, 0.5, 0.9], n_phi=[10, 1000, 100000], n_m=[5, 50000, 10**7])
    together = _draw(d, np.array([1, 2, 3]), np.array([0, 4, 9]))
    for i in range(3):
        alone = _draw(
            jax.tree.map(lambda x, i=i: x[i : i + 1], d),
            np.array([i + 1]),
            np.array([[0, 4, 9][i]]),
        )
        for name in together._fields:
            assert np.asarray(getattr(alone, name))[0] == np.asarray(getattr(together, name))[i]
    reversed_ = _draw(jax.tree.map(lambda x: x[::-1], d), np.array([3, 2, 1]), np.array([9, 4, 0]))
    assert np.array_equal(np.asarray(reversed_.m_pos)[::-1], np.asarray(together.m_pos))


@pytest.mark.parametrize("shared", [True, False])
def test_sampled_counts_have_the_model_distribution(shared):
    r = 4000
    d = design(
        alpha=np.full(r, 0.3),
        rho=0.9,
        eta=0.6,
        n_phi=200,
        n_rho_eta=300,
        psi=0.5,
        n_m=1000,
        shared_paired=shared,
    )
    c = _draw(d, np.zeros(r, np.uint32), np.arange(r))
    n_pos, pos, neg = map(np.asarray, (c.n_pos, c.n_pos_paired, c.n_neg_paired))
    assert abs(n_pos.mean() / 200 - 0.3) < 4 * np.sqrt(0.21 / 200 / r)
    if shared:
        assert np.array_equal(pos, n_pos) and np.array_equal(pos + neg, np.full(r, 200.0))
    else:
        assert abs(pos.mean() / 300 - 0.5) < 4 * np.sqrt(0.25 / 300 / r)
    # True negatives use η (0.6), not ρ (0.9).
    tn_rate = np.asarray(c.n_tn).sum() / neg.sum()
    assert abs(tn_rate - 0.6) < 0.01
    assert abs(np.asarray(c.n_tp).sum() / pos.sum() - 0.9) < 0.01
    p = 0.3 * 0.9 + 0.7 * 0.4
    assert abs(np.asarray(c.m_pos).mean() / 1000 - p) < 4 * np.sqrt(p * (1 - p) / 1000 / r)


def test_edge_designs_give_valid_counts():
    d = design(
        alpha=[0.0, 1.0, 0.5, 0.5],
        rho=[1.0, 0.0, 0.3, 0.5],
        eta=[1.0, 0.0, 0.2, 0.5],
        n_phi=[0, 10, 10**6, 0],
        n_m=[10**7, 0, 10**7, 0],
    )
    for c in (_draw(d, np.arange(4, dtype=np.uint32), np.zeros(4)), jax.vmap(expected_counts)(d)):
        for name in ("n_pos", "n_tp", "n_tn", "m_pos"):
            assert np.all(np.asarray(getattr(c, name)) >= 0)
        assert np.all(np.asarray(c.n_pos) <= np.asarray(c.n_phi))
        assert np.all(np.asarray(c.m_pos) <= np.asarray(c.n_m))
        assert np.all(np.asarray(c.n_tp) <= np.asarray(c.n_pos_paired))
