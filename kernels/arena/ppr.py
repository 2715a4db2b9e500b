"""Prediction-powered ranking (Chatzi, Straitouri, Thejaswi, Gomez-Rodriguez, NeurIPS 2024).

Each system's win rate θ_i is the share of the battles it plays that it wins, a tie counting
as no win for either side, over the distribution of battles: the ratio
E[1{i plays}·w_i] / P(i plays), estimated by the same ratio of sums over battles. The
prediction-powered (PPI) estimate combines the n battles with a human verdict (each also
judged) and the N battles that only the judge saw:

    θ̂ = λ·r_N(judge) − (λ·r_n(judge) − r_n(human)),

r_set(v) the win rates of verdicts v over a set of battles, each rate over that set's own
battles of the system; λ = 0 is the human verdicts alone. Its covariance is the delta
method's for ratios of sums: with e_t the residual vector of battle t (its two systems'
entries w − r, zero elsewhere) and c_i the battles of i in the set,

    Σ̂ = λ²·Σ_t∈N e_t e_tᵀ / (c^N c^Nᵀ) + Σ_t∈n (λ e^f_t − e^h_t)(λ e^f_t − e^h_t)ᵀ / (c^n c^nᵀ),

the division entrywise. The released code (Networks-Learning/prediction-powered-ranking,
``src/estimate.py``) divides each sum by the set's total battles squared instead (n², N²),
which is Σ̂ times P(i plays)·P(j plays) in each entry: for S systems in balanced battles
(P = 2/S) its standard deviations are S/2 times too small. :func:`released_covariance`
reproduces that formula for comparison only.

Rank sets follow the paper's χ²_S ellipsoid: j is surely above i when θ̂_j > θ̂_i and
|θ̂_i − θ̂_j|/√2 > √((Σ̂_ii + Σ̂_jj − 2Σ̂_ij)·χ²_{S,level}/2); i's rank set is
[1 + #surely above, S − #surely below], and the sets hold the true ranking together with
probability ≥ level asymptotically.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from binmetric_sweep.kernels.arena.cells import A_BETTER, B_BETTER, NONE, BattleCells

__all__ = [
    "PPRWinRates",
    "battles_played",
    "chi2_quantile",
    "power_tuned_lambda",
    "ppr_win_rates",
    "rank_sets",
    "released_covariance",
]


class PPRWinRates(NamedTuple):
    """A PPI estimate of every system's win rate.

    Attributes:
        theta: ``(S,)`` θ̂, each system's estimated share of its battles won (ties 0).
        cov: ``(S, S)`` Σ̂, the estimate's covariance (delta method for ratios of sums).
        lam: λ, the judge's weight (0: the human verdicts alone).
        human: n, the battles with a human verdict.
        judge_only: N, the battles without one (judged only).
    """

    theta: np.ndarray
    cov: np.ndarray
    lam: float
    human: int
    judge_only: int


class _Battles(NamedTuple):
    """One set of battles' cells: sides ``(C,)`` int, battles per cell ``(C,)`` float."""

    a: np.ndarray
    b: np.ndarray
    count: np.ndarray


class _Rates(NamedTuple):
    """Win rates of one verdict over one set: ``(S,)`` battles c_i, ``(S,)`` rates r_i, and
    ``(C,)`` each cell's residuals w − r for its A and its B system."""

    played: np.ndarray
    rate: np.ndarray
    residual_a: np.ndarray
    residual_b: np.ndarray


def battles_played(a: np.ndarray, b: np.ndarray, count: np.ndarray, systems: int) -> np.ndarray:
    """``(S,)`` float64 the battles each system plays in ``(C,)`` cells (either side): a win
    rate's denominator, so that a system at 0 has none."""
    return np.bincount(a, count, systems) + np.bincount(b, count, systems)


def _rates(battles: _Battles, verdict: np.ndarray, systems: int, what: str) -> _Rates:
    """The win rates of ``(C,)`` verdict classes over ``battles``."""
    wins_a = (verdict == A_BETTER).astype(np.float64)
    wins_b = (verdict == B_BETTER).astype(np.float64)
    m = battles.count
    played = battles_played(battles.a, battles.b, m, systems)
    absent = np.flatnonzero(played == 0)
    if absent.size:
        raise ValueError(
            f"{what}: systems {absent.tolist()} have no battles there; every system needs one"
        )
    won = np.bincount(battles.a, m * wins_a, systems) + np.bincount(battles.b, m * wins_b, systems)
    rate = won / played
    return _Rates(played, rate, wins_a - rate[battles.a], wins_b - rate[battles.b])


def _residual_products(battles: _Battles, left: tuple, right: tuple, systems: int) -> np.ndarray:
    """``(S, S)`` Σ_t e_t e'_tᵀ over ``battles``, e and e' given by their ``(C,)`` A and B
    entries (``left`` and ``right``, each a pair)."""
    (la, lb), (ra, rb), m = left, right, battles.count
    out = np.zeros((systems, systems))
    np.add.at(out, (battles.a, battles.a), m * la * ra)
    np.add.at(out, (battles.b, battles.b), m * lb * rb)
    np.add.at(out, (battles.a, battles.b), m * la * rb)
    np.add.at(out, (battles.b, battles.a), m * lb * ra)
    return out


def _split(cells: BattleCells, judge: int | None):
    """The cells with a human verdict and those without, as ``_Battles`` and their verdicts."""
    a = np.asarray(cells.a, np.int64)
    b = np.asarray(cells.b, np.int64)
    count = np.asarray(cells.count, np.float64)
    human = np.asarray(cells.human)
    seen = human != NONE
    judged = None
    if judge is not None:
        if not 0 <= judge < cells.judges:
            raise ValueError(f"judge: {judge} is not a judge's column (0..{cells.judges - 1})")
        judged = np.asarray(cells.judged)[:, judge]
        if np.any(judged == NONE):
            raise ValueError(f"judge {judge}: a battle without its verdict; PPI needs it on all")
    labelled = _Battles(a[seen], b[seen], count[seen])
    unlabelled = _Battles(a[~seen], b[~seen], count[~seen])
    if judged is None:
        return labelled, unlabelled, (human[seen], None, None)
    return labelled, unlabelled, (human[seen], judged[seen], judged[~seen])


def _parts(cells: BattleCells, systems: int, judge: int | None):
    """Each set's rates: (labelled, unlabelled, human on n, judge on n, judge on N)."""
    labelled, unlabelled, (human, judge_n, judge_N) = _split(cells, judge)
    human_rates = _rates(labelled, human, systems, "human verdicts")
    if judge is None:
        return labelled, unlabelled, human_rates, None, None
    if unlabelled.count.sum() == 0:
        raise ValueError("judge: no battle lacks a human verdict, so the judge adds nothing")
    judge_n_rates = _rates(labelled, judge_n, systems, "the judged battles with a human verdict")
    judge_N_rates = _rates(unlabelled, judge_N, systems, "the battles without a human verdict")
    return labelled, unlabelled, human_rates, judge_n_rates, judge_N_rates


def _pair(rates: _Rates, scale: float = 1.0) -> tuple:
    return scale * rates.residual_a, scale * rates.residual_b


def power_tuned_lambda(cells: BattleCells, systems: int, judge: int) -> float:
    """λ̂ in [0, 1] that minimises tr Σ̂(λ), the trace of :func:`ppr_win_rates`' covariance.

    Σ̂(λ) is quadratic in λ: tr Σ̂ = λ²(T_N + T_f) − 2λ·T_fh + T_h, each T a Σ_i of the
    diagonal of a residual product over (c_i)², so λ̂ = T_fh / (T_N + T_f), clipped; 0 when
    the judge's verdicts do not vary. (The released code's λ̂ has the same form over its
    own unnormalised covariance; the two agree when every system plays the same share of
    battles in each set.)
    """
    labelled, unlabelled, human, judge_n, judge_N = _parts(cells, systems, judge)

    def trace(battles, left, right, played):
        return float(np.sum(np.diag(_residual_products(battles, left, right, systems)) / played**2))

    t_big = trace(unlabelled, _pair(judge_N), _pair(judge_N), judge_N.played)
    t_judge = trace(labelled, _pair(judge_n), _pair(judge_n), judge_n.played)
    t_cross = trace(labelled, _pair(judge_n), _pair(human), human.played)
    if t_big + t_judge <= 0.0:
        return 0.0
    return float(np.clip(t_cross / (t_big + t_judge), 0.0, 1.0))


def _estimate(cells, systems, judge, lam, normalised: bool) -> PPRWinRates:
    labelled, unlabelled, human, judge_n, judge_N = _parts(cells, systems, judge)
    n, big_n = float(labelled.count.sum()), float(unlabelled.count.sum())
    if judge is None:
        lam = 0.0
    elif lam is None:
        lam = power_tuned_lambda(cells, systems, judge)
    elif not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam: {lam} is not in [0, 1]")
    lam = float(lam)
    # λ e^f − e^h: the residuals of λ·(judge's wins) − (human wins) on the n battles.
    small = _pair(human, -1.0)
    theta = human.rate.copy()
    if judge is not None:
        small = (lam * judge_n.residual_a + small[0], lam * judge_n.residual_b + small[1])
        theta = lam * judge_N.rate - (lam * judge_n.rate - human.rate)
    small_norm = np.outer(human.played, human.played) if normalised else n**2
    cov = _residual_products(labelled, small, small, systems) / small_norm
    if judge is not None and lam > 0.0:
        big_norm = np.outer(judge_N.played, judge_N.played) if normalised else big_n**2
        big = _pair(judge_N)
        cov = cov + lam**2 * _residual_products(unlabelled, big, big, systems) / big_norm
    return PPRWinRates(theta, cov, lam, int(n), int(big_n))


def ppr_win_rates(
    cells: BattleCells, systems: int, judge: int | None = None, lam: float | None = None
) -> PPRWinRates:
    """The PPI estimate of the S win rates and its covariance (module docstring).

    Args:
        cells: the battles; those with a human verdict (``human`` ≠ NONE) are the n, the
            others the N judged only.
        systems: S; ``cells.a`` and ``cells.b`` index 0..S−1.
        judge: the column of ``cells.judged`` whose verdicts enter, or None for the human
            verdicts alone (the classical estimate, λ = 0).
        lam: the judge's weight λ in [0, 1]; None: :func:`power_tuned_lambda`.

    Returns:
        :class:`PPRWinRates`, θ̂ ``(S,)`` and Σ̂ ``(S, S)``.

    Raises:
        ValueError: a system without battles in a set that enters, a judge column out of
            range or with a missing verdict, no judged-only battles, or λ outside [0, 1].
    """
    return _estimate(cells, systems, judge, lam, normalised=True)


def released_covariance(
    cells: BattleCells, systems: int, judge: int | None = None, lam: float | None = None
) -> np.ndarray:
    """``(S, S)`` the covariance the released code computes, for comparison only.

    A reproduction of the formula of Networks-Learning/prediction-powered-ranking's
    ``src/estimate.py`` (``sample_avg`` for judge=None, ``estimate`` otherwise): the
    residual products divided by the set's total battles squared (n², N²), not by
    c_i·c_j. It is too small by P(i plays)·P(j plays) entrywise; do not rank with it.
    """
    return _estimate(cells, systems, judge, lam, normalised=False).cov


def _chi2_cdf(x: float, df: int) -> float:
    """P(χ²_df ≤ x) for integer df ≥ 1, in closed form (a finite sum, with erf for odd df)."""
    if x <= 0.0:
        return 0.0
    y = x / 2.0
    if df % 2 == 0:
        terms = (math.exp(k * math.log(y) - y - math.lgamma(k + 1)) for k in range(df // 2))
        return 1.0 - math.fsum(terms)
    terms = (
        math.exp((k - 0.5) * math.log(y) - y - math.lgamma(k + 0.5)) for k in range(1, df // 2 + 1)
    )
    return math.erf(math.sqrt(y)) - math.fsum(terms)


def chi2_quantile(p: float, df: int) -> float:
    """The χ²_df quantile at p in (0, 1), df ≥ 1 an integer (bisection on the exact CDF)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p: {p} is not in (0, 1)")
    low, high = 0.0, float(df) + 10.0 * math.sqrt(2.0 * df) + 10.0
    while _chi2_cdf(high, df) < p:
        low, high = high, 2.0 * high
    for _ in range(200):
        middle = 0.5 * (low + high)
        if _chi2_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low <= 1e-15 * high:
            break
    return 0.5 * (low + high)


def rank_sets(theta, cov, level: float) -> tuple[np.ndarray, np.ndarray]:
    """``(S,)`` int lower and upper ends of each system's rank set (1 the best) at ``level``.

    Args:
        theta: ``(S,)`` estimated win rates (higher is better).
        cov: ``(S, S)`` their covariance.
        level: 1 − α in (0, 1), the simultaneous coverage of the χ²_S ellipsoid.

    A pair whose difference has a negative or undefined variance is never separated.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level: {level} is not in (0, 1)")
    theta = np.asarray(theta, np.float64).reshape(-1)
    cov = np.asarray(cov, np.float64)
    s = theta.size
    quantile = chi2_quantile(level, s)
    diag = np.diag(cov)
    var = diag[:, None] + diag[None, :] - 2.0 * cov
    with np.errstate(invalid="ignore"):
        margin = np.abs(theta[:, None] - theta[None, :]) / math.sqrt(2.0) - np.sqrt(
            var * (quantile / 2.0)
        )
    apart = margin > 0.0  # NaN compares False
    np.fill_diagonal(apart, False)
    above = apart & (theta[None, :] > theta[:, None])  # [i, j]: j surely above i
    below = apart & (theta[None, :] < theta[:, None])
    return 1 + above.sum(axis=1), s - below.sum(axis=1)
