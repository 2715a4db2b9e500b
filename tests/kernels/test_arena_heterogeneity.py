"""A judge's confusion differing between systems (kernels/arena/heterogeneity.py): χ²'s
survival function and the G statistic against scipy (a test-only reference) and a table
worked by hand, Holm against its definition, the type-I rate over simulated arenas with one
shared confusion, and the flag where one system's battles get another.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from binmetric_sweep.kernels.arena.cells import NONE, count_cells
from binmetric_sweep.kernels.arena.heterogeneity import (
    chi2_sf,
    g_statistic,
    group_confusions,
    holm,
    judge_heterogeneity,
    system_tables,
    williams_correction,
)

#: A judge with GPT-3.5's habit of saying "A": rows truth (B better, tie, A better),
#: columns its verdict in the same order.
SHARED = np.array([[0.55, 0.10, 0.35], [0.20, 0.20, 0.60], [0.05, 0.10, 0.85]])
#: One that says "tie" far more often.
TIE_HAPPY = np.array([[0.40, 0.30, 0.30], [0.10, 0.60, 0.30], [0.05, 0.30, 0.65]])
#: A judge favouring the system whichever side it is on: its rows when it is on A, on B.
FAVOURS_ON_A = np.array([[0.35, 0.10, 0.55], [0.10, 0.15, 0.75], [0.02, 0.05, 0.93]])
FAVOURS_ON_B = np.array([[0.75, 0.10, 0.15], [0.45, 0.20, 0.35], [0.15, 0.10, 0.75]])


def _classes(rng, p: np.ndarray) -> np.ndarray:
    """One class per row of ``(n, 3)`` probabilities."""
    return (rng.random(len(p))[:, None] >= np.cumsum(p, axis=1)[:, :2]).sum(axis=1)


def simulated_cells(rng, systems=5, battles=500, human_share=0.6, confusion=None):
    """Battles among ``systems`` (random pairs and sides), the truth by Bradley–Terry–Davidson
    (strengths evenly from 1 to −1, ν = 1), a human verdict on a share, one judge whose
    confusion row for each battle ``confusion(a, b)`` gives ``(n, 3, 3)`` (SHARED by default)."""
    a = rng.integers(0, systems, battles)
    b = (a + rng.integers(1, systems, battles)) % systems
    s = np.linspace(1.0, -1.0, systems)
    d = s[a] - s[b]
    pi = np.stack([np.exp(-d / 2), np.ones_like(d), np.exp(d / 2)], axis=1)
    truth = _classes(rng, pi / pi.sum(axis=1, keepdims=True))
    rows = np.broadcast_to(SHARED, (battles, 3, 3)) if confusion is None else confusion(a, b)
    judged = _classes(rng, rows[np.arange(battles), truth])
    human = np.where(rng.random(battles) < human_share, truth, NONE)
    return count_cells(a, b, human, judged[:, None])


def test_chi2_survival_is_scipys_to_rounding():
    x = np.array([0.0, 1e-8, 0.3, 1.0, 2.5, 7.0, 19.9, 60.0, 200.0, 600.0])
    for df in range(1, 31):
        got = chi2_sf(x, df)
        want = stats.chi2.sf(x, df)
        assert np.allclose(got, want, rtol=1e-11, atol=0), df
    assert np.isnan(chi2_sf(3.0, 0))


def test_g_statistic_of_a_table_worked_by_hand():
    """One stratum, groups × verdicts [[10, 5, 5], [4, 8, 8]]: row sums 20, 20, column sums
    14, 13, 13, n = 40, E = [[7, 6.5, 6.5]] × 2; G = 2 Σ O log(O/E), df = 2."""
    table = np.array([[[10, 5, 5], [4, 8, 8]]])
    e = np.array([[7, 6.5, 6.5], [7, 6.5, 6.5]])
    want = 2 * np.sum(table[0] * np.log(table[0] / e))
    (g,), (df,) = g_statistic(table)
    assert g == pytest.approx(want, rel=1e-12) and df == 2
    # 2·(10 ln 10/7 + 2·5 ln 5/6.5 + 4 ln 4/7 + 2·8 ln 8/6.5)
    #   = 2·(3.5667 − 2.6236 − 2.2385 + 3.3222)
    assert g == pytest.approx(4.0537, abs=1e-4)
    reference = stats.chi2_contingency(table[0], correction=False, lambda_="log-likelihood")
    assert g == pytest.approx(reference.statistic, rel=1e-12)
    # Williams: q = 1 + (40·(1/20 + 1/20) − 1)(40·(1/14 + 2/13) − 1)/(6·40·2) = 1.0500687.
    assert williams_correction(table)[0] == pytest.approx(1.0500687, abs=1e-7)


def test_g_statistic_sums_strata_and_drops_what_is_empty():
    """Three strata of 3 groups × 3 verdicts: scipy's G of each stratum; an empty group or
    a verdict never given adds no degree of freedom, an empty stratum none."""
    rng = np.random.default_rng(1)
    table = rng.integers(0, 30, (3, 3, 3))
    table[1, 2] = 0  # stratum 1: group 2 empty → 1 × 2 df
    table[2, :, 0] = 0  # stratum 2: verdict 0 never given → 2 × 1 df
    g, df = g_statistic(table)
    for y in range(3):
        kept = table[y][table[y].sum(axis=1) > 0][:, table[y].sum(axis=0) > 0]
        want = stats.chi2_contingency(kept, correction=False, lambda_="log-likelihood")[0]
        assert g[y] == pytest.approx(want, rel=1e-12)
    assert list(df) == [4, 2, 2]
    assert np.all(g_statistic(np.zeros((3, 3, 3)))[1] == 0)
    assert np.all(williams_correction(np.zeros((3, 3, 3))) == 1)


def test_holm_against_its_definition():
    rng = np.random.default_rng(2)
    for _ in range(50):
        p = rng.random(7) ** 3
        p[rng.random(7) < 0.2] = np.nan
        got = holm(p[None])[0]
        tested = np.flatnonzero(~np.isnan(p))
        m = len(tested)
        ordered = sorted(tested, key=lambda i: p[i])
        for rank, i in enumerate(ordered):
            want = max(min(1.0, (m - r) * p[ordered[r]]) for r in range(rank + 1))
            assert got[i] == pytest.approx(want, rel=1e-12)
        assert np.all(np.isnan(got[np.isnan(p)]))


def test_tables_split_each_system_s_battles_by_side():
    rng = np.random.default_rng(3)
    cells = simulated_cells(rng, systems=4, battles=300)
    tables = system_tables(cells, 4, 0)
    seen = cells.human != NONE
    assert np.all(tables.sum(axis=(1, 2, 3)) == cells.count[seen].sum())
    for s in range(4):
        on_a = cells.count[seen & (cells.a == s)].sum()
        on_b = cells.count[seen & (cells.b == s)].sum()
        assert tables[s, 0].sum() == on_a and tables[s, 1].sum() == on_b
        # System s on side A, human "A better", judge "tie", counted by hand.
        hand = cells.count[
            seen & (cells.a == s) & (cells.human == 2) & (cells.judged[:, 0] == 1)
        ].sum()
        assert tables[s, 0, 2, 1] == hand


def test_one_shared_confusion_rejects_at_about_the_level():
    """300 simulated arenas (5 systems, 500 battles, 60 % with a human verdict: cells of a
    few battles), one confusion for all: each system's p < 0.05 in about 5 % of the 1,500
    tests (binomial SE 0.6 %; G without Williams's correction rejects 7–9 % here), and Holm
    flags some system in at most about 5 % of the arenas."""
    rng = np.random.default_rng(11)
    rejected, flagged, tests = 0, 0, 0
    for _ in range(300):
        result = judge_heterogeneity(simulated_cells(rng), 5)
        assert np.all(result.df <= 12)
        rejected += int((result.p_value < 0.05).sum())
        tests += result.p_value.size
        flagged += int(result.differs.any())
    assert 0.03 <= rejected / tests <= 0.07
    assert flagged / 300 <= 0.09


@pytest.mark.parametrize("kind", ["another confusion", "favours it"])
def test_a_system_whose_battles_get_another_confusion_is_flagged(kind):
    """System 0's battles judged with TIE_HAPPY, or by a judge favouring system 0 on either
    side: system 0 is flagged and has the smallest p-value."""

    def confusion(a, b):
        rows = np.repeat(SHARED[None], len(a), axis=0)
        if kind == "another confusion":
            rows[(a == 0) | (b == 0)] = TIE_HAPPY
        else:
            rows[a == 0], rows[b == 0] = FAVOURS_ON_A, FAVOURS_ON_B
        return rows

    rng = np.random.default_rng(12)
    result = judge_heterogeneity(simulated_cells(rng, 6, 3000, 0.5, confusion), 6)
    assert result.differs[0, 0]
    assert np.nanargmin(result.p_value[0]) == 0
    assert result.p_holm[0, 0] < 1e-6
    # What the test saw: system 0's groups near their confusions, the rest near SHARED,
    # each share within 4 binomial SEs of its row's battles.
    seen = group_confusions(result.tables[0, 0])
    n = result.tables[0, 0].sum(axis=-1, keepdims=True)
    favoured = kind == "favours it"
    wants = (FAVOURS_ON_A, FAVOURS_ON_B) if favoured else (TIE_HAPPY, TIE_HAPPY)
    want = np.stack([*wants, SHARED])
    assert np.all(np.abs(seen - want) <= 4 * np.sqrt(want * (1 - want) / n) + 1e-9)


def test_group_confusions_normalise_each_row_and_leave_empty_rows_nan():
    tables = np.zeros((3, 3, 3))
    tables[0, 2] = [1, 1, 2]
    tables[2, 0] = [0, 5, 0]
    seen = group_confusions(tables)
    assert np.allclose(seen[0, 2], [0.25, 0.25, 0.5]) and np.allclose(seen[2, 0], [0, 1, 0])
    assert np.all(np.isnan(seen[1])) and np.all(np.isnan(seen[0, 0]))


def test_no_judge_no_human_and_bad_alpha():
    rng = np.random.default_rng(4)
    cells = simulated_cells(rng, systems=3, battles=50)
    blind = cells._replace(human=np.full_like(cells.human, NONE))
    result = judge_heterogeneity(blind, 3)
    assert np.all(result.df == 0) and np.all(np.isnan(result.p_value))
    assert not result.differs.any()
    none = judge_heterogeneity(cells._replace(judged=cells.judged[:, :0]), 3)
    assert none.statistic.shape == (0, 3) and none.tables.shape == (0, 3, 3, 3, 3)
    with pytest.raises(ValueError, match="alpha"):
        judge_heterogeneity(cells, 3, alpha=0.0)
    assert math.isclose(judge_heterogeneity(cells, 3, alpha=0.1).alpha, 0.1)
