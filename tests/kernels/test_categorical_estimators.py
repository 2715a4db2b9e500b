"""The classical estimators on K-class counts against the binary ones, ``ppi_py``, NumPy and
simulated campaigns, and where each does not apply.

References: the binary estimators (K = 2, one judge: the same bits); ``ppi_py``'s PPI and
PPI++ on the v-scores of the counts expanded to item arrays (1e-9); multi-judge PPI++ and
the confusion-matrix inversion's delta method written out here in NumPy; a K = 3 inversion
worked by hand; the SD of the inversion over 20,000 simulated campaigns.
"""

from __future__ import annotations

import functools
import math

import jax
import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy import optimize
from scipy.stats import norm

from binmetric_sweep.kernels import estimators as E
from binmetric_sweep.kernels.categorical import estimators as CE
from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout, binary_counts
from binmetric_sweep.kernels.counts import Counts
from tests.kernels.test_estimators import NOT_APPLICABLE, counts_of, random_rows

TOL = 1e-9
PREFERENCE = Layout((0.0, 0.5, 1.0))
SCALE = Layout((1.0, 2.0, 3.0, 4.0, 5.0))


def categorical(human, paired, judged, confusion=None, known=None) -> CategoricalCounts:
    """(B,) lanes from arrays ``(B, K)``, ``(B, K, L)``, ``(B, L)`` (C known nowhere unless
    given)."""
    paired = np.asarray(paired, float)
    b, k, outcomes = paired.shape
    return CategoricalCounts(
        human=np.asarray(human, float),
        paired=paired,
        judged=np.asarray(judged, float),
        confusion=np.zeros((b, k, outcomes)) if confusion is None else np.asarray(confusion),
        known=np.zeros(b, bool) if known is None else np.asarray(known, bool),
    )


def from_binary(c: Counts) -> CategoricalCounts:
    """The K = 2 counts of a binary campaign (class 1 adequate, verdict 1 "says adequate")."""
    a = {name: np.asarray(x) for name, x in c._asdict().items()}
    human = np.stack([a["n_phi"] - a["n_pos"], a["n_pos"]], -1)
    paired = np.stack(
        [
            np.stack([a["n_tn"], a["n_neg_paired"] - a["n_tn"]], -1),
            np.stack([a["n_pos_paired"] - a["n_tp"], a["n_tp"]], -1),
        ],
        -2,
    )
    judged = np.stack([a["n_m"] - a["m_pos"], a["m_pos"]], -1)
    confusion = np.stack(
        [np.stack([a["eta"], 1 - a["eta"]], -1), np.stack([1 - a["rho"], a["rho"]], -1)], -2
    )
    return categorical(human, paired, judged, confusion, a["rho_eta_known"])


def binary_lanes() -> Counts:
    """Random binary campaigns with every edge case, the cases where none applies, and known
    rates (one of them no better than chance)."""
    rows = random_rows(3, 140) + [row for _, row, _ in NOT_APPLICABLE]
    rows += [
        dict(n_pos=4, n_phi=9, m_pos=m, n_m=50, known=True, rho=0.9, eta=e)
        for m in (5, 30)
        for e in (0.8, 0.05)
    ]
    return counts_of(rows)


def random_categorical(rng, b: int, layout: Layout, big: int = 400) -> CategoricalCounts:
    """Lanes of every size from 2 paired items up, a judge mostly right, with edge cases:
    every third lane's judge-only verdicts all alike, every fifth's paired verdicts too."""
    k, outcomes = layout.classes, layout.outcomes
    shares = rng.dirichlet(np.ones(k), b)
    truth = np.eye(k)[:, layout.verdicts()].mean(-1)  # (K, L): how often verdict l is right
    confusion = rng.dirichlet(np.ones(outcomes), (b, k)) + 3 * truth
    confusion /= confusion.sum(-1, keepdims=True)
    n_paired = rng.integers(2, np.where(np.arange(b) % 2 == 0, big, 12))
    rows = np.stack([rng.multinomial(n, s) for n, s in zip(n_paired, shares, strict=True)])
    paired = np.stack(
        [
            [rng.multinomial(r, c) for r, c in zip(rs, cs, strict=True)]
            for rs, cs in zip(rows, confusion, strict=True)
        ]
    )
    n_m = rng.integers(1, np.where(np.arange(b) % 3 == 0, 50 * big, 30))
    judged = np.stack(
        [rng.multinomial(n, s @ c) for n, s, c in zip(n_m, shares, confusion, strict=True)]
    )
    one = rng.integers(0, outcomes, b)
    judged[::3] = np.eye(outcomes)[one[::3]] * n_m[::3, None]
    paired[::5] = rows[::5, :, None] * np.eye(outcomes)[one[::5]][:, None, :]
    return categorical(rows, paired, judged)


def items(c: CategoricalCounts, i: int, layout: Layout):
    """Lane i as item arrays: v_Y and the judges' values ``(n, J)`` on L, theirs on U."""
    t, m = np.asarray(c.paired[i]).astype(int), np.asarray(c.judged[i]).astype(int)
    v, f = np.asarray(layout.values), layout.judge_values()
    cells = [(k, j) for k in range(t.shape[0]) for j in range(t.shape[1])]
    y = np.concatenate([np.full(t[k, j], v[k]) for k, j in cells])
    f_l = np.concatenate([np.tile(f[j], (t[k, j], 1)) for k, j in cells])
    f_u = np.concatenate([np.tile(f[j], (m[j], 1)) for j in range(len(m))])
    return y, f_l, f_u


@functools.cache
def jitted(fn, layout: Layout, *level):
    """``fn`` on (counts, layout, level) jitted once per layout and level (as a sweep calls
    it; an eager call compiles each operation for each new shape)."""
    return jax.jit(lambda counts: fn(counts, layout, *level))


def one(estimate, i: int) -> tuple[float, ...]:
    return tuple(float(np.asarray(x)[i]) for x in estimate[:4])


def close(a, b, tol=TOL) -> bool:
    return all(math.isclose(x, y, rel_tol=0, abs_tol=tol) for x, y in zip(a, b, strict=True))


# K = 2 and one judge: the binary estimators.


@pytest.mark.parametrize("level", [0.95, 0.8])
def test_with_two_classes_each_is_the_binary_estimator_to_the_bit(level):
    binary_counts_ = binary_lanes()
    k2 = from_binary(binary_counts_)
    for field, x in binary_counts(k2)._asdict().items():  # the lanes made as intended
        np.testing.assert_array_equal(np.asarray(x), np.asarray(getattr(binary_counts_, field)))
    for e in (e for e in E.registered() if not e.posterior):
        ours = CE.CATEGORICAL_FORMS[e.name](k2, Layout((0.0, 1.0)), level)
        theirs = e.estimate(binary_counts_, level)
        for a, b in zip(ours, theirs, strict=True):
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), e.name
    assert set(CE.CATEGORICAL_FORMS) == {e.name for e in E.registered() if not e.posterior}


@pytest.mark.parametrize("values", [(1.0, 5.0), (1.0, 0.0)])
def test_two_classes_of_other_values_map_the_binary_numbers_linearly(values):
    """θ = v₀ + (v₁ − v₀)α: the SE scales by |v₁ − v₀|, a decreasing map swaps the ends."""
    counts = binary_lanes()
    k2, d = from_binary(counts), values[1] - values[0]
    for e in (e for e in E.registered() if not e.posterior):
        ours = CE.CATEGORICAL_FORMS[e.name](k2, Layout(values), 0.95)
        theirs = e.estimate(counts, 0.95)
        ends = (theirs.ci_low, theirs.ci_high)[:: 1 if d > 0 else -1]
        expected = (values[0] + d * theirs.value, abs(d) * theirs.se) + tuple(
            values[0] + d * x for x in ends
        )
        for a, b in zip(ours[:4], expected, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-14)
        np.testing.assert_array_equal(ours.reason, theirs.reason)


def test_the_k_class_formulas_at_two_classes_are_the_binary_ones():
    """The code that serves K ≥ 3 (``_ppi`` and the others), given K = 2: the binary
    numbers where both apply, to 1e-12 (the interval too, but for the binary's Wilson and
    Lee et al.'s intervals, and Rogan–Gladen where its α̂ is clipped)."""
    counts = binary_lanes()
    k2, layout = from_binary(counts), Layout((0.0, 1.0))
    pairs = [
        (CE._human_only, E.human_only, 2),
        (CE._judge_only, E.judge_only, 2),
        (CE._rogan_gladen, E.rogan_gladen, 2),
        (CE._ppi, E.ppi, 4),
        (CE._ppi_pp, E.ppi_pp, 4),
    ]
    for general, binary_fn, fields in pairs:
        ours, theirs = jitted(general, layout, 0.95)(k2), binary_fn(counts, 0.95)
        both = np.array(ours.applicable & theirs.applicable)
        if general is CE._rogan_gladen:  # where the binary α̂ is not clipped
            both &= (np.asarray(theirs.value) > 0) & (np.asarray(theirs.value) < 1)
        assert both.sum() > (20 if general is CE._rogan_gladen else 60), general.__name__
        for a, b in zip(ours[:fields], theirs[:fields], strict=True):
            np.testing.assert_allclose(np.asarray(a)[both], np.asarray(b)[both], rtol=0, atol=1e-12)
        mine_only = np.asarray(ours.applicable & ~theirs.applicable)
        # The binary inversion also refuses a judge worse than chance (ρ̂ + η̂ < 1), which
        # the K-class one inverts; nothing else differs.
        assert np.all(np.asarray(theirs.reason)[mine_only] == E.CHANCE_JUDGE)


# PPI and PPI++ against ppi_py.


@pytest.mark.parametrize("layout", [PREFERENCE, SCALE], ids=["preference", "scale"])
@pytest.mark.parametrize("level", [0.95, 0.9])
def test_ppi_and_ppi_pp_are_ppi_py_s_on_the_v_scores(layout, level):
    c = random_categorical(np.random.default_rng(layout.classes), 90, layout)
    ours = {1.0: jitted(CE.ppi, layout, level)(c), None: jitted(CE.ppi_pp, layout, level)(c)}
    z = norm.ppf(0.5 + level / 2)
    for i in range(90):
        y, f, unlabeled = (x if x.ndim == 1 else x[:, 0] for x in items(c, i, layout))
        constant = np.ptp(np.r_[f, unlabeled]) == 0
        for lam, estimate in ours.items():
            # Where f takes one value every λ gives the same numbers (ppi_py's λ̂ is NaN there).
            given = 1.0 if (lam is None and constant) else lam
            value = float(np.ravel(ppi_mean_pointestimate(y, f, unlabeled, lam=given))[0])
            low, high = (
                float(np.ravel(x)[0])
                for x in ppi_mean_ci(y, f, unlabeled, alpha=1 - level, lam=given)
            )
            assert close(one(estimate, i), (value, (high - low) / (2 * z), low, high)), (i, lam)


def variance_problem(y, f_l, f_u):
    """PPI++'s (a, c) on item arrays: its variance is (Var(Y) − 2λᵀc + λᵀaλ)/n with
    a = (1 + n/N)·Cov_{L∪U}(f) (ddof 1) and c = Cov_L(f, Y) (ddof 0), as ``ppi_py`` has them."""
    n, big_n = len(y), len(f_u)
    a = (1 + n / big_n) * np.atleast_2d(np.cov(np.vstack([f_l, f_u]).T, ddof=1))
    c = ((f_l - f_l.mean(0)) * (y - y.mean())[:, None]).mean(0)
    return a, c


def ppi_with(y, f_l, f_u, lam, z):
    value = lam @ f_u.mean(0) + (y - f_l @ lam).mean()
    se = math.sqrt(np.var(y - f_l @ lam) / len(y) + np.var(f_u @ lam) / len(f_u))
    return value, se, value - z * se, value + z * se


@pytest.mark.parametrize(
    "layout", [Layout((0.0, 0.5, 1.0), 2), Layout((0.0, 1.0), 3)], ids=["3 classes", "binary"]
)
def test_ppi_pp_with_several_judges_weighs_each_as_numpy_and_scipy_do(layout):
    """λ̂ is the pseudo-inverse's unconstrained optimum where that lies in {λ ≥ 0, Σλ ≤ 1},
    and no worse than SciPy's constrained optimum (SLSQP) anywhere; estimate and SE at λ̂
    are the item arrays'; ``ppi`` with several judges is ppi_py's on their mean value."""
    b = 60
    c = random_categorical(np.random.default_rng(11), b, layout, big=300)
    est, weights = (
        jitted(CE.ppi_pp, layout, 0.9)(c),
        np.asarray(jitted(CE.ppi_pp_weights, layout)(c)),
    )
    plain, z = jitted(CE.ppi, layout, 0.9)(c), norm.ppf(0.95)
    kinds = {"inside": 0, "boundary": 0}
    for i in range(b):
        y, f_l, f_u = items(c, i, layout)
        a, cov = variance_problem(y, f_l, f_u)
        lam = weights[i]
        assert np.all(lam >= 0) and lam.sum() <= 1 + 1e-12
        free = np.linalg.pinv(a) @ cov
        if np.all(free >= 0) and free.sum() <= 1:
            np.testing.assert_allclose(lam, free, rtol=0, atol=TOL)
            kinds["inside"] += 1
        else:
            kinds["boundary"] += 1

        def objective(x, a=a, cov=cov):
            return x @ a @ x - 2 * cov @ x

        scipy_best = min(
            optimize.minimize(
                objective,
                start,
                jac=lambda x, a=a, cov=cov: 2 * (a @ x - cov),
                bounds=[(0, 1)] * len(lam),
                constraints=[{"type": "ineq", "fun": lambda x: 1 - x.sum()}],
                method="SLSQP",
                options={"ftol": 1e-15, "maxiter": 500},
            ).fun
            for start in (np.zeros(len(lam)), np.full(len(lam), 1 / len(lam)))
        )
        assert objective(lam) <= scipy_best + 1e-12 * (np.abs(a).sum() + np.abs(cov).sum())
        assert close(one(est, i), ppi_with(y, f_l, f_u, lam, z)), i
        g_l, g_u = f_l.mean(1), f_u.mean(1)
        low, high = (float(np.ravel(x)[0]) for x in ppi_mean_ci(y, g_l, g_u, alpha=0.1, lam=1))
        value = float(np.ravel(ppi_mean_pointestimate(y, g_l, g_u, lam=1))[0])
        assert close(one(plain, i), (value, (high - low) / (2 * z), low, high)), i
    assert min(kinds.values()) >= 10, kinds


def test_two_judges_that_always_agree_share_one_judge_s_weight():
    """Σ_f singular (the second judge copies the first): the pseudo-inverse halves the one
    judge's λ̂ between them, and the estimate is the one judge's."""
    rng = np.random.default_rng(5)
    one_judge = random_categorical(rng, 30, PREFERENCE)
    copy = np.arange(3) * 3 + np.arange(3)  # joint verdict (l, l)
    paired = np.zeros((30, 3, 9))
    paired[..., copy] = one_judge.paired
    judged = np.zeros((30, 9))
    judged[..., copy] = one_judge.judged
    two = categorical(one_judge.human, paired, judged)
    layout = Layout(PREFERENCE.values, 2)
    single, double = (
        jitted(CE.ppi_pp, PREFERENCE, 0.95)(one_judge),
        jitted(CE.ppi_pp, layout, 0.95)(two),
    )
    lam1 = np.asarray(jitted(CE.ppi_pp_weights, PREFERENCE)(one_judge))[:, 0]
    lam2 = np.asarray(jitted(CE.ppi_pp_weights, layout)(two))
    inside = (lam1 > 0) & (lam1 < 1)  # not clipped: the same optimum
    assert inside.sum() > 10
    np.testing.assert_allclose(lam2[inside], np.c_[lam1, lam1][inside] / 2, rtol=0, atol=1e-12)
    for a, b in zip(single[:4], double[:4], strict=True):
        np.testing.assert_allclose(np.asarray(a)[inside], np.asarray(b)[inside], atol=1e-12)


# The confusion-matrix inversion.

HAND_T = [[8, 2, 0], [2, 6, 2], [0, 2, 8]]
HAND_M = [20, 30, 50]


def test_rogan_gladen_on_a_hand_worked_example():
    """v = (0, ½, 1); T rows (8, 2, 0), (2, 6, 2), (0, 2, 8), so Ĉ = T/10; m = (20, 30, 50).

    w = Ĉ⁻¹v: 0.8w₀ + 0.2w₁ = 0, 0.2w₀ + 0.6w₁ + 0.2w₂ = ½, 0.2w₁ + 0.8w₂ = 1 give
    w = (−1/8, ½, 9/8); θ̂ = wᵀp̂ = −0.025 + 0.15 + 0.5625 = 0.6875. π̂ = Ĉ⁻¹p̂ (Ĉ is
    symmetric) = (3/16, 1/4, 9/16), and vᵀπ̂ = 1/8 + 9/16 = 0.6875 again.
    Var_p̂(w) = 0.2/64 + 0.3/4 + 0.5·81/64 − 0.6875² = 0.7109375 − 0.47265625 = 0.23828125;
    /N_M = 0.0023828125. Var_Ĉk(w) about v_k: row 0, 0.8/64 + 0.2/4 = 0.0625; row 1,
    0.2/64 + 0.6/4 + 0.2·81/64 − ¼ = 0.15625; row 2, 0.2/4 + 0.8·81/64 − 1 = 0.0625.
    Σ π̂_k² Var_k / 10 = (9/256·0.0625 + 1/16·0.15625 + 81/256·0.0625)/10 = 0.003173828125.
    SE² = 0.005556640625. With C = Ĉ known: SE² = 0.0023828125 alone.
    """
    t = np.array([HAND_T], float)
    c = categorical(t.sum(-1), t, [HAND_M])
    known = categorical([[0, 0, 0]], np.zeros_like(t), [HAND_M], t / 10, [True])
    z = norm.ppf(0.975)
    for counts, var in ((c, 0.005556640625), (known, 0.0023828125)):
        se = math.sqrt(var)
        expected = (0.6875, se, 0.6875 - z * se, 0.6875 + z * se)
        assert close(one(jitted(CE.rogan_gladen, PREFERENCE, 0.95)(counts), 0), expected, 1e-13)


def delta_method(t, m, values, h=1e-6):
    """The inversion's SE by a finite-difference Jacobian of θ̂(p, C) = vᵀ(Cᵀ)⁻¹p and the
    multinomial covariances of p̂ (N_M) and each row Ĉ_k (T_k·), all independent."""
    rows, n_m = t.sum(1), m.sum()
    c, p = t / rows[:, None], m / n_m

    def theta(p, c):
        return values @ np.linalg.solve(c.T, p)

    def gradient(x, fn):
        g = np.zeros(x.size)
        for j in range(x.size):
            e = np.zeros(x.size)
            e[j] = h
            g[j] = (fn(x + e.reshape(x.shape)) - fn(x - e.reshape(x.shape))) / (2 * h)
        return g

    def multinomial(q, n):
        return (np.diag(q) - np.outer(q, q)) / n

    g_p = gradient(p, lambda x: theta(x, c))
    var = g_p @ multinomial(p, n_m) @ g_p
    for k in range(len(rows)):

        def row_k(x, k=k):
            moved = c.copy()
            moved[k] = x
            return theta(p, moved)

        g_k = gradient(c[k], row_k)
        var += g_k @ multinomial(c[k], rows[k]) @ g_k
    return theta(p, c), math.sqrt(var)


@pytest.mark.parametrize(
    "layout", [PREFERENCE, Layout((1.0, 2.0, 3.0, 4.0))], ids=["preference", "four-point"]
)
def test_rogan_gladen_se_is_an_independent_delta_method_s(layout):
    rng = np.random.default_rng(layout.classes + 20)
    k, b = layout.classes, 25
    confusion = rng.dirichlet(np.ones(k), (b, k)) + 2 * np.eye(k)
    confusion /= confusion.sum(-1, keepdims=True)
    rows = rng.integers(20, 800, (b, k))
    t = np.stack(
        [
            [rng.multinomial(r, q) for r, q in zip(rs, cs, strict=True)]
            for rs, cs in zip(rows, confusion, strict=True)
        ]
    ).astype(float)
    shares = rng.dirichlet(np.full(k, 3.0), b)
    n_m = rng.integers(50, 20_000, b)
    m = np.stack(
        [
            rng.multinomial(n, s @ q)
            for n, s, q in zip(n_m, shares, t / rows[..., None], strict=True)
        ]
    ).astype(float)
    est = jitted(CE.rogan_gladen, layout, 0.95)(categorical(rows, t, m))
    low, high = min(layout.values), max(layout.values)
    checked = 0
    for i in range(b):
        value, se = delta_method(t[i], m[i], np.asarray(layout.values))
        if not low < value < high:
            continue
        assert math.isclose(float(est.value[i]), value, rel_tol=0, abs_tol=1e-12)
        assert math.isclose(float(est.se[i]), se, rel_tol=1e-7), i
        checked += 1
    assert checked >= 20


def test_rogan_gladen_se_is_the_sd_of_its_estimates_over_simulated_campaigns():
    """20,000 preference campaigns: π = (0.3, 0.2, 0.5), a judge with a position bias
    (C rows (0.70, 0.15, 0.15), (0.20, 0.50, 0.30), (0.10, 0.15, 0.75)), a paired set of
    N_ρη = 3000 drawn from π (rows about 900, 600, 1500: the delta method's regime) and
    N_M = 4000. Mean SE within 3 % of the estimates' SD (its Monte Carlo error is 0.5 %);
    the inversion's second-order bias (E Ĉ⁻¹ ≠ C⁻¹) under 5 % of the SD; the 95 % interval
    covers θ = 0.6 within 4 Monte Carlo SEs (0.15 % each) of 95 %."""
    reps, pi = 20_000, np.array([0.3, 0.2, 0.5])
    c = np.array([[0.70, 0.15, 0.15], [0.20, 0.50, 0.30], [0.10, 0.15, 0.75]])
    rng = np.random.default_rng(2024)
    rows = rng.multinomial(3000, pi, reps)
    t = np.stack([rng.multinomial(rows[:, k], c[k]) for k in range(3)], axis=1).astype(float)
    m = rng.multinomial(4000, pi @ c, reps).astype(float)
    est = jitted(CE.rogan_gladen, PREFERENCE, 0.95)(categorical(rows, t, m))
    value, se = np.asarray(est.value), np.asarray(est.se)
    assert np.all(est.applicable) and np.all((value > 0) & (value < 1))  # never clipped
    sd = value.std(ddof=1)
    assert abs(se.mean() / sd - 1) < 0.03, se.mean() / sd
    theta = float(np.asarray(PREFERENCE.values) @ pi)
    assert abs(value.mean() - theta) < 0.05 * sd
    covered = np.mean((np.asarray(est.ci_low) <= theta) & (theta <= np.asarray(est.ci_high)))
    assert abs(covered - 0.95) < 4 * math.sqrt(0.95 * 0.05 / reps), covered


# Where each does not apply.

EMPTY_T = np.zeros((1, 3, 3))
SINGULAR_T = np.array([[[5, 5, 0], [5, 5, 0], [0, 1, 9]]], float)  # rows 0 and 1 alike
NEAR_T = np.array([[[1, 0, 0], [0, 1, 0], [0, 1e11 - 1, 1]]], float)  # κ₁(Ĉ) ≈ 2·10¹¹
FINE_T = np.array([[[1, 0, 0], [0, 1, 0], [0, 99, 1]]], float)  # κ₁(Ĉ) ≈ 200
HAND = np.array([HAND_T], float)
TWO_JUDGES = Layout((0.0, 0.5, 1.0), 2)


def lane(t=HAND, m=(HAND_M,), human=None, confusion=None, known=False, outcomes=3):
    t = np.asarray(t, float)
    if t.shape[-1] != outcomes:
        t = np.concatenate([t, np.zeros((1, 3, outcomes - 3))], -1)
    m = np.asarray(m, float)
    m = np.concatenate([m, np.zeros((1, outcomes - m.shape[-1]))], -1)
    human = t.sum(-1) if human is None else np.asarray([human], float)
    return categorical(human, t, m, confusion, [known])


CASES = [
    ("human_only", PREFERENCE, lane(human=[0, 0, 0]), E.NO_HUMAN),
    ("judge_only", PREFERENCE, lane(m=[[0, 0, 0]]), E.NO_METRIC),
    ("judge_only", TWO_JUDGES, lane(m=[[0] * 9], outcomes=9), E.NO_METRIC),
    ("rogan_gladen", TWO_JUDGES, lane(outcomes=9), CE.SEVERAL_JUDGES),
    ("rogan_gladen", PREFERENCE, lane(m=[[0, 0, 0]]), E.NO_METRIC),
    ("rogan_gladen", PREFERENCE, lane(t=HAND * [[1], [0], [1]]), CE.NO_PAIRED_CLASS),
    ("rogan_gladen", PREFERENCE, lane(t=SINGULAR_T), CE.SINGULAR_CONFUSION),
    ("rogan_gladen", PREFERENCE, lane(t=NEAR_T), CE.SINGULAR_CONFUSION),
    (
        "rogan_gladen",
        PREFERENCE,
        lane(t=EMPTY_T, confusion=SINGULAR_T / 10, known=True),
        CE.SINGULAR_CONFUSION,
    ),
    (
        "rogan_gladen",
        SCALE,
        lane(t=np.zeros((1, 5, 5)), m=[[1] * 5], outcomes=5),
        CE.NO_PAIRED_CLASS,
    ),
    ("ppi", PREFERENCE, lane(t=EMPTY_T, confusion=HAND / 10, known=True), E.NO_PAIRED_SET),
    ("ppi_pp", PREFERENCE, lane(t=EMPTY_T, confusion=HAND / 10, known=True), E.NO_PAIRED_SET),
    ("ppi", PREFERENCE, lane(t=[[[1, 0, 0], [0, 0, 0], [0, 0, 0]]]), E.FEW_PAIRED),
    ("ppi_pp", TWO_JUDGES, lane(t=EMPTY_T, outcomes=9), E.FEW_PAIRED),
    ("ppi_pp", SCALE, lane(t=np.zeros((1, 5, 5)), m=[[1] * 5], outcomes=5), E.FEW_PAIRED),
]


@pytest.mark.parametrize(("name", "layout", "counts", "reason"), CASES)
def test_every_case_where_an_estimator_does_not_apply_says_why(name, layout, counts, reason):
    est = jitted(CE.CATEGORICAL_FORMS[name], layout, 0.95)(counts)
    assert int(est.reason[0]) == reason and E.REASONS[reason]
    assert all(np.isnan(float(np.asarray(x)[0])) for x in est[:4])


def test_rogan_gladen_applies_with_known_c_and_no_paired_items_and_short_of_its_threshold():
    cases = [lane(t=EMPTY_T, confusion=HAND / 10, known=True), lane(t=FINE_T)]
    for counts in cases:
        est = jitted(CE.rogan_gladen, PREFERENCE, 0.95)(counts)
        assert bool(est.applicable[0]) and np.isfinite(float(est.se[0]))
    c = FINE_T[0] / FINE_T[0].sum(-1, keepdims=True)
    assert (
        np.linalg.cond(c, 1)
        < CE.MAX_CONDITION
        < np.linalg.cond(NEAR_T[0] / NEAR_T[0].sum(-1, keepdims=True), 1)
    )


def test_the_categorical_reasons_continue_the_binary_codes():
    assert (CE.SEVERAL_JUDGES, CE.NO_PAIRED_CLASS, CE.SINGULAR_CONFUSION) == (8, 9, 10)
    assert E.REASONS[8] == "judges answer in more outcomes than classes (several judges)"
    assert len(set(E.REASONS)) == len(E.REASONS) == 11


@pytest.mark.parametrize("layout", [PREFERENCE, TWO_JUDGES], ids=["one judge", "two judges"])
def test_estimators_jit_and_vmap_alike(layout):
    """A jitted call vmapped over lanes (as a sweep calls them) gives the eager numbers."""
    c = random_categorical(np.random.default_rng(8), 32, layout)
    for name, fn in CE.CATEGORICAL_FORMS.items():
        eager = fn(c, layout, 0.95)
        mapped = jax.jit(jax.vmap(lambda x, fn=fn: fn(x, layout, 0.95)))(c)
        for a, b in zip(eager, mapped, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-14, atol=1e-14)
        assert np.asarray(eager.value).dtype == np.float64, name
