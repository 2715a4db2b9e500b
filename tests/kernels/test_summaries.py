import numpy as np
import pytest
from scipy import stats

from binmetric_sweep.kernels.estimators import Estimate, posterior_estimate
from binmetric_sweep.kernels.intervals import wilson_interval
from binmetric_sweep.kernels.summaries import (
    FitResults,
    counted,
    epsilon,
    fits_differing,
    sampler_health,
    summarize_estimates,
    values_differ,
)


def _posterior(fits: FitResults) -> Estimate:
    return posterior_estimate(fits.post_mean, fits.post_sd, fits.ci_low, fits.ci_high)


def test_epsilon_is_the_published_formula():
    assert float(epsilon(0.1, 0.05)) == pytest.approx(np.sqrt(2) * stats.norm.ppf(0.975) * 0.1)
    assert float(epsilon(0.1, 0.05, 0.8)) > float(epsilon(0.1, 0.05))


@pytest.mark.parametrize(("k", "n"), [(20, 20), (0, 20), (19, 20), (48, 50), (1, 1), (500, 500)])
def test_coverage_interval_is_scipys_wilson_interval(k, n):
    low, high = wilson_interval(np.array([k / n]), np.array([n]))
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    assert float(low[0]) == pytest.approx(ci.low, abs=1e-12)
    assert float(high[0]) == pytest.approx(ci.high, abs=1e-12)
    assert float(low[0]) < float(high[0])  # never empty, even at 0 or 1 of n


def test_coverage_interval_of_no_replicates_is_empty_not_invented():
    low, high = wilson_interval(np.array([0.0]), np.array([0]))
    assert np.isnan(low).all() and np.isnan(high).all()


def test_summaries_over_replicates():
    r = np.random.default_rng(0)
    mean = 0.6 + r.normal(0, 0.05, (2, 400))
    sd = np.full((2, 400), 0.05)
    nan = np.full((2, 400), np.nan)
    fits = FitResults(
        mean,
        sd,
        mean - 1.96 * sd,
        mean + 1.96 * sd,
        nan,
        nan,
        np.zeros((2, 400)),
        np.zeros((2, 400), int),
        nan,
        np.zeros((2, 400), int),
        np.ones((2, 400), bool),
    )
    s = summarize_estimates(
        np.array([0.6, 0.6]), _posterior(fits), np.array([0.05, 0.1]), np.array([False, True])
    )
    assert np.all(np.abs(np.asarray(s.bias_mean)) < 3 * np.asarray(s.bias_mcse))
    assert np.all(np.abs(np.asarray(s.coverage) - 0.95) < 3 * np.asarray(s.coverage_mcse) + 0.01)
    assert np.asarray(s.eps)[1].tolist() == [1.0, 1.0]
    low, high = np.asarray(s.coverage_low), np.asarray(s.coverage_high)
    assert np.all((low < np.asarray(s.coverage)) & (np.asarray(s.coverage) < high))
    assert np.isnan(np.asarray(sampler_health(fits, counted(_posterior(fits))).rhat_max)).all()
    # se_ratio: mean SE over the SD of the estimates, near 1 for an honest SE.
    assert np.all(np.abs(np.asarray(s.se_ratio) - 1) < 0.1)
    assert np.allclose(np.asarray(s.width_mean), 2 * 1.96 * 0.05)
    rmse = np.sqrt(((mean - 0.6) ** 2).mean(axis=1))
    assert np.allclose(np.asarray(s.rmse), rmse, rtol=1e-12)


def test_nonfinite_fits_are_counted_not_averaged():
    mean = np.array([[0.5, np.nan, 0.7]])
    sd = np.array([[0.1, 0.1, 0.1]])
    ones, zeros = np.ones((1, 3)), np.zeros((1, 3), int)
    fits = FitResults(
        mean, sd, mean - 0.2, mean + 0.2, ones, ones, 0 * ones, zeros, ones, zeros, zeros == 1
    )
    s = summarize_estimates(np.array([0.6]), _posterior(fits), np.array([0.05]), np.array([False]))
    assert int(np.asarray(s.nonfinite)[0]) == 1
    assert int(np.asarray(s.not_applicable)[0]) == 0
    assert float(np.asarray(s.bias_mean)[0]) == pytest.approx(0.0)


def test_replicates_where_an_estimator_does_not_apply_are_counted_apart():
    """Not applicable: counted in not_applicable, left out of every mean; the rest as usual."""
    value = np.array([[0.5, np.nan, 0.7, np.nan]])
    se = np.array([[0.1, np.nan, 0.1, 0.1]])
    reason = np.array([[0, 2, 0, 0]], np.int8)  # the last applies but its value is not finite
    est = Estimate(value, se, value - 0.2, value + 0.2, reason)
    s = summarize_estimates(np.array([0.6]), est, np.array([0.05]), np.array([False]))
    assert int(np.asarray(s.not_applicable)[0]) == 1 and int(np.asarray(s.nonfinite)[0]) == 1
    assert float(np.asarray(s.se_mean)[0]) == pytest.approx(0.1)
    assert float(np.asarray(s.coverage)[0]) == 1.0
    nowhere = est._replace(reason=np.full((1, 4), 2, np.int8))
    s = summarize_estimates(np.array([0.6]), nowhere, np.array([0.05]), np.array([False]))
    assert int(np.asarray(s.not_applicable)[0]) == 4 and np.isnan(np.asarray(s.eps)).all()


# How two runs' fits are told apart (the benchmarks compare workers, chunks, schedules).
def _fits(**changed) -> FitResults:
    fields = {name: np.zeros(3) for name in FitResults._fields}
    fields["rhat"] = np.array([np.nan, 1.0, np.nan])  # exact fits have no R-hat
    fields["exact"] = np.array([True, False, True])
    return FitResults(**{**fields, **changed})


def test_a_nan_equals_a_nan_and_nothing_else():
    x = np.array([np.nan, 1.0, np.nan, 2.0])
    y = np.array([np.nan, 1.0, 0.5, np.nextafter(2.0, 3.0)])  # one bit off
    assert values_differ(x, y).tolist() == [False, False, True, True]
    assert not values_differ(np.array([3, 4]), np.array([3, 4])).any()


def test_fits_differ_where_any_field_differs_at_all():
    assert fits_differing(_fits(), _fits()) == 0  # R-hat's NaNs alike
    moved = _fits(post_sd=np.array([0.0, 0.0, 5e-17]), rhat=np.array([np.nan, np.nan, np.nan]))
    assert fits_differing(_fits(), moved) == 2
