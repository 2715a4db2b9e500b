"""The arena's posterior (kernels/arena): its density against a battle-by-battle sum, its
NUTS draws against exact and independent references, and the rank summaries.

References: the Davidson probabilities as MODEL.md writes them (λ_i / (λ_i + λ_j +
ν√(λ_iλ_j))); a likelihood summed battle by battle in plain Python; for two systems and
the human verdicts alone, the posterior of (d, log ν) on a fine grid (exact to the grid);
with judges, the pairs model of one pair seen from one side is the categorical model of
three classes, whose posterior the separately written Gibbs sampler of tests/kernels/gibbs.py
draws.
"""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pytest

from binmetric_sweep.kernels.arena.cells import NONE, count_cells
from binmetric_sweep.kernels.arena.logdensity import (
    LOG_NU_SD,
    STRENGTH_SD,
    arena_data,
    arena_shape,
    davidson_log_probabilities,
    log_likelihood,
    sum_to_zero,
    unpack,
)
from binmetric_sweep.kernels.arena.posterior import (
    SamplerSettings,
    rank_draws,
    rank_intervals,
    sample_arena,
    simultaneous_rank_sets,
)

from .gibbs import gibbs_theta

jax.config.update("jax_enable_x64", True)
SETTINGS = SamplerSettings(chains=4, warmup=400, samples=1500)


def test_davidson_probabilities_are_model_md_s():
    lam_a, lam_b, nu = math.exp(0.7), math.exp(-0.2), 0.4
    root = nu * math.sqrt(lam_a * lam_b)
    denominator = lam_a + lam_b + root
    want = [lam_b / denominator, root / denominator, lam_a / denominator]
    got = np.exp(np.asarray(davidson_log_probabilities(np.array(0.9), np.log(nu))))
    assert np.allclose(got, want, rtol=1e-12)


def _battles(rng, systems, n, judges, human_share):
    a = rng.integers(0, systems, n)
    b = (a + rng.integers(1, systems, n)) % systems
    human = np.where(rng.random(n) < human_share, rng.integers(0, 3, n), NONE)
    judged = rng.integers(0, 3, (n, judges))
    judged[rng.random((n, judges)) < 0.1] = NONE
    return a, b, human, judged


@pytest.mark.parametrize(
    ("independent", "pairs"), [(True, False), (False, False), (True, True), (False, True)]
)
def test_the_likelihood_is_the_battle_by_battle_sum(independent, pairs):
    """Σ over battles of log P(verdicts), written out with loops over the truth and the missing
    verdicts, at a random position: the cells' vectorised sum is the same number."""
    rng = np.random.default_rng(3)
    systems, judges = 4, 2
    a, b, human, judged = _battles(rng, systems, 60, judges, 0.4)
    shape = arena_shape(systems, judges, independent, pairs)
    position = rng.normal(size=shape.size)
    parameters = unpack(position, shape)
    got = float(
        log_likelihood(position, arena_data(count_cells(a, b, human, judged), systems), shape)
    )

    c = np.exp(np.asarray(parameters.log_confusion))

    def truth(i, j):  # P over (B better, tie, A better) of a battle of i (side A) against j
        if not pairs:
            s = np.asarray(parameters.strengths)
            return np.exp(np.asarray(davidson_log_probabilities(s[i] - s[j], parameters.log_nu)))
        low, high = min(i, j), max(i, j)
        index = list(itertools.combinations(range(systems), 2)).index((low, high))
        p = np.exp(np.asarray(parameters.log_pairs))[index]
        return p if i < j else p[::-1]

    def judged_given(y, verdicts):
        total = 0.0
        options = [range(3) if v == NONE else [v] for v in verdicts]
        for filled in itertools.product(*options):
            if independent:
                total += math.prod(c[k, y, v] for k, v in enumerate(filled))
            else:
                total += c[y, filled[0] * 3 + filled[1]]
        return total

    want = 0.0
    for i, j, h, verdicts in zip(a, b, human, judged, strict=True):
        p = truth(i, j)
        ys = range(3) if h == NONE else [h]
        want += math.log(sum(p[y] * judged_given(y, verdicts) for y in ys))
    assert got == pytest.approx(want, rel=1e-11)


@pytest.mark.parametrize("systems", [2, 3, 7])
def test_the_strength_coordinates_are_an_orthonormal_basis_of_the_sum_zero_plane(systems):
    """s = Q u: Q's columns (the images of the unit vectors) are orthonormal and sum to zero,
    so u ~ N(0, σ²I) is s ~ N(0, σ²(I − 11ᵀ/S)), raw N(0, σ²) strengths centred."""
    q = np.stack([np.asarray(sum_to_zero(e)) for e in np.eye(systems - 1)], axis=1)
    assert q.shape == (systems, systems - 1)
    assert np.allclose(q.T @ q, np.eye(systems - 1), atol=1e-14)
    assert np.allclose(q.sum(axis=0), 0.0, atol=1e-14)
    assert np.allclose(q @ q.T, np.eye(systems) - 1.0 / systems, atol=1e-14)


def test_two_systems_from_human_verdicts_match_the_exact_grid():
    """S = 2, no judge: d = s_0 − s_1 = √2·u has prior N(0, 2σ²); the posterior of (d,
    log ν) on a 600 × 600 grid is exact to far below the Monte Carlo error."""
    counts = {0: 30, 1: 25, 2: 45}  # B better, tie, A better (system 0 on side A)
    human = np.repeat(list(counts), list(counts.values()))
    cells = count_cells(np.zeros(len(human)), np.ones(len(human)), human, np.zeros((len(human), 0)))
    draws = sample_arena(jax.random.key(5), arena_data(cells, 2, ()), arena_shape(2, 0), SETTINGS)
    d = draws.strengths[:, 0] - draws.strengths[:, 1]
    log_nu = draws.log_nu

    grid_d = np.linspace(-3, 4, 600)
    grid_nu = np.linspace(-4, 3, 600)
    dd, nn = np.meshgrid(grid_d, grid_nu, indexing="ij")
    log_p = np.asarray(davidson_log_probabilities(dd, nn))
    log_post = (
        sum(n * log_p[..., k] for k, n in counts.items())
        - 0.25 * (dd / STRENGTH_SD) ** 2
        - 0.5 * (nn / LOG_NU_SD) ** 2
    )
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    for name, x, grid in (("d", d, dd), ("log nu", log_nu, nn)):
        mean = (w * grid).sum()
        sd = math.sqrt((w * (grid - mean) ** 2).sum())
        mcse = sd / math.sqrt(draws.ess_min)
        assert abs(x.mean() - mean) < 4 * mcse, name
        assert x.std() == pytest.approx(sd, rel=0.08), name
    assert draws.rhat_max < 1.01 and draws.divergences == 0


@pytest.mark.parametrize(
    ("judges", "independent"), [(1, True), (2, True), (2, False)], ids=["one", "two", "joint"]
)
def test_one_pair_seen_from_one_side_is_the_categorical_model(judges, independent):
    """Two systems, system 0 always on side A, the pairs model: π over (B better, tie, A
    better) with Dirichlet(1) priors and the judges' confusions is MODEL.md's categorical
    model; θ = π_A + ½π_tie, system 0's win rate against the field, agrees with the Gibbs
    sampler's within Monte Carlo error (human verdicts on 150 battles, judges on 1,500)."""
    rng = np.random.default_rng(10 + judges)
    n, labelled = 1500, 150
    truth = rng.choice(3, size=n, p=[0.3, 0.2, 0.5])
    confusion = np.array([[0.6, 0.1, 0.3], [0.1, 0.5, 0.4], [0.05, 0.1, 0.85]])
    judged = np.stack(
        [np.array([rng.choice(3, p=confusion[y]) for y in truth]) for _ in range(judges)], axis=1
    )
    if judges == 2:  # the second judge repeats the first half the time: correlated errors
        copy = rng.random(n) < 0.5
        judged[copy, 1] = judged[copy, 0]
    human = np.where(np.arange(n) < labelled, truth, NONE)
    cells = count_cells(np.zeros(n), np.ones(n), human, judged)
    shape = arena_shape(2, judges, independent, pairs=True)
    draws = sample_arena(jax.random.key(judges), arena_data(cells, 2), shape, SETTINGS)
    theta = draws.win_rates[:, 0]

    outcomes = 3**judges
    joint = judged @ (3 ** np.arange(judges)[::-1])
    h = np.bincount(truth[:labelled], minlength=3)
    t = np.zeros((3, outcomes))
    np.add.at(t, (truth[:labelled], joint[:labelled]), 1)
    m = np.bincount(joint[labelled:], minlength=outcomes)
    reference = gibbs_theta(
        h[None], t[None], m[None], (0.0, 0.5, 1.0), judges, independent, iterations=20000
    ).reshape(-1)
    mcse = theta.std() / math.sqrt(draws.ess_min)
    assert abs(theta.mean() - reference.mean()) < 4 * math.hypot(mcse, reference.std() / 200)
    assert theta.std() == pytest.approx(reference.std(), rel=0.08)
    assert draws.rhat_max < 1.02


def test_ranks_and_their_intervals():
    strengths = np.array([[0.5, -0.1, 0.2], [0.1, 0.3, -0.4]])
    assert rank_draws(strengths).tolist() == [[1, 3, 2], [2, 1, 3]]
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(4000, 6)) * 0.6 + np.linspace(2, -2, 6)
    ranks = rank_draws(draws)
    low, high = rank_intervals(ranks, 0.9)
    sim_low, sim_high = simultaneous_rank_sets(ranks, 0.9)
    inside = np.all((ranks >= sim_low) & (ranks <= sim_high), axis=1).mean()
    marginal = np.all((ranks >= low) & (ranks <= high), axis=1).mean()
    assert inside >= 0.9 > marginal  # each interval alone holds 90 %, all at once fewer
    assert (sim_low <= low).all() and (sim_high >= high).all()
    for i in range(6):  # each marginal interval holds ≥ 90 % of its draws
        assert np.mean((ranks[:, i] >= low[i]) & (ranks[:, i] <= high[i])) >= 0.9
