"""Does a judge's confusion differ between systems? One G-test per judge and system.

The arena's model shares each judge's positional confusion C_j[y, l] = P(says l | truth y)
(classes B better, tie, A better, in positions) among all battles. Where the human verdict
is seen, that is testable: for judge j and system s, split the battles with both verdicts
into three groups — s on side A, s on side B, s in neither — and test whether the judge's
verdict given the human verdict has one distribution in all three, stratum by stratum of
the human verdict y (sides kept: the tables are the positional confusion's, so a judge
that favours s whichever side it is on shows as a difference between the first two
groups, and one that is harsher or kinder on s's battles as a difference from the third).

The statistic is the likelihood ratio (G-test) of each stratum, Williams-corrected
(:func:`williams_correction`), summed over the strata,

    G = Σ_y G_y / q_y,   G_y = 2 Σ_g Σ_l O_ygl · log(O_ygl / E_ygl),
    E_ygl = O_yg· · O_y·l / O_y··,

with df = Σ_y (groups seen in stratum y − 1)·(verdicts seen in it − 1); its p-value is
χ²_df's survival function at G (:func:`chi2_sf`, closed form), and the p-values of a judge's
systems are Holm-adjusted together (:func:`holm`). A system with df = 0 (no battles with
both verdicts, or no variation to compare) is not tested: NaN, and left out of Holm's count.

::

    result = judge_heterogeneity(cells, systems)
    result.differs[j, s]   # judge j's confusion on s's battles differs (Holm, alpha)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from binmetric_sweep.kernels.arena.cells import NONE, BattleCells

__all__ = [
    "GROUPS",
    "Heterogeneity",
    "chi2_sf",
    "g_statistic",
    "group_confusions",
    "holm",
    "williams_correction",
    "judge_heterogeneity",
    "system_tables",
]

#: The groups of one system's test, in order: its battles on side A, on side B, the rest.
GROUPS = ("on_a", "on_b", "rest")


class Heterogeneity(NamedTuple):
    """Each judge's G-test of one confusion on each system's battles against the rest's.

    Attributes:
        tables: ``(J, S, 3, 3, 3)`` int battles by group (:data:`GROUPS`), human verdict y
            and judge verdict l (classes B better, tie, A better), battles with both.
        statistic: ``(J, S)`` the Williams-corrected G summed over the strata (NaN where not
            tested).
        df: ``(J, S)`` int degrees of freedom (0: not tested).
        p_value: ``(J, S)`` P(χ²_df ≥ G) (NaN where not tested).
        p_holm: ``(J, S)`` Holm-adjusted over each judge's tested systems (NaN where not
            tested).
        differs: ``(J, S)`` bool p_holm < alpha.
        alpha: the level of ``differs``.
    """

    tables: np.ndarray
    statistic: np.ndarray
    df: np.ndarray
    p_value: np.ndarray
    p_holm: np.ndarray
    differs: np.ndarray
    alpha: float


def chi2_sf(x: np.ndarray, df: np.ndarray) -> np.ndarray:
    """P(χ²_df ≥ x), elementwise, for integer df ≥ 1 (NaN where df < 1), in closed form
    without 1 − CDF's cancellation: with y = x/2, e^{−y} Σ_{k < df/2} y^k / k! for even df,
    erfc(√y) + Σ_{k=1}^{(df−1)/2} e^{−y} y^{k−½} / Γ(k + ½) for odd df."""
    x, df = np.broadcast_arrays(np.asarray(x, float), np.asarray(df))
    out = np.full(x.shape, np.nan)
    for index in np.ndindex(x.shape):
        d, value = int(df[index]), float(x[index])
        if d < 1 or math.isnan(value):
            continue
        y = max(value, 0.0) / 2.0
        if y == 0.0:
            out[index] = 1.0
            continue
        log_y = math.log(y)
        if d % 2 == 0:
            terms = [math.exp(k * log_y - y - math.lgamma(k + 1)) for k in range(d // 2)]
            out[index] = min(1.0, math.fsum(terms))
        else:
            terms = [
                math.exp((k - 0.5) * log_y - y - math.lgamma(k + 0.5)) for k in range(1, d // 2 + 1)
            ]
            out[index] = min(1.0, math.erfc(math.sqrt(y)) + math.fsum(terms))
    return out


def _margins(table: np.ndarray):
    """Group totals ``(..., Y, G)``, verdict totals ``(..., Y, L)`` and stratum totals
    ``(..., Y)`` of ``(..., Y, G, L)`` tables."""
    table = np.asarray(table, float)
    return table.sum(axis=-1), table.sum(axis=-2), table.sum(axis=(-2, -1))


def g_statistic(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(..., Y)`` G and int df of ``(..., Y, G, L)`` tables: per stratum y the G-test of
    independence of group g and verdict l (empty groups and verdicts add no df)."""
    table = np.asarray(table, float)
    rows, columns, total = _margins(table)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[..., :, None] * columns[..., None, :] / total[..., None, None]
        terms = np.where(table > 0, table * np.log(table / expected), 0.0)
    statistic = np.maximum(2.0 * terms.sum(axis=(-2, -1)), 0.0)
    df = np.maximum((rows > 0).sum(axis=-1) - 1, 0) * np.maximum((columns > 0).sum(axis=-1) - 1, 0)
    return statistic, df


def williams_correction(table: np.ndarray) -> np.ndarray:
    """``(..., Y)`` Williams's (1976) divisor q of each stratum's G, so that G/q follows
    χ²_df more closely in sparse tables (the battles of one system, split three ways and by
    two verdicts, often have cells of a few battles, where G alone rejects too often):

        q = 1 + (n Σ_g 1/n_g − 1)(n Σ_l 1/n_l − 1) / (6 n df),

    over the groups and verdicts seen; 1 where df = 0."""
    rows, columns, total = _margins(table)
    _, df = g_statistic(table)
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse_rows = np.where(rows > 0, 1.0 / rows, 0.0).sum(axis=-1)
        inverse_columns = np.where(columns > 0, 1.0 / columns, 0.0).sum(axis=-1)
        q = 1.0 + (total * inverse_rows - 1.0) * (total * inverse_columns - 1.0) / (6 * total * df)
    return np.where(df > 0, q, 1.0)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values along the last axis, NaN (not tested) left out of the count
    and kept: max over j ≤ i of min(1, (m − j + 1)·p_(j)) among the m tested."""
    p = np.asarray(p, float)
    out = np.full(p.shape, np.nan)
    for index in np.ndindex(p.shape[:-1]):
        row = p[index]
        tested = np.flatnonzero(~np.isnan(row))
        order = tested[np.argsort(row[tested], kind="stable")]
        scaled = np.minimum(1.0, (len(order) - np.arange(len(order))) * row[order])
        out[index][order] = np.maximum.accumulate(scaled)
    return out


def system_tables(cells: BattleCells, systems: int, judge: int) -> np.ndarray:
    """``(S, 3, 3, 3)`` int battles with a human verdict and judge ``judge``'s, by system
    s, group (:data:`GROUPS`: s on side A, on side B, neither), human verdict y, verdict l."""
    both = (cells.human != NONE) & (cells.judged[:, judge] != NONE)
    a, b = cells.a[both], cells.b[both]
    y, verdict, count = cells.human[both], cells.judged[both, judge], cells.count[both]
    on_a = np.zeros((systems, 3, 3), np.int64)
    on_b = np.zeros((systems, 3, 3), np.int64)
    np.add.at(on_a, (a, y, verdict), count)
    np.add.at(on_b, (b, y, verdict), count)
    total = on_a.sum(axis=0)  # every battle has exactly one system on side A
    return np.stack([on_a, on_b, total[None] - on_a - on_b], axis=1)


def group_confusions(tables: np.ndarray) -> np.ndarray:
    """``(..., 3, 3, 3)`` P(judge says l | human verdict y) in each group (:data:`GROUPS`)
    of ``(..., 3, 3, 3)`` tables (group, y, l), NaN where a group has no battle of truth y:
    what a flagged system's test saw, e.g. P(says A | tie) with it on side A and elsewhere."""
    tables = np.asarray(tables, float)
    rows = tables.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rows > 0, tables / rows, np.nan)


def judge_heterogeneity(cells: BattleCells, systems: int, alpha: float = 0.05) -> Heterogeneity:
    """Every judge's test on every system's battles (see the module's text).

    Args:
        cells: the arena's :class:`~.cells.BattleCells` (systems ``0..systems − 1``).
        systems: S.
        alpha: the Holm-adjusted level of ``differs``, in (0, 1).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha: {alpha}, expected a number in (0, 1)")
    tables = np.zeros((cells.judges, systems, 3, 3, 3), np.int64)
    for j in range(cells.judges):
        tables[j] = system_tables(cells, systems, j)
    # g_statistic reads (stratum y, group g, verdict l): put the human verdict first.
    strata = np.swapaxes(tables, -3, -2)
    g, df = g_statistic(strata)
    statistic, df = (g / williams_correction(strata)).sum(axis=-1), df.sum(axis=-1)
    tested = df > 0
    statistic = np.where(tested, statistic, np.nan)
    p_value = np.where(tested, chi2_sf(statistic, np.maximum(df, 1)), np.nan)
    p_holm = holm(p_value)
    return Heterogeneity(
        tables=tables,
        statistic=statistic,
        df=df.astype(np.int64),
        p_value=p_value,
        p_holm=p_holm,
        differs=np.where(tested, p_holm < alpha, False),
        alpha=float(alpha),
    )
