"""Simulated arenas: battles' counts drawn from the model, in the layout the density reads.

MODEL.md, "Battles". An arena to simulate (:class:`ArenaDesign`) is S strengths and ν, the
battles of each ordered pair (system i on side A against j), the chance that a battle
carries a human verdict, and J judges, each with its 3 × 3 positional confusion C_j and
a chance ``copy_j`` that it returns judge 0's verdict in place of its own (correlated
judges: judge 0 itself never copies).

Given the truth y of a battle the judges' joint verdict v = (v_0, …, v_{J−1}) has

    P(v | y) = C_0[y, v_0] · Π_{j ≥ 1} (copy_j · 1[v_j = v_0] + (1 − copy_j) · C_j[y, v_j]),

so the joint verdict of every battle of an ordered pair is one multinomial per (truth,
human verdict kept or not): counts by cell, drawn at a cost that grows with the pairs
and the verdict patterns, not with the battles. :func:`cell_data` turns them into the
:class:`~kernels.arena.logdensity.ArenaData` that :func:`~kernels.arena.logdensity.arena_data`
would make of the same battles, in a layout fixed by the design (every ordered pair with
battles, every one of the 3^J patterns), so that the replicates of a design stack into
one batch for :func:`~kernels.arena.posterior.sample_arenas`.

Pure JAX; keys in, counts out.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.arena.cells import NONE, BattleCells, pair_index
from binmetric_sweep.kernels.arena.logdensity import (
    OUTCOMES,
    ArenaData,
    davidson_log_probabilities,
)
from binmetric_sweep.kernels.categorical.counts import draw_multinomial

Array = jax.Array

__all__ = [
    "ArenaDesign",
    "ArenaSetting",
    "draw_arena",
    "cell_data",
    "cells_of",
    "draw_arena_counts",
    "judge_as_truth",
    "verdict_probabilities",
]


class ArenaDesign(NamedTuple):
    """One arena to simulate.

    Attributes:
        strengths: ``(S,)`` true strengths s (log-λ units), summing to zero.
        log_nu: ``()`` log ν, Davidson's tie parameter.
        battles: ``(S, S)`` battles with system i on side A against j (zero diagonal),
            integer-valued floats.
        human_share: ``()`` the chance that a battle carries a human verdict.
        confusions: ``(J, 3, 3)`` each judge's C_j[y, l] = P(says l | truth y), rows summing
            to 1; classes (B better, tie, A better).
        copy: ``(J,)`` the chance that judge j returns judge 0's verdict instead of its own
            (``copy[0]`` is not read).
    """

    strengths: Array
    log_nu: Array
    battles: Array
    human_share: Array
    confusions: Array
    copy: Array


class ArenaSetting(NamedTuple):
    """An arena whose strengths are drawn too (a sweep's lane): :class:`ArenaDesign` with the
    strengths' spread in place of the strengths.

    Attributes:
        spread: ``()`` the SD of the raw strengths z_i ~ N(0, spread²), centred to sum to zero.
        log_nu, battles, human_share, confusions, copy: as :class:`ArenaDesign`'s.
    """

    spread: Array
    log_nu: Array
    battles: Array
    human_share: Array
    confusions: Array
    copy: Array


def draw_arena(key: Array, setting: ArenaSetting) -> tuple[Array, Array]:
    """One simulated arena: strengths from ``fold_in(key, 3)``, then its battles by cell
    (:func:`draw_arena_counts` with ``key``).

    Returns:
        ``(S,)`` the true strengths (summing to zero) and the
        ``(S, S, 3, 2, 3^J)`` counts of :func:`draw_arena_counts`.
    """
    z = setting.spread * jax.random.normal(jax.random.fold_in(key, 3), setting.battles.shape[:1])
    strengths = z - z.mean()
    design = ArenaDesign(
        strengths,
        setting.log_nu,
        setting.battles,
        setting.human_share,
        setting.confusions,
        setting.copy,
    )
    return strengths, draw_arena_counts(key, design)


def _pattern_digits(judges: int) -> np.ndarray:
    """``(3^J, J)`` each pattern's verdicts, judge 0 the most significant digit (the
    joint confusion's column order in :mod:`kernels.arena.logdensity`)."""
    return np.indices((OUTCOMES,) * judges).reshape(judges, OUTCOMES**judges).T


def verdict_probabilities(design: ArenaDesign) -> tuple[Array, Array]:
    """The truth's and the judges' joint verdict's probabilities.

    Returns:
        ``(S, S, 3)`` π(s_i − s_j, ν) of a battle of i (side A) against j, and ``(3, 3^J)``
        P(v | y) of every joint verdict v (:func:`_pattern_digits`' order).
    """
    d = design.strengths[:, None] - design.strengths[None, :]
    pi = jnp.exp(davidson_log_probabilities(d, design.log_nu))
    judges = design.confusions.shape[0]
    digits = _pattern_digits(judges)
    first = digits[:, 0]
    joint = design.confusions[0][:, first]  # (3, 3^J)
    for j in range(1, judges):
        own = design.confusions[j][:, digits[:, j]]
        copied = jnp.asarray(digits[:, j] == first, own.dtype)
        joint = joint * (design.copy[j] * copied + (1.0 - design.copy[j]) * own)
    return pi, joint


def draw_arena_counts(key: Array, design: ArenaDesign) -> Array:
    """One simulated arena's battles by cell.

    Each ordered pair's battles split by truth (multinomial over π), each truth's by
    whether a human verdict was kept (binomial, ``human_share``), each of those by joint
    verdict (multinomial over P(v | y)); the three draws' keys are ``fold_in(key, 0..2)``.

    Returns:
        ``(S, S, 3, 2, 3^J)`` counts by (side A, side B, truth, human verdict kept, joint
        verdict), summing to ``design.battles`` over the last three axes.
    """
    pi, joint = verdict_probabilities(design)
    truth = draw_multinomial(jax.random.fold_in(key, 0), design.battles, pi)
    kept = jax.random.binomial(
        jax.random.fold_in(key, 1), truth, design.human_share, dtype=truth.dtype
    )
    by_human = jnp.stack([truth - kept, kept], axis=-1)  # (S, S, 3, 2): dropped, kept
    rows = jnp.broadcast_to(joint[:, None, :], (*by_human.shape, joint.shape[-1]))
    return draw_multinomial(jax.random.fold_in(key, 2), by_human, rows)


def _judges_of(counts) -> int:
    """J of counts whose last axis holds the 3^J joint verdicts."""
    return int(round(np.log(counts.shape[-1]) / np.log(OUTCOMES)))


def _judged_counts(counts: Array, judges: tuple[int, ...]) -> Array:
    """``counts`` with the joint-verdict axis reduced to the verdicts of ``judges``."""
    total = _judges_of(counts)
    by_judge = counts.reshape(*counts.shape[:-1], *(OUTCOMES,) * total)
    drop = tuple(counts.ndim - 1 + j for j in range(total) if j not in judges)
    kept = by_judge.sum(axis=drop)
    return kept.reshape(*counts.shape[:-1], OUTCOMES ** len(judges))


def judge_as_truth(counts: Array, judge: int = 0) -> Array:
    """One simulated arena's battles as a judge's verdicts alone, taken as the truth.

    Args:
        counts: :func:`draw_arena_counts`' ``(S, S, 3, 2, 3^J)`` (traced or not).
        judge: the judge whose verdict stands in for a human verdict on every battle.

    Returns:
        ``(S, S, 3, 2, 1)`` counts with no judges, every battle kept with the judge's
        verdict in the truth's place (``sweep compare``'s ``judge_only``).
    """
    if not 0 <= judge < _judges_of(counts):
        raise ValueError(f"judge: {judge} is not one of the arena's {_judges_of(counts)} judges")
    said = _judged_counts(counts, (judge,)).sum(axis=(2, 3))  # (S, S, 3) by the judge's verdict
    return jnp.stack([jnp.zeros_like(said), said], axis=-1)[..., None]


def cell_data(
    counts: Array, battles: np.ndarray, judges: tuple[int, ...] | None = None
) -> ArenaData:
    """:class:`ArenaData` of one simulated arena's counts, in the design's fixed layout.

    Args:
        counts: :func:`draw_arena_counts`' ``(S, S, 3, 2, 3^J)`` (traced or not).
        battles: ``(S, S)`` the design's battles (host-side: it fixes the layout, every
            ordered pair with at least one battle).
        judges: the judges whose verdicts the posterior reads, in increasing order (None:
            all; ``()``: none, the human verdicts alone).

    Returns:
        The data :func:`~kernels.arena.logdensity.arena_data` makes of the same battles'
        :func:`cells_of`, with every pattern and every ordered pair of the design kept
        (zero rows add nothing to the density): the same log density at every position.
    """
    total = _judges_of(counts)
    judges = tuple(range(total)) if judges is None else tuple(judges)
    if list(judges) != sorted(set(judges)) or not set(judges) <= set(range(total)):
        raise ValueError(f"judges: {judges}, expected distinct judges of 0..{total - 1}, in order")
    counts = _judged_counts(counts, judges)
    a, b = np.nonzero(np.asarray(battles) > 0)
    s = np.asarray(battles).shape[0]
    pair = counts[a, b]  # (m, 3, 2, k)
    digits = _pattern_digits(len(judges))
    outcome = np.arange(OUTCOMES)
    k = OUTCOMES ** len(judges)
    free = pair[:, :, 0, :].sum(axis=1) if judges else jnp.zeros((len(a), 1), counts.dtype)
    return ArenaData(
        pair_a=jnp.asarray(a, jnp.int32),
        pair_b=jnp.asarray(b, jnp.int32),
        pair_index=jnp.asarray(pair_index(a, b, s), jnp.int32),
        flipped=jnp.asarray(a > b),
        human_counts=pair[:, :, 1, :].sum(axis=-1),
        judge_mask=jnp.asarray(digits[:, :, None] == outcome),
        joint_mask=jnp.asarray(np.eye(k, dtype=bool)),
        pattern_counts=pair[:, :, 1, :].sum(axis=0).T,
        free_counts=free,
    )


def cells_of(counts: np.ndarray) -> BattleCells:
    """The :class:`~kernels.arena.cells.BattleCells` of one simulated arena's counts (host):
    battles without a human verdict merged over their truths, in
    :func:`~kernels.arena.cells.count_cells`' order."""
    counts = np.asarray(counts)
    judges = _judges_of(counts)
    a, b, truth, kept, pattern = np.nonzero(counts)
    human = np.where(kept == 1, truth, NONE)
    rows = np.column_stack([a, b, human, _pattern_digits(judges)[pattern]])
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    count = np.zeros(len(unique), np.int64)
    np.add.at(count, inverse.reshape(-1), counts[a, b, truth, kept, pattern].astype(np.int64))
    unique = unique.astype(np.int32)
    return BattleCells(unique[:, 0], unique[:, 1], unique[:, 2], unique[:, 3:], count)
