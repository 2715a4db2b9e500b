"""Threefry-2x32 written in 32-bit integer operations: ``jax.random``'s bits, anywhere.

``jax.random`` computes its bits with a primitive (``threefry2x32``) that only
XLA lowers. A kernel compiled some other way (a Pallas kernel, which Triton
compiles on a GPU) cannot call it, so the NUTS step draws its randomness
here: the same Threefry-2x32 block cipher (Salmon et al. 2011, 20 rounds, as
``jax.random``'s default implementation), from additions, shifts and
exclusive ors on ``uint32`` arrays, which every backend has. A key is a pair
of ``uint32`` arrays (its two words) of any one shape, so a batch of lanes
holds one key per lane without an extra axis.

:func:`fold_in` and :func:`uniform_words` give, bit for bit, what
``jax.random.fold_in`` and ``jax.random.uniform`` give on the raw
``uint32[2]`` key of each lane, with ``jax_threefry_partitionable`` on (JAX's
default): tests check both against ``jax.random``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

__all__ = ["threefry2x32", "fold_in", "uniform_words"]

#: Rotation distances of the even and odd groups of four rounds.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
#: The key schedule's parity constant.
_PARITY = np.uint32(0x1BD11BDA)


def _rotate_left(x: Array, distance: int) -> Array:
    return (x << np.uint32(distance)) | (x >> np.uint32(32 - distance))


def threefry2x32(key: tuple[Array, Array], count: tuple[Array, Array]) -> tuple[Array, Array]:
    """The Threefry-2x32 block cipher of the two words ``count`` under ``key``.

    All four arrays are ``uint32`` of one shape (or broadcast to it); the two
    output words have that shape.
    """
    k0, k1 = key
    schedule = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0, x1 = count[0] + schedule[0], count[1] + schedule[1]
    for group in range(5):
        for distance in _ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = _rotate_left(x1, distance) ^ x0
        x0 = x0 + schedule[(group + 1) % 3]
        x1 = x1 + schedule[(group + 2) % 3] + np.uint32(group + 1)
    return x0, x1


def fold_in(key: tuple[Array, Array], data: Array) -> tuple[Array, Array]:
    """``jax.random.fold_in(key, data)`` for a ``uint32``-valued ``data``: a new key."""
    data = jnp.asarray(data).astype(jnp.uint32)
    return threefry2x32(key, (jnp.zeros_like(data), data))


def uniform_words(key: tuple[Array, Array], n: int, dtype=jnp.float64) -> list[Array]:
    """``jax.random.uniform(key, (n,), dtype)``, as a list of ``n`` arrays of the key's shape.

    Each value is in [0, 1). Counter i gives the i-th value: for float64 the
    64 bits ``hi << 32 | lo`` of the cipher of (0, i), for float32 the 32 bits
    ``hi ^ lo``; their top mantissa bits under the exponent of 1.0, less 1.0.
    """
    dtype = jnp.dtype(dtype)
    values = []
    for i in range(n):
        counter = jnp.full(jnp.shape(key[0]), i, jnp.uint32)
        hi, lo = threefry2x32(key, (jnp.zeros_like(counter), counter))
        if dtype == jnp.float64:
            bits = (hi.astype(jnp.uint64) << np.uint64(32)) | lo.astype(jnp.uint64)
            one = np.array(1.0, np.float64).view(np.uint64)
            mantissa = (bits >> np.uint64(64 - 52)) | one
            values.append(jax.lax.bitcast_convert_type(mantissa, jnp.float64) - 1.0)
        elif dtype == jnp.float32:
            one = np.array(1.0, np.float32).view(np.uint32)
            mantissa = ((hi ^ lo) >> np.uint32(32 - 23)) | one
            values.append(jax.lax.bitcast_convert_type(mantissa, jnp.float32) - 1.0)
        else:
            raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    return values
