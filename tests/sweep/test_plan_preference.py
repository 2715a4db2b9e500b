"""``sweep plan --ratings preference``: integer plans per estimator, per-judge prices, one judge
against two, the posterior's asymptotic SD against NUTS, the classical SEs against simulated
campaigns, and refusals."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pytest

from binmetric_sweep.kernels.estimators import POSTERIOR, estimator_named
from binmetric_sweep.kernels.nuts import NUTSSettings
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.plan.categorical import (
    KAPPA_TOLERANCE,
    draw_campaigns,
    eps_function,
    estimates_of,
    least_n_phi,
    nuts_check,
    plan_preference,
    search_sizes,
)
from binmetric_sweep.sweep.plan.categorical_sd import classical_se, posterior_sd
from binmetric_sweep.sweep.plan.preference_spec import preference_spec
from binmetric_sweep.sweep.spec.lanes import lane_keys

BASE = dict(win=0.45, tie=0.2, accuracy=0.7, cost_judge=0.01, eps=0.03)
#: Small sampler settings (the sweep's are 4 chains × (500 + 1000)): a test's seconds.
SMALL_NUTS = NUTSSettings(chains=2, warmup=200, samples=300)
CLASSICAL = ("human_only", "rogan_gladen", "ppi", "ppi_pp")


@pytest.mark.parametrize("name", [*CLASSICAL, POSTERIOR.name])
def test_a_plan_meets_its_target_and_one_human_verdict_fewer_does_not(name):
    spec = preference_spec(BASE)
    eps_of = eps_function(spec, estimator_named(name))
    sizes = search_sizes(spec, eps_of)
    assert sizes.found and sizes.reachable and sizes.n_phi > 0
    x, y = np.array([sizes.n_phi, sizes.n_phi - 1.0]), np.full(2, float(sizes.n_m))
    at, below = eps_of(x, y)
    assert at <= spec.eps < below
    assert sizes.eps == pytest.approx(at, rel=1e-12)
    # Cheapest: N_M from 0 to 3× the plan's, each with its least N_Φ, costs no less (up to
    # the refinement's step of 0.2 % of N_M).
    others = np.unique(np.round(np.geomspace(1, 3 * sizes.n_m + 1, 60)))
    cost = spec.cost(least_n_phi(eps_of, others, spec.eps), others)
    slack = spec.judge_price * max(1, 2e-3 * sizes.n_m) + spec.cost_human
    assert np.all(cost >= spec.cost(x[0], y[0]) - slack)


def test_the_planning_sds_fall_as_either_size_grows():
    """Checked on a grid, not assumed: every estimator's SE (and the posterior's asymptotic SD)
    is non-increasing in N_Φ at each N_M (the search bisects N_Φ), and in N_M at each N_Φ but
    for ``ppi`` from N_M = 0 to 1: with no judge-only items it is the paired items' mean, with
    one it adds that item's whole variance (λ = 1), so the search tries every N_M on its grid."""
    spec = preference_spec(BASE)
    sizes = np.array([0, 1, 3, 10, 30, 100, 300, 1000, 3000, 10**4, 10**5, 10**6, 10**9], float)
    x, y = (g.ravel() for g in np.meshgrid(sizes, sizes, indexing="ij"))
    designs = spec.designs(x, y)
    sds = {"bayes": posterior_sd(spec.layout, designs)}
    for name in ("human_only", "judge_only", "rogan_gladen", "ppi", "ppi_pp"):
        sds[name] = classical_se(estimator_named(name).categorical, spec.layout, designs)[0]
    for name, sd in sds.items():
        grid = sd.reshape(len(sizes), len(sizes))
        tol = 1e-12 * np.nanmax(grid)
        for axis in (0, 1):
            step = np.diff(grid, axis=axis)
            if name == "ppi" and axis == 1:
                assert np.all(step[2:, 0] > 0)  # N_M = 0 → 1, wherever there are 2 paired items
                step = step[:, 1:]
            assert np.all(np.isnan(step) | (step <= tol)), (name, axis)
        assert np.isfinite(grid[-1, -1]), name


def test_a_plan_costs_the_human_verdicts_and_every_judge_at_its_price():
    spec = preference_spec(BASE | {"judges": 2, "cost_judge": "0.01,0.02", "n_rho_eta": 3000})
    assert spec.prices == (0.01, 0.02)
    assert spec.cost(1000, 20000) == pytest.approx(1000 + 0.03 * 20000 + 3000)
    both = preference_spec(BASE | {"judges": 3, "cost_judge": 0.01})
    assert both.prices == (0.01,) * 3 and both.judge_price == pytest.approx(0.03)
    plans = plan_preference(spec, [estimator_named("ppi_pp")], replicates=0, nuts=None)
    p = plans.plans[0]
    assert p.reachable and p.cost == pytest.approx(p.n_phi + (0.01 + 0.02) * p.n_m + 3000.0)
    alone = plans.one_judge.spec
    assert (alone.judges, alone.prices, alone.copy_rate) == (1, (0.01,), 0.0)
    q = plans.one_judge.plans[0]
    assert q.cost == pytest.approx(q.n_phi + 0.01 * q.n_m + 3000.0)


def test_a_second_judge_is_priced_against_judge_one_alone():
    """Two independent judges of accuracy 0.7 at 0.01 each: PPI++ needs fewer human verdicts
    and is cheaper; at 0.5 a verdict the second judge no longer pays for itself."""
    estimators = [estimator_named("ppi_pp")]
    cheap = plan_preference(BASE | {"judges": 2, "cost_judge": 0.01}, estimators, replicates=0)
    dear = plan_preference(BASE | {"judges": 2, "cost_judge": "0.01,0.5"}, estimators, replicates=0)
    assert cheap.second_judge_pays("ppi_pp") is True
    assert cheap.plans[0].n_phi < cheap.one_judge.plans[0].n_phi
    assert dear.second_judge_pays("ppi_pp") is False
    # Judge 1 alone is the same plan whatever the second judge costs.
    assert dear.one_judge.plans[0] == cheap.one_judge.plans[0]
    text = "\n".join(cheap.lines())
    assert "is a second judge worth its cost?" in text
    assert f"{cheap.plans[0].cost:,.2f}" in text and f"{cheap.one_judge.plans[0].cost:,.2f}" in text
    assert "cheaper: 2 judges" in text and "cheaper: judge 1 alone" in "\n".join(dear.lines())
    data = json.loads(cheap.json())
    assert data["one_judge"]["plans"][0]["cost"] == pytest.approx(cheap.one_judge.plans[0].cost)
    assert data["second_judge_pays"] == {"ppi_pp": True}


def test_the_asymptotic_posterior_sd_is_exact_where_the_posterior_is_a_dirichlet():
    """With no judge-only items and the confusion known, θ's posterior is vᵀπ of π ~ Dir(h +
    1), whose variance Var_q(v)/(A + 1) (q = (h + 1)/A, A = N_Φ + K) the asymptotic SD gives as
    Var_q(v)/A: a ratio √(A/(A + 1))."""
    spec = preference_spec(BASE | {"n_rho_eta": "known"})
    n = np.array([0.0, 10.0, 1000.0])
    sd = posterior_sd(spec.layout, spec.designs(n, np.zeros(3)))
    a = n[:, None] * np.array([0.35, 0.2, 0.45]) + 1.0
    q, total = a / a.sum(1, keepdims=True), a.sum(1)
    v = np.array([0.0, 0.5, 1.0])
    exact = np.sqrt((q @ v**2 - (q @ v) ** 2) / (total + 1))
    np.testing.assert_allclose(sd, exact * np.sqrt((total + 1) / total), rtol=1e-12)


@pytest.mark.yardstick
def test_the_asymptotic_posterior_sd_is_what_nuts_measures_and_the_plan_reports_both():
    """On expected counts at one design (one judge, N_Φ = 400, N_M = 4000), NUTS's posterior SD
    (2 chains × (200 + 300): its MCSE is about 5 %) is the asymptotic SD within three MCSEs and
    2 %, the asymptotic SD's error measured at the sweep's settings (4 chains × (500 + 1000),
    MCSE 1.5 %) on five designs from N_Φ = 50 to 1000 with N_M = 500 to 10⁵: 0.1 to 1.8 %.
    The posterior's plan measures it at the plan, and re-solves only past the tolerance.
    Opt-in (-m yardstick): a NUTS compile, about 30 s of CPU."""
    spec = preference_spec(BASE)
    check = nuts_check(spec, 400, 4000, SMALL_NUTS)
    approx = float(posterior_sd(spec.layout, spec.designs([400.0], [4000.0]))[0])
    assert check.rhat < 1.05 and check.divergences == 0
    assert abs(check.sd / approx - 1) <= 3 * check.mcse / approx + 0.02

    plans = plan_preference(BASE, [POSTERIOR], nuts=SMALL_NUTS)  # the same compiled sampler
    p = plans.plans[0]
    first = p.checks[0]
    agree = abs(first.ratio - 1) <= KAPPA_TOLERANCE + 2 * first.mcse / first.sd_asymptotic
    assert (p.kappa == 1.0) == agree and len(p.checks) == (1 if agree else 2)
    assert p.eps <= BASE["eps"] and p.replicates == 0  # bayes is simulated only when asked
    text = "\n".join(plans.lines())
    assert "NUTS" in text and "give --replicates R" in text


def _campaigns(spec, n_phi, n_m, replicates, seed):
    designs = spec.designs(np.full(replicates, float(n_phi)), np.full(replicates, float(n_m)))
    # Keys as the planner's simulation makes them (the same compiled draw).
    keys = lane_keys(seed, np.zeros((replicates, 2), np.uint32), np.arange(replicates))
    return draw_campaigns(keys, designs)


def _spread_and_se(name: str, campaigns: int) -> tuple[float, float]:
    spec = preference_spec(BASE)
    estimator = estimator_named(name)
    sizes = search_sizes(spec, eps_function(spec, estimator))
    counts = _campaigns(spec, sizes.n_phi, sizes.n_m, campaigns, seed=11)
    found = estimates_of(estimator, spec.layout, counts)
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    return float(np.std(np.asarray(found.value))), sizes.eps / (math.sqrt(2) * z)


def test_the_planning_se_is_the_spread_of_the_estimates_at_the_plan():
    """Over 4,000 simulated campaigns at PPI++'s plan, its estimates' SD is its planning SE
    within 4 % (an SD's MC error is 1.1 %; the delta method's is O(1/N))."""
    spread, se = _spread_and_se("ppi_pp", 4000)
    assert spread == pytest.approx(se, rel=0.04)


@pytest.mark.yardstick
@pytest.mark.parametrize("name", CLASSICAL)
def test_every_planning_se_is_the_spread_of_the_estimates_at_its_plan(name):
    """As above, for every classical estimator, over 20,000 campaigns (MC error 0.5 %): 2 %."""
    spread, se = _spread_and_se(name, 20000)
    assert spread == pytest.approx(se, rel=0.02)


def test_a_classical_plan_holds_in_simulated_campaigns():
    plans = plan_preference(BASE, [estimator_named("ppi_pp")], replicates=400, seed=3)
    p = plans.plans[0]
    assert p.replicates == 400 and p.holds(plans.spec)
    assert abs(p.power - 0.8) <= 3 * p.power_mcse
    assert p.type1_rate <= 0.05 + 3 * p.type1_mcse


def test_an_unreachable_target_and_a_budget():
    """A separate paired set of 50 items caps what rogan_gladen can learn of the confusion: no
    sizes reach ε = 0.01; a budget gives the least ε it buys, and says the target is unmet."""
    spec = BASE | {"n_rho_eta": 50, "eps": 0.01}
    plans = plan_preference(spec, [estimator_named("rogan_gladen")], replicates=0)
    p = plans.plans[0]
    assert p.reason and p.eps_floor > 0.01 and "UNREACHABLE" in "\n".join(plans.lines())
    budget = plan_preference(spec | {"budget": 5000}, [estimator_named("ppi_pp")], replicates=0)
    q = budget.plans[0]
    assert not q.reachable and q.cost <= 5000 and not budget.reachable


def _refused(argv, capsys) -> str:
    assert main(["plan", *argv]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1
    return out.err.strip()


GOOD = ["--ratings", "preference", "--win", "0.45", "--tie", "0.2", "--accuracy", "0.7"]
GOOD += ["--cost-judge", "0.01", "--eps", "0.03"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--judges", "2", "--cost-judge", "0.01,0.02,0.03"], "--cost-judge: 3 prices for 2"),
        (["--cost-judge", "0.01,x"], "--cost-judge: '0.01,x' is not a price"),
        (["--judges", "4"], "--judges: '4' is not allowed; give a whole number from 1 to 3"),
        (["--win", "1.2"], "--win: 1.2 is out of range; allowed: (0, 1)"),
        (["--tie", "0.6"], "--tie: win 0.45 + tie 0.6 is not below 1"),
        (["--position-bias", "-2"], "--position-bias: -2.0 is out of range; allowed: [-1, 1]"),
        (["--n-rho-eta", "none"], "--n-rho-eta: 'none' is not allowed"),
        (["--alpha", "0.6"], "--alpha: a binary campaign's; not with --ratings preference"),
        (["-o", "f.png"], "-o: draws the binary posterior's frontier"),
        (["--estimator", "nope"], "--estimator: 'nope' is not an estimator"),
    ],
)
def test_bad_flags_are_refused_in_one_line_naming_the_flag(extra, message, capsys):
    err = _refused([*GOOD, *extra], capsys)
    assert err.startswith(f"sweep: error: {message}"), err


def test_preference_flags_need_the_preference_ratings(capsys):
    err = _refused(["--alpha", "0.6", "--rho", "0.8", "--eta", "0.8", "--win", "0.4"], capsys)
    assert err == "sweep: error: --win: a preference campaign's; give --ratings preference"
    no_price = [a for a in GOOD if a not in ("--cost-judge", "0.01")]
    assert _refused(no_price, capsys).endswith("--cost-judge: required with --ratings preference")


def test_the_command_prints_every_plan_and_its_json(capsys):
    argv = [*GOOD, "--judges", "2", "--estimator", "ppi_pp", "--replicates", "0"]
    assert main(["plan", *argv]) == 0
    text = capsys.readouterr().out
    assert "preference plan per system for θ = 0.55" in text and "ppi_pp" in text
    assert "is a second judge worth its cost?" in text
    assert main(["plan", *argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ratings"] == "preference" and data["judge_prices"] == [0.01, 0.01]
    assert data["plans"][0]["estimator"] == "ppi_pp" and data["one_judge"] is not None
