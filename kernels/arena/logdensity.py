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
``u`` (S − 1 coordinates of the strengths in an orthonormal basis of the sum-zero plane,
s = Q u: :func:`sum_to_zero`), ``log ν``, and every distribution
(a row of a confusion, a pair's π) in additive log-ratios with part 0 the reference, as
:mod:`kernels.categorical.logdensity` (a Dirichlet(1) prior is then Σ_i log q_i).

Priors: u_k ~ N(0, :data:`STRENGTH_SD`²), that is s ~ N(0, σ²I) restricted to Σ s = 0
(covariance σ²(I − 11ᵀ/S)): the same prior on s as raw strengths z_i ~ N(0, σ²) centred,
s = z − mean z, whose mean direction the likelihood never sees (u = Qᵀz, and mean z is
independent of u a priori and a posteriori), so the posterior of s is that one's, without a
coordinate NUTS must wander at the prior's scale while the differences are pinned at the
data's. Strength differences of a few units are plausible (an Arena's spread is about 2);
log ν ~ N(0, :data:`LOG_NU_SD`²); every distribution Dirichlet(1).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.arena.cells import NONE, BattleCells, pair_index

Array = jax.Array

__all__ = [
    "LOG_NU_SD",
    "OUTCOMES",
    "STRENGTH_SD",
    "ArenaData",
    "ArenaShape",
    "arena_data",
    "arena_shape",
    "davidson_log_probabilities",
    "logdensity",
    "sum_to_zero",
    "unpack",
]

#: Prior SD of each strength coordinate u_k (log-λ units) and of log ν.
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
        """Coordinates before the confusions: S − 1 strengths and log ν, or 2 per pair."""
        return 2 * self.n_pairs if self.pairs else self.systems

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
    """An arena's battles as the density reads them (device arrays): counts by ordered pair
    and verdict, so that a likelihood's cost grows with the pairs and the judges' verdict
    patterns, not with the cells.

    A battle with a human verdict y adds log π_y of its ordered pair plus log P(its judges'
    verdicts | y): the two parts are summed through ``human_counts`` and ``pattern_counts``.
    One without adds the log of the mixture Σ_y π_y P(pattern | y) of its pair and pattern:
    the ``(m, k)`` mixtures of every pair and pattern are one product of the pairs' π and
    the patterns' P, summed against ``free_counts`` (no gather, no scatter).

    Attributes:
        pair_a, pair_b: ``(m,)`` int32 the ordered pairs (system on side A, on side B) with a
            battle.
        pair_index: ``(m,)`` int32 each one's unordered pair (i < j, row-major).
        flipped: ``(m,)`` bool, a > b: the unordered pair's π read reversed.
        human_counts: ``(m, 3)`` float64 battles of the ordered pair with human verdict y.
        judge_mask: ``(k, J, 3)`` bool, each distinct judges' verdict pattern: the outcomes
            consistent with judge j's verdict (all three where it is missing).
        joint_mask: ``(k, 3^J)`` bool: joint verdicts consistent with every judge's.
        pattern_counts: ``(k, 3)`` float64 battles with the pattern and human verdict y.
        free_counts: ``(m, k)`` float64 battles of the ordered pair with the pattern and no
            human verdict.
    """

    pair_a: Array
    pair_b: Array
    pair_index: Array
    flipped: Array
    human_counts: Array
    judge_mask: Array
    joint_mask: Array
    pattern_counts: Array
    free_counts: Array


def _numbered(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of an ``(n, c)`` int array and each row's number among them."""
    if rows.shape[1] == 0:
        return rows[:1], np.zeros(len(rows), np.int64)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    return unique, inverse.reshape(-1)


def arena_data(
    cells: BattleCells, systems: int, judges: tuple[int, ...] | None = None
) -> ArenaData:
    """:class:`ArenaData` of ``cells`` with the judges of columns ``judges`` (None: all; ``()``:
    none, the human verdicts alone — battles without one then carry nothing)."""
    columns = range(cells.judges) if judges is None else judges
    judged = cells.judged[:, list(columns)] if len(columns) else cells.judged[:, :0]
    j = judged.shape[1]
    known = cells.human != NONE
    keep = np.ones(len(cells.count), bool) if j else known
    a, b = cells.a[keep].astype(np.int64), cells.b[keep].astype(np.int64)
    human, judged, count = cells.human[keep], judged[keep], cells.count[keep].astype(np.float64)
    known = human != NONE

    ordered, pair_of = _numbered(np.column_stack([a, b]))
    patterns, pattern_of = _numbered(judged)
    human_counts = np.zeros((len(ordered), OUTCOMES))
    np.add.at(human_counts, (pair_of[known], human[known]), count[known])
    pattern_counts = np.zeros((len(patterns), OUTCOMES))
    np.add.at(pattern_counts, (pattern_of[known], human[known]), count[known])
    free_counts = np.zeros((len(ordered), len(patterns)))
    np.add.at(free_counts, (pair_of[~known], pattern_of[~known]), count[~known])

    outcome = np.arange(OUTCOMES)
    judge_mask = (patterns[:, :, None] == NONE) | (patterns[:, :, None] == outcome)
    verdicts = np.indices((OUTCOMES,) * j).reshape(j, OUTCOMES**j).T  # (3^J, J), judge 1 first
    joint_mask = np.ones((len(patterns), OUTCOMES**j), bool)
    for k in range(j):
        joint_mask &= judge_mask[:, k, :][:, verdicts[:, k]]
    return ArenaData(
        pair_a=jnp.asarray(ordered[:, 0], jnp.int32),
        pair_b=jnp.asarray(ordered[:, 1], jnp.int32),
        pair_index=jnp.asarray(pair_index(ordered[:, 0], ordered[:, 1], systems), jnp.int32),
        flipped=jnp.asarray(ordered[:, 0] > ordered[:, 1]),
        human_counts=jnp.asarray(human_counts, jnp.float64),
        judge_mask=jnp.asarray(judge_mask),
        joint_mask=jnp.asarray(joint_mask),
        pattern_counts=jnp.asarray(pattern_counts, jnp.float64),
        free_counts=jnp.asarray(free_counts, jnp.float64),
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


def sum_to_zero(u: Array) -> Array:
    """``(S,)`` s = Q u for ``(S − 1,)`` coordinates u, Q the Helmert basis of the sum-zero
    plane (orthonormal columns: column k − 1 is 1/√(k(k+1)) on systems 0…k − 1 and
    −k/√(k(k+1)) on system k), in O(S) by a reverse cumulative sum."""
    k = jnp.arange(1, u.shape[-1] + 1, dtype=u.dtype)
    c = jnp.concatenate([jnp.zeros(1, u.dtype), u / jnp.sqrt(k * (k + 1.0))])  # c_0 = 0
    after = jnp.cumsum(c[::-1])[::-1] - c  # Σ_{k > i} c_k
    return after - jnp.arange(c.shape[0], dtype=u.dtype) * c


def unpack(position: Array, shape: ArenaShape) -> ArenaParameters:
    """The :class:`ArenaParameters` of a ``(d,)`` position."""
    if shape.pairs:
        log_pairs = _log_simplex(position[: shape.head].reshape(shape.n_pairs, 2))
        strengths, log_nu = jnp.zeros(shape.systems), jnp.zeros(())
    else:
        strengths = sum_to_zero(position[: shape.systems - 1])
        log_nu, log_pairs = position[shape.systems - 1], None
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
    """``(m, 3)`` each ordered pair's log π of the truth in its positions (B, tie, A)."""
    if shape.pairs:
        log_pi = parameters.log_pairs[data.pair_index]  # (low worse, tie, low better)
        # A is the lower-numbered system unless flipped: then A better is "low worse".
        return jnp.where(data.flipped[:, None], log_pi[:, ::-1], log_pi)
    s = parameters.strengths
    return davidson_log_probabilities(s[data.pair_a] - s[data.pair_b], parameters.log_nu)


def _log_judged(parameters: ArenaParameters, data: ArenaData, shape: ArenaShape) -> Array:
    """``(k, 3)`` log P(a verdict pattern | truth y), summed over its missing verdicts."""
    log_c = parameters.log_confusion
    if shape.independent:
        # (k, J, y, l) masked to each judge's verdict, summed over l: log P(l_j | y).
        masked = jnp.where(data.judge_mask[:, :, None, :], log_c[None], -jnp.inf)
        return jax.nn.logsumexp(masked, axis=-1).sum(axis=1)
    masked = jnp.where(data.joint_mask[:, None, :], log_c[None], -jnp.inf)
    return jax.nn.logsumexp(masked, axis=-1)


def log_likelihood(position: Array, data: ArenaData, shape: ArenaShape) -> Array:
    """Σ_battles log P(the battle's verdicts): with a human verdict, the pair's and the
    pattern's counts against log π and log P(pattern | y); without, each (pair, pattern)'s
    count against log Σ_y π_y P(pattern | y) (in probabilities: no π or P of a plausible
    arena comes near underflow)."""
    parameters = unpack(position, shape)
    log_pi = _log_truth(parameters, data, shape)
    total = jnp.sum(data.human_counts * log_pi)
    if shape.judges:
        log_judged = _log_judged(parameters, data, shape)
        total += jnp.sum(data.pattern_counts * log_judged)
        mixture = jnp.exp(log_pi) @ jnp.exp(log_judged).T  # (m, k)
        total += jnp.sum(data.free_counts * jnp.log(mixture))
    return total


def log_prior(position: Array, shape: ArenaShape) -> Array:
    """The priors' log density in these coordinates (Dirichlet(1) Jacobians included)."""
    total = jnp.zeros(())
    if shape.pairs:
        total += _log_simplex(position[: shape.head].reshape(shape.n_pairs, 2)).sum()
    else:
        u = position[: shape.systems - 1]
        total += -0.5 * jnp.sum((u / STRENGTH_SD) ** 2)
        total += -0.5 * (position[shape.systems - 1] / LOG_NU_SD) ** 2
    if shape.judges:
        m = shape.confusion_rows[0]
        rest = position[shape.head :].reshape(len(shape.confusion_rows), m - 1)
        total += _log_simplex(rest).sum()
    return total


def logdensity(position: Array, data: ArenaData, shape: ArenaShape) -> Array:
    """log p(position | battles) up to a constant."""
    return log_prior(position, shape) + log_likelihood(position, data, shape)
