"""Fit many lanes at once: counts → per-fit posterior summaries.

Lanes are grouped by model kind (α-marginal a Beta, ρ and η known, or the
full model) and, on the full model, by coordinates (logits or ridge),
ordered by an estimate of how hard the posterior is for NUTS so that lanes
running in lock-step need similar tree depths, and split into chunks of one
fixed size (the last one padded) so each group compiles once (NUTS on CPU: a
queue of chains that 32 or 128 slots work through, by the group's size; NUTS
never runs the padding). Each chunk is one ``jax.jit(jax.vmap(...))`` call of
the kernels, run as its :mod:`jax.export` export
(:class:`sweep.compile_cache.ExportedProgram`), which a later process loads
instead of tracing the kernels again; on CPU one chunk per core at a time.

Quadrature of the full model tries the rules of a cascade in turn
(:mod:`sweep.cascade`), each checking itself and passing on the lanes whose
posterior it cannot vouch for; each rule waits to take all its lanes at once
(:func:`_next_calls`). Chunk sizes and workers are the :class:`Schedule`'s,
chosen per backend. Results come back in the input order, and
a lane's result does not depend on which lanes share its chunk, nor on how
many chunks run at once: its randomness comes from its own key only.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, ThreadPoolExecutor
from functools import cache
from types import MappingProxyType
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.counts import (
    Counts,
    Design,
    draw_counts,
    expected_counts,
    replicate_key,
)
from binmetric_sweep.kernels.gauss_hermite import LaplaceRule, counts_allow
from binmetric_sweep.kernels.logdensity import position_size
from binmetric_sweep.kernels.nuts import (
    NUTSSettings,
    resolve_loop,
    sample_fits,
    sampler_key,
    summarize_draws,
)
from binmetric_sweep.kernels.quadrature import (
    MODEL_KINDS,
    QuadratureRule,
    model_kind,
    paired_rule_is_exact,
)
from binmetric_sweep.kernels.ridge import prefers_ridge
from binmetric_sweep.kernels.summaries import FitResults
from binmetric_sweep.sweep.cascade import (
    CascadeRule,
    LaneGroup,
    default_cascade,
    exact_program,
    laplace_settings,
)
from binmetric_sweep.sweep.compile_cache import ExportedProgram

Method = Literal["nuts", "quadrature"]

__all__ = [
    "MIN_BATCH",
    "CPU_NUTS_SLOTS",
    "CPU_FEW_NUTS_SLOTS",
    "CPU_FEW_SLOTS_CALL_CHAINS",
    "CPU_NUTS_QUEUE",
    "ACCELERATOR_WORKERS",
    "ACCELERATOR_QUADRATURE_CHUNK",
    "ACCELERATOR_RULE_CHUNKS",
    "CPU_QUADRATURE_CHUNK",
    "FitInfo",
    "Schedule",
    "fit_lanes",
    "fit_lanes_info",
    "require_float64",
    "lane_counts",
    "lane_keys",
    "nuts_chunk_size",
    "nuts_slots",
    "default_chunk_size",
    "default_workers",
    "usable_cores",
    "difficulty",
    "plan_chunks",
    "Chunk",
    "ChunkTime",
    "Stage",
]

#: Batches are padded to powers of two of at least this many lanes (count
#: draws, and on an accelerator each lane group), which bounds the number of
#: compiled programs whatever the shard sizes.
MIN_BATCH = 64
#: On CPU a NUTS call advances this many chains at once (its slots; fits ×
#: chains per fit), each slot taking the queue's next chain when its own is
#: done (:func:`kernels.stepwise.run_queue`). XLA on CPU computes a lane bit
#: for bit alike in batches of 16 to 128 chains, not of 4, 256 or 512, so a
#: lane's draws are the same on these slots and on :data:`CPU_FEW_NUTS_SLOTS`.
CPU_NUTS_SLOTS = 128
#: On CPU the slots of a group's NUTS calls where none holds more than
#: :data:`CPU_FEW_SLOTS_CALL_CHAINS` chains (:func:`nuts_slots`). A step costs
#: a fixed part plus a part per slot, chain or none, so a call with few
#: chains, and the end of every call, pays for idle slots; 32 beat 128 and 64
#: on small groups (docs/performance.md), with the same draws.
CPU_FEW_NUTS_SLOTS = 32
#: The most chains a CPU NUTS call of a group may hold for the group to run on
#: :data:`CPU_FEW_NUTS_SLOTS` slots.
CPU_FEW_SLOTS_CALL_CHAINS = 256
#: Elsewhere (an accelerator) the slots of a NUTS call; None: all of its
#: chains at once (:func:`nuts_slots`).
ACCELERATOR_NUTS_SLOTS: int | None = None
#: Elsewhere (an accelerator) calls in flight at once by default
#: (:func:`default_workers`). With one, the device waits while the host
#: prepares or summarises each call: two ran 10^5 NUTS fits 1.6 times as fast
#: as one, and 10^5 quadrature posteriors 1.3 times (docs/performance.md). A
#: fit's numbers do not depend on it: the calls are the same programs on the
#: same lanes, only overlapping in time (the tests check this on CPU;
#: ``bench_kernels.py --workers`` on a device).
ACCELERATOR_WORKERS = 2
#: On CPU a NUTS call takes up to this many chains (a power of two of fits):
#: the queue its slots work through (:func:`default_chunk_size`).
CPU_NUTS_QUEUE = 512
#: On CPU a quadrature chunk holds this many lanes.
CPU_QUADRATURE_CHUNK = 64
#: Elsewhere (an accelerator) every quadrature chunk holds this many lanes:
#: larger chunks ran no faster on an H100 and at 32,768 lanes outgrew its
#: memory (docs/performance.md).
ACCELERATOR_QUADRATURE_CHUNK = 1024
#: Elsewhere (an accelerator) the rules whose chunks hold more lanes than
#: :data:`ACCELERATOR_QUADRATURE_CHUNK`: a Gauss–Hermite call costs about the
#: same whatever its lanes there, so chunks of 16,384 ran the driver three
#: times as fast as chunks of 1024 (docs/performance.md). Each chunk is padded
#: to its size, however few lanes its group has, and a lane it rejects goes on
#: in the next rule's chunks.
ACCELERATOR_RULE_CHUNKS: Mapping[str, int] = MappingProxyType({"gauss_hermite": 16384})


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


def difficulty(counts: Counts) -> np.ndarray:
    """How many leapfrog steps a lane's posterior is likely to need (a sort key).

    NUTS trajectories lengthen with the ratio of the widest to the narrowest
    posterior scale; here that is the metric's N_M against the paired and
    human sample sizes that pin ρ, η and α.
    """
    n_m = np.asarray(counts.n_m, float)
    paired = np.asarray(counts.n_pos_paired, float) + np.asarray(counts.n_neg_paired, float)
    return np.log1p(n_m) - 0.5 * np.log1p(paired) - 0.5 * np.log1p(np.asarray(counts.n_phi))


def default_chunk_size(method: Method, chains: int = 4, backend: str | None = None) -> int | None:
    """Lanes (fits) per compiled call of ``method`` when the caller names none.

    On CPU (``backend``, by default JAX's), quadrature takes
    :data:`CPU_QUADRATURE_CHUNK` lanes in every call, so that a lane's
    numbers do not depend on how many lanes share its group (which follows
    from the sharding): XLA on CPU does not compute a lane bit for bit alike
    in batches of every size (seen: 3e-16 in the quadrature's moments between
    64 and 256 lanes). NUTS takes the power of two of fits nearest below
    :data:`CPU_NUTS_QUEUE` chains (at least one fit), however few its group
    has (the padding is never run); what a lane's draws depend on is the
    slots (:func:`nuts_slots`): 32 or 128, on which XLA computes a lane
    alike. Elsewhere
    ``None``: :data:`ACCELERATOR_QUADRATURE_CHUNK` for quadrature (the
    Gauss–Hermite rule's :data:`ACCELERATOR_RULE_CHUNKS`), every
    chunk that size, however few lanes its group has (on an H100 a lane's
    quadrature moments moved by up to 8e-16 between chunks of 64, 256 and
    1024 lanes); for NUTS what the memory budget allows, shrunk to the
    group's own power of two (on an H100 every lane's draws were the same in
    chunks of 32 to 512 fits).
    """
    if (backend or jax.default_backend()) != "cpu":
        return None
    if method == "quadrature":
        return CPU_QUADRATURE_CHUNK
    return _fits_below(CPU_NUTS_QUEUE, chains)


def nuts_slots(backend: str | None = None, call_chains: int | None = None) -> int | None:
    """Chains a NUTS call advances at once (:func:`kernels.stepwise.run_queue`'s ``slots``).

    On CPU :data:`CPU_FEW_NUTS_SLOTS` where ``call_chains``, the most chains
    any of the group's calls holds, is at most
    :data:`CPU_FEW_SLOTS_CALL_CHAINS`, else :data:`CPU_NUTS_SLOTS` (also
    where it is None); a lane's draws are the same on either, and a call
    holds at least its slots' worth of chains (:func:`_nuts_call_fits`).
    Elsewhere :data:`ACCELERATOR_NUTS_SLOTS` (None: all of the call's
    chains at once). On an H100 queues and calls larger than 4096 fits ran
    up to 1.25 times as fast but changed some fits' numbers, where calls of
    4096 and 1024 fits gave the same bits (docs/performance.md), so none is
    the default.
    """
    if (backend or jax.default_backend()) != "cpu":
        return ACCELERATOR_NUTS_SLOTS
    if call_chains is not None and call_chains <= CPU_FEW_SLOTS_CALL_CHAINS:
        return CPU_FEW_NUTS_SLOTS
    return CPU_NUTS_SLOTS


def _fits_below(chains_total: int, chains: int) -> int:
    """The power of two of fits nearest below ``chains_total`` chains (at least one)."""
    return _power_of_two_below(chains_total // max(1, int(chains)))


def _power_of_two_below(n: int) -> int:
    """The largest power of two ≤ ``n`` (1 for n < 2)."""
    return 1 << (max(1, int(n)).bit_length() - 1)


def _nuts_call_fits(asked: int, group: int, chains: int, backend: str | None, slots=None) -> int:
    """Fits per NUTS call for a group of ``group`` fits, from ``asked`` (a power of two).

    On CPU ``asked`` whatever the group's size, and never fewer than fill the
    call's ``slots``: one shape of call however the lanes are sharded (each
    NUTS program took tens of seconds to compile), and the padding costs
    nothing since it is never run. Elsewhere capped at the group's bucket.
    """
    if (backend or jax.default_backend()) != "cpu":
        return min(asked, _bucket(group))
    fill = _fits_to_fill(slots or CPU_NUTS_SLOTS, chains)
    return max(asked, 1 << (max(1, fill) - 1).bit_length())


def _fits_to_fill(slots: int, chains: int) -> int:
    """Fewest fits of ``chains`` chains that fill ``slots``."""
    return -(-int(slots) // max(1, int(chains)))


def default_workers(backend: str | None = None) -> int:
    """Chunks :func:`fit_lanes` computes at once when the caller names no number.

    On CPU, one per core this process may use: XLA runs a NUTS chunk of
    :func:`default_chunk_size` on one core (as fast pinned to one core as not),
    so a second chunk in a second thread uses the second core (on the 2-core
    development CPU: NUTS 1.3x as fast on the benchmark's lanes, identical
    draws; quadrature no faster, its chunks already use both cores).
    Elsewhere :data:`ACCELERATOR_WORKERS`, whatever the method: an
    accelerator already runs a chunk across the device, but with one worker
    it waits while the host prepares or summarises each call.
    """
    if (backend or jax.default_backend()) != "cpu":
        return ACCELERATOR_WORKERS
    return usable_cores()


def usable_cores() -> int:
    """Cores this process may run on."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return len(cores) if cores else os.cpu_count() or 1


def nuts_chunk_size(settings: NUTSSettings, memory_budget_bytes: float) -> int:
    """Fits per chunk that keep the kept draws (and their host copies) within the budget.

    At most 4096: on an H100 a fit's numbers were the same in calls of 4096
    and 1024 fits, not in calls of 16,384 (:func:`nuts_slots`), and a sweep's
    numbers must not depend on how its shards group the lanes.
    """
    # The draws on the device and their host copies, with room to spare: the
    # summaries' temporaries are bounded by their blocks (kernels.nuts.SUMMARY_BLOCK_DRAWS).
    per_fit = settings.chains * settings.samples * 8 * 4
    if settings.record_steps:
        per_fit += settings.chains * settings.samples * 4
    return int(max(1, min(4096, memory_budget_bytes // per_fit)))  # plan_chunks rounds it


@cache
def _nuts_fn(dim: int, settings: NUTSSettings, ridge: bool | None = None, slots: int | None = None):
    """``fn(keys, counts, n_valid=None)``: draws of a chunk, only its first n_valid fits run."""

    def batch(keys, counts, n_valid=None):
        keys = jax.vmap(sampler_key)(keys)
        return sample_fits(keys, counts, settings, dim, ridge, slots, n_valid)

    return ExportedProgram(jax.jit(batch), "nuts", (dim, settings, ridge, slots))


def _take(tree, index):
    return jax.tree.map(lambda x: np.asarray(x)[index], tree)


def _chunks(index: np.ndarray, size: int):
    """Consecutive pieces of ``index`` of exactly ``size`` (the last padded by repetition)."""
    for start in range(0, len(index), size):
        piece = index[start : start + size]
        yield piece, np.concatenate([piece, np.repeat(piece[:1], size - len(piece))])


class Stage(NamedTuple):
    """A quadrature rule that a lane may be sent on to when the one before rejects it.

    Attributes:
        rule: its name, one of :data:`QUADRATURE_RULES`.
        fn: the jitted kernel, as :attr:`Chunk.fn`.
        allows: None, or ``allows(counts) -> (n,) bool`` (host-side): the
            lanes it could ever accept; the others skip it.
        size: None, or the lanes in each of its chunks, in place of the
            plan's (:func:`plan_chunks`' ``rule_chunks``).
        group: None, or the lanes its calls compute at a time, one group
            after another, and only the groups that hold lanes
            (:func:`_in_groups`; on CPU); None: a call computes its whole
            chunk, padding included.
    """

    rule: str
    fn: Callable
    allows: Callable | None = None
    size: int | None = None
    group: int | None = None


class Chunk(NamedTuple):
    """One compiled call of :func:`fit_lanes`.

    Attributes:
        piece: ``(n,)`` indices of the lanes it fits, into the input.
        padded: ``(size,)`` the lanes sent in: ``piece``, then repeats of its
            first lane up to the chunk's size, a power of two.
        stages: its rule, then the rules :func:`fit_lanes` tries, in turn,
            on the lanes that rule rejects (:attr:`fallbacks`).
    """

    piece: np.ndarray
    padded: np.ndarray
    stages: tuple[Stage, ...]

    @property
    def fn(self) -> Callable:
        """The jitted kernel, called as ``fn(counts, n)`` when :attr:`exact`, else
        ``fn(keys, counts, n)``, on the ``padded`` lanes (n: how many of them
        count; NUTS's leapfrog loop runs no others)."""
        return self.stages[0].fn

    @property
    def rule(self) -> str:
        """The name of its rule (:data:`QUADRATURE_RULES`, or "nuts")."""
        return self.stages[0].rule

    @property
    def exact(self) -> bool:
        """Quadrature (or the Beta itself), not NUTS."""
        return self.rule != "nuts"

    @property
    def fallbacks(self) -> tuple[Stage, ...]:
        """The rules tried on the lanes that :attr:`fn` rejects, in chunks of
        the same size (or of their own :attr:`Stage.size`). Where there are
        any, ``fn`` returns a summary and whether to trust it (a rule that
        checks itself: :func:`kernels.gauss_hermite.laplace_summary`,
        :func:`kernels.quadrature.hermite_t_summary`); so does every fallback
        but the last."""
        return self.stages[1:]


class Schedule(NamedTuple):
    """How :func:`fit_lanes` lays lanes out in compiled calls: chosen once per backend.

    Every field left None takes ``backend``'s default. A lane's numbers may
    depend on the size of its chunk (XLA may round a lane apart in batches of
    other sizes), never on ``workers``.

    Attributes:
        backend: the platform planned for ("cpu", "gpu", ...); None: JAX's default.
        chunk_size: lanes per compiled call, rounded down to a power of two;
            None: :func:`default_chunk_size`.
        rule_chunks: quadrature rules (by name, :data:`sweep.cascade.FULL_MODEL_RULES`)
            whose chunks hold this many lanes (rounded down to a power of two),
            in place of ``chunk_size`` or the default: a benchmark's knob. On an
            accelerator, where no ``chunk_size`` is given, laid over
            :data:`ACCELERATOR_RULE_CHUNKS`.
        workers: chunks computed at once, each in its own thread; None:
            :func:`default_workers`.
        memory_budget_bytes: what a NUTS chunk's kept draws and their host
            copies may take (:func:`nuts_chunk_size`), where no size is given.
    """

    backend: str | None = None
    chunk_size: int | None = None
    rule_chunks: Mapping[str, int] | None = None
    workers: int | None = None
    memory_budget_bytes: float = 2e9


class FitInfo(NamedTuple):
    """What :func:`fit_lanes_info` reports beside the fits (diagnostics).

    Attributes:
        rules: ``(B,)`` object array: the rule each lane's numbers come from
            (:data:`sweep.cascade.QUADRATURE_RULES`, or "nuts" for sampled fits).
        calls: a :class:`ChunkTime` for each compiled call, in the order made
            (rule after rule, :func:`_next_calls`; with more
            than one worker calls overlap in time).
    """

    rules: np.ndarray
    calls: tuple[ChunkTime, ...]


def fit_lanes(
    counts: Counts,
    keys: jax.Array | None,
    method: Method,
    *,
    level: float = 0.95,
    nuts: NUTSSettings = NUTSSettings(),
    rule: QuadratureRule = QuadratureRule(),
    cascade: tuple[CascadeRule, ...] | None = None,
    schedule: Schedule = Schedule(),
    on_chunk=None,
    stop: threading.Event | None = None,
) -> FitResults:
    """Posterior summaries of α for B lanes, as ``(B,)`` NumPy :class:`FitResults`.

    Args:
        counts: ``(B,)`` counts (NumPy or JAX arrays).
        keys: ``(B,)`` replicate keys (:func:`kernels.counts.replicate_key`);
            only NUTS uses them (None will do for quadrature).
        method: "nuts" or "quadrature". With "nuts", lanes with N_M = 0 are
            still solved exactly: their α-marginal is the Beta itself.
        level: credible level of the central interval.
        nuts: sampler settings.
        rule: the nested quadrature rule's nodes (and the exact rules' of
            the Beta and known-rate lanes).
        cascade: the full model's quadrature rules, tried in turn
            (:mod:`sweep.cascade`); None: :func:`sweep.cascade.default_cascade`
            for the schedule's backend. Whether a lane is accepted by a rule
            depends on its counts alone.
        schedule: chunk sizes, workers and the order of calls (:class:`Schedule`).
        on_chunk: called with the number of lanes finished after each chunk,
            in plan order.
        stop: None, or an event that, once set, keeps the chunks not yet
            begun from beginning: then ``CancelledError`` is raised once the
            chunks under way are done (for a caller that gives up on the
            lanes, such as a runner whose consumer stopped).

    Raises:
        concurrent.futures.CancelledError: ``stop`` was set.
    """
    return fit_lanes_info(
        counts,
        keys,
        method,
        level=level,
        nuts=nuts,
        rule=rule,
        cascade=cascade,
        schedule=schedule,
        on_chunk=on_chunk,
        stop=stop,
    )[0]


def fit_lanes_info(
    counts: Counts,
    keys: jax.Array | None,
    method: Method,
    *,
    level: float = 0.95,
    nuts: NUTSSettings = NUTSSettings(),
    rule: QuadratureRule = QuadratureRule(),
    cascade: tuple[CascadeRule, ...] | None = None,
    schedule: Schedule = Schedule(),
    on_chunk=None,
    stop: threading.Event | None = None,
) -> tuple[FitResults, FitInfo]:
    """:func:`fit_lanes` (arguments as there), and a :class:`FitInfo` of how it went."""
    b = int(np.asarray(counts.n_m).shape[0])
    out = {name: np.full(b, np.nan) for name in FitResults._fields}
    out["divergences"] = np.zeros(b, np.int64)
    out["steps"] = np.zeros(b, np.int64)
    out["exact"] = np.zeros(b, bool)
    out["sd_mcse"] = np.zeros(b)
    rules = np.full(b, "", dtype=object)
    calls: list[ChunkTime] = []
    backend = schedule.backend or jax.default_backend()
    schedule = schedule._replace(
        backend=backend,
        workers=max(1, int(schedule.workers or default_workers(backend))),
    )
    chunks = plan_chunks(
        counts, method, level=level, nuts=nuts, rule=rule, cascade=cascade, schedule=schedule
    )
    pool = ThreadPoolExecutor(schedule.workers)
    # A NUTS call's summaries in blocks on every core (summarize_draws'
    # map_blocks): on an accelerator's host, with one worker, the next call
    # waits for them. Each block's temporaries peak near 120 MB
    # (kernels.nuts.SUMMARY_BLOCK_DRAWS), that much per core at most, beside
    # memory_budget_bytes. A pool of its own, so that a chunk's thread never
    # waits on its own pool.
    summaries = ThreadPoolExecutor(usable_cores()) if method == "nuts" else None

    def fit(chunk: Chunk):
        return _timed_fit(chunk, counts, keys, level, summaries, stop)

    waiting = [_Waiting(chunk.stages, len(chunk.padded), chunk.piece, chunk) for chunk in chunks]
    try:
        while waiting:
            chunks, waiting = _next_calls(waiting, schedule.workers)
            rejected = _run_chunks(pool, fit, chunks, out, on_chunk, rules, calls)
            # The lanes a rule rejected wait for the next rule their counts
            # allow, in chunks of the same size (so a lane's numbers do not
            # depend on which others were rejected with it).
            waiting += [
                _Waiting(stages, size, lanes)
                for fallbacks, size, index in rejected
                for stages, lanes in _route(fallbacks, index, counts)
            ]
    finally:
        pool.shutdown(cancel_futures=True)  # after an error, start no more chunks
        if summaries is not None:
            summaries.shutdown(cancel_futures=True)
    return FitResults(**out), FitInfo(rules, tuple(calls))


class _Waiting(NamedTuple):
    """Lanes of :func:`fit_lanes` that wait for the first of ``stages``, in calls of ``size``.

    ``chunk``: None, or the planned call (:func:`plan_chunks`) that holds
    exactly these lanes, made as it is unless other lanes join them.
    """

    stages: tuple[Stage, ...]
    size: int
    lanes: np.ndarray
    chunk: Chunk | None = None


def _next_calls(waiting: list[_Waiting], workers: int) -> tuple[list[Chunk], list[_Waiting]]:
    """The calls :func:`fit_lanes` makes next, and the lanes that wait on.

    Waiting lanes with the same rules ahead of them and the same chunk size
    share calls (a lane's call always has the size it would have had alone),
    and a planned call whose lanes no others join is made as planned. A rule
    is called only once no waiting lane may still be passed on to it: then
    all its lanes go at once, whether they were planned for it or rejected by
    different rules, groups or calls before, so each rule makes as few calls
    as its lanes need. On an accelerator a quadrature call costs about its
    kernel launches, not its lanes; on CPU this order ran as fast as rules
    pass after pass (docs/performance.md).
    """
    later = {stage.fn for w in waiting for stage in w.stages[1:]}
    now: dict[tuple, list[_Waiting]] = {}
    held = []
    for w in waiting:
        if w.stages[0].fn in later:
            held.append(w)
        else:
            now.setdefault((w.stages, w.stages[0].size or w.size), []).append(w)
    if not now:
        raise RuntimeError("fit_lanes: every waiting rule waits on another (a cycle of rules)")
    chunks = []
    for (stages, size), ws in now.items():
        if all(w.chunk is not None for w in ws):
            chunks += [w.chunk for w in ws]
            continue
        lanes = np.concatenate([w.lanes for w in ws])
        pieces = _spread(stages[0], len(lanes), size, workers)
        chunks += _staged_chunks(stages, lanes, size, pieces)
    return chunks, held


def _route(stages: tuple[Stage, ...], index: np.ndarray, counts: Counts):
    """``(stages', lanes)``: lanes of ``index``, each with its stages from the first it may take."""
    while stages and stages[0].allows is not None:
        allowed = np.asarray(stages[0].allows(_take(counts, index)), bool)
        if allowed.any():
            yield stages, index[allowed]
        stages, index = stages[1:], index[~allowed]
    if stages and len(index):
        yield stages, index


def _spread(stage: Stage, lanes: int, size: int, workers: int) -> int | None:
    """How many calls a later pass's ``lanes`` for ``stage`` make, if not calls of ``size``.

    A rule whose calls compute their lanes in groups (:attr:`Stage.group`)
    costs its groups, not its padding. So a pass's lanes for it that would
    make fewer calls than there are workers are split into one call per
    worker, each padded to the same size, as long as each has a group of
    lanes to compute. On 1000 of the benchmark's lanes the second pass sent
    the middle rule 17 lanes: one call of three groups of 8, ~40 ms on one
    core while the other finished the pass's three small calls and waited.
    A lane's numbers do not depend on which lanes share its call. None:
    calls of ``size``.
    """
    if stage.group is None:
        return None
    return _calls_per_worker(lanes, stage.size or size, stage.group, workers)


def _calls_per_worker(lanes: int, size: int, least: int, workers: int) -> int | None:
    """One call per worker for ``lanes``, if calls of ``size`` would be fewer than ``workers``.

    As many calls as ``workers``, but no more than give each at least
    ``least`` lanes; None where that is no more calls than calls of ``size``
    would make (:func:`_spread`, :func:`_nuts_pieces`).
    """
    wanted = min(workers, -(-lanes // least))
    return wanted if wanted > -(-lanes // size) else None


def _staged_chunks(
    stages: tuple[Stage, ...], lanes: np.ndarray, size: int, pieces: int | None = None
) -> list[Chunk]:
    """``lanes`` in chunks of ``size``, each for the first of ``stages``, then the rest.

    With ``pieces`` (not None), that many chunks instead, each padded to
    ``size``: ``lanes[k::pieces]``, so that each holds lanes of every
    difficulty. A stage's own :attr:`Stage.size` wins over ``size``.
    """
    size = stages[0].size or size
    if pieces is None:
        parts = _chunks(lanes, size)
    else:
        parts = (next(_chunks(lanes[k::pieces], size)) for k in range(pieces))
    return [Chunk(p, q, stages) for p, q in parts]


class ChunkTime(NamedTuple):
    """How long one compiled call of :func:`fit_lanes` took (a diagnostic).

    Attributes:
        rule: the chunk's rule (:attr:`Chunk.rule`).
        lanes: lanes sent to it (some may be rejected and passed on).
        padded: lanes in the call, padding included.
        seconds: wall time of the call, results copied back to the host
            and, for NUTS, summarised.
        host_seconds: of ``seconds``, the host's summaries of a NUTS call's
            draws (0 for quadrature). With one worker an accelerator has
            nothing to do meanwhile (hence :data:`ACCELERATOR_WORKERS`).
    """

    rule: str
    lanes: int
    padded: int
    seconds: float
    host_seconds: float = 0.0


def _timed_fit(
    chunk: Chunk, counts: Counts, keys: jax.Array, level: float, summaries=None, stop=None
):
    """:func:`_fit_chunk`'s values and the seconds they took; ``stop`` as in :func:`fit_lanes`."""
    if stop is not None and stop.is_set():
        raise CancelledError("fit_lanes: stopped before this chunk began")
    start = time.perf_counter()
    values = _fit_chunk(chunk, counts, keys, level, summaries)
    return values, time.perf_counter() - start


class ChunkValues(NamedTuple):
    """What one compiled call gave, for its first ``len(chunk.piece)`` lanes.

    Attributes:
        fields: :class:`FitResults` fields (NumPy arrays) by name.
        accepted: ``(n,)`` bool: the lanes its rule vouches for (all, for a
            rule that does not check itself); the others go on to the next rule.
        host_seconds: the time the host's summaries of a NUTS call's draws
            took (:attr:`ChunkTime.host_seconds`; 0 for quadrature).
    """

    fields: dict
    accepted: np.ndarray
    host_seconds: float = 0.0


def _run_chunks(pool, fit, chunks, out, on_chunk, rules, calls) -> list:
    """Fit ``chunks`` into ``out``; ``[(fallbacks, size, lanes)]`` their rules rejected.

    ``fit(chunk)``: a chunk's :class:`ChunkValues` and seconds (:func:`_timed_fit`),
    run on ``pool``. Each lane's rule goes into ``rules``, each call's time onto ``calls``.
    """
    rejected = {}
    # Chunks may finish in any order but are taken in plan order, so the
    # results and the on_chunk calls are the same with any number of workers.
    fitted = pool.map(fit, chunks)
    for chunk, (values, seconds) in zip(chunks, fitted, strict=True):
        n = len(chunk.piece)
        calls.append(ChunkTime(chunk.rule, n, len(chunk.padded), seconds, values.host_seconds))
        accepted = np.asarray(values.accepted)[:n]
        done = chunk.piece[accepted]
        for name, value in values.fields.items():
            out[name][done] = np.asarray(value)[:n][accepted]
        out["exact"][done] = chunk.exact
        rules[done] = chunk.rule
        if not accepted.all():
            key = (chunk.fallbacks, len(chunk.padded))
            rejected.setdefault(key, []).append(chunk.piece[~accepted])
        if on_chunk is not None:
            on_chunk(len(done))
    return [(stages, size, np.concatenate(parts)) for (stages, size), parts in rejected.items()]


def _fit_chunk(
    chunk: Chunk, counts: Counts, keys: jax.Array, level: float, summaries=None
) -> ChunkValues:
    """One chunk's summaries, for its first ``len(chunk.piece)`` lanes.

    ``summaries``: None, or the executor a NUTS chunk's summaries run on.
    """
    lanes = _take(counts, chunk.padded)
    n = len(chunk.piece)
    if chunk.exact:
        if chunk.fallbacks:  # a rule that checks itself: summaries and whether to trust them
            s, accepted = jax.device_get(chunk.fn(lanes, n))
            return ChunkValues(_exact_fields(s), accepted)
        s = jax.device_get(chunk.fn(lanes, n))
        return ChunkValues(_exact_fields(s), np.ones(n, bool))
    draws = jax.device_get(chunk.fn(keys[chunk.padded], lanes, n))
    start = time.perf_counter()
    d = summarize_draws(draws.alpha[:n], level, map if summaries is None else summaries.map)
    fields = {
        "post_mean": d.mean,
        "post_sd": d.sd,
        "ci_low": d.ci_low,
        "ci_high": d.ci_high,
        "rhat": d.rhat,
        "ess": d.ess,
        "sd_mcse": d.sd_mcse,
        "divergences": draws.divergences[:n].sum(axis=1),
        "tree_depth": draws.tree_depth[:n].mean(axis=1),
        "steps": np.asarray(draws.steps[:n]).reshape(n, -1).sum(axis=1),
    }
    return ChunkValues(fields, np.ones(n, bool), time.perf_counter() - start)


def _exact_fields(s) -> dict:
    return {"post_mean": s.mean, "post_sd": s.sd, "ci_low": s.ci_low, "ci_high": s.ci_high}


def plan_chunks(
    counts: Counts,
    method: Method,
    *,
    level: float = 0.95,
    nuts: NUTSSettings = NUTSSettings(),
    rule: QuadratureRule = QuadratureRule(),
    cascade: tuple[CascadeRule, ...] | None = None,
    schedule: Schedule = Schedule(),
) -> list[Chunk]:
    """The compiled calls of :func:`fit_lanes`'s first pass, in order (arguments as there).

    The schedule's backend (by default JAX's) sets chunk sizes and the
    quadrature's groups; its ``workers`` (by default :func:`default_workers`):
    on CPU a NUTS group too small to fill that many calls' slots is still
    split into that many calls (:func:`_nuts_pieces`).
    """
    backend = schedule.backend or jax.default_backend()
    on_cpu = backend == "cpu"
    workers = schedule.workers or default_workers(backend)
    chunk_size, rule_chunks = schedule.chunk_size, schedule.rule_chunks
    cascade = default_cascade(backend) if cascade is None else tuple(cascade)
    nuts = resolve_loop(nuts, backend)
    if not on_cpu and chunk_size is None:  # the caller's sizes win over the defaults
        rule_chunks = {**ACCELERATOR_RULE_CHUNKS, **(rule_chunks or {})}
    laplace = laplace_settings(cascade)
    chunks = []
    for kind, ridge, exact_paired, index in _lane_groups(counts, method, nuts, laplace):
        exact = method == "quadrature" or kind == "beta"
        if exact:
            size = chunk_size or default_chunk_size("quadrature", backend=backend)
            size = size or ACCELERATOR_QUADRATURE_CHUNK
            stages = _quadrature_stages(
                kind, LaneGroup(ridge, exact_paired), float(level), rule, cascade, on_cpu
            )
            # Lanes start at the first rule their counts allow.
            routes = list(_route(stages, index, counts))
        else:
            size = chunk_size or default_chunk_size("nuts", nuts.chains, backend)
            size = size or nuts_chunk_size(nuts, schedule.memory_budget_bytes)
            # Only the leapfrog loop has slots: the chain kernel runs a call's
            # chains by blocks.
            slots = None
            if nuts.loop == "leapfrog":
                # The group's largest call, were it split among the workers (_nuts_pieces).
                per_worker = -(-len(index) // workers)
                call_chains = min(_power_of_two_below(size), per_worker) * nuts.chains
                slots = nuts_slots(backend, call_chains)
            elif on_cpu and not chunk_size:
                size = _fits_below(CPU_NUTS_SLOTS, nuts.chains)
            fn = _nuts_fn(position_size(kind == "known"), nuts, ridge, slots)
            routes = [((Stage("nuts", fn),), index)]
        for stages, lanes in routes:
            # A power of two, whatever was asked for, and no more than the group's
            # bucket, except quadrature's on an accelerator (see default_chunk_size).
            n = _power_of_two_below(size)
            if not exact:
                n = _nuts_call_fits(n, len(lanes), nuts.chains, backend, slots)
                if on_cpu:
                    calls = _nuts_pieces(len(lanes), n, nuts.chains, workers, slots)
                    chunks += _staged_chunks(stages, lanes, n, calls)
                    continue
            elif on_cpu:
                n = min(n, _bucket(len(lanes)))
            if exact and rule_chunks:  # every rule's chunks sized, its fallbacks' too
                stages = tuple(_sized(stage, rule_chunks.get(stage.rule, n)) for stage in stages)
            chunks += _staged_chunks(stages, lanes, n)
    return chunks


def _sized(stage: Stage, size: int) -> Stage:
    """``stage`` with chunks of ``size`` lanes, rounded down to a power of two."""
    return stage._replace(size=_power_of_two_below(size))


def _nuts_pieces(group: int, size: int, chains: int, workers: int, slots: int | None) -> int | None:
    """How many CPU NUTS calls a group of ``group`` fits is split into, if not calls of ``size``.

    Calls of ``size`` fits, as many as hold the group, unless they are fewer
    than ``workers``: then one call per worker, as long as each still fills
    its ``slots``. On the 2-core development CPU
    100 of the benchmark's fits made a call of 30 fits and one of 70, and the
    first core sat idle for 4 of the 5 s the second took. A fit's draws do
    not depend on its call (:func:`kernels.stepwise.run_queue`). None: calls
    of ``size``.
    """
    return _calls_per_worker(group, size, _fits_to_fill(slots or CPU_NUTS_SLOTS, chains), workers)


def _quadrature_stages(
    kind: str,
    group: LaneGroup,
    level: float,
    rule: QuadratureRule,
    cascade: tuple[CascadeRule, ...],
    on_cpu: bool,
) -> tuple[Stage, ...]:
    """The rules a group's lanes are tried with, in order: the one exact rule of a
    Beta or known-rate lane, or the rules of ``cascade`` that take the group. On CPU
    a rule may compute its chunk in small groups (:attr:`CascadeRule.cpu_group`),
    elsewhere vmapped whole."""
    if kind != "full":
        return (Stage(kind, exact_program(kind, level, rule)),)
    stages = []
    for step in cascade:
        if step.takes(group):
            at_a_time = step.cpu_group(group) if on_cpu else None
            fn = step.program(group, level, rule, at_a_time)
            stages.append(Stage(step.name, fn, step.allows, group=at_a_time))
    return tuple(stages)


def _lane_groups(
    counts: Counts, method: Method, nuts: NUTSSettings, laplace: LaplaceRule | None = None
):
    """``(kind, ridge, exact_paired, index)``: groups of lanes that share one compiled kernel.

    Lanes are grouped by model kind and, on the full model, by their
    coordinates (:func:`kernels.ridge.prefers_ridge`; NUTS with
    ``nuts.ridge``, quadrature with ``laplace``), so that each step evaluates
    one log-density; each group is in order of :func:`difficulty`. With
    quadrature, ``ridge`` is None for full-model lanes whose counts are too
    few for the Gauss–Hermite rule ever to accept them
    (:func:`kernels.gauss_hermite.counts_allow`; 19 % of the benchmark's
    lanes): they skip it instead of costing a Gauss–Hermite fit first.
    ``exact_paired`` marks quadrature's lanes with
    few paired ratings, whose nested rule integrates s exactly
    (:func:`kernels.quadrature.paired_rule_is_exact`). All of it is a
    function of a lane's own counts, so a lane's group does not depend on
    the others.
    """
    kinds = model_kind(counts.n_m, counts.rho_eta_known)
    order = np.argsort(difficulty(counts), kind="stable")
    for k, kind in enumerate(MODEL_KINDS):
        index = order[kinds[order] == k]
        if len(index) == 0:
            continue
        if kind == "full" and method == "quadrature":
            yield from _quadrature_groups(counts, index, laplace)
        elif kind == "full" and nuts.ridge and method == "nuts":
            ridge = np.asarray(prefers_ridge(_take(counts, index)), bool)
            for flag in (False, True):
                if np.any(ridge == flag):
                    yield kind, flag, False, index[ridge == flag]
        else:
            yield kind, False, False, index


def _quadrature_groups(counts: Counts, index: np.ndarray, laplace: LaplaceRule | None):
    """:func:`_lane_groups` for quadrature's full-model lanes ``index``, order kept."""
    lanes = _take(counts, index)
    exact_paired = np.asarray(paired_rule_is_exact(lanes), bool)
    if laplace is None:
        tried, ridge = np.zeros(len(index), bool), np.zeros(len(index), bool)
    else:
        tried = np.asarray(counts_allow(lanes, laplace.min_count), bool)
        ridge = np.asarray(prefers_ridge(lanes), bool)
    for paired in (False, True):
        for flag in (None, False, True):
            if flag is None:
                keep = ~tried & (exact_paired == paired)
            else:
                keep = tried & (ridge == flag) & (exact_paired == paired)
            if keep.any():
                yield "full", flag, paired, index[keep]


def _bucket(n: int) -> int:
    """Lanes a batch of ``n`` is padded to: a power of two, at least :data:`MIN_BATCH`."""
    return max(MIN_BATCH, 1 << (max(n, 1) - 1).bit_length())


def _padded_call(fn, n: int, *trees):
    """``fn`` (jitted, vmapped) on lane trees padded to :func:`_bucket` lanes; the first n back.

    Padding bounds the number of compiled shapes. Keys are integer arithmetic;
    count draws are the same in batches of every size, unlike the fits (see
    :func:`default_chunk_size`).
    """
    size = _bucket(n)

    def pad(x):
        x = jnp.asarray(x)
        return jnp.concatenate([x, jnp.repeat(x[:1], size - n, axis=0)]) if size > n else x

    out = fn(*jax.tree.map(pad, trees))
    return jax.tree.map(lambda x: x[:n], out)


@cache
def _keys_fn(seed: int):
    base = jax.random.key(seed)
    fn = jax.jit(jax.vmap(lambda w, r: replicate_key(base, w, r)))
    return ExportedProgram(fn, "replicate_keys", (seed,))


def lane_keys(seed: int, config_words: np.ndarray, replicates: np.ndarray) -> jax.Array:
    """``(B,)`` replicate keys from the seed, ``(B, 2)`` uint32 config-id words and replicates."""
    words = np.asarray(config_words, np.uint32)
    return _padded_call(_keys_fn(int(seed)), len(words), words, np.asarray(replicates, np.uint32))


@cache
def _counts_fn(mode: str):
    if mode == "expected":
        fn = jax.jit(jax.vmap(lambda key, design: expected_counts(design)))
    else:
        fn = jax.jit(jax.vmap(draw_counts))
    return ExportedProgram(fn, f"{mode}_counts")


def lane_counts(designs: Design, keys: jax.Array, mode: Literal["expected", "sampled"]) -> Counts:
    """``(B,)`` NumPy counts of B lanes: rounded expected values, or drawn from each lane's key."""
    n = int(np.shape(designs.alpha)[0])
    counts = _padded_call(_counts_fn(mode), n, keys, designs)
    return jax.tree.map(np.asarray, jax.device_get(counts))
