"""Whole chains in one Pallas kernel (kernels/chain_kernel.py).

On CPU the kernel runs in Pallas's interpreter, as XLA code: there it must
run the leapfrog loop's chains, block by block. On a GPU
Triton compiles it; that it lowers at all (every operation elementwise or a
reduction, every array a power of two long, no weakly typed float feeding a
libdevice function) is checked here by exporting it for CUDA, which needs
no GPU. That Triton compiles and runs it is for a GPU session.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from binmetric_sweep.kernels.chain_kernel import run_blocks
from binmetric_sweep.kernels.nuts import _alpha, _centres, _potential_fn_gen, initial_position
from binmetric_sweep.kernels.stepwise import make_sampler, run_queue
from tests.kernels.helpers import full_model_lanes
from tests.kernels.test_stepwise import first_coordinate, gaussian


def test_the_kernel_runs_the_leapfrog_loops_chains_in_blocks():
    """Three blocks of 16 lanes (40 padded to 48, the last 3 not run), against the loop.

    The interpreted kernel is XLA code compiled apart from the loop, whose
    last bits may round apart (1e-12 here); over hundreds of transitions of
    these chaotic trajectories that grows into other draws. Over 10
    transitions every lane takes the same steps and draws to 1e-9."""
    keys = jax.random.split(jax.random.key(3), 40)
    scales = jnp.exp(jax.random.uniform(jax.random.key(4), (40, 2), minval=-4.6, maxval=4.6))
    z = jnp.full((40, 2), 0.5)
    # The kernel takes (L,) arrays only: the scales as one array a coordinate. Two
    # coordinates and trees of at most 5 doublings: the interpreted program's compile
    # grows with both (docs/performance.md; the model's three coordinates are
    # lowered for Triton below).
    common = (
        (tuple(scales.T),),
        make_sampler(
            gaussian, 2, 5, 5, 0.8, 5, 5, True, observe=first_coordinate, conditionals=True
        ),
    )
    loop = jax.jit(lambda k, z: run_queue(k, z, *common, n_valid=37))(keys, z)
    kernel = jax.jit(lambda k, z: run_blocks(k, z, *common, n_valid=37, interpret=True, block=16))(
        keys, z
    )
    for name, x, y in zip(loop._fields, loop, kernel, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if np.issubdtype(x.dtype, np.integer):  # leapfrogs, divergences, each draw's steps
            np.testing.assert_array_equal(x, y, name)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=0, err_msg=name)
    assert not np.asarray(kernel.draws)[37:].any() and np.asarray(kernel.leapfrogs)[:37].all()


@pytest.mark.parametrize("ridge", [False, True])
def test_the_kernel_lowers_to_triton_for_a_gpu(ridge):
    c = jax.tree.map(jnp.asarray, full_model_lanes(80, seed=1))
    n = len(c.n_m)
    keys = jax.random.split(jax.random.key(0), n)
    z = jax.vmap(lambda k, c: initial_position(k, c, 3, ridge))(keys, c)
    args = (c, _centres(c, ridge))

    def kernel(keys, z, args):
        gen = lambda c, centres: _potential_fn_gen(c, ridge, centres)  # noqa: E731
        sampler = make_sampler(gen, 3, 500, 1000, observe=_alpha, conditionals=False)
        return run_blocks(keys, z, args, sampler, n_valid=n - 4, interpret=False)

    # Triton's lowering computes a libdevice function of a weakly typed float64
    # operand in float32 (and says nothing where the result is then widened).
    weak = sorted(
        eqn.primitive.name
        for eqn in _equations(jax.make_jaxpr(kernel)(keys, z, args).jaxpr)
        if eqn.primitive.name in LIBDEVICE
        for v in eqn.invars
        if v.aval.weak_type and v.aval.dtype == jnp.float64
    )
    assert not weak, weak
    # For an H100 named by an abstract mesh: since JAX 0.11 Pallas's Triton
    # lowering asks which GPU it lowers for (the mesh's, else the local
    # device), and this machine has none.
    h100 = jax.sharding.AbstractDevice(
        device_kind="NVIDIA H100 80GB HBM3", num_cores=None, platform="gpu"
    )
    with jax.sharding.use_abstract_mesh(
        jax.sharding.AbstractMesh((1,), ("x",), abstract_device=h100)
    ):
        exported = jax.export.export(
            jax.jit(kernel),
            platforms=["cuda"],
            # Triton's custom call carries no compatibility promise across jaxlib versions.
            disabled_checks=[jax.export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")],
        )(keys, z, args)
    assert exported.mlir_module().count("xla.gpu.triton") == 1


#: Primitives that Pallas's Triton lowering sends to libdevice by operand type.
LIBDEVICE = {
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "sqrt",
    "rsqrt",
    "pow",
    "tanh",
    "logistic",
    "erf_inv",
    "sin",
    "cos",
    "tan",
    "atan2",
    "cbrt",
    "abs",
    "ceil",
    "floor",
}


def _equations(jaxpr):
    """Every equation of ``jaxpr``, those of its sub-jaxprs (loops, the kernel) included."""
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in param if isinstance(param, list | tuple) else [param]:
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _equations(inner)
