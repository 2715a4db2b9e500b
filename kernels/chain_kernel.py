"""Whole NUTS chains in one compiled kernel: each block of lanes runs to its end in registers.

:func:`kernels.stepwise.run_queue` runs every NUTS chain (Hoffman & Gelman
2014) of a call in lock-step through an XLA ``while_loop``, one leapfrog
step of every lane an iteration. On a GPU each iteration is about twenty
kernels, each reading the lanes' state from the device's memory and writing
it back, and the loop's host waits for each iteration's condition, so that
launches and waits take nearly half of an iteration's time (docs/design.md).
And the call runs until its slowest chain is done.

Here the same step (:func:`kernels.stepwise.step_all`, the same function of
each lane's state) runs inside one Pallas kernel: a program instance takes a
block of ``block`` lanes, starts them, and loops over leapfrog steps until
each of them is done, writing each kept draw straight to its row of the
output. The state stays on the chip between steps; nothing returns to the
host until every block is done; and a block waits only for its own slowest
chain. On a GPU Pallas compiles the kernel with Triton; elsewhere it runs
in Pallas's interpreter (as XLA code, for tests: the same numbers as
:func:`kernels.stepwise.run_lanes` on CPU, bit for bit).

Triton wants every array a power of two long and every operation
elementwise or a reduction, which is why :mod:`kernels.stepwise` keeps each
coordinate in an array of its own and draws its randomness from integer
operations (:mod:`kernels.threefry`).

A lane's numbers do not depend on its block or on the other lanes: the
batch-level flags of the XLA loop only gate work that a lane's own flags
then select away, and the kernel skips nothing.
"""

from __future__ import annotations

import importlib
from functools import cache

import jax
import jax.numpy as jnp

from binmetric_sweep.kernels.stepwise import (
    DONE,
    ChainOutputs,
    Sampler,
    any_running,
    initial_lanes,
    raw_keys,
    step_all,
)

Array = jax.Array

__all__ = ["DEFAULT_BLOCK", "run_blocks"]

#: Lanes a program instance advances together (a power of two). A block waits
#: for its slowest chain, so larger blocks run more steps for chains already
#: done; see docs/performance.md.
DEFAULT_BLOCK = 32


def _flat_lanes(tree) -> tuple[list[Array], object]:
    """``tree``'s leaves, each ``(L,)``, booleans as int32 (Triton keeps no bool arrays)."""
    leaves, treedef = jax.tree.flatten(tree)
    for leaf in leaves:
        if jnp.ndim(leaf) != 1:
            raise ValueError(f"model arguments must be (L,) per lane, got shape {jnp.shape(leaf)}")
    return [jnp.asarray(x).astype(jnp.int32) if x.dtype == bool else x for x in leaves], treedef


#: The module that lowers Pallas kernels to Triton (deprecated upstream in favour
#: of Mosaic GPU, so a later JAX may lack it).
TRITON_LOWERING = "jax.experimental.pallas.triton"


@cache
def can_import(module: str) -> bool:
    """Whether ``module`` imports (:data:`TRITON_LOWERING`: whether the kernel can run on a GPU)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def run_blocks(
    keys: Array,
    z: Array,
    model_args,
    sampler: Sampler,
    n_valid=None,
    *,
    interpret: bool,
    block: int = DEFAULT_BLOCK,
    num_warps: int = 1,
) -> ChainOutputs:
    """:func:`kernels.stepwise.run_lanes`' chains, each block of lanes run whole in one kernel.

    Args:
        keys, z, model_args, sampler: as in :func:`kernels.stepwise.run_lanes`;
            every leaf of ``model_args`` ``(L,)``. The sampler's batch-level
            conditionals are off here: in a kernel they would branch every lane.
        n_valid: run only the first ``n_valid`` chains (traced; all if
            None); the others' outputs are zeros.
        block: static; lanes per program instance, a power of two. L is
            padded to a multiple of it (padding lanes are not run).
        interpret: run in Pallas's interpreter (the caller's choice: wherever
            the device is not a GPU), rather than compiled by Triton.
        num_warps: static; Triton's warps per program instance.

    Returns:
        :class:`ChainOutputs` ``(L, …)``, as :func:`kernels.stepwise.run_queue`.
    """
    # Imported here: Pallas (and Triton's bindings) only for the runs that use it.
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    if block < 1 or block & (block - 1):
        raise ValueError(f"block must be a power of two, got {block}")
    size, dim = z.shape
    # Inside a kernel a batch-level conditional is a branch of every lane's program.
    sampler = sampler._replace(conditionals=False)
    samples, record_steps = sampler.samples, sampler.record_steps
    keys = raw_keys(keys)
    padded = -(-size // block) * block
    pad = lambda x: jnp.concatenate([x, jnp.repeat(x[:1], padded - size, axis=0)])  # noqa: E731
    valid = jnp.arange(padded) < (size if n_valid is None else jnp.minimum(n_valid, size))
    lanes, treedef = _flat_lanes(model_args)
    inputs = [
        valid.astype(jnp.int32),
        *(pad(keys[:, i]) for i in range(2)),
        *(pad(z[:, j]) for j in range(dim)),
        *(pad(x) for x in lanes),
    ]
    bools = [x.dtype == bool for x in jax.tree.leaves(model_args)]
    recorded = samples if record_steps else 1

    def kernel(*refs):
        valid_ref, k0_ref, k1_ref, *rest = refs[: len(inputs)]
        z_refs, arg_refs = rest[:dim], rest[dim:]
        draws_ref, steps_ref, *total_refs = refs[len(inputs) :]
        rows = pl.program_id(0) * block + jnp.arange(block)
        leaves = [r[...] != 0 if b else r[...] for r, b in zip(arg_refs, bools, strict=True)]
        args = jax.tree.unflatten(treedef, leaves)
        state = initial_lanes(
            (k0_ref[...], k1_ref[...]), tuple(r[...] for r in z_refs), args, sampler
        )
        state = state._replace(mode=jnp.where(valid_ref[...] != 0, state.mode, DONE))

        def step(state):
            state, draw = step_all(state, args, sampler)
            plgpu.store(draws_ref.at[rows, draw.index], draw.value, mask=draw.kept)
            if record_steps:
                plgpu.store(steps_ref.at[rows, draw.index], draw.leaves, mask=draw.kept)
            return state

        state = jax.lax.while_loop(any_running, step, state)
        totals = (state.divergences, state.depth_sum, state.steps, state.leapfrogs)
        for ref, value in zip(total_refs, totals, strict=True):
            ref[...] = value

    dtype = z.dtype
    lane = pl.BlockSpec((block,), lambda i: (i,))
    whole = pl.BlockSpec(memory_space=pl.ANY)
    draws, steps, divergences, depth_sum, total_steps, leapfrogs = pl.pallas_call(
        kernel,
        out_shape=(
            jax.ShapeDtypeStruct((padded, samples), dtype),
            jax.ShapeDtypeStruct((padded, recorded), jnp.int32),
            jax.ShapeDtypeStruct((padded,), jnp.int32),
            jax.ShapeDtypeStruct((padded,), dtype),
            jax.ShapeDtypeStruct((padded,), jnp.int32),
            jax.ShapeDtypeStruct((padded,), jnp.int32),
        ),
        grid=(padded // block,),
        in_specs=[lane] * len(inputs),
        out_specs=(whole, whole, lane, lane, lane, lane),
        compiler_params=plgpu.CompilerParams(num_warps=num_warps, num_stages=1),
        interpret=interpret,
        name="nuts_chains",
    )(*inputs)
    # A padding lane, or one past n_valid, wrote nothing; its outputs are zeros.
    ran = valid[:size]
    draws = jnp.where(ran[:, None], draws[:size], 0.0)
    totals = [jnp.where(ran, x[:size], 0) for x in (divergences, depth_sum, total_steps, leapfrogs)]
    steps = jnp.where(ran[:, None], steps[:size], 0) if record_steps else totals[2]
    return ChainOutputs(draws, totals[0], totals[1], steps, totals[3])
