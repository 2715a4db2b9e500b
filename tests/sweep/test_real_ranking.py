"""scripts/real_ranking.py's parts: a split keeps exactly n human verdicts and every battle and
judge verdict; its Kendall's τ is SciPy's; its summaries are the splits' means."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from scipy.stats import kendalltau

from binmetric_sweep.kernels.arena.cells import NONE
from binmetric_sweep.sweep.compare.battles import read_battles

from .helpers import REPO

spec = importlib.util.spec_from_file_location("real_ranking", REPO / "scripts" / "real_ranking.py")
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)


@pytest.fixture(scope="module")
def battles():
    return read_battles(REPO / "examples" / "arena_battles.csv")


def _per_battle(cells):
    rows = np.column_stack([cells.a, cells.b, cells.judged])
    return np.repeat(rows, cells.count, axis=0)


def test_a_split_keeps_n_human_verdicts_and_every_battle(battles):
    split = script.Split(battles.cells)
    cells = split.draw(np.random.default_rng(0), 500)
    assert cells.battles == battles.cells.battles
    assert int(cells.count[cells.human != NONE].sum()) == 500
    # The same battles with the same judges' verdicts, in any order.
    got, want = (_per_battle(c) for c in (cells, battles.cells))
    np.testing.assert_array_equal(
        np.unique(got, axis=0, return_counts=True)[1],
        np.unique(want, axis=0, return_counts=True)[1],
    )
    # Each kept verdict is one the file holds for that battle's (a, b, judges) pattern.
    full = {
        tuple(r)
        for r in np.column_stack(
            [battles.cells.a, battles.cells.b, battles.cells.human, battles.cells.judged]
        )
    }
    kept = cells.human != NONE
    rows = np.column_stack([cells.a, cells.b, cells.human, cells.judged])[kept]
    assert all(tuple(r) in full for r in rows)


def test_kendall_tau_is_scipy_s_and_ranking_puts_the_highest_first():
    rng = np.random.default_rng(3)
    for _ in range(20):
        x, y = rng.permutation(12) + 1, rng.permutation(12) + 1
        assert script.kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    np.testing.assert_array_equal(script.ranking(np.array([0.2, 0.9, 0.5])), [3, 1, 2])


def test_the_summary_is_the_splits_means():
    rows = [
        {"method": "m", "judge": "j", "n": 5, "interval": "set", "held": h, "size": z, "tau": t}
        for h, z, t in ((1.0, 2.0, 0.5), (0.5, 4.0, 0.7))
    ]
    (s,) = script.summarise(rows)
    assert (s["held"], s["all_held"], s["size"], s["tau"]) == (0.75, 0.5, 3.0, pytest.approx(0.6))
    assert s["held_se"] == pytest.approx(np.std([1.0, 0.5], ddof=1) / np.sqrt(2))
