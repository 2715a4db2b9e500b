"""Per-configuration summaries over replicates, and ε_γ.

Inputs are ``(C, R)`` arrays: C configurations × R replicates of per-fit
results. Everything is ``jax.numpy`` and works on NumPy inputs too, but for
:func:`values_differ` and :func:`fits_differing`, which compare two runs' fits
bit for bit on the host (NumPy).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtri

from binmetric_sweep.kernels.estimators import Estimate
from binmetric_sweep.kernels.intervals import wilson_interval

Array = jax.Array

__all__ = [
    "FitResults",
    "EstimateSummary",
    "SamplerHealth",
    "empty_fits",
    "exact_fits",
    "take_fits",
    "epsilon",
    "counted",
    "summarize_estimates",
    "sampler_health",
    "values_differ",
    "fits_differing",
]


class FitResults(NamedTuple):
    """Per-fit results, each of one shape: ``(B,)`` lanes or ``(C, R)`` configurations × replicates.

    Attributes:
        post_mean: posterior mean of α.
        post_sd: posterior SD of α.
        ci_low: lower end of the central credible interval.
        ci_high: upper end of the central credible interval.
        rhat: split R-hat (NaN for exact fits).
        ess: bulk ESS (NaN for exact fits).
        sd_mcse: Monte Carlo SE of ``post_sd`` (0 for exact fits).
        divergences: divergent transitions after warm-up (0 for exact fits).
        tree_depth: mean NUTS tree depth (NaN for exact fits).
        steps: leapfrog steps after warm-up, all chains (0 for exact fits).
        exact: whether the fit was solved by quadrature rather than sampled.
    """

    post_mean: Array
    post_sd: Array
    ci_low: Array
    ci_high: Array
    rhat: Array
    ess: Array
    sd_mcse: Array
    divergences: Array
    tree_depth: Array
    steps: Array
    exact: Array


def empty_fits(b: int) -> FitResults:
    """``(b,)`` fits not yet answered: NaN numbers, zero counts, not exact (NumPy)."""
    nan = np.full(b, np.nan)
    zero = np.zeros(b, np.int64)
    return FitResults(
        post_mean=nan.copy(),
        post_sd=nan.copy(),
        ci_low=nan.copy(),
        ci_high=nan.copy(),
        rhat=nan.copy(),
        ess=nan.copy(),
        sd_mcse=np.zeros(b),
        divergences=zero.copy(),
        tree_depth=nan.copy(),
        steps=zero.copy(),
        exact=np.zeros(b, bool),
    )


def exact_fits(mean, sd, ci_low, ci_high) -> FitResults:
    """Fits solved exactly (quadrature, or the Beta itself), each ``(n,)``: no sampler,
    so R-hat, ESS and tree depth NaN, the SD's Monte Carlo error and the steps 0 (NumPy)."""
    fits = empty_fits(np.shape(mean)[0])
    return fits._replace(
        post_mean=np.asarray(mean, np.float64),
        post_sd=np.asarray(sd, np.float64),
        ci_low=np.asarray(ci_low, np.float64),
        ci_high=np.asarray(ci_high, np.float64),
        exact=np.ones(len(fits.exact), bool),
    )


def take_fits(fits: FitResults, index) -> FitResults:
    """Every field of ``fits`` at ``index`` (NumPy)."""
    return FitResults(*(np.asarray(x)[index] for x in fits))


def values_differ(x, y) -> np.ndarray:
    """Where two arrays of one field differ at all (bool, their shape); NaN equals NaN.

    Exact equality: a value one bit off differs.
    """
    x, y = np.asarray(x), np.asarray(y)
    same = x == y
    if x.dtype.kind == "f":
        same |= np.isnan(x) & np.isnan(y)
    return ~same


def fits_differing(a: FitResults, b: FitResults) -> int:
    """How many fits' numbers differ in any field between two :class:`FitResults`.

    NaN equals NaN (an exact fit's R-hat); any other difference, however
    small, counts.
    """
    differ = np.zeros(np.shape(a.post_mean), bool)
    for x, y in zip(a, b, strict=True):
        differ |= values_differ(x, y)
    return int(differ.sum())


class EstimateSummary(NamedTuple):
    """One estimator's summary of each configuration (``(C,)``), ε per requested γ (``(C, G)``).

    Replicates count where the estimator applies and its estimate and SE are
    finite; the others are counted in ``not_applicable`` and ``nonfinite``.

    Attributes:
        bias_mean: mean over replicates of estimate − true α.
        bias_sd: SD over replicates of the bias (the empirical SE); NaN for R = 1.
        bias_mcse: Monte Carlo SE of ``bias_mean``, bias_sd/√R.
        rmse: √(mean of bias²).
        se_mean: mean SE (for ``bayes`` the mean posterior SD σ̄).
        se_sd: SD over replicates of the SE; NaN for R = 1.
        se_ratio: ``se_mean``/``bias_sd``: below 1 the SE is over-confident; NaN for R = 1.
        width_mean: mean interval width.
        coverage: share of replicates whose interval holds the true α.
        coverage_mcse: √(coverage·(1 − coverage)/R); 0 when coverage is 0 or 1, where
            ``coverage_low``/``coverage_high`` still say how uncertain it is.
        coverage_low, coverage_high: the 95 % Wilson score interval of coverage
            (:func:`kernels.intervals.wilson_interval`) from the R replicates counted.
        eps: ``(C, G)`` ε = √2·``se_mean``·(z₁₋γ/₂ + z_power), or exactly 1 where
            there is no evidence; at power ½ this is the published ε_γ.
        nonfinite: replicates where the estimator applies but its estimate or SE is
            not finite (a failed fit).
        not_applicable: replicates where the estimator does not apply.
    """

    bias_mean: Array
    bias_sd: Array
    bias_mcse: Array
    rmse: Array
    se_mean: Array
    se_sd: Array
    se_ratio: Array
    width_mean: Array
    coverage: Array
    coverage_mcse: Array
    coverage_low: Array
    coverage_high: Array
    eps: Array
    nonfinite: Array
    not_applicable: Array


class SamplerHealth(NamedTuple):
    """A sampler's health over each configuration's replicates (``(C,)``).

    Attributes:
        rhat_max: worst R-hat over replicates (NaN if none was sampled).
        ess_min: smallest bulk ESS over replicates (NaN if none was sampled).
        divergences: total divergent transitions.
    """

    rhat_max: Array
    ess_min: Array
    divergences: Array


def epsilon(sd_mean: Array, gamma: Array, power: Array = 0.5) -> Array:
    """√2·σ̄·(z₁₋γ/₂ + z_power): the smallest significant difference (power ½: the published ε)."""
    return jnp.sqrt(2.0) * sd_mean * (ndtri(1.0 - 0.5 * gamma) + ndtri(power))


def _nan_std(x, finite, count):
    mean = jnp.sum(jnp.where(finite, x, 0.0), axis=1) / count
    sq = jnp.sum(jnp.where(finite, (x - mean[:, None]) ** 2, 0.0), axis=1)
    return jnp.where(count > 1, jnp.sqrt(sq / jnp.maximum(count - 1, 1)), jnp.nan)


def counted(estimates: Estimate) -> Array:
    """Replicates a summary counts: the estimator applies, estimate and SE are finite."""
    return estimates.applicable & jnp.isfinite(estimates.value) & jnp.isfinite(estimates.se)


def summarize_estimates(
    true_alpha: Array,
    estimates: Estimate,
    gammas: Array,
    no_evidence: Array,
    powers: Array = 0.5,
) -> EstimateSummary:
    """One estimator's summaries of C configurations from their ``(C, R)`` estimates.

    Args:
        true_alpha: ``(C,)`` the α each configuration simulated.
        estimates: the estimator's answers, each field ``(C, R)``.
        gammas: ``(G,)`` significance levels.
        no_evidence: ``(C,)`` True where ε is 1 by convention (for the posterior:
            N_Φ = N_M = 0, no ratings).
        powers: ``(G,)`` or scalar: the power each ε is for, paired with
            ``gammas`` (0.5, the default, gives the published ε).
    """
    finite = counted(estimates)
    count = jnp.sum(finite, axis=1)
    safe = jnp.maximum(count, 1)

    def mean(x):
        return jnp.where(count > 0, jnp.sum(jnp.where(finite, x, 0.0), axis=1) / safe, jnp.nan)

    bias = estimates.value - true_alpha[:, None]
    bias_sd = _nan_std(bias, finite, safe)
    se_mean = mean(estimates.se)
    covered = (estimates.ci_low <= true_alpha[:, None]) & (true_alpha[:, None] <= estimates.ci_high)
    coverage = mean(covered.astype(se_mean.dtype))
    gammas = jnp.asarray(gammas)
    powers = jnp.broadcast_to(jnp.asarray(powers, gammas.dtype), gammas.shape)
    eps = epsilon(se_mean[:, None], gammas[None, :], powers[None, :])
    eps = jnp.where(jnp.asarray(no_evidence)[:, None], 1.0, eps)
    coverage_low, coverage_high = wilson_interval(coverage, count)
    applies = jnp.sum(estimates.applicable, axis=1)
    return EstimateSummary(
        bias_mean=mean(bias),
        bias_sd=bias_sd,
        bias_mcse=bias_sd / jnp.sqrt(safe),
        rmse=jnp.sqrt(mean(bias * bias)),
        se_mean=se_mean,
        se_sd=_nan_std(estimates.se, finite, safe),
        se_ratio=se_mean / bias_sd,
        width_mean=mean(estimates.ci_high - estimates.ci_low),
        coverage=coverage,
        coverage_mcse=jnp.sqrt(coverage * (1.0 - coverage) / safe),
        coverage_low=coverage_low,
        coverage_high=coverage_high,
        eps=eps,
        nonfinite=applies - count,
        not_applicable=estimates.value.shape[1] - applies,
    )


def sampler_health(fits: FitResults, finite: Array) -> SamplerHealth:
    """R-hat, ESS and divergences of C configurations' ``(C, R)`` fits, over the
    replicates ``finite`` marks (:func:`counted`)."""
    sampled = finite & jnp.isfinite(fits.rhat)
    any_sampled = jnp.any(sampled, axis=1)
    return SamplerHealth(
        rhat_max=jnp.where(
            any_sampled, jnp.max(jnp.where(sampled, fits.rhat, -jnp.inf), axis=1), jnp.nan
        ),
        ess_min=jnp.where(
            any_sampled, jnp.min(jnp.where(sampled, fits.ess, jnp.inf), axis=1), jnp.nan
        ),
        divergences=jnp.sum(jnp.where(finite, fits.divergences, 0), axis=1),
    )
