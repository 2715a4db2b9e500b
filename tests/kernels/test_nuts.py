"""NUTS against the quadrature reference, on the same counts."""

import jax
import numpy as np
import pytest

from kernels.nuts import NUTSSettings
from sweep.fits import fit_lanes, lane_keys
from tests.kernels.helpers import counts

pytestmark = pytest.mark.slow


def test_nuts_agrees_with_quadrature():
    c = counts(
        n_pos=[60, 30, 0, 300, 7],
        n_phi=[100, 50, 0, 500, 10],
        n_tp=[42, 20, 0, 250, 5],
        n_pos_paired=[60, 30, 0, 300, 7],
        n_tn=[28, 15, 0, 150, 2],
        n_neg_paired=[40, 20, 0, 200, 3],
        m_pos=[5400, 120, 300, 60000, 40],
        n_m=[10**4, 200, 500, 10**5, 60],
        rho=[0, 0, 0, 0, 0.9],
        eta=[0, 0, 0, 0, 0.8],
        rho_eta_known=[False] * 4 + [True],
    )
    b = len(c.n_m)
    keys = lane_keys(1, np.stack([np.arange(b), np.zeros(b)], 1), np.zeros(b))
    exact = fit_lanes(c, keys, "quadrature")
    fit = fit_lanes(c, keys, "nuts", nuts=NUTSSettings(chains=4, warmup=500, samples=1000))
    assert not fit.exact.any()
    mcse = fit.post_sd / np.sqrt(fit.ess)
    assert np.all(np.abs(fit.post_mean - exact.post_mean) < 5 * mcse)
    assert np.all(np.abs(fit.post_sd / exact.post_sd - 1) < 0.06)
    # Lane 2 (N_Φ = N_ρη = 0, N_M = 500) is a thin curved sheet in (α, ρ, η):
    # 4 × 1000 draws leave R-hat near 1.015 there. The others mix well.
    assert np.all(np.delete(fit.rhat, 2) < 1.01) and fit.rhat[2] < 1.05
    assert fit.divergences.sum() < 0.001 * b * 4 * 1000


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
    settings = NUTSSettings(chains=2, warmup=100, samples=100)
    both = fit_lanes(c, keys, "nuts", nuts=settings)
    again = fit_lanes(c, keys, "nuts", nuts=settings)
    alone = fit_lanes(jax.tree.map(lambda x: x[1:], c), keys[1:], "nuts", nuts=settings)
    assert np.array_equal(both.post_mean, again.post_mean)
    assert both.post_mean[1] == pytest.approx(alone.post_mean[0], abs=1e-12)
