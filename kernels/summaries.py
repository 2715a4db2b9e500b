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

Array = jax.Array

__all__ = [
    "FitResults",
    "ConfigurationSummary",
    "empty_fits",
    "exact_fits",
    "take_fits",
    "epsilon",
    "wilson_interval",
    "summarize_configurations",
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


class ConfigurationSummary(NamedTuple):
    """One row per configuration (``(C,)``), ε per requested γ (``(C, G)``).

    Attributes:
        bias_mean: mean over replicates of posterior mean − true α.
        bias_sd: SD over replicates of the bias (the empirical SE); NaN for R = 1.
        bias_mcse: Monte Carlo SE of ``bias_mean``, bias_sd/√R.
        sd_mean: mean posterior SD σ̄.
        sd_sd: SD over replicates of the posterior SD; NaN for R = 1.
        coverage: share of replicates whose interval holds the true α.
        coverage_mcse: √(coverage·(1 − coverage)/R); 0 when coverage is 0 or 1, where
            ``coverage_low``/``coverage_high`` still say how uncertain it is.
        coverage_low, coverage_high: the 95 % Wilson score interval of coverage
            (:func:`wilson_interval`), from the R replicates with finite fits.
        eps: ``(C, G)`` ε = √2·σ̄·(z₁₋γ/₂ + z_power), or exactly 1 where there is no
            evidence; at power ½ this is the published ε_γ = √2·z₁₋γ/₂·σ̄.
        rhat_max: worst R-hat over replicates (NaN if none was sampled).
        ess_min: smallest bulk ESS over replicates (NaN if none was sampled).
        divergences: total divergent transitions.
        nonfinite: replicates whose posterior mean or SD is not finite; they
            are left out of every other column.
    """

    bias_mean: Array
    bias_sd: Array
    bias_mcse: Array
    sd_mean: Array
    sd_sd: Array
    coverage: Array
    coverage_mcse: Array
    coverage_low: Array
    coverage_high: Array
    eps: Array
    rhat_max: Array
    ess_min: Array
    divergences: Array
    nonfinite: Array


def epsilon(sd_mean: Array, gamma: Array, power: Array = 0.5) -> Array:
    """√2·σ̄·(z₁₋γ/₂ + z_power): the smallest significant difference (power ½: the published ε)."""
    return jnp.sqrt(2.0) * sd_mean * (ndtri(1.0 - 0.5 * gamma) + ndtri(power))


#: z of the coverage interval: a 95 % interval, whatever the sweep's credible level.
COVERAGE_Z = 1.959963984540054


def wilson_interval(share: Array, n: Array, z: float = COVERAGE_Z) -> tuple[Array, Array]:
    """The Wilson score interval of a proportion ``share`` of ``n`` trials: ``(low, high)``.

    Unlike share ± z·√(share(1 − share)/n), it is not empty at 0 or 1: with 20 of 20
    intervals covering, 95 % gives [0.839, 1] (rule of three: ≥ 0.85). NaN where n = 0.
    """
    n = jnp.asarray(n, jnp.result_type(share))
    z2n = z * z / jnp.maximum(n, 1)
    centre = (share + z2n / 2) / (1 + z2n)
    half = (
        z
        / (1 + z2n)
        * jnp.sqrt(share * (1 - share) / jnp.maximum(n, 1) + z2n / (4 * jnp.maximum(n, 1)))
    )
    valid = n > 0
    return (
        jnp.where(valid, jnp.maximum(centre - half, 0.0), jnp.nan),
        jnp.where(valid, jnp.minimum(centre + half, 1.0), jnp.nan),
    )


def _nan_std(x, finite, count):
    mean = jnp.sum(jnp.where(finite, x, 0.0), axis=1) / count
    sq = jnp.sum(jnp.where(finite, (x - mean[:, None]) ** 2, 0.0), axis=1)
    return jnp.where(count > 1, jnp.sqrt(sq / jnp.maximum(count - 1, 1)), jnp.nan)


def summarize_configurations(
    true_alpha: Array,
    fits: FitResults,
    gammas: Array,
    no_evidence: Array,
    powers: Array = 0.5,
) -> ConfigurationSummary:
    """Summaries of C configurations from their ``(C, R)`` fits.

    Args:
        true_alpha: ``(C,)`` the α each configuration simulated.
        fits: per-fit results, each ``(C, R)``.
        gammas: ``(G,)`` significance levels.
        no_evidence: ``(C,)`` True where N_Φ = N_M = 0 (ε is then 1 by convention).
        powers: ``(G,)`` or scalar: the power each ε is for, paired with
            ``gammas`` (0.5, the default, gives the published ε).
    """
    finite = jnp.isfinite(fits.post_mean) & jnp.isfinite(fits.post_sd)
    count = jnp.sum(finite, axis=1)
    safe = jnp.maximum(count, 1)

    def mean(x):
        return jnp.where(count > 0, jnp.sum(jnp.where(finite, x, 0.0), axis=1) / safe, jnp.nan)

    bias = fits.post_mean - true_alpha[:, None]
    bias_sd = _nan_std(bias, finite, safe)
    sd_mean = mean(fits.post_sd)
    covered = (fits.ci_low <= true_alpha[:, None]) & (true_alpha[:, None] <= fits.ci_high)
    coverage = mean(covered.astype(sd_mean.dtype))
    gammas = jnp.asarray(gammas)
    powers = jnp.broadcast_to(jnp.asarray(powers, gammas.dtype), gammas.shape)
    eps = epsilon(sd_mean[:, None], gammas[None, :], powers[None, :])
    eps = jnp.where(jnp.asarray(no_evidence)[:, None], 1.0, eps)
    coverage_low, coverage_high = wilson_interval(coverage, count)
    sampled = finite & jnp.isfinite(fits.rhat)
    any_sampled = jnp.any(sampled, axis=1)
    return ConfigurationSummary(
        bias_mean=mean(bias),
        bias_sd=bias_sd,
        bias_mcse=bias_sd / jnp.sqrt(safe),
        sd_mean=sd_mean,
        sd_sd=_nan_std(fits.post_sd, finite, safe),
        coverage=coverage,
        coverage_mcse=jnp.sqrt(coverage * (1.0 - coverage) / safe),
        coverage_low=coverage_low,
        coverage_high=coverage_high,
        eps=eps,
        rhat_max=jnp.where(
            any_sampled, jnp.max(jnp.where(sampled, fits.rhat, -jnp.inf), axis=1), jnp.nan
        ),
        ess_min=jnp.where(
            any_sampled, jnp.min(jnp.where(sampled, fits.ess, jnp.inf), axis=1), jnp.nan
        ),
        divergences=jnp.sum(jnp.where(finite, fits.divergences, 0), axis=1),
        nonfinite=fits.post_mean.shape[1] - count,
    )
