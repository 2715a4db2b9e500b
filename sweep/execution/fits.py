"""Fit many lanes at once: counts → per-fit posterior summaries.

:func:`fit_lanes` answers each lane's posterior of α by exact quadrature (a
cascade of rules, :mod:`sweep.execution.cascade`) or by NUTS, in the compiled calls
:mod:`sweep.execution.calls` lays out on the device's :class:`sweep.execution.schedule.Schedule`.
Every call, whichever its rule, gives an :class:`Answer`: the fits of its lanes
as :class:`kernels.summaries.FitResults`, and which of them its rule vouches for;
the rest go on to the next rule. Calls run in worker threads, and are taken in
plan order, so the results and the progress reports do not depend on the
number of workers.

An exact posterior is a function of a lane's counts alone
(:func:`kernels.quadrature.posterior_inputs`), so lanes with the same counts
are fitted once (a grid's configurations often share counts: in the legacy grid
ρ and η do not reach the counts where N_ρη = 0). A NUTS fit also depends on its
replicate's key: each is its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, ThreadPoolExecutor
from typing import NamedTuple

import jax
import numpy as np

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.nuts import NUTSSettings, summarize_draws
from binmetric_sweep.kernels.quadrature import QuadratureRule, model_kind, posterior_inputs
from binmetric_sweep.kernels.summaries import FitResults, empty_fits, exact_fits, take_fits
from binmetric_sweep.sweep.execution.calls import (
    Chunk,
    Method,
    Waiting,
    next_calls,
    plan_chunks,
    routes,
    take,
)
from binmetric_sweep.sweep.execution.cascade import CascadeRule
from binmetric_sweep.sweep.execution.schedule import Schedule, schedule_for, usable_cores
from binmetric_sweep.sweep.spec.lanes import require_float64

__all__ = [
    "Answer",
    "CallTime",
    "FitInfo",
    "FitMemo",
    "LaneFits",
    "distinct_rows",
    "fit_lanes",
    "sampled_fits",
]


class Answer(NamedTuple):
    """What one compiled call gives for its first n lanes, whatever its rule.

    Attributes:
        fits: ``(n,)`` :class:`kernels.summaries.FitResults` (NumPy).
        accepted: ``(n,)`` bool: the lanes its rule vouches for (all, for a rule
            that does not check itself, and for NUTS); the others go on to the
            next rule, and their ``fits`` are not used.
        host_seconds: of the call's time, the host's summaries of NUTS draws
            (0 for quadrature).
    """

    fits: FitResults
    accepted: np.ndarray
    host_seconds: float = 0.0


class CallTime(NamedTuple):
    """How long one compiled call took (a diagnostic).

    Attributes:
        rule: the call's rule (:attr:`sweep.execution.calls.Chunk.rule`).
        lanes: lanes sent to it (some may be rejected and passed on).
        padded: lanes in the call, padding included.
        seconds: wall time of the call, results copied back to the host
            and, for NUTS, summarised.
        host_seconds: of ``seconds``, the host's summaries of a NUTS call's
            draws (0 for quadrature). With one worker an accelerator has
            nothing to do meanwhile (hence two workers there).
    """

    rule: str
    lanes: int
    padded: int
    seconds: float
    host_seconds: float = 0.0


class FitInfo(NamedTuple):
    """What :func:`fit_lanes` reports beside the fits (diagnostics).

    Attributes:
        rules: ``(B,)`` object array: the rule each lane's numbers come from
            (:data:`sweep.execution.cascade.QUADRATURE_RULES`, or "nuts" for sampled fits).
        calls: a :class:`CallTime` for each compiled call, in the order made
            (rule after rule, :func:`sweep.execution.calls.next_calls`; with more than one
            worker, calls overlap in time).
        distinct: lanes fitted: those with their own counts (and, for NUTS,
            every lane); the others took a lane's with the same counts, in this
            batch or from a :class:`FitMemo`.
    """

    rules: np.ndarray
    calls: tuple[CallTime, ...]
    distinct: int


class LaneFits(NamedTuple):
    """What :func:`fit_lanes` gives.

    Attributes:
        fits: ``(B,)`` NumPy :class:`kernels.summaries.FitResults`, one per lane.
        info: how they were made (:class:`FitInfo`).
    """

    fits: FitResults
    info: FitInfo


def fit_lanes(
    counts: Counts,
    keys: jax.Array | None,
    method: Method,
    *,
    level: float = 0.95,
    nuts: NUTSSettings = NUTSSettings(),
    nested: QuadratureRule = QuadratureRule(),
    cascade: tuple[CascadeRule, ...] | None = None,
    schedule: Schedule | None = None,
    on_chunk: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
    memo: FitMemo | None = None,
) -> LaneFits:
    """Posterior summaries of α for B lanes, as ``(B,)`` NumPy :class:`FitResults`, and
    how they were made (:class:`FitInfo`): ``fit_lanes(...).fits``, or
    ``fits, info = fit_lanes(...)``.

    Args:
        counts: ``(B,)`` counts (NumPy or JAX arrays).
        keys: ``(B,)`` replicate keys (:func:`kernels.counts.replicate_key`);
            only NUTS uses them (None will do for quadrature).
        method: "nuts" or "quadrature". With "nuts", lanes with N_M = 0 are
            still solved exactly: their α-marginal is the Beta itself.
        level: credible level of the central interval.
        nuts: sampler settings (its loop resolved here for the schedule's device).
        nested: node counts of the nested rule (and of the Beta and known-rate
            lanes' α rules).
        cascade: the full model's quadrature rules, tried in turn
            (:func:`sweep.execution.cascade.make_cascade` checks it); None: the
            schedule's :func:`sweep.execution.cascade.default_cascade`.
        schedule: call sizes and workers (:func:`sweep.execution.schedule.schedule_for`;
            None: JAX's default device's).
        on_chunk: called with the number of lanes finished after each call,
            in plan order.
        stop: None, or an event that, once set, keeps the calls not yet
            begun from beginning: then ``CancelledError`` is raised once the
            calls under way are done (for a caller that gives up on the
            lanes, such as a runner whose consumer stopped).
        memo: exact fits of earlier batches (:class:`FitMemo`), taken for lanes
            with the same counts instead of fitting them again; this batch's are
            added to it. The numbers do not depend on it.

    Raises:
        concurrent.futures.CancelledError: ``stop`` was set.
        ValueError: ``cascade`` could leave a lane unanswered.
    """
    require_float64()
    schedule = schedule_for() if schedule is None else schedule
    counts = take(counts, slice(None))
    first, lanes = distinct_lanes(counts, method)
    weight = np.bincount(lanes, minlength=len(first))
    out = empty_fits(len(first))
    rules = np.full(len(first), "", dtype=object)
    exact = _exact(take(counts, first), method)
    inputs = posterior_inputs(take(counts, first))
    context = (level, nested, cascade, schedule.call_sizes())
    if memo is not None:
        remembered = memo.look_up(context, inputs, exact, out, rules)
        if on_chunk is not None and remembered.any():
            on_chunk(int(weight[remembered].sum()))
    todo = np.flatnonzero(rules == "")
    fitted = take(counts, first[todo])
    chunks = plan_chunks(
        fitted, method, schedule=schedule, cascade=cascade, level=level, nuts=nuts, nested=nested
    )
    calls: list[CallTime] = []
    keys = None if keys is None else keys[first[todo]]
    pool = ThreadPoolExecutor(schedule.workers)
    # A NUTS call's summaries in blocks on every core (summarize_draws'
    # map_blocks): on an accelerator's host, with one worker, the next call
    # waits for them. Each block's temporaries peak near 120 MB
    # (kernels.nuts.SUMMARY_BLOCK_DRAWS), that much per core at most. A pool
    # of its own, so that a call's thread never waits on its own pool.
    summaries = ThreadPoolExecutor(usable_cores()) if method == "nuts" else None

    def fit(chunk: Chunk) -> tuple[Answer, float]:
        if stop is not None and stop.is_set():
            raise CancelledError("fit_lanes: stopped before this call began")
        start = time.perf_counter()
        answer = _answer(chunk, fitted, keys, level, summaries)
        return answer, time.perf_counter() - start

    waiting = [Waiting(chunk.stages, chunk.piece, chunk) for chunk in chunks]
    try:
        while waiting:
            made, waiting = next_calls(waiting, schedule.workers)
            # Calls may finish in any order but are taken in plan order, so the
            # results and the on_chunk calls are the same with any number of workers.
            rejected: dict[tuple, list[np.ndarray]] = {}
            for chunk, (answer, seconds) in zip(made, pool.map(fit, made), strict=True):
                n = len(chunk.piece)
                calls.append(
                    CallTime(chunk.rule, n, len(chunk.padded), seconds, answer.host_seconds)
                )
                done = todo[chunk.piece[answer.accepted]]
                for field, value in zip(out, answer.fits, strict=True):
                    field[done] = value[answer.accepted]
                rules[done] = chunk.rule
                if not answer.accepted.all():
                    rejected.setdefault(chunk.fallbacks, []).append(chunk.piece[~answer.accepted])
                if on_chunk is not None:
                    on_chunk(int(weight[done].sum()))
            # The lanes a rule rejected wait for the next rule their counts allow.
            waiting += [
                Waiting(stages, index)
                for fallbacks, parts in rejected.items()
                for stages, index in routes(fallbacks, np.concatenate(parts), fitted)
            ]
    finally:
        pool.shutdown(cancel_futures=True)  # after an error, start no more calls
        if summaries is not None:
            summaries.shutdown(cancel_futures=True)
    if (rules == "").any():
        raise RuntimeError(f"fit_lanes: {(rules == '').sum()} lanes were answered by no rule")
    if memo is not None:
        memo.add(context, inputs[todo], exact[todo], take_fits(out, todo), rules[todo])
    return LaneFits(take_fits(out, lanes), FitInfo(rules[lanes], tuple(calls), len(todo)))


class FitMemo:
    """Exact fits already made, by their posterior inputs, for later batches to take.

    A runner keeps one for a sweep's shards, so that configurations whose counts
    recur across shards are fitted once (the legacy grid: 116,846 distinct of
    158,400, against 128,564 within its shards). An exact fit's numbers also
    depend on the level, the nested rule's nodes, the cascade and the calls'
    sizes: the memo holds the first batch's and refuses others. It keeps at
    most ``limit`` fits, the first ones (each ~0.2 kB).
    """

    def __init__(self, limit: int = 1 << 20):
        self.limit = limit
        self._context = None
        self._fits: dict[bytes, tuple] = {}
        self._lock = threading.Lock()

    def _check(self, context) -> None:
        if self._context is None:
            self._context = context
        elif self._context != context:
            raise ValueError("FitMemo: a batch with another level, rule or call sizes")

    def look_up(self, context, inputs, exact, out: FitResults, rules) -> np.ndarray:
        """Fill ``out`` and ``rules`` where an ``exact`` lane's (bool ``(B,)``: not sampled)
        inputs are in the memo; those lanes (the memo's hits)."""
        found = np.zeros(len(inputs), bool)
        with self._lock:
            self._check(context)
            for i in np.flatnonzero(exact):
                hit = self._fits.get(inputs[i].tobytes())
                if hit is not None:
                    *values, rules[i] = hit
                    for field, value in zip(out, values, strict=True):
                        field[i] = value
                    found[i] = True
        return found

    def add(self, context, inputs, exact, fits: FitResults, rules) -> None:
        """Keep the exact ones of ``fits`` (``(n,)``, their ``inputs`` and ``rules``)."""
        with self._lock:
            self._check(context)
            for i in np.flatnonzero(exact):
                if len(self._fits) >= self.limit:
                    return
                self._fits[inputs[i].tobytes()] = (*(field[i] for field in fits), rules[i])


def _exact(counts: Counts, method: Method) -> np.ndarray:
    """Lanes whose posterior is exact: all under quadrature; under NUTS those with N_M = 0,
    whose posterior is the Beta itself."""
    b = int(np.shape(counts.n_m)[0])
    if method == "quadrature":
        return np.ones(b, bool)
    return model_kind(counts.n_m, counts.rho_eta_known) == 0


def distinct_lanes(counts: Counts, method: Method) -> tuple[np.ndarray, np.ndarray]:
    """The lanes to fit, ``(D,)`` indices into ``counts``, and each lane's among them, ``(B,)``.

    Lanes whose posterior is exact (every lane under quadrature; under NUTS
    those with N_M = 0, whose posterior is the Beta itself) and whose
    :func:`kernels.quadrature.posterior_inputs` are equal are fitted once, by
    the first of them; a NUTS lane is always its own. A lane's numbers do not
    depend on which lanes are fitted with it (:mod:`sweep.execution.schedule`), so this
    changes no number.
    """
    b = int(np.shape(counts.n_m)[0])
    exact = (
        np.ones(b, bool)
        if method == "quadrature"
        else model_kind(counts.n_m, counts.rho_eta_known) == 0
    )
    inputs = posterior_inputs(counts)
    # Sampled lanes are told apart by their index, which no exact lane carries (−1).
    tag = np.where(exact, -1.0, np.arange(b, dtype=np.float64))
    return distinct_rows(np.column_stack([inputs, tag]))


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(D,)`` the first row of each distinct value of ``(B, n)`` rows, in the order they
    first come, and ``(B,)`` each row's among them."""
    _, first, lanes = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # distinct rows in their first row's order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[lanes.reshape(-1)]


def _answer(
    chunk: Chunk, counts: Counts, keys: jax.Array | None, level: float, summaries
) -> Answer:
    """One call's :class:`Answer`, for its first ``len(chunk.piece)`` lanes.

    ``summaries``: None, or the executor a NUTS call's summaries run on.
    """
    lanes = take(counts, chunk.padded)
    n = len(chunk.piece)
    if not chunk.sampled:
        out = jax.device_get(chunk.fn(lanes, n))
        summary, accepted = out if chunk.stages[0].checked else (out, np.ones(n, bool))
        fits = exact_fits(*(np.asarray(x)[:n] for x in summary))
        return Answer(fits, np.asarray(accepted, bool)[:n])
    draws = jax.device_get(chunk.fn(keys[chunk.padded], lanes, n))
    start = time.perf_counter()
    fits = sampled_fits(draws, n, level, map if summaries is None else summaries.map)
    return Answer(fits, np.ones(n, bool), time.perf_counter() - start)


def sampled_fits(draws, n: int, level: float, map_blocks=map) -> FitResults:
    """``(n,)`` :class:`FitResults` of the first n fits of a NUTS call's draws
    (:class:`kernels.nuts.ChainDraws`, host arrays): the summaries of their ``alpha``
    (:func:`kernels.nuts.summarize_draws`, blocks mapped by ``map_blocks``) and their
    sampler's counts."""
    d = summarize_draws(draws.alpha[:n], level, map_blocks)
    return FitResults(
        post_mean=d.mean,
        post_sd=d.sd,
        ci_low=d.ci_low,
        ci_high=d.ci_high,
        rhat=d.rhat,
        ess=d.ess,
        sd_mcse=d.sd_mcse,
        divergences=np.asarray(draws.divergences[:n]).sum(axis=1),
        tree_depth=np.asarray(draws.tree_depth[:n]).mean(axis=1),
        steps=np.asarray(draws.steps[:n]).reshape(n, -1).sum(axis=1),
        exact=np.zeros(n, bool),
    )
