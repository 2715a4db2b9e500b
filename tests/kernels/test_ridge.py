"""Ridge coordinates: the same posterior as the logits of (α, ρ, η).

Finiteness over extreme positions and counts is checked beside the logit
density's, in test_logdensity.py.
"""

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.logdensity import logdensity
from binmetric_sweep.kernels.ridge import (
    prefers_ridge,
    ridge_logdensity,
    ridge_logs,
    ridge_position,
)
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
