"""What to rate next: for each pair not yet significant, the cheapest ratings that would make
its observed difference significant, from the planner (``sweep.plan.plan_grid``).

The planning point is the pair's posterior: α the mean of the two systems'
posterior means, ρ and η the means of their paired-rating posteriors, ε the
observed difference |diff_mean|, at the asked power and at the level the
comparison holds the pair to (:attr:`~.analysis.Adjustment.held_level`): γ, or
under ``adjust`` γ/m (Holm) or γ·R/m (BH, R pairs called), the level of its
``eps``. A pair not significant has its tail above that level, so its plan
asks for more than it has; planned at the unadjusted γ, many would be told
to add nothing.
The plan is per system (both systems rated alike, every new human rating
also given a metric label, as in the shared-paired-set model); what is added
to each system is the plan's size less what it has.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from binmetric_sweep.sweep.compare.analysis import Adjustment, Comparison
from binmetric_sweep.sweep.errors import SweepError

__all__ = ["NEXT_COLUMNS", "NextRatingsPlan", "next_level", "next_ratings"]

#: Columns :func:`next_ratings` adds to the pairs table (NaN for a significant pair).
NEXT_COLUMNS = (
    "add_human_a",
    "add_metric_a",
    "add_human_b",
    "add_metric_b",
    "add_cost",
)


class NextRatingsPlan(NamedTuple):
    """What the plans of what to rate next are asked for (``--cost-metric``, ``--cost-human``,
    ``--power``): checked once by :meth:`of`.

    Attributes:
        cost_metric: the price of a metric rating, > 0.
        cost_human: the price of a human rating, > 0.
        power: the power each pair's plan is asked for, in [0.5, 1).
    """

    cost_metric: float
    cost_human: float = 1.0
    power: float = 0.8

    @classmethod
    def of(cls, cost_metric: float, cost_human: float = 1.0, power: float = 0.8) -> NextRatingsPlan:
        """The plan's costs and power, checked.

        Raises:
            SweepError: a cost or power out of range (one line naming the option).
        """
        for name, value in (("--cost-metric", cost_metric), ("--cost-human", cost_human)):
            if not (np.isfinite(value) and value > 0):
                raise SweepError(f"{name}: {value!r} is not allowed; give a price > 0")
        if not 0.5 <= power < 1.0:
            raise SweepError(f"--power: {power!r} is not allowed; give a number in [0.5, 1)")
        return cls(float(cost_metric), float(cost_human), float(power))


def next_ratings(
    result: Comparison,
    plan: NextRatingsPlan | None = None,
    *,
    cost_metric: float | None = None,
    cost_human: float = 1.0,
    power: float = 0.8,
) -> pd.DataFrame:
    """The pairs table with :data:`NEXT_COLUMNS` for every pair that is not significant.

    ``plan`` (a :class:`NextRatingsPlan`) or ``cost_metric``, ``cost_human`` and
    ``power`` say what the plans are asked for. ``add_cost`` is the cost of both
    systems' additional ratings; a pair whose difference no amount of ratings can
    make significant (the metric saturates, or the difference is 0) gets NaN there
    and in the counts.

    Raises:
        SweepError: a cost or power out of range (one line naming the option).
        TypeError: neither ``plan`` nor ``cost_metric``, or both.
    """
    from binmetric_sweep.sweep.plan import plan_grid

    if (plan is None) == (cost_metric is None):
        raise TypeError("next_ratings: give a NextRatingsPlan or cost_metric, one of them")
    if plan is None:
        plan = NextRatingsPlan.of(cost_metric, cost_human, power)
    cost_metric, cost_human, power = plan
    pairs = result.pairs.copy()
    level = next_level(result)
    for column in NEXT_COLUMNS:
        pairs[column] = np.nan
    systems = result.systems.set_index("system")
    todo = np.flatnonzero(~pairs["significant"].to_numpy(bool))
    eps = pairs["diff_mean"].abs().to_numpy()
    todo = todo[(eps[todo] > 0) & (eps[todo] < 1)]
    if not len(todo):
        return pairs
    a = systems.loc[pairs["a"].to_numpy()[todo]]
    b = systems.loc[pairs["b"].to_numpy()[todo]]
    mid = lambda column: 0.5 * (a[column].to_numpy() + b[column].to_numpy())  # noqa: E731
    scenarios = [
        {
            "alpha": float(np.clip(al, 1e-6, 1 - 1e-6)),
            "rho": float(r),
            "eta": float(e),
            "eps": float(ep),
            "gamma": level,
            "power": power,
            "cost_human": cost_human,
            "cost_metric": cost_metric,
        }
        for al, r, e, ep in zip(
            mid("alpha_mean"), mid("rho_mean"), mid("eta_mean"), eps[todo], strict=True
        )
    ]
    plans = plan_grid(scenarios, replicates=0)
    n_phi = np.array([p.n_phi if p.reachable else np.nan for p in plans], float)
    n_m = np.array([p.n_m if p.reachable else np.nan for p in plans], float)
    add = {
        "add_human_a": np.maximum(n_phi - a["n_human"].to_numpy(), 0),
        "add_metric_a": np.maximum(n_m - a["n_metric"].to_numpy(), 0),
        "add_human_b": np.maximum(n_phi - b["n_human"].to_numpy(), 0),
        "add_metric_b": np.maximum(n_m - b["n_metric"].to_numpy(), 0),
    }
    add["add_cost"] = cost_human * (add["add_human_a"] + add["add_human_b"]) + cost_metric * (
        add["add_metric_a"] + add["add_metric_b"]
    )
    for column, values in add.items():
        pairs.loc[pairs.index[todo], column] = values
    return pairs


def next_level(result: Comparison) -> float:
    """The two-sided level the pairs of ``result`` are planned at: γ, or the level the
    adjustment holds a pair to (:attr:`~.analysis.Adjustment.held_level`)."""
    s, pairs = result.settings, result.pairs
    adjustment = Adjustment.of(s.get("adjust", "none"))
    tested = int(pairs["p_adjusted"].notna().sum()) if adjustment.adjusts else len(pairs)
    called = int(pairs["significant"].fillna(False).astype(bool).sum())
    return adjustment.held_level(float(s["gamma"]), tested, called)
