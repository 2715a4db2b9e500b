"""Fit many lanes at once: counts → per-fit posterior summaries.

Lanes are grouped by model kind (α-marginal a Beta, ρ and η known, or the
full model) and, on the full model, by coordinates (logits or ridge),
ordered by an estimate of how hard the posterior is for NUTS so that lanes
running in lock-step need similar tree depths, split into chunks of one
fixed size (the last one padded) so each group compiles once (NUTS on CPU: a
queue of chains that 32 or 128 slots work through, by the group's size; NUTS
never runs the padding), and run through ``jax.jit(jax.vmap(...))`` of the kernels (the
nested quadrature rule on CPU in small vmapped groups, one after another),
on CPU one chunk per core at a time. Each such program runs as its
:mod:`jax.export` export (:class:`sweep.compile_cache.ExportedProgram`),
which a later process loads instead of tracing the kernels again. Quadrature
of the full model tries up to four rules in turn, each checking itself and
passing on the lanes whose posterior it cannot vouch for: the adaptive
Gauss–Hermite rule on every lane whose counts let it accept the lane at all,
a middle rule (Gauss–Hermite in (α, t), or t outermost where the s rule is
exact), the nested rule with a Gauss–Hermite t axis, then the nested rule;
pass after pass on CPU, and on an accelerator rule after rule, each rule
taking all its lanes at once (:func:`_next_calls`). Results
come back in the input order, and a lane's result does not depend on which
lanes share its chunk, nor on how many chunks run at once: its randomness
comes from its own key only.
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
from binmetric_sweep.kernels.gauss_hermite import (
    AlphaTRule,
    LaplaceRule,
    alpha_t_summary,
    counts_allow,
    laplace_summary,
)
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
    HermiteTRule,
    QuadratureRule,
    hermite_t_allows,
    hermite_t_summary,
    model_kind,
    paired_rule_is_exact,
    posterior_summary,
)
from binmetric_sweep.kernels.ridge import prefers_ridge
from binmetric_sweep.kernels.summaries import FitResults
from binmetric_sweep.kernels.t_outer import TOuterRule, t_outer_summary
from binmetric_sweep.sweep.compile_cache import ExportedProgram

Method = Literal["nuts", "quadrature"]

__all__ = [
    "MIN_BATCH",
    "CPU_NUTS_SLOTS",
    "CPU_FEW_NUTS_SLOTS",
    "CPU_FEW_SLOTS_CALL_CHAINS",
    "CPU_NUTS_QUEUE",
    "ACCELERATOR_NUTS_WORKERS",
    "ACCELERATOR_QUADRATURE_CHUNK",
    "ACCELERATOR_RULE_CHUNKS",
    "CPU_QUADRATURE_CHUNK",
    "CPU_NESTED_GROUP",
    "CPU_EXACT_PAIRED_GROUP",
    "CPU_HERMITE_T_GROUP",
    "CPU_ALPHA_T_GROUP",
    "QUADRATURE_RULES",
    "FULL_MODEL_RULES",
    "fit_lanes",
    "lane_counts",
    "lane_keys",
    "nuts_chunk_size",
    "nuts_slots",
    "default_chunk_size",
    "default_workers",
    "gathers_rules",
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
#: done (:func:`kernels.stepwise.run_queue`). Before queues, chunks of 32
#: fits of 4 chains ran 1.2-1.4x as fast as chunks of 64, and as fast as
#: chunks of 16 or faster (benchmarks/results/kernels-cpu-20261124-224744.json,
#: version 0.7.0). XLA on CPU computes a lane bit for bit alike in batches
#: of 16 to 128 chains (since 0.21.0; of 8 before), not of 4, 256 or 512, so
#: a lane's draws are the same on these slots and on :data:`CPU_FEW_NUTS_SLOTS`.
CPU_NUTS_SLOTS = 128
#: On CPU the slots of a group's NUTS calls where none holds more than
#: :data:`CPU_FEW_SLOTS_CALL_CHAINS` chains (:func:`nuts_slots`). A step costs
#: about 15 µs plus 1.5 µs a slot, chain or none, so a call with few chains,
#: and the end of every call, pays for idle slots: on the benchmark's lanes,
#: one worker, best of two, groups of 16, 32, 64 and 128 fits took 1.53, 2.32,
#: 4.17 and 8.61 s on 32 slots against 2.93, 2.91, 4.77 and 7.52 on 128, the
#: same draws (the larger group's calls: about 350 chains; ad hoc,
#: 2026-11-26). 64 slots did no better than 32 on 100 fits, and worse on full
#: queues (docs/performance-history.md, 2026-11-26 afternoon).
CPU_FEW_NUTS_SLOTS = 32
#: The most chains a CPU NUTS call of a group may hold for the group to run on
#: :data:`CPU_FEW_NUTS_SLOTS` slots.
CPU_FEW_SLOTS_CALL_CHAINS = 256
#: Elsewhere (an accelerator) the slots of a NUTS call; None: all of its
#: chains at once (:func:`nuts_slots`).
ACCELERATOR_NUTS_SLOTS: int | None = None
#: Elsewhere (an accelerator) NUTS calls in flight at once by default
#: (:func:`default_workers`). With one, the device waits while the host
#: summarises each call's draws: on an H100, 10^5 of the benchmark's fits in
#: calls of 4096 took 26.8-27.7 s with one worker, of which the summaries
#: were 11.7-12.5 s, against 16.2-16.7 s with two (5,991-6,177 fits/s
#: against 3,617-3,737; three and four workers, once each: 6,488 and
#: 6,628). Three runs, each with its own one-worker baseline, on one warm
#: machine (benchmarks/results/kernels-gpu-20261127-145126.json, -150132,
#: -150256). A fit's draws do not depend on it: the calls are the same
#: programs on the same lanes, only overlapping in time (the tests check
#: this on CPU; ``bench_kernels.py --workers`` records it on a device).
ACCELERATOR_NUTS_WORKERS = 2
#: On CPU a NUTS call takes up to this many chains (a power of two of fits):
#: the queue its slots work through (:func:`default_chunk_size`).
CPU_NUTS_QUEUE = 512
#: On CPU a quadrature chunk holds this many lanes.
CPU_QUADRATURE_CHUNK = 64
#: Elsewhere (an accelerator) every quadrature chunk holds this many lanes.
#: On an H100, 10^4 of the benchmark's lanes ran at 50,000 posteriors/s in
#: chunks of 1024, 38,000 of 8192 and 46,000 of 32,768; chunks of 32,768 at
#: 10^5 lanes asked for 68 GiB (kernels-gpu-20261125-094716.json).
ACCELERATOR_QUADRATURE_CHUNK = 1024
#: Elsewhere (an accelerator) the rules whose chunks hold more lanes than
#: :data:`ACCELERATOR_QUADRATURE_CHUNK`. On an H100 a Gauss–Hermite call cost
#: about the same whatever its lanes: 6.5 ms a call of 1024 lanes, 5.3 ms of
#: 16,384. On 10^5 of the benchmark's lanes the driver ran at 389,010
#: posteriors/s with its chunks of 16,384 against 131,057 with 1024 (the
#: same warm machine, medians of three and eight runs;
#: benchmarks/results/kernels-gpu-20261127-031144.json, -031014.json's
#: ``without_hermite_t``). Each chunk is padded to its size, however few lanes
#: its group has, and a lane it rejects goes on in the nested rule's chunks.
ACCELERATOR_RULE_CHUNKS: Mapping[str, int] = MappingProxyType({"gauss_hermite": 16384})
#: On CPU the nested rule runs a chunk's lanes this many at a time
#: (:func:`_in_groups`: a loop over groups, each vmapped) rather than all at once: a
#: lane's α × t × s nodes are ~200,000, and 64 lanes' worth of each
#: intermediate (100 MB) falls far out of cache. On 512 of the benchmark's
#: lanes the two-pass driver ran at 280 posteriors/s with groups of 4, 270 of
#: 8 and 198 with the whole chunk vmapped (measured ad hoc, two runs each;
#: the committed runs are in docs/performance-history.md). The Gauss–Hermite rule, with 100
#: times fewer nodes, is fastest vmapped whole. A lane's numbers came out bit
#: for bit alike in chunks of 8, 32 and 128 lanes (96 lanes, ad hoc).
CPU_NESTED_GROUP = 4
#: The same for lanes whose s rule is exact (``exact_paired``: 8 nodes where
#: others evaluate ~40 per t node). When the nested rule took them all, 413
#: posteriors/s in groups of 16 against 325 in groups of 4 (128 benchmark
#: lanes, best of three; ad hoc). Since the t-outer rule takes almost all of
#: them first, the nested rule gets a few lanes at a time (13 of the
#: benchmark's 4096), and a group of 16 computes 16: the driver took
#: 0.463–0.494 s on 4096 lanes with groups of 4 against 0.483–0.571 with 16,
#: 0.142–0.170 against 0.155–0.277 on 1024 (four runs each, interleaved, the
#: numbers bit for bit alike; ad hoc).
CPU_EXACT_PAIRED_GROUP = 4
#: The same for :func:`kernels.quadrature.hermite_t_summary` (two nested
#: rules with 8 and 6 t-nodes where the nested rule has up to 72): on 64 of
#: the benchmark's lanes with 100 paired ratings, 3.1 ms a lane in groups of
#: 16 and of 64, 3.5 in groups of 4; with 10 (s exact), 0.7 in groups of 16
#: and 64, 0.9 of 4 (ad hoc, best of three). Since 0.16.0 groups of 8: this
#: rule gets the lanes the rules before it rejected, a few a chunk, and a
#: group of 16 computes 16. One worker, best of three, the rule's calls took
#: 43 ms on 1024 of the benchmark's lanes in groups of 8 against 53 in
#: groups of 16 (chunks of 18, 6 and 4 lanes), 100 against 102 ms on 4096
#: (a full chunk of 64 lanes: 70 against 66 ms); the driver with two
#: workers, medians of seven interleaved runs, 8,388 against 7,220
#: posteriors/s on 1024 lanes and 9,538 against 9,462 on 4096; the numbers
#: bit for bit alike (ad hoc, 2026-11-26).
CPU_HERMITE_T_GROUP = 8
#: The same for :func:`kernels.gauss_hermite.alpha_t_summary`. Vmapped whole,
#: a chunk cost its padding too: on 1024 of the benchmark's lanes (about 60
#: of them for this rule, in chunks of 64) the driver ran at 0.76 times the
#: speed it had without the rule, at 4096 lanes 1.17 times (ad hoc, one run);
#: in groups of 16, 1.02 and 1.13 times (kernels-cpu-20261125-181944.json).
#: Since 0.23.0 groups of 4: on small batches its chunks hold a few lanes
#: (3 of the benchmark's 100 lanes, in one chunk), and a group of 16 computes
#: 16. The driver with two workers, medians of interleaved runs in one
#: process: 6,552 against 5,728 posteriors/s on 100 lanes (40 runs each),
#: 7,107 against 6,830 on 1000 (15), 9,806 against 9,756 on 4096 (7) and
#: 9,940 against 10,045 on 16,384 (4); every lane's numbers bit for bit alike
#: (ad hoc, 2026-11-26).
CPU_ALPHA_T_GROUP = 4
#: The same for :func:`kernels.t_outer.t_outer_summary` (the lanes' fits do
#: not depend on it).
CPU_T_OUTER_GROUP = 16
#: Names of the rules a quadrature lane's numbers can come from, in the order
#: :func:`fit_lanes` tries them: the Beta itself (N_M = 0), the exact
#: one-dimensional rule (ρ, η known), and for the full model the adaptive
#: Gauss–Hermite rule, Gauss–Hermite in (α, t) with the s rule at each node
#: (:func:`kernels.gauss_hermite.alpha_t_summary`) or, where s is exact,
#: Gauss–Hermite in t outermost (:func:`kernels.t_outer.t_outer_summary`),
#: the nested rule with a Gauss–Hermite t axis
#: (:func:`kernels.quadrature.hermite_t_summary`), and the nested rule.
FULL_MODEL_RULES = ("gauss_hermite", "hermite_alpha_t", "t_outer", "hermite_t", "nested")
QUADRATURE_RULES = ("beta", "known", *FULL_MODEL_RULES)


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
    chunks of 32 and 128 fits, and of 128 and 512, on 128 and 1024 of the
    benchmark's lanes; ad hoc, 2026-11-25).
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
    chains at once). On an H100, 16,384 fits ran at 577 fits/s in the
    default calls of 4096 fits, and in calls of 16,384 at 670 with all
    chains at once and at 665 and 718 as queues on 16,384 and 32,768 slots
    (benchmarks/results/kernels-gpu-20261126-061902.json). Those larger
    calls changed some fits' numbers (posterior means up to 0.012 apart),
    where calls of 4096 and 1024 fits gave the same bits, so none is the
    default.
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


def default_workers(backend: str | None = None, method: Method | None = None) -> int:
    """Chunks :func:`fit_lanes` computes at once when the caller names no number.

    On CPU, one per core this process may use: XLA runs a NUTS chunk of
    :func:`default_chunk_size` on one core (as fast pinned to one core as not),
    so a second chunk in a second thread uses the second core (on the 2-core
    development CPU: NUTS 1.3x as fast on the benchmark's lanes, identical
    draws; quadrature no faster, its chunks already use both cores).
    Elsewhere :data:`ACCELERATOR_NUTS_WORKERS` for ``method`` "nuts", else 1:
    an accelerator already runs a chunk across the device, but with one
    worker it waits while the host summarises each NUTS call's draws.
    """
    if (backend or jax.default_backend()) != "cpu":
        return ACCELERATOR_NUTS_WORKERS if method == "nuts" else 1
    return usable_cores()


def gathers_rules(backend: str | None = None) -> bool:
    """Whether :func:`fit_lanes` gathers each quadrature rule's lanes by default
    (its ``gather_rules``): on an accelerator, not on CPU."""
    return (backend or jax.default_backend()) != "cpu"


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
def _quadrature_fn(
    kind: str,
    level: float,
    rule: QuadratureRule,
    group: int | None = None,
    exact_paired: bool = False,
):
    """``fn(lanes, n_valid=None)``: summaries of a chunk, of which only the first n_valid count.

    With ``group`` the lanes run that many at a time (:func:`_in_groups`),
    and groups past the first n_valid lanes are not computed at all.
    ``exact_paired``: see :func:`kernels.quadrature.posterior_summary`.
    """
    return _jit_lanes(
        jax.vmap(lambda c: posterior_summary(c, kind, level, rule, exact_paired)),
        group,
        _program_name("nested" if kind == "full" else kind, exact_paired=exact_paired),
        (kind, level, rule, exact_paired),
    )


def _program_name(*parts: str, exact_paired: bool = False) -> str:
    """A rule's compiled program's name (``jit_quadrature_<rule>…`` in HLO and traces)."""
    return "_".join(("quadrature", *parts, *(("exact_s",) if exact_paired else ())))


def _jit_lanes(vmapped, group: int | None, name: str, static: tuple) -> ExportedProgram:
    """``fn(lanes, n_valid=None)``, jitted: ``vmapped`` on all lanes, or :func:`_in_groups`.

    ``name`` names the program (``jit_<name>``), so that a profile's kernels
    can be told apart by rule; ``static``: what else it depends on (see
    :class:`sweep.compile_cache.ExportedProgram`).
    """

    def fn(lanes, n_valid=None):
        if group is None:
            return vmapped(lanes)
        return _in_groups(vmapped, group, lanes, n_valid)

    fn.__name__ = fn.__qualname__ = name
    return ExportedProgram(jax.jit(fn), name, (*static, group))


def _in_groups(fn, group: int, lanes, n_valid=None):
    """``fn`` (vmapped) over ``lanes`` ``(B,)``, ``group`` lanes at a time, one group after another.

    Only the groups that hold the first ``n_valid`` lanes (all, if None) are
    computed; the rest of the output is zeros. ``B`` and ``group`` are powers
    of two. The loop runs to a traced bound, so one program serves a chunk
    whatever its padding: a shard's last, mostly padded chunk costs what its
    own lanes cost.
    """
    size = jax.tree.leaves(lanes)[0].shape[0]
    group = min(group, size)
    count = size // group
    grouped = jax.tree.map(lambda x: x.reshape(count, group, *x.shape[1:]), lanes)
    shapes = jax.eval_shape(fn, jax.tree.map(lambda x: x[0], grouped))
    out = jax.tree.map(lambda s: jnp.zeros((count, *s.shape), s.dtype), shapes)

    def compute(i, out):
        piece = jax.tree.map(lambda x: jax.lax.dynamic_index_in_dim(x, i, keepdims=False), grouped)
        return jax.tree.map(
            lambda o, v: jax.lax.dynamic_update_index_in_dim(o, v, i, 0), out, fn(piece)
        )

    needed = count if n_valid is None else (n_valid + group - 1) // group
    out = jax.lax.fori_loop(0, needed, compute, out)
    return jax.tree.map(lambda x: x.reshape(size, *x.shape[2:]), out)


@cache
def _laplace_fn(ridge: bool, level: float, rule: LaplaceRule):
    fn = jax.vmap(lambda c: laplace_summary(c, ridge, level, rule))
    name = _program_name("gauss_hermite", "ridge" if ridge else "logit")
    return _jit_lanes(fn, None, name, (ridge, level, rule))


@cache
def _alpha_t_fn(level: float, rule: QuadratureRule, alpha_t: AlphaTRule, group: int | None):
    fn = jax.vmap(lambda c: alpha_t_summary(c, level, alpha_t, rule))
    return _jit_lanes(fn, group, _program_name("hermite_alpha_t"), (level, rule, alpha_t))


@cache
def _t_outer_fn(level: float, t_outer: TOuterRule, group: int | None):
    fn = jax.vmap(lambda c: t_outer_summary(c, level, t_outer))
    return _jit_lanes(fn, group, _program_name("t_outer"), (level, t_outer))


@cache
def _hermite_t_fn(
    level: float, rule: QuadratureRule, check: HermiteTRule, group: int | None, exact_paired: bool
):
    return _jit_lanes(
        jax.vmap(lambda c: hermite_t_summary(c, level, rule, check, exact_paired)),
        group,
        _program_name("hermite_t", exact_paired=exact_paired),
        (level, rule, check, exact_paired),
    )


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


def fit_lanes(
    counts: Counts,
    keys: jax.Array | None,
    method: Method,
    *,
    level: float = 0.95,
    nuts: NUTSSettings = NUTSSettings(),
    rule: QuadratureRule = QuadratureRule(),
    chunk_size: int | None = None,
    memory_budget_bytes: float = 2e9,
    workers: int | None = None,
    on_chunk=None,
    laplace: LaplaceRule | None = LaplaceRule(),
    hermite_t: HermiteTRule | None = HermiteTRule(),
    alpha_t: AlphaTRule | None = AlphaTRule(),
    t_outer: TOuterRule | None = TOuterRule(),
    rules: np.ndarray | None = None,
    chunk_times: list | None = None,
    rule_chunks: Mapping[str, int] | None = None,
    middle_rules: bool | None = None,
    gather_rules: bool | None = None,
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
        rule: quadrature rule.
        chunk_size: lanes per compiled call, rounded down to a power of two;
            by default :func:`default_chunk_size`.
        workers: chunks computed at once, each in its own thread; by default
            :func:`default_workers`. A lane's numbers do not depend on it.
        on_chunk: called with the number of lanes finished after each chunk,
            in plan order.
        laplace: with "quadrature", the full model's lanes are first tried
            with this adaptive Gauss–Hermite rule
            (:func:`kernels.gauss_hermite.laplace_summary`); None: not at all.
        alpha_t: then the lanes it does not accept (or was not tried on)
            whose s rule is not exact, with Gauss–Hermite in (α, t)
            (:func:`kernels.gauss_hermite.alpha_t_summary`), where its counts
            allow (on CPU only); None: not at all.
        t_outer: then, for the lanes whose s rule is exact, Gauss–Hermite
            in t outermost (:func:`kernels.t_outer.t_outer_summary`; on CPU
            only); None: not at all.
        hermite_t: then the lanes not yet accepted with the nested rule with
            a Gauss–Hermite t axis
            (:func:`kernels.quadrature.hermite_t_summary`), where its counts
            allow (on CPU only: see :func:`_quadrature_stages`); None: not
            at all. The rest get the nested ``rule``. Whether a lane is
            accepted depends on its counts alone.
        rules: None, or a ``(B,)`` array that receives each lane's rule
            (:data:`QUADRATURE_RULES`; "nuts" for sampled fits), a diagnostic.
        chunk_times: None, or a list that receives a :class:`ChunkTime` for
            each compiled call, in plan order, pass after pass (or rule
            after rule: ``gather_rules``; a diagnostic: with more than one
            worker, calls overlap in time).
        rule_chunks: quadrature rules (:data:`FULL_MODEL_RULES`) whose
            chunks hold this many lanes (a power of two), in place of
            ``chunk_size`` or the default: a benchmark's knob, since a
            lane's numbers may depend on its chunk's size. On an
            accelerator, where no ``chunk_size`` is given, they are laid over
            :data:`ACCELERATOR_RULE_CHUNKS`.
        middle_rules: whether the full model's quadrature tries the rules
            between the Gauss–Hermite and the nested one (``alpha_t``,
            ``t_outer``, ``hermite_t``); None: on CPU only (see
            :func:`_quadrature_stages`).
        gather_rules: whether each rule waits until no lane may still be
            passed on to it and then takes all its lanes at once, so that it
            makes as few calls as its lanes need (:func:`_next_calls`); else
            the rules run pass after pass, each on the lanes that the pass
            before passed on. None: :func:`gathers_rules`, on accelerators
            only, where a quadrature call costs about its kernel launches,
            not its lanes.
            On CPU calls cost their lanes, and in passes one rule's calls
            run beside another's on the cores: on the 2-core development
            CPU, gathered, the driver ran at 0.93–1.01 times its speed in
            passes on 10^2 of the benchmark's lanes, 0.99–1.04 on 10^3,
            1.00 on 10^4 and 0.97 on 10^5 (``bench_kernels.py``'s
            ``quadrature_other_schedule``; seven runs at 10^2 and 10^3,
            two at 10^4, one at 10^5). A lane's numbers do not depend on it.
        stop: None, or an event that, once set, keeps the chunks not yet
            begun from beginning: then ``CancelledError`` is raised once the
            chunks under way are done (for a caller that gives up on the
            lanes, such as a runner whose consumer stopped).

    Raises:
        concurrent.futures.CancelledError: ``stop`` was set.
    """
    b = int(np.asarray(counts.n_m).shape[0])
    out = {name: np.full(b, np.nan) for name in FitResults._fields}
    out["divergences"] = np.zeros(b, np.int64)
    out["steps"] = np.zeros(b, np.int64)
    out["exact"] = np.zeros(b, bool)
    out["sd_mcse"] = np.zeros(b)
    workers = max(1, int(workers or default_workers(method=method)))
    chunks = plan_chunks(
        counts,
        method,
        level,
        nuts,
        rule,
        chunk_size,
        memory_budget_bytes,
        laplace,
        hermite_t,
        alpha_t=alpha_t,
        t_outer=t_outer,
        workers=workers,
        rule_chunks=rule_chunks,
        middle_rules=middle_rules,
    )
    pool = ThreadPoolExecutor(workers)
    # A NUTS call's summaries in blocks on every core (summarize_draws' map_blocks;
    # on the 2-core CPU 4096 fits took 0.31 ms a fit against 0.70 in one thread,
    # summaries-cpu-20261126-114954.json): on an accelerator's host, with one
    # worker, the next call waits for them. Each block's temporaries peak near
    # 120 MB (kernels.nuts.SUMMARY_BLOCK_DRAWS), that much per core at most,
    # beside memory_budget_bytes. A pool of its own, so that a chunk's thread
    # never waits on its own pool.
    summaries = ThreadPoolExecutor(usable_cores()) if method == "nuts" else None
    if gather_rules is None:
        gather_rules = gathers_rules()

    def fit(chunk: Chunk):
        return _timed_fit(chunk, counts, keys, level, summaries, stop)

    waiting = [_Waiting(chunk.stages, len(chunk.padded), chunk.piece, chunk) for chunk in chunks]
    try:
        while waiting:
            chunks, waiting = _next_calls(waiting, workers, gather_rules)
            rejected = _run_chunks(pool, fit, chunks, out, on_chunk, rules, chunk_times)
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
    return FitResults(**out)


class _Waiting(NamedTuple):
    """Lanes of :func:`fit_lanes` that wait for the first of ``stages``, in calls of ``size``.

    ``chunk``: None, or the planned call (:func:`plan_chunks`) that holds
    exactly these lanes, made as it is unless other lanes join them.
    """

    stages: tuple[Stage, ...]
    size: int
    lanes: np.ndarray
    chunk: Chunk | None = None


def _next_calls(
    waiting: list[_Waiting], workers: int, gather: bool = True
) -> tuple[list[Chunk], list[_Waiting]]:
    """The calls :func:`fit_lanes` makes next, and the lanes that wait on.

    Waiting lanes with the same rules ahead of them and the same chunk size
    share calls (a lane's call always has the size it would have had alone),
    and a planned call whose lanes no others join is made as planned. With
    ``gather``, a rule is called only once no waiting lane may still be
    passed on to it: then all its lanes go at once, whether they were
    planned for it or rejected by different rules, groups or calls before,
    so each rule makes as few calls as its lanes need. On an accelerator a
    quadrature call costs about its kernel launches, not its lanes
    (benchmarks/GPU-NOTES.md): on 10^5 of the benchmark's lanes with the
    middle rules in chunks sized to their lanes, gathered, the rules after
    Gauss–Hermite made 6 calls, where pass after pass they made 11 (the
    nested rule 2 calls of 256 lanes for 232 lanes, not 5; on CPU, ad hoc).
    Without ``gather``, every waiting lane goes now.
    """
    later = {stage.fn for w in waiting for stage in w.stages[1:]}
    now: dict[tuple, list[_Waiting]] = {}
    held = []
    for w in waiting:
        if gather and w.stages[0].fn in later:
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
            nothing to do meanwhile (hence :data:`ACCELERATOR_NUTS_WORKERS`).
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


def _run_chunks(pool, fit, chunks, out, on_chunk, rules=None, chunk_times=None) -> list:
    """Fit ``chunks`` into ``out``; ``[(fallbacks, size, lanes)]`` their rules rejected.

    ``fit(chunk)``: a chunk's values and seconds (:func:`_timed_fit`), run on ``pool``.
    """
    rejected = {}
    # Chunks may finish in any order but are taken in plan order, so the
    # results and the on_chunk calls are the same with any number of workers.
    fitted = pool.map(fit, chunks)
    for chunk, (values, seconds) in zip(chunks, fitted, strict=True):
        n = len(chunk.piece)
        host_seconds = values.pop("host_seconds", 0.0)
        if chunk_times is not None:
            chunk_times.append(ChunkTime(chunk.rule, n, len(chunk.padded), seconds, host_seconds))
        accepted = np.asarray(values.pop("accepted", np.ones(n, bool)))[:n]
        done = chunk.piece[accepted]
        for name, value in values.items():
            out[name][done] = np.asarray(value)[:n][accepted]
        out["exact"][done] = chunk.exact
        if rules is not None:
            rules[done] = chunk.rule
        if not accepted.all():
            key = (chunk.fallbacks, len(chunk.padded))
            rejected.setdefault(key, []).append(chunk.piece[~accepted])
        if on_chunk is not None:
            on_chunk(len(done))
    return [(stages, size, np.concatenate(parts)) for (stages, size), parts in rejected.items()]


def _fit_chunk(chunk: Chunk, counts: Counts, keys: jax.Array, level: float, summaries=None) -> dict:
    """One chunk's summaries as FitResults fields, for its first ``len(chunk.piece)`` lanes.

    ``summaries``: None, or the executor a NUTS chunk's summaries run on. A
    NUTS chunk also gives ``host_seconds``, the time its summaries took
    (:attr:`ChunkTime.host_seconds`); a rule that checks itself, ``accepted``.
    """
    lanes = _take(counts, chunk.padded)
    n = len(chunk.piece)
    if chunk.exact:
        if chunk.fallbacks:  # a rule that checks itself: summaries and whether to trust them
            s, accepted = jax.device_get(chunk.fn(lanes, n))
            return {**_exact_fields(s), "accepted": accepted}
        return _exact_fields(jax.device_get(chunk.fn(lanes, n)))
    draws = jax.device_get(chunk.fn(keys[chunk.padded], lanes, n))
    start = time.perf_counter()
    d = summarize_draws(draws.alpha[:n], level, map if summaries is None else summaries.map)
    return {
        "host_seconds": time.perf_counter() - start,
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


def _exact_fields(s) -> dict:
    return {"post_mean": s.mean, "post_sd": s.sd, "ci_low": s.ci_low, "ci_high": s.ci_high}


def plan_chunks(
    counts: Counts,
    method: Method,
    level: float = 0.95,
    nuts: NUTSSettings = NUTSSettings(),
    rule: QuadratureRule = QuadratureRule(),
    chunk_size: int | None = None,
    memory_budget_bytes: float = 2e9,
    laplace: LaplaceRule | None = LaplaceRule(),
    hermite_t: HermiteTRule | None = HermiteTRule(),
    backend: str | None = None,
    alpha_t: AlphaTRule | None = AlphaTRule(),
    t_outer: TOuterRule | None = TOuterRule(),
    workers: int | None = None,
    rule_chunks: Mapping[str, int] | None = None,
    middle_rules: bool | None = None,
) -> list[Chunk]:
    """The compiled calls of :func:`fit_lanes`'s first pass, in order (arguments as there).

    ``backend``: the platform they are planned for ("cpu", "gpu", ...; by
    default JAX's), which sets chunk sizes and the quadrature's groups.
    ``workers`` (by default :func:`default_workers`): on CPU a NUTS group
    too small to fill that many calls' slots is still split into that many
    calls (:func:`_nuts_pieces`).
    """
    on_cpu = (backend or jax.default_backend()) == "cpu"
    nuts = resolve_loop(nuts, backend)
    if not on_cpu and chunk_size is None:  # the caller's sizes win over the defaults
        rule_chunks = {**ACCELERATOR_RULE_CHUNKS, **(rule_chunks or {})}
    chunks = []
    for kind, ridge, exact_paired, index in _lane_groups(counts, method, nuts, laplace):
        exact = method == "quadrature" or kind == "beta"
        if exact:
            size = chunk_size or default_chunk_size("quadrature", backend=backend)
            size = size or ACCELERATOR_QUADRATURE_CHUNK
            stages = _quadrature_stages(
                kind,
                ridge,
                exact_paired,
                level,
                rule,
                laplace,
                hermite_t,
                alpha_t,
                t_outer,
                on_cpu,
                on_cpu if middle_rules is None else middle_rules,
            )
            # Lanes start at the first rule their counts allow.
            routes = list(_route(stages, index, counts))
        else:
            size = chunk_size or default_chunk_size("nuts", nuts.chains, backend)
            size = size or nuts_chunk_size(nuts, memory_budget_bytes)
            # Only the leapfrog loop has slots: the chain kernel runs a call's
            # chains by blocks.
            slots = None
            if nuts.loop == "leapfrog":
                # The group's largest call, were it split among the workers (_nuts_pieces).
                per_worker = -(-len(index) // (workers or default_workers(backend, method)))
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
                    calls = _nuts_pieces(
                        len(lanes),
                        n,
                        nuts.chains,
                        workers or default_workers(backend, method),
                        slots,
                    )
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
    ridge: bool | None,
    exact_paired: bool,
    level: float,
    rule: QuadratureRule,
    laplace: LaplaceRule | None,
    hermite_t: HermiteTRule | None,
    alpha_t: AlphaTRule | None,
    t_outer: TOuterRule | None,
    on_cpu: bool,
    middle_rules: bool,
) -> tuple[Stage, ...]:
    """The rules a group's lanes are tried with, in order (:func:`_lane_groups`' fields).

    ``middle_rules``: whether to try the rules between the Gauss–Hermite and
    the nested one. On CPU each runs its chunk in small groups, elsewhere
    vmapped whole.
    """
    level = float(level)
    if kind != "full":
        return (Stage(kind, _quadrature_fn(kind, level, rule)),)
    group = (CPU_EXACT_PAIRED_GROUP if exact_paired else CPU_NESTED_GROUP) if on_cpu else None
    stages = [Stage("nested", _quadrature_fn(kind, level, rule, group, exact_paired), group=group)]
    # On an accelerator the middle rule's pass cost more than it saved: on an
    # H100 the driver without it ran at 62,600 and 81,300 posteriors/s on
    # 10^4 and 10^5 of the benchmark's lanes, with it 50,500 and 72,000 (as
    # fast at 10^3; kernels-gpu-20261125-094716.json, -100215.json, -100337.json),
    # so there it runs only with ``middle_rules``.
    if hermite_t is not None and middle_rules:
        group = CPU_HERMITE_T_GROUP if on_cpu else None
        fn = _hermite_t_fn(level, rule, hermite_t, group, exact_paired)
        stages.insert(0, Stage("hermite_t", fn, hermite_t_allows, group=group))
    # Only where the s rule is not exact: with s exact (N_ρη ≤ 15) the rule
    # accepted 3 of the benchmark's 526 such lanes (ad hoc), which the middle
    # rule takes at 0.3 ms a lane. Not yet measured on an accelerator: there only
    # with ``middle_rules``.
    if alpha_t is not None and middle_rules and not exact_paired:
        group = CPU_ALPHA_T_GROUP if on_cpu else None
        fn = _alpha_t_fn(level, rule, alpha_t, group)
        stages.insert(0, Stage("hermite_alpha_t", fn, hermite_t_allows, group=group))
    # With s exact (N_ρη ≤ 15), t outermost: no kink in t to rule lanes out,
    # and each t node's α panels break at the kinks exactly. Not yet measured
    # on an accelerator: there only with ``middle_rules``.
    if t_outer is not None and middle_rules and exact_paired:
        group = CPU_T_OUTER_GROUP if on_cpu else None
        fn = _t_outer_fn(level, t_outer, group)
        stages.insert(0, Stage("t_outer", fn, group=group))
    if laplace is not None and ridge is not None:
        stages.insert(0, Stage("gauss_hermite", _laplace_fn(ridge, level, laplace)))
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
    count draws came out identical in one batch of 1000 and in batches of 50
    (checked ad hoc), unlike the fits (see :func:`default_chunk_size`).
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
