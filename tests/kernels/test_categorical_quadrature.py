"""The exact posterior of θ with the judges' confusion known (kernels/categorical/quadrature.py):
the Dirichlet without judge-only items, a brute-force grid on the simplex written apart, the
binary model's known-ρη rule at K = 2, and NUTS.

Every lane goes through the sweep's own compiled program (64-lane calls, the last padded), so
that each layout compiles once a session, for the sweep and the tests alike."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout
from binmetric_sweep.kernels.categorical.families import preference_confusion
from binmetric_sweep.kernels.categorical.nuts import sample_fits
from binmetric_sweep.kernels.categorical.quadrature import (
    SimplexRule,
    applies,
    posterior_summary,
)
from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop, sampler_key, summarize_draws
from binmetric_sweep.kernels.quadrature import posterior_summary as binary_summary
from binmetric_sweep.sweep.execution.programs import (
    KNOWN_CONFUSION_RULE,
    categorical_quadrature_program,
)
from binmetric_sweep.sweep.execution.schedule import schedule_for
from tests.kernels.helpers import per_lane

PREFERENCE = Layout((0.0, 0.5, 1.0))
SCALE = Layout((1.0, 2.0, 3.0))
BINARY = Layout((0.0, 1.0))
#: K = 2 with the values reversed and stretched: θ = 3π_0 + π_1 = 3 − 2α.
FLIPPED = Layout((3.0, 1.0))
JUDGE = np.asarray(preference_confusion(0.7, 1 / 3, 0.3))
#: A judge that says "tie" mostly for ties and almost never for A: with the judge-only
#: verdicts below it puts a cliff into θ's marginal where the simplex's section cuts the
#: likelihood's peak (the case that set the outer window's bisection).
CLIFF = np.array([[0.492, 0.108, 0.400], [0.060, 0.613, 0.327], [0.645, 0.006, 0.349]])


def lane(h, m, confusion) -> CategoricalCounts:
    k, outcomes = np.shape(confusion)
    return CategoricalCounts(
        human=np.asarray(h, float),
        paired=np.zeros((k, outcomes)),
        judged=np.asarray(m, float),
        confusion=np.asarray(confusion, float),
        known=np.asarray(True),
    )


def summaries(lanes, layout) -> np.ndarray:
    """``(4, B)`` mean, SD, interval ends (95 %) of each lane, by the sweep's program."""
    counts = jax.tree.map(lambda *x: np.stack(x), *lanes)
    size = schedule_for("cpu").call_lanes(KNOWN_CONFUSION_RULE)
    program = categorical_quadrature_program(layout, 0.95)
    b, out = len(lanes), []
    for start in range(0, b, size):
        index = np.resize(np.arange(start, min(start + size, b)), size)
        summary = program(jax.tree.map(lambda x, i=index: x[i], counts))
        out.append(np.asarray(summary)[:, : min(size, b - start)])
    return np.concatenate(out, axis=1)


def dirichlet_moments(h, values):
    """Mean and SD of θ = vᵀπ under π ~ Dir(h + 1): E π = a/a₀, Cov π = (diag(a)/a₀ −
    aaᵀ/a₀²)/(a₀ + 1)."""
    a, v = np.asarray(h, float) + 1.0, np.asarray(values)
    mean = v @ a / a.sum()
    return mean, np.sqrt((v**2 @ a / a.sum() - mean**2) / (a.sum() + 1.0))


HUMAN_ONLY = [(0, 0, 0), (5, 0, 3), (30, 10, 60), (1000, 200, 3000), (0, 0, 40)]


@pytest.mark.parametrize("layout", [PREFERENCE, SCALE], ids=["preference", "scale"])
def test_without_judge_only_items_it_is_the_dirichlet(layout):
    """N_M = 0: π ~ Dir(h + 1). Mean and SD in closed form; each interval end has 2.5 % of
    10^6 Dirichlet draws of θ below or above it, within 4 binomial SEs (on three lanes)."""
    s = summaries([lane(h, (0, 0, 0), JUDGE) for h in HUMAN_ONLY], layout)
    rng = np.random.default_rng(11)
    for i, h in enumerate(HUMAN_ONLY):
        mean, sd = dirichlet_moments(h, layout.values)
        np.testing.assert_allclose(s[:2, i], [mean, sd], rtol=1e-8, atol=1e-12)
        if i % 2:
            continue  # Monte Carlo for every other lane: 10^6 draws each
        theta = rng.dirichlet(np.asarray(h, float) + 1.0, 10**6) @ np.asarray(layout.values)
        below = [np.mean(theta <= s[2, i]), np.mean(theta >= s[3, i])]
        assert np.all(np.abs(np.array(below) - 0.025) <= 4 * np.sqrt(0.025 * 0.975 / 1e6)), below


@pytest.mark.parametrize("layout", [BINARY, FLIPPED], ids=["binary", "flipped"])
def test_two_classes_without_judge_only_items_are_the_beta(layout):
    """K = 2, N_M = 0: α = π_1 ~ Beta(h_1 + 1, h_0 + 1), θ = v_0 + (v_1 − v_0)α; every
    number in closed form (scipy's Beta quantiles)."""
    humans = [(0, 0), (0, 7), (3, 9), (900, 100), (10**5, 3)]
    s = summaries([lane(h, (0, 0), np.eye(2)) for h in humans], layout)
    v0, v1 = layout.values
    for i, (n0, n1) in enumerate(humans):
        beta = stats.beta(n1 + 1.0, n0 + 1.0)
        ends = sorted(v0 + (v1 - v0) * beta.ppf([0.025, 0.975]))
        expected = [v0 + (v1 - v0) * beta.mean(), abs(v1 - v0) * beta.std(), *ends]
        np.testing.assert_allclose(s[:, i], expected, rtol=1e-8, atol=1e-12)


def brute_force(h, m, confusion, values, cells=500, zooms=3):
    """θ's mean, SD and central 95 % interval on a fine grid of the simplex (NumPy).

    The triangle is the image of the square (s, t) ∈ [0, 1]² under π = (s, (1 − s)t,
    (1 − s)(1 − t)), |J| = 1 − s. The log density is evaluated on midpoint grids that zoom
    in on the box where it is within 40 of its largest value, then on ``cells``² cells of
    that box with 2 × 2 Gauss nodes each (moments), in log-sum-exp. The CDF spreads each
    cell's mass evenly over the range of θ on the cell; its quantiles by bisection.
    """
    h, m, c, v = (np.asarray(x, float) for x in (h, m, confusion, values))

    def log_density(s, t):
        pi = np.stack([s, (1 - s) * t, (1 - s) * (1 - t)], axis=-1)
        with np.errstate(divide="ignore"):
            log_pi, log_p = np.log(pi), np.log(pi @ c)
        terms = np.where(h > 0, h * log_pi, 0.0).sum(-1) + np.where(m > 0, m * log_p, 0.0).sum(-1)
        return terms + np.log(1 - s)

    box = np.array([[0.0, 1.0], [0.0, 1.0]])
    for _ in range(zooms):
        edges = [np.linspace(lo, hi, 201) for lo, hi in box]
        mids = [0.5 * (e[1:] + e[:-1]) for e in edges]
        values_ = log_density(*np.meshgrid(*mids, indexing="ij"))
        keep = np.argwhere(values_ >= values_.max() - 40.0)
        lo, hi = keep.min(0), keep.max(0) + 1
        box = np.array(
            [
                [e[max(a - 1, 0)], e[min(b + 1, len(e) - 1)]]
                for e, a, b in zip(edges, lo, hi, strict=True)
            ]
        )
    y, w = np.polynomial.legendre.leggauss(2)
    edges = [np.linspace(lo, hi, cells + 1) for lo, hi in box]
    half = [0.5 * np.diff(e) for e in edges]
    nodes = [
        (0.5 * (e[1:] + e[:-1]))[:, None] + hh[:, None] * y
        for e, hh in zip(edges, half, strict=True)
    ]
    weights = [hh[:, None] * w for hh in half]
    s, t = np.meshgrid(nodes[0].ravel(), nodes[1].ravel(), indexing="ij")
    log_w = np.log(np.outer(weights[0].ravel(), weights[1].ravel()))
    log_mass = log_density(s, t) + log_w
    mass = np.exp(log_mass - logsumexp(log_mass))
    theta = v[0] * s + (1 - s) * (v[1] * t + v[2] * (1 - t))
    mean = np.sum(mass * theta)
    sd = np.sqrt(np.sum(mass * (theta - mean) ** 2))
    # Each cell's mass, and the range of θ over its corners (θ is bilinear in (s, t)).
    cell_mass = mass.reshape(cells, 2, cells, 2).sum(axis=(1, 3)).ravel()
    cs, ct = np.meshgrid(*edges, indexing="ij")
    corner = v[0] * cs + (1 - cs) * (v[1] * ct + v[2] * (1 - ct))
    quads = np.stack([corner[:-1, :-1], corner[1:, :-1], corner[:-1, 1:], corner[1:, 1:]])
    lo, hi = quads.min(0).ravel(), quads.max(0).ravel()

    def quantile(q):
        a, b = lo.min(), hi.max()
        for _ in range(60):
            x = 0.5 * (a + b)
            share = np.clip((x - lo) / np.maximum(hi - lo, 1e-300), 0.0, 1.0)
            a, b = (x, b) if np.sum(cell_mass * share) < q else (a, x)
        return 0.5 * (a + b)

    return np.array([mean, sd, quantile(0.025), quantile(0.975)])


GRID_CASES = [
    ((30, 10, 60), (30000, 20000, 50000), JUDGE),  # N_M = 10^5
    ((0, 0, 0), (300, 150, 550), JUDGE),  # no human verdicts
    ((0, 0, 0), (40000, 20000, 40000), JUDGE),  # neither, N_M = 10^5
    ((1, 5, 0), (2421, 5561, 4151), CLIFF),
    ((0, 100, 100), (20, 30, 50), JUDGE),  # the density on an edge of the simplex
]


@pytest.mark.parametrize("layout", [PREFERENCE, SCALE], ids=["preference", "scale"])
def test_it_agrees_with_a_brute_force_grid_on_the_simplex(layout):
    s = summaries([lane(*case) for case in GRID_CASES], layout)
    for i, case in enumerate(GRID_CASES):
        reference = brute_force(*case, layout.values)
        np.testing.assert_allclose(s[:2, i], reference[:2], rtol=1e-6, err_msg=str(case))
        np.testing.assert_allclose(s[2:, i], reference[2:], atol=1e-4, err_msg=str(case))


def binary_lanes():
    """Binary counts with ρ, η known, and the same campaigns as K = 2 categorical lanes."""
    cases = [  # n₊, N_Φ, m₊, N_M, ρ, η
        (30, 100, 600, 1000, 0.9, 0.8),
        (0, 0, 40_000, 100_000, 0.75, 0.95),
        (3, 10, 50_000, 100_000, 0.6, 0.55),
        (500, 1000, 80_000, 100_000, 0.95, 0.85),
        (1, 2, 7, 12, 0.7, 0.7),
    ]
    n_pos, n_phi, m_pos, n_m, rho, eta = (np.array(x, float) for x in zip(*cases, strict=True))
    zero = np.zeros(len(cases))
    binary = Counts(n_pos, n_phi, zero, zero, zero, zero, m_pos, n_m, rho, eta, zero == 0)
    lanes = [
        lane((f - p, p), (n - q, q), [[e, 1 - e], [1 - r, r]])
        for p, f, q, n, r, e in zip(n_pos, n_phi, m_pos, n_m, rho, eta, strict=True)
    ]
    return binary, lanes


def test_two_classes_are_the_binary_model_with_rho_and_eta_known():
    """K = 2 (one judge) is the binary model, ρ = C[1, 1] and η = C[0, 0] known: its
    quadrature of α (the "known" kind) gives the same numbers to 1e-8, and on values
    (3, 1) θ = 3 − 2α."""
    binary, lanes = binary_lanes()
    alpha = np.asarray(per_lane(binary_summary, binary, "known"))
    np.testing.assert_allclose(summaries(lanes, BINARY), alpha, rtol=0, atol=1e-8)
    mean, sd, low, high = alpha
    flipped = np.stack([3 - 2 * mean, 2 * sd, 3 - 2 * high, 3 - 2 * low])
    np.testing.assert_allclose(summaries(lanes, FLIPPED), flipped, rtol=0, atol=2e-8)


def test_two_classes_where_human_and_judge_disagree_match_a_fine_grid():
    """K = 2 lanes whose judge-only verdicts pull α to a bound against the human ones
    (4 × 10^6 grid points on the part of [0, 1] that holds the mass), by this rule and by
    the binary "known" rule (which was 7 % of the SD off on the last lane while it
    centred its window on the human ratings alone)."""
    cases = [  # n₊, N_Φ, m₊, N_M, ρ, η, and where the mass is
        (3, 10, 0, 100_000, 0.6, 0.55, 0.0, 0.002),
        (500, 1000, 99_000, 100_000, 0.99, 0.9, 0.95, 1.0),
        (3, 10, 44_000, 100_000, 0.6, 0.55, 0.0, 0.05),
    ]
    lanes = [
        lane((f - p, p), (n - q, q), [[e, 1 - e], [1 - r, r]]) for p, f, q, n, r, e, *_ in cases
    ]
    columns = list(zip(*cases, strict=True))[:6]
    n_pos, n_phi, m_pos, n_m, rho, eta = (np.array(x, float) for x in columns)
    zero = np.zeros(len(cases))
    binary = Counts(n_pos, n_phi, zero, zero, zero, zero, m_pos, n_m, rho, eta, zero == 0)
    rules = {"categorical": summaries(lanes, BINARY)}
    rules["binary"] = np.asarray(per_lane(binary_summary, binary, "known"))
    for i, (p, f, q, n, r, e, lo, hi) in enumerate(cases):
        a = np.linspace(lo, hi, 4_000_001)[1:-1]
        with np.errstate(divide="ignore"):
            log_post = (
                p * np.log(a)
                + (f - p) * np.log1p(-a)
                + q * np.log(a * r + (1 - a) * (1 - e))
                + (n - q) * np.log(a * (1 - r) + (1 - a) * e)
            )
        w = np.exp(log_post - logsumexp(log_post))
        mean = np.sum(w * a)
        cdf = np.cumsum(w)
        ends = a[np.searchsorted(cdf, [0.025, 0.975])]
        reference = [mean, np.sqrt(np.sum(w * (a - mean) ** 2)), *ends]
        for name, s in rules.items():
            message = f"{name} rule, {cases[i]}"
            np.testing.assert_allclose(s[:2, i], reference[:2], rtol=1e-7, err_msg=message)
            width = 2 * (hi - lo) / 4e6
            np.testing.assert_allclose(s[2:, i], reference[2:], atol=width, err_msg=message)


def test_it_refuses_layouts_it_cannot_integrate():
    assert applies(PREFERENCE) and applies(Layout((0.0, 0.0, 1.0))) and applies(FLIPPED)
    for layout in (Layout((1.0, 2.0, 3.0, 4.0)), Layout((2.0, 2.0, 2.0)), Layout((1.0,))):
        assert not applies(layout)
        with pytest.raises(ValueError, match="2 to 3 classes"):
            posterior_summary(lane((1,) * layout.classes, (1,) * 3, JUDGE), layout)


@pytest.mark.yardstick  # NUTS's compile for the known-C model and its chains: ~15 s
def test_nuts_with_the_confusion_known_agrees_with_it():
    """The sampler (kernels.categorical.nuts, C known) on lanes drawn from preference
    campaigns, N_M up to 10^5: its mean and SD within 4 of their MC SEs of the quadrature's."""
    lanes = [
        lane((20, 5, 25), (300, 150, 550), JUDGE),
        lane((0, 0, 0), (30000, 20000, 50000), JUDGE),
        lane((1, 5, 0), (2421, 5561, 4151), CLIFF),
    ]
    exact = summaries(lanes, PREFERENCE)
    counts = jax.tree.map(lambda *x: jnp.asarray(np.stack(x)), *lanes)
    settings = resolve_loop(NUTSSettings(chains=4, warmup=400, samples=1000), "cpu")
    keys = jax.vmap(lambda i: sampler_key(jax.random.fold_in(jax.random.key(5), i)))(
        jnp.arange(len(lanes))
    )
    run = jax.jit(lambda k, c: sample_fits(k, c, PREFERENCE, settings, False, known=True))
    nuts = summarize_draws(np.asarray(run(keys, counts).alpha), 0.95)
    # The cliff is hard for the sampler (R-hat 1.02, bulk ESS ~190 of 4000 draws, seed 5):
    # its error is what its ESS says, which the comparison below allows for.
    assert np.all(nuts.rhat < 1.05)
    np.testing.assert_array_less(np.abs(nuts.mean - exact[0]), 4 * nuts.sd / np.sqrt(nuts.ess))
    np.testing.assert_array_less(np.abs(nuts.sd - exact[1]), 4 * nuts.sd_mcse)


def drawn_lanes(b: int, k: int, seed: int) -> CategoricalCounts:
    """``(b,)`` lanes across a sweep's ranges: N_Φ up to 10^4 and N_M up to 10^7 (a fifth
    of each zero), judges from useless to near-perfect (a fifth with a zero in C)."""
    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.full(k, 0.7), b)
    accuracy = rng.uniform(0.0, 1.0, b)[:, None, None]
    c = accuracy * np.eye(k) + (1 - accuracy) * rng.dirichlet(np.ones(k), (b, k))
    c[rng.random(b) < 0.2, 0, -1] = 0.0
    c /= c.sum(-1, keepdims=True)
    n_phi = np.where(rng.random(b) < 0.2, 0, np.round(10 ** rng.uniform(0, 4, b))).astype(int)
    n_m = np.where(rng.random(b) < 0.2, 0, np.round(10 ** rng.uniform(0, 7, b))).astype(int)
    h = np.stack([rng.multinomial(n, p) for n, p in zip(n_phi, pi, strict=True)])
    m = np.stack([rng.multinomial(n, p @ q) for n, p, q in zip(n_m, pi, c, strict=True)])
    return CategoricalCounts(h * 1.0, np.zeros((b, k, k)), m * 1.0, c, np.ones(b, bool))


@pytest.mark.yardstick  # two compiles a layout, 512 lanes each: ~a minute
@pytest.mark.parametrize("values", [(0.0, 0.5, 1.0), (1.0, 2.0, 3.0), (0.0, 0.0, 1.0)])
def test_the_default_nodes_are_converged(values):
    """The module docstring's accuracy: the default rule against one with twice the nodes
    on 512 drawn lanes."""
    layout = Layout(values)
    counts = drawn_lanes(512, 3, 10 + int(10 * values[1]))
    finer = SimplexRule(x_nodes=48, u_nodes=40, mode_steps=40, edge_steps=16)

    def run(rule):
        fn = jax.jit(jax.vmap(lambda c: posterior_summary(c, layout, 0.95, rule)))
        return np.asarray(fn(counts))

    gap = np.abs(run(SimplexRule()) - run(finer)).max(axis=1)
    assert np.all(gap <= [1e-7, 1e-7, 1e-6, 1e-6]), gap
