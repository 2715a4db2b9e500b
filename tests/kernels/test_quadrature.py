import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import betaln, gammaln, logsumexp, xlog1py, xlogy

from binmetric_sweep.kernels.quadrature import (
    QuadratureRule,
    _tangent_window,
    alpha_log_marginal,
    hermite_t_allows,
    hermite_t_summary,
    paired_rule_is_exact,
    posterior_summary,
)
from tests.kernels.helpers import (
    COPIED_PUBLISHED_EPS,
    SHARED_PUBLISHED_EPS,
    counts,
    exact_summaries,
    full_model_lanes,
    mixture_posterior,
    per_lane,
    published_counts,
    published_eps,
    published_table,
)


def summarize(c, kind, rule=QuadratureRule(), level=0.95):
    return per_lane(posterior_summary, c, kind, level, rule)


def test_beta_kind_is_the_beta_posterior():
    c = counts(n_pos=[0, 3, 500, 999_999], n_phi=[0, 10, 1000, 10**6], n_m=0)
    a, b = c.n_pos + 1, c.n_phi - c.n_pos + 1
    # One program, the credible level an argument.
    at_level = jax.jit(jax.vmap(lambda x, p: posterior_summary(x, "beta", p), in_axes=(0, None)))
    for level in (0.5, 0.95, 0.99):
        s = jax.tree.map(np.asarray, at_level(c, level))
        np.testing.assert_allclose(s.mean, stats.beta.mean(a, b), rtol=1e-10)
        np.testing.assert_allclose(s.sd, stats.beta.std(a, b), rtol=1e-6)
        # The interval inverts the CDF of the panels' log-density series by
        # safeguarded Newton steps: to rounding, at every level.
        tail = 0.5 * (1.0 - level)
        np.testing.assert_allclose(s.ci_low, stats.beta.ppf(tail, a, b), rtol=1e-10)
        np.testing.assert_allclose(s.ci_high, stats.beta.ppf(1.0 - tail, a, b), rtol=1e-10)


def test_known_kind_matches_adaptive_integration():
    c = counts(
        n_pos=[3, 60, 0],
        n_phi=[10, 100, 0],
        m_pos=[400, 5400, 37],
        n_m=[1000, 10**4, 50],
        rho=[0.9, 0.7, 0.95],
        eta=[0.8, 0.7, 0.6],
        rho_eta_known=True,
    )
    s = summarize(c, "known")
    for i in range(3):

        def dens(a, k=0, i=i):
            p = a * c.rho[i] + (1 - a) * (1 - c.eta[i])
            return (
                a**k
                * stats.beta.pdf(a, c.n_pos[i] + 1, c.n_phi[i] - c.n_pos[i] + 1)
                * stats.binom.pmf(c.m_pos[i], c.n_m[i], p)
            )

        z = integrate.quad(dens, 0, 1, epsabs=0, epsrel=1e-12, limit=500)[0]
        m = integrate.quad(lambda a: dens(a, 1), 0, 1, epsabs=0, epsrel=1e-12, limit=500)[0] / z
        v = integrate.quad(lambda a: dens(a, 2), 0, 1, epsabs=0, epsrel=1e-12, limit=500)[0] / z
        # Measured worst: 1.2e-10 (N_Φ = 0, a broad α-marginal).
        assert s.mean[i] == pytest.approx(m, abs=1e-5)
        assert s.sd[i] == pytest.approx(np.sqrt(v - m * m), abs=1e-5)


def known_lanes(b: int, seed: int):
    """``(b,)`` campaigns with ρ, η known: α near the bounds for a third of them, and for
    half of them the metric's verdicts drawn with other rates than the known ones (the
    rates a team assumed were wrong), so that its rate often lies outside [1 − η, ρ]."""
    rng = np.random.default_rng(seed)
    alpha = np.where(rng.uniform(size=b) < 1 / 3, rng.uniform(0, 0.03, b), rng.uniform(size=b))
    alpha = np.where(rng.uniform(size=b) < 0.5, alpha, 1 - alpha)
    n_phi = rng.choice([0, 10, 100, 1000, 10_000], b)
    n_m = rng.choice([10, 1000, 10**5, 10**7], b)
    rho, eta = rng.uniform(0.5, 1.0, (2, b))
    wrong = rng.uniform(size=b) < 0.5
    rho_m, eta_m = np.where(wrong, rng.uniform(0.5, 1.0, (2, b)), (rho, eta))
    rate = alpha * rho_m + (1 - alpha) * (1 - eta_m)
    return counts(
        n_pos=rng.binomial(n_phi, alpha),
        n_phi=n_phi,
        m_pos=rng.binomial(n_m, rate),
        n_m=n_m,
        rho=rho,
        eta=eta,
        rho_eta_known=True,
    )


def grid_moments(c, i, points=100_001):
    """Mean and SD of lane i's α-marginal by Simpson's rule on a grid over where it is
    within e^−60 of its peak (reaching a bound where it does not fall off before it)."""

    def log_post(a):
        p = a * c.rho[i] + (1 - a) * (1 - c.eta[i])
        return (
            xlogy(c.n_pos[i], a)
            + xlog1py(c.n_phi[i] - c.n_pos[i], -a)
            + xlogy(c.m_pos[i], p)
            + xlog1py(c.n_m[i] - c.m_pos[i], -p)
        )

    a = np.linspace(0, 1, points)
    with np.errstate(divide="ignore"):
        held = np.nonzero(log_post(a) > np.max(log_post(a)) - 60)[0]
    a = np.linspace(a[max(held[0] - 1, 0)], a[min(held[-1] + 1, a.size - 1)], points)
    with np.errstate(divide="ignore"):
        density = np.exp(log_post(a) - np.max(log_post(a)))
    total = integrate.simpson(density, x=a)
    mean = integrate.simpson(a * density, x=a) / total
    return mean, np.sqrt(integrate.simpson((a - mean) ** 2 * density, x=a) / total)


def test_known_kind_on_drawn_campaigns_matches_a_fine_grid():
    """Where the metric's rate lies outside what ρ, η allow, the α-marginal peaks at a
    bound, far from what the human ratings alone say; the window is placed at the exact
    mode, and the moments hold to 2e-5 of the SD (measured: 9e-7, the grid's error).
    Placed on the human ratings, 8 of these lanes were off by 0.4 % to 25 % of the SD."""
    c = known_lanes(96, 3)
    s = summarize(c, "known")
    reference = np.array([grid_moments(c, i) for i in range(96)]).T
    error = np.abs(np.stack([s.mean, s.sd]) - reference) / reference[1]
    assert error.max() < 2e-5, np.argmax(error.max(0))


def test_published_eps_within_0_002():
    table = published_table()
    c = published_counts(table)
    s = summarize(c, "full")
    eps = published_eps(table, s.sd)
    worst = np.abs(eps - table.eps.values)
    assert worst.max() <= 0.002, table.assign(ours=eps)[worst > 0.002]


def test_full_kind_without_metric_data_is_the_beta():
    c = counts(
        n_pos=[40, 0],
        n_phi=[100, 0],
        n_tp=[10, 3],
        n_pos_paired=[20, 9],
        n_tn=[5, 0],
        n_neg_paired=[30, 0],
        n_m=0,
    )
    s = summarize(c, "full")
    np.testing.assert_allclose(s.sd, stats.beta.std(c.n_pos + 1, c.n_phi - c.n_pos + 1), atol=1e-5)


def test_full_kind_agrees_with_a_much_finer_rule():
    c = full_model_lanes(120, seed=3)
    coarse = summarize(c, "full")
    fine = summarize(c, "full", QuadratureRule(64, 32, 24, 30.0, 36.0))
    assert np.all(np.isfinite(coarse.sd))
    # scripts/quadrature_accuracy.py measures 1005 such lanes (these among
    # them): worst 1.6e-6, median 6e-11.
    assert np.max(np.abs(coarse.sd - fine.sd)) < 1e-5
    assert np.median(np.abs(coarse.sd - fine.sd)) < 1e-7
    assert np.max(np.abs(coarse.mean - fine.mean)) < 2e-4


def test_log_marginal_is_right_far_in_the_tails():
    # A bench lane (N_M = 1e5) at α ten posterior SDs above its mean. Here the
    # inner rule's Newton search started next to s_hi, took 30 of its 32 steps
    # to leave it, then bisected away from the converged mode: log π came out
    # 0.8 off, which the interval's log interpolant carried into the bulk
    # (2e-5 on an interval end). Reference: plain sums on fine uniform grids in
    # (t, s), where the integrand is a smooth peak well inside both ranges.
    c = counts(
        n_pos=391, n_phi=1000, n_tp=377, n_pos_paired=391, n_tn=583,
        n_neg_paired=609, m_pos=41114, n_m=100000,
    )  # fmt: skip
    lane = jax.tree.map(lambda x: x[0], c)
    alphas = np.array([0.398, 0.4586, 0.466])
    ours = np.asarray(alpha_log_marginal(jax.numpy.asarray(alphas), lane, "full", QuadratureRule()))

    def brute(alpha):
        t = np.linspace(0.40, 0.43, 1201)[:, None]
        beta = 1.0 - alpha
        s_lo, s_hi = np.maximum(-t / beta, (t - 1) / alpha), np.minimum((1 - t) / beta, t / alpha)
        s = s_lo + (s_hi - s_lo) * np.linspace(0, 1, 4001)[1:-1]
        rho, eta = t + beta * s, 1.0 - t + alpha * s
        log_f = 377 * np.log(rho) + 14 * np.log1p(-rho) + 583 * np.log(eta) + 26 * np.log1p(-eta)
        log_inner = logsumexp(log_f, axis=1) + np.log((s_hi - s_lo)[:, 0] / 4000)
        log_like = 41114 * np.log(t[:, 0]) + (100000 - 41114) * np.log1p(-t[:, 0])
        log_prior = 391 * np.log(alpha) + 609 * np.log1p(-alpha)
        return log_prior + logsumexp(log_like + log_inner)

    reference = np.array([brute(a) for a in alphas])
    np.testing.assert_allclose(ours[1:] - ours[0], reference[1:] - reference[0], atol=1e-5)


def test_the_mixture_reference_matches_a_beta_moment_expansion():
    # Where every metric rating is positive, Λ(α) = E[(αρ + (1 − α)(1 − η))^N]
    # expands in Beta moments, leaving a 1-D integral over α: a check of
    # helpers.mixture_posterior by other means (its j axis is then empty).
    a_r, b_r, a_e, b_e, n, n_phi = 910, 1, 415, 212, 105, 20
    k = np.arange(n + 1)
    log_terms = (
        gammaln(n + 1)
        - gammaln(k + 1)
        - gammaln(n - k + 1)
        + betaln(a_r + k, b_r)
        + betaln(a_e, b_e + n - k)
    )

    def moment(j):
        def density(a):
            log_lambda = logsumexp(log_terms + k * np.log(a) + (n - k) * np.log1p(-a))
            return a**j * np.exp(n_phi * np.log(a) + log_lambda)

        points = [0.5, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995]
        return integrate.quad(density, 0, 1, points=points, epsrel=1e-13, limit=1000)[0]

    z = moment(0)
    c = counts(
        n_pos=n_phi,
        n_phi=n_phi,
        n_tp=a_r - 1,
        n_pos_paired=a_r + b_r - 2,
        n_tn=a_e - 1,
        n_neg_paired=a_e + b_e - 2,
        m_pos=n,
        n_m=n,
    )
    mean, sd = mixture_posterior(c, 0).moments()
    assert mean == pytest.approx(moment(1) / z, abs=1e-10)
    assert sd == pytest.approx(np.sqrt(moment(2) / z - (moment(1) / z) ** 2), abs=1e-10)


def test_full_kind_matches_the_exact_beta_mixture():
    # An independent reference (helpers.mixture_posterior): the binomial
    # expansion of the likelihood makes the α-marginal a finite mixture of
    # Betas, exact for N_M up to a few thousand. Drawn lanes, then edges: every
    # metric rating positive (ρ ~ Beta(910, 1), a likelihood flat towards
    # t = 1; 8e-5 off in SD before the t rule split its tails), no adequate
    # human rating (P = 0), no inadequate one (N_ρη − P = 0), no human or
    # paired rating at all, no positive metric rating, and ρ + η < 1.
    drawn = full_model_lanes(150, seed=3)
    keep = drawn.n_m <= 1500
    edges = counts(
        n_pos=[20, 0, 100, 0, 30, 40],
        n_phi=[20, 100, 100, 0, 100, 100],
        n_tp=[909, 0, 90, 0, 25, 8],
        n_pos_paired=[909, 0, 100, 0, 30, 40],
        n_tn=[414, 60, 0, 0, 60, 18],
        n_neg_paired=[625, 100, 0, 0, 70, 60],
        m_pos=[105, 12, 50, 300, 0, 700],
        n_m=[105, 400, 1000, 500, 200, 1000],
    )
    c = jax.tree.map(lambda x, y: np.concatenate([x[keep], y]), drawn, edges)
    s = summarize(c, "full")
    exact = exact_summaries(c, 0.95)
    assert len(exact) >= 50
    error = np.abs(np.stack([s.mean, s.sd, s.ci_low, s.ci_high], axis=1) - exact)
    # Measured here: worst 5.6e-6 in SD (N_ρη − P = 0), 6.9e-6 at an interval
    # end. scripts/quadrature_accuracy.py measures 457 drawn lanes: worst
    # 1.7e-6 in SD, 5.7e-6 in the mean, 6.4e-6 at an interval end.
    assert error[:, :2].max() < 1e-5
    assert error[:, 2:].max() < 3e-5


def test_exact_paired_rule_on_lanes_with_few_paired_ratings():
    # Lanes with N_ρη ≤ 15 (paired_rule_is_exact), N_ρη = 0 and P = 0 or
    # N_ρη − P = 0 among them, against the exact Beta mixture and against the
    # default rule, which searches each s-peak and its window.
    r = np.random.default_rng(11)
    n = 40
    n_phi = r.integers(0, 16, n).astype(float)
    n_phi[:4] = [0, 15, 5, 7]
    n_pos = r.binomial(n_phi.astype(int), r.uniform(0.05, 0.95, n)).astype(float)
    n_pos[2:4] = [0, 7]
    n_m = r.integers(20, 1500, n).astype(float)
    c = counts(
        n_pos=n_pos,
        n_phi=n_phi,
        n_tp=r.binomial(n_pos.astype(int), 0.85),
        n_pos_paired=n_pos,
        n_tn=r.binomial((n_phi - n_pos).astype(int), 0.75),
        n_neg_paired=n_phi - n_pos,
        m_pos=r.binomial(n_m.astype(int), r.uniform(0.02, 0.98, n)),
        n_m=n_m,
    )
    assert paired_rule_is_exact(c).all()
    fast = np.stack(per_lane(posterior_summary, c, "full", exact_paired=True), axis=1)
    default = summarize(c, "full")
    default = np.stack([default.mean, default.sd, default.ci_low, default.ci_high], axis=1)
    exact = exact_summaries(c, 0.95)
    # Measured here: 2.6e-7 in the moments and 9.6e-7 at an interval end to
    # the exact sum, the same for both rules (the α rule's error); 5e-14
    # between the two rules.
    assert np.abs(fast - exact)[:, :2].max() < 1e-5
    assert np.abs(fast - exact)[:, 2:].max() < 3e-5
    np.testing.assert_allclose(fast, default, atol=1e-9)
    # Larger paired sets are not exact with it.
    assert not paired_rule_is_exact(counts(n_pos_paired=8, n_neg_paired=8, n_m=100)).any()


def test_hermite_t_rule_is_trusted_only_where_it_is_right():
    # Drawn lanes across the ranges, and two edges: N_ρη = 1 with
    # both paired ratings agreeing (the (ρ, η) density is not zero at the
    # corner (1, 1), so the t-integrand has kinks) and a lane with 3 metric
    # ratings (a flat likelihood, t-integrand far from its stand-in).
    drawn = full_model_lanes(150, seed=3)
    edges = counts(
        n_pos=[2794, 30],
        n_phi=[4173, 100],
        n_tp=[1, 25],
        n_pos_paired=[1, 30],
        n_tn=[0, 60],
        n_neg_paired=[0, 70],
        m_pos=[9, 1],
        n_m=[12, 3],
    )
    c = jax.tree.map(lambda x, y: np.concatenate([x, y]), drawn, edges)
    s, ok = per_lane(hermite_t_summary, c)
    ours = np.stack(s, axis=1)
    default = summarize(c, "full")
    default = np.stack([default.mean, default.sd, default.ci_low, default.ci_high], axis=1)
    small = np.asarray(c.n_m) <= 1500
    exact = exact_summaries(jax.tree.map(lambda x: x[small], c), 0.95)
    # Measured here: 99 of 142 accepted; on them within 5.4e-8 of the default
    # rule in the mean, 4e-9 in SD and 5.5e-8 at an interval end, and within
    # 3.7e-7 of the exact sum (61 lanes). scripts/quadrature_accuracy.py
    # measures 1005 drawn lanes.
    assert 0.6 * len(ok) < ok.sum() < len(ok)
    gap = np.abs(ours - default)[ok]
    assert gap[:, :2].max() < 1e-6 and gap[:, 2:].max() < 1e-5
    error = np.abs(ours[small] - exact)[ok[small]]
    assert error[:, :2].max() < 1e-5 and error[:, 2:].max() < 3e-5
    # The kinked lane: its two t rules agree, but both are off, so the
    # counts alone rule it out; the flat likelihood fails the check.
    kinked, flat = len(ok) - 2, len(ok) - 1
    assert not hermite_t_allows(jax.tree.map(lambda x: x[kinked], c))
    assert np.abs(ours[kinked] - exact[-2]).max() > 1e-5
    assert hermite_t_allows(jax.tree.map(lambda x: x[flat], c)) and not ok[flat]
    assert not ok[kinked]


@pytest.mark.parametrize(
    "log_f, lo, hi, centre, scale, drop_at",
    [
        # A Gaussian: falls by 30 at 7.75 SDs either side.
        (lambda x: -0.5 * x**2, -50.0, 50.0, 0.0, 1.0, (-np.sqrt(60.0), np.sqrt(60.0))),
        # A mode at the left end, an exponential fall (scale 1/|slope|).
        (lambda x: -2.0 * x, 0.0, 100.0, 0.0, 0.5, (0.0, 15.0)),
        # A skewed Beta kernel x^50 (1 − x)^2 on [0, 1], mode 50/52.
        (lambda x: 50 * jnp.log(x) + 2 * jnp.log1p(-x), 0.0, 1.0, 50 / 52, None, None),
    ],
)
def test_tangent_window_holds_the_mass_and_not_much_more(log_f, lo, hi, centre, scale, drop_at):
    # The s rule's window: from one probe a side and the slope there, edges
    # beyond which a log-concave integrand has fallen by 30, but not far
    # beyond (12 Gauss–Legendre nodes on a half-Gaussian lose 7e-8 over 8
    # SDs and 2.4e-6 over 10). Measured: 1.03 times the exact half-width for
    # the Gaussian, 1.0 for the exponential, 1.28 on the Beta's long side,
    # where the ladder of probes it replaced reached 1.76.
    f = lambda x: log_f(jnp.asarray(x))  # noqa: E731
    slope = jax.vmap(jax.grad(f))
    if scale is None:
        scale = 1.0 / np.sqrt(-jax.grad(jax.grad(f))(centre))
    edges = np.asarray(_tangent_window(f, lambda x: (slope(x), None), centre, scale, lo, hi, 30.0))
    grid = np.linspace(lo, hi, 200_001)[1:-1]
    fall = f(centre) - f(grid)
    inside = grid[fall <= 30.0]  # where the integrand is above e^−30 of its peak
    exact = (inside.min(), inside.max())
    if drop_at is not None:
        np.testing.assert_allclose(exact, drop_at, atol=1e-3 * (hi - lo))
    step = 2.0 * (grid[1] - grid[0])
    for edge, end, side in zip(edges, exact, (-1.0, 1.0), strict=True):
        width = side * (end - centre)
        assert width - step <= side * (edge - centre) <= 1.3 * width + step


@pytest.mark.skipif(not SHARED_PUBLISHED_EPS.exists(), reason="no shared/ beside this clone")
def test_the_copied_published_table_is_the_shared_one():
    assert COPIED_PUBLISHED_EPS.read_bytes() == SHARED_PUBLISHED_EPS.read_bytes()
