"""Lanes: each lane's design (:func:`lane_designs`), its key, and the counts it observes.

A lane is one (configuration, replicate) of a shard, or one (scenario, sizes) of
``sweep plan``; both make their :class:`kernels.counts.Design` here.

Both are computed in batches padded to a few sizes (:func:`sweep.execution.schedule.bucket`),
which bounds the number of compiled programs whatever the shard sizes. Keys are
integer arithmetic and count draws are the same in batches of every size, so
padding changes no lane's values (unlike a fit's, see :mod:`sweep.execution.schedule`).
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.counts import Design
from binmetric_sweep.kernels.paired import PairedKind, flags_of_kinds
from binmetric_sweep.sweep.execution.programs import counts_program, keys_program
from binmetric_sweep.sweep.execution.schedule import bucket

__all__ = [
    "configuration_lane_keys",
    "id_words",
    "lane_counts",
    "lane_designs",
    "lane_keys",
    "require_float64",
]


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


def lane_designs(
    alpha,
    rho,
    eta,
    n_phi,
    n_m,
    *,
    paired,
    n_rho_eta=0.0,
    psi=None,
) -> Design:
    """``(B,)`` lane designs: the one place a :class:`kernels.counts.Design` is made, for a
    sweep's configurations (:func:`sweep.execution.shards.run_shard`) and the planner's scenarios
    (:mod:`sweep.plan`).

    Each argument is a scalar or a ``(B,)`` array (broadcast to B lanes): rates in [0, 1],
    sizes as integer-valued numbers, the paired design ``paired`` as a
    :class:`kernels.paired.PairedKind` or an array of them
    (:func:`kernels.paired.kinds_of_flags` reads a table's two bools). The paired fields
    are set as the paired design has them, whatever was given for the others: a shared
    paired set (the human-rated items are the paired ones) has N_ρη = N_Φ and ψ = α;
    known ρ and η have N_ρη = 0 (a null or NaN is allowed there) and ψ = α; a separate
    paired set has ``n_rho_eta`` items, a share ``psi`` of them adequate (default α). The
    counts depend on no field a design ignores, so this changes no count. The Design's
    bools ``shared_paired`` and ``rho_eta_known`` are the kinds'.

    Returns:
        ``(B,)`` float64 rates and sizes and bool flags.

    Raises:
        TypeError: ``paired`` holds something other than a PairedKind.
    """
    kinds = np.asarray(paired, object)
    if not all(isinstance(k, PairedKind) for k in kinds.ravel()):
        raise TypeError("lane_designs: paired must be PairedKind values (kernels.paired)")
    shared, known = flags_of_kinds(kinds)
    alpha, rho, eta, n_phi, n_m, n_rho_eta, shared, known = np.broadcast_arrays(
        *(np.asarray(v, np.float64) for v in (alpha, rho, eta, n_phi, n_m, n_rho_eta)),
        shared,
        known,
    )
    psi = alpha if psi is None else np.broadcast_to(np.asarray(psi, np.float64), alpha.shape)
    separate = ~(shared | known)
    return Design(
        alpha=alpha,
        rho=rho,
        eta=eta,
        n_phi=n_phi,
        n_rho_eta=np.where(shared, n_phi, np.where(known, 0.0, n_rho_eta)),
        psi=np.where(separate, psi, alpha),
        n_m=n_m,
        shared_paired=shared,
        rho_eta_known=known,
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


def id_words(config_ids: np.ndarray) -> np.ndarray:
    """``(C, 2)`` uint32: the low and high 32-bit words of each 63-bit ``config_id``."""
    ids = np.asarray(config_ids, np.int64).astype(np.uint64)
    return np.stack([ids & np.uint64(0xFFFFFFFF), ids >> np.uint64(32)], axis=1).astype(np.uint32)


def configuration_lane_keys(
    seed: int, config_ids: np.ndarray, replicates: int
) -> tuple[jax.Array, np.ndarray]:
    """The ``(C·R,)`` lane keys of C configurations' R replicates each (configuration-major,
    :func:`lane_keys` of their ``config_id`` words), and each lane's replicate number."""
    words = np.repeat(id_words(np.asarray(config_ids)), replicates, axis=0)
    replicate = np.tile(np.arange(replicates), len(config_ids))
    return lane_keys(seed, words, replicate), replicate


def lane_counts(designs, keys: jax.Array, mode: Literal["expected", "sampled"], model):
    """``(B,)`` NumPy counts of B lanes of the rating model ``model``
    (:class:`sweep.spec.rating_model.RatingModel`): rounded expected values, or drawn from each
    lane's key."""
    n = int(np.shape(jax.tree.leaves(designs)[0])[0])
    counts = _padded_call(counts_program(mode, model), n, keys, designs)
    return jax.tree.map(np.asarray, jax.device_get(counts))
