import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binmetric_sweep.kernels.logdensity import grid_logdensity, logdensity, logdensity_centres
from binmetric_sweep.kernels.ridge import ridge_centres, ridge_grid_logdensity, ridge_logdensity
from tests.kernels.helpers import counts, random_counts


def naive(x, c):
    """The same density written plainly, in float64 (accurate for moderate counts)."""
    a, r, e = jax.nn.sigmoid(x[0]), jax.nn.sigmoid(x[1]), jax.nn.sigmoid(x[2])
    p = a * r + (1 - a) * (1 - e)
    total = (c.n_pos + 1) * jnp.log(a) + (c.n_phi - c.n_pos + 1) * jnp.log1p(-a)
    total += (c.n_tp + 1) * jnp.log(r) + (c.n_pos_paired - c.n_tp + 1) * jnp.log1p(-r)
    total += (c.n_tn + 1) * jnp.log(e) + (c.n_neg_paired - c.n_tn + 1) * jnp.log1p(-e)
    return total + c.m_pos * jnp.log(p) + (c.n_m - c.m_pos) * jnp.log1p(-p)


def one(c, i=0):
    return jax.tree.map(lambda v: jnp.asarray(v)[i], c)


def test_matches_the_plain_formula_up_to_a_constant():
    c = one(
        counts(
            n_pos=30,
            n_phi=50,
            n_tp=20,
            n_pos_paired=30,
            n_tn=15,
            n_neg_paired=20,
            m_pos=700,
            n_m=1000,
        )
    )
    xs = jax.random.normal(jax.random.key(0), (50, 3))
    diff = jax.vmap(lambda x: logdensity(x, c) - naive(x, c))(xs)
    assert float(jnp.max(diff) - jnp.min(diff)) < 1e-9


@pytest.mark.parametrize(
    "density, grid",
    [(logdensity, grid_logdensity), (ridge_logdensity, ridge_grid_logdensity)],
    ids=["logits", "ridge"],
)
def test_grid_density_is_the_pointwise_one_on_a_triangular_grid(density, grid):
    """Each term at the shape of its components, as the Gauss–Hermite rule calls it.

    Lanes across the issue's ranges (edge cases included), positions out to
    ±12 around the Beta means' logits on a grid of shape (5, 4, 3) whose first
    component varies along one axis, the second along two.
    """
    lanes = random_counts(60, 11)
    r = np.random.default_rng(12)
    for i in range(60):
        lane = one(lanes, i)
        x0 = r.normal(0, 4, (5, 1, 1))
        x1 = x0 * r.normal(0, 1) + r.normal(0, 4, (5, 4, 1))
        x2 = x1 * r.normal(0, 1) + r.normal(0, 4, (5, 4, 3))
        x0, x1, x2 = np.broadcast_arrays(x0, x1, x2)
        points = jnp.stack([x0, x1, x2], -1).reshape(-1, 3)
        pointwise = jax.vmap(lambda x, lane=lane: density(x, lane))(points)
        on_grid = grid(x0[:, :1, :1], x1[:, :, :1], x2, lane).reshape(-1)
        assert on_grid.shape == pointwise.shape
        finite = np.isfinite(pointwise)
        np.testing.assert_array_equal(np.isfinite(on_grid), finite)
        offset = np.asarray(on_grid - pointwise)[finite]
        # Counts up to 1e7 make each term up to ~1e7: 1e-6 is ~1e-13 relative.
        assert np.ptp(offset) < 1e-6, (i, np.ptp(offset))


@pytest.mark.parametrize(
    "density, centres, dim",
    [(logdensity, logdensity_centres, 3), (logdensity, logdensity_centres, 1)]
    + [(ridge_logdensity, ridge_centres, 3)],
    ids=["logits", "known", "ridge"],
)
def test_centres_computed_once_give_the_same_density_and_gradient(density, centres, dim):
    """The sampler computes the terms' centres once per lane; nothing may move by a bit."""
    lanes = random_counts(60, 13)
    batch = centres(lanes)  # for all lanes at once, as the sampler does
    points = jnp.asarray(np.random.default_rng(14).normal(0, 3, (60, dim)))

    def both(x, lane, given):
        return jax.value_and_grad(density)(x, lane), jax.value_and_grad(density)(x, lane, given)

    (value, grad), (value_given, grad_given) = jax.jit(jax.vmap(both))(points, lanes, batch)
    assert np.isfinite(np.asarray(value)).all()
    np.testing.assert_array_equal(np.asarray(value_given), np.asarray(value))
    np.testing.assert_array_equal(np.asarray(grad_given), np.asarray(grad))


@pytest.mark.parametrize("density", [logdensity, ridge_logdensity], ids=["logits", "ridge"])
@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(st.floats(-60, 60), min_size=3, max_size=3),
    n_phi=st.sampled_from([0, 1, 1000, 10**6]),
    paired=st.sampled_from([(0, 0), (5, 0), (0, 7), (10**6, 10**6)]),
    n_m=st.sampled_from([0, 1, 10**7]),
    frac=st.floats(0, 1),
)
def test_finite_everywhere(density, x, n_phi, paired, n_m, frac):
    c = one(
        counts(
            n_pos=np.floor(frac * n_phi),
            n_phi=n_phi,
            n_tp=np.floor(frac * paired[0]),
            n_pos_paired=paired[0],
            n_tn=paired[1],
            n_neg_paired=paired[1],
            m_pos=np.floor(frac * n_m),
            n_m=n_m,
        )
    )
    value, grad = jax.value_and_grad(density)(jnp.array(x), c)
    assert np.isfinite(float(value)) and np.all(np.isfinite(np.asarray(grad)))


def test_known_metric_edges_are_finite():
    for rho, eta, m in [(0.0, 1.0, 0.0), (1.0, 0.0, 100.0), (0.3, 0.7, 40.0), (0.2, 0.3, 10.0)]:
        c = one(counts(n_pos=3, n_phi=10, m_pos=m, n_m=100, rho=rho, eta=eta, rho_eta_known=True))
        value, grad = jax.value_and_grad(logdensity)(jnp.array([0.4]), c)
        assert np.isfinite(float(value)) and np.isfinite(float(grad[0]))


def test_float32_keeps_differences_accurate_at_large_counts():
    c = one(
        counts(
            n_pos=3e5,
            n_phi=5e5,
            n_tp=2e5,
            n_pos_paired=3e5,
            n_tn=1.5e5,
            n_neg_paired=2e5,
            m_pos=5.4e6,
            n_m=1e7,
        )
    )
    c32 = jax.tree.map(lambda v: v.astype(jnp.float32) if v.dtype == jnp.float64 else v, c)
    base = jnp.array([0.405, 0.288, 0.288])
    steps = jax.random.normal(jax.random.key(1), (20, 3)) * 2e-3
    d64 = jax.vmap(lambda s: logdensity(base + s, c) - logdensity(base, c))(steps)
    d32 = jax.vmap(
        lambda s: (
            logdensity((base + s).astype(jnp.float32), c32)
            - logdensity(base.astype(jnp.float32), c32)
        )
    )(steps)
    # Centred, float32 keeps differences to ~0.2 nats at N_M = 1e7, the limit set by
    # float32 positions themselves; uncentred, the raw value ~1e7 would leave none.
    # Not enough for NUTS energies at that size: the runner uses float64.
    assert float(jnp.max(jnp.abs(d64 - d32))) < 0.25
