"""The planner: cost against brute force, targets met exactly, saturation, published ε, CLI."""

from __future__ import annotations

import json
import math
import re

import jax
import numpy as np
import pandas as pd
import pytest

from binmetric_sweep import sweep
from binmetric_sweep.kernels.counts import Design
from binmetric_sweep.kernels.summaries import epsilon
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.fits import fit_lanes
from binmetric_sweep.sweep.execution.schedule import schedule_for
from binmetric_sweep.sweep.plan import (
    PlanSpec,
    exact_eps,
    load_plan_grid,
    plan_grid,
    problems,
    relaxed_sd,
    simulate_tests,
    solve_relaxed,
)
from binmetric_sweep.sweep.spec.lanes import lane_counts, lane_keys
from binmetric_sweep.sweep.spec.rating_model import BINARY
from tests.kernels.helpers import published_table

# Exact evaluations on CPU cost one compiled chunk of 64 lanes each; tests use that size.
CHUNK = 64


def spec(**fields) -> PlanSpec:
    return PlanSpec(**{"cost_metric": 0.002, **fields})


# Twenty scenarios: the shared and a separate paired set (the 3-D posterior: three, as
# its exact fits are the dear ones (docs/performance.md); scripts/bench_plan.py checks more against
# brute force) and known ρ, η (metric-only plans, a useless metric with ρ + η = 1, dear
# metrics).
SCENARIOS = [
    spec(alpha=0.6, rho=0.8, eta=0.8, eps=0.1, power=0.8),
    spec(alpha=0.3, rho=0.9, eta=0.7, eps=0.02, power=0.9, gamma=0.01, n_rho_eta="known"),
    spec(alpha=0.5, rho=0.95, eta=0.95, eps=0.1, power=0.8, cost_metric=0.05),
    spec(alpha=0.6, rho=0.7, eta=0.9, eps=0.12, power=0.5, n_rho_eta=150),
    spec(alpha=0.6, rho=0.8, eta=0.8, eps=0.03, power=0.8, n_rho_eta="known"),
    spec(alpha=0.6, rho=0.8, eta=0.8, eps=0.02, power=0.9, n_rho_eta="known", cost_metric=0.05),
    spec(alpha=0.2, rho=0.9, eta=0.9, eps=0.02, power=0.8, n_rho_eta="known"),
    spec(alpha=0.5, rho=0.6, eta=0.6, eps=0.05, power=0.8, n_rho_eta="known", cost_metric=0.2),
    spec(alpha=0.5, rho=0.55, eta=0.45, eps=0.05, power=0.8, n_rho_eta="known"),
    spec(alpha=0.8, rho=0.95, eta=0.7, eps=0.01, power=0.5, n_rho_eta="known", cost_metric=0.001),
    spec(alpha=0.9, rho=0.99, eta=0.9, eps=0.04, power=0.95, n_rho_eta="known"),
    spec(alpha=0.1, rho=0.7, eta=0.99, eps=0.03, power=0.8, gamma=0.01, n_rho_eta="known"),
    spec(alpha=0.4, rho=0.75, eta=0.85, eps=0.06, power=0.8, n_rho_eta="known", cost_metric=0.5),
    spec(alpha=0.6, rho=0.9, eta=0.6, eps=0.015, power=0.8, n_rho_eta="known", cost_human=3.0),
    spec(alpha=0.35, rho=0.8, eta=0.8, eps=0.08, power=0.9, n_rho_eta="known", cost_metric=0.1),
    spec(alpha=0.7, rho=0.65, eta=0.75, eps=0.025, power=0.8, n_rho_eta="known"),
    spec(alpha=0.5, rho=0.9, eta=0.9, eps=0.005, power=0.8, n_rho_eta="known", cost_metric=1e-4),
    spec(alpha=0.25, rho=0.6, eta=0.95, eps=0.04, power=0.7, n_rho_eta="known", cost_metric=0.02),
    spec(alpha=0.55, rho=0.85, eta=0.8, eps=0.07, power=0.8, n_rho_eta="known", cost_metric=0.3),
    spec(alpha=0.45, rho=0.7, eta=0.7, eps=0.035, power=0.6, n_rho_eta="known", gamma=0.1),
]


def reference_eps(specs, index, n_phi, n_m) -> np.ndarray:
    """ε recomputed from scratch: rounded expected counts → quadrature → epsilon().

    Lanes are padded to a power of two (≥ 64) for the steps that compile per shape.
    """
    k = len(index)
    size = max(64, 1 << (k - 1).bit_length())

    def pad(v):
        v = np.asarray(v)
        return np.concatenate([v, np.repeat(v[:1], size - k)])

    index, n_phi, n_m = pad(index), pad(n_phi), pad(n_m)
    s = [specs[i] for i in index]
    alpha = np.array([x.alpha for x in s])
    designs = Design(
        alpha=alpha,
        rho=np.array([x.rho for x in s]),
        eta=np.array([x.eta for x in s]),
        n_phi=np.asarray(n_phi, float),
        n_rho_eta=np.array([x.paired.n_pair for x in s], float),
        psi=alpha,
        n_m=np.asarray(n_m, float),
        shared_paired=np.array([x.paired.shared for x in s]),
        rho_eta_known=np.array([x.paired.known for x in s]),
    )
    keys = lane_keys(1, np.zeros((size, 2), np.uint32), np.zeros(size, np.uint32))
    counts = jax.tree.map(lambda v: v[:k], lane_counts(designs, keys, "expected", BINARY))
    schedule = schedule_for(chunk_size=CHUNK)
    fits = fit_lanes(counts, keys[:k], "quadrature", schedule=schedule).fits
    gamma, power = np.array([x.gamma for x in s]), np.array([x.power for x in s])
    eps = np.asarray(epsilon(pad(fits.post_sd), gamma, power))
    return np.where((n_phi == 0) & (n_m == 0), 1.0, eps)[:k]


def test_a_sweep_and_the_planner_make_a_configuration_s_design_alike():
    """One builder, :func:`sweep.spec.lanes.lane_designs`: a sweep's configuration and the plan
    scenario with the same rates, sizes and paired design (shared, a separate set of 150
    items, known) give the same lanes' Design, field for field and dtype for dtype; a lane
    both shared and known is refused."""
    from binmetric_sweep.kernels.paired import kinds_of_flags
    from binmetric_sweep.sweep.plan.exact import scenario_designs
    from binmetric_sweep.sweep.spec.config import load_sweep
    from binmetric_sweep.sweep.spec.grid import expand_grid
    from binmetric_sweep.sweep.spec.lanes import lane_designs

    paired = ["n_phi", "[150]", "known"]
    blocks = "".join(
        f"  - {{alpha: [0.6], rho: [0.8], eta: [0.7], n_phi: [200], n_rho_eta: {n}, n_m: [900]}}\n"
        for n in paired
    )
    text = f"name: designs\ncounts: sampled\nreplicates: 2\nmethod: quadrature\ngrid:\n{blocks}"
    configurations = expand_grid(load_sweep(text))
    assert len(configurations) == 3
    from_sweep = BINARY.lane_designs(configurations, 2)  # what a shard builds
    scenarios = [
        spec(alpha=0.6, rho=0.8, eta=0.7, eps=0.05, n_rho_eta=n) for n in ("shared", 150, "known")
    ]
    index = np.repeat(np.arange(3), 2)
    from_plan = scenario_designs(problems(scenarios), index, np.full(6, 200), np.full(6, 900))
    for name, a, b in zip(Design._fields, from_sweep, from_plan, strict=True):
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert from_plan.n_rho_eta.tolist() == [200.0] * 2 + [150.0] * 2 + [0.0] * 2
    with pytest.raises(ValueError, match="both shared and known"):
        lane_designs(0.5, 0.8, 0.8, [10], [10], paired=kinds_of_flags(True, True))
    with pytest.raises(TypeError, match="PairedKind"):
        lane_designs(0.5, 0.8, 0.8, [10], [10], paired="shared")


def least_by_bisection(specs, index, n_m, lo, hi, axis=0) -> np.ndarray:
    """For each lane, the least size on ``axis`` in (lo, hi] meeting the target (bisection;
    ``hi`` is checked and doubled until it meets it)."""
    index, n_m = np.asarray(index), np.asarray(n_m)
    lo, hi = np.array(lo, np.int64), np.array(hi, np.int64)
    target = np.array([specs[i].eps for i in index])

    def ok(lanes, size):
        x, y = (size, n_m[lanes]) if axis == 0 else (n_m[lanes], size)
        return reference_eps(specs, index[lanes], x, y) <= target[lanes]

    todo = np.arange(len(index))
    while len(todo):  # a lane missing its target at N = 10^9 has none (-1)
        good = ok(todo, hi[todo])
        bad = todo[~good]
        lo[bad], hi[bad] = (
            hi[bad],
            np.where(hi[bad] < 10**9, np.minimum(2 * hi[bad] + 1, 10**9), -1),
        )
        todo = bad[hi[bad] > 0]
    while (open_ := np.flatnonzero((hi - lo > 1) & (hi > 0))).size:
        mid = (lo[open_] + hi[open_]) // 2
        met = ok(open_, mid)
        hi[open_] = np.where(met, mid, hi[open_])
        lo[open_] = np.where(met, lo[open_], mid)
    return hi


def brute_force(specs) -> np.ndarray:
    """Cheapest cost over N_M ∈ {0} ∪ a coarse grid 2^4…2^24 and then a fine grid
    2^(k/10) around the coarse best (k = −10…10), each with its least N_Φ by bisection
    (brackets from the neighbouring coarse points, since N_Φ falls as N_M grows); where
    N_Φ = 0 is allowed, also N_Φ = 0 with its least N_M."""
    n = len(specs)
    rows = np.arange(n)
    alone = least_by_bisection(specs, rows, np.zeros(n, int), -np.ones(n), np.full(n, 64))
    coarse = np.concatenate([[0], 2 ** np.arange(4, 25)])
    index, y = np.repeat(rows, len(coarse)), np.tile(coarse, n)
    x = least_by_bisection(specs, index, y, -np.ones(len(y)), alone[index])
    costs = {i: [] for i in rows}
    for i, a, b in zip(index, x, y, strict=True):
        if a >= 0:
            costs[i].append((specs[i].cost(a, b), a, b))
    fine_index, fine_y, lo, hi = [], [], [], []
    for i in rows:
        grid = sorted(costs[i], key=lambda t: t[2])
        best = min(range(len(grid)), key=lambda k: grid[k][0])
        centre = max(grid[best][2], 16)
        for value in np.unique(np.round(centre * 2.0 ** (np.arange(-10, 11) / 10.0))):
            above = [g for g in grid if g[2] >= value]
            below = [g for g in grid if g[2] <= value]
            fine_index.append(i)
            fine_y.append(int(value))
            lo.append(above[0][1] - 1 if above else -1)
            hi.append(below[-1][1])
    fine_index = np.array(fine_index)
    fine_x = least_by_bisection(specs, fine_index, np.array(fine_y), lo, hi)
    for i, a, b in zip(fine_index, fine_x, fine_y, strict=True):
        if a >= 0:
            costs[i].append((specs[i].cost(a, b), a, b))
    free = [i for i in rows if specs[i].n_rho_eta != "shared"]
    if free:
        y0 = least_by_bisection(
            specs,
            free,
            np.zeros(len(free), int),
            -np.ones(len(free)),
            np.full(len(free), 10**9),
            axis=1,
        )
        for i, b in zip(free, y0, strict=True):
            if b >= 0:
                costs[i].append((specs[i].cost(0, b), 0, b))
    return np.array([min(costs[i])[0] for i in rows])


def test_relaxed_sd_tracks_the_exact_posterior_sd():
    specs = [
        spec(alpha=a, rho=r, eta=e, eps=0.05)
        for a, r, e in [(0.6, 0.8, 0.8), (0.3, 0.95, 0.9), (0.8, 0.6, 0.9), (0.5, 0.55, 0.55)]
    ]
    n_phi = np.array([60, 400, 3000, 20000])
    n_m = np.array([500, 20000, 10**6, 3000])
    index = np.arange(4)
    p = problems(specs)
    exact = exact_eps(p, index, n_phi, n_m, chunk_size=CHUNK) / (math.sqrt(2) * p.z)
    approx = relaxed_sd(n_phi.astype(float), n_m.astype(float), p, np)
    np.testing.assert_allclose(approx, exact, rtol=0.02)
    one = problems(specs[:1])
    assert np.all(np.diff(relaxed_sd(100.0, 10.0 ** np.arange(6), one, np)) < 0)
    assert np.all(np.diff(relaxed_sd(10.0 ** np.arange(6), 100.0, one, np)) < 0)


def test_relaxed_solver_finds_the_scan_optimum_of_the_surrogate():
    """The optax augmented Lagrangian against a dense scan along the constraint."""
    specs = SCENARIOS[:4] + [
        spec(alpha=0.6, rho=0.8, eta=0.8, budget=2000.0),
        spec(alpha=0.3, rho=0.95, eta=0.9, budget=300.0, n_rho_eta=50),
    ]
    p = problems(specs)
    got = solve_relaxed(p)
    for r, s in enumerate(specs):
        q = p._replace(**{f: getattr(p, f)[r] for f in p._fields})
        n_m = np.exp(np.linspace(np.log(1e-2), np.log(1e9), 40001))
        if s.eps is not None:  # least N_Φ on the constraint for each N_M, by bisection
            lo, hi = np.zeros_like(n_m), np.full_like(n_m, 1e9)
            for _ in range(100):
                mid = 0.5 * (lo + hi)
                meets = np.log(relaxed_sd(mid, n_m, q, np)) <= q.log_sd_target
                lo, hi = np.where(meets, lo, mid), np.where(meets, mid, hi)
            best = np.min(s.cost(np.maximum(hi, 1.0 if s.n_rho_eta == "shared" else 0.0), n_m))
            cost = s.cost(got.n_phi[r], got.n_m[r])
            assert got.constraint[r] < 1e-3
            assert cost <= best * 1.001 + 1e-9, (r, cost, best)
        else:  # the budget line: smallest σ
            n_phi = (s.budget - s.fixed_cost() - s.cost_metric * n_m) / s.cost_human
            keep = n_phi > 0
            best = np.min(np.log(relaxed_sd(n_phi[keep], n_m[keep], q, np)))
            value = np.log(relaxed_sd(got.n_phi[r], got.n_m[r], q, np))
            assert got.constraint[r] < 1e-4
            assert value <= best + 1e-3, (r, value, best)


# A weak metric whose target lies below what the budget can buy, and the same without budget.
WEAK = spec(alpha=0.6, rho=0.55, eta=0.55, eps=0.04, power=0.8, budget=1500.0)
WEAK_FREE = WEAK.model_copy(update={"budget": None})
PUBLISHED = spec(alpha=0.6, rho=0.7, eta=0.7, eps=0.5, power=0.5, gamma=0.05)


@pytest.fixture(scope="module")
def published_cell() -> float:
    """ε at power ½ of the published cell N_Φ = 1000, N_M = 10000 (ρ = η = 0.7)."""
    p = problems([PUBLISHED])
    return float(exact_eps(p, [0], [1000], [10000], chunk_size=CHUNK)[0])


@pytest.fixture(scope="module")
def planned(published_cell):
    """Every scenario planned in one batched call (as ``sweep plan --grid`` does)."""
    cell = PUBLISHED.model_copy(update={"eps": published_cell})
    plans = plan_grid([*SCENARIOS, WEAK, WEAK_FREE, cell], replicates=0, chunk_size=CHUNK)
    return plans


def test_plans_cost_within_1pct_of_brute_force_and_meet_their_targets(planned):
    n = len(SCENARIOS)
    planned = planned[:n]
    x = np.array([pl.n_phi for pl in planned])
    y = np.array([pl.n_m for pl in planned])
    cost = np.array([s.cost(a, b) for s, a, b in zip(SCENARIOS, x, y, strict=True)])
    np.testing.assert_allclose([pl.cost for pl in planned], cost, rtol=1e-12)
    recomputed = reference_eps(SCENARIOS, np.arange(n), x, y)
    targets = np.array([s.eps for s in SCENARIOS])
    assert np.all(recomputed <= targets), np.flatnonzero(recomputed > targets)
    np.testing.assert_allclose([pl.eps for pl in planned], recomputed, rtol=1e-12)
    assert all(pl.reachable for pl in planned)
    reference = brute_force(SCENARIOS)
    ratio = cost / reference
    assert np.all(ratio <= 1.01), list(zip(np.round(ratio, 4), cost, reference, strict=True))
    # A useless metric (ρ + η = 1) buys nothing: human ratings alone.
    assert planned[8].n_m == 0 and planned[8].n_phi == planned[8].n_phi_alone
    # A strong metric with known ρ, η makes human ratings unnecessary.
    assert planned[16].n_phi == 0 and planned[16].n_m > 0


def test_a_saturated_metric_is_reported_unreachable_not_answered_with_a_huge_n_m(planned):
    capped, free = planned[len(SCENARIOS)], planned[len(SCENARIOS) + 1]
    assert not capped.reachable
    assert "no amount of metric ratings" in capped.message
    assert f"N_Φ alone would need {free.n_phi_alone:,}" in capped.message
    # Even unlimited metric ratings with every human rating the budget buys stay above target.
    assert capped.eps_floor > WEAK.eps and capped.eps > WEAK.eps
    assert capped.cost <= WEAK.budget and capped.n_m <= 20 * capped.n_phi
    # Without the budget the answer barely uses the metric: it saturates.
    assert free.reachable and free.cost > WEAK.budget and free.n_m <= 20 * free.n_phi
    assert free.n_phi_unlimited >= 0.97 * free.n_phi_alone


def test_power_one_half_gives_the_published_eps(planned, published_cell):
    table = published_table()
    table = table[(table.rho == 0.7) & ((table.n_phi > 0) | (table.n_m > 0))]
    got = exact_eps(
        problems([PUBLISHED]), np.zeros(len(table), int), table.n_phi, table.n_m, chunk_size=CHUNK
    )
    assert np.max(np.abs(got - table.eps)) <= 0.002
    # Planned for the ε of a published cell, the plan costs no more than that cell (+1 %).
    pl = planned[-1]
    assert pl.eps <= published_cell and pl.cost <= 1.01 * (1000 + 0.002 * 10000)


def test_frontier_is_the_least_n_phi_for_each_n_m():
    scenario = SCENARIOS[13]
    (pl,) = plan_grid([scenario], replicates=0, frontier=True, chunk_size=CHUNK)
    points = pd.DataFrame(pl.frontier)
    assert points.n_m.iloc[0] == 0 and points.n_phi.iloc[0] == pl.n_phi_alone
    assert len(points) >= 6 and points.n_m.is_monotonic_increasing
    assert np.all(points.eps <= scenario.eps) and points.cost.min() >= pl.cost
    assert pl.n_phi_unlimited <= points.n_phi.min()
    # One step below each point misses the target (it is the least N_Φ).
    inner = points[points.n_phi > 0]
    below = reference_eps([scenario], np.zeros(len(inner), int), inner.n_phi - 1, inner.n_m)
    assert len(inner) >= 4 and np.all(below > scenario.eps)


def test_simulated_power_and_type_one_error_match_the_promise():
    specs = [
        spec(alpha=0.6, rho=0.8, eta=0.8, eps=0.03, power=0.8, n_rho_eta="known"),
        spec(alpha=0.3, rho=0.9, eta=0.85, eps=0.05, power=0.5, n_rho_eta="known", gamma=0.1),
    ]
    plans = plan_grid(specs, replicates=600, seed=3, chunk_size=CHUNK)
    for s, pl in zip(specs, plans, strict=True):
        assert pl.replicates == 600 and 0 < pl.empirical_power_mcse < 0.03
        assert abs(pl.empirical_power - s.power) <= 4 * pl.empirical_power_mcse + 0.02
        assert abs(pl.type1_rate - s.gamma) <= 4 * pl.type1_mcse + 0.01
    # Each campaign is keyed by (seed, scenario, system, replicate), not by batch position.
    sizes = ([pl.n_phi for pl in plans][::-1], [pl.n_m for pl in plans][::-1])
    swapped = simulate_tests(specs[::-1], *sizes, [0.05, 0.03], 600, seed=3)
    assert swapped[0][1] == plans[0].empirical_power and swapped[2][1] == plans[0].type1_rate
    other = simulate_tests(specs[::-1], *sizes, [0.05, 0.03], 600, seed=4)
    assert (other[0][1], other[2][1]) != (plans[0].empirical_power, plans[0].type1_rate)


def test_python_api_and_validation():
    pl = sweep.plan(0.6, 0.8, 0.8, eps=0.1, cost_metric=0.002, replicates=0, chunk_size=CHUNK)
    assert isinstance(pl, sweep.Plan) and pl.eps <= 0.1 and pl.frontier
    for bad, field in [
        (dict(alpha=1.2), "alpha"),
        (dict(eps=None), "eps"),
        (dict(n_rho_eta="sharde"), "n_rho_eta"),
        (dict(n_rho_eta=0), "n_rho_eta"),
        (dict(cost_metric=0.0), "cost_metric"),
        (dict(budget=100.0, n_rho_eta=200), "budget"),
    ]:
        fields = dict(alpha=0.6, rho=0.8, eta=0.8, eps=0.1, cost_metric=0.002) | bad
        with pytest.raises(SweepError, match=field) as err:
            sweep.plan(**fields, replicates=0)
        assert "\n" not in str(err.value)


def test_cli_plan_json_grid_and_errors(tmp_path, capsys):
    png = tmp_path / "frontier.png"
    argv = [
        "plan",
        "--alpha",
        "0.6",
        "--rho",
        "0.8",
        "--eta",
        "0.8",
        "--eps",
        "0.1",
        "--power",
        "0.8",
        "--cost-human",
        "1",
        "--cost-metric",
        "0.002",
        "--replicates",
        "10",
        "--json",
        "-o",
        str(png),
    ]
    assert main(argv) == 0
    answer = json.loads(capsys.readouterr().out)
    for key in (
        "n_phi",
        "n_m",
        "cost",
        "eps",
        "empirical_power",
        "empirical_power_mcse",
        "type1_rate",
        "reachable",
    ):
        assert key in answer
    assert answer["eps"] <= 0.1 and answer["reachable"] and png.stat().st_size > 1000
    grid = tmp_path / "plan.yaml"
    grid.write_text(
        "- {alpha: 0.6, rho: 0.8, eta: 0.8, eps: 0.03, cost_metric: 0.002, n_rho_eta: known}\n"
        "- {alpha: 0.6, rho: 0.8, eta: 0.8, budget: 150, cost_metric: 0.002,"
        " n_rho_eta: known}\n"
    )
    assert main(["plan", "--grid", str(grid), "--replicates", "0"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()
    assert len(rows) == 4 and rows[1].split()[-1] == "yes"
    assert rows[-1].startswith("N_phi, N_m and cost are per system")
    assert main(["plan", "--grid", str(grid), "--replicates", "0", "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [json.loads(line)["budget"] for line in lines] == [None, 150]
    grid.write_text(
        "- {alpha: 0.6, rho: 0.8, eta: 0.8, eps: 0.1, cost_metric: 0.002}\n"
        "- {alpha: 0.6, rho: 0.8, eta: 0.8, eps: 0.1, cost_metric: 0.002, rh0: 1}\n"
    )
    point = ["plan", "--alpha", "0.6", "--rho", "0.8", "--eta", "0.8"]
    for bad, field in [
        (["plan", "--grid", str(grid)], "scenarios[1]"),
        (["plan", "--grid", str(grid), "--alpha", "0.5"], "--grid"),
        ([*point, "--eps", "0.1"], "--cost-metric"),
        (["plan", "--alpha", "x"], "--alpha"),
        ([*point, "--eps", "2", "--cost-metric", "0.1"], "eps"),
        ([*point, "--eps", "0.1", "--cost-metric", "0.1", "-o", str(tmp_path / "f.nope")], "-o"),
        ([*point, "--eps", "0.1", "--cost-metric", "0.1", "--replicates", "-1"], "--replicates"),
    ]:
        assert main(bad) == 2, bad
        err = capsys.readouterr().err.strip()
        assert err.startswith("sweep: error: ") and "\n" not in err and field in err, err


def test_a_budget_it_cannot_buy_is_answered_at_the_eps_it_reaches(capsys):
    """Unreachable: the plan shown is the least ε within the budget, simulated at that ε, and
    the exit status is 3 as text and as JSON; a budget alone is planned, exit 0."""
    point = ["plan", "--alpha", "0.6", "--rho", "0.8", "--eta", "0.8", "--cost-metric", "0.002"]
    assert main([*point, "--eps", "0.02", "--budget", "3000", "--replicates", "20"]) == 3
    text = capsys.readouterr().out
    reached = re.search(r"ε = (0\.\d{5}) \(γ", text).group(1)
    assert float(reached) > 0.02 and "UNREACHABLE" in text
    assert f"The budget reaches ε = {reached} at best" in text
    assert f"simulated (20 campaigns, ε = {reached}," in text
    assert main([*point, "--eps", "0.02", "--budget", "3000", "--replicates", "20", "--json"]) == 3
    answer = json.loads(capsys.readouterr().out)
    assert answer["reachable"] is False and answer["eps_tested"] == answer["eps"] > 0.02
    assert main([*point, "--budget", "3000", "--replicates", "0", "--json"]) == 0
    budget_only = json.loads(capsys.readouterr().out)
    assert budget_only["reachable"] and budget_only["cost"] <= 3000
    assert budget_only["eps"] == pytest.approx(answer["eps"])


def test_a_plan_prints_plain_numbers():
    pl = sweep.plan(0.6, 0.8, 0.8, eps=0.1, cost_metric=0.002, replicates=0, chunk_size=CHUNK)
    text = repr(pl)
    assert "np.float64" not in text and "np.int64" not in text
    assert f"eps={pl.eps!r}" in text and type(pl.eps) is float and type(pl.sd) is float


def test_a_plan_says_its_sizes_are_per_system(capsys):
    """The plan's first line, the --help (description and options) and the grid's table say
    that N_Φ, N_M and the cost are one system's, and what a metric rating's price is in."""
    pl = sweep.plan(0.6, 0.8, 0.8, eps=0.1, cost_metric=0.002, replicates=0, chunk_size=CHUNK)
    first = pl.lines()[0]
    assert first.startswith(f"plan per system: N_Φ = {pl.n_phi:,} human + N_M = {pl.n_m:,}")
    assert f"cost {pl.cost:,.2f} (two systems {2 * pl.cost:,.2f})" in first
    assert "per system" in (sweep.Plan.__doc__ or "")
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for needle in (
        "Sizes and costs are per system",
        "comparing two systems costs twice the cost shown",
        "agreement = αρ + (1 − α)η, so an 80 % agreement is many (ρ, η)",
        "--cost-metric C price of one metric rating (a judge's label of one output), > 0, in "
        "units of one human rating",
        "--budget B most a campaign may cost per system",
        "--pilot FILE one system's pilot ratings",
    ):
        assert needle in text, needle


def test_a_typo_in_a_plan_grid_names_the_unknown_key_not_a_missing_one():
    grid = "- {alpha: 0.6, rho: 0.8, eta: 0.8, eps: 0.03, cost_metirc: 0.01}\n"
    with pytest.raises(SweepError) as err:
        load_plan_grid(grid)
    assert str(err.value) == (
        "scenarios[0]: unknown key 'cost_metirc' (did you mean cost_metric?); allowed keys: "
        "alpha, rho, eta, eps, budget, gamma, power, cost_human, cost_metric, n_rho_eta"
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (dict(rho=1.2), "rho: 1.2 is out of range; allowed: [0, 1]"),
        (dict(alpha=0.0), "alpha: 0.0 is out of range; allowed: (0, 1)"),
        (dict(eps="x"), "eps: 'x' is not a number; allowed: (0, 1)"),
        (dict(budget=float("inf")), "budget: inf is not a finite number; allowed: > 0"),
        (dict(eta=True), "eta: True is not a number"),
        (dict(eps=None), "eps, budget: give a target difference eps, a budget, or both"),
        (dict(estimator="all"), "estimator: 'all' plans several estimators; plan_estimators"),
        (dict(estimator="mle"), "estimator: 'mle' is not an estimator; allowed: one of bayes"),
        (
            dict(estimator="ppi", n_rho_eta="known"),
            "estimator: ppi gives no plan here: no paired set (rho, eta known)",
        ),
    ],
)
def test_the_api_refuses_in_its_own_terms(bad, message):
    """What the CLI says of a flag, the API says of its argument (not pydantic's words)."""
    fields = dict(alpha=0.6, rho=0.8, eta=0.8, eps=0.1, cost_metric=0.002) | bad
    with pytest.raises(SweepError) as err:
        sweep.plan(**fields, replicates=0)
    assert str(err.value).startswith(message), str(err.value)


def test_plan_returns_one_plan_for_any_one_estimator_and_plan_estimators_typed_rows():
    """``plan`` gives a :class:`Plan` for a classical estimator too (its closed-form plan;
    no JAX here, nothing simulated); ``plan_estimators`` gives typed rows."""
    from binmetric_sweep.sweep.plan import EstimatorPlan, plan_estimators
    from binmetric_sweep.sweep.plan.classical import classical_plan

    scenario = dict(alpha=0.6, rho=0.8, eta=0.8, eps=0.02, cost_metric=0.002)
    pl = sweep.plan(**scenario, estimator="ppi_pp", replicates=0)
    found = classical_plan("ppi_pp", PlanSpec(**scenario))
    assert isinstance(pl, sweep.Plan) and pl.estimator == "ppi_pp"
    assert (pl.n_phi, pl.n_m, pl.cost, pl.eps) == (found.n_phi, found.n_m, found.cost, found.eps)
    assert pl.n_phi_alone == classical_plan("human_only", PlanSpec(**scenario)).n_phi
    assert pl.lines()[0].startswith("plan per system (ppi_pp): ") and not pl.holds
    assert pl.as_dict()["estimator"] == "ppi_pp" and pl.as_dict()["pilot"] is None
    rows = plan_estimators(scenario | dict(n_rho_eta="known"), ["human_only", "ppi"], replicates=0)
    assert all(isinstance(r, EstimatorPlan) for r in rows)
    assert rows[0].n_phi > 0 and rows[1].reason == "no paired set (rho, eta known)"
    assert not any(r.best for r in rows)  # nothing simulated, so no promise is seen to hold
