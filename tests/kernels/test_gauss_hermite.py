import jax
import numpy as np
import pytest

from kernels.gauss_hermite import LaplaceRule, laplace_summary
from kernels.quadrature import MODEL_KINDS, model_kind, posterior_summary
from kernels.ridge import prefers_ridge
from tests.kernels.helpers import (
    exact_summaries,
    full_model_lanes,
    published_counts,
    published_table,
)


def _fast(c, ridge):
    fn = jax.jit(jax.vmap(lambda x: laplace_summary(x, ridge)))
    s, ok = fn(c)
    return np.stack([np.asarray(v) for v in s], axis=1), np.asarray(ok)


def _nested(c):
    fn = jax.jit(jax.vmap(lambda x: posterior_summary(x, "full")))
    return np.stack([np.asarray(v) for v in fn(c)], axis=1)


@pytest.fixture(scope="module")
def lanes():
    """The published table's full-model lanes and lanes drawn across the issue's ranges."""
    table = published_counts(published_table())
    full = model_kind(table.n_m, table.rho_eta_known) == MODEL_KINDS.index("full")
    table = jax.tree.map(lambda x: np.asarray(x)[full], table)
    drawn = full_model_lanes(160, seed=5)
    c = jax.tree.map(lambda a, b: np.concatenate([np.asarray(a), np.asarray(b)]), table, drawn)
    ridge = np.asarray(jax.vmap(prefers_ridge)(c), bool)
    out, ok = np.zeros((len(ridge), 4)), np.zeros(len(ridge), bool)
    for flag in (False, True):
        sel = np.flatnonzero(ridge == flag)
        out[sel], ok[sel] = _fast(jax.tree.map(lambda x, sel=sel: x[sel], c), flag)
    return c, ridge, out, ok, len(np.asarray(table.n_m))


def test_accepted_lanes_agree_with_the_nested_rule(lanes):
    c, ridge, out, ok, _ = lanes
    nested = _nested(c)
    gap = np.abs(out - nested)[ok]
    assert gap[:, :2].max() <= 1e-6  # mean and SD
    assert gap[:, 2:].max() <= 1e-5  # interval ends (the nested rule's own error is larger here)
    # Both coordinate systems are in use.
    assert ok[ridge].sum() >= 5 and ok[~ridge].sum() >= 5


def test_accepted_lanes_agree_with_the_exact_mixture(lanes):
    c, _, out, ok, _ = lanes
    small = ok & (np.asarray(c.n_m) <= 2000)
    assert small.sum() >= 5
    exact = exact_summaries(jax.tree.map(lambda x: np.asarray(x)[small], c))
    np.testing.assert_allclose(out[small, :2], exact[:, :2], atol=1e-7)
    np.testing.assert_allclose(out[small, 2:], exact[:, 2:], atol=1e-6)


def test_the_fast_rule_carries_most_of_the_published_table(lanes):
    c, _, _, ok, n_table = lanes
    large = np.asarray(c.n_phi)[:n_table] >= 1000
    assert ok[:n_table][large].mean() >= 0.9


def test_lanes_with_few_counts_are_never_accepted(lanes):
    c, _, _, ok, _ = lanes
    floor = LaplaceRule().min_count
    pairs = [
        ("n_pos", "n_phi"),
        ("n_tp", "n_pos_paired"),
        ("n_tn", "n_neg_paired"),
        ("m_pos", "n_m"),
    ]
    few = np.zeros(len(ok), bool)
    for k, n in pairs:
        k, n = np.asarray(getattr(c, k)), np.asarray(getattr(c, n))
        few |= (k < floor) | (n - k < floor)
    assert few.sum() >= 20
    assert not ok[few].any()
