"""Quadrature as data: the rules a lane's posterior may come from, and the cascade of them.

A lane whose α-marginal is a Beta (N_M = 0) or whose ρ and η are known has one
rule, which answers every lane. A lane of the full model is tried with the rules
of a *cascade*, a tuple of :class:`CascadeRule`, in turn: each rule but the last
checks itself and passes on the lanes whose posterior it cannot vouch for, and the
last (the nested rule) answers every lane it gets. Whether a lane is accepted
depends on its counts alone, so its numbers never depend on which lanes share its
call. :func:`make_cascade` refuses a cascade that could leave a lane unanswered.

Adding a rule is writing its kernel (``summary(counts) -> (summary, accepted)``,
one lane), its program factory in :mod:`sweep.execution.programs`, a constructor here, and
naming it in :func:`default_cascade`. The runner (:mod:`sweep.execution.fits`) knows rules
only through these values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.gauss_hermite import AlphaTRule, LaplaceRule
from binmetric_sweep.kernels.quadrature import HermiteTRule, hermite_t_allows
from binmetric_sweep.kernels.t_outer import TOuterRule
from binmetric_sweep.sweep.execution.programs import (
    alpha_t_program,
    gauss_hermite_program,
    hermite_t_program,
    quadrature_program,
    t_outer_program,
)

__all__ = [
    "FULL_MODEL_RULES",
    "LANE_GROUPS",
    "QUADRATURE_RULES",
    "CascadeRule",
    "LaneGroup",
    "default_cascade",
    "gauss_hermite",
    "hermite_alpha_t",
    "hermite_t",
    "laplace_settings",
    "make_cascade",
    "nested",
    "single_rule",
    "t_outer",
]


class LaneGroup(NamedTuple):
    """What the full-model lanes of one compiled program share.

    Attributes:
        ridge: the coordinates the Gauss–Hermite rule fits the lane in (ridge
            or logits, :func:`kernels.ridge.prefers_ridge`); None where the
            counts are too few for that rule ever to accept the lane
            (:func:`kernels.gauss_hermite.counts_allow`).
        s_exact: few paired ratings, so that the s-integral is exact
            (:func:`kernels.quadrature.paired_rule_is_exact`).
    """

    ridge: bool | None
    s_exact: bool


#: Every :class:`LaneGroup` a full-model lane can be in.
LANE_GROUPS = tuple(LaneGroup(r, s) for r in (None, False, True) for s in (False, True))


class CascadeRule(NamedTuple):
    """One quadrature rule: what it takes, and the program that answers a call of lanes.

    Attributes:
        name: the rule's name, as in the fits' diagnostics (:data:`QUADRATURE_RULES`).
        takes: ``takes(group) -> bool``: whether lanes of this :class:`LaneGroup`
            may be sent to it at all.
        program: ``program(group, level, nested, slice_lanes)`` -> the
            :class:`sweep.execution.compile_cache.ExportedProgram` ``fn(lanes, n_valid=None)``
            of a call (``slice_lanes``: None, or the lanes it computes at a
            time, :func:`sweep.execution.programs.in_slices`).
        checked: whether the program checks itself: it returns ``(summary,
            accepted)``, and the lanes not accepted go on to the next rule;
            otherwise it returns the summary, and every lane it gets is answered.
        allows: None, or ``allows(counts) -> (n,) bool`` (host-side): the
            lanes it could ever accept; the others skip it.
        settings: the rule's own settings (hashable), for readers.
    """

    name: str
    takes: Callable[[LaneGroup], bool]
    program: Callable
    checked: bool = True
    allows: Callable[[Counts], jax.Array] | None = None
    settings: object = None

    def answers_every_lane(self) -> bool:
        """Whether every lane of every group sent to it is answered here."""
        return (
            not self.checked
            and self.allows is None
            and all(self.takes(group) for group in LANE_GROUPS)
        )


def _always(group: LaneGroup) -> bool:
    return True


def gauss_hermite(settings: LaplaceRule = LaplaceRule()) -> CascadeRule:
    """The adaptive Gauss–Hermite rule (:func:`kernels.gauss_hermite.laplace_summary`),
    on the lanes whose counts let it accept them at all."""
    return CascadeRule(
        "gauss_hermite",
        lambda group: group.ridge is not None,
        lambda group, level, nested, lanes: gauss_hermite_program(group.ridge, level, settings),
        settings=settings,
    )


def hermite_alpha_t(settings: AlphaTRule = AlphaTRule()) -> CascadeRule:
    """Gauss–Hermite in (α, t) with the s rule at each node
    (:func:`kernels.gauss_hermite.alpha_t_summary`), where s is not exact."""
    return CascadeRule(
        "hermite_alpha_t",
        lambda group: not group.s_exact,
        lambda group, level, nested, lanes: alpha_t_program(level, nested, settings, lanes),
        allows=hermite_t_allows,
        settings=settings,
    )


def t_outer(settings: TOuterRule = TOuterRule()) -> CascadeRule:
    """Gauss–Hermite in t outermost (:func:`kernels.t_outer.t_outer_summary`), where s
    is exact: no kink in t to rule lanes out, and each t node's α panels break at the
    kinks exactly."""
    return CascadeRule(
        "t_outer",
        lambda group: group.s_exact,
        lambda group, level, nested, lanes: t_outer_program(level, settings, lanes),
        settings=settings,
    )


def hermite_t(settings: HermiteTRule = HermiteTRule()) -> CascadeRule:
    """The nested rule with a Gauss–Hermite t axis
    (:func:`kernels.quadrature.hermite_t_summary`), where its counts allow."""
    return CascadeRule(
        "hermite_t",
        _always,
        lambda group, level, nested, lanes: hermite_t_program(
            level, nested, settings, lanes, group.s_exact
        ),
        allows=hermite_t_allows,
        settings=settings,
    )


def nested() -> CascadeRule:
    """The nested rule (:func:`kernels.quadrature.posterior_summary`): answers every lane."""
    return CascadeRule(
        "nested",
        _always,
        lambda group, level, nested, lanes: quadrature_program(
            "full", level, nested, lanes, group.s_exact
        ),
        checked=False,
    )


def single_rule(kind: str) -> CascadeRule:
    """The one rule of lanes of ``kind`` "beta" (N_M = 0: the Beta itself) or "known"
    (ρ, η known: a one-dimensional rule): answers every lane."""
    return CascadeRule(
        kind,
        _always,
        lambda group, level, nested, lanes: quadrature_program(kind, level, nested),
        checked=False,
    )


def make_cascade(*rules: CascadeRule) -> tuple[CascadeRule, ...]:
    """``rules`` as a cascade, tried in turn; ValueError where a lane could go unanswered.

    The last rule must answer every lane of every group (the nested rule does);
    a rule before it that would answer every lane leaves the rules after it
    nothing, and names must be distinct (they label each fit's rule).
    """
    if not rules:
        raise ValueError("a cascade needs at least one rule, the last answering every lane")
    *first, last = rules
    if not last.answers_every_lane():
        raise ValueError(
            f"a cascade must end in a rule that answers every lane it gets (such as nested()); "
            f"{last.name!r} passes some on, or does not take every lane"
        )
    for rule in first:
        if rule.answers_every_lane():
            raise ValueError(
                f"{rule.name!r} answers every lane: the rules after it are never tried"
            )
    names = [rule.name for rule in rules]
    if len(set(names)) < len(names):
        raise ValueError(f"a cascade's rules need distinct names; got {', '.join(names)}")
    return tuple(rules)


#: The full cascade: on CPU, where a call costs its lanes, the middle rules
#: (Gauss–Hermite in (α, t), t outermost, the Gauss–Hermite t axis) save the
#: nested rule's cost on most lanes it would otherwise get.
_FULL_CASCADE = make_cascade(gauss_hermite(), hermite_alpha_t(), t_outer(), hermite_t(), nested())
#: On an accelerator a call costs about its kernel launches, and the middle
#: rules' pass cost more than it saved (docs/performance.md).
_SHORT_CASCADE = make_cascade(_FULL_CASCADE[0], _FULL_CASCADE[-1])
#: Names of the rules a quadrature lane's numbers can come from, in the order
#: they are tried: the Beta itself (N_M = 0), the exact one-dimensional rule
#: (ρ, η known), and the full model's cascade.
FULL_MODEL_RULES = tuple(rule.name for rule in _FULL_CASCADE)
QUADRATURE_RULES = ("beta", "known", *FULL_MODEL_RULES)


def default_cascade(middle_rules: bool) -> tuple[CascadeRule, ...]:
    """The full model's cascade, with the middle rules or without
    (:attr:`sweep.execution.schedule.Schedule.middle_rules`)."""
    return _FULL_CASCADE if middle_rules else _SHORT_CASCADE


def laplace_settings(cascade: tuple[CascadeRule, ...]) -> LaplaceRule | None:
    """The Gauss–Hermite rule's settings, if the cascade has it: they decide which lanes
    try it (:class:`LaneGroup`'s ``ridge``)."""
    for rule in cascade:
        if rule.name == "gauss_hermite":
            return rule.settings
    return None
