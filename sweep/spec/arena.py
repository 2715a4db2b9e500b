"""Arena sweeps: leaderboards of many systems from simulated battles.

``ratings: arena`` in a sweep file (MODEL.md, "Battles"): S systems, every ordered pair
of them in ``battles`` battles (system i shown first against j), each battle's truth
from Bradley–Terry strengths with Davidson's ties (ν), a human verdict on a share
``human_share`` of the battles and J judges' verdicts on all of them. Each replicate
draws its own true strengths, N(0, ``spread``²) centred; every judge has the preference
family's positional confusion (``accuracy``, ``tie_rate``, ``position_bias``:
:func:`kernels.categorical.families.preference_confusion`) and a later judge copies
the first at ``copy_rate``. What a configuration reports is how well its leaderboard
holds the true ranks (:mod:`kernels.arena.scores`), per estimator
(:data:`ARENA_ESTIMATORS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd

from binmetric_sweep.kernels.arena.logdensity import ArenaShape, arena_shape
from binmetric_sweep.kernels.arena.simulate import ArenaSetting, judge_as_truth
from binmetric_sweep.kernels.categorical.families import preference_confusion
from binmetric_sweep.sweep.spec.categorical import JOINT, JudgeModel, with_config_ids
from binmetric_sweep.sweep.storage.columns import SURFACE, columns_of

__all__ = [
    "ARENA_COLUMNS",
    "ARENA_ESTIMATORS",
    "ARENA_PARAMETERS",
    "ArenaEstimator",
    "arena_id_text",
    "arena_lane_settings",
    "arena_shape_of",
    "expand_arena_grid",
]

#: The rates and sizes that set an arena configuration.
ARENA_PARAMETERS = (
    "systems",
    "spread",
    "nu",
    "battles",
    "human_share",
    "accuracy",
    "tie_rate",
    "position_bias",
    "judges",
    "copy_rate",
)
#: The configurations table of an arena sweep: the registry's arena configuration columns.
ARENA_COLUMNS = tuple(c.name for c in columns_of(SURFACE, "arena") if c.source == "configuration")


def _as_drawn(counts):
    return counts


class ArenaEstimator(NamedTuple):
    """An estimator of an arena sweep (``estimators:``), named as ``sweep compare``'s methods.

    Attributes:
        name: as the sweep file and the tables spell it.
        description: the estimator in words.
        posterior: whether it ranks by the posterior's draws of the strengths (NUTS), else by
            prediction-powered ranking's rank sets (:func:`kernels.arena.scores.score_ppr`).
        reads_judges: whether its posterior reads the judges' verdicts as judges' (else the
            verdicts of :attr:`verdicts` alone, as a human's).
        reads_humans: whether it reads the human verdicts (what ``sweep plan`` prices).
        verdicts: a lane's ``(S, S, 3, 2, 3^J)`` counts → the counts it reads
            (:mod:`kernels.arena.simulate`), traced.
    """

    name: str
    description: str
    posterior: bool
    reads_judges: bool
    reads_humans: bool
    verdicts: Callable = _as_drawn


def _first_judge_as_truth(counts):
    return judge_as_truth(counts, 0)


#: The estimators of an arena sweep, in the tables' order: the joint posterior of the
#: strengths, ν and every judge's confusion from the human and judge verdicts; the same
#: model on the human verdicts alone, and on the first judge's verdicts taken as the truth;
#: prediction-powered ranking (the first judge's verdicts, PPI win rates, χ² rank sets).
ARENA_ESTIMATORS = {
    e.name: e
    for e in (
        ArenaEstimator(
            "bayes", "the posterior from the human and the judges' verdicts", True, True, True
        ),
        ArenaEstimator(
            "human_only", "the same model on the human verdicts alone", True, False, True
        ),
        ArenaEstimator(
            "judge_only",
            "the same model on the first judge's verdicts taken as the truth",
            True,
            False,
            False,
            _first_judge_as_truth,
        ),
        ArenaEstimator(
            "ppr",
            "prediction-powered ranking: the first judge's PPI win rates and χ² rank sets",
            False,
            True,
            True,
        ),
    )
}


def arena_id_text(row: dict) -> str:
    """``arena|S|spread|ν|battles|human_share|accuracy|tie_rate|position_bias|J|copy`` and
    ``|independent`` for judges modelled as independent: the text of one arena
    configuration hashed into its ``config_id``."""
    rates = "|".join(
        repr(float(row[a]))
        for a in ("spread", "nu", "human_share", "accuracy", "tie_rate", "position_bias")
    )
    model = "" if row["judge_model"] == JOINT.name else f"|{row['judge_model']}"
    return (
        f"arena|{int(row['systems'])}|{int(row['battles'])}|{rates}|{int(row['judges'])}|"
        f"{float(row['copy_rate'])!r}{model}"
    )


def expand_arena_grid(blocks) -> pd.DataFrame:
    """The configurations of an arena sweep's blocks (:class:`sweep.spec.config.ArenaBlock`),
    one row each (columns :data:`ARENA_COLUMNS`), duplicates removed, in block order (each
    block's Cartesian product, the last axis fastest). One judge copies no one, and its
    joint verdict is its own (``judge_model`` joint)."""
    tables = []
    for block in blocks:
        free = block.free_axes()
        grids = np.meshgrid(*(np.asarray(getattr(block, a)) for a in free), indexing="ij")
        table = pd.DataFrame({a: g.ravel() for a, g in zip(free, grids, strict=True)})
        table.loc[table["judges"] == 1, "copy_rate"] = 0.0
        table["judge_model"] = table["judge_model"].astype(object)
        table.loc[table["judges"] == 1, "judge_model"] = JOINT.name
        tables.append(table)
    table = pd.concat(tables, ignore_index=True)
    table = with_config_ids(table, arena_id_text)
    for name in ("systems", "battles", "judges"):
        table[name] = table[name].astype(np.int64)
    return table[list(ARENA_COLUMNS)]


def _single(configurations: pd.DataFrame, name: str):
    values = pd.unique(configurations[name])
    if len(values) != 1:
        raise ValueError(f"arena configurations with {len(values)} values of {name}")
    return values[0]


def arena_shape_of(configurations: pd.DataFrame, estimator: ArenaEstimator) -> ArenaShape:
    """The :class:`ArenaShape` of ``estimator``'s posterior of configurations that share their
    systems, judges and judge model (a shard's, :func:`sweep.execution.shards.make_shards`)."""
    judges = int(_single(configurations, "judges")) if estimator.reads_judges else 0
    model = JudgeModel.of(_single(configurations, "judge_model"), "judge_model")
    return arena_shape(int(_single(configurations, "systems")), judges, model.independent)


def arena_lane_settings(configurations: pd.DataFrame, replicates: int) -> ArenaSetting:
    """``(C·R,)`` lane settings of arena configurations that share their systems and judges,
    each configuration repeated for its R replicates: every ordered pair in ``battles``
    battles, each judge the configuration's positional confusion, each later judge copying
    the first at ``copy_rate``."""

    def column(name):
        return np.repeat(configurations[name].to_numpy(np.float64), replicates)

    systems = int(_single(configurations, "systems"))
    judges = int(_single(configurations, "judges"))
    single = np.asarray(
        preference_confusion(column("accuracy"), column("tie_rate"), column("position_bias"))
    )
    copy = np.zeros((len(single), judges))
    copy[:, 1:] = column("copy_rate")[:, None]
    pairs = 1.0 - np.eye(systems)
    return ArenaSetting(
        spread=column("spread"),
        log_nu=np.log(column("nu")),
        battles=column("battles")[:, None, None] * pairs,
        human_share=column("human_share"),
        confusions=np.repeat(single[:, None], judges, axis=1),
        copy=copy,
    )
