"""The pair-by-pair posterior predictive check of Bradley–Terry (kernels/arena/predictive.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from binmetric_sweep.kernels.arena.cells import count_cells
from binmetric_sweep.kernels.arena.logdensity import arena_data, arena_shape
from binmetric_sweep.kernels.arena.posterior import SamplerSettings, sample_arena
from binmetric_sweep.kernels.arena.predictive import pair_outcomes, pair_predictive_check
from binmetric_sweep.kernels.arena.simulate import ArenaDesign, cells_of, draw_arena_counts

jax.config.update("jax_enable_x64", True)


def test_pair_outcomes_fold_the_sides():
    """Systems 0, 1, 2: 0 (side A) beats 1; 1 (side A) beats 0; 2 (side A) ties with 0;
    0 (side B) beats 2; a battle without a human verdict counts nowhere."""
    cells = count_cells(
        a=[0, 1, 2, 2, 1], b=[1, 0, 0, 0, 2], human=[2, 2, 1, 0, -1], judged=np.zeros((5, 0))
    )
    got = pair_outcomes(cells, 3)
    # pairs (0, 1), (0, 2), (1, 2); columns (i worse, tie, i better)
    np.testing.assert_array_equal(got, [[1, 0, 1], [0, 1, 1], [0, 0, 0]])


def test_a_pair_that_matches_its_pi_passes_and_one_that_does_not_fails():
    pairs = np.broadcast_to([[0.3, 0.2, 0.5], [0.3, 0.2, 0.5]], (2000, 2, 3))
    observed = np.array([[30.0, 20.0, 50.0], [60.0, 20.0, 20.0]])
    check = pair_predictive_check(pairs, observed, np.random.default_rng(0))
    assert check.p_value[0] > 0.3 and check.p_value[1] < 1e-3
    assert check.misfits.tolist() == [False, True]
    np.testing.assert_allclose(check.expected, [[30, 20, 50], [30, 20, 50]])
    with pytest.raises(ValueError, match="alpha"):
        pair_predictive_check(pairs, observed, np.random.default_rng(0), alpha=1.5)


def test_it_finds_the_intransitive_pair_and_passes_bradley_terry_s_own():
    """Human verdicts drawn from Bradley–Terry on 5 systems, then the same with the
    strongest and weakest systems' outcomes reversed (the weakest now wins that pair): that
    pair has the smallest p-value and is flagged (and, as the strengths bend towards it,
    some of its neighbours may be too)."""
    s = 5
    design = ArenaDesign(
        strengths=jnp.linspace(1.0, -1.0, s),
        log_nu=jnp.asarray(np.log(0.5)),
        battles=jnp.asarray(40.0 * (1.0 - np.eye(s))),
        human_share=jnp.asarray(1.0),
        confusions=jnp.asarray(np.eye(3)[None]),
        copy=jnp.zeros(1),
    )
    counts = np.asarray(draw_arena_counts(jax.random.key(0), design))
    reversed_ = counts.copy()
    reversed_[0, s - 1] = counts[0, s - 1, ::-1]
    reversed_[s - 1, 0] = counts[s - 1, 0, ::-1]
    settings = SamplerSettings(chains=2, warmup=300, samples=500)
    shape = arena_shape(s, 0)
    flagged, smallest = [], []
    for k, c in enumerate((counts, reversed_)):
        cells = cells_of(c)
        draws = sample_arena(jax.random.key(k + 1), arena_data(cells, s, ()), shape, settings)
        check = pair_predictive_check(
            draws.pairs, pair_outcomes(cells, s), np.random.default_rng(k)
        )
        flagged.append(np.flatnonzero(check.misfits).tolist())
        smallest.append(int(np.argmin(check.p_value)))
    reversed_pair = s - 2  # (0, 4), the last of system 0's pairs
    assert flagged[0] == [] and reversed_pair in flagged[1] and smallest[1] == reversed_pair
