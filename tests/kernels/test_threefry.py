"""Threefry-2x32 from integer operations gives jax.random's bits (kernels/threefry.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from binmetric_sweep.kernels.threefry import fold_in, uniform_words


def words(keys):
    return keys[:, 0], keys[:, 1]


def test_fold_in_is_jax_random_fold_in():
    keys = jax.random.split(jax.random.PRNGKey(7), 256)
    data = jnp.arange(256, dtype=jnp.int32) * 40_009 + 3  # up to 10^7: a long chain's steps
    expected = jax.vmap(jax.random.fold_in)(keys, data)
    np.testing.assert_array_equal(np.stack(fold_in(words(keys), data), axis=1), expected)


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_uniform_words_are_jax_random_uniform(dtype):
    keys = jax.random.split(jax.random.PRNGKey(11), 256)
    expected = jax.vmap(lambda k: jax.random.uniform(k, (9,), dtype))(keys)
    got = jnp.stack(uniform_words(words(keys), 9, dtype), axis=1)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)
    assert float(got.min()) >= 0.0 and float(got.max()) < 1.0
