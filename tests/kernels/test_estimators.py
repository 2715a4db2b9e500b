"""The classical estimators against their reference implementations, and where each applies.

References: ``ppi_py`` (PPI, PPI++, the classical mean) on the counts expanded
to label arrays; Lee et al.'s interval for Rogan–Gladen written out from its
published formula (MODEL.md) and their README's example; SciPy's Wilson
interval. Tolerance 1e-9 throughout.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import binomtest, norm

from binmetric_sweep.kernels import estimators as E
from binmetric_sweep.kernels.counts import Counts, Design, draw_counts, replicate_key
from tests.kernels.helpers import counts

TOL = 1e-9


def counts_of(rows) -> Counts:
    """Lanes' counts from dicts of n_pos, n_phi, n_tp, P, n_tn, neg, m_pos, n_m (known, ρ, η)."""
    names = {"P": "n_pos_paired", "neg": "n_neg_paired", "known": "rho_eta_known"}
    defaults = {"rho": 0.8, "eta": 0.7, "known": False}
    keys = ("n_pos", "n_phi", "n_tp", "P", "n_tn", "neg", "m_pos", "n_m", "rho", "eta", "known")
    return counts(**{names.get(k, k): [r.get(k, defaults.get(k, 0)) for r in rows] for k in keys})


def random_rows(seed: int, n: int) -> list[dict]:
    """Paired counts of every size from 2 up, with the edge cases among them (all f = 1, …)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        big = i % 3 == 0
        pos = int(rng.integers(0, 2000 if big else 12))
        neg = int(rng.integers(0 if pos >= 2 else 2 - pos, 2000 if big else 12))
        n_m = int(rng.integers(1, 100_000 if big else 40))
        edge = i % 7
        n_tp = pos if edge == 1 else 0 if edge == 2 else int(rng.integers(0, pos + 1))
        n_tn = neg if edge == 1 else 0 if edge == 3 else int(rng.integers(0, neg + 1))
        m_pos = n_m if edge == 4 else 0 if edge == 5 else int(rng.integers(0, n_m + 1))
        rows.append(
            dict(
                n_pos=pos,
                n_phi=pos + neg,
                n_tp=n_tp,
                P=pos,
                n_tn=n_tn,
                neg=neg,
                m_pos=m_pos,
                n_m=n_m,
            )
        )
    return rows


def labels(row: dict):
    """(Y, f) on the paired items and f on the metric-only ones, as ``ppi_py`` takes them."""
    y = np.r_[np.ones(row["P"]), np.zeros(row["neg"])]
    f = np.r_[
        np.ones(row["n_tp"]),
        np.zeros(row["P"] - row["n_tp"]),
        np.zeros(row["n_tn"]),
        np.ones(row["neg"] - row["n_tn"]),
    ]
    m_pos, n_m = row.get("m_pos", 0), row.get("n_m", 0)
    unlabeled = np.r_[np.ones(m_pos), np.zeros(n_m - m_pos)]
    return y, f, unlabeled


def one(estimate: E.Estimate, i: int) -> tuple[float, float, float, float]:
    return tuple(float(np.asarray(x)[i]) for x in estimate[:4])


def close(a, b) -> bool:
    return all(math.isclose(x, y, rel_tol=0, abs_tol=TOL) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_ppi_and_ppi_pp_are_ppi_py_s(level):
    """Estimate and interval as ppi_py's (λ = 1, and λ tuned), on 210 random label sets."""
    rows = random_rows(0, 210)
    counts = counts_of(rows)
    ours = {lam: fn(counts, level) for lam, fn in ((1.0, E.ppi), (None, E.ppi_pp))}
    compared = 0
    for i, row in enumerate(rows):
        y, f, unlabeled = labels(row)
        constant = np.ptp(np.r_[f, unlabeled]) == 0
        for lam, ours_lam in ours.items():
            # Where f takes one value every λ gives the same numbers (ppi_py's λ̂ is NaN there).
            given = 1.0 if (lam is None and constant) else lam
            value = float(np.ravel(ppi_mean_pointestimate(y, f, unlabeled, lam=given))[0])
            low, high = (
                float(np.ravel(x)[0])
                for x in ppi_mean_ci(y, f, unlabeled, alpha=1 - level, lam=given)
            )
            mine = one(ours_lam, i)
            assert close(mine, (value, (high - low) / (2 * norm.ppf(0.5 + level / 2)), low, high))
            compared += 1
    assert compared == 420


def test_ppi_without_metric_only_ratings_is_the_classical_mean_of_the_paired_set():
    rows = [
        dict(n_pos=p, n_phi=p + q, n_tp=t, P=p, n_tn=u, neg=q, n_m=0)
        for p, q, t, u in [(3, 5, 2, 4), (40, 2, 40, 0), (0, 9, 0, 3), (1, 1, 1, 1)]
    ]
    counts = counts_of(rows)
    for fn in (E.ppi, E.ppi_pp):
        est = fn(counts, 0.95)
        assert np.all(est.applicable)
        for i, row in enumerate(rows):
            y, _, _ = labels(row)
            low, high = classical_mean_ci(y, alpha=0.05)
            assert close(one(est, i), (y.mean(), y.std() / math.sqrt(len(y)), low, high))


def lee_interval(p, q0, q1, n, m0, m1, alpha=0.05):
    """Lee et al.'s smoothed plug-in interval as MODEL.md writes it (``confidence_interval``)."""
    z = norm.ppf(1 - alpha / 2)
    p_s = (n * p + z**2 / 2) / (n + z**2)
    q0_s, q1_s = (m0 * q0 + 1) / (m0 + 2), (m1 * q1 + 1) / (m1 + 2)
    n_s, m0_s, m1_s = n + z**2, m0 + 2, m1 + 2
    if q0_s + q1_s <= 1:
        return 0.0, 1.0
    theta = (p_s + q0_s - 1) / (q0_s + q1_s - 1)
    shift = 2 * z**2 * (-(1 - theta) * q0_s * (1 - q0_s) / m0_s + theta * q1_s * (1 - q1_s) / m1_s)
    var = (
        p_s * (1 - p_s) / n_s
        + (1 - theta) ** 2 * q0_s * (1 - q0_s) / m0_s
        + theta**2 * q1_s * (1 - q1_s) / m1_s
    )
    se = math.sqrt(var) / (q0_s + q1_s - 1)
    clip = lambda x: min(1.0, max(0.0, x))  # noqa: E731
    return clip(theta + shift - z * se), clip(theta + shift + z * se)


def test_rogan_gladen_reproduces_lee_et_al_s_example():
    """p = 0.4 of 1000, η = 0.7 and ρ = 0.9 from 200 paired items each → 0.1667 [0.0564, 0.2627]."""
    row = dict(n_tp=180, P=200, n_tn=140, neg=200, m_pos=400, n_m=1000)
    est = E.rogan_gladen(counts_of([row]), 0.95)
    value, _, low, high = one(est, 0)
    assert round(value, 4) == 0.1667 and (round(low, 4), round(high, 4)) == (0.0564, 0.2627)


def test_rogan_gladen_is_lee_et_al_s_function_on_random_counts():
    rows = [r for r in random_rows(1, 400) if r["P"] > 0 and r["neg"] > 0]
    est = E.rogan_gladen(counts_of(rows), 0.95)
    checked = 0
    for i, r in enumerate(rows):
        p, rho, eta = r["m_pos"] / r["n_m"], r["n_tp"] / r["P"], r["n_tn"] / r["neg"]
        if rho + eta <= 1:
            assert est.reason[i] == E.CHANCE_JUDGE and np.isnan(est.value[i])
            continue
        value = min(1.0, max(0.0, (p + eta - 1) / (rho + eta - 1)))
        se = math.sqrt(
            p * (1 - p) / r["n_m"]
            + (1 - value) ** 2 * eta * (1 - eta) / r["neg"]
            + value**2 * rho * (1 - rho) / r["P"]
        ) / (rho + eta - 1)
        low, high = lee_interval(p, eta, rho, r["n_m"], r["neg"], r["P"])
        assert close(one(est, i), (value, se, low, high)), r
        checked += 1
    assert checked > 100


def test_rogan_gladen_with_known_rates_drops_their_terms():
    """ρ, η known: no smoothing of them, no shift, only the judge's rate varies."""
    est = E.rogan_gladen(counts_of([dict(m_pos=300, n_m=800, known=True, rho=0.9, eta=0.75)]), 0.95)
    z, p = norm.ppf(0.975), 300 / 800
    p_s = (300 + z**2 / 2) / (800 + z**2)
    theta = (p_s + 0.75 - 1) / 0.65
    half = z * math.sqrt(p_s * (1 - p_s) / (800 + z**2)) / 0.65
    expected = ((p - 0.25) / 0.65, math.sqrt(p * (1 - p) / 800) / 0.65, theta - half, theta + half)
    assert close(one(est, 0), expected)


def test_rogan_gladen_interval_is_0_to_1_where_the_smoothed_judge_is_at_chance():
    """ρ̂ = 1/1 and η̂ = 1/5 (ρ̂ + η̂ = 1.2) smooth to ρ̃ = 2/3 and η̃ = 2/7 (sum 0.95):
    the estimate applies, its interval is [0, 1]. With ρ̂ = 30/30, η̂ = 10/30 (ρ̃ + η̃ = 1.31)
    the interval is an ordinary one."""
    rows = [
        dict(n_tp=1, P=1, n_tn=1, neg=5, m_pos=5, n_m=10),
        dict(n_tp=30, P=30, n_tn=10, neg=30, m_pos=500, n_m=1000),
    ]
    est = E.rogan_gladen(counts_of(rows), 0.95)
    assert list(np.asarray(est.reason)) == [0, 0]
    assert (float(est.ci_low[0]), float(est.ci_high[0])) == (0.0, 1.0)
    assert 0.0 <= float(est.ci_low[1]) < float(est.ci_high[1]) <= 1.0
    assert (float(est.ci_low[1]), float(est.ci_high[1])) != (0.0, 1.0)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 7), (3, 7), (7, 7), (50, 100), (999, 1000)])
@pytest.mark.parametrize("level", [0.95, 0.8])
def test_human_only_and_judge_only_use_scipy_s_wilson_interval(k, n, level):
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    expected = (k / n, math.sqrt(k / n * (1 - k / n) / n), ci.low, ci.high)
    human = E.human_only(counts_of([dict(n_pos=k, n_phi=n)]), level)
    judge = E.judge_only(counts_of([dict(m_pos=k, n_m=n)]), level)
    assert close(one(human, 0), expected) and close(one(judge, 0), expected)


def test_judge_only_bias_is_its_analytic_value():
    """Mean of m₊/N_M over 20,000 campaigns = αρ + (1 − α)(1 − η), within 4 Monte Carlo SEs."""
    alpha, rho, eta, n_m, reps = 0.3, 0.8, 0.65, 200, 20_000
    design = Design(
        alpha=alpha,
        rho=rho,
        eta=eta,
        n_phi=10.0,
        n_rho_eta=10.0,
        psi=alpha,
        n_m=float(n_m),
        shared_paired=True,
        rho_eta_known=False,
    )
    keys = jax.vmap(lambda r: replicate_key(jax.random.key(7), np.zeros(2, np.uint32), r))(
        np.arange(reps, dtype=np.uint32)
    )
    counts = jax.vmap(draw_counts, in_axes=(0, None))(keys, design)
    est = np.asarray(E.judge_only(counts, 0.95).value)
    bias = est.mean() - alpha
    expected = alpha * (rho + eta - 1) + (1 - eta) - alpha
    assert abs(bias - expected) < 4 * est.std() / math.sqrt(reps)
    assert abs(expected) > 20 * est.std() / math.sqrt(reps)  # a bias the test can see


NOT_APPLICABLE = [
    ("human_only", dict(n_phi=0, n_m=10, m_pos=3), E.NO_HUMAN),
    ("judge_only", dict(n_pos=3, n_phi=5, n_m=0), E.NO_METRIC),
    ("rogan_gladen", dict(n_tp=3, P=4, n_tn=3, neg=4, n_m=0), E.NO_METRIC),
    ("rogan_gladen", dict(n_tp=0, P=0, n_tn=3, neg=4, m_pos=2, n_m=9), E.NO_PAIRED_ADEQUATE),
    ("rogan_gladen", dict(n_tp=3, P=4, n_tn=0, neg=0, m_pos=2, n_m=9), E.NO_PAIRED_INADEQUATE),
    ("rogan_gladen", dict(n_tp=2, P=4, n_tn=2, neg=4, m_pos=2, n_m=9), E.CHANCE_JUDGE),
    ("rogan_gladen", dict(n_tp=1, P=4, n_tn=1, neg=4, m_pos=2, n_m=9), E.CHANCE_JUDGE),
    ("rogan_gladen", dict(m_pos=2, n_m=9, known=True, rho=0.5, eta=0.4), E.CHANCE_JUDGE),
    ("ppi", dict(m_pos=2, n_m=9, known=True), E.NO_PAIRED_SET),
    ("ppi_pp", dict(m_pos=2, n_m=9, known=True), E.NO_PAIRED_SET),
    ("ppi", dict(n_tp=1, P=1, m_pos=2, n_m=9), E.FEW_PAIRED),
    ("ppi_pp", dict(n_tn=1, neg=1, m_pos=2, n_m=9), E.FEW_PAIRED),
    ("ppi", dict(m_pos=2, n_m=9), E.FEW_PAIRED),
]


@pytest.mark.parametrize(("name", "row", "reason"), NOT_APPLICABLE)
def test_every_case_where_an_estimator_does_not_apply_says_why(name, row, reason):
    fn = {e.name: e.estimate for e in (e for e in E.registered() if not e.posterior)}[name]
    est = fn(counts_of([row]), 0.95)
    assert int(est.reason[0]) == reason and E.REASONS[reason]
    assert not bool(est.applicable[0])
    assert all(np.isnan(float(np.asarray(x)[0])) for x in est[:4])


def test_rogan_gladen_with_known_rates_needs_no_paired_items():
    est = E.rogan_gladen(counts_of([dict(m_pos=2, n_m=9, known=True, rho=0.9, eta=0.8)]), 0.95)
    assert bool(est.applicable[0])


def test_estimators_jit_and_vmap_alike():
    """A jitted call gives the eager numbers (the sweep jits them over calls of lanes)."""
    counts = counts_of(random_rows(2, 64))
    for e in (e for e in E.registered() if not e.posterior):
        eager = e.estimate(counts, 0.95)
        jitted = jax.jit(lambda c, fn=e.estimate: fn(c, 0.95))(counts)
        for a, b in zip(eager, jitted, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-15)
