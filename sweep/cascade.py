"""Quadrature as data: the rules a lane's posterior may come from, and the cascade of them.

A lane whose α-marginal is a Beta (N_M = 0) or whose ρ and η are known has one
exact rule. A lane of the full model is tried with the rules of a *cascade*, a
tuple of :class:`CascadeRule`, in turn: each rule checks itself and passes on
the lanes whose posterior it cannot vouch for, and the last (the nested rule)
takes every lane it gets. Whether a lane is accepted depends on its counts
alone, so its numbers never depend on which lanes share its call.

Adding a rule is writing its kernel (``summary(counts) -> (summary, accepted)``,
one lane) and a constructor here, and naming it in :func:`default_cascade`.
The runner (:mod:`sweep.fits`) knows rules only through these values.

Programs are cached by their arguments, so a rule yields the same compiled
program (the same object) for the same lanes, level and settings, which is
how the runner tells a rule's calls apart.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import NamedTuple

import jax
import jax.numpy as jnp

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.gauss_hermite import (
    AlphaTRule,
    LaplaceRule,
    alpha_t_summary,
    laplace_summary,
)
from binmetric_sweep.kernels.quadrature import (
    HermiteTRule,
    QuadratureRule,
    hermite_t_allows,
    hermite_t_summary,
    posterior_summary,
)
from binmetric_sweep.kernels.t_outer import TOuterRule, t_outer_summary
from binmetric_sweep.sweep.compile_cache import ExportedProgram

__all__ = [
    "CPU_ALPHA_T_GROUP",
    "CPU_EXACT_PAIRED_GROUP",
    "CPU_HERMITE_T_GROUP",
    "CPU_NESTED_GROUP",
    "CPU_T_OUTER_GROUP",
    "FULL_MODEL_RULES",
    "QUADRATURE_RULES",
    "CascadeRule",
    "LaneGroup",
    "default_cascade",
    "exact_program",
    "gauss_hermite",
    "hermite_alpha_t",
    "hermite_t",
    "laplace_settings",
    "nested",
    "t_outer",
]

#: On CPU the nested rule runs a chunk's lanes this many at a time
#: (:func:`in_groups`: a loop over groups, each vmapped) rather than all at once:
#: a lane's α × t × s nodes are ~200,000, and 64 lanes' worth of each
#: intermediate (100 MB) falls far out of cache. Groups of 4 beat 8 and the
#: whole chunk (docs/performance.md). A lane's numbers are the same in any group.
CPU_NESTED_GROUP = 4
#: The same for lanes whose s rule is exact (8 s nodes where others evaluate
#: ~40 per t node): the rules before take almost all of them, so the nested rule
#: gets a few at a time, and a larger group computes its padding.
CPU_EXACT_PAIRED_GROUP = 4
#: The same for :func:`kernels.quadrature.hermite_t_summary`, which gets the
#: few lanes the rules before it rejected: 8 beat 4 and 16 (docs/performance.md).
CPU_HERMITE_T_GROUP = 8
#: The same for :func:`kernels.gauss_hermite.alpha_t_summary`: vmapped whole a
#: chunk cost its padding; 4 beat 16 on small batches (docs/performance.md).
CPU_ALPHA_T_GROUP = 4
#: The same for :func:`kernels.t_outer.t_outer_summary`.
CPU_T_OUTER_GROUP = 16


class LaneGroup(NamedTuple):
    """What the full-model lanes of one compiled group share.

    Attributes:
        ridge: the coordinates the Gauss–Hermite rule fits the lane in (ridge
            or logits, :func:`kernels.ridge.prefers_ridge`); None where the
            counts are too few for that rule ever to accept the lane
            (:func:`kernels.gauss_hermite.counts_allow`).
        exact_paired: the nested rule integrates s exactly (few paired
            ratings, :func:`kernels.quadrature.paired_rule_is_exact`).
    """

    ridge: bool | None
    exact_paired: bool


class CascadeRule(NamedTuple):
    """One rule of the full model's cascade.

    Attributes:
        name: the rule's name, as in the fits' diagnostics (:data:`FULL_MODEL_RULES`).
        takes: ``takes(group) -> bool``: whether lanes of this :class:`LaneGroup`
            may be sent to it at all.
        program: ``program(group, level, rule, lanes_at_a_time)`` -> the jitted
            ``fn(lanes, n_valid=None) -> (summary, accepted)`` of a chunk
            (the last rule of a cascade: ``-> summary``); ``lanes_at_a_time``:
            None, or the group size of :func:`in_groups`.
        allows: None, or ``allows(counts) -> (n,) bool`` (host-side): the
            lanes it could ever accept; the others skip it.
        cpu_group: ``cpu_group(group)``: on CPU, the lanes its calls compute
            at a time (None: the whole chunk, vmapped).
        settings: the rule's own settings (hashable), for readers.
    """

    name: str
    takes: Callable[[LaneGroup], bool]
    program: Callable
    allows: Callable[[Counts], jax.Array] | None = None
    cpu_group: Callable[[LaneGroup], int | None] = lambda group: None
    settings: object = None


def _always(group: LaneGroup) -> bool:
    return True


def gauss_hermite(settings: LaplaceRule = LaplaceRule()) -> CascadeRule:
    """The adaptive Gauss–Hermite rule (:func:`kernels.gauss_hermite.laplace_summary`),
    on the lanes whose counts let it accept them at all."""
    return CascadeRule(
        "gauss_hermite",
        lambda group: group.ridge is not None,
        lambda group, level, rule, at_a_time: _laplace_fn(group.ridge, level, settings),
        settings=settings,
    )


def hermite_alpha_t(settings: AlphaTRule = AlphaTRule()) -> CascadeRule:
    """Gauss–Hermite in (α, t) with the s rule at each node
    (:func:`kernels.gauss_hermite.alpha_t_summary`), where s is not exact."""
    return CascadeRule(
        "hermite_alpha_t",
        lambda group: not group.exact_paired,
        lambda group, level, rule, at_a_time: _alpha_t_fn(level, rule, settings, at_a_time),
        hermite_t_allows,
        lambda group: CPU_ALPHA_T_GROUP,
        settings,
    )


def t_outer(settings: TOuterRule = TOuterRule()) -> CascadeRule:
    """Gauss–Hermite in t outermost (:func:`kernels.t_outer.t_outer_summary`), where s
    is exact: no kink in t to rule lanes out, and each t node's α panels break at the
    kinks exactly."""
    return CascadeRule(
        "t_outer",
        lambda group: group.exact_paired,
        lambda group, level, rule, at_a_time: _t_outer_fn(level, settings, at_a_time),
        cpu_group=lambda group: CPU_T_OUTER_GROUP,
        settings=settings,
    )


def hermite_t(settings: HermiteTRule = HermiteTRule()) -> CascadeRule:
    """The nested rule with a Gauss–Hermite t axis
    (:func:`kernels.quadrature.hermite_t_summary`), where its counts allow."""
    return CascadeRule(
        "hermite_t",
        _always,
        lambda group, level, rule, at_a_time: _hermite_t_fn(
            level, rule, settings, at_a_time, group.exact_paired
        ),
        hermite_t_allows,
        lambda group: CPU_HERMITE_T_GROUP,
        settings,
    )


def nested() -> CascadeRule:
    """The nested rule (:func:`kernels.quadrature.posterior_summary`): takes every lane."""
    return CascadeRule(
        "nested",
        _always,
        lambda group, level, rule, at_a_time: _quadrature_fn(
            "full", level, rule, at_a_time, group.exact_paired
        ),
        cpu_group=lambda group: CPU_EXACT_PAIRED_GROUP if group.exact_paired else CPU_NESTED_GROUP,
    )


#: The full cascade: on CPU, where a call costs its lanes, the middle rules
#: (Gauss–Hermite in (α, t), t outermost, the Gauss–Hermite t axis) save the
#: nested rule's cost on most lanes it would otherwise get.
_FULL_CASCADE = (gauss_hermite(), hermite_alpha_t(), t_outer(), hermite_t(), nested())
#: On an accelerator a call costs about its kernel launches, and the middle
#: rules' pass cost more than it saved (docs/performance.md).
_SHORT_CASCADE = (_FULL_CASCADE[0], _FULL_CASCADE[-1])
#: Names of the rules a quadrature lane's numbers can come from, in the order
#: they are tried: the Beta itself (N_M = 0), the exact one-dimensional rule
#: (ρ, η known), and the full model's cascade.
FULL_MODEL_RULES = tuple(rule.name for rule in _FULL_CASCADE)
QUADRATURE_RULES = ("beta", "known", *FULL_MODEL_RULES)


def default_cascade(backend: str, middle_rules: bool | None = None) -> tuple[CascadeRule, ...]:
    """The cascade for ``backend`` ("cpu", "gpu", ...): with the middle rules on CPU
    only, or as ``middle_rules`` says."""
    middle = backend == "cpu" if middle_rules is None else middle_rules
    return _FULL_CASCADE if middle else _SHORT_CASCADE


def laplace_settings(cascade: tuple[CascadeRule, ...]) -> LaplaceRule | None:
    """The Gauss–Hermite rule's settings, if the cascade has it: they decide which lanes
    try it (:class:`LaneGroup`'s ``ridge``)."""
    for rule in cascade:
        if rule.name == "gauss_hermite":
            return rule.settings
    return None


def exact_program(kind: str, level: float, rule: QuadratureRule):
    """The one exact rule of lanes of ``kind`` "beta" (N_M = 0) or "known" (ρ, η known)."""
    return _quadrature_fn(kind, level, rule)


@cache
def _quadrature_fn(
    kind: str,
    level: float,
    rule: QuadratureRule,
    group: int | None = None,
    exact_paired: bool = False,
):
    """``fn(lanes, n_valid=None)``: summaries of a chunk, of which only the first n_valid count.

    With ``group`` the lanes run that many at a time (:func:`in_groups`),
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
    """``fn(lanes, n_valid=None)``, jitted: ``vmapped`` on all lanes, or :func:`in_groups`.

    ``name`` names the program (``jit_<name>``), so that a profile's kernels
    can be told apart by rule; ``static``: what else it depends on (see
    :class:`sweep.compile_cache.ExportedProgram`).
    """

    def fn(lanes, n_valid=None):
        if group is None:
            return vmapped(lanes)
        return in_groups(vmapped, group, lanes, n_valid)

    fn.__name__ = fn.__qualname__ = name
    return ExportedProgram(jax.jit(fn), name, (*static, group))


def in_groups(fn, group: int, lanes, n_valid=None):
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
