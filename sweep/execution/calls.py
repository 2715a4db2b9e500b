"""The compiled calls that fit a batch of lanes: which program takes which lanes, in what order.

Lanes are grouped by model kind (α-marginal a Beta, ρ and η known, or the full
model) and, on the full model, by what its programs are specialised for
(:class:`sweep.execution.cascade.LaneGroup`; NUTS: logit or ridge coordinates); each group
is ordered by how hard its posteriors are for NUTS, so that lanes stepping in
lock-step need similar tree depths, and cut into :class:`Chunk` s, one compiled
call each, of the sizes the :class:`sweep.execution.schedule.Schedule` fixes. A quadrature
lane goes through the rules its group and counts allow (:class:`Stage` s), each
passing on what it rejects; a rule is called once no waiting lane can still reach
it (:func:`next_calls`). Everything here is a function of the lanes' counts and
the schedule: which lanes share a call changes no lane's numbers
(:mod:`sweep.execution.schedule`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Literal, NamedTuple

import jax
import numpy as np

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.gauss_hermite import LaplaceRule, counts_allow
from binmetric_sweep.kernels.logdensity import position_size
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop
from binmetric_sweep.kernels.quadrature import (
    MODEL_KINDS,
    QuadratureRule,
    model_kind,
    paired_rule_is_exact,
)
from binmetric_sweep.kernels.ridge import prefers_ridge
from binmetric_sweep.sweep.execution.cascade import (
    CascadeRule,
    LaneGroup,
    default_cascade,
    laplace_settings,
    make_cascade,
    single_rule,
)
from binmetric_sweep.sweep.execution.programs import nuts_program
from binmetric_sweep.sweep.execution.schedule import (
    Schedule,
    calls_per_worker,
    nuts_call,
    schedule_for,
)

Method = Literal["nuts", "quadrature"]

__all__ = [
    "Chunk",
    "Method",
    "Stage",
    "Waiting",
    "difficulty",
    "lane_groups",
    "next_calls",
    "plan_chunks",
    "staged_chunks",
    "take",
]


class Stage(NamedTuple):
    """A program a lane may be sent to: a quadrature rule, or NUTS.

    Attributes:
        rule: the rule's name (:data:`sweep.execution.cascade.QUADRATURE_RULES`), or "nuts".
        fn: the program: ``fn(lanes, n_valid)`` for a rule, ``fn(keys, lanes,
            n_valid)`` for NUTS.
        checked: ``fn`` returns ``(summary, accepted)``; the lanes not accepted
            go on to the next stage (:attr:`sweep.execution.cascade.CascadeRule.checked`).
        allows: None, or ``allows(counts) -> (n,) bool`` (host-side): the
            lanes it could ever accept; the others skip it.
        size: lanes in each of its calls, a power of two.
        slice_lanes: None, or the lanes its calls compute at a time, slice
            after slice, and only the slices that hold lanes
            (:func:`sweep.execution.programs.in_slices`).
    """

    rule: str
    fn: Callable
    checked: bool
    allows: Callable | None
    size: int
    slice_lanes: int | None = None


class Chunk(NamedTuple):
    """One compiled call.

    Attributes:
        piece: ``(n,)`` indices of the lanes it fits, into the input.
        padded: ``(size,)`` the lanes sent in: ``piece``, then repeats of its
            first lane up to the call's size.
        stages: its program, then the ones the lanes it rejects are tried
            with, in turn (:attr:`fallbacks`).
    """

    piece: np.ndarray
    padded: np.ndarray
    stages: tuple[Stage, ...]

    @property
    def fn(self) -> Callable:
        """The program of the call (:attr:`Stage.fn`)."""
        return self.stages[0].fn

    @property
    def rule(self) -> str:
        """The name of its rule (:data:`sweep.execution.cascade.QUADRATURE_RULES`, or "nuts")."""
        return self.stages[0].rule

    @property
    def sampled(self) -> bool:
        """NUTS draws, not an exact posterior (quadrature, or the Beta itself)."""
        return self.rule == "nuts"

    @property
    def fallbacks(self) -> tuple[Stage, ...]:
        """The stages tried, in turn, on the lanes this call rejects."""
        return self.stages[1:]


def take(tree, index):
    """Every leaf of ``tree`` (NumPy or JAX arrays) at ``index``, as NumPy."""
    return jax.tree.map(lambda x: np.asarray(x)[index], tree)


def difficulty(counts: Counts) -> np.ndarray:
    """How many leapfrog steps a lane's posterior is likely to need (a sort key).

    NUTS trajectories lengthen with the ratio of the widest to the narrowest
    posterior scale; here that is the metric's N_M against the paired and
    human sample sizes that pin ρ, η and α.
    """
    n_m = np.asarray(counts.n_m, float)
    paired = np.asarray(counts.n_pos_paired, float) + np.asarray(counts.n_neg_paired, float)
    return np.log1p(n_m) - 0.5 * np.log1p(paired) - 0.5 * np.log1p(np.asarray(counts.n_phi))


def plan_chunks(
    counts: Counts,
    method: Method,
    *,
    schedule: Schedule | None = None,
    cascade: tuple[CascadeRule, ...] | None = None,
    level: float = 0.95,
    nuts: NUTSSettings = NUTSSettings(),
    nested: QuadratureRule = QuadratureRule(),
) -> list[Chunk]:
    """The first calls of :func:`sweep.execution.fits.fit_lanes`, in order (arguments as there).

    A quadrature lane's first call is of the first rule its counts allow; NUTS
    lanes are laid out by :func:`sweep.execution.schedule.nuts_call`, with ``nuts``
    resolved for the schedule's device (:func:`kernels.nuts.resolve_loop`).
    """
    schedule = schedule_for() if schedule is None else schedule
    cascade = make_cascade(
        *(default_cascade(schedule.middle_rules) if cascade is None else cascade)
    )
    nuts = resolve_loop(nuts, schedule.device)
    chunks = []
    for kind, ridge, s_exact, index in lane_groups(counts, method, nuts, laplace_settings(cascade)):
        if method == "quadrature" or kind == "beta":
            group = LaneGroup(ridge, s_exact)
            stages = quadrature_stages(kind, group, float(level), nested, cascade, schedule)
            for route, lanes in routes(stages, index, counts):
                chunks += staged_chunks(route, lanes)
        else:
            call = nuts_call(schedule, nuts, len(index))
            fn = nuts_program(position_size(kind == "known"), nuts, ridge, call.slots)
            chunks += staged_chunks(
                (Stage("nuts", fn, False, None, call.fits),), index, call.pieces
            )
    return chunks


def quadrature_stages(
    kind: str,
    group: LaneGroup,
    level: float,
    nested: QuadratureRule,
    cascade: tuple[CascadeRule, ...],
    schedule: Schedule,
) -> tuple[Stage, ...]:
    """The rules a group's lanes are tried with, in order: the one rule of a Beta or
    known-rate lane, or the rules of ``cascade`` that take the group, each with its
    call's size and slices from ``schedule``."""
    rules = (single_rule(kind),) if kind != "full" else cascade
    stages = []
    for rule in rules:
        if rule.takes(group):
            lanes = schedule.slice_lanes(rule.name)
            fn = rule.program(group, level, nested, lanes)
            size = schedule.call_lanes(rule.name)
            stages.append(Stage(rule.name, fn, rule.checked, rule.allows, size, lanes))
    return tuple(stages)


def lane_groups(
    counts: Counts, method: Method, nuts: NUTSSettings, laplace: LaplaceRule | None = None
) -> Iterator[tuple[str, bool | None, bool, np.ndarray]]:
    """``(kind, ridge, s_exact, index)``: groups of lanes that share one compiled program.

    Lanes are grouped by model kind and, on the full model, by their
    coordinates (:func:`kernels.ridge.prefers_ridge`; NUTS with
    ``nuts.ridge``, quadrature with ``laplace``), so that each step evaluates
    one log-density; each group is in order of :func:`difficulty`. With
    quadrature, ``ridge`` is None for full-model lanes whose counts are too
    few for the Gauss–Hermite rule ever to accept them
    (:func:`kernels.gauss_hermite.counts_allow`): they skip it instead of
    costing a Gauss–Hermite fit first. ``s_exact`` marks quadrature's lanes
    with few paired ratings (:func:`kernels.quadrature.paired_rule_is_exact`).
    All of it is a function of a lane's own counts, so a lane's group does not
    depend on the others.
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
            ridge = np.asarray(prefers_ridge(take(counts, index)), bool)
            for flag in (False, True):
                if np.any(ridge == flag):
                    yield kind, flag, False, index[ridge == flag]
        else:
            yield kind, False, False, index


def _quadrature_groups(counts: Counts, index: np.ndarray, laplace: LaplaceRule | None):
    """:func:`lane_groups` for quadrature's full-model lanes ``index``, order kept."""
    lanes = take(counts, index)
    s_exact = np.asarray(paired_rule_is_exact(lanes), bool)
    if laplace is None:
        tried, ridge = np.zeros(len(index), bool), np.zeros(len(index), bool)
    else:
        tried = np.asarray(counts_allow(lanes, laplace.min_count), bool)
        ridge = np.asarray(prefers_ridge(lanes), bool)
    for few in (False, True):
        for flag in (None, False, True):
            if flag is None:
                keep = ~tried & (s_exact == few)
            else:
                keep = tried & (ridge == flag) & (s_exact == few)
            if keep.any():
                yield "full", flag, few, index[keep]


def routes(stages: tuple[Stage, ...], index: np.ndarray, counts: Counts):
    """``(stages', lanes)``: lanes of ``index``, each with its stages from the first it may take."""
    while stages and stages[0].allows is not None:
        allowed = np.asarray(stages[0].allows(take(counts, index)), bool)
        if allowed.any():
            yield stages, index[allowed]
        stages, index = stages[1:], index[~allowed]
    if stages and len(index):
        yield stages, index


def staged_chunks(
    stages: tuple[Stage, ...], lanes: np.ndarray, pieces: int | None = None
) -> list[Chunk]:
    """``lanes`` in calls of the first stage's size, each for that stage, then the rest.

    With ``pieces`` (not None), that many calls instead, each padded to the
    size: ``lanes[k::pieces]``, so that each holds lanes of every difficulty.
    """
    size = stages[0].size
    if pieces is None:
        parts = _chunks(lanes, size)
    else:
        parts = (next(_chunks(lanes[k::pieces], size)) for k in range(pieces))
    return [Chunk(p, q, stages) for p, q in parts]


def _chunks(index: np.ndarray, size: int):
    """Consecutive pieces of ``index`` of exactly ``size`` (the last padded by repetition)."""
    for start in range(0, len(index), size):
        piece = index[start : start + size]
        yield piece, np.concatenate([piece, np.repeat(piece[:1], size - len(piece))])


class Waiting(NamedTuple):
    """Lanes that wait for the first of ``stages``.

    ``chunk``: None, or the planned call (:func:`plan_chunks`) that holds
    exactly these lanes, made as it is unless other lanes join them.
    """

    stages: tuple[Stage, ...]
    lanes: np.ndarray
    chunk: Chunk | None = None


def next_calls(waiting: list[Waiting], workers: int) -> tuple[list[Chunk], list[Waiting]]:
    """The calls :func:`sweep.execution.fits.fit_lanes` makes next, and the lanes that wait on.

    Waiting lanes with the same stages ahead of them share calls, and a
    planned call whose lanes no others join is made as planned. A rule is
    called only once no waiting lane may still be passed on to it: then all
    its lanes go at once, whether they were planned for it or rejected by
    different rules, groups or calls before, so each rule makes as few calls
    as its lanes need (on an accelerator a quadrature call costs about its
    kernel launches, not its lanes). A rule that computes its calls in slices
    spreads a few lanes over the workers (:func:`spread`).
    """
    later = {stage.fn for w in waiting for stage in w.stages[1:]}
    now: dict[tuple, list[Waiting]] = {}
    held = []
    for w in waiting:
        if w.stages[0].fn in later:
            held.append(w)
        else:
            now.setdefault(w.stages, []).append(w)
    if not now:
        raise RuntimeError("fit_lanes: every waiting rule waits on another (a cycle of rules)")
    chunks = []
    for stages, ws in now.items():
        if all(w.chunk is not None for w in ws):
            chunks += [w.chunk for w in ws]
            continue
        lanes = np.concatenate([w.lanes for w in ws])
        chunks += staged_chunks(stages, lanes, spread(stages[0], len(lanes), workers))
    return chunks, held


def spread(stage: Stage, lanes: int, workers: int) -> int | None:
    """How many calls a later pass's ``lanes`` for ``stage`` make, if not calls of its size.

    A rule whose calls compute their lanes in slices costs its slices, not
    its padding. So a pass's lanes for it that would make fewer calls than
    there are workers are split into one call per worker, each padded to the
    same size, as long as each has a slice of lanes to compute (on 1000 of
    the benchmark's lanes the second pass sent the middle rule 17 lanes: one
    call of three slices on one core while the other waited). None:
    calls of its size.
    """
    if stage.slice_lanes is None:
        return None
    return calls_per_worker(lanes, stage.size, stage.slice_lanes, workers)
