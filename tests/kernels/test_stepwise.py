"""The one-leapfrog-per-iteration NUTS loop on targets with known answers.

The model's own posteriors are checked against quadrature in test_nuts.py;
here a Gaussian with scales 10^4 apart checks the adaptation (step size, the
windowed diagonal mass matrix) and the sampler's moments, lanes of very
different cost check that a lane does not depend on its batch, and the
sampler keeps whatever its ``observe`` makes of a position.
"""

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.stepwise import DONE, make_sampler, run_lanes, run_queue

SCALES = jnp.array([1.0, 0.01, 100.0])


def gaussian(scale):
    """Potential of independent normals N(0, scale²) (per lane; one array a coordinate)."""
    return lambda z: 0.5 * sum((x / s) ** 2 for x, s in zip(z, scale, strict=True))


def first_coordinate(z):
    return z[0]


def sampler(scales, warmup, samples, observe=first_coordinate, **kwargs):
    """A CPU :class:`Sampler` of :func:`gaussian` in ``scales.shape[-1]`` coordinates."""
    return make_sampler(
        gaussian, scales.shape[-1], warmup, samples, observe=observe, conditionals=True, **kwargs
    )


def run(keys, scales, warmup=300, samples=2000, **kwargs):
    z = jnp.full((keys.shape[0], scales.shape[-1]), 0.5)
    settings = sampler(scales, warmup, samples, **kwargs)
    return jax.jit(lambda k, z, s: run_lanes(k, z, (s,), settings))(keys, z, scales)


def test_gaussian_moments_and_adaptation():
    keys = jax.random.split(jax.random.key(0), 8)
    state, out = run(keys, jnp.tile(SCALES, (8, 1)), record_steps=True)
    assert np.all(np.asarray(state.mode) == DONE)
    # The draws are z[0] ~ N(0, 1).
    x = np.asarray(out.draws)
    # Draws are nearly independent here (ESS ≈ draws): 16,000 in all.
    assert abs(x.mean()) < 4 / np.sqrt(x.size)
    assert abs(x.std() - 1.0) < 4 * np.sqrt(0.5 / x.size)
    # The adapted inverse mass matrix is the variances, to the noise of a
    # 150-draw window and NumPyro's shrinkage towards 1e-3 (which lifts the
    # 1e-4 variance by up to ~2x); the identity it starts from is 10^4 off.
    ratio = np.stack(state.adapt.inverse_mass_matrix, axis=1) / np.asarray(SCALES) ** 2
    assert np.all(np.abs(np.log(ratio)) < np.log(2.5))
    assert np.all(np.asarray(out.divergences) == 0)
    steps = np.asarray(out.steps)
    assert steps.shape == (8, 2000) and steps.min() >= 1 and steps.max() <= 1023
    np.testing.assert_array_equal(steps.sum(axis=1), np.asarray(state.steps))
    assert np.all(np.asarray(out.leapfrogs) > steps.sum(axis=1))


def test_lane_does_not_depend_on_its_batch():
    # 64 lanes of scales 10^±2 take very different numbers of iterations;
    # lane 5 alone (padded with copies of a cheap lane) must come out the same.
    keys = jax.random.split(jax.random.key(1), 64)
    scales = jnp.exp(jax.random.uniform(jax.random.key(2), (64, 3), minval=-4.6, maxval=4.6))
    _, both = run(keys, scales, warmup=100, samples=100)
    cheap = jnp.tile(jnp.ones(3), (64, 1)).at[5].set(scales[5])
    _, alone = run(keys, cheap, warmup=100, samples=100)
    np.testing.assert_array_equal(np.asarray(both.draws[5]), np.asarray(alone.draws[5]))
    assert int(both.leapfrogs[5]) == int(alone.leapfrogs[5])


def test_a_queue_runs_every_chain_as_alone_and_skips_the_padding():
    """Slots that take the next chain when theirs is done: each chain's numbers are
    those it has with a slot of its own, whatever the slots."""
    keys = jax.random.split(jax.random.key(3), 48)
    scales = jnp.exp(jax.random.uniform(jax.random.key(4), (48, 3), minval=-4.6, maxval=4.6))
    z = jnp.full((48, 3), 0.5)
    _, alone = run(keys, scales, warmup=60, samples=80, record_steps=True)

    settings = sampler(scales, 60, 80, record_steps=True)

    def queued(slots, n_valid):
        fn = lambda k, z, s, n: run_queue(k, z, (s,), settings, slots=slots, n_valid=n)  # noqa: E731
        return jax.jit(fn)(keys, z, scales, n_valid)

    # At least 16 slots: XLA on CPU computes a lane alike in batches of 16 to 128
    # lanes; in 8, one of these lanes came out differently.
    for slots, n_valid in ((32, 48), (16, 37)):
        out = queued(slots, n_valid)
        for name, x, y in zip(out._fields, out, alone, strict=True):
            np.testing.assert_array_equal(np.asarray(x)[:n_valid], np.asarray(y)[:n_valid], name)
            assert not np.asarray(x)[n_valid:].any(), name  # padding: never run


def test_observe_changes_only_what_is_kept():
    """The chain is the same whatever ``observe`` keeps of its positions."""
    keys = jax.random.split(jax.random.key(5), 16)
    scales = jnp.tile(SCALES, (16, 1))
    state, z0 = run(keys, scales, warmup=50, samples=50)
    last = lambda z: z[2] * z[2]  # noqa: E731
    other, z2 = run(keys, scales, warmup=50, samples=50, observe=last)
    for x, y in zip(jax.tree.leaves(state), jax.tree.leaves(other), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    for name in ("divergences", "depth_sum", "steps", "leapfrogs"):
        np.testing.assert_array_equal(getattr(z0, name), getattr(z2, name), name)
    # The last draw is the chain's final position.
    np.testing.assert_array_equal(z0.draws[:, -1], state.position.z[0])
    np.testing.assert_array_equal(z2.draws[:, -1], state.position.z[2] ** 2)
