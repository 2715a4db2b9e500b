"""NUTS against the quadrature reference, on the same counts.

One batched NUTS call (default settings: 4 chains × (500 + 1000), the
one-leapfrog-per-iteration loop) fits the published table's expected counts
and count tuples drawn across the issue's ranges (edge cases and known ρ, η
included): over 200 sampled fits, each compared with its exact posterior.
NumPyro's own NUTS, the oracle, is held to the same bounds on a subset (a dozen
fits), with a diagonal mass matrix and with a dense one.
"""

from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np
import pytest

from binmetric_sweep.kernels.nuts import (
    NUTSSettings,
    resolve_loop,
    sample_fits,
    sampler_key,
    summarize_draws,
    summary_block_fits,
)
from binmetric_sweep.kernels.ridge import prefers_ridge
from binmetric_sweep.sweep.execution.fits import fit_lanes
from binmetric_sweep.sweep.spec.lanes import lane_keys
from tests.kernels.helpers import agreement_lanes, counts, numpyro_nuts, published_eps

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def agreement():
    table, c = agreement_lanes()
    b = len(c.n_m)
    keys = lane_keys(3, np.stack([np.arange(b), np.ones(b)], 1), np.zeros(b))
    exact = fit_lanes(c, keys, "quadrature").fits
    fit = fit_lanes(c, keys, "nuts").fits
    return table, c, exact, fit


def test_nuts_agrees_with_quadrature_on_200_tuples(agreement):
    _, c, exact, fit = agreement
    sampled = ~fit.exact
    assert sampled.sum() >= 200
    assert np.asarray(c.rho_eta_known)[sampled].sum() >= 5
    mean, sd, rhat = fit.post_mean[sampled], fit.post_sd[sampled], fit.rhat[sampled]
    mcse = sd / np.sqrt(fit.ess[sampled])
    assert np.all(np.abs(mean - exact.post_mean[sampled]) <= 5 * mcse)
    # Within 6 % wherever the draws resolve the SD that well (5 MCSE ≤ 6 %);
    # a skewed posterior at an edge (α ≈ 0 with no successes: kurtosis ~9)
    # leaves a 3 % MCSE in the SD of 4000 draws, and there the bound is 5 MCSE.
    sd_error = np.abs(sd - exact.post_sd[sampled])
    assert np.all(sd_error <= np.maximum(0.06 * sd, 5 * fit.sd_mcse[sampled]))
    assert np.median(sd_error / exact.post_sd[sampled]) <= 0.02
    assert np.mean(sd_error <= 0.06 * sd) >= 0.97
    assert np.mean(rhat < 1.01) >= 0.99
    draws = sampled.sum() * 4 * 1000
    assert fit.divergences[sampled].sum() < 0.001 * draws
    # Lanes with N_M = 0 are the Beta itself, under either method.
    np.testing.assert_allclose(fit.post_sd[~sampled], exact.post_sd[~sampled], rtol=1e-12)


# NumPyro's sampler, not ours; ours: test_nuts_agrees_with_quadrature_on_200_tuples
@pytest.mark.long
@pytest.mark.parametrize("dense_mass", [False, True], ids=["diagonal", "dense"])
def test_numpyro_s_own_nuts_agrees_with_quadrature(agreement, dense_mass):
    """The oracle: NumPyro's NUTS (``numpyro.infer.hmc``) on every eighteenth sampled lane
    (and, with a diagonal mass matrix, every third with ρ, η known).

    The sampler (kernels/stepwise.py) runs the same NUTS one leapfrog at a time;
    NumPyro's own, on the same log-density and coordinates, is held to the same
    bounds against the exact posterior, with a diagonal mass matrix and with a
    dense one (which the sampler does not adapt).
    """
    _, c, exact, fit = agreement
    sampled = np.flatnonzero(~fit.exact)
    key = jax.random.key(3)
    for known in (False, True) if not dense_mass else (False,):
        group = sampled[np.asarray(c.rho_eta_known)[sampled] == known][:: 3 if known else 18]
        assert len(group) >= (2 if known else 10)
        lanes = jax.tree.map(lambda x, g=group: np.asarray(x)[g], c)
        keys = jax.random.split(jax.random.fold_in(key, known), len(group))
        draws = numpyro_nuts(keys, lanes, 1 if known else 3, dense_mass)
        other = summarize_draws(draws, 0.95)
        mcse = other.sd / np.sqrt(other.ess)
        assert np.all(np.abs(other.mean - exact.post_mean[group]) <= 5 * mcse)
        sd_error = np.abs(other.sd - exact.post_sd[group])
        assert np.all(sd_error <= np.maximum(0.06 * other.sd, 5 * other.sd_mcse))
        assert np.all(other.rhat < 1.01)


def test_nuts_reproduces_the_published_eps(agreement):
    """Within 0.003, or where 4000 draws cannot resolve that, within 4 Monte Carlo SEs.

    Where N_Φ = N_ρη = 0 the α posterior is nearly flat (ε ≈ 0.73) and the SD
    of 4000 draws carries a Monte Carlo SE of ≈ 0.45/√ESS relative (a flat
    density's kurtosis is 1.8), about 0.006 in ε: 0.003 there needs ~10^5 draws.
    """
    table, _, _, fit = agreement
    n = len(table)
    eps = published_eps(table, fit.post_sd[:n])
    error = np.abs(eps - table.eps.values)
    mcse = eps * fit.sd_mcse[:n] / fit.post_sd[:n]  # ε is proportional to the SD
    assert np.all(error <= np.maximum(0.003, 4 * mcse))
    assert np.mean(error <= 0.003) >= 0.8


def test_nuts_is_deterministic_and_independent_of_batch():
    c = counts(
        n_pos=[60, 30],
        n_phi=[100, 50],
        n_tp=[42, 20],
        n_pos_paired=[60, 30],
        n_tn=[28, 15],
        n_neg_paired=[40, 20],
        m_pos=[540, 120],
        n_m=[1000, 200],
    )
    keys = lane_keys(5, np.array([[1, 0], [2, 0]]), np.zeros(2))
    settings = NUTSSettings(chains=2, warmup=50, samples=50)
    both = fit_lanes(c, keys, "nuts", nuts=settings).fits
    again = fit_lanes(c, keys, "nuts", nuts=settings).fits
    alone = fit_lanes(jax.tree.map(lambda x: x[1:], c), keys[1:], "nuts", nuts=settings).fits
    assert np.array_equal(both.post_mean, again.post_mean)
    assert both.post_mean[1] == pytest.approx(alone.post_mean[0], abs=1e-12)
    # fit_lanes groups these ridge lanes and compiles the ridge density alone;
    # choosing coordinates per lane evaluates both and selects: the same chains,
    # up to rounding (the two programs fuse differently; seen: 6e-7 relative
    # after 100 transitions, which a trajectory's sensitivity amplifies).
    assert np.asarray(prefers_ridge(c)).all()
    # (sample_fits, not a vmap of sample_fit: vmapped, the chain's while loop
    # selects its whole state every step, and compiles far longer: docs/performance.md.)
    on_cpu = resolve_loop(settings, "cpu")
    chosen = jax.jit(lambda k, c: sample_fits(jax.vmap(sampler_key)(k), c, on_cpu, 3))(keys, c)
    per_lane = summarize_draws(np.asarray(chosen.alpha), 0.95)
    np.testing.assert_allclose(per_lane.mean, both.post_mean, rtol=1e-5)


def test_a_fits_summary_does_not_depend_on_the_fits_beside_it():
    """Every field of summarize_draws, ESS and its MCSE included, bit for bit in any batch.

    NumPyro's ESS gives a fit other bits in batches of other sizes (seen: 1 to
    4 of 64-128 fits); kernels.diagnostics' does not (test_diagnostics).
    """
    r = np.random.default_rng(7)
    b = 100
    walk = r.normal(size=(b, 4, 1000)).cumsum(axis=2) * r.uniform(0.0, 0.1, (b, 1, 1))
    alpha = 1.0 / (1.0 + np.exp(-(walk + r.normal(size=walk.shape))))
    whole = summarize_draws(alpha, 0.95)
    for size in (1, 7, 33):
        parts = [summarize_draws(alpha[i : i + size], 0.95) for i in range(0, b, size)]
        for name, got in zip(whole._fields, zip(*parts, strict=True), strict=True):
            np.testing.assert_array_equal(np.concatenate(got), getattr(whole, name), err_msg=name)
    assert np.all((whole.ess > 0) & (whole.ess < 2 * 4 * 1000)) and np.all(whole.sd_mcse > 0)


def test_summaries_in_blocks_on_threads_are_those_of_each_fit_alone():
    """How fit_lanes summarises a NUTS call on an accelerator's host: blocks on every core."""
    r = np.random.default_rng(8)
    walk = r.normal(size=(600, 4, 1000)).cumsum(axis=2) * r.uniform(0.0, 0.1, (600, 1, 1))
    alpha = 1.0 / (1.0 + np.exp(-(walk + r.normal(size=walk.shape))))
    alpha[5] = 0.5  # a fit whose α never moved: NaN R-hat and ESS, in a block as alone
    assert summary_block_fits(4, 1000) < 300  # so three blocks here, the last ragged
    with np.errstate(invalid="ignore", divide="ignore"):
        with ThreadPoolExecutor(3) as pool:
            blocks = summarize_draws(alpha, 0.9, pool.map)
        alone = [summarize_draws(alpha[i : i + 1], 0.9) for i in range(600)]
    for name, got, each in zip(blocks._fields, blocks, zip(*alone, strict=True), strict=True):
        np.testing.assert_array_equal(got, np.concatenate(each), err_msg=name)
    assert np.isnan(blocks.ess[5]) and np.isfinite(np.delete(blocks.ess, 5)).all()


def test_no_fits_have_empty_summaries():
    summary = summarize_draws(np.zeros((0, 4, 10)), 0.95)
    assert all(field.shape == (0,) for field in summary)
