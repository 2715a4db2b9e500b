"""NUTS advanced one leapfrog step per loop iteration, so that vmapped lanes never wait.

Under ``jax.vmap`` a ``while_loop`` runs until its last lane is done, the
finished lanes masked. NumPyro's ``sample_kernel`` loops over leapfrog steps
*inside* each transition, so a vmapped batch executes, in every transition,
the steps of the lane with the longest trajectory in that transition: twice
the steps the average lane needed on batches of 32 lanes drawn like the legacy
grid (lock-step efficiency 0.50, ``scripts/bench_kernels.py``), and more on
larger batches: the maximum grows with the batch.

Here the loop body is one leapfrog step of every lane, and what NumPyro keeps
in nested loops (the doubling in progress, the leaf within it, the U-turn
checkpoints, the step-size search) is explicit state. A lane whose trajectory
ends completes its transition (proposal, adaptation, draw) and begins the next
in the same iteration, so a batch runs until the lane with the most leapfrog
steps *over all its transitions* is done; those totals, sums over 1500
transitions, vary far less between lanes than single trajectories do
(efficiency 0.73-0.79 on the same batches, 0.84-0.87 with lanes sorted by
difficulty, in two benchmark runs with different random streams).

The transition is NUTS (Hoffman & Gelman 2014) with multinomial sampling
and the generalised U-turn criterion (Betancourt 2017), as NumPyro's
``numpyro.infer.hmc_util.build_tree`` runs it, step for step: velocity
Verlet (NumPyro's ``velocity_verlet``), multinomial sampling within a
doubling, biased progressive sampling between doublings, the generalised
U-turn criterion at the iterative checkpoints, and a divergence where the
energy error exceeds 1000. Warm-up uses NumPyro's ``warmup_adapter`` (dual
averaging; Stan's windows for a diagonal mass matrix; ported in
:mod:`kernels.adaptation`), and the step-size heuristic of
``find_reasonable_step_size`` runs, as there, at the start and after each
mass-matrix update, one trial step per iteration (its trial momenta drawn
from the current mass matrix, where NumPyro scales them by the inverse mass
matrix). Only the diagonal mass matrix is supported.

The step (:func:`_advance`) composes small functions, one concept each, as
blackjax's ``nuts.py`` composes its modules: the trajectory (the leapfrog
integrator and the step's leaf), termination (U-turn, divergence, depth),
proposal (multinomial within a doubling, biased progressive between
doublings) and adaptation (the step-size search, the warm-up adapter). It
knows nothing of the model: it samples positions, and the caller's
``Sampler.observe`` maps the position of each kept transition to the scalar
stored as its draw.

Every coordinate of a point, a momentum, a gradient or the mass matrix is an
array of its own (:data:`Vector`), and the randomness comes from Threefry in
integer operations (:mod:`kernels.threefry`): a batch of lanes is then a set
of ``(L,)`` arrays, with nothing to slice, gather or reduce across a lane's
coordinates, which :mod:`kernels.chain_kernel` needs to compile the step with
Triton. On CPU this layout gave the same bits as NumPyro's vectors.

Lanes are independent: each is advanced by the same pure function of its own
state, so a lane's draws do not depend on the others in its batch. So a batch
need not hold every chain at once: :func:`run_queue` runs a queue of chains
in a fixed number of slots, each slot taking the next chain when its own is
done, so that lanes wait for the hardest chain only at the queue's end. The
draws live outside the lanes' state (:class:`Draw`), written straight to
their chain's row, so that neither the step nor a refill copies them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.hmc_util import IntegratorState

from binmetric_sweep.kernels.adaptation import (
    Adaptation,
    Vector,
    restart_step_size,
    start_adaptation,
    update_adaptation,
    window_ends,
)
from binmetric_sweep.kernels.threefry import fold_in, uniform_words

Array = jax.Array

__all__ = [
    "ChainOutputs",
    "Doubling",
    "Draw",
    "StepSearch",
    "StepwiseState",
    "Trajectory",
    "run_lanes",
    "run_queue",
    # The step itself, for runners of its own (kernels.chain_kernel).
    "DONE",
    "Sampler",
    "make_sampler",
    "initial_lanes",
    "step_all",
    "any_running",
    "raw_keys",
]

#: Lane modes: searching for a step size, building a trajectory, finished.
SEARCH, TREE, DONE = 0, 1, 2
#: An energy error above this ends the trajectory as divergent (NumPyro's default).
MAX_DELTA_ENERGY = 1000.0
#: The step-size heuristic doubles or halves until the acceptance crosses 0.8.
_LOG_SEARCH_ACCEPT = math.log(0.8)


class Trajectory(NamedTuple):
    """The trajectory of the transition in progress.

    Points are NumPyro's ``IntegratorState`` with each of z, r and the
    gradient a tuple of d arrays, one per coordinate (:data:`Vector`).

    Attributes:
        left, right: its outermost leaves (z, r, potential energy, gradient).
        proposal: the point sampled from it so far.
        log_weight: log Σ exp(−H) over its leaves, relative to the start.
        r_sum: sum of the momenta of its points.
        depth: completed doublings (it holds 2^depth − 1 leaves beside the start).
        accept_sum: Σ min(1, exp(−ΔH)) over its leaves (for step-size adaptation).
        leaves: leapfrog steps taken.
        energy: the Hamiltonian at the start.
    """

    left: IntegratorState
    right: IntegratorState
    proposal: IntegratorState
    log_weight: Array
    r_sum: Array
    depth: Array
    accept_sum: Array
    leaves: Array
    energy: Array


class Doubling(NamedTuple):
    """The doubling in progress: 2^depth new leaves in one direction.

    Attributes:
        going_right: its direction.
        edge: the leaf to step from next.
        proposal, log_weight, r_sum, accept_sum, leaves: as in :class:`Trajectory`,
            over its own leaves.
        r_checkpoints, r_sum_checkpoints: ``max_tree_depth`` momenta and
            momentum sums (each a :data:`Vector`) at the leaves where the
            iterative U-turn check starts its sub-subtrees (NumPyro's
            ``_iterative_build_subtree``).
    """

    going_right: Array
    edge: IntegratorState
    proposal: IntegratorState
    log_weight: Array
    r_sum: Array
    accept_sum: Array
    leaves: Array
    r_checkpoints: tuple[Vector, ...]
    r_sum_checkpoints: tuple[Vector, ...]


class StepSearch(NamedTuple):
    """The step-size heuristic in progress: the last step tried and the last two directions."""

    step_size: Array
    last_direction: Array
    direction: Array


class StepwiseState(NamedTuple):
    """One lane's whole sampler state between two leapfrog steps.

    Attributes:
        key: the chain's PRNG key, its two ``uint32`` words; the step with
            ``leapfrogs`` = i draws from ``fold_in(key, i)`` (:func:`_step_randomness`).
        position: the chain's current point.
        adapt: the warm-up adaptation's state (step size, mass matrix, …;
            :class:`kernels.adaptation.Adaptation`).
        mode: :data:`SEARCH`, :data:`TREE` or :data:`DONE`.
        transition: transitions completed (warm-up ones included).
        search, trajectory, doubling: the parts of the current mode.
        divergences: divergent transitions after warm-up.
        depth_sum: Σ log2(leapfrog steps + 1) after warm-up.
        steps: leapfrog steps after warm-up.
        leapfrogs: leapfrog steps in all, step-size search included: the
            iterations this lane kept its batch busy.
    """

    key: tuple[Array, Array]
    position: IntegratorState
    adapt: Adaptation
    mode: Array
    transition: Array
    search: StepSearch
    trajectory: Trajectory
    doubling: Doubling
    divergences: Array
    depth_sum: Array
    steps: Array
    leapfrogs: Array


class Draw(NamedTuple):
    """What one leapfrog step of a lane leaves to keep: a draw, where a kept transition ended.

    The draws live outside :class:`StepwiseState`, in the caller's
    ``(rows, samples)`` buffers, so that a lane's state stays small (a
    conditional or a select over it copies no draws).

    Attributes:
        kept: whether a transition after warm-up ended at this step.
        index: which of the ``samples`` draws it is.
        value: ``Sampler.observe`` of its point.
        leaves: its leapfrog steps.
    """

    kept: Array
    index: Array
    value: Array
    leaves: Array


class ChainOutputs(NamedTuple):
    """What is kept of each chain (leading ``(L,)``).

    Attributes:
        draws: ``(samples,)`` ``Sampler.observe`` of each kept transition's point.
        divergences, depth_sum, leapfrogs: as in :class:`StepwiseState`.
        steps: leapfrog steps after warm-up: a total, or ``(samples,)`` per
            transition with ``record_steps``.
    """

    draws: Array
    divergences: Array
    depth_sum: Array
    steps: Array
    leapfrogs: Array


class Sampler(NamedTuple):
    """The static parts of a run: the functions and settings a step closes over.

    Built by :func:`make_sampler`; a runner (:func:`run_lanes`,
    :func:`run_queue`, :func:`kernels.chain_kernel.run_blocks`) passes it to
    :func:`initial_lanes` and :func:`step_all`, which close over it: its
    fields are Python values, never traced.
    """

    potential_fn_gen: Callable
    # What a draw keeps of a transition's point: the sampler knows no model.
    observe: Callable[[Vector], Array]
    dim: int
    warmup: int
    samples: int
    target_accept: float
    max_tree_depth: int
    warmup_max_tree_depth: int
    record_steps: bool
    # Batch-level conditionals (:func:`_materialized`, the adaptation update):
    # on CPU, where they are cheap; an accelerator would wait on its host for each.
    conditionals: bool


def _select(flag, on_true, on_false):
    return jax.tree.map(lambda a, b: jnp.where(flag, a, b), on_true, on_false)


def _by_coordinate(f, *vectors) -> Vector:
    """``f`` applied coordinate by coordinate to :data:`Vector` arguments."""
    return tuple(f(*xs) for xs in zip(*vectors, strict=True))


def _dot(*vectors) -> Array:
    """Σ over coordinates of the product of the vectors, multiplied and summed left to right."""
    products = [math.prod(xs[1:], start=xs[0]) for xs in zip(*vectors, strict=True)]
    return sum(products[1:], start=products[0])


def _kinetic(inverse_mass: Vector, r: Vector) -> Array:
    """The kinetic energy ½ rᵀ M⁻¹ r (diagonal M)."""
    return 0.5 * _dot(inverse_mass, r, r)


# The pieces of the step. Each is a function of one lane (the step is vmapped
# over lanes, :func:`step_all`): every array is a lane's scalar, a
# :data:`Vector` d of them. ``store`` is :func:`_materialized` with the
# batch's flag bound: where a piece stores a value, the step computes it once.

# Trajectory: the integrator and the leaf each step adds.


def _leapfrog(potential_fn, step_size: Array, inverse_mass: Vector, point: IntegratorState):
    """One velocity Verlet step (NumPyro's ``velocity_verlet`` with a diagonal mass matrix)."""
    r = _by_coordinate(lambda r, g: r - 0.5 * step_size * g, point.r, point.z_grad)  # r(n+1/2)
    z = _by_coordinate(lambda z, m, r: z + step_size * (m * r), point.z, inverse_mass, r)  # z(n+1)
    potential_energy, z_grad = jax.value_and_grad(potential_fn)(z)
    r = _by_coordinate(lambda r, g: r - 0.5 * step_size * g, r, z_grad)  # r(n+1)
    return IntegratorState(z, r, potential_energy, z_grad)


def _momentum(adapt: Adaptation, normal: Vector) -> Vector:
    """A momentum drawn from N(0, M): standard normals scaled by √M (diagonal)."""
    return _by_coordinate(jnp.multiply, adapt.mass_matrix_sqrt, normal)


def _next_leaf(
    potential_fn,
    state: StepwiseState,
    searching: Array,
    trial_step: Array,
    trial_r: Vector,
    store: Callable,
) -> tuple[IntegratorState, Array]:
    """The step's leaf and its energy error ΔH (NaN counted as +∞).

    Searching, a trial step of ``trial_step`` from the current position with
    momentum ``trial_r``; else a step of the adapted size from the doubling's
    edge, in its direction.
    """
    adapt, doubling = state.adapt, state.doubling
    inverse_mass = adapt.inverse_mass_matrix
    start = _select(searching, state.position._replace(r=trial_r), doubling.edge)
    signed_step = jnp.where(doubling.going_right, adapt.step_size, -adapt.step_size)
    step_size = jnp.where(searching, trial_step, signed_step)
    leaf = store(_leapfrog(potential_fn, step_size, inverse_mass, start))
    start_energy = jnp.where(
        searching,
        state.position.potential_energy + _kinetic(inverse_mass, trial_r),
        state.trajectory.energy,
    )
    delta = leaf.potential_energy + _kinetic(inverse_mass, leaf.r) - start_energy
    return leaf, jnp.where(jnp.isnan(delta), jnp.inf, delta)


def _start_trajectory(point: IntegratorState, r: Vector, inverse_mass: Vector) -> Trajectory:
    point = point._replace(r=r)
    return Trajectory(
        left=point,
        right=point,
        proposal=point,
        log_weight=jnp.zeros_like(point.potential_energy),
        r_sum=r,
        depth=jnp.zeros((), jnp.int32),
        accept_sum=jnp.zeros_like(point.potential_energy),
        leaves=jnp.zeros((), jnp.int32),
        energy=point.potential_energy + _kinetic(inverse_mass, r),
    )


def _start_doubling(trajectory: Trajectory, going_right: Array, max_depth: int) -> Doubling:
    edge = _select(going_right, trajectory.right, trajectory.left)
    zero = tuple(jnp.zeros_like(r) for r in trajectory.r_sum)
    zeros = (zero,) * max_depth
    return Doubling(
        going_right=going_right,
        edge=edge,
        proposal=edge,
        log_weight=jnp.zeros_like(trajectory.log_weight),
        r_sum=zero,
        accept_sum=jnp.zeros_like(trajectory.accept_sum),
        leaves=jnp.zeros((), jnp.int32),
        r_checkpoints=zeros,
        r_sum_checkpoints=zeros,
    )


# Termination: a doubling or a trajectory ends at a U-turn (the generalised
# criterion, Betancourt 2017), a divergence, or its depth.


def _is_divergent(delta: Array) -> Array:
    """Whether an energy error ΔH ends the trajectory as divergent."""
    return delta > MAX_DELTA_ENERGY


def _is_turning(inverse_mass: Vector, r_left: Vector, r_right: Vector, r_sum: Vector) -> Array:
    """NumPyro's generalised U-turn criterion."""
    r_sum = _by_coordinate(lambda s, a, b: s - 0.5 * (a + b), r_sum, r_left, r_right)
    left = _dot(inverse_mass, r_left, r_sum)
    right = _dot(inverse_mass, r_right, r_sum)
    return (left <= 0) | (right <= 0)


def _checkpoint_range(leaf: Array) -> tuple[Array, Array]:
    """Checkpoints that leaf ``leaf`` of a doubling is U-turn-checked against (inclusive).

    idx_max counts the set bits of leaf >> 1; the range holds one checkpoint
    per completed sub-subtree that ends at this leaf (trailing ones of leaf).
    """
    idx_max = jax.lax.population_count(leaf >> 1)
    trailing = jax.lax.population_count((~leaf & (leaf + 1)) - 1)
    return idx_max - trailing + 1, idx_max


def _checkpoint_turning(
    doubling: Doubling, r: Vector, r_sum: Vector, inverse_mass: Vector
) -> tuple[tuple[Vector, ...], tuple[Vector, ...], Array]:
    """The doubling's U-turn check at its new leaf (NumPyro's ``_is_iterative_turning``).

    Args:
        doubling: the doubling before the leaf; its ``leaves`` is the leaf's index.
        r, r_sum: the leaf's momentum and the doubling's momentum sum with it.

    Returns:
        The checkpoints with the leaf's written where it starts a sub-subtree
        (even leaves), and whether any sub-subtree that ends at the leaf turns.
    """
    low, high = _checkpoint_range(doubling.leaves)
    even = doubling.leaves % 2 == 0
    r_checkpoints, r_sum_checkpoints, turning = [], [], jnp.zeros_like(even)
    for index, (r_old, r_sum_old) in enumerate(
        zip(doubling.r_checkpoints, doubling.r_sum_checkpoints, strict=True)
    ):
        write = even & (index == high)
        r_checkpoint = _select(write, r, r_old)
        r_sum_checkpoint = _select(write, r_sum, r_sum_old)
        sub_sum = _by_coordinate(lambda a, b, c: a - b + c, r_sum, r_sum_checkpoint, r_checkpoint)
        sub_turning = _is_turning(inverse_mass, r_checkpoint, r, sub_sum)
        turning = turning | (sub_turning & (index >= low) & (index <= high))
        r_checkpoints.append(r_checkpoint)
        r_sum_checkpoints.append(r_sum_checkpoint)
    return tuple(r_checkpoints), tuple(r_sum_checkpoints), turning


def _doubling_done(doubling: Doubling, depth: Array, turning: Array, diverging: Array) -> Array:
    """Whether a doubling ends: its 2^depth leaves taken, a U-turn within it, or a divergence."""
    return (doubling.leaves == 2**depth) | turning | diverging


def _trajectory_done(
    trajectory: Trajectory, max_depth: Array, turning: Array, diverging: Array
) -> Array:
    """Whether a trajectory whose doubling just ended ends there.

    It ends at its depth cap, at a U-turn (``turning``: of the whole
    trajectory or within the doubling), or at a divergence.
    """
    return (trajectory.depth >= max_depth) | turning | diverging


# Proposal: multinomial sampling (Betancourt 2017) drawn progressively, each
# point with probability proportional to exp(−H).


def _uniform_progressive(first: Array, uniform: Array, leaf_weight: Array, log_weight: Array):
    """Whether a doubling's new leaf becomes its proposal: with probability
    w_leaf / (w_doubling + w_leaf), always as its first leaf (multinomial within a doubling).

    ``leaf_weight`` and ``log_weight``: log w of the leaf and of the doubling so far.
    """
    return first | (uniform < jax.nn.sigmoid(leaf_weight - log_weight))


def _biased_progressive(uniform: Array, new_weight: Array, old_weight: Array, stop: Array):
    """Whether a finished doubling's proposal replaces the trajectory's: with probability
    min(1, w_doubling / w_trajectory), never where the doubling stopped early
    (biased progressive sampling between doublings; ``*_weight`` are log w).
    """
    move = jnp.where(stop, 0.0, jnp.minimum(jnp.exp(new_weight - old_weight), 1.0))
    return uniform < move


# Tree building: the leaf joins the doubling, a finished doubling the trajectory.


def _grow_doubling(
    doubling: Doubling,
    leaf: IntegratorState,
    delta: Array,
    uniform: Array,
    inverse_mass: Vector,
    store: Callable,
) -> tuple[Doubling, Array, Array]:
    """The doubling with ``leaf`` added, and whether that leaf turns it or diverges.

    Args:
        leaf, delta: the step's leaf and its energy error ΔH.
        uniform: the step's uniform draw for the proposal.
    """
    leaf_weight = -delta
    diverging = _is_divergent(delta)
    accept = jnp.minimum(jnp.exp(-delta), 1.0)
    first = doubling.leaves == 0
    take_leaf = _uniform_progressive(first, uniform, leaf_weight, doubling.log_weight)
    r_sum = _by_coordinate(lambda s, r: jnp.where(first, r, s + r), doubling.r_sum, leaf.r)
    r_checkpoints, r_sum_checkpoints, turning = _checkpoint_turning(
        doubling, leaf.r, r_sum, inverse_mass
    )
    # Stored once: each select of the two proposals below would compute them again.
    take_leaf, turning = store((take_leaf, turning))
    grown = Doubling(
        going_right=doubling.going_right,
        edge=leaf,
        proposal=_select(take_leaf, leaf, doubling.proposal),
        log_weight=jnp.where(first, leaf_weight, jnp.logaddexp(doubling.log_weight, leaf_weight)),
        r_sum=r_sum,
        accept_sum=jnp.where(first, accept, doubling.accept_sum + accept),
        leaves=doubling.leaves + 1,
        r_checkpoints=r_checkpoints,
        r_sum_checkpoints=r_sum_checkpoints,
    )
    return grown, turning, diverging


def _merge_doubling(
    trajectory: Trajectory, doubling: Doubling, uniform: Array, turning: Array, diverging: Array
) -> Trajectory:
    """The trajectory with a finished ``doubling`` joined at its end (``turning``,
    ``diverging``: whether the doubling stopped early, its proposal then refused)."""
    left = _select(doubling.going_right, trajectory.left, doubling.edge)
    right = _select(doubling.going_right, doubling.edge, trajectory.right)
    r_sum = _by_coordinate(jnp.add, trajectory.r_sum, doubling.r_sum)
    move = _biased_progressive(
        uniform, doubling.log_weight, trajectory.log_weight, turning | diverging
    )
    return Trajectory(
        left=left,
        right=right,
        proposal=_select(move, doubling.proposal, trajectory.proposal),
        log_weight=jnp.logaddexp(trajectory.log_weight, doubling.log_weight),
        r_sum=r_sum,
        depth=trajectory.depth + 1,
        accept_sum=trajectory.accept_sum + doubling.accept_sum,
        leaves=trajectory.leaves + doubling.leaves,
        energy=trajectory.energy,
    )


# Adaptation: the step-size search (find_reasonable_step_size) and the
# warm-up adapter (kernels.adaptation).


def _search_trial(search: StepSearch, adapt: Adaptation, normal: Vector) -> tuple[Array, Vector]:
    """The search's next trial: its step size (the last doubled or halved) and a fresh momentum."""
    trial_step = search.step_size * 2.0 ** search.direction.astype(search.step_size.dtype)
    return trial_step, _momentum(adapt, normal)


def _search_update(
    search: StepSearch, trial_step: Array, delta: Array, searching: Array
) -> tuple[StepSearch, Array]:
    """The search after a trial of energy error ``delta``; whether it is done.

    It doubles or halves while the acceptance stays on the same side of 0.8,
    and stops at the float type's extremes.
    """
    direction = jnp.where(_LOG_SEARCH_ACCEPT < -delta, 1, -1).astype(jnp.int32)
    finfo = jnp.finfo(trial_step.dtype)
    not_extreme = ((trial_step > finfo.tiny) | (direction >= 0)) & (
        (trial_step < finfo.max) | (direction <= 0)
    )
    more = not_extreme & ((search.direction == 0) | (direction == search.direction))
    return StepSearch(trial_step, search.direction, direction), searching & ~more


def _next_search(searched: StepSearch, window_end: Array, step_size: Array) -> StepSearch:
    """The search goes on, or, at a mass-matrix window's end, starts again from ``step_size``."""
    unset = jnp.zeros_like(searched.last_direction)
    return _select(window_end, StepSearch(step_size, unset, unset), searched)


def _adapt(
    state: StepwiseState,
    sampler: Sampler,
    trajectory: Trajectory,
    transition_done: Array,
    warm: Array,
    warming: Array,
) -> tuple[Adaptation, Array]:
    """The adaptation after a warm-up transition that ended on ``trajectory``
    (unchanged otherwise), and whether it ended a mass-matrix window.

    ``warm``: whether the lane's transition is a warm-up one; ``warming``:
    whether any lane of the batch is in one (the update is skipped otherwise).
    """

    def update():
        accept_prob = trajectory.accept_sum / trajectory.leaves
        return update_adaptation(
            sampler.warmup,
            sampler.target_accept,
            state.transition,
            accept_prob,
            trajectory.proposal.z,
            state.adapt,
        )

    # With conditionals, computed only while a lane of the batch is warming up.
    if sampler.conditionals:
        adapted = jax.lax.cond(warming, update, lambda: state.adapt)
    else:
        adapted = update()
    adapt = _select(transition_done & warm, adapted, state.adapt)
    ends = [state.transition == end for end in window_ends(sampler.warmup)]
    at_window_end = functools.reduce(jnp.logical_or, ends, jnp.zeros_like(warm))
    return adapt, transition_done & warm & at_window_end


# The step.


def _initial_state(
    key: tuple[Array, Array], z: Vector, model_args, sampler: Sampler
) -> StepwiseState:
    """A lane's state before its first step: ``key`` its two words, ``z`` its coordinates."""
    # jax.random.split(key)[1], as NumPyro's adapter took the first half for itself.
    key = fold_in(key, jnp.ones_like(key[0]))
    pe, grad = jax.value_and_grad(sampler.potential_fn_gen(*model_args))(z)
    position = IntegratorState(z, tuple(jnp.zeros_like(x) for x in z), pe, grad)
    adapt = start_adaptation(jnp.ones_like(pe), z)
    trajectory = _start_trajectory(position, position.r, adapt.inverse_mass_matrix)
    zero_int = jnp.zeros((), jnp.int32)
    return StepwiseState(
        key=key,
        position=position,
        adapt=adapt,
        mode=jnp.array(SEARCH, jnp.int32),
        transition=zero_int,
        search=StepSearch(adapt.step_size, zero_int, zero_int),
        trajectory=trajectory,
        doubling=_start_doubling(trajectory, jnp.array(True), sampler.max_tree_depth),
        divergences=zero_int,
        depth_sum=jnp.zeros_like(pe),
        steps=zero_int,
        leapfrogs=zero_int,
    )


def _step_randomness(
    step_key: tuple[Array, Array], dim: int, dtype
) -> tuple[tuple[Vector, Vector], Vector]:
    """Two :data:`Vector` of standard normals and 3 uniforms on [0, 1) for one step of one lane.

    Counter-based: one key per step, ``step_key`` = ``fold_in(key, step)``,
    and the ``jax.random.uniform`` draw of 2·dim + 3 values from it
    (:mod:`kernels.threefry`, the same bits), the normals their Gaussian
    quantiles (as ``jax.random.normal`` makes them). Splitting the key and
    drawing normals and uniforms separately took three Threefry evaluations
    per step, each a small loop of its own in XLA's CPU code.
    """
    u = uniform_words(step_key, 2 * dim + 3, dtype)
    # Python floats: a NumPy scalar would promote float32 lanes to float64.
    above_minus_one = float(np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype)))
    normals = [
        math.sqrt(2.0) * jax.lax.erf_inv(jnp.maximum(2.0 * x - 1.0, above_minus_one))
        for x in u[: 2 * dim]
    ]
    return (tuple(normals[:dim]), tuple(normals[dim:])), tuple(u[2 * dim :])


def _materialized(tree, running: Array, sampler: Sampler):
    """``tree``, computed once and stored, where ``sampler.conditionals``.

    XLA on CPU fuses a chain of cheap elementwise operations into every
    fusion that consumes its result, and computes it again in each: the
    leaf's gradient, the Gaussian quantiles of the momenta and the
    transition's flags each feed dozens of selects below, and so were
    computed dozens of times per step (about six times the fused operations
    per lane and step that storing them leaves; docs/performance.md). With
    the per-coordinate layout a vector is several arrays, each its own
    consumer: the doubling's U-turn flag (ten checkpoints' criteria) would be
    computed again in each of the ten selects of the proposal, the step's key
    (a Threefry block) in each of its 2·dim + 3 values, and a refilled
    chain's gradient in each copy of its point. Storing a value does not
    change its bits. A conditional is a boundary XLA does not
    fuse across (an optimization barrier is not: around a refilled chain's
    gradient it left the six copies in XLA's program). ``running`` is True
    wherever a step runs (it is the loop's condition); the other branch
    exists only so that XLA keeps the conditional.
    """
    if not sampler.conditionals:
        return tree
    return jax.lax.cond(running, lambda t: t, lambda t: jax.tree.map(jnp.zeros_like, t), tree)


def _draw(state: StepwiseState, sampler: Sampler, trajectory: Trajectory, kept: Array) -> Draw:
    """The draw of a transition ending on ``trajectory``: ``sampler.observe`` of its proposal."""
    return Draw(
        kept,
        jnp.clip(state.transition - sampler.warmup, 0, sampler.samples - 1),
        sampler.observe(trajectory.proposal.z),
        trajectory.leaves,
    )


def _next_mode(
    active: Array, finished: Array, window_end: Array, searching: Array, search_done: Array
) -> Array:
    """The lane's next mode: done, searching for a step size, or building a trajectory."""
    return jnp.where(
        finished | ~active,
        DONE,
        jnp.where(window_end | (searching & ~search_done), SEARCH, TREE),
    ).astype(jnp.int32)


def _counted(
    state: StepwiseState, draw: Draw, diverging: Array, depth: Array, active: Array
) -> _Totals:
    """The lane's counts with this step's: a kept transition's divergence, depth and leapfrog
    steps, and the step itself where the lane is active."""
    return _Totals(
        divergences=state.divergences + (draw.kept & diverging).astype(jnp.int32),
        depth_sum=state.depth_sum + jnp.where(draw.kept, depth, 0.0),
        steps=state.steps + jnp.where(draw.kept, draw.leaves, 0),
        leapfrogs=state.leapfrogs + active.astype(jnp.int32),
    )


def _advance(
    state: StepwiseState, model_args, sampler: Sampler, running: Array, warming: Array
) -> tuple[StepwiseState, Draw]:
    """One leapfrog step of one lane, and whatever ends or begins with it; the draw to keep.

    NUTS (Hoffman & Gelman 2014; multinomial, Betancourt 2017) as a state
    machine: the step adds a leaf to the doubling in progress (or tries a
    step size); a finished doubling joins the trajectory; a finished
    trajectory ends the transition, which adapts, draws, and starts the next.

    ``running`` and ``warming`` are the batch's, not the lane's: whether any
    lane is still sampling (True wherever a step runs) and whether any is
    still warming up. Once a lane is done its outputs (draws, counts,
    position) no longer change.
    """
    store = functools.partial(_materialized, running=running, sampler=sampler)
    potential_fn = sampler.potential_fn_gen(*model_args)
    # Stored once: each of the step's 2·dim + 3 values would compute it again.
    step_key = store(fold_in(state.key, state.leapfrogs))
    dtype = state.position.potential_energy.dtype
    normals, uniforms = store(_step_randomness(step_key, sampler.dim, dtype))
    inverse_mass = state.adapt.inverse_mass_matrix
    searching = state.mode == SEARCH

    # The step: a trial of the step-size search, or the doubling's next leaf.
    trial_step, trial_r = _search_trial(state.search, state.adapt, normals[0])
    leaf, delta = _next_leaf(potential_fn, state, searching, trial_step, trial_r, store)
    searched, search_done = _search_update(state.search, trial_step, delta, searching)
    grown, d_turning, diverging = _grow_doubling(
        state.doubling, leaf, delta, uniforms[0], inverse_mass, store
    )
    doubling_done = _doubling_done(grown, state.trajectory.depth, d_turning, diverging)
    merged = _merge_doubling(state.trajectory, grown, uniforms[1], d_turning, diverging)
    warm = state.transition < sampler.warmup
    max_depth = jnp.where(warm, sampler.warmup_max_tree_depth, sampler.max_tree_depth)
    turning = d_turning | _is_turning(inverse_mass, merged.left.r, merged.right.r, merged.r_sum)
    active = state.mode != DONE
    transition_done = (
        active
        & ~searching
        & doubling_done
        & _trajectory_done(merged, max_depth, turning, diverging)
    )
    transition_done, doubling_done, search_done, diverging, grown, merged = store(
        (transition_done, doubling_done, search_done, diverging, grown, merged)
    )

    # A finished transition: adapt during warm-up, keep the draw after it, move.
    adapt, window_end = _adapt(state, sampler, merged, transition_done, warm, warming)
    draw = _draw(state, sampler, merged, transition_done & ~warm)
    depth = jnp.log2(merged.leaves.astype(state.depth_sum.dtype) + 1.0)
    transition = state.transition + transition_done.astype(jnp.int32)
    finished = transition == sampler.warmup + sampler.samples
    position = _select(transition_done, merged.proposal, state.position)
    # A finished search sets the step size and restarts dual averaging there.
    adapt = _select(search_done, restart_step_size(adapt, trial_step), adapt)

    # What comes next: another search step, a new transition, the next
    # doubling, or the next leaf of this one.
    begin = search_done | (transition_done & ~window_end & ~finished)
    begin, finished, window_end, position, adapt = store(
        (begin, finished, window_end, position, adapt)
    )
    doubling_done = doubling_done & active
    fresh = _start_trajectory(position, _momentum(adapt, normals[1]), adapt.inverse_mass_matrix)
    trajectory = _select(begin, fresh, _select(doubling_done, merged, state.trajectory))
    going_right = uniforms[2] < 0.5
    doubling = _select(
        begin | doubling_done,
        _start_doubling(trajectory, going_right, sampler.max_tree_depth),
        grown,
    )
    search = _next_search(searched, window_end, adapt.step_size)
    mode = _next_mode(active, finished, window_end, searching, search_done)
    counts = _counted(state, draw, diverging, depth, active)
    return StepwiseState(
        state.key, position, adapt, mode, transition, search, trajectory, doubling, *counts
    ), draw


def make_sampler(
    potential_fn_gen,
    dim: int,
    warmup: int,
    samples: int,
    target_accept: float = 0.8,
    max_tree_depth: int = 10,
    warmup_max_tree_depth: int = 10,
    record_steps: bool = False,
    *,
    observe: Callable[[Vector], Array],
    conditionals: bool,
) -> Sampler:
    """A :class:`Sampler`: everything a run closes over, as static Python values.

    Args:
        potential_fn_gen: ``(*args) -> (z -> −log density)``, as NumPyro's.
        dim: coordinates of a position.
        warmup, samples: transitions with adaptation, and transitions kept.
        target_accept: the dual-averaging target.
        max_tree_depth: cap on doublings after warm-up (2^depth − 1 leapfrogs).
        warmup_max_tree_depth: the cap during warm-up (clipped to ``max_tree_depth``).
        record_steps: keep each kept transition's leapfrog count.
        observe: ``position -> scalar``: what is kept of each draw, from the
            position as d per-coordinate arrays (:data:`Vector`), in its
            dtype; e.g. ``lambda z: jax.nn.sigmoid(z[0])``.
        conditionals: skip work with batch-level conditionals (true on CPU,
            where they are cheap; an accelerator would wait on its host for each).
    """
    return Sampler(
        potential_fn_gen,
        observe,
        int(dim),
        int(warmup),
        int(samples),
        float(target_accept),
        int(max_tree_depth),
        int(min(warmup_max_tree_depth, max_tree_depth)),
        bool(record_steps),
        bool(conditionals),
    )


def any_running(state: StepwiseState) -> Array:
    """Whether any lane is not done (a minimum, not ``jnp.any``: Pallas lowers it)."""
    return jnp.min(state.mode) != DONE


def step_all(state: StepwiseState, model_args, sampler: Sampler) -> tuple[StepwiseState, Draw]:
    """One leapfrog step of every lane of a batch: its states, and the draws it made.

    ``state`` and ``model_args`` have leading ``(L,)`` axes. A lane whose
    transition ends at this step begins the next in the same step, and its
    :class:`Draw` is ``kept`` where that transition was past warm-up; a done
    lane stays as it is. Each lane's result depends on its own state and
    arguments alone.
    """
    # Whether any lane still runs a warm-up transition.
    sampling = jnp.where(state.mode != DONE, state.transition, sampler.warmup)
    warming = jnp.min(sampling) < sampler.warmup
    return jax.vmap(
        lambda s, a, running, warming: _advance(s, a, sampler, running, warming),
        in_axes=(0, 0, None, None),
    )(state, model_args, any_running(state), warming)


def raw_keys(keys: Array) -> Array:
    """``(L, 2)`` uint32 words of ``keys``, typed ``(L,)`` or already raw."""
    if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(keys)
    return keys


def _initial_states(keys: Array, z: Array, model_args, sampler: Sampler) -> StepwiseState:
    """States of L lanes: ``keys`` ``(L,)`` typed or ``(L, 2)`` raw, ``z`` ``(L, d)`` positions."""
    keys = raw_keys(keys)
    words = (keys[:, 0], keys[:, 1])
    coordinates = tuple(z[:, j] for j in range(z.shape[-1]))
    return initial_lanes(words, coordinates, model_args, sampler)


def initial_lanes(words, coordinates: Vector, model_args, sampler: Sampler) -> StepwiseState:
    """States of L lanes before their first step.

    ``words``: each key's two uint32 words (:func:`raw_keys`' columns);
    ``coordinates``: each coordinate of the starting positions; both ``(L,)``
    arrays, as are ``model_args``' leaves.
    """
    start = jax.vmap(lambda k, x, a: _initial_state(k, x, a, sampler))
    return start(words, coordinates, model_args)


class _Draws(NamedTuple):
    """The kept draws of L chains: ``values`` ``(L, samples)``, and ``steps``, each
    transition's leapfrogs, ``(L, samples)`` with ``record_steps`` (else ``(L, 0)``)."""

    values: Array
    steps: Array


class _Totals(NamedTuple):
    """Per-chain counts ``(L,)``, as in :class:`StepwiseState`."""

    divergences: Array
    depth_sum: Array
    steps: Array
    leapfrogs: Array


def _empty(size: int, sampler: Sampler, dtype) -> tuple[_Draws, _Totals]:
    recorded = sampler.samples if sampler.record_steps else 0
    zeros = jnp.zeros((size,), jnp.int32)
    return (
        _Draws(jnp.zeros((size, sampler.samples), dtype), jnp.zeros((size, recorded), jnp.int32)),
        _Totals(zeros, jnp.zeros((size,), dtype), zeros, zeros),
    )


def _keep(draws: _Draws, rows: Array, draw: Draw) -> _Draws:
    """Each lane's draw, where kept, written to row ``rows[i]`` (rows out of range: none)."""
    rows = jnp.where(draw.kept, rows, draws.values.shape[0])
    values = draws.values.at[rows, draw.index].set(draw.value, mode="drop")
    return _Draws(values, draws.steps.at[rows, draw.index].set(draw.leaves, mode="drop"))


def _total(totals: _Totals, rows: Array, state: StepwiseState) -> _Totals:
    """Each lane's counts written to row ``rows[i]`` (rows out of range: none)."""
    counts = _Totals(state.divergences, state.depth_sum, state.steps, state.leapfrogs)
    return jax.tree.map(lambda t, v: t.at[rows].set(v, mode="drop"), totals, counts)


def _outputs(draws: _Draws, totals: _Totals, sampler: Sampler) -> ChainOutputs:
    return ChainOutputs(
        draws.values,
        totals.divergences,
        totals.depth_sum,
        draws.steps if sampler.record_steps else totals.steps,
        totals.leapfrogs,
    )


def run_lanes(
    keys: Array, z: Array, model_args, sampler: Sampler
) -> tuple[StepwiseState, ChainOutputs]:
    """Warm-up and ``samples`` NUTS transitions of L independent chains, one leapfrog per iteration.

    The loop is written over the batch, not vmapped: a vmapped ``while_loop``
    selects its whole carry between old and new every iteration, the
    ``(L, samples)`` draws included, which cost more than the leapfrog step.

    Args:
        keys: ``(L,)`` PRNG keys, one per chain.
        z: ``(L, d)`` starting positions, ``d`` = ``sampler.dim``.
        model_args: tuple of pytrees with a leading ``(L,)`` axis.
        sampler: the run's :class:`Sampler` (:func:`make_sampler`).

    Returns:
        The final :class:`StepwiseState` and the :class:`ChainOutputs`, both
        batched: ``draws`` ``(L, samples)`` holds ``sampler.observe`` of every
        kept transition's point; ``divergences``, ``depth_sum`` and ``steps``
        count over them.
    """
    return _run_all(keys, z, model_args, sampler)


def _run_all(
    keys: Array, z: Array, model_args, sampler: Sampler, n_valid=None
) -> tuple[StepwiseState, ChainOutputs]:
    """:func:`run_lanes`, running only the first ``n_valid`` lanes (all if None)."""
    size = keys.shape[0]
    rows = jnp.arange(size, dtype=jnp.int32)
    state = _initial_states(keys, z, model_args, sampler)
    if n_valid is not None:
        state = state._replace(mode=jnp.where(rows < n_valid, state.mode, DONE))
    draws, totals = _empty(size, sampler, z.dtype)

    def step(carry):
        state, draws = carry
        state, draw = step_all(state, model_args, sampler)
        return state, _keep(draws, rows, draw)

    state, draws = jax.lax.while_loop(lambda c: any_running(c[0]), step, (state, draws))
    return state, _outputs(draws, _total(totals, rows, state), sampler)


class _Queue(NamedTuple):
    """:func:`run_queue`'s loop state, but for the draws.

    Attributes:
        state: the slots' sampler states ``(S,)``.
        model_args: the model arguments of the chain in each slot.
        chain: ``(S,)`` the chain each slot holds, or L where it holds none.
        next_chain: the first chain not yet started.
        totals: ``(L,)`` counts of the chains already finished.
    """

    state: StepwiseState
    model_args: object
    chain: Array
    next_chain: Array
    totals: _Totals


def _lanewise(flag: Array, on_true, on_false):
    """Per-lane select: ``flag`` ``(S,)`` against leaves with a leading ``(S,)`` axis."""

    def pick(a, b):
        return jnp.where(flag.reshape(flag.shape + (1,) * (jnp.ndim(a) - 1)), a, b)

    return jax.tree.map(pick, on_true, on_false)


def run_queue(
    keys: Array,
    z: Array,
    model_args,
    sampler: Sampler,
    slots: int | None = None,
    n_valid: Array | int | None = None,
) -> ChainOutputs:
    """:func:`run_lanes` for a queue of L chains advanced ``slots`` at a time.

    A batch in lock-step runs until its chain with the most leapfrog steps is
    done, and the others wait: a chain's leapfrog total can be twice the
    batch's mean, so large lock-step batches keep few lanes busy
    (docs/performance.md). Here a slot whose chain is done takes the next chain of the queue, so
    lanes wait only at the queue's end.

    A chain's numbers do not depend on its slot, on when it starts, or on the
    other chains: each is the same pure function of its own key, start and
    arguments as in :func:`run_lanes`, on a device that computes a lane
    alike in batches of every size. XLA on CPU does so from 16 to 128 lanes,
    so a caller there keeps ``slots`` in that range; and it may round the
    queue's program and :func:`run_lanes`' apart (some of the model's chains
    came out otherwise; a Gaussian's did not), so a caller there runs every
    call as a queue.

    Args:
        keys, z, model_args, sampler: as in :func:`run_lanes`, for all L
            chains of the queue.
        slots: static; chains in flight at once (all L if None or larger).
        n_valid: run only the first ``n_valid`` chains (traced; all if None);
            the others' outputs are zeros. Lets a padded queue cost only its
            own chains.

    Returns:
        :class:`ChainOutputs` ``(L, …)`` in queue order.
    """
    size = keys.shape[0]
    width = size if slots is None else max(1, min(int(slots), size))
    if width == size:  # every chain in a slot from the start: nothing to refill
        return _run_all(keys, z, model_args, sampler, n_valid)[1]
    n_valid = jnp.asarray(size if n_valid is None else n_valid, jnp.int32)
    take = lambda tree, index: jax.tree.map(lambda x: x[index], tree)  # noqa: E731

    first = jnp.arange(width, dtype=jnp.int32)
    holding = first < n_valid
    state = _initial_states(keys[:width], z[:width], take(model_args, first), sampler)
    state = state._replace(mode=jnp.where(holding, state.mode, DONE))
    draws, totals = _empty(size, sampler, z.dtype)
    queue = _Queue(
        state,
        take(model_args, first),
        jnp.where(holding, first, size).astype(jnp.int32),
        jnp.minimum(width, n_valid).astype(jnp.int32),
        totals,
    )

    def refill(q: _Queue) -> _Queue:
        done = (q.state.mode == DONE) & (q.chain < size)
        totals = _total(q.totals, jnp.where(done, q.chain, size), q.state)
        new = q.next_chain + jnp.cumsum(done, dtype=jnp.int32) - 1
        load = done & (new < n_valid)
        index = jnp.where(load, new, 0)
        args = take(model_args, index)
        # Stored once: the new chains' gradients feed several copies of their point.
        fresh = _materialized(
            _initial_states(keys[index], z[index], args, sampler), jnp.any(load), sampler
        )
        return _Queue(
            _lanewise(load, fresh, q.state),
            _lanewise(load, args, q.model_args),
            jnp.where(load, new, jnp.where(done, size, q.chain)).astype(jnp.int32),
            q.next_chain + jnp.sum(load, dtype=jnp.int32),
            totals,
        )

    def advance(carry):
        # One leapfrog step of every slot, then a refill of the slots whose chain is done.
        q, draws = carry
        state, draw = step_all(q.state, q.model_args, sampler)
        draws = _keep(draws, q.chain, draw)
        q = q._replace(state=state)
        # The draws stay out of the conditional, which would copy them.
        if sampler.conditionals:  # skipped unless a slot's chain is done
            finished = jnp.any((state.mode == DONE) & (q.chain < size))
            return jax.lax.cond(finished, refill, lambda q: q, q), draws
        return refill(q), draws

    def pending(carry) -> Array:
        q = carry[0]
        return any_running(q.state) | jnp.any(q.chain < size)

    queue, draws = jax.lax.while_loop(pending, advance, (queue, draws))
    return _outputs(draws, queue.totals, sampler)
