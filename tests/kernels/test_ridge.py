"""Ridge coordinates: the same posterior as the logits of (α, ρ, η), finite everywhere."""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.logdensity import logdensity
from kernels.ridge import prefers_ridge, ridge_logdensity, ridge_logs, ridge_position
from tests.kernels.helpers import counts, random_counts


def natural_logits(x):
    logs = ridge_logs(x)
    return jnp.stack(
        [
            logs.log_alpha - logs.log_1m_alpha,
            logs.log_rho - logs.log_1m_rho,
            logs.log_eta - logs.log_1m_eta,
        ]
    )


def one(c, i=0):
    return jax.tree.map(lambda v: jnp.asarray(v)[i], c)


def test_density_is_the_natural_one_times_the_jacobian():
    c = random_counts(40, 3)
    xs = jax.random.normal(jax.random.key(1), (40, 16, 3)) * 3.0

    def offset(x, lane):
        jacobian = jax.jacfwd(natural_logits)(x)
        log_det = jnp.log(jnp.abs(jnp.linalg.det(jacobian)))
        return ridge_logdensity(x, lane) - logdensity(natural_logits(x), lane) - log_det

    lanes = jax.tree.map(jnp.asarray, c)
    offsets = jax.vmap(lambda xs_, lane: jax.vmap(lambda x: offset(x, lane))(xs_))(xs, lanes)
    spread = np.ptp(np.asarray(offsets), axis=1)
    # N_M up to 1e7 makes the raw log-likelihood ~1e7: 1e-6 is ~1e-13 relative.
    assert np.all(spread < 1e-6)


def test_coordinates_are_the_metric_rate_and_invert():
    xs = jax.random.normal(jax.random.key(2), (200, 3)) * 4.0
    logs = jax.vmap(ridge_logs)(xs)
    p = jnp.exp(logs.log_alpha + logs.log_rho) + jnp.exp(logs.log_1m_alpha + logs.log_1m_eta)
    np.testing.assert_allclose(p, jax.nn.sigmoid(xs[:, 1]), rtol=1e-12)
    for log_v, log_1mv in [(logs.log_rho, logs.log_1m_rho), (logs.log_eta, logs.log_1m_eta)]:
        np.testing.assert_allclose(jnp.exp(log_v) + jnp.exp(log_1mv), 1.0, rtol=1e-12)
    natural = jnp.exp(jnp.stack([logs.log_alpha, logs.log_rho, logs.log_eta], 1))
    back = jax.vmap(lambda v: ridge_position(*v))(natural)
    np.testing.assert_allclose(back, xs, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(st.floats(-60, 60), min_size=3, max_size=3),
    n_phi=st.sampled_from([0, 1, 1000, 10**6]),
    paired=st.sampled_from([(0, 0), (5, 0), (0, 7), (10**6, 10**6)]),
    n_m=st.sampled_from([0, 1, 10**7]),
    frac=st.floats(0, 1),
)
def test_finite_everywhere(x, n_phi, paired, n_m, frac):
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
    value, grad = jax.value_and_grad(ridge_logdensity)(jnp.array(x), c)
    assert np.isfinite(float(value)) and np.all(np.isfinite(np.asarray(grad)))


def test_prefers_ridge_where_the_metric_is_the_tightest_constraint():
    c = counts(
        n_pos=[30, 30, 0],
        n_phi=[50, 50, 0],
        n_tp=[5, 8000, 44000],
        n_pos_paired=[6, 10000, 71000],
        n_tn=[2, 8000, 12000],
        n_neg_paired=[3, 10000, 12600],
        m_pos=[6 * 10**5, 600, 7],
        n_m=[10**6, 1000, 13],
    )
    assert np.asarray(prefers_ridge(c)).tolist() == [True, False, False]
