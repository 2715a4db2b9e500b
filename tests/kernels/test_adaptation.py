"""The warm-up adapter, one array per coordinate, is NumPyro's, to the last bits.

The same operations in the same order; compiled separately, XLA may still
fuse a multiply into an add differently (a bit or two of the step size's
average), so floats are held to 1e-12 relative and counts exactly.
"""

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.hmc_util import IntegratorState, warmup_adapter

from binmetric_sweep.kernels.adaptation import start_adaptation, update_adaptation


def test_every_update_of_a_warm_up_equals_numpyros():
    warmup, target = 500, 0.8  # the default: Stan's windows, four middle ones
    r = np.random.default_rng(0)
    scales = np.array([1.0, 0.01, 100.0])
    points = r.normal(size=(warmup, 3)) * scales
    accept = r.uniform(size=warmup)
    init, update = warmup_adapter(warmup, target_accept_prob=target, dense_mass=False)
    # Both compiled, as the sampler runs them (XLA and eager op-by-op runs may round apart).
    update = jax.jit(update)
    ours_update = jax.jit(lambda t, a, z, state: update_adaptation(warmup, target, t, a, z, state))
    z0 = jnp.asarray(points[0])
    theirs = init(IntegratorState(z0, None, None, None), jax.random.PRNGKey(0), step_size=1.0)
    theirs = theirs._replace(rng_key=None)
    ours = start_adaptation(jnp.ones(()), tuple(z0))

    def same(a, b, atol=0.0):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=atol)

    mass_changes = 0
    for t in range(warmup):
        z = jnp.asarray(points[t])
        theirs = update(t, accept[t], IntegratorState(z, None, None, None), theirs)
        before = np.stack(ours.inverse_mass_matrix)
        ours = ours_update(jnp.asarray(t), jnp.asarray(accept[t]), tuple(z), ours)
        mass_changes += not np.array_equal(before, np.stack(ours.inverse_mass_matrix))
        same(ours.step_size, theirs.step_size)
        same(np.stack(ours.inverse_mass_matrix), theirs.inverse_mass_matrix)
        same(np.stack(ours.mass_matrix_sqrt), theirs.mass_matrix_sqrt)
        for a, b in zip(ours.ss_state, theirs.ss_state, strict=True):
            same(a, b)
        mean, m2, n = ours.mm_state
        same(np.stack(mean) / scales, theirs.mm_state[0] / scales, 1e-13)  # near 0, of ±scale
        same(np.stack(m2), theirs.mm_state[1])
        same(n, theirs.mm_state[2])
        same(ours.window_idx, theirs.window_idx)
    assert mass_changes == 4  # at each middle window's end
