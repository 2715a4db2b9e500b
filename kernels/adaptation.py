"""NUTS warm-up adaptation of one chain: NumPyro's ``warmup_adapter``, one array per coordinate.

Step size by dual averaging (NumPyro's ``dual_averaging``; Nesterov 2009 as
adapted by Hoffman & Gelman 2014), a diagonal mass matrix by Welford's
variance over Stan's windows (``build_adaptation_schedule``), regularised at
each window's end as Stan does. The arithmetic is NumPyro's operation for
operation, so the numbers are its numbers; what differs is the layout.
NumPyro keeps a position and the mass matrix as ``(d,)`` vectors; here each
is a tuple of d arrays, one per coordinate, so that a batch of lanes is a
set of ``(L,)`` arrays with no small minor axis (nothing to slice, gather or
reduce across lanes' coordinates), which a kernel compiled outside XLA
(Pallas) can hold in registers. For the same reason no float array here is
weakly typed: Pallas's Triton lowering computes a transcendental function
of a weakly typed float64 array in float32 (its dispatch tables take the
first entry of the same kind).

Unlike NumPyro's, the adapter searches for no step size itself (its
``find_reasonable_step_size`` is left out): :mod:`kernels.stepwise` runs that
search as steps of its own, and restarts dual averaging where it ends
(:func:`restart_step_size`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from numpyro.infer.hmc_util import build_adaptation_schedule

Array = jax.Array
#: A point's coordinates (position, momentum, gradient, mass matrix): one array each.
Vector = tuple[Array, ...]

__all__ = [
    "Adaptation",
    "DualAveraging",
    "start_adaptation",
    "update_adaptation",
    "restart_step_size",
    "window_ends",
]


class Adaptation(NamedTuple):
    """A chain's adaptation state.

    Attributes:
        step_size: the leapfrog step size.
        inverse_mass_matrix: the diagonal of the inverse mass matrix, one array a coordinate.
        mass_matrix_sqrt: its inverse square roots (momenta are drawn as these
            times standard normals).
        ss_state: dual averaging's state (log step size, its average, the
            average statistic, the count, the prox centre).
        mm_state: Welford's state in the current window (mean and sum of
            squared deviations, one array a coordinate each, and the count).
        window_idx: the index of the current window of Stan's schedule.
    """

    step_size: Array
    inverse_mass_matrix: Vector
    mass_matrix_sqrt: Vector
    ss_state: DualAveraging
    mm_state: tuple[Vector, Vector, Array]
    window_idx: Array


class DualAveraging(NamedTuple):
    """Dual averaging's state (NumPyro's tuple, in its order).

    Attributes:
        x_t: the current log step size.
        x_avg: its weighted average.
        g_avg: the average statistic (target minus acceptance).
        t: updates so far.
        prox_center: log step size that the iterates are pulled towards.
    """

    x_t: Array
    x_avg: Array
    g_avg: Array
    t: Array
    prox_center: Array


#: NumPyro's (and Stan's) dual averaging constants.
_T0, _KAPPA, _GAMMA = 10, 0.75, 0.05


def _dual_averaging_start(prox_center: Array) -> DualAveraging:
    zero = jnp.zeros_like(prox_center)
    return DualAveraging(
        zero, zero, zero, jnp.zeros(jnp.shape(zero), jnp.result_type(int)), prox_center
    )


def _dual_averaging_update(g: Array, state: DualAveraging) -> DualAveraging:
    """NumPyro's ``dual_averaging`` update, with the count taken to float explicitly."""
    t = state.t + 1
    time = t.astype(state.g_avg.dtype) + _T0
    g_avg = (1 - 1 / time) * state.g_avg + g / time
    x_t = state.prox_center - (t.astype(g_avg.dtype) ** 0.5) / _GAMMA * g_avg
    weight_t = t.astype(g_avg.dtype) ** (-_KAPPA)
    x_avg = (1 - weight_t) * state.x_avg + weight_t * x_t
    return DualAveraging(x_t, x_avg, g_avg, t, state.prox_center)


def _welford_start(like: Vector) -> tuple[Vector, Vector, Array]:
    zeros = tuple(jnp.zeros_like(x) for x in like)
    return zeros, zeros, jnp.zeros(jnp.shape(like[0]), jnp.result_type(int))


def _welford_update(sample: Vector, state):
    mean, m2, n = state
    n = n + 1
    delta_pre = tuple(s - m for s, m in zip(sample, mean, strict=True))
    mean = tuple(m + d / n for m, d in zip(mean, delta_pre, strict=True))
    delta_post = tuple(s - m for s, m in zip(sample, mean, strict=True))
    m2 = tuple(v + a * b for v, a, b in zip(m2, delta_pre, delta_post, strict=True))
    return mean, m2, n


def _welford_final(state) -> tuple[Vector, Vector]:
    """The regularised variances and their inverse square roots (NumPyro's ``final_fn``)."""
    _, m2, n = state
    shrinkage = 1e-3 * (5 / (n + 5))
    cov = tuple((n / (n + 5)) * (v / (n - 1)) + shrinkage for v in m2)
    return cov, tuple(jnp.reciprocal(jnp.sqrt(c)) for c in cov)


def start_adaptation(step_size: Array, position: Vector) -> Adaptation:
    """The state at the start of warm-up: unit masses, dual averaging at 10 × ``step_size``."""
    ones = tuple(jnp.ones_like(x) for x in position)
    return Adaptation(
        step_size=step_size,
        inverse_mass_matrix=ones,
        mass_matrix_sqrt=ones,
        ss_state=_dual_averaging_start(jnp.log(10 * step_size)),
        mm_state=_welford_start(position),
        window_idx=jnp.zeros(jnp.shape(step_size), jnp.result_type(int)),
    )


def restart_step_size(state: Adaptation, step_size: Array) -> Adaptation:
    """``state`` at a new step size, dual averaging restarted there (as at a window's end)."""
    log_ten = jnp.log(jnp.full_like(step_size, 10.0))
    return state._replace(
        step_size=step_size, ss_state=_dual_averaging_start(log_ten + jnp.log(step_size))
    )


def window_ends(warmup: int) -> tuple[int, ...]:
    """The transitions that end Stan's middle windows, where the mass matrix changes."""
    return tuple(int(w.end) for w in build_adaptation_schedule(warmup)[1:-1])


def _schedule_lookup(table: tuple[int, ...], index: Array) -> Array:
    """``table[index]`` for a traced ``index``, as selects (no gather)."""
    out = jnp.full(jnp.shape(index), table[-1], jnp.result_type(int))
    for i, value in enumerate(table[:-1]):
        out = jnp.where(index == i, value, out)
    return out


def update_adaptation(
    warmup: int, target_accept: float, t: Array, accept_prob: Array, z: Vector, state: Adaptation
) -> Adaptation:
    """``state`` after warm-up transition ``t``, ended at ``z`` with acceptance ``accept_prob``.

    NumPyro's ``warmup_adapter`` update: dual averaging's step, the last
    warm-up transition taking the averaged step size; the point joins
    Welford's variance inside a middle window; at a middle window's end the
    mass matrix becomes the window's regularised variance and dual averaging
    restarts at the current step size.
    """
    schedule = build_adaptation_schedule(warmup)
    ends = tuple(int(w.end) for w in schedule)
    ss_state = _dual_averaging_update(target_accept - accept_prob, state.ss_state)
    log_step_size, log_step_size_avg = ss_state.x_t, ss_state.x_avg
    step_size = jnp.where(t == (warmup - 1), jnp.exp(log_step_size_avg), jnp.exp(log_step_size))
    finfo = jnp.finfo(jnp.result_type(step_size))
    step_size = jnp.clip(step_size, finfo.tiny, finfo.max)

    window_idx = state.window_idx
    is_middle_window = (0 < window_idx) & (window_idx < (len(schedule) - 1))
    mm_state = jax.tree.map(
        lambda new, old: jnp.where(is_middle_window, new, old),
        _welford_update(z, state.mm_state),
        state.mm_state,
    )
    t_at_window_end = t == _schedule_lookup(ends, window_idx)
    state = Adaptation(
        step_size,
        state.inverse_mass_matrix,
        state.mass_matrix_sqrt,
        ss_state,
        mm_state,
        jnp.where(t_at_window_end, window_idx + 1, window_idx),
    )
    inverse_mass, mass_sqrt = _welford_final(mm_state)
    at_end = restart_step_size(
        state._replace(
            inverse_mass_matrix=inverse_mass,
            mass_matrix_sqrt=mass_sqrt,
            mm_state=_welford_start(z),
        ),
        step_size,
    )
    return jax.tree.map(
        lambda new, old: jnp.where(t_at_window_end & is_middle_window, new, old), at_end, state
    )
