"""kernels.diagnostics: NumPyro's ESS estimator over many fits, each fit's bits its own."""

import numpy as np
import pytest
from numpyro.diagnostics import effective_sample_size as numpyro_ess
from scipy.stats import norm, rankdata

from binmetric_sweep.kernels.diagnostics import (
    bulk_effective_sample_size,
    effective_sample_size,
    sd_mcse,
)


def ar1_chains(seed: int, fits: int, chains: int, n: int) -> np.ndarray:
    """``(fits, chains, n)`` AR(1) chains, φ from -0.6 (antithetic, as NUTS often is) to 0.95."""
    r = np.random.default_rng(seed)
    phi = r.uniform(-0.6, 0.95, (fits, 1))
    noise = r.normal(size=(fits, chains, n))
    x = np.empty_like(noise)
    x[..., 0] = noise[..., 0] / np.sqrt(1.0 - phi**2)
    for t in range(1, n):
        x[..., t] = phi * x[..., t - 1] + noise[..., t]
    return x * r.uniform(1e-3, 10.0, (fits, 1, 1)) + r.normal(size=(fits, 1, 1))


@pytest.mark.parametrize(("chains", "n"), [(4, 1000), (8, 500), (1, 999), (2, 3), (3, 2)])
def test_ess_is_numpyros_estimator(chains, n):
    x = ar1_chains(chains * n, 40, chains, n)
    expected = np.array([numpyro_ess(fit[:, :, None])[0] for fit in x])
    np.testing.assert_allclose(effective_sample_size(x), expected, rtol=1e-12)


def test_constant_chains_have_no_ess():
    x = ar1_chains(1, 3, 4, 100)
    x[1] = 0.25
    with np.errstate(invalid="ignore", divide="ignore"):
        got = effective_sample_size(x)
        assert np.isnan(numpyro_ess(x[1][:, :, None])[0])
    assert np.isnan(got[1]) and np.isfinite(got[[0, 2]]).all()


def test_a_fits_ess_has_the_same_bits_in_any_batch():
    """Across the 512-fit blocks too, in any order: nothing couples one fit to another."""
    x = ar1_chains(3, 1100, 4, 200)
    whole = effective_sample_size(x)
    for size in (1, 3, 511, 513):
        parts = [effective_sample_size(x[i : i + size]) for i in range(0, 1100, size)]
        np.testing.assert_array_equal(np.concatenate(parts), whole, err_msg=f"batches of {size}")
    np.testing.assert_array_equal(effective_sample_size(x[::-1])[::-1], whole)


def test_bulk_ess_is_the_ess_of_rank_normalised_split_chains():
    """Tied draws, which NUTS makes by repeating a draw, share their average rank."""
    x = ar1_chains(4, 30, 4, 301)  # odd: the middle draw of each chain is left out
    x[:, :, 1::5] = x[:, :, 0:-1:5]  # a fifth of the draws repeat the one before
    x[:3] = np.round(x[:3], 1)  # and runs of ties across chains
    split = np.concatenate([x[:, :, :150], x[:, :, 151:]], axis=1)
    expected = []
    for fit in split:
        ranks = rankdata(fit, method="average").reshape(fit.shape)
        z = norm.ppf((ranks - 0.375) / (fit.size + 0.25))
        expected.append(numpyro_ess(z[:, :, None])[0])
    np.testing.assert_allclose(bulk_effective_sample_size(x), expected, rtol=1e-12)


def test_sd_mcse_matches_its_definition_and_shrinks_with_draws():
    x = ar1_chains(5, 20, 4, 1000)
    d = (x - x.mean(axis=(1, 2), keepdims=True)) ** 2
    ess_d = np.array([numpyro_ess(fit[:, :, None])[0] for fit in d])
    flat = d.reshape(20, -1)
    expected = np.sqrt(flat.var(axis=1, ddof=1) / (4.0 * flat.mean(axis=1) * ess_d))
    np.testing.assert_allclose(sd_mcse(x), expected, rtol=1e-12)
    # The SD of iid normal draws over N draws has SE ≈ SD/√(2N).
    iid = np.random.default_rng(6).normal(size=(200, 4, 1000))
    ratio = sd_mcse(iid) / (iid.reshape(200, -1).std(axis=1, ddof=1) / np.sqrt(2 * 4000))
    assert 0.9 < np.median(ratio) < 1.1
