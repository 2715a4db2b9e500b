"""``sweep plan --estimator``: each classical estimator's closed-form SE, plan and check."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import jax
import numpy as np
import pytest

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.estimators import registered
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.plan.classical import classical_plan, classical_sd
from binmetric_sweep.sweep.plan.spec import PlanSpec

SPEC = PlanSpec(alpha=0.6, rho=0.8, eta=0.8, eps=0.02, cost_metric=0.002)


def campaigns(spec: PlanSpec, n_phi: int, n_m: int, replicates: int, seed: int) -> Counts:
    """Campaigns of a shared paired set drawn from the model: every human-rated item also
    has the metric's label."""
    rng = np.random.default_rng(seed)
    a, r, e = spec.alpha, spec.rho, spec.eta
    pos = rng.binomial(n_phi, a, replicates).astype(float)
    tp = rng.binomial(pos.astype(int), r).astype(float)
    tn = rng.binomial((n_phi - pos).astype(int), e).astype(float)
    m_pos = rng.binomial(n_m, a * r + (1 - a) * (1 - e), replicates).astype(float)
    full = lambda v: np.full(replicates, float(v))  # noqa: E731
    return Counts(
        n_pos=pos, n_phi=full(n_phi), n_tp=tp, n_pos_paired=pos, n_tn=tn,
        n_neg_paired=n_phi - pos, m_pos=m_pos, n_m=full(n_m), rho=full(r), eta=full(e),
        rho_eta_known=np.zeros(replicates, bool),
    )  # fmt: skip


@pytest.mark.parametrize(
    "estimator", [e for e in registered() if not e.posterior], ids=lambda e: e.name
)
def test_the_closed_form_se_is_the_spread_of_the_estimates(estimator):
    """Each estimator's SD over 20,000 simulated campaigns is its closed-form SE (to the
    Monte Carlo error of an SD, 0.5 %, and the first-order approximation's)."""
    jax.config.update("jax_enable_x64", True)
    n_phi, n_m = 2000, 20000
    found = estimator.estimate(campaigns(SPEC, n_phi, n_m, 20000, seed=7), 0.95)
    spread = float(np.std(np.asarray(found.value)))
    assert spread == pytest.approx(float(classical_sd(estimator.name, SPEC, n_phi, n_m)), rel=0.02)


def test_ppi_pp_plans_match_ppi_py_power_analysis():
    """PPI++'s cheapest (n, N) for an effective sample size is ppi_py's (its power analysis:
    a gold label costs a human rating, a prediction a metric rating)."""
    from ppi_py import ppi_power

    a, r, e = SPEC.alpha, SPEC.rho, SPEC.eta
    p = a * r + (1 - a) * (1 - e)
    corr = (a * r - a * p) / math.sqrt(a * (1 - a) * p * (1 - p))
    z = NormalDist().inv_cdf(1 - SPEC.gamma / 2) + NormalDist().inv_cdf(SPEC.power)
    ours = classical_plan("ppi_pp", SPEC)
    effective = a * (1 - a) / (SPEC.eps / (math.sqrt(2) * z)) ** 2
    theirs = ppi_power(corr, 0.0, SPEC.cost_human - SPEC.cost_metric, SPEC.cost_metric,
                       effective_n=effective)  # fmt: skip
    # The optimum is flat in N: the two roundings of it cost the same to 0.05 %.
    assert ours.n_phi == pytest.approx(theirs["n"], rel=0.005)
    assert ours.n_m == pytest.approx(theirs["N"], rel=0.02)
    assert ours.cost == pytest.approx(theirs["cost"], rel=5e-4)
    # Our SE at ppi_py's sizes is the one its effective sample size says.
    se = classical_sd("ppi_pp", SPEC, theirs["n"], theirs["N"])
    assert float(se) == pytest.approx(math.sqrt(a * (1 - a) / theirs["effective_n"]), rel=1e-3)


def test_plans_are_the_cheapest_integers_meeting_the_target():
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    for name in ("human_only", "rogan_gladen", "ppi", "ppi_pp"):
        plan = classical_plan(name, SPEC)

        def eps(x, y, name=name):
            return math.sqrt(2) * z * float(classical_sd(name, SPEC, x, y))

        assert plan.reachable and eps(plan.n_phi, plan.n_m) <= SPEC.eps
        if name != "human_only":
            assert eps(plan.n_phi - 1, plan.n_m) > SPEC.eps  # one human rating fewer misses
        cheaper = [
            (x, y) for x in range(int(plan.n_phi * 0.9), plan.n_phi, 7)
            for y in np.geomspace(max(plan.n_m, 1) * 0.5, max(plan.n_m, 1) * 2, 40)
            if SPEC.cost(x, y) < plan.cost * (1 - 2e-3)
        ]  # fmt: skip
        assert all(eps(x, y) > SPEC.eps for x, y in cheaper)
    known = PlanSpec(alpha=0.6, rho=0.8, eta=0.8, eps=0.02, cost_metric=0.002, n_rho_eta="known")
    assert classical_plan("ppi", known).reason == "no paired set (rho, eta known)"


def test_every_estimator_in_one_table(capsys):
    argv = ["plan", "--alpha", "0.6", "--rho", "0.8", "--eta", "0.8", "--eps", "0.02",
            "--cost-metric", "0.002", "--estimator", "all", "--replicates", "200"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in ("bayes", "human_only", "ppi_pp"))
    assert "cheapest among those whose simulated power and type-I rate hold:" in text
    assert main([*argv, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    judge = next(r for r in rows if r["estimator"] == "judge_only")
    assert judge["power"] < 0.6 and not judge["holds"]  # its bias eats the power it promises
    assert sum(r["best"] for r in rows) == 1
    assert main(["plan", "--alpha", "0.6", "--rho", "0.8", "--eta", "0.8", "--eps", "0.02",
                 "--cost-metric", "0.002", "--estimator", "mle"]) == 2  # fmt: skip
    assert "--estimator: 'mle' is not an estimator; allowed: bayes" in capsys.readouterr().err
