"""Each classical estimator's asymptotic SE in closed form, for planning a campaign's sizes.

The posterior's plan needs the exact quadrature, its SD having no closed
form; the classical estimators' SEs have one to first order (docs/model.md,
"Planning for another estimator"). With p = αρ + (1 − α)(1 − η),
J = ρ + η − 1, n paired ratings and N metric-only ratings:

- human-only: α(1 − α)/N_Φ;
- judge-only: p(1 − p)/N (its bias, p − α, is not in it: the simulation
  shows what it does to the test);
- Rogan–Gladen: [p(1 − p)/N + αρ(1 − ρ)/n + (1 − α)η(1 − η)/n]/J² (the delta
  method; ρ, η known: the first term alone);
- PPI: p(1 − p)/N + [P(Y ≠ f) − (α − p)²]/n;
- PPI++: α(1 − α)/n · (1 − r²·N/(n + N)), r the correlation of the human
  label Y and the metric's f (PPI++ with its best λ, clipped to [0, 1] as
  the estimator clips λ̂).

With a shared paired set n = N_Φ; with a separate one n is its size (and
N_Φ helps human-only alone); with ρ, η known there is no paired set and PPI,
PPI++ do not apply.

A :class:`PlanningSE` is what the planner needs of an estimator: the variance
as a function of the scenario (α, ρ, η, the paired design) and the sizes,
NaN where the estimator does not apply; which ratings it reads (so whether
buying human ratings lowers it); and why it never applies to a scenario.
These are host computations on NumPy arrays of sizes (the planner searches
integers), not JAX kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from binmetric_sweep.kernels.paired import PairedDesign

__all__ = [
    "PlanningSE",
    "human_only_variance",
    "judge_only_variance",
    "paired_size",
    "ppi_pp_variance",
    "ppi_variance",
    "rogan_gladen_variance",
]

#: ``(alpha, rho, eta, paired, n_phi, n_m) -> variance``: floats α, ρ, η, a paired design
#: and ``(G,)`` float arrays of sizes; the ``(G,)`` variances, NaN where it does not apply.
Variance = Callable[[float, float, float, PairedDesign, np.ndarray, np.ndarray], np.ndarray]


def always_applies(alpha: float, rho: float, eta: float, paired: PairedDesign) -> str:
    """The reason an estimator never applies to a scenario: none ("")."""
    return ""


class PlanningSE(NamedTuple):
    """How the planner prices an estimator's SE.

    Attributes:
        variance: its asymptotic variance (:data:`Variance`), NaN where it does
            not apply (no ratings of a kind it needs).
        reads_human: its SE falls as N_Φ grows under any paired design (the
            human ratings H are among its inputs).
        reads_paired: it reads the paired set L, so its SE falls as N_Φ grows
            where the paired set is the human-rated items (shared).
        not_planned: ``(alpha, rho, eta, paired) -> str``: why it never applies
            to that scenario ("" where it may; the planner then says that no
            sizes up to its limit reach the target).
    """

    variance: Variance
    reads_human: bool
    reads_paired: bool
    not_planned: Callable[[float, float, float, PairedDesign], str] = always_applies

    def searches_humans(self, paired: PairedDesign) -> bool:
        """Whether the planner searches N_Φ (else it plans N_Φ = 0)."""
        return self.reads_human or (self.reads_paired and paired.shared)


def paired_size(paired: PairedDesign, n_phi: np.ndarray) -> np.ndarray:
    """n, the paired ratings: N_Φ for a shared set, N_ρη for a separate one, 0 where known."""
    if paired.shared:
        return n_phi
    return np.full_like(n_phi, float(paired.n_pair))


def _judge_rate(alpha, rho, eta):
    """p = αρ + (1 − α)(1 − η), the share of outputs the metric calls adequate."""
    return alpha * rho + (1 - alpha) * (1 - eta)


def human_only_variance(alpha, rho, eta, paired, n_phi, n_m):
    """α(1 − α)/N_Φ; NaN where N_Φ = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n_phi > 0, alpha * (1 - alpha) / n_phi, np.nan)


def judge_only_variance(alpha, rho, eta, paired, n_phi, n_m):
    """p(1 − p)/N_M; NaN where N_M = 0."""
    p = _judge_rate(alpha, rho, eta)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n_m > 0, p * (1 - p) / n_m, np.nan)


def rogan_gladen_variance(alpha, rho, eta, paired, n_phi, n_m):
    """The delta method's [p(1 − p)/N_M + (ρ̂, η̂'s terms)/n]/J²; NaN where N_M = 0, J ≤ 0 or
    (ρ, η estimated) n = 0."""
    a, r, e = alpha, rho, eta
    n = paired_size(paired, n_phi)
    p = _judge_rate(a, r, e)
    j = r + e - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = 0.0 if paired.known else (a * r * (1 - r) + (1 - a) * e * (1 - e)) / n
        return np.where(
            (n_m > 0) & (j > 0) & ((n > 0) | paired.known),
            (p * (1 - p) / n_m + rates) / j**2,
            np.nan,
        )


def rogan_gladen_not_planned(alpha, rho, eta, paired) -> str:
    """Rogan–Gladen divides by J = ρ + η − 1: none where J ≤ 0."""
    return "judge no better than chance" if rho + eta <= 1 else ""


def _needs_paired_set(alpha, rho, eta, paired) -> str:
    return "no paired set (rho, eta known)" if paired.known else ""


def ppi_variance(alpha, rho, eta, paired, n_phi, n_m):
    """p(1 − p)/N_M + [P(Y ≠ f) − (α − p)²]/n; NaN where N_M = 0 or n < 2."""
    a, r, e = alpha, rho, eta
    n = paired_size(paired, n_phi)
    p = _judge_rate(a, r, e)
    with np.errstate(divide="ignore", invalid="ignore"):
        residual = a * (1 - r) + (1 - a) * (1 - e) - (a - p) ** 2
        return np.where((n_m > 0) & (n >= 2), p * (1 - p) / n_m + residual / n, np.nan)


def ppi_pp_variance(alpha, rho, eta, paired, n_phi, n_m):
    """α(1 − α)/n · (1 − r²·N_M/(n + N_M)); NaN where N_M = 0 or n < 2."""
    a, r = alpha, rho
    n = paired_size(paired, n_phi)
    p = _judge_rate(a, r, eta)
    with np.errstate(divide="ignore", invalid="ignore"):
        cov = a * r - a * p
        corr2 = cov**2 / (a * (1 - a) * p * (1 - p)) if 0 < p < 1 else 0.0
        corr2 = corr2 if cov > 0 else 0.0
        return np.where(
            (n_m > 0) & (n >= 2), a * (1 - a) / n * (1 - corr2 * n_m / (n + n_m)), np.nan
        )


HUMAN_ONLY = PlanningSE(human_only_variance, reads_human=True, reads_paired=False)
JUDGE_ONLY = PlanningSE(judge_only_variance, reads_human=False, reads_paired=False)
ROGAN_GLADEN = PlanningSE(
    rogan_gladen_variance, reads_human=False, reads_paired=True,
    not_planned=rogan_gladen_not_planned,
)  # fmt: skip
PPI = PlanningSE(ppi_variance, reads_human=False, reads_paired=True, not_planned=_needs_paired_set)
PPI_PP = PlanningSE(
    ppi_pp_variance, reads_human=False, reads_paired=True, not_planned=_needs_paired_set
)
