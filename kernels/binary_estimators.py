"""The five classical estimators of α on one campaign's binary counts.

Closed forms in the counts (:class:`kernels.counts.Counts`), on three sets of items:

- **H**, the human-rated items: N_Φ (``n_phi``), n₊ of them adequate (``n_pos``);
- **L**, the paired items, with a human label Y and a metric label f:
  N_ρη = P + (N_ρη − P) (``n_pos_paired`` + ``n_neg_paired``), n_ρ (``n_tp``)
  with Y = f = 1, n_η (``n_tn``) with Y = f = 0. With a shared paired set L is
  H; with ρ, η known there is none;
- **U**, the metric-only items: N_M (``n_m``), m₊ of them rated 1 (``m_pos``).

On L, mean(Y) = P/N_ρη, mean(f) = (n_ρ + N_ρη − P − n_η)/N_ρη and
mean(Y·f) = n_ρ/N_ρη. Variances are population variances (ddof 0), as
``ppi_py`` takes them, but for PPI++'s λ̂ (see :func:`ppi_pp`). Each function is
``(counts (B,), level) -> Estimate (B,)`` (:mod:`kernels.estimates`); the registry
of :mod:`kernels.estimators` holds them as values. Use float64.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.estimates import (
    CHANCE_JUDGE,
    FEW_PAIRED,
    NO_HUMAN,
    NO_METRIC,
    NO_PAIRED_ADEQUATE,
    NO_PAIRED_INADEQUATE,
    NO_PAIRED_SET,
    Estimate,
    masked_estimate,
    reason_code,
)
from binmetric_sweep.kernels.intervals import two_sided_z, wilson_interval

Array = jax.Array

__all__ = ["human_only", "judge_only", "rogan_gladen", "ppi", "ppi_pp"]


def _proportion(successes, trials, level: float, reason) -> Estimate:
    """successes/trials with SE √(p(1 − p)/n) and Wilson's score interval."""
    n = jnp.maximum(trials, 1.0)
    p = successes / n
    low, high = wilson_interval(p, trials, two_sided_z(level))
    return masked_estimate(p, jnp.sqrt(p * (1.0 - p) / n), low, high, reason)


def human_only(counts: Counts, level: float) -> Estimate:
    """n₊/N_Φ, the human ratings alone; Wilson interval. Needs N_Φ > 0."""
    reason = reason_code((counts.n_phi == 0, NO_HUMAN))
    return _proportion(counts.n_pos, counts.n_phi, level, reason)


def judge_only(counts: Counts, level: float) -> Estimate:
    """m₊/N_M, the metric's labels taken at face value; Wilson interval. Needs N_M > 0."""
    reason = reason_code((counts.n_m == 0, NO_METRIC))
    return _proportion(counts.m_pos, counts.n_m, level, reason)


def rogan_gladen(counts: Counts, level: float) -> Estimate:
    """Rogan and Gladen's correction of the judge's rate, with Lee et al.'s interval.

    α̂ = (p̂ + η̂ − 1)/(ρ̂ + η̂ − 1) clipped to [0, 1], p̂ = m₊/N_M, ρ̂ = n_ρ/P,
    η̂ = n_η/(N_ρη − P) (ρ, η as given where known). SE by the delta method at
    the clipped α̂. Interval (Lee et al. 2025): p̂, ρ̂, η̂ smoothed (z²/2 and
    one success and failure added), its centre moved by their second-order
    shift, clipped to [0, 1]; [0, 1] where the smoothed ρ̃ + η̃ ≤ 1. Where ρ, η
    are known their terms vanish and they are not smoothed. Needs N_M > 0,
    P > 0, N_ρη − P > 0 (unless known) and ρ̂ + η̂ > 1.
    """
    z = two_sided_z(level)
    known = counts.rho_eta_known
    n, m1, m0 = counts.n_m, counts.n_pos_paired, counts.n_neg_paired
    p = counts.m_pos / jnp.maximum(n, 1.0)
    rho = jnp.where(known, counts.rho, counts.n_tp / jnp.maximum(m1, 1.0))
    eta = jnp.where(known, counts.eta, counts.n_tn / jnp.maximum(m0, 1.0))
    youden = rho + eta - 1.0
    reason = reason_code(
        (n == 0, NO_METRIC),
        (~known & (m1 == 0), NO_PAIRED_ADEQUATE),
        (~known & (m0 == 0), NO_PAIRED_INADEQUATE),
        (youden <= 0, CHANCE_JUDGE),
    )
    safe = jnp.where(youden > 0, youden, 1.0)
    value = jnp.clip((p + eta - 1.0) / safe, 0.0, 1.0)
    calibration = jnp.where(
        known,
        0.0,
        (1.0 - value) ** 2 * eta * (1.0 - eta) / jnp.maximum(m0, 1.0)
        + value**2 * rho * (1.0 - rho) / jnp.maximum(m1, 1.0),
    )
    se = jnp.sqrt(p * (1.0 - p) / jnp.maximum(n, 1.0) + calibration) / safe

    z2 = z * z
    n_s = n + z2
    p_s = (counts.m_pos + z2 / 2.0) / n_s
    m0_s, m1_s = m0 + 2.0, m1 + 2.0
    eta_s = jnp.where(known, counts.eta, (counts.n_tn + 1.0) / m0_s)
    rho_s = jnp.where(known, counts.rho, (counts.n_tp + 1.0) / m1_s)
    youden_s = rho_s + eta_s - 1.0
    safe_s = jnp.where(youden_s > 0, youden_s, 1.0)
    theta = (p_s + eta_s - 1.0) / safe_s
    eta_term = eta_s * (1.0 - eta_s) / m0_s
    rho_term = rho_s * (1.0 - rho_s) / m1_s
    shift = jnp.where(known, 0.0, 2.0 * z2 * (-(1.0 - theta) * eta_term + theta * rho_term))
    spread = jnp.where(known, 0.0, (1.0 - theta) ** 2 * eta_term + theta**2 * rho_term)
    se_s = jnp.sqrt(p_s * (1.0 - p_s) / n_s + spread) / safe_s
    low = jnp.where(youden_s > 0, jnp.clip(theta + shift - z * se_s, 0.0, 1.0), 0.0)
    high = jnp.where(youden_s > 0, jnp.clip(theta + shift + z * se_s, 0.0, 1.0), 1.0)
    return masked_estimate(value, se, low, high, reason)


class _Paired(NamedTuple):
    """Moments of the labels on L and U (each ``(B,)``)."""

    n: Array  # N_ρη
    y: Array  # mean of Y on L
    f: Array  # mean of f on L
    var_y: Array
    var_f: Array
    cov: Array  # Cov_L(Y, f), ddof 0
    f_unlabeled: Array  # mean of f on U (0 where N_M = 0)
    reason: Array


def _paired(counts: Counts) -> _Paired:
    n = counts.n_pos_paired + counts.n_neg_paired
    safe = jnp.maximum(n, 1.0)
    y = counts.n_pos_paired / safe
    f = (counts.n_tp + counts.n_neg_paired - counts.n_tn) / safe
    reason = reason_code((counts.rho_eta_known, NO_PAIRED_SET), (n < 2, FEW_PAIRED))
    return _Paired(
        n=n,
        y=y,
        f=f,
        var_y=y * (1.0 - y),
        var_f=f * (1.0 - f),
        cov=counts.n_tp / safe - y * f,
        f_unlabeled=counts.m_pos / jnp.maximum(counts.n_m, 1.0),
        reason=reason,
    )


def _ppi_with(counts: Counts, level: float, lam: Array, moments: _Paired) -> Estimate:
    """λ·mean_U(f) + mean_L(Y − λf), SE √(Var_L(Y − λf)/N_ρη + λ²Var_U(f)/N_M), normal interval.

    Where N_M = 0, λ is 0: the classical mean of Y on L.
    """
    z = two_sided_z(level)
    has_u = counts.n_m > 0
    lam = jnp.where(has_u, lam, 0.0)
    m = moments
    value = lam * m.f_unlabeled + m.y - lam * m.f
    rectifier = jnp.maximum(m.var_y + lam * lam * m.var_f - 2.0 * lam * m.cov, 0.0)
    var_u = m.f_unlabeled * (1.0 - m.f_unlabeled)
    se = jnp.sqrt(
        rectifier / jnp.maximum(m.n, 1.0)
        + jnp.where(has_u, lam * lam * var_u / jnp.maximum(counts.n_m, 1.0), 0.0)
    )
    return masked_estimate(value, se, value - z * se, value + z * se, m.reason)


def ppi(counts: Counts, level: float) -> Estimate:
    """Prediction-powered inference (Angelopoulos et al. 2023; ``ppi_py`` with λ = 1).

    mean_U(f) + mean_L(Y − f), normal interval. L must be a random sample of
    the outputs U comes from. Needs a paired set of at least 2 items; with
    N_M = 0 it is the classical mean of Y on L.
    """
    moments = _paired(counts)
    return _ppi_with(counts, level, jnp.ones_like(moments.y), moments)


def ppi_pp(counts: Counts, level: float) -> Estimate:
    """PPI++ (Angelopoulos et al. 2024): PPI with λ̂ tuned as ``ppi_py`` tunes it for a mean.

    λ̂ = Cov_L(Y, f) / ((1 + N_ρη/N_M)·Var_{L∪U}(f)), the covariance with
    ddof 0 and the variance over L and U together with ddof 1, clipped to
    [0, 1]. Where f takes one value on L and U every λ gives the same
    estimate and SE, and λ̂ is 0 (``ppi_py`` gives NaN there).
    """
    m = _paired(counts)
    total = m.n + counts.n_m
    ones = m.f * m.n + counts.m_pos
    var_all = (ones - ones * ones / jnp.maximum(total, 1.0)) / jnp.maximum(total - 1.0, 1.0)
    denominator = (1.0 + m.n / jnp.maximum(counts.n_m, 1.0)) * var_all
    lam = jnp.where(denominator > 0, m.cov / jnp.where(denominator > 0, denominator, 1.0), 0.0)
    return _ppi_with(counts, level, jnp.clip(lam, 0.0, 1.0), m)
