"""Prediction-powered ranking (kernels/arena/ppr.py): a small arena worked by hand, the
released code's output on one split of the shipped battles (tests/data/ppr_reference.json,
made by scripts/ppr_reference.py), pandas' arithmetic for the human verdicts alone, and
SciPy's χ² quantile."""

from __future__ import annotations

import hashlib
import json
import math
import pathlib

import numpy as np
import pandas as pd
import pytest
import scipy.optimize
import scipy.stats

from binmetric_sweep.kernels.arena.cells import A_BETTER, B_BETTER, NONE, TIE, count_cells
from binmetric_sweep.kernels.arena.ppr import (
    chi2_quantile,
    power_tuned_lambda,
    ppr_win_rates,
    rank_sets,
    released_covariance,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = json.loads((ROOT / "tests/data/ppr_reference.json").read_text())
JUDGES = ("gpt-4-0125-preview", "gpt-3.5-turbo")
CLASSES = {"model_b": B_BETTER, "tie": TIE, "tie (bothbad)": TIE, "model_a": A_BETTER}

A, T, B = A_BETTER, TIE, B_BETTER
#: Three systems, six battles with a human verdict (and the judge's) and six judged only;
#: every system plays 4 battles in each set. Columns: a, b, human, judge.
HAND = [
    (0, 1, A, A),  # t1
    (1, 0, A, A),  # t2
    (0, 2, A, T),  # t3
    (2, 0, T, A),  # t4
    (1, 2, B, B),  # t5
    (2, 1, A, A),  # t6
    (0, 1, NONE, A),  # u1
    (0, 1, NONE, B),  # u2
    (0, 2, NONE, A),  # u3
    (1, 2, NONE, T),  # u4
    (2, 1, NONE, A),  # u5
    (2, 0, NONE, B),  # u6
]


def hand_cells():
    a, b, human, judge = (np.array(column) for column in zip(*HAND, strict=True))
    return count_cells(a, b, human, judge[:, None])


def test_human_only_by_hand():
    # Human wins (ties 0) over each system's 4 battles t1..t6:
    #   0: t1 win, t2 loss, t3 win, t4 tie → 2/4;  1: t2 only → 1/4;  2: t5, t6 → 2/4.
    # Residuals w − r per battle (its two systems): t1 (0: .5, 1: −.25), t2 (1: .75, 0: −.5),
    # t3 (0: .5, 2: −.5), t4 (2: −.5, 0: −.5), t5 (1: −.25, 2: .5), t6 (2: .5, 1: −.25).
    # Σ_t e eᵀ: 00 = 4·.25 = 1, 11 = .0625·3 + .5625 = .75, 22 = 1,
    #   01 = −.125 − .375 = −.5, 02 = −.25 + .25 = 0, 12 = −.125 − .125 = −.25;
    # Σ̂ divides by c_i c_j = 16; the released code by n² = 36.
    est = ppr_win_rates(hand_cells(), 3)
    np.testing.assert_allclose(est.theta, [0.5, 0.25, 0.5], atol=1e-15)
    products = np.array([[1.0, -0.5, 0.0], [-0.5, 0.75, -0.25], [0.0, -0.25, 1.0]])
    np.testing.assert_allclose(est.cov, products / 16, atol=1e-15)
    np.testing.assert_allclose(released_covariance(hand_cells(), 3), products / 36, atol=1e-15)
    assert (est.lam, est.human, est.judge_only) == (0.0, 6, 6)


def test_ppi_by_hand():
    # Judge's wins on t1..t6: 0: t1 → 1/4; 1: t2 → 1/4; 2: t4, t5, t6 → 3/4.
    # Judge on u1..u6: 0: u1, u3, u6 → 3/4; 1: u2 → 1/4; 2: u5 → 1/4.
    # λ = ½: θ̂ = ½·r_N − (½·r_n^judge − r_n^human)
    #   0: .375 − (.125 − .5) = .75;  1: .125 − (.125 − .25) = .25;  2: .125 − (.375 − .5) = .25.
    # N part: residuals u1 (0: .25, 1: −.25), u2 (0: −.75, 1: .75), u3 (0: .25, 2: −.25),
    #   u4 (1: −.25, 2: −.25), u5 (2: .75, 1: −.25), u6 (2: −.25, 0: .25):
    #   Σ e eᵀ = [[.75, −.625, −.125], [−.625, .75, −.125], [−.125, −.125, .75]], × λ²/16.
    # n part: residuals of ½·judge − human about (−.375, −.125, −.125): t1 (0: −.125, 1: .125),
    #   t2 (1: −.375, 0: .375), t3 (0: −.625, 2: .125), t4 (2: .625, 0: .375),
    #   t5 (1: .125, 2: −.375), t6 (2: −.375, 1: .125):
    #   Σ g gᵀ = [[.6875, −.15625, .15625], [−.15625, .1875, −.09375],
    #             [.15625, −.09375, .6875]], /16.
    est = ppr_win_rates(hand_cells(), 3, judge=0, lam=0.5)
    np.testing.assert_allclose(est.theta, [0.75, 0.25, 0.25], atol=1e-15)
    big = np.array([[0.75, -0.625, -0.125], [-0.625, 0.75, -0.125], [-0.125, -0.125, 0.75]])
    small = np.array(
        [[0.6875, -0.15625, 0.15625], [-0.15625, 0.1875, -0.09375], [0.15625, -0.09375, 0.6875]]
    )
    np.testing.assert_allclose(est.cov, 0.25 * big / 16 + small / 16, atol=1e-15)
    np.testing.assert_allclose(
        released_covariance(hand_cells(), 3, 0, 0.5), 0.25 * big / 36 + small / 36, atol=1e-15
    )
    # λ̂: tr of the N part's products 2.25, of the judge's on t1..t6 2.25 (residuals about
    # (.25, .25, .75): each system one ±.75 and three ±.25), and the judge × human diagonal
    # .5 + .75 + .5 = 1.75, all over 16: λ̂ = 1.75 / (2.25 + 2.25) = 7/18.
    assert power_tuned_lambda(hand_cells(), 3, 0) == pytest.approx(7 / 18, abs=1e-15)
    assert ppr_win_rates(hand_cells(), 3, judge=0).lam == pytest.approx(7 / 18, abs=1e-15)


def test_rank_sets_by_hand():
    # χ²_3 at .9 is 6.2514 (q/2 = 3.1257). Pair (0, 1): |.8 − .5|/√2 = .2121 against
    # √(.002·3.1257) = .0791: apart; (0, 2) likewise; (1, 2): .05/√2 = .0354 < .0791: not.
    theta = np.array([0.8, 0.5, 0.45])
    lower, upper = rank_sets(theta, np.eye(3) * 1e-3, 0.9)
    assert lower.tolist() == [1, 2, 2] and upper.tolist() == [1, 3, 3]
    # Σ_12 = .00095 leaves var(θ̂_1 − θ̂_2) = .0001: √(.0001·3.1257) = .0177 < .0354, apart.
    cov = np.eye(3) * 1e-3
    cov[1, 2] = cov[2, 1] = 0.95e-3
    lower, upper = rank_sets(theta, cov, 0.9)
    assert lower.tolist() == [1, 2, 3] and upper.tolist() == [1, 2, 3]


@pytest.mark.parametrize("df", [1, 2, 3, 12, 20, 101])
@pytest.mark.parametrize("p", [0.5, 0.9, 0.95, 0.999])
def test_chi2_quantile_is_scipys(df, p):
    assert chi2_quantile(p, df) == pytest.approx(scipy.stats.chi2.ppf(p, df), rel=1e-11)


def test_bad_input_is_named():
    cells = hand_cells()
    with pytest.raises(ValueError, match="judge: 1"):
        ppr_win_rates(cells, 3, judge=1)
    with pytest.raises(ValueError, match=r"systems \[3\]"):
        ppr_win_rates(cells, 4)
    with pytest.raises(ValueError, match="lam"):
        ppr_win_rates(cells, 3, judge=0, lam=1.5)
    with pytest.raises(ValueError, match="level"):
        rank_sets(np.zeros(3), np.eye(3), 1.0)


def shipped_battles() -> pathlib.Path:
    for path in (
        ROOT / "examples/arena_battles.csv",
        ROOT.parent / "shared/reference/arena_battles.csv",
    ):
        if path.exists():
            return path
    pytest.skip("no arena_battles.csv in examples/ or ../shared/reference/")


@pytest.fixture(scope="module")
def split():
    """The reference's split of the shipped battles: (frame, kept mask, cells, S)."""
    path = shipped_battles()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == REFERENCE["battles_sha256"]
    frame = pd.read_csv(path, keep_default_na=False)
    index = {name: i for i, name in enumerate(REFERENCE["systems"])}
    kept = frame["battle"].isin(REFERENCE["kept_battles"]).to_numpy()
    human = np.where(kept, frame["human"].map(CLASSES), NONE)
    judged = np.column_stack([frame[judge].map(CLASSES) for judge in JUDGES])
    cells = count_cells(frame["model_a"].map(index), frame["model_b"].map(index), human, judged)
    return frame, kept, cells, len(index)


def test_human_only_is_the_released_codes_and_pandas(split):
    frame, kept, cells, s = split
    reference = REFERENCE["human_only"]
    est = ppr_win_rates(cells, s)
    np.testing.assert_allclose(est.theta, reference["theta"], rtol=0, atol=1e-9)
    # atol: pairs that never met, where the released code leaves rounding (1e-23).
    np.testing.assert_allclose(
        released_covariance(cells, s), reference["cov"], rtol=1e-9, atol=1e-15
    )
    # pandas: each system's share of its kept battles that it won (ties 0).
    shown = frame[kept]
    long = pd.concat(
        [
            pd.DataFrame({"system": shown["model_a"], "won": shown["human"] == "model_a"}),
            pd.DataFrame({"system": shown["model_b"], "won": shown["human"] == "model_b"}),
        ]
    )
    by_system = long.groupby("system")["won"].mean().reindex(REFERENCE["systems"])
    np.testing.assert_allclose(est.theta, by_system.to_numpy(), rtol=0, atol=1e-12)
    # The variance of a share of i's c_i battles: Σ_t (w − r_i)² / c_i² (its own battles'),
    # which the released code divides by n² instead: a ratio (c_i/n)², 1/P(i plays)².
    played = long.groupby("system")["won"].size().reindex(REFERENCE["systems"]).to_numpy()
    spread = long.groupby("system")["won"].apply(lambda w: ((w - w.mean()) ** 2).sum())
    spread = spread.reindex(REFERENCE["systems"]).to_numpy()
    np.testing.assert_allclose(np.diag(est.cov), spread / played**2, rtol=1e-12)
    np.testing.assert_allclose(np.diag(reference["cov"]), spread / kept.sum() ** 2, rtol=1e-9)


@pytest.mark.parametrize("judge", [0, 1])
def test_ppi_is_the_released_codes(split, judge):
    _, _, cells, s = split
    reference = REFERENCE["judges"][JUDGES[judge]]
    est = ppr_win_rates(cells, s, judge=judge, lam=reference["lam"])
    np.testing.assert_allclose(est.theta, reference["theta"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        released_covariance(cells, s, judge, reference["lam"]),
        reference["cov"],
        rtol=1e-9,
        atol=1e-15,
    )


@pytest.mark.parametrize("case", ["human_only", *JUDGES])
def test_rank_sets_are_the_released_codes_on_its_covariance(case):
    reference = REFERENCE["human_only"] if case == "human_only" else REFERENCE["judges"][case]
    lower, upper = rank_sets(reference["theta"], reference["cov"], 1.0 - REFERENCE["alpha"])
    assert np.column_stack([lower, upper]).tolist() == reference["rank_sets"]


def test_the_correct_covariance_widens_the_rank_sets(split):
    # Our rank sets differ from the released code's only through Σ̂: same rule, same θ̂.
    # Each variance is the released one × (n/c_i)² = 1/P̂(i plays)² > 1, so here every
    # system's set holds the released one, and the sets are wider in total.
    _, _, cells, s = split
    reference = REFERENCE["human_only"]
    est = ppr_win_rates(cells, s)
    ratio = np.diag(est.cov) / np.diag(reference["cov"])
    n = REFERENCE["human"]
    assert np.all(ratio > 1.0) and np.all(ratio <= n**2)
    lower, upper = rank_sets(est.theta, est.cov, 1.0 - REFERENCE["alpha"])
    released = np.array(reference["rank_sets"])
    assert np.all(lower <= released[:, 0]) and np.all(upper >= released[:, 1])
    assert (upper - lower).sum() > (released[:, 1] - released[:, 0]).sum()


@pytest.mark.parametrize("judge", [0, 1])
def test_power_tuned_lambda_minimises_the_trace(split, judge):
    _, _, cells, s = split
    best = scipy.optimize.minimize_scalar(
        lambda lam: np.trace(ppr_win_rates(cells, s, judge, lam).cov),
        bounds=(0.0, 1.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert power_tuned_lambda(cells, s, judge) == pytest.approx(best.x, abs=1e-6)


def test_cells_and_battles_agree():
    # Repeating every hand battle twice doubles each count: θ̂ is unchanged, Σ̂ halves.
    a, b, human, judge = (np.array(column) for column in zip(*HAND, strict=True))
    twice = count_cells(np.tile(a, 2), np.tile(b, 2), np.tile(human, 2), np.tile(judge, 2)[:, None])
    once, doubled = ppr_win_rates(hand_cells(), 3, 0, 0.5), ppr_win_rates(twice, 3, 0, 0.5)
    np.testing.assert_allclose(doubled.theta, once.theta, atol=1e-15)
    np.testing.assert_allclose(doubled.cov, once.cov / 2, atol=1e-15)
    assert math.isclose(doubled.lam, once.lam)
