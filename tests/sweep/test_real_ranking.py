"""scripts/real_ranking.py's parts: a split keeps exactly n human verdicts and every battle and
judge verdict, and is the same whichever splits ran before; a store resumes only under its own
settings and holds each split whole; its Kendall's τ is SciPy's; its summaries are the splits'
means."""

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


def test_a_split_is_the_same_whichever_splits_were_drawn_before(battles):
    split = script.Split(battles.cells)
    first = script.draw_split(split, 67, 500, 3)
    for k in range(3):
        script.draw_split(split, 67, 500, k)
    again = script.draw_split(split, 67, 500, 3)
    other = script.draw_split(split, 67, 500, 4)
    for x, y in zip(first, again, strict=True):
        np.testing.assert_array_equal(x, y)
    assert any(x.shape != y.shape or np.any(x != y) for x, y in zip(first, other, strict=True))


def test_a_store_resumes_only_under_its_own_settings(tmp_path):
    path = REPO / "examples" / "arena_battles.csv"
    settings = script.Settings.of(path, 67, 0.95)
    script.open_store(tmp_path / "store", settings)
    script.open_store(tmp_path / "store", settings)  # the same: resumes
    with pytest.raises(SystemExit, match=r"other settings \(seed, level\)"):
        script.open_store(tmp_path / "store", script.Settings.of(path, 1, 0.9))


def test_a_split_s_rows_are_written_whole_and_read_back(battles, tmp_path):
    s = len(battles.systems)
    reference = script.ranking(script.ppr_win_rates(battles.cells, s, None).theta)
    key = script.jax.random.key(0)
    context = script.Context(s, ["gpt-4", "gpt-3.5"], 0.95, key, [], reference, reference)
    cells = script.draw_split(script.Split(battles.cells), 67, 500, 0)
    result = script.split_rows(cells, 500, 0, context)
    # ppr and the released code's covariance, each with no judge and with each judge.
    assert [(r["method"], r["judge"]) for r in result["rows"]] == [
        (m, j) for j in ("none", "gpt-4", "gpt-3.5") for m in ("ppr", "ppr_released")
    ]
    assert all(0.0 <= r["held"] <= 1.0 and 1.0 <= r["size"] <= s for r in result["rows"])
    script.write_record(result, tmp_path, "split", script.split_path(tmp_path, 500, 0))
    assert script.stored_splits(tmp_path) == [result]
