"""The categorical posterior: its log density, and batched NUTS against a conjugate Gibbs
sampler (tests/kernels/gibbs.py) and against exact answers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binmetric_sweep.kernels import logdensity as binary_density
from binmetric_sweep.kernels.categorical.counts import (
    CategoricalCounts,
    CategoricalDesign,
    Layout,
    binary_counts,
    draw_counts,
)
from binmetric_sweep.kernels.categorical.logdensity import (
    density_terms,
    log_parameters,
    logdensity,
    position_size,
    row_sizes,
    theta,
)
from binmetric_sweep.kernels.categorical.nuts import sample_fits
from binmetric_sweep.kernels.diagnostics import bulk_effective_sample_size, sd_mcse
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop, sampler_key, summarize_draws
from tests.kernels.gibbs import gibbs_theta

PREFERENCE = Layout((0.0, 0.5, 1.0))
SCALE = Layout((1.0, 2.0, 3.0, 4.0, 5.0))
TWO_JUDGES = Layout((0.0, 0.5, 1.0), 2)


def _lane(layout, seed, n_phi=60, n_paired=80, n_m=1000, known=False):
    """One lane's counts drawn from a random campaign (π and C rows from Dirichlets)."""
    rng = np.random.default_rng(seed)
    k, outcomes = layout.classes, layout.outcomes
    pi = rng.dirichlet(np.ones(k))
    c = rng.dirichlet(np.ones(outcomes), k) * 0.5 + 0.5 * _diagonal_confusion(layout)
    rows = rng.multinomial(n_paired, pi)
    return CategoricalCounts(
        human=rng.multinomial(n_phi, pi).astype(float),
        paired=np.zeros((k, outcomes))
        if known
        else np.stack([rng.multinomial(n, row) for n, row in zip(rows, c, strict=True)]).astype(
            float
        ),
        judged=rng.multinomial(n_m, pi @ c).astype(float),
        confusion=c,
        known=np.asarray(known),
    )


def _diagonal_confusion(layout):
    """C with every judge right: C[k, l] = 1 where every judge says k."""
    verdicts = layout.verdicts()
    return (verdicts == np.arange(layout.classes)[:, None, None]).all(-1).astype(float)


# The log density.


def test_position_sizes():
    assert (
        position_size(Layout((0.0, 1.0))) == 3
        and position_size(Layout((0.0, 1.0)), known=True) == 1
    )
    assert position_size(PREFERENCE) == 2 + 3 * 2
    assert position_size(SCALE) == 4 + 5 * 4
    assert position_size(TWO_JUDGES) == 2 + 3 * 8
    assert position_size(TWO_JUDGES, independent=True) == 2 + 2 * 3 * 2
    assert position_size(TWO_JUDGES, known=True) == 2
    assert position_size(PREFERENCE, independent=True) == position_size(PREFERENCE)


@pytest.mark.parametrize("n_m", [1000.0, 1e7])
def test_k2_is_the_binary_density(n_m):
    """K = L = 2: the same density as the binary model's, up to a constant, in the same
    coordinates (logit α; row 0's coordinate is logit(1 − η) = −logit η)."""
    lay = Layout((0.0, 1.0))
    c = CategoricalCounts(
        human=jnp.array([20.0, 30.0]),
        paired=jnp.array([[15.0, 5.0], [10.0, 20.0]]),
        judged=jnp.array([0.3, 0.7]) * n_m,
        confusion=jnp.array([[0.8, 0.2], [0.1, 0.9]]),
        known=False,
    )
    b = binary_counts(c)
    xs = jax.random.normal(jax.random.key(0), (50, 3)) * 0.3
    full = jax.vmap(
        lambda x: (
            logdensity(x, density_terms(c, lay), lay)
            - binary_density.logdensity(jnp.array([x[0], x[2], -x[1]]), b)
        )
    )(xs)
    known = jax.vmap(
        lambda x: (
            logdensity(x[:1], density_terms(c, lay, known=True), lay)
            - binary_density.logdensity(x[:1], b._replace(rho_eta_known=True, rho=0.9, eta=0.8))
        )
    )(xs)
    for diff in (full, known):
        assert float(jnp.max(diff) - jnp.min(diff)) < 1e-9 * max(1.0, n_m / 1e3)


def _plain(y, c, layout, independent, known):
    """The posterior density written plainly in (π, C), in long double: the Dirichlet and
    multinomial kernels on the joint T, and the Jacobian of y ↦ (π, rows) as the product
    of each simplex block's determinant, taken numerically (central differences)."""
    ld = np.longdouble
    y = np.asarray(y, ld)
    sizes = row_sizes(layout, independent, known)

    def simplices(y):
        out, start = [], 0
        for size in sizes:
            z = np.concatenate([[ld(0)], y[start : start + size - 1]])
            e = np.exp(z - z.max())
            out.append(e / e.sum())
            start += size - 1
        return out

    groups = simplices(y)
    pi, rows = groups[0], groups[1:]
    k = layout.classes
    if known:
        conf = np.asarray(c.confusion, ld)
    elif independent and layout.judges > 1:
        v = layout.verdicts()
        per = [rows[j * k : (j + 1) * k] for j in range(layout.judges)]
        conf = np.array(
            [
                [np.prod([per[j][r][v[o, j]] for j in range(layout.judges)]) for o in range(len(v))]
                for r in range(k)
            ],
            ld,
        )
    else:
        conf = np.stack(rows)
    h, t, m = (np.asarray(x, ld) for x in (c.human, c.paired, c.judged))
    p = pi @ conf
    value = np.sum(h * np.log(pi)) + np.sum(m[m > 0] * np.log(p[m > 0]))
    if not known:  # the paired likelihood, on the joint T
        value += np.sum(t[t > 0] * np.log(conf[t > 0]))
    # Dirichlet(1) priors are flat; the Jacobian of each simplex block, by differences.
    start, eps = 0, ld(1e-7)
    for g, size in enumerate(sizes):
        jac = np.empty((size - 1, size - 1), ld)
        for i in range(size - 1):
            up, down = y.copy(), y.copy()
            up[start + i] += eps
            down[start + i] -= eps
            jac[:, i] = (simplices(up)[g][1:] - simplices(down)[g][1:]) / (2 * eps)
        value += np.log(abs(np.linalg.det(jac.astype(np.float64))))
        start += size - 1
    return value


@pytest.mark.parametrize(
    "layout, independent, known",
    [
        (PREFERENCE, False, False),
        (PREFERENCE, False, True),
        (TWO_JUDGES, False, False),
        (TWO_JUDGES, True, False),
    ],
    ids=["k3", "k3-known", "j2-joint", "j2-independent"],
)
def test_density_is_the_plain_posterior_in_log_ratio_coordinates(layout, independent, known):
    c = _lane(layout, 4, known=known)
    c = c._replace(confusion=np.where(np.arange(layout.outcomes) == 1, 0.0, c.confusion))
    c = c._replace(confusion=c.confusion / c.confusion.sum(1, keepdims=True))  # a zero in C
    if known:
        c = c._replace(judged=np.asarray(c.judged) * (np.arange(layout.outcomes) != 1))
    terms = density_terms(c, layout, independent, known)
    d = position_size(layout, independent, known)
    ys = np.random.default_rng(5).normal(size=(12, d))
    f = jax.jit(lambda y: logdensity(y, terms, layout, independent))
    diff = np.array([float(f(y)) - float(_plain(y, c, layout, independent, known)) for y in ys])
    assert np.ptp(diff) < 1e-6, diff


def test_the_density_has_the_dirichlet_score():
    """A sampling check of the Jacobian: with no judge-only items the density in y is that
    of the log-ratios of π ~ Dir(h + 1), C_k ~ Dir(T_k + 1); so over draws of those its
    gradient averages 0 (the score's mean), and without the Jacobian it would not."""
    c = _lane(PREFERENCE, 6, n_m=0)
    terms = density_terms(c, PREFERENCE)
    rng = np.random.default_rng(7)
    r = 20000
    ys = [np.log(rng.dirichlet(np.asarray(a), r)) for a in map(np.stack, terms.exponents)]
    ys = np.concatenate([y[:, 1:] - y[:, :1] for y in ys], axis=1)
    g = np.asarray(jax.jit(jax.vmap(jax.grad(lambda y: logdensity(y, terms, PREFERENCE))))(ys))
    z = g.mean(0) / (g.std(0) / np.sqrt(r))
    assert np.all(np.abs(z) < 4.5), z


def test_density_stays_accurate_with_ten_million_judged_items():
    """Near the mode, differences of the density with N_M = 10^7 agree with long double to
    1e-6 (the uncentred value is of order 10^7; its differences keep their digits)."""
    c = _lane(PREFERENCE, 8, n_phi=100, n_paired=100, n_m=10**7)
    terms = density_terms(c, PREFERENCE)
    rng = np.random.default_rng(9)
    base = np.concatenate(
        [np.log(np.asarray(c.human) + 1)[1:] - np.log(c.human[0] + 1)]
        + [np.log(np.asarray(c.paired[k]) + 1)[1:] - np.log(c.paired[k, 0] + 1) for k in range(3)]
    )
    ys = base + rng.normal(size=(10, 8)) * 1e-3
    f = jax.jit(lambda y: logdensity(y, terms, PREFERENCE))
    got = np.array([float(f(y)) for y in ys])
    want = np.array([_plain(y, c, PREFERENCE, False, False) for y in ys], np.longdouble)
    np.testing.assert_allclose(got - got[0], np.asarray(want - want[0], float), atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-700.0, 700.0), min_size=8, max_size=8),
    st.sampled_from([0.0, 1.0, 1e7]),
    st.booleans(),
)
def test_density_and_gradient_are_finite_at_every_finite_position(y, scale, empty):
    c = _lane(PREFERENCE, 10)
    if empty:  # every group empty but the judge-only items
        c = c._replace(human=0 * c.human, paired=0 * c.paired)
    c = c._replace(judged=np.asarray(c.judged) / 1000 * scale)
    terms = density_terms(c, PREFERENCE)
    value, grad = _value_and_grad(np.asarray(y), terms)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    t = float(theta(np.asarray(y), PREFERENCE))
    assert 0.0 <= t <= 1.0


_value_and_grad = jax.jit(jax.value_and_grad(lambda y, t: logdensity(y, t, PREFERENCE)))


def test_independent_judges_multiply_their_confusions():
    lay = TWO_JUDGES
    y = np.random.default_rng(11).normal(size=position_size(lay, independent=True))
    log_pi, log_c = log_parameters(y, lay, independent=True)
    c = np.exp(np.array([[float(x) for x in row] for row in log_c]))
    np.testing.assert_allclose(c.sum(1), 1.0, rtol=1e-12)
    # Judge 1 (the outcome's first digit) and judge 2 (its second), each a K × K matrix.
    c1 = c.reshape(3, 3, 3).sum(2)
    c2 = c.reshape(3, 3, 3).sum(1)
    np.testing.assert_allclose(c, (c1[:, :, None] * c2[:, None, :]).reshape(3, 9), rtol=1e-12)
    assert np.isclose(sum(np.exp(float(x)) for x in log_pi), 1.0)


# NUTS against the Gibbs yardstick.

#: Shorter chains than a sweep's (4 × (500 + 1000)): the checks are held to their own MC error.
SETTINGS = resolve_loop(NUTSSettings(chains=4, warmup=400, samples=600), "cpu")
#: Shorter still for the larger models, whose steps cost more (24 and 26 coordinates).
SHORT = SETTINGS._replace(warmup=300, samples=400)


def _stack(lanes):
    return jax.tree.map(lambda *x: np.stack([np.asarray(v, float) for v in x]), *lanes)


def _nuts(lanes, layout, independent=False, known=False, settings=SETTINGS, seed=0):
    counts = _stack(lanes)
    b = counts.human.shape[0]
    keys = jax.vmap(lambda i: sampler_key(jax.random.fold_in(jax.random.key(seed), i)))(
        jnp.arange(b)
    )
    run = jax.jit(lambda k, c: sample_fits(k, c, layout, settings, independent, known=known))
    draws = run(keys, counts)
    return summarize_draws(np.asarray(draws.alpha), 0.95), draws


def _gibbs(lanes, layout, independent=False, known=False, iterations=6000, chains=32):
    c = _stack(lanes)
    draws = gibbs_theta(
        c.human,
        c.paired,
        c.judged,
        layout.values,
        layout.judges,
        independent,
        c.confusion if known else None,
        chains=chains,
        iterations=iterations,
    )
    ess = bulk_effective_sample_size(draws)
    flat = draws.reshape(len(draws), -1)
    return flat.mean(1), flat.std(1, ddof=1), flat.std(1, ddof=1) / np.sqrt(ess), sd_mcse(draws)


def _agree(nuts, draws, gibbs, z=4.0):
    """Mean and SD of θ within z combined MC SEs (NUTS's from its ESS and sd_mcse, the
    Gibbs chain's from its own); and the yardstick's error well below NUTS's."""
    mean, sd, mean_se, sd_se = gibbs
    nuts_mean_se = nuts.sd / np.sqrt(nuts.ess)
    assert np.all(np.abs(nuts.mean - mean) <= z * np.hypot(nuts_mean_se, mean_se)), (
        nuts.mean,
        mean,
        nuts_mean_se,
        mean_se,
    )
    assert np.all(np.abs(nuts.sd - sd) <= z * np.hypot(nuts.sd_mcse, sd_se)), (
        nuts.sd,
        sd,
        nuts.sd_mcse,
        sd_se,
    )
    assert np.all(mean_se < 0.5 * nuts_mean_se), (mean_se, nuts_mean_se)
    assert np.all(nuts.rhat < 1.01)
    assert np.asarray(draws.divergences).sum() <= 0.001 * np.asarray(draws.alpha).size


def _campaign(layout, seed, n_phi, n_m, n_paired=0, shared=True, known=False):
    """One lane's counts drawn by draw_counts from a campaign with a judge better than chance."""
    rng = np.random.default_rng(seed)
    k, outcomes = layout.classes, layout.outcomes
    pi = rng.dirichlet(np.full(k, 2.0))
    c = 0.4 * rng.dirichlet(np.ones(outcomes), k) + 0.6 * _diagonal_confusion(layout)
    design = CategoricalDesign(
        shares=pi,
        confusion=c,
        n_phi=float(n_phi),
        n_rho_eta=float(n_paired),
        paired_shares=rng.dirichlet(np.ones(k)),
        n_m=float(n_m),
        shared_paired=shared,
        known=known,
    )
    return jax.jit(draw_counts)(jax.random.key(seed), design)


def test_nuts_agrees_with_gibbs_on_preferences_with_ties():
    lanes = [
        _campaign(PREFERENCE, 101, n_phi=60, n_m=1000),
        _campaign(PREFERENCE, 102, n_phi=30, n_m=3000, n_paired=1000, shared=False),
        _campaign(PREFERENCE, 103, n_phi=3000, n_m=10**5),
        _campaign(PREFERENCE, 104, n_phi=15, n_m=300),
    ]
    nuts, draws = _nuts(lanes, PREFERENCE)
    _agree(nuts, draws, _gibbs(lanes, PREFERENCE, iterations=30000))


@pytest.mark.yardstick  # a compile and a run of its own (24 coordinates)
def test_nuts_agrees_with_gibbs_on_a_five_point_scale():
    lanes = [
        _campaign(SCALE, 201, n_phi=200, n_m=2000),
        _campaign(SCALE, 202, n_phi=100, n_m=10**4, n_paired=2000, shared=False),
    ]
    nuts, draws = _nuts(lanes, SCALE, settings=SHORT)
    _agree(nuts, draws, _gibbs(lanes, SCALE, iterations=30000))


@pytest.mark.yardstick  # a compile and a run of its own per model (26 and 14 coordinates)
@pytest.mark.parametrize("independent", [False, True], ids=["joint", "independent"])
def test_nuts_agrees_with_gibbs_with_two_judges(independent):
    lanes = [
        _campaign(TWO_JUDGES, 301, n_phi=300, n_m=2000),
        _campaign(TWO_JUDGES, 302, n_phi=600, n_m=5000),
    ]
    nuts, draws = _nuts(lanes, TWO_JUDGES, independent, settings=SHORT)
    _agree(nuts, draws, _gibbs(lanes, TWO_JUDGES, independent, iterations=30000))


def test_nuts_with_c_known_agrees_with_gibbs_and_with_the_dirichlet():
    """C known: π alone is sampled. With no judge-only items the posterior is Dir(h + 1),
    whose θ has mean vᵀa/a₀ and variance (vᵀdiag(a)v/a₀ − mean²)/(a₀ + 1)."""
    lanes = [
        _campaign(PREFERENCE, 401, n_phi=40, n_m=0, known=True),
        _campaign(PREFERENCE, 402, n_phi=200, n_m=1000, known=True),
        _campaign(PREFERENCE, 403, n_phi=2000, n_m=10**4, known=True),
    ]
    nuts, draws = _nuts(lanes, PREFERENCE, known=True)
    _agree(nuts, draws, _gibbs(lanes, PREFERENCE, known=True, iterations=30000))
    a = np.asarray(lanes[0].human) + 1.0
    v = np.asarray(PREFERENCE.values)
    mean = v @ a / a.sum()
    sd = np.sqrt((v**2 @ a / a.sum() - mean**2) / (a.sum() + 1))
    assert abs(nuts.mean[0] - mean) <= 4 * nuts.sd[0] / np.sqrt(nuts.ess[0])
    assert abs(nuts.sd[0] - sd) <= 4 * nuts.sd_mcse[0]


@pytest.mark.yardstick  # 200 fits
def test_credible_intervals_cover_theta_drawn_from_the_prior():
    """π and every row of C from their Dirichlet(1) priors, counts from the model: the
    posterior's 95 % central interval covers θ in 95 % of campaigns, within 3 MC SEs."""
    b = 200
    rng = np.random.default_rng(500)
    design = CategoricalDesign(
        shares=rng.dirichlet(np.ones(3), b),
        confusion=rng.dirichlet(np.ones(3), (b, 3)),
        n_phi=rng.integers(5, 100, b).astype(float),
        n_rho_eta=np.zeros(b),
        paired_shares=np.full((b, 3), 1 / 3),
        n_m=rng.integers(0, 300, b).astype(float),
        shared_paired=np.ones(b, bool),
        known=np.zeros(b, bool),
    )
    counts = jax.jit(jax.vmap(draw_counts))(jax.random.split(jax.random.key(501), b), design)
    truth = design.shares @ np.asarray(PREFERENCE.values)
    settings = resolve_loop(NUTSSettings(chains=2, warmup=200, samples=300), "cpu")
    lanes = [jax.tree.map(lambda x, i=i: np.asarray(x)[i], counts) for i in range(b)]
    nuts, _ = _nuts(lanes, PREFERENCE, settings=settings, seed=502)
    covered = (nuts.ci_low <= truth) & (truth <= nuts.ci_high)
    assert abs(covered.mean() - 0.95) <= 3 * np.sqrt(0.95 * 0.05 / b), covered.mean()
