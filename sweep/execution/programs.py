"""Every compiled program the fits layer calls: built once per settings, kept on disk.

A factory returns the :class:`sweep.execution.compile_cache.ExportedProgram` of a kernel,
jitted and vmapped over lanes; it is cached by its arguments, so the same
settings give the same program object (which is how :mod:`sweep.execution.calls` tells
a rule's calls apart). Programs:

- :func:`keys_program`, :func:`counts_program`: a shard's replicate keys and counts;
- :func:`quadrature_program`: the nested rule, and the one rule of a lane whose
  α-marginal is a Beta ("beta") or whose ρ, η are known ("known");
- :func:`gauss_hermite_program`, :func:`alpha_t_program`, :func:`t_outer_program`,
  :func:`hermite_t_program`: the cascade's rules that check themselves;
- :func:`nuts_program`: NUTS for a call of fits; :func:`categorical_nuts_program` the
  categorical model's;
- :func:`estimators_program`: the estimators with an estimate function
  (:mod:`kernels.estimators`);
- :func:`arena_inputs_program`: what an arena sweep's sampler reads of its lanes.

A quadrature program is ``fn(lanes, n_valid=None)``; with a slice size it
computes the lanes that many at a time (:func:`in_slices`), and only the slices
that hold the first ``n_valid`` lanes. Program names (``jit_<name>``) tell a
profile's kernels apart by rule.
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.arena.simulate import cell_data
from binmetric_sweep.kernels.categorical import nuts as categorical_nuts
from binmetric_sweep.kernels.categorical import quadrature as categorical_quadrature
from binmetric_sweep.kernels.categorical.counts import Layout
from binmetric_sweep.kernels.counts import replicate_key
from binmetric_sweep.kernels.estimators import Estimator
from binmetric_sweep.kernels.gauss_hermite import (
    AlphaTRule,
    LaplaceRule,
    alpha_t_summary,
    laplace_summary,
)
from binmetric_sweep.kernels.nuts import NUTSSettings, sample_fits, sampler_key
from binmetric_sweep.kernels.quadrature import (
    HermiteTRule,
    QuadratureRule,
    hermite_t_summary,
    posterior_summary,
)
from binmetric_sweep.kernels.t_outer import TOuterRule, t_outer_summary
from binmetric_sweep.sweep.execution.compile_cache import ExportedProgram

__all__ = [
    "KNOWN_CONFUSION_RULE",
    "alpha_t_program",
    "arena_inputs_program",
    "categorical_nuts_program",
    "categorical_quadrature_program",
    "counts_program",
    "estimators_program",
    "gauss_hermite_program",
    "hermite_t_program",
    "in_slices",
    "keys_program",
    "nuts_program",
    "quadrature_program",
    "t_outer_program",
]


@cache
def keys_program(seed: int) -> ExportedProgram:
    """``fn(words, replicates)``: ``(B,)`` replicate keys from ``(B, 2)`` config-id words."""
    base = jax.random.key(seed)
    fn = jax.jit(jax.vmap(lambda w, r: replicate_key(base, w, r)))
    return ExportedProgram(fn, "replicate_keys", (seed,))


@cache
def counts_program(mode: str, model) -> ExportedProgram:
    """``fn(keys, designs)``: ``(B,)`` counts of the rating model ``model``
    (:class:`sweep.spec.rating_model.RatingModel`), rounded expected values (``mode``
    "expected") or drawn from the keys ("sampled")."""
    if mode == "expected":
        expected = model.expected_counts
        fn = jax.jit(jax.vmap(lambda key, design: expected(design)))
    else:
        fn = jax.jit(jax.vmap(model.draw_counts))
    return ExportedProgram(fn, f"{mode}_counts", (model.name,))


@cache
def estimators_program(
    estimators: tuple[Estimator, ...], level: float, layout: Layout | None = None
) -> ExportedProgram:
    """``fn(counts)``: each estimator's :class:`kernels.estimators.Estimate` of ``(B,)``
    lanes, in the order of ``estimators`` (each with an estimate function), at interval
    level ``level``: of binary counts, or, with a ``layout``, of categorical counts by
    each estimator's categorical form."""
    if layout is None:
        fn = jax.jit(lambda counts: tuple(e.estimate(counts, level) for e in estimators))
        key = (tuple(e.name for e in estimators), level)
    else:
        fn = jax.jit(lambda counts: tuple(e.categorical(counts, layout, level) for e in estimators))
        key = (tuple(e.name for e in estimators), level, layout)
    return ExportedProgram(fn, "estimators", key)


@cache
def arena_inputs_program(
    systems: int, judges: tuple[int, ...] | None, fold: int, verdicts
) -> ExportedProgram:
    """``fn(keys, counts)``: ``(B,)`` simulated arenas' sampler keys (each lane key folded in
    with ``fold``) and :class:`kernels.arena.logdensity.ArenaData`
    (:func:`kernels.arena.simulate.cell_data` of every ordered pair of ``systems``, of the
    counts ``verdicts(counts)``, reading the judges ``judges``: None all, ``()`` none), in
    one program per shape."""
    battles = 1.0 - np.eye(systems)

    def lane(key, counts):
        return jax.random.fold_in(key, fold), cell_data(verdicts(counts), battles, judges)

    static = (systems, judges, fold, verdicts.__qualname__)
    return ExportedProgram(jax.jit(jax.vmap(lane)), "arena_inputs", static)


@cache
def nuts_program(
    dim: int, settings: NUTSSettings, ridge: bool | None = None, slots: int | None = None
) -> ExportedProgram:
    """``fn(keys, counts, n_valid=None)``: draws of a call's fits; only its first n_valid run."""

    def batch(keys, counts, n_valid=None):
        keys = jax.vmap(sampler_key)(keys)
        return sample_fits(keys, counts, settings, dim, ridge, slots, n_valid)

    return ExportedProgram(jax.jit(batch), "nuts", (dim, settings, ridge, slots))


@cache
def categorical_nuts_program(
    layout: Layout,
    settings: NUTSSettings,
    independent: bool,
    known: bool,
    slots: int | None = None,
) -> ExportedProgram:
    """``fn(keys, counts, n_valid=None)``: θ draws of a call's categorical fits
    (:func:`kernels.categorical.nuts.sample_fits`; ``known``: every lane's confusion is
    known); only its first n_valid run."""

    def batch(keys, counts, n_valid=None):
        keys = jax.vmap(sampler_key)(keys)
        return categorical_nuts.sample_fits(
            keys, counts, layout, settings, independent, slots, n_valid, known=known
        )

    static = (layout, settings, independent, known, slots)
    return ExportedProgram(jax.jit(batch), "categorical_nuts", static)


#: The rule's name in the fits' diagnostics (:class:`sweep.execution.fits.FitInfo`) and in
#: the schedule's call sizes (:meth:`sweep.execution.schedule.Schedule.call_lanes`).
KNOWN_CONFUSION_RULE = "known_confusion"


@cache
def categorical_quadrature_program(
    layout: Layout,
    level: float,
    rule: categorical_quadrature.SimplexRule = categorical_quadrature.DEFAULT_RULE,
) -> ExportedProgram:
    """``fn(counts)``: :class:`kernels.quadrature.PosteriorSummary` of θ for ``(B,)`` lanes
    whose confusion is known (:func:`kernels.categorical.quadrature.posterior_summary`)."""
    fn = jax.jit(
        jax.vmap(lambda c: categorical_quadrature.posterior_summary(c, layout, level, rule))
    )
    return ExportedProgram(fn, f"quadrature_{KNOWN_CONFUSION_RULE}", (layout, level, rule))


@cache
def quadrature_program(
    kind: str,
    level: float,
    nested: QuadratureRule,
    slice_lanes: int | None = None,
    s_exact: bool = False,
) -> ExportedProgram:
    """Summaries of α by :func:`kernels.quadrature.posterior_summary`: the nested rule
    (``kind`` "full"), or the one rule of "beta" and "known" lanes; ``s_exact``: the
    full model's s rule exact for few paired ratings."""
    return _jit_lanes(
        jax.vmap(lambda c: posterior_summary(c, kind, level, nested, s_exact)),
        slice_lanes,
        _program_name("nested" if kind == "full" else kind, s_exact=s_exact),
        (kind, level, nested, s_exact),
    )


@cache
def gauss_hermite_program(ridge: bool, level: float, settings: LaplaceRule) -> ExportedProgram:
    """Summaries and whether to trust them, by :func:`kernels.gauss_hermite.laplace_summary`."""
    fn = jax.vmap(lambda c: laplace_summary(c, ridge, level, settings))
    name = _program_name("gauss_hermite", "ridge" if ridge else "logit")
    return _jit_lanes(fn, None, name, (ridge, level, settings))


@cache
def alpha_t_program(
    level: float, nested: QuadratureRule, settings: AlphaTRule, slice_lanes: int | None
) -> ExportedProgram:
    """Summaries and whether to trust them, by :func:`kernels.gauss_hermite.alpha_t_summary`."""
    fn = jax.vmap(lambda c: alpha_t_summary(c, level, settings, nested))
    return _jit_lanes(fn, slice_lanes, _program_name("hermite_alpha_t"), (level, nested, settings))


@cache
def t_outer_program(level: float, settings: TOuterRule, slice_lanes: int | None) -> ExportedProgram:
    """Summaries and whether to trust them, by :func:`kernels.t_outer.t_outer_summary`."""
    fn = jax.vmap(lambda c: t_outer_summary(c, level, settings))
    return _jit_lanes(fn, slice_lanes, _program_name("t_outer"), (level, settings))


@cache
def hermite_t_program(
    level: float,
    nested: QuadratureRule,
    settings: HermiteTRule,
    slice_lanes: int | None,
    s_exact: bool,
) -> ExportedProgram:
    """Summaries and whether to trust them, by :func:`kernels.quadrature.hermite_t_summary`."""
    return _jit_lanes(
        jax.vmap(lambda c: hermite_t_summary(c, level, nested, settings, s_exact)),
        slice_lanes,
        _program_name("hermite_t", s_exact=s_exact),
        (level, nested, settings, s_exact),
    )


def _program_name(*parts: str, s_exact: bool = False) -> str:
    """A rule's compiled program's name (``jit_quadrature_<rule>…`` in HLO and traces)."""
    return "_".join(("quadrature", *parts, *(("exact_s",) if s_exact else ())))


def _jit_lanes(vmapped, slice_lanes: int | None, name: str, static: tuple) -> ExportedProgram:
    """``fn(lanes, n_valid=None)``, jitted: ``vmapped`` on all lanes, or :func:`in_slices`.

    ``static``: what else the program depends on (see
    :class:`sweep.execution.compile_cache.ExportedProgram`).
    """

    def fn(lanes, n_valid=None):
        if slice_lanes is None:
            return vmapped(lanes)
        return in_slices(vmapped, slice_lanes, lanes, n_valid)

    fn.__name__ = fn.__qualname__ = name
    return ExportedProgram(jax.jit(fn), name, (*static, slice_lanes))


def in_slices(fn, size: int, lanes, n_valid=None):
    """``fn`` (vmapped) over ``lanes`` ``(B,)``, ``size`` lanes at a time, one slice after another.

    Only the slices that hold the first ``n_valid`` lanes (all, if None) are
    computed; the rest of the output is zeros. ``B`` and ``size`` are powers
    of two. The loop runs to a traced bound, so one program serves a call
    whatever its padding: a shard's last, mostly padded call costs what its
    own lanes cost.
    """
    total = jax.tree.leaves(lanes)[0].shape[0]
    size = min(size, total)
    count = total // size
    sliced = jax.tree.map(lambda x: x.reshape(count, size, *x.shape[1:]), lanes)
    # Traced once: the output's shapes and the loop's body come from one jaxpr
    # (tracing ``fn`` for its shapes, then again in the body, took half of a
    # rule's trace).
    one = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), sliced)
    traced, shapes = jax.make_jaxpr(fn, return_shape=True)(one)
    out = jax.tree.map(lambda s: jnp.zeros((count, *s.shape), s.dtype), shapes)

    def compute(i, out):
        piece = jax.tree.map(lambda x: jax.lax.dynamic_index_in_dim(x, i, keepdims=False), sliced)
        values = jax.core.eval_jaxpr(traced.jaxpr, traced.consts, *jax.tree.leaves(piece))
        return jax.tree.map(
            lambda o, v: jax.lax.dynamic_update_index_in_dim(o, v, i, 0),
            out,
            jax.tree.unflatten(jax.tree.structure(shapes), values),
        )

    needed = count if n_valid is None else (n_valid + size - 1) // size
    out = jax.lax.fori_loop(0, needed, compute, out)
    return jax.tree.map(lambda x: x.reshape(total, *x.shape[2:]), out)
