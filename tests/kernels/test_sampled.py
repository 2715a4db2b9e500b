"""Sampled mode: posterior means unbiased and 95 % intervals covering, over 500 replicates.

Each configuration's counts are drawn afresh per replicate and fitted by
quadrature (the exact posterior). Where the data outweigh the uniform priors,
the posterior mean's bias (a shrinkage of order 1/N toward ½) is far below the
Monte Carlo SE of 500 replicates, and the credible interval's frequentist
coverage is close to its level.
"""

import jax
import numpy as np
import pytest

from binmetric_sweep.kernels.estimators import posterior_estimate
from binmetric_sweep.kernels.summaries import FitResults, summarize_estimates
from binmetric_sweep.sweep.execution.fits import fit_lanes
from binmetric_sweep.sweep.spec.lanes import lane_counts, lane_keys
from binmetric_sweep.sweep.spec.rating_model import BINARY
from tests.kernels.helpers import design

pytestmark = pytest.mark.slow

REPLICATES = 500


def test_sampled_mode_is_unbiased_and_covers():
    configs = design(
        alpha=[0.6, 0.45, 0.5],
        rho=[0.8, 0.9, 0.75],
        eta=[0.8, 0.7, 0.75],
        n_phi=[500, 300, 300],
        n_rho_eta=[0, 0, 400],
        n_m=[5000, 3000, 20000],
        shared_paired=[True, True, False],
        rho_eta_known=[False, True, False],
    )
    c = len(configs.alpha)
    lanes = jax.tree.map(lambda x: np.repeat(np.asarray(x), REPLICATES), configs)
    words = np.stack([np.repeat(np.arange(c), REPLICATES), np.zeros(c * REPLICATES)], 1)
    replicate = np.tile(np.arange(REPLICATES), c)
    keys = lane_keys(2026, words, replicate)
    counts = lane_counts(lanes, keys, "sampled", BINARY)
    fits = fit_lanes(counts, keys, "quadrature").fits
    per_config = FitResults(*(np.asarray(x).reshape(c, REPLICATES) for x in fits))
    estimates = posterior_estimate(*per_config[:4])
    s = summarize_estimates(
        np.asarray(configs.alpha), estimates, np.array([0.05]), np.zeros(c, bool)
    )
    bias, bias_mcse = np.asarray(s.bias_mean), np.asarray(s.bias_mcse)
    coverage, coverage_mcse = np.asarray(s.coverage), np.asarray(s.coverage_mcse)
    assert np.all(np.abs(bias) <= 3 * bias_mcse)
    assert np.all(np.abs(coverage - 0.95) <= 3 * coverage_mcse)
    assert np.all((np.asarray(s.coverage_low) <= 0.95) & (0.95 <= np.asarray(s.coverage_high)))
    # The spread of the posterior means matches the posterior SDs (calibration).
    assert np.all(np.abs(np.asarray(s.bias_sd) / np.asarray(s.se_mean) - 1) < 0.15)
