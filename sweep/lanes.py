"""A shard's lanes: each (configuration, replicate)'s key, and the counts it observes.

Both are computed in batches padded to a few sizes (:func:`sweep.schedule.bucket`),
which bounds the number of compiled programs whatever the shard sizes. Keys are
integer arithmetic and count draws are the same in batches of every size, so
padding changes no lane's values (unlike a fit's, see :mod:`sweep.schedule`).
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.counts import Counts, Design
from binmetric_sweep.sweep.programs import counts_program, keys_program
from binmetric_sweep.sweep.schedule import bucket

__all__ = ["lane_counts", "lane_keys", "require_float64"]


def require_float64() -> None:
    """Raise unless JAX computes in float64, in which the kernels' accuracy is checked.

    Library calls never switch it on themselves (it is a setting of the caller's
    whole process); the entry points do: :func:`sweep.run`, the CLI,
    :func:`sweep.plan.plan_grid` and a Ray worker's task.
    """
    if not jax.config.jax_enable_x64:
        raise RuntimeError(
            "binmetric-sweep computes in float64: call "
            "jax.config.update('jax_enable_x64', True) first (sweep.run and sweep.plan do)"
        )


def _padded_call(fn, n: int, *trees):
    """``fn`` (jitted, vmapped) on lane trees padded to :func:`bucket` lanes; the first n back."""
    size = bucket(n)

    def pad(x):
        x = jnp.asarray(x)
        return jnp.concatenate([x, jnp.repeat(x[:1], size - n, axis=0)]) if size > n else x

    out = fn(*jax.tree.map(pad, trees))
    return jax.tree.map(lambda x: x[:n], out)


def lane_keys(seed: int, config_words: np.ndarray, replicates: np.ndarray) -> jax.Array:
    """``(B,)`` replicate keys from the seed, ``(B, 2)`` uint32 config-id words and replicates."""
    words = np.asarray(config_words, np.uint32)
    return _padded_call(
        keys_program(int(seed)), len(words), words, np.asarray(replicates, np.uint32)
    )


def lane_counts(designs: Design, keys: jax.Array, mode: Literal["expected", "sampled"]) -> Counts:
    """``(B,)`` NumPy counts of B lanes: rounded expected values, or drawn from each lane's key."""
    n = int(np.shape(designs.alpha)[0])
    counts = _padded_call(counts_program(mode), n, keys, designs)
    return jax.tree.map(np.asarray, jax.device_get(counts))
