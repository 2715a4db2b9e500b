"""Log posterior density of an arena: strengths, ties and each judge's positional confusion.

MODEL.md, "Battles: many systems from pairwise comparisons". A battle of system a (side A,
shown first) against b has a true outcome y ∈ (B better, tie, A better) with the
Bradley–Terry–Davidson probabilities of d = s_a − s_b and ν:

    π(d, ν) ∝ (e^{−d/2}, ν, e^{d/2})

(λ_i = e^{s_i}: P(a beats b) = λ_a / (λ_a + λ_b + ν√(λ_aλ_b)), divided through by √(λ_aλ_b)).
The truth has no side; the human verdict is the truth, and judge j's verdict follows its
3 × 3 positional confusion C_j[y, l] = P(judge says l | truth y), shared by every battle
(``independent`` judges given the truth), or the judges' joint verdict follows one 3 × 3^J
confusion (``joint``: any correlation between them). A battle with a human verdict h adds
log π_h + log C[h, l]; one without adds log Σ_y π_y C[y, l]; a missing judge verdict is
summed out.

``model="pairs"`` replaces the strengths by each unordered pair's own π over (the
lower-numbered system worse, tie, better), so that a battle of b against a reads π
reversed: no Bradley–Terry assumption, a check of it.

Coordinates (a flat ``(d,)`` vector, :class:`ArenaShape` says where each part is):
``z`` (S raw strengths, s = z − mean z: only differences enter the likelihood, and the
N(0, σ²) prior on z keeps the mean direction proper), ``log ν``, and every distribution
(a row of a confusion, a pair's π) in additive log-ratios with part 0 the reference, as
:mod:`kernels.categorical.logdensity` (a Dirichlet(1) prior is then Σ_i log q_i).

Priors: z_i ~ N(0, :data:`STRENGTH_SD`²) (strength differences of a few units are
plausible; an Arena's spread is about 2), log ν ~ N(0, :data:`LOG_NU_SD`²), every
distribution Dirichlet(1).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.arena.cells import NONE, BattleCells

Array = jax.Array

__all__ = [
    "LOG_NU_SD",
    "STRENGTH_SD",
    "ArenaData",
    "ArenaShape",
    "arena_data",
    "arena_shape",
    "davidson_log_probabilities",
    "logdensity",
    "unpack",
]

#: Prior SD of each raw strength (log-λ units) and of log ν.
STRENGTH_SD = 2.0
LOG_NU_SD = 1.5
#: Outcomes of one battle's truth (B better, tie, A better).
OUTCOMES = 3


class ArenaShape(NamedTuple):
    """Where each part of the posterior sits in a flat position (static, hashable).

    Attributes:
        systems: S.
        judges: J (0: the human verdicts alone).
        independent: each judge its own 3 × 3 confusion; else one 3 × 3^J joint one.
        pairs: each unordered pair its own π (``model="pairs"``); else strengths.
    """

    systems: int
    judges: int
    independent: bool = True
    pairs: bool = False

    @property
    def n_pairs(self) -> int:
        """S(S − 1)/2 unordered pairs."""
        return self.systems * (self.systems - 1) // 2

    @property
    def head(self) -> int:
        """Coordinates before the confusions: S strengths and log ν, or 2 per pair."""
        return 2 * self.n_pairs if self.pairs else self.systems + 1

    @property
    def confusion_rows(self) -> tuple[int, ...]:
        """The number of outcomes of each confusion row, in order."""
        if self.judges == 0:
            return ()
        if self.independent:
            return (OUTCOMES,) * (OUTCOMES * self.judges)
        return (OUTCOMES**self.judges,) * OUTCOMES

    @property
    def size(self) -> int:
        """d."""
        return self.head + sum(m - 1 for m in self.confusion_rows)


def arena_shape(
    systems: int, judges: int, independent: bool = True, pairs: bool = False
) -> ArenaShape:
    """The :class:`ArenaShape` of an arena (one judge: the two judge models are one)."""
    return ArenaShape(systems, judges, independent or judges <= 1, pairs)


class ArenaData(NamedTuple):
    """An arena's cells as the density reads them (device arrays).

    Attributes:
        a, b: ``(n,)`` int32 systems on sides A and B.
        pair: ``(n,)`` int32 the unordered pair's index (i < j, row-major).
        flipped: ``(n,)`` bool, a > b: the pair's π read reversed.
        human: ``(n,)`` int32 class or −1.
        judge_mask: ``(n, J, 3)`` bool: outcomes consistent with judge j's verdict (all
            three where it is missing).
        joint_mask: ``(n, 3^J)`` bool: joint verdicts consistent with every judge's.
        count: ``(n,)`` float64 battles.
    """

    a: Array
    b: Array
    pair: Array
    flipped: Array
    human: Array
    judge_mask: Array
    joint_mask: Array
    count: Array


def arena_data(
    cells: BattleCells, systems: int, judges: tuple[int, ...] | None = None
) -> ArenaData:
    """:class:`ArenaData` of ``cells`` with the judges of columns ``judges`` (None: all; ``()``:
    none, the human verdicts alone — cells without one are then dropped)."""
    columns = range(cells.judges) if judges is None else judges
    judged = cells.judged[:, list(columns)] if len(columns) else cells.judged[:, :0]
    keep = np.ones(len(cells.count), bool) if judged.shape[1] else cells.human != NONE
    a, b = cells.a[keep].astype(np.int64), cells.b[keep].astype(np.int64)
    judged = judged[keep]
    low, high = np.minimum(a, b), np.maximum(a, b)
    pair = low * systems - low * (low + 1) // 2 + (high - low - 1)
    j = judged.shape[1]
    outcome = np.arange(OUTCOMES)
    judge_mask = (judged[:, :, None] == NONE) | (judged[:, :, None] == outcome)
    verdicts = np.indices((OUTCOMES,) * j).reshape(j, OUTCOMES**j).T  # (3^J, J), judge 1 first
    joint_mask = np.ones((len(a), OUTCOMES**j), bool)
    for k in range(j):
        joint_mask &= judge_mask[:, k, :][:, verdicts[:, k]]
    return ArenaData(
        a=jnp.asarray(a, jnp.int32),
        b=jnp.asarray(b, jnp.int32),
        pair=jnp.asarray(pair, jnp.int32),
        flipped=jnp.asarray(a > b),
        human=jnp.asarray(cells.human[keep], jnp.int32),
        judge_mask=jnp.asarray(judge_mask),
        joint_mask=jnp.asarray(joint_mask),
        count=jnp.asarray(cells.count[keep], jnp.float64),
    )


def _log_simplex(y: Array) -> Array:
    """``(..., M)`` log q of additive log-ratios ``(..., M − 1)`` (part 0 the reference)."""
    full = jnp.concatenate([jnp.zeros((*y.shape[:-1], 1), y.dtype), y], axis=-1)
    return jax.nn.log_softmax(full, axis=-1)


def davidson_log_probabilities(d: Array, log_nu: Array) -> Array:
    """``(..., 3)`` log π over (B better, tie, A better) for strength differences d = s_a − s_b."""
    logits = jnp.stack([-d / 2.0, jnp.broadcast_to(log_nu, d.shape), d / 2.0], axis=-1)
    return jax.nn.log_softmax(logits, axis=-1)


class ArenaParameters(NamedTuple):
    """A position's parameters (one draw).

    Attributes:
        strengths: ``(S,)`` s, centred (zeros for the pairs model).
        log_nu: ν's log (0 for the pairs model).
        log_pairs: ``(P, 3)`` each unordered pair's log π (the pairs model), else None.
        log_confusion: ``(J, 3, 3)`` each judge's log C_j (independent), or ``(3, 3^J)``
            the joint one; None with no judges.
    """

    strengths: Array
    log_nu: Array
    log_pairs: Array | None
    log_confusion: Array | None


def unpack(position: Array, shape: ArenaShape) -> ArenaParameters:
    """The :class:`ArenaParameters` of a ``(d,)`` position."""
    if shape.pairs:
        log_pairs = _log_simplex(position[: shape.head].reshape(shape.n_pairs, 2))
        strengths, log_nu = jnp.zeros(shape.systems), jnp.zeros(())
    else:
        z = position[: shape.systems]
        strengths, log_nu, log_pairs = z - z.mean(), position[shape.systems], None
    rest = position[shape.head :]
    log_confusion = None
    if shape.judges:
        m = shape.confusion_rows[0]
        rows = _log_simplex(rest.reshape(len(shape.confusion_rows), m - 1))
        log_confusion = (
            rows.reshape(shape.judges, OUTCOMES, OUTCOMES) if shape.independent else rows
        )
    return ArenaParameters(strengths, log_nu, log_pairs, log_confusion)


def _log_truth(parameters: ArenaParameters, data: ArenaData, shape: ArenaShape) -> Array:
    """``(n, 3)`` each cell's log π of the truth in its positions (B, tie, A)."""
    if shape.pairs:
        log_pi = parameters.log_pairs[data.pair]  # (low worse, tie, low better)
        # In a cell, A is the lower-numbered system unless flipped: then A better is
        # "low worse".
        return jnp.where(data.flipped[:, None], log_pi[:, ::-1], log_pi)
    s = parameters.strengths
    return davidson_log_probabilities(s[data.a] - s[data.b], parameters.log_nu)


def _log_judged(parameters: ArenaParameters, data: ArenaData, shape: ArenaShape) -> Array:
    """``(n, 3)`` log P(the cell's judge verdicts | truth y), summed over missing ones."""
    n = data.count.shape[0]
    if not shape.judges:
        return jnp.zeros((n, OUTCOMES))
    log_c = parameters.log_confusion
    if shape.independent:
        # (n, J, y, l) masked to each judge's verdict, summed over l: log P(l_j | y).
        masked = jnp.where(data.judge_mask[:, :, None, :], log_c[None], -jnp.inf)
        return jax.nn.logsumexp(masked, axis=-1).sum(axis=1)
    masked = jnp.where(data.joint_mask[:, None, :], log_c[None], -jnp.inf)
    return jax.nn.logsumexp(masked, axis=-1)


def log_likelihood(position: Array, data: ArenaData, shape: ArenaShape) -> Array:
    """Σ_cells count · log P(the cell's verdicts)."""
    parameters = unpack(position, shape)
    joint = _log_truth(parameters, data, shape) + _log_judged(parameters, data, shape)
    known = data.human != NONE
    with_human = jnp.take_along_axis(joint, jnp.maximum(data.human, 0)[:, None], axis=1)[:, 0]
    per_cell = jnp.where(known, with_human, jax.nn.logsumexp(joint, axis=1))
    return jnp.sum(data.count * per_cell)


def log_prior(position: Array, shape: ArenaShape) -> Array:
    """The priors' log density in these coordinates (Dirichlet(1) Jacobians included)."""
    total = jnp.zeros(())
    if shape.pairs:
        total += _log_simplex(position[: shape.head].reshape(shape.n_pairs, 2)).sum()
    else:
        z = position[: shape.systems]
        total += -0.5 * jnp.sum((z / STRENGTH_SD) ** 2)
        total += -0.5 * (position[shape.systems] / LOG_NU_SD) ** 2
    if shape.judges:
        m = shape.confusion_rows[0]
        rest = position[shape.head :].reshape(len(shape.confusion_rows), m - 1)
        total += _log_simplex(rest).sum()
    return total


def logdensity(position: Array, data: ArenaData, shape: ArenaShape) -> Array:
    """log p(position | cells) up to a constant."""
    return log_prior(position, shape) + log_likelihood(position, data, shape)
