"""A device's schedule: how fits are laid out in compiled calls, chosen once from the device.

**The invariant it protects: a fit's numbers depend only on its own counts (and,
for NUTS, its replicate key).** Never on which lanes share its call, where in the
call it sits, how many calls run at once, how the sweep is sharded, which shards
run beside it, or whether its program came from the compile cache. XLA does not
compute a lane alike at every batch size (its fusion and reduction order depend
on the shape, on CPU and GPU alike: measured in commits 63446ab, 8865018 and
docs/performance.md), so every program is called at shapes fixed here, whatever
the lanes:

- a quadrature rule's calls hold :attr:`Schedule.quadrature_lanes` lanes (or the
  rule's own :attr:`Schedule.rule_lanes`), the last one padded by repeating a lane;
- on CPU a rule may compute its call a few lanes at a time
  (:attr:`Schedule.rule_slices`), the same slices whatever the padding;
- a NUTS lane's draws depend on the chains its call advances at once (its
  *slots*); on CPU those are one of two sizes on which XLA computes a chain alike.

:func:`schedule_for` builds the value from the device, once; everything below it
(:mod:`sweep.execution.calls`, :mod:`sweep.execution.fits`, the runners) reads it, and nothing else
asks JAX which device it is on. The tuning constants' measurements are in
docs/performance.md ("Tuning constants").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple

from binmetric_sweep.kernels.nuts import NUTSSettings

__all__ = [
    "ACCELERATOR_QUADRATURE_LANES",
    "ACCELERATOR_RULE_LANES",
    "ACCELERATOR_SHARDS_AHEAD",
    "ACCELERATOR_WORKERS",
    "CPU_FEW_NUTS_SLOTS",
    "CPU_FEW_SLOTS_CALL_CHAINS",
    "CPU_NUTS_CALL_CHAINS",
    "CPU_NUTS_SLOTS",
    "CPU_QUADRATURE_LANES",
    "CPU_RULE_SLICES",
    "ESTIMATOR_LANES",
    "MEMORY_BUDGET_BYTES",
    "MIN_BATCH",
    "NUTS_MAX_CALL_FITS",
    "NUTSCall",
    "Schedule",
    "bucket",
    "calls_per_worker",
    "nuts_call",
    "power_of_two_below",
    "schedule_for",
    "usable_cores",
]

#: On CPU every quadrature call holds this many lanes: one shape, whatever the
#: lane group's size (128 would save ~1 % at 10^4 lanes and cost small batches).
CPU_QUADRATURE_LANES = 64
#: On CPU these rules compute a call this many lanes at a time, slice after slice,
#: and only the slices that hold lanes (:func:`sweep.execution.programs.in_slices`): the
#: nested rule's ~200,000 nodes a lane stay in cache in slices of 4 (64 lanes'
#: intermediates are 100 MB); the (α, t) rule 4 and the middle rule 8 beat 16 on
#: their few lanes a call; t outermost 16 (unmeasured against others).
CPU_RULE_SLICES: Mapping[str, int] = MappingProxyType(
    {"hermite_alpha_t": 4, "t_outer": 16, "hermite_t": 8, "nested": 4}
)
#: On CPU a NUTS call takes up to this many chains (a power of two of fits): the
#: queue its slots work through. One program per coordinates, each dear to
#: compile (docs/performance.md); the padding never runs.
CPU_NUTS_CALL_CHAINS = 512
#: On CPU a leapfrog-loop NUTS call advances this many chains at once, each slot
#: taking the queue's next chain when its own is done
#: (:func:`kernels.stepwise.run_queue`). XLA on CPU computes a chain bit for bit
#: alike on 16 to 128 slots, not on 4, 256 or 512.
CPU_NUTS_SLOTS = 128
#: ... and this many where no call of the group holds more than
#: :data:`CPU_FEW_SLOTS_CALL_CHAINS` chains: a step costs a fixed part plus a
#: part per slot, so few chains on many slots pay for idle ones; the draws are
#: the same (measured: docs/performance.md, tuning constants).
CPU_FEW_NUTS_SLOTS = 32
CPU_FEW_SLOTS_CALL_CHAINS = 256
#: On an accelerator every quadrature call holds this many lanes: larger calls
#: ran no faster and the largest outgrew device memory (docs/performance.md) ...
ACCELERATOR_QUADRATURE_LANES = 1024
#: ... but for these rules: a Gauss–Hermite call costs about its kernel launches,
#: not its lanes, there, so fewer, larger calls (docs/performance.md).
ACCELERATOR_RULE_LANES: Mapping[str, int] = MappingProxyType({"gauss_hermite": 16384})
#: On an accelerator, calls in flight at once: with one the device waits while
#: the host prepares or summarises each call (docs/performance.md, tuning
#: constants). On CPU: one per core (:func:`usable_cores`).
ACCELERATOR_WORKERS = 2
#: On an accelerator, shards begun before the one in hand is written, so that
#: the device need not wait for a shard's last summaries and its write (on CPU
#: every core is already busy: none).
ACCELERATOR_SHARDS_AHEAD = 1
#: Batches are padded to powers of two of at least this many lanes (count draws,
#: and an accelerator's NUTS calls), which bounds the number of compiled programs
#: whatever the shard sizes.
MIN_BATCH = 64
#: At most this many fits in a NUTS call: above it a fit's numbers changed with
#: the call's size on an accelerator (docs/performance.md, tried and rejected).
NUTS_MAX_CALL_FITS = 4096
#: Lanes in every call of the classical estimators (:mod:`sweep.execution.estimates`), on
#: every device: closed forms cost little beside the fits, so one size serves all.
ESTIMATOR_LANES = 4096
#: What a NUTS call's kept draws and their host copies may take, where the
#: schedule sizes its calls by memory (an accelerator).
MEMORY_BUDGET_BYTES = 2e9


class Schedule(NamedTuple):
    """How :func:`sweep.execution.fits.fit_lanes` lays lanes out in compiled calls on one device.

    Built by :func:`schedule_for`; a lane's numbers may depend on the sizes
    here (``quadrature_lanes``, ``rule_lanes``, ``rule_slices``, the NUTS
    slots), never on ``workers`` or ``shards_ahead``.

    Attributes:
        device: JAX's platform: "cpu", "gpu", "tpu".
        workers: calls computed at once, each in a thread of its own.
        quadrature_lanes: lanes in every quadrature call (a power of two).
        rule_lanes: the rules (by name) whose calls hold another number of lanes.
        rule_slices: the rules whose calls compute this many lanes at a time,
            slice after slice (empty: every call vmapped whole).
        middle_rules: whether the full model's cascade has its middle rules
            (:func:`sweep.execution.cascade.default_cascade`): worth their calls where a
            call costs its lanes (CPU), not where it costs its launches.
        nuts_calls: "queue": NUTS calls of one size whatever the group (at least
            filling their slots), a group too small for one call per worker
            split among them; "group": the group's own power of two of fits,
            within the memory budget.
        nuts_call_fits: fits per NUTS call; None: ``nuts_call_chains`` worth
            (queue) or what ``memory_budget_bytes`` allows (group).
        nuts_call_chains: a queue call's chains (its fits: the power of two
            below this over the chains per fit).
        nuts_slots: chains a leapfrog-loop call advances at once; None: all of them.
        nuts_few_slots: the slots instead where no call of the group holds more
            than ``nuts_few_slots_below`` chains (None: never).
        nuts_few_slots_below: see ``nuts_few_slots``.
        memory_budget_bytes: what a NUTS call's kept draws may take (group calls).
        shards_ahead: shards the in-process runner begins before the one in
            hand is written.
        estimator_lanes: lanes in every call of the classical estimators.
    """

    device: str
    workers: int
    quadrature_lanes: int
    rule_lanes: Mapping[str, int]
    rule_slices: Mapping[str, int]
    middle_rules: bool
    nuts_calls: Literal["queue", "group"]
    nuts_call_fits: int | None
    nuts_call_chains: int | None
    nuts_slots: int | None
    nuts_few_slots: int | None
    nuts_few_slots_below: int | None
    memory_budget_bytes: float
    shards_ahead: int
    estimator_lanes: int = ESTIMATOR_LANES

    def call_lanes(self, rule: str) -> int:
        """Lanes in every call of quadrature rule ``rule`` (a power of two)."""
        return power_of_two_below(self.rule_lanes.get(rule, self.quadrature_lanes))

    def call_sizes(self) -> tuple:
        """What a lane's numbers may depend on here: every call and slice size (hashable)."""
        return (
            self.quadrature_lanes,
            tuple(sorted(self.rule_lanes.items())),
            tuple(sorted(self.rule_slices.items())),
        )

    def slice_lanes(self, rule: str) -> int | None:
        """Lanes a call of ``rule`` computes at a time; None: the whole call at once."""
        return self.rule_slices.get(rule)


def schedule_for(
    device: str | None = None,
    *,
    workers: int | None = None,
    shards_ahead: int | None = None,
    chunk_size: int | None = None,
    rule_lanes: Mapping[str, int] | None = None,
    memory_budget_bytes: float = MEMORY_BUDGET_BYTES,
) -> Schedule:
    """The schedule of ``device`` (JAX's platform; None: JAX's default device).

    Args:
        device: "cpu", "gpu", "tpu"; None asks JAX, the one place that does.
        workers: calls in flight at once; None: one per core on CPU,
            :data:`ACCELERATOR_WORKERS` elsewhere.
        shards_ahead: shards begun ahead; None: none on CPU,
            :data:`ACCELERATOR_SHARDS_AHEAD` elsewhere.
        chunk_size: a benchmark's or test's knob: lanes in every quadrature call
            and fits in every NUTS call, in place of the device's sizes (and of
            its rules' own); rounded down to a power of two.
        rule_lanes: a benchmark's knob: rules (by name) whose calls hold this
            many lanes, laid over the device's.
        memory_budget_bytes: see :attr:`Schedule.memory_budget_bytes`.
    """
    if device is None:
        import jax

        device = jax.default_backend()
    cpu = device == "cpu"
    own_lanes = {} if cpu or chunk_size else dict(ACCELERATOR_RULE_LANES)
    quadrature = chunk_size or (CPU_QUADRATURE_LANES if cpu else ACCELERATOR_QUADRATURE_LANES)
    return Schedule(
        device=device,
        workers=max(1, int(workers or (usable_cores() if cpu else ACCELERATOR_WORKERS))),
        quadrature_lanes=power_of_two_below(quadrature),
        rule_lanes=MappingProxyType({**own_lanes, **(rule_lanes or {})}),
        rule_slices=CPU_RULE_SLICES if cpu else MappingProxyType({}),
        middle_rules=cpu,
        nuts_calls="queue" if cpu else "group",
        nuts_call_fits=chunk_size,
        nuts_call_chains=CPU_NUTS_CALL_CHAINS if cpu else None,
        nuts_slots=CPU_NUTS_SLOTS if cpu else None,
        nuts_few_slots=CPU_FEW_NUTS_SLOTS if cpu else None,
        nuts_few_slots_below=CPU_FEW_SLOTS_CALL_CHAINS if cpu else None,
        memory_budget_bytes=memory_budget_bytes,
        shards_ahead=(0 if cpu else ACCELERATOR_SHARDS_AHEAD)
        if shards_ahead is None
        else shards_ahead,
    )


class NUTSCall(NamedTuple):
    """How a group of NUTS fits is laid out (:func:`nuts_call`).

    Attributes:
        fits: fits in each call, a power of two (the last call padded).
        slots: chains a leapfrog-loop call advances at once (None: all of them;
            the chain kernel always runs all of a call's chains).
        pieces: None, or the number of calls the group is split into instead,
            each holding every ``pieces``-th fit and padded to ``fits``.
    """

    fits: int
    slots: int | None
    pieces: int | None


def nuts_call(schedule: Schedule, settings: NUTSSettings, group: int) -> NUTSCall:
    """The calls of a group of ``group`` NUTS fits (``settings`` resolved for the device).

    Queue calls (CPU) have one size however few fits the group has (the
    padding is never run) and at least fill their slots; a group that would
    make fewer calls than there are workers is split into one call per
    worker, as long as each still fills its slots (otherwise a worker whose
    call is small sits idle while the other runs; docs/performance.md). Group calls (an
    accelerator) hold the group's own power of two of fits, within the memory
    budget and :data:`NUTS_MAX_CALL_FITS`.
    """
    chains = max(1, int(settings.chains))
    if schedule.nuts_calls == "group":
        size = schedule.nuts_call_fits or _fits_in_memory(settings, schedule.memory_budget_bytes)
        return NUTSCall(min(power_of_two_below(size), bucket(group)), schedule.nuts_slots, None)
    if schedule.nuts_call_fits:
        size = schedule.nuts_call_fits
    elif settings.loop == "leapfrog":
        size = power_of_two_below(schedule.nuts_call_chains // chains)
    else:  # the chain kernel (on CPU, interpreted: tests): calls the slots' size
        size = power_of_two_below(schedule.nuts_slots // chains)
    slots = None
    if settings.loop == "leapfrog":  # only the leapfrog loop has slots
        per_worker = -(-group // schedule.workers)
        call_chains = min(power_of_two_below(size), per_worker) * chains
        few = schedule.nuts_few_slots is not None and call_chains <= schedule.nuts_few_slots_below
        slots = schedule.nuts_few_slots if few else schedule.nuts_slots
    fill = -(-int(slots or schedule.nuts_slots) // chains)  # fewest fits that fill the slots
    fits = max(power_of_two_below(size), 1 << (max(1, fill) - 1).bit_length())
    return NUTSCall(fits, slots, calls_per_worker(group, fits, fill, schedule.workers))


def calls_per_worker(lanes: int, size: int, least: int, workers: int) -> int | None:
    """One call per worker for ``lanes``, if calls of ``size`` would be fewer than ``workers``.

    As many calls as ``workers``, but no more than give each at least
    ``least`` lanes; None where that is no more calls than calls of ``size``
    would make. A lane's numbers do not depend on which lanes share its call.
    """
    wanted = min(workers, -(-lanes // least))
    return wanted if wanted > -(-lanes // size) else None


def _fits_in_memory(settings: NUTSSettings, memory_budget_bytes: float) -> int:
    """Fits whose kept draws (and their host copies) fit the budget, at most
    :data:`NUTS_MAX_CALL_FITS`."""
    # The draws on the device and their host copies, with room to spare: the
    # summaries' temporaries are bounded by their blocks (kernels.nuts.SUMMARY_BLOCK_DRAWS).
    per_fit = settings.chains * settings.samples * 8 * 4
    if settings.record_steps:
        per_fit += settings.chains * settings.samples * 4
    return int(max(1, min(NUTS_MAX_CALL_FITS, memory_budget_bytes // per_fit)))


def power_of_two_below(n: int) -> int:
    """The largest power of two ≤ ``n`` (1 for n < 2)."""
    return 1 << (max(1, int(n)).bit_length() - 1)


def bucket(n: int) -> int:
    """Lanes a batch of ``n`` is padded to: a power of two, at least :data:`MIN_BATCH`."""
    return max(MIN_BATCH, 1 << (max(n, 1) - 1).bit_length())


def usable_cores() -> int:
    """Cores this process may run on."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return len(cores) if cores else os.cpu_count() or 1
