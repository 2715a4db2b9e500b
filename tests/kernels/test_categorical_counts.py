"""Counts of the categorical model: expected (rounded, totals kept) and multinomial draws."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from binmetric_sweep.kernels import counts as binary
from binmetric_sweep.kernels.categorical.counts import (
    CategoricalDesign,
    Layout,
    binary_counts,
    draw_counts,
    draw_multinomial,
    expected_counts,
    judged_rates,
    rounded_parts,
)
from tests.kernels.helpers import design as binary_design


def _random_designs(rng, b, layout, known=False):
    k, outcomes = layout.classes, layout.outcomes
    return CategoricalDesign(
        shares=rng.dirichlet(np.ones(k), b),
        confusion=rng.dirichlet(np.full(outcomes, 0.7), (b, k)),
        n_phi=rng.integers(0, 3000, b).astype(float),
        n_rho_eta=rng.integers(0, 3000, b).astype(float),
        paired_shares=rng.dirichlet(np.ones(k), b),
        n_m=np.floor(10 ** rng.uniform(0, 7, b)),
        shared_paired=rng.random(b) < 0.5,
        known=np.full(b, known) if isinstance(known, bool) else known,
    )


def _totals_are_kept(c, d):
    h, t, m = map(np.asarray, (c.human, c.paired, c.judged))
    np.testing.assert_array_equal(h.sum(-1), d.n_phi)
    np.testing.assert_array_equal(m.sum(-1), d.n_m)
    rows = t.sum(-1)
    shared = np.asarray(d.shared_paired)[:, None]
    known = np.asarray(d.known)[:, None]
    np.testing.assert_array_equal(np.where(known, 0.0, np.where(shared, h, rows)), rows)
    sep = ~np.asarray(d.shared_paired) & ~np.asarray(d.known)
    np.testing.assert_array_equal(rows.sum(-1)[sep], np.asarray(d.n_rho_eta)[sep])
    for x in (h, t, m):
        assert np.all(x >= 0) and np.array_equal(x, np.round(x))


@pytest.mark.parametrize(
    "layout", [Layout((0.0, 0.5, 1.0)), Layout((1, 2, 3, 4, 5)), Layout((0.0, 0.5, 1.0), 2)]
)
def test_expected_counts_keep_totals_and_are_within_one_of_their_expectation(layout):
    rng = np.random.default_rng(layout.outcomes)
    d = _random_designs(rng, 300, layout, known=rng.random(300) < 0.2)
    c = jax.jit(jax.vmap(expected_counts))(d)
    _totals_are_kept(c, d)
    assert np.all(np.abs(c.human - d.n_phi[:, None] * d.shares) <= 1.0)
    rows = np.asarray(c.paired).sum(-1)
    assert np.all(np.abs(c.paired - rows[..., None] * d.confusion) <= 1.0)
    p = np.einsum("bk,bkl->bl", d.shares, d.confusion)
    assert np.all(np.abs(c.judged - d.n_m[:, None] * p) <= 1.0)
    np.testing.assert_array_equal(np.asarray(c.paired)[d.known], 0.0)
    np.testing.assert_array_equal(c.confusion, d.confusion)


def test_rounded_parts_round_the_tails_from_the_top():
    # 10·(0.25, 0.5, 0.25): tails 2.5 → 3, 7.5 → 8; parts 10 − 8, 8 − 3, 3.
    parts = rounded_parts(jnp.array(10.0), jnp.array([2.5, 5.0, 2.5]))
    assert np.asarray(parts).tolist() == [2.0, 5.0, 3.0]
    # Representation error of a decimal half (0.35·10) still rounds up, as binary's does.
    assert np.asarray(rounded_parts(jnp.array(10.0), jnp.array([0.65, 0.35]) * 10)).tolist() == [
        6.0,
        4.0,
    ]


def _binary_pair(alpha, rho, eta, psi, n_phi, n_rho_eta, n_m, shared, known):
    d = binary_design(
        alpha=alpha,
        rho=rho,
        eta=eta,
        psi=psi,
        n_phi=n_phi,
        n_rho_eta=n_rho_eta,
        n_m=n_m,
        shared_paired=shared,
        rho_eta_known=known,
    )
    cat = CategoricalDesign(
        shares=np.stack([1 - d.alpha, d.alpha], -1),
        confusion=np.stack(
            [np.stack([d.eta, 1 - d.eta], -1), np.stack([1 - d.rho, d.rho], -1)], -2
        ),
        n_phi=d.n_phi,
        n_rho_eta=d.n_rho_eta,
        paired_shares=np.stack([1 - d.psi, d.psi], -1),
        n_m=d.n_m,
        shared_paired=d.shared_paired,
        known=d.rho_eta_known,
    )
    return d, cat


def test_k2_expected_counts_are_binary_expected_counts():
    """n₊, P, n_ρ, m₊ to the bit on a grid with many exact halves; n_η differs only at
    halves of η·(N_ρη − P), where binary rounds η·(N_ρη − P) up and the cumulative rule
    rounds (1 − η)·(N_ρη − P) up instead (docstring of expected_counts)."""
    grid = itertools.product(
        [0.0, 0.05, 0.35, 0.5, 0.63, 0.9, 1.0],  # α
        [0.5, 0.65, 0.75, 0.95, 1.0],  # ρ
        [0.0, 0.35, 0.5, 0.85],  # η
        [0.25, 0.5],  # ψ
        [0, 10, 90, 250],  # N_Φ
        [10, 130],  # N_ρη
        [0, 10, 1000, 10**7],  # N_M
        [True, False],  # shared
        [False, True],  # known
    )
    columns = [np.array(c) for c in zip(*grid, strict=True)]
    d, cat = _binary_pair(*columns)
    ref = jax.jit(jax.vmap(binary.expected_counts))(d)
    got = binary_counts(jax.jit(jax.vmap(expected_counts))(cat))
    for name in ("n_pos", "n_phi", "n_tp", "n_pos_paired", "n_neg_paired", "m_pos", "n_m"):
        np.testing.assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=name)
    differ = np.asarray(got.n_tn) != np.asarray(ref.n_tn)
    assert 0 < differ.sum() < 0.1 * differ.size  # the grid has such halves, and few
    x = (np.asarray(d.eta) * np.asarray(ref.n_neg_paired))[differ]
    np.testing.assert_allclose(x - np.floor(x), 0.5, atol=1e-9)
    np.testing.assert_array_equal((ref.n_tn - got.n_tn)[differ], 1.0)
    np.testing.assert_array_equal(
        np.asarray(judged_rates(cat.shares, cat.confusion))[:, 1],
        np.asarray(binary._metric_rate(binary._as_float(d))),
    )


def test_drawn_counts_keep_totals_and_depend_only_on_their_key():
    layout = Layout((0.0, 0.5, 1.0), 2)
    rng = np.random.default_rng(3)
    d = _random_designs(rng, 64, layout, known=rng.random(64) < 0.2)
    keys = jax.random.split(jax.random.key(11), 64)
    draw = jax.jit(jax.vmap(draw_counts))
    c = draw(keys, d)
    _totals_are_kept(c, d)
    # The batch reversed: a lane's counts are its key's and design's, wherever it sits.
    backwards = draw(keys[::-1], jax.tree.map(lambda x: x[::-1], d))
    for got, rev in zip(c, backwards, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(rev)[::-1])
    # Impossible outcomes are never drawn.
    zero = np.array([0.0] + [1.0 / (layout.classes - 1)] * (layout.classes - 1))
    c0 = draw(keys, d._replace(shares=np.tile(zero, (64, 1))))
    assert np.all(np.asarray(c0.human)[:, 0] == 0.0)


def _moment_z(x, probs, n):
    """z-scores of the draws' mean and covariance against Mult(n, p)'s, from their MC SEs."""
    r = x.shape[0]
    mean = n * probs
    cov = n * (np.diag(probs) - np.outer(probs, probs))
    z_mean = (x.mean(0) - mean) / np.sqrt(np.diag(cov) / r)
    d = x - mean
    products = d[:, :, None] * d[:, None, :]
    z_cov = (products.mean(0) - cov) / (products.std(0, ddof=1) / np.sqrt(r))
    return z_mean, z_cov[np.isfinite(z_cov)]


def test_multinomial_draws_have_the_multinomial_moments():
    r, probs = 20000, np.array([0.05, 0.3, 0.15, 0.0, 0.5])
    draw = jax.jit(jax.vmap(draw_multinomial, in_axes=(0, None, None)))
    for n in (7.0, 400.0, 1e7):  # binomial inversion, rejection, and both in one draw
        x = np.asarray(draw(jax.random.split(jax.random.key(int(n)), r), jnp.asarray(n), probs))
        assert np.all(x.sum(1) == n) and np.all(x[:, 3] == 0)
        z_mean, z_cov = _moment_z(x[:, [0, 1, 2, 4]], probs[[0, 1, 2, 4]], n)
        # 4 means and 16 covariance entries: a 4.5 bound fails by chance at ~1e-4.
        assert np.all(np.abs(z_mean) < 4.5), (n, z_mean)
        assert np.all(np.abs(z_cov) < 4.5), (n, z_cov)


def test_drawn_counts_have_the_model_distribution():
    r = 6000
    k3 = np.array([0.2, 0.3, 0.5])
    c3 = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.05, 0.15, 0.8]])
    d = CategoricalDesign(
        shares=np.tile(k3, (r, 1)),
        confusion=np.tile(c3, (r, 1, 1)),
        n_phi=np.full(r, 50.0),
        n_rho_eta=np.full(r, 80.0),
        paired_shares=np.tile([0.6, 0.1, 0.3], (r, 1)),
        n_m=np.full(r, 1000.0),
        shared_paired=np.zeros(r, bool),
        known=np.zeros(r, bool),
    )
    c = jax.jit(jax.vmap(draw_counts))(jax.random.split(jax.random.key(2), r), d)
    h, t, m = map(np.asarray, (c.human, c.paired, c.judged))
    for x, p, n in ((h, k3, 50), (t.sum(-1), [0.6, 0.1, 0.3], 80), (m, k3 @ c3, 1000)):
        z_mean, z_cov = _moment_z(x, np.asarray(p), n)
        assert np.all(np.abs(z_mean) < 4.5) and np.all(np.abs(z_cov) < 4.5)
    # Row k's outcomes given its total: pooled over replicates, the rate of each outcome.
    rows = t.sum(-1)
    rate = t.sum(0) / rows.sum(0)[:, None]
    se = np.sqrt(c3 * (1 - c3) / rows.sum(0)[:, None])
    assert np.all(np.abs(rate - c3) < 4.5 * se)
