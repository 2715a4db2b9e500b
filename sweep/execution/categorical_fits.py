"""Fit many categorical lanes at once: counts → posterior summaries of θ.

``method`` "nuts": the categorical posterior (π and every row of the judges' confusion)
is sampled, :func:`kernels.categorical.nuts.sample_fits` in calls of the sizes
:func:`sweep.execution.schedule.nuts_call` gives the binary model's NUTS. ``method``
"quadrature": where the confusion is known (and K ≤ 3) θ's posterior is integrated
exactly, :func:`kernels.categorical.quadrature.posterior_summary` in calls of the
schedule's quadrature lanes, once for each distinct lane (an exact fit depends on its
counts alone). Either way each call is padded with its first lane, so a lane's numbers
never depend on the lanes beside it. Calls run in the schedule's worker threads and
are taken in order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, ThreadPoolExecutor

import jax
import numpy as np

from binmetric_sweep.kernels.categorical import quadrature
from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop
from binmetric_sweep.kernels.summaries import FitResults, empty_fits, exact_fits
from binmetric_sweep.sweep.execution.calls import Method, take
from binmetric_sweep.sweep.execution.fits import (
    CallTime,
    FitInfo,
    LaneFits,
    distinct_rows,
    sampled_fits,
)
from binmetric_sweep.sweep.execution.programs import (
    KNOWN_CONFUSION_RULE,
    categorical_nuts_program,
    categorical_quadrature_program,
)
from binmetric_sweep.sweep.execution.schedule import Schedule, nuts_call, schedule_for
from binmetric_sweep.sweep.spec.lanes import require_float64

__all__ = ["fit_categorical_lanes"]


def fit_categorical_lanes(
    counts: CategoricalCounts,
    keys: jax.Array | None,
    layout: Layout,
    independent: bool,
    *,
    method: Method = "nuts",
    level: float = 0.95,
    nuts: NUTSSettings | None = None,
    schedule: Schedule | None = None,
    on_chunk: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> LaneFits:
    """Posterior summaries of θ = vᵀπ for B lanes, as ``(B,)`` NumPy :class:`FitResults`.

    Args:
        counts: ``(B, ...)`` categorical counts of ``layout``.
        keys: ``(B,)`` replicate keys (the sampler folds in its own tag); only NUTS
            reads them (None will do for quadrature).
        layout: the classes' values and the judges.
        independent: the posterior takes the judges as independent given the truth
            (else their joint verdict has a free distribution per true class); a known
            confusion is one model either way.
        method: "nuts", or "quadrature": exact, for lanes whose confusion is known and
            layouts :func:`kernels.categorical.quadrature.applies` to (ValueError
            otherwise); R-hat, ESS and tree depth NaN, divergences and steps 0, ``exact``
            true (:func:`kernels.summaries.exact_fits`).
        level: credible level of the central interval.
        nuts: sampler settings, resolved for the schedule's device
            (:func:`kernels.nuts.resolve_loop`); None: the defaults, resolved here.
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
    if method == "quadrature":
        if b and not known[0]:
            raise ValueError("fit_categorical_lanes: quadrature needs the confusion known")
        if not quadrature.applies(layout):
            raise ValueError(f"fit_categorical_lanes: no quadrature for values {layout.values}")
        return _exact_lanes(counts, layout, level, schedule, on_chunk, stop)
    if method != "nuts":
        raise ValueError(f"fit_categorical_lanes: method {method!r} is not nuts or quadrature")
    nuts = resolve_loop(NUTSSettings(), schedule.device) if nuts is None else nuts
    call = nuts_call(schedule, nuts, b)
    program = categorical_nuts_program(
        layout, nuts, bool(independent), bool(known[0]) if b else False, call.slots
    )
    size = call.fits

    def fit(start: int):
        _check_stop(stop)
        begin = time.perf_counter()
        index = np.arange(start, start + size)
        n = int(min(size, b - start))
        index[n:] = start  # padded with the call's first lane, which is never run twice
        draws = jax.device_get(program(keys[index], take(counts, index), n))
        host = time.perf_counter()
        fits = sampled_fits(draws, n, level)
        end = time.perf_counter()
        return fits, CallTime("nuts", n, size, end - begin, end - host), n

    fits, calls = _in_calls(fit, range(0, b, size), schedule, on_chunk)
    return LaneFits(fits, FitInfo(np.full(b, "nuts", object), calls, b))


def _check_stop(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise CancelledError("fit_categorical_lanes: stopped before this call began")


def _in_calls(fit, starts, schedule: Schedule, on_chunk) -> tuple[FitResults, tuple]:
    """``fit(start) -> (fits, CallTime, lanes finished)`` for each start, in the schedule's
    worker threads, taken in order: the calls' fits concatenated, and their times."""
    parts, calls = [], []
    with ThreadPoolExecutor(schedule.workers) as pool:
        try:
            for fits, call, finished in pool.map(fit, starts):
                parts.append(fits)
                calls.append(call)
                if on_chunk is not None:
                    on_chunk(finished)
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    if not parts:
        return empty_fits(0), ()
    return FitResults(*(np.concatenate(field) for field in zip(*parts, strict=True))), tuple(calls)


def _exact_lanes(
    counts: CategoricalCounts,
    layout: Layout,
    level: float,
    schedule: Schedule,
    on_chunk: Callable[[int], None] | None,
    stop: threading.Event | None,
) -> LaneFits:
    """:func:`fit_categorical_lanes` by quadrature: each distinct lane once (h, m and C
    are all its posterior reads), then every lane given its own's fit."""
    b = int(np.shape(counts.human)[0])
    if b == 0:
        return LaneFits(empty_fits(0), FitInfo(np.zeros(0, object), (), 0))
    rows = np.concatenate(
        [
            np.asarray(x, np.float64).reshape(b, -1)
            for x in (counts.human, counts.judged, counts.confusion)
        ],
        axis=1,
    )
    first, owner = distinct_rows(rows)  # (D,) distinct lanes; (B,) each lane's
    finished = np.bincount(owner, minlength=len(first))  # lanes each distinct lane answers
    distinct = take(counts, first)
    program = categorical_quadrature_program(layout, float(level))
    size = schedule.call_lanes(KNOWN_CONFUSION_RULE)

    def fit(start: int):
        _check_stop(stop)
        begin = time.perf_counter()
        index = np.arange(start, start + size)
        n = int(min(size, len(first) - start))
        index[n:] = start  # padded with the call's first lane
        summary = jax.device_get(program(take(distinct, index)))
        fits = exact_fits(*(np.asarray(x)[:n] for x in summary))
        call = CallTime(KNOWN_CONFUSION_RULE, n, size, time.perf_counter() - begin)
        return fits, call, int(finished[start : start + n].sum())

    fits, calls = _in_calls(fit, range(0, len(first), size), schedule, on_chunk)
    fits = FitResults(*(np.asarray(field)[owner] for field in fits))
    return LaneFits(fits, FitInfo(np.full(b, KNOWN_CONFUSION_RULE, object), calls, len(first)))
