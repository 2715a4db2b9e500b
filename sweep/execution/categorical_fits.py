"""Fit many categorical lanes at once: counts → posterior summaries of θ, by NUTS.

The categorical posterior (π and every row of the judges' confusion) has no exact
rule here, so every lane is sampled: :func:`kernels.categorical.nuts.sample_fits` in calls of the
sizes :func:`sweep.execution.schedule.nuts_call` gives the binary model's NUTS, each
padded with its first lane, so a lane's numbers never depend on the lanes beside it.
Calls run in the schedule's worker threads and are taken in order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, ThreadPoolExecutor

import jax
import numpy as np

from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout
from binmetric_sweep.kernels.nuts import NUTSSettings
from binmetric_sweep.kernels.summaries import FitResults, empty_fits
from binmetric_sweep.sweep.execution.calls import take
from binmetric_sweep.sweep.execution.fits import CallTime, FitInfo, LaneFits, sampled_fits
from binmetric_sweep.sweep.execution.programs import categorical_nuts_program
from binmetric_sweep.sweep.execution.schedule import Schedule, nuts_call, schedule_for
from binmetric_sweep.sweep.spec.lanes import require_float64

__all__ = ["fit_categorical_lanes"]


def fit_categorical_lanes(
    counts: CategoricalCounts,
    keys: jax.Array,
    layout: Layout,
    independent: bool,
    *,
    level: float = 0.95,
    nuts: NUTSSettings,
    schedule: Schedule | None = None,
    on_chunk: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> LaneFits:
    """Posterior summaries of θ = vᵀπ for B lanes, as ``(B,)`` NumPy :class:`FitResults`.

    Args:
        counts: ``(B, ...)`` categorical counts of ``layout``.
        keys: ``(B,)`` replicate keys (the sampler folds in its own tag).
        layout: the classes' values and the judges.
        independent: the posterior takes the judges as independent given the truth
            (else their joint verdict has a free distribution per true class).
        level: credible level of the central interval.
        nuts: sampler settings, resolved for the schedule's device
            (:func:`kernels.nuts.resolve_loop`).
        schedule: call sizes and workers (None: JAX's default device's).
        on_chunk: called with the number of lanes finished after each call, in order.
        stop: None, or an event that, once set, keeps calls not yet begun from
            beginning; then ``CancelledError`` is raised.
    """
    require_float64()
    schedule = schedule_for() if schedule is None else schedule
    b = int(np.shape(counts.human)[0])
    known = np.unique(np.asarray(counts.known, bool))
    if len(known) > 1:
        raise ValueError("fit_categorical_lanes: lanes with and without a known confusion")
    call = nuts_call(schedule, nuts, b)
    program = categorical_nuts_program(
        layout, nuts, bool(independent), bool(known[0]) if b else False, call.slots
    )
    size = call.fits
    starts = range(0, b, size)

    def fit(start: int):
        if stop is not None and stop.is_set():
            raise CancelledError("fit_categorical_lanes: stopped before this call began")
        begin = time.perf_counter()
        index = np.arange(start, start + size)
        n = int(min(size, b - start))
        index[n:] = start  # padded with the call's first lane, which is never run twice
        draws = jax.device_get(program(keys[index], take(counts, index), n))
        host = time.perf_counter()
        fits = sampled_fits(draws, n, level)
        end = time.perf_counter()
        return fits, CallTime("nuts", n, size, end - begin, end - host)

    parts, calls = [], []
    with ThreadPoolExecutor(schedule.workers) as pool:
        try:
            for fits, call in pool.map(fit, starts):
                parts.append(fits)
                calls.append(call)
                if on_chunk is not None:
                    on_chunk(call.lanes)
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    if not parts:
        return LaneFits(empty_fits(0), FitInfo(np.zeros(0, object), (), 0))
    fits = FitResults(*(np.concatenate(field) for field in zip(*parts, strict=True)))
    return LaneFits(fits, FitInfo(np.full(b, "nuts", object), tuple(calls), b))
