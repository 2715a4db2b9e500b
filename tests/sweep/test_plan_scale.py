"""``sweep plan --ratings scale`` (and ``classes``): the off-by-one family and explicit
confusions read and refused, the shifted system of the power check, a K = 3 scale that is a
preference planned as the preference is, integer plans, the classical SEs against simulated
campaigns, the posterior's asymptotic SD against a Dirichlet's and NUTS, and the JSON."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import jax
import numpy as np
import pytest

from binmetric_sweep.kernels.categorical.families import (
    preference_confusion,
    preference_shares,
)
from binmetric_sweep.kernels.estimators import POSTERIOR, estimator_named, registered
from binmetric_sweep.kernels.nuts import NUTSSettings
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.plan.categorical import (
    KAPPA_TOLERANCE,
    draw_campaigns,
    eps_function,
    estimates_of,
    least_n_phi,
    nuts_check,
    plan_preference,
    plan_scale,
    search_sizes,
)
from binmetric_sweep.sweep.plan.categorical_sd import posterior_sd
from binmetric_sweep.sweep.plan.scale_spec import scale_spec
from binmetric_sweep.sweep.spec.lanes import lane_keys

jax.config.update("jax_enable_x64", True)

SHARES = (0.05, 0.1, 0.25, 0.35, 0.25)
BASE = dict(
    values="1,2,3,4,5",
    shares=",".join(map(str, SHARES)),
    off_by_one=0.3,
    off_by_more=0.05,
    cost_judge=0.01,
    eps=0.1,
)
SMALL_NUTS = NUTSSettings(chains=2, warmup=200, samples=300)
CLASSICAL = ("human_only", "rogan_gladen", "ppi", "ppi_pp")


def test_the_off_by_one_family_is_the_hand_worked_matrix():
    """a = 0.3 one class off, b = 0.05 two or more: an end class gives all of a to its one
    neighbour and b/3 to each of the three far classes; the middle class a/2 to each
    neighbour and b/2 to each end."""
    single = scale_spec(BASE).single_confusion()
    a, b, right = 0.3, 0.05, 0.65
    np.testing.assert_allclose(single[0], [right, a, b / 3, b / 3, b / 3], atol=1e-15)
    np.testing.assert_allclose(single[2], [b / 2, a / 2, right, a / 2, b / 2], atol=1e-15)
    np.testing.assert_allclose(single[1], [a / 2, right, a / 2, b / 2, b / 2], atol=1e-15)
    np.testing.assert_allclose(single.sum(1), 1.0, atol=1e-15)


def test_an_explicit_confusion_is_read_row_by_row_and_copied_into_every_lane():
    rows = "0.8,0.2,0;0.1,0.8,0.1;0,0.3,0.7"
    spec = scale_spec(
        dict(values="0,1,2", shares="0.2,0.3,0.5", confusion=rows, cost_judge=0.01, eps=0.2)
    )
    expected = np.array([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.0, 0.3, 0.7]])
    np.testing.assert_array_equal(spec.single_confusion(), expected)
    designs = spec.designs(np.array([10.0, 20.0]), np.array([5.0, 7.0]))
    np.testing.assert_array_equal(designs.confusion, np.stack([expected, expected]))
    np.testing.assert_array_equal(designs.shares, [[0.2, 0.3, 0.5]] * 2)
    assert spec.theta == pytest.approx(0.3 + 1.0)
    # Two judges copying 0.4: joint C[k, (l1, l2)] = C[k, l1]·(0.6·C[k, l2] + 0.4·[l2 = l1]).
    two = spec.model_copy(update={"judges": 2, "copy_rate": 0.4}).designs([1.0], [1.0])
    joint = np.einsum("ka,kb->kab", expected, 0.6 * expected) + 0.4 * np.einsum(
        "ka,ab->kab", expected, np.eye(3)
    )
    np.testing.assert_allclose(two.confusion[0], joint.reshape(3, 9), atol=1e-15)


def test_the_shifted_system_moves_items_from_the_lowest_value_to_the_highest():
    spec = scale_spec(BASE)
    up = spec.shifted(0.1)  # δ = 0.1/4 of the items from 1 to 5
    np.testing.assert_allclose(up.shares, [0.025, 0.1, 0.25, 0.35, 0.275], atol=1e-15)
    assert up.theta == pytest.approx(spec.theta + 0.1, abs=1e-12)
    # Past what the lowest class holds (0.05·4 = 0.2), θ − ε: items from 5 to 1.
    down = spec.shifted(0.5)
    np.testing.assert_allclose(down.shares, [0.175, 0.1, 0.25, 0.35, 0.125], atol=1e-15)
    assert down.theta == pytest.approx(spec.theta - 0.5, abs=1e-12)
    assert spec.shifted(1.0) is None  # 4·max(0.05, 0.25) = 1
    # Named classes in any order: the ends are the lowest and highest values.
    named = scale_spec(
        dict(ratings="classes", classes="fair,bad,good", values="1,0,2", shares="0.5,0.2,0.3",
             off_by_one=0.2, cost_judge=0.01, eps=0.1)
    )  # fmt: skip
    np.testing.assert_allclose(named.shifted(0.1).shares, [0.5, 0.15, 0.35], atol=1e-15)


def _preference_as_scale(pref: dict) -> dict:
    """The scale scenario (values 0, ½, 1) whose shares and judge's confusion are a
    preference scenario's, with the same prices and sizes."""
    shares = np.asarray(preference_shares(pref["win"], pref["tie"]))
    confusion = np.asarray(preference_confusion(pref["accuracy"], 1 / 3, pref["position_bias"]))
    rows = ";".join(",".join(repr(float(x)) for x in row) for row in confusion)
    shared = {k: v for k, v in pref.items() if k not in ("win", "tie", "accuracy", "position_bias")}
    return shared | dict(
        values="0,0.5,1", shares=",".join(repr(float(x)) for x in shares), confusion=rows
    )


@pytest.mark.parametrize(
    "extra",
    [dict(eps=0.03), dict(judges=2, copy_rate=0.3, cost_judge="0.01,0.02", budget=300)],
    ids=["target", "two judges, budget"],
)
def test_a_three_class_scale_that_is_a_preference_is_planned_as_the_preference(extra):
    pref = dict(win=0.45, tie=0.2, accuracy=0.7, position_bias=0.2, cost_judge=0.01) | extra
    estimators = [e for e in registered() if e.posterior or e.categorical is not None]
    a = plan_preference(pref, estimators, replicates=0, nuts=None)
    b = plan_scale(_preference_as_scale(pref), estimators, replicates=0, nuts=None)
    assert b.spec.layout == a.spec.layout and b.spec.theta == pytest.approx(a.spec.theta)
    for many, one in [(a, b), (a.one_judge, b.one_judge)] if a.one_judge else [(a, b)]:
        assert [p._asdict() for p in many.plans] == [p._asdict() for p in one.plans]
    assert len(a.plans) >= 5 and all(p.reason or p.n_phi + p.n_m > 0 for p in a.plans)
    # The power check's alternative is the preference's too: win + ε, ties kept.
    eps = 0.03
    np.testing.assert_allclose(
        b.spec.shifted(eps).designs([1.0], [1.0]).shares,
        a.spec.shifted(eps).designs([1.0], [1.0]).shares,
        atol=1e-15,
    )


@pytest.mark.parametrize("name", [*CLASSICAL, POSTERIOR.name])
def test_a_plan_meets_its_target_and_one_human_rating_fewer_does_not(name):
    spec = scale_spec(BASE)
    eps_of = eps_function(spec, estimator_named(name))
    sizes = search_sizes(spec, eps_of)
    assert sizes.found and sizes.reachable and sizes.n_phi > 0
    at, below = eps_of(np.array([sizes.n_phi, sizes.n_phi - 1.0]), np.full(2, float(sizes.n_m)))
    assert at <= spec.eps < below
    others = np.unique(np.round(np.geomspace(1, 3 * sizes.n_m + 1, 60)))
    cost = spec.cost(least_n_phi(eps_of, others, spec.eps), others)
    slack = spec.judge_price * max(1, 2e-3 * sizes.n_m) + spec.cost_human
    assert np.all(cost >= spec.cost(sizes.n_phi, sizes.n_m) - slack)


def test_the_asymptotic_posterior_sd_is_exact_where_the_posterior_is_a_dirichlet():
    """Confusion known, no judge-only items: θ = vᵀπ with π ~ Dir(h + 1), whose variance is
    Var_q(v)/(A + 1) (q = (h + 1)/A, A = N_Φ + K); the asymptotic SD gives Var_q(v)/A."""
    spec = scale_spec(BASE | {"n_rho_eta": "known"})
    n = np.array([0.0, 10.0, 1000.0])
    sd = posterior_sd(spec.layout, spec.designs(n, np.zeros(3)))
    a = n[:, None] * np.array(SHARES) + 1.0
    q, total = a / a.sum(1, keepdims=True), a.sum(1)
    v = np.arange(1.0, 6.0)
    exact = np.sqrt((q @ v**2 - (q @ v) ** 2) / (total + 1))
    np.testing.assert_allclose(sd, exact * np.sqrt((total + 1) / total), rtol=1e-12)


def _spread_and_se(name: str, campaigns: int) -> tuple[float, float]:
    spec = scale_spec(BASE)
    estimator = estimator_named(name)
    sizes = search_sizes(spec, eps_function(spec, estimator))
    r = campaigns
    designs = spec.designs(np.full(r, float(sizes.n_phi)), np.full(r, float(sizes.n_m)))
    keys = lane_keys(5, np.zeros((r, 2), np.uint32), np.arange(r))
    found = estimates_of(estimator, spec.layout, draw_campaigns(keys, designs))
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    return float(np.std(np.asarray(found.value))), sizes.eps / (math.sqrt(2) * z)


def test_the_planning_se_is_the_spread_of_the_estimates_at_the_plan():
    """Over 4,000 simulated 5-point campaigns at PPI++'s plan (N_Φ ≈ 900), the estimates' SD
    is its planning SE within 4 % (an SD's MC error is 1.1 %)."""
    spread, se = _spread_and_se("ppi_pp", 4000)
    assert spread == pytest.approx(se, rel=0.04)


@pytest.mark.yardstick
@pytest.mark.parametrize("name", CLASSICAL)
def test_every_planning_se_is_the_spread_of_the_estimates_at_its_plan(name):
    """As above, for every classical estimator, over 20,000 campaigns (MC error 0.5 %): 2 %."""
    spread, se = _spread_and_se(name, 20000)
    assert spread == pytest.approx(se, rel=0.02)


def test_a_classical_plan_holds_in_simulated_campaigns():
    plans = plan_scale(BASE, [estimator_named("ppi_pp")], replicates=400, seed=3)
    p = plans.plans[0]
    assert p.replicates == 400 and p.eps_tested == 0.1
    assert abs(p.power - 0.8) <= 3 * p.power_mcse
    assert p.type1_rate <= 0.05 + 3 * p.type1_mcse and p.holds(plans.spec)


@pytest.mark.yardstick
def test_the_asymptotic_posterior_sd_is_what_nuts_measures_on_a_five_point_scale():
    """On expected counts at one design (one judge, N_Φ = 400, N_M = 4000), NUTS's posterior SD
    (2 chains × (200 + 300)) is the asymptotic SD within three MCSEs and 3 %; the plan
    reports the check and re-solves only past the tolerance. Opt-in: a NUTS compile."""
    spec = scale_spec(BASE)
    check = nuts_check(spec, 400, 4000, SMALL_NUTS)
    approx = float(posterior_sd(spec.layout, spec.designs([400.0], [4000.0]))[0])
    assert check.rhat < 1.05 and check.divergences == 0
    assert abs(check.sd / approx - 1) <= 3 * check.mcse / approx + 0.03
    p = plan_scale(BASE, [POSTERIOR], nuts=SMALL_NUTS).plans[0]
    first = p.checks[0]
    agree = abs(first.ratio - 1) <= KAPPA_TOLERANCE + 2 * first.mcse / first.sd_asymptotic
    assert (p.kappa == 1.0) == agree and p.eps <= BASE["eps"]


def _refused(argv, capsys) -> str:
    assert main(["plan", *argv]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1
    return out.err.strip()


GOOD = ["--ratings", "scale", "--values", "1,2,3,4,5", "--shares", "0.05,0.1,0.25,0.35,0.25"]
GOOD += ["--cost-judge", "0.01", "--eps", "0.1"]
FAMILY = ["--off-by-one", "0.3"]
ROWS = "0.8,0.2,0,0,0;0.1,0.8,0.1,0,0;0,0.1,0.8,0.1,0;0,0,0.1,0.8,0.1;0,0,0,0.2,0.8"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--shares", "0.05,0.1,0.25,0.35,0.2", *FAMILY], "--shares: sums to 0.95, not 1"),
        (["--shares", "0.1,0.25,0.4,0.25", *FAMILY], "--shares: 4 shares; give 5, one per value"),
        (["--shares=-0.1,0.2,0.25,0.4,0.25", *FAMILY], "--shares: -0.1 is not a share"),
        (["--shares", "a,b", *FAMILY], "--shares: 'a,b' is not numbers"),
        (["--confusion", ROWS.replace("0.1,0.8,0.1,0;", "0.1,0.7,0.1,0;")],
         "--confusion: row 3 sums to 0.9, not 1"),
        (["--confusion", ROWS.rsplit(";", 1)[0]], "--confusion: 4 rows; give 5"),
        (["--confusion", ROWS.replace("0.1,0.8,0.1,0,0", "0.1,0.8,0.1,0")],
         "--confusion: row 2 has 4 shares; give 5, one per class"),
        (["--confusion", ROWS, *FAMILY], "--off-by-one, --confusion: give each judge's"),
        ([], "--off-by-one, --confusion: give each judge's confusion"),
        (["--off-by-one", "0.7", "--off-by-more", "0.4"],
         "--off-by-more: off_by_one 0.7 + off_by_more 0.4 is above 1"),
        (["--off-by-one", "1.5"], "--off-by-one: 1.5 is out of range; allowed: [0, 1]"),
        (["--values", "1,2,2,4,5", *FAMILY], "--values: 1, 2, 2, 4, 5 repeats a value"),
        (["--values", "5,4,3,2,1", *FAMILY], "--values: 5, 4, 3, 2, 1 are not increasing"),
        (["--judges", "3", *FAMILY], "--judges: 3 judges of 5 classes make 125 joint verdicts"),
        (["--eps", "1", *FAMILY], "--eps: 1 is more than θ can move here"),
        (["--classes", "a,b,c,d,e", *FAMILY], "--classes: a scale's classes are its values"),
        (["--win", "0.4", *FAMILY], "--win: not with --ratings scale"),
        (["--rho", "0.8", *FAMILY], "--rho: a binary campaign's; not with --ratings scale"),
        (["--judges", "2", "--cost-judge", "0.01,0.02,0.03", *FAMILY],
         "--cost-judge: 3 prices for 2 judges"),
    ],
)  # fmt: skip
def test_bad_flags_are_refused_in_one_line_naming_the_flag(extra, message, capsys):
    argv = [*GOOD, *extra]
    err = _refused(argv, capsys)
    assert err.startswith(f"sweep: error: {message}"), err


def test_missing_and_misplaced_scale_flags(capsys):
    no_shares = [a for a in GOOD if a not in ("--shares", "0.05,0.1,0.25,0.35,0.25")]
    assert _refused([*no_shares, *FAMILY], capsys).endswith(
        "--shares: required with --ratings scale"
    )
    err = _refused(["--alpha", "0.6", "--rho", "0.8", "--eta", "0.8", "--values", "1,2"], capsys)
    assert err == "sweep: error: --values: a scale campaign's; give --ratings scale (or classes)"
    classes = ["--ratings", "classes", *GOOD[2:], *FAMILY]
    assert "--classes: required with ratings classes" in _refused(classes, capsys)
    with pytest.raises(SweepError, match=r"^shares: sums to 0\.95, not 1$"):
        scale_spec(BASE | {"shares": "0.05,0.1,0.25,0.35,0.2"})


def test_the_command_prints_every_plan_and_its_json(capsys):
    argv = [*GOOD, *FAMILY, "--judges", "2", "--estimator", "ppi_pp", "--replicates", "0"]
    assert main(["plan", *argv]) == 0
    text = capsys.readouterr().out
    assert text.startswith(
        "scale plan per system for θ = 3.65 (values 1, 2, 3, 4, 5 with shares 0.05, 0.1, "
        "0.25, 0.35, 0.25); 2 judges (copy rate 0) off by one class with probability 0.3"
    )
    assert "is a second judge worth its cost?" in text and "ppi_pp" in text
    assert main(["plan", *argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ratings"] == "scale" and data["judge_prices"] == [0.01, 0.01]
    scenario = data["scenario"]
    assert scenario["values"] == [1, 2, 3, 4, 5] and scenario["shares"] == list(SHARES)
    assert (scenario["off_by_one"], scenario["off_by_more"], scenario["confusion"]) == (
        0.3,
        None,
        None,
    )
    assert scenario["theta"] == pytest.approx(3.65, abs=1e-12)
    plan = data["plans"][0]
    assert plan["estimator"] == "ppi_pp" and plan["eps"] <= 0.1 and plan["n_phi"] > 0
    assert plan["cost"] == pytest.approx(plan["n_phi"] + 0.02 * plan["n_m"])
    assert data["one_judge"]["scenario"]["judges"] == 1
    assert set(data["second_judge_pays"]) == {"ppi_pp"}


def test_named_classes_are_planned_by_their_values(capsys):
    argv = ["--ratings", "classes", "--classes", "fair,bad,good", "--values", "1,0,2"]
    argv += ["--shares", "0.5,0.2,0.3", "--confusion", "0.8,0.1,0.1;0.2,0.8,0;0.1,0,0.9"]
    argv += ["--cost-judge", "0.01", "--eps", "0.1", "--estimator", "ppi", "--replicates", "0"]
    assert main(["plan", *argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ratings"] == "classes" and data["scenario"]["classes"] == ["fair", "bad", "good"]
    assert data["scenario"]["theta"] == pytest.approx(0.5 + 0.6)
    assert data["plans"][0]["eps"] <= 0.1
