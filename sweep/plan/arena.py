"""``sweep plan --ratings arena``: the human verdicts a leaderboard needs, by simulation.

An arena (S systems, every ordered pair in a number of battles, J judges' verdicts on every
battle: :mod:`sweep.spec.arena`) needs human verdicts on some battles. The plan is the
least share of battles with a human verdict, from :data:`SHARES`, at which every central
rank interval at ``level`` is at most ``width`` places wide, and the fit mixed, in a share
``power`` of simulated arenas: each share is an arena sweep's configuration, its
replicates drawn and fitted by :func:`sweep.execution.arena_shards.run_arena_shard`
(strengths and battles from each replicate's key, the posterior by NUTS, the ranks scored
against the truth). The search bisects :data:`SHARES` (the widest interval shrinks as
human verdicts are added, up to simulation noise); the plan is then checked on as many
fresh arenas (seed + 1), whose share meeting the width, rank coverage and sampler health
it reports beside.
"""

from __future__ import annotations

import json
import math
from typing import NamedTuple

import jax
import numpy as np

from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.arena_shards import run_arena_shard
from binmetric_sweep.sweep.execution.shards import Shard
from binmetric_sweep.sweep.spec.config import ArenaSweepSpec, load_sweep
from binmetric_sweep.sweep.spec.grid import expand_grid

__all__ = ["RHAT_LIMIT", "SHARES", "ArenaPlan", "ArenaPlanPoint", "arena_plan_spec", "plan_arena"]

#: The shares of battles with a human verdict that a plan chooses from, increasing.
SHARES = (0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0)
#: Worst split R-hat of a fit's strengths that counts as mixed: an arena whose fit is worse
#: counts as missing the width (with few human verdicts a judge's confusion and the
#: strengths can trade off, and unmixed chains' rank intervals say nothing).
RHAT_LIMIT = 1.05
#: An arena plan's scenario flags (a one-point arena grid's axes, ``human_share`` aside).
SCENARIO = (
    "systems",
    "spread",
    "nu",
    "battles",
    "accuracy",
    "tie_rate",
    "position_bias",
    "judges",
    "copy_rate",
)


class ArenaPlanPoint(NamedTuple):
    """One share of battles with a human verdict, simulated.

    Attributes:
        human_share: the share.
        human_verdicts: the battles expected to carry one, share × battles × S(S − 1).
        met: share of the arenas whose every central rank interval is at most the plan's
            width and whose fit mixed (R-hat at most :data:`RHAT_LIMIT`).
        met_mcse: its Monte Carlo SE, √(met (1 − met)/R).
        widest: mean places of the arenas' widest interval.
        rank_coverage: share of systems whose interval holds the true rank.
        set_coverage: share of arenas whose simultaneous sets hold every true rank.
        rhat_max: worst split R-hat of the fits (NaN: a closed form, ppr).
        divergences: divergent transitions of all the fits.
        unmixed: fits whose R-hat exceeds :data:`RHAT_LIMIT` (counted as missing the width).
    """

    human_share: float
    human_verdicts: float
    met: float
    met_mcse: float
    widest: float
    rank_coverage: float
    set_coverage: float
    rhat_max: float
    divergences: int
    unmixed: int


def _point_record(point: ArenaPlanPoint) -> dict:
    """A point as JSON-able data: a closed form's R-hat (NaN) as null."""
    return {
        k: None if isinstance(v, float) and math.isnan(v) else v for k, v in point._asdict().items()
    }


class ArenaPlan(NamedTuple):
    """One estimator's plan.

    Attributes:
        estimator: an arena estimator that reads the human verdicts (``bayes``,
            ``human_only``, ``ppr``: its rank sets stand in for the intervals).
        spec: the arena (a one-configuration :class:`ArenaSweepSpec`, human share 1).
        width: most places a rank interval may span.
        power: share of arenas that must meet the width.
        plan: the least share that met it in the search, or None (not even every battle).
        check: the plan on fresh arenas (seed + 1), or None.
        searched: every share simulated, in the order tried.
    """

    estimator: str
    spec: ArenaSweepSpec
    width: float
    power: float
    plan: ArenaPlanPoint | None
    check: ArenaPlanPoint | None
    searched: tuple[ArenaPlanPoint, ...]

    @property
    def reachable(self) -> bool:
        """Whether some share of :data:`SHARES` met the width."""
        return self.plan is not None

    def lines(self) -> list[str]:
        """The plan in words."""
        block = self.spec.grid[0]
        s, battles = int(block.systems[0]), int(block.battles[0])
        total = battles * s * (s - 1)
        level = f"{self.spec.interval:g}"
        head = f"arena plan ({self.estimator}): {s} systems, {battles} battles an ordered pair"
        goal = (
            f"every {level} rank interval at most {self.width:g} places wide in "
            f"{self.power:.0%} of arenas"
        )
        if self.plan is None:
            top = self.searched[0]
            return [
                f"{head}: UNREACHABLE: {goal} is not met even with a human verdict on every "
                f"battle ({top.met:.3f} of {self.spec.replicates} simulated arenas); give "
                "more battles, or a wider --width"
            ]
        p, c = self.plan, self.check
        holds = c.met >= self.power - 2.0 * c.met_mcse
        verdict = "holds" if holds else f"SHORT of the {self.power:.0%} asked"
        return [
            f"{head}: a human verdict on {p.human_share:.0%} of the {total:,} battles, about "
            f"{p.human_verdicts:,.0f}: {goal} (met in {p.met:.3f} of "
            f"{self.spec.replicates} simulated arenas, seed {self.spec.seed})",
            f"checked on {self.spec.replicates} fresh arenas (seed {self.spec.seed + 1}): met in "
            f"{c.met:.3f} ± {c.met_mcse:.3f} ({verdict}); widest interval {c.widest:.2f} "
            "places on average; "
            f"rank coverage {c.rank_coverage:.3f}, simultaneous {c.set_coverage:.3f}; "
            + (
                "a closed form, no sampler"
                if math.isnan(c.rhat_max)
                else f"R-hat ≤ {c.rhat_max:.3f} ({c.unmixed} fits above {RHAT_LIMIT}, counted "
                f"as missing), {c.divergences} divergences"
            ),
            "searched: "
            + ", ".join(
                f"{q.human_share:g} met {q.met:.3f}" + f" ({q.unmixed} unmixed)" * bool(q.unmixed)
                for q in self.searched
            ),
        ]

    def record(self) -> dict:
        """The plan as JSON-able data."""
        return {
            "estimator": self.estimator,
            "width": self.width,
            "power": self.power,
            "level": self.spec.interval,
            "replicates": self.spec.replicates,
            "seed": self.spec.seed,
            "reachable": self.reachable,
            "plan": None if self.plan is None else _point_record(self.plan),
            "check": None if self.check is None else _point_record(self.check),
            "searched": [_point_record(q) for q in self.searched],
        }


def arena_plan_spec(
    given: dict,
    *,
    replicates: int,
    seed: int,
    level: float,
    estimator: str,
    sampler: dict | None = None,
) -> ArenaSweepSpec:
    """The one-configuration arena sweep of a plan's flags (``given``: :data:`SCENARIO`'s
    names → numbers), human share 1, validated as a sweep file is; ``sampler`` a sweep
    file's (None: NUTS 4 × (500 + 1000)).

    Raises:
        SweepError: one line naming the flag (``--systems``, …) and what is allowed.
    """
    grid = {name: [value] for name, value in given.items()}
    sweep = {
        "name": "arena-plan",
        "ratings": "arena",
        "replicates": replicates,
        "seed": seed,
        "interval": level,
        "estimators": [estimator],
        **({} if sampler is None else {"sampler": sampler}),
        "grid": {**grid, "human_share": [1.0]},
    }
    try:
        return load_sweep(sweep)
    except SweepError as err:
        text = str(err)
        for name in (*SCENARIO, "human_share"):
            text = text.replace(f"grid.{name}:", f"--{name.replace('_', '-')}:")
        for key, flag in (
            ("replicates", "--replicates"),
            ("seed", "--seed"),
            ("interval", "--level"),
            ("estimators", "--estimator"),
        ):
            if text.startswith(f"{key}:"):
                text = flag + text[len(key) :]
        raise SweepError(text) from None


def _simulate(spec: ArenaSweepSpec, share: float, seed: int, width: float) -> ArenaPlanPoint:
    """``spec``'s arenas at one human share (``seed``'s replicates), scored."""
    block = spec.grid[0]
    point = spec.model_copy(
        update={"seed": seed, "grid": (block.model_copy(update={"human_share": (share,)}),)}
    )
    configs = expand_grid(point)
    fits, surface, _ = run_arena_shard(point, Shard(0, configs))
    widest = fits.column("rank_width_max").to_numpy()
    (estimator,) = spec.estimator_values()
    rhat = fits.column("rhat").to_numpy()
    mixed = rhat <= RHAT_LIMIT if estimator.posterior else np.ones(len(rhat), bool)
    met = float(np.mean((widest <= width + 1e-9) & mixed))
    row = surface.to_pylist()[0]
    s = int(block.systems[0])
    return ArenaPlanPoint(
        human_share=share,
        human_verdicts=share * float(block.battles[0]) * s * (s - 1),
        met=met,
        met_mcse=math.sqrt(met * (1.0 - met) / len(widest)),
        widest=float(np.mean(widest)),
        rank_coverage=row["rank_coverage"],
        set_coverage=row["set_coverage"],
        rhat_max=math.nan if row["rhat_max"] is None else row["rhat_max"],  # null: ppr
        divergences=int(row["divergences"]),
        unmixed=int(np.sum(~mixed)),
    )


def plan_arena(spec: ArenaSweepSpec, width: float, power: float) -> ArenaPlan:
    """The least share of :data:`SHARES` at which ``spec``'s estimator makes every rank
    interval at most ``width`` places wide in a share ``power`` of simulated arenas, and
    its check on fresh ones.

    Args:
        spec: :func:`arena_plan_spec`'s one-configuration sweep (one estimator).
        width: most places a central rank interval may span, ≥ 1.
        power: share of arenas that must meet it, in (0, 1).

    An entry point: it switches JAX to float64 for this process, as :func:`sweep.run` does.
    """
    if not width >= 1.0 or not math.isfinite(width):
        raise SweepError(f"--width: {width!r} is not allowed; allowed: a number of places >= 1")
    if not 0.0 < power < 1.0:
        raise SweepError(f"--power: {power!r} is not allowed; allowed: a share in (0, 1)")
    jax.config.update("jax_enable_x64", True)
    searched = [_simulate(spec, SHARES[-1], spec.seed, width)]
    (estimator,) = spec.estimators
    if searched[0].met < power:
        return ArenaPlan(estimator, spec, width, power, None, None, tuple(searched))
    low, high = -1, len(SHARES) - 1  # SHARES[high] meets; SHARES[low] (if any) does not
    best = searched[0]
    while high - low > 1:
        middle = (low + high) // 2
        point = _simulate(spec, SHARES[middle], spec.seed, width)
        searched.append(point)
        if point.met >= power:
            high, best = middle, point
        else:
            low = middle
    check = _simulate(spec, best.human_share, spec.seed + 1, width)
    return ArenaPlan(estimator, spec, width, power, best, check, tuple(searched))


def plans_json(plans: list[ArenaPlan]) -> str:
    """One JSON object per plan, one per line."""
    return "\n".join(json.dumps(p.record()) for p in plans)
