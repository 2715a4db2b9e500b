"""The device's schedule, and the invariant it protects: a lane's numbers are its own.

Every call of a program has a shape fixed by the schedule, so that a fit's
numbers depend on its counts (and its key) alone: not on the lanes that share
its call, their order, how many calls run at once, or how the lanes reach
fit_lanes (shards of any size, repeated counts).
"""

from __future__ import annotations

import jax
import numpy as np

from binmetric_sweep.kernels.estimators import registered
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop
from binmetric_sweep.kernels.summaries import fits_differing, take_fits, values_differ
from binmetric_sweep.sweep.execution.calls import take
from binmetric_sweep.sweep.execution.estimates import estimate_lanes
from binmetric_sweep.sweep.execution.fits import fit_lanes
from binmetric_sweep.sweep.execution.schedule import (
    ACCELERATOR_QUADRATURE_LANES,
    ACCELERATOR_RULE_LANES,
    ACCELERATOR_SHARDS_AHEAD,
    ACCELERATOR_WORKERS,
    CPU_QUADRATURE_LANES,
    CPU_RULE_SLICES,
    nuts_call,
    schedule_for,
    usable_cores,
)
from tests.sweep.test_fits import mixed_lanes, with_few_paired


def test_a_device_s_schedule_is_built_in_one_place():
    cpu, gpu = schedule_for("cpu"), schedule_for("gpu")
    assert (cpu.device, cpu.workers, cpu.shards_ahead) == ("cpu", usable_cores(), 0)
    assert (gpu.workers, gpu.shards_ahead) == (ACCELERATOR_WORKERS, ACCELERATOR_SHARDS_AHEAD)
    assert cpu.middle_rules and not gpu.middle_rules
    assert cpu.call_lanes("nested") == cpu.call_lanes("gauss_hermite") == CPU_QUADRATURE_LANES
    assert gpu.call_lanes("nested") == ACCELERATOR_QUADRATURE_LANES
    assert gpu.call_lanes("gauss_hermite") == ACCELERATOR_RULE_LANES["gauss_hermite"]
    assert (
        cpu.slice_lanes("nested") == CPU_RULE_SLICES["nested"] and gpu.slice_lanes("nested") is None
    )
    assert cpu.slice_lanes("gauss_hermite") is None
    # A benchmark's knobs: every call's size, a rule's own, the workers.
    assert schedule_for("gpu", chunk_size=300).call_lanes("gauss_hermite") == 256
    assert schedule_for("cpu", rule_lanes={"t_outer": 100}).call_lanes("t_outer") == 64
    assert schedule_for("cpu", workers=3, shards_ahead=2)[1::12] == (3, 2)
    # None asks JAX for its default device, once.
    assert schedule_for().device == jax.default_backend()


def test_nuts_calls_on_cpu_are_queues_and_on_an_accelerator_the_group_s_size():
    leapfrog = resolve_loop(NUTSSettings(), "cpu")
    cpu = schedule_for("cpu", workers=2)
    # 128 fits of 4 chains (512 chains); 32 slots where no call holds more than 256 chains.
    assert nuts_call(cpu, leapfrog, 1000) == (128, 128, None)
    assert nuts_call(cpu, leapfrog, 100) == (128, 32, 2)  # split for the two workers
    assert nuts_call(cpu, leapfrog, 5) == (128, 32, None)  # one call: each fills its slots
    kernel = resolve_loop(NUTSSettings(), "gpu")
    gpu = schedule_for("gpu")
    assert nuts_call(gpu, kernel, 100) == (128, None, None)  # the group's power of two
    assert nuts_call(gpu, kernel, 100_000) == (4096, None, None)  # at most 4096 fits


def test_a_lane_s_numbers_do_not_depend_on_which_call_it_ran_in():
    """The same lanes fitted all at once, in shards of another size and order, with
    another number of workers, and among repeats of themselves: the same bits.

    Quadrature here; a NUTS lane's draws are held to the same in calls of other sizes,
    slots and workers by test_fits (test_a_nuts_lane_does_not_depend_on_its_queue,
    test_chunks_in_threads_give_the_same_numbers_in_the_same_order).
    """
    c, _ = with_few_paired(mixed_lanes(100, seed=21))
    b = len(c.n_m)
    whole = fit_lanes(c, None, "quadrature", schedule=schedule_for(workers=2)).fits
    # Shuffled, in shards of 37, one worker.
    order = np.random.default_rng(1).permutation(b)
    parts = [order[i : i + 37] for i in range(0, b, 37)]
    sharded = [
        fit_lanes(take(c, p), None, "quadrature", schedule=schedule_for(workers=1)).fits
        for p in parts
    ]
    got = jax.tree.map(lambda *xs: np.concatenate(xs), *sharded)
    assert fits_differing(whole, take_fits(got, np.argsort(np.concatenate(parts)))) == 0
    # Each lane three times over: fitted once, the same bits.
    three = jax.tree.map(lambda x: np.concatenate([np.asarray(x)] * 3), c)
    tripled = fit_lanes(three, None, "quadrature", schedule=schedule_for(workers=2)).fits
    assert fits_differing(whole, take_fits(tripled, slice(2 * b, None))) == 0


def test_a_lane_s_classical_estimates_do_not_depend_on_its_call():
    """The classical estimators of lanes alone, in shards of another size and order, and
    among 5,000 others (two calls of the schedule's size): the same bits."""
    c, _ = with_few_paired(mixed_lanes(100, seed=22))
    chosen = tuple(e for e in registered() if not e.posterior)
    schedule = schedule_for()
    whole = estimate_lanes(c, chosen, 0.95, schedule)
    order = np.random.default_rng(2).permutation(len(c.n_m))
    back = np.argsort(order)
    shuffled = estimate_lanes(take(c, order), chosen, 0.95, schedule)
    many = jax.tree.map(lambda x: np.concatenate([np.resize(np.asarray(x), 5000), x]), c)
    among = estimate_lanes(many, chosen, 0.95, schedule)
    for name in (e.name for e in chosen):
        for field in range(5):
            a = np.asarray(whole[name][field])
            for other in (
                np.asarray(shuffled[name][field])[back],
                np.asarray(among[name][field])[5000:],
            ):
                assert not values_differ(a, other).any(), name
