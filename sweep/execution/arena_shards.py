"""An arena sweep's shard: simulated leaderboards, their posteriors, and how well they rank.

:func:`run_arena_shard` is :func:`sweep.execution.shards.run_shard` for ``ratings: arena``:
configurations → each lane's setting (:func:`sweep.spec.arena.arena_lane_settings`) →
its true strengths and battles by cell, drawn from the lane's key
(:func:`kernels.arena.simulate.draw_arena`) → each posterior estimator's draws of every
lane in batched calls (:func:`kernels.arena.posterior.sample_arenas`, of the verdicts the
estimator reads: :attr:`sweep.spec.arena.ArenaEstimator.verdicts`), or ppr's rank sets →
each fit's ranks scored against the truth (:func:`kernels.arena.scores.score_rankings`,
:func:`~kernels.arena.scores.score_ppr`) → their means per configuration → the
``fits`` and ``surface`` tables of the column registry's arena model. It reads and writes
nothing. A shard's configurations share their systems, judges and judge model
(:attr:`sweep.spec.rating_model.RatingModel.layout_columns`), so every lane of an estimator has
one :class:`~kernels.arena.logdensity.ArenaShape` and one compiled program.

A lane's key k gives its battles (``draw_arena(k, ·)``) and, through ``fold_in(k, 5)``,
every estimator's sampler key: the estimators see the same battles and the same random
numbers. Each arena's draws depend on its key and data alone
(:func:`~kernels.arena.posterior.sample_arenas`), so no number depends on the shard's
other lanes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from binmetric_sweep.kernels.arena.posterior import SamplerSettings, sample_arenas
from binmetric_sweep.kernels.arena.scores import RankScores, score_ppr, score_rankings
from binmetric_sweep.sweep.execution.programs import arena_inputs_program
from binmetric_sweep.sweep.spec.arena import arena_shape_of
from binmetric_sweep.sweep.spec.lanes import (
    configuration_lane_keys,
    lane_counts,
    require_float64,
)
from binmetric_sweep.sweep.storage.columns import FITS, SURFACE, check_schema, ordered

__all__ = ["arena_sampler", "run_arena_shard"]

#: The fold of a lane's key that gives its estimators' sampler key (0–3 draw its battles and
#: strengths: :func:`kernels.arena.simulate.draw_arena`).
SAMPLER_FOLD = 5


def arena_sampler(spec) -> SamplerSettings:
    """The arena NUTS settings of a sweep's ``sampler:``."""
    s = spec.sampler
    return SamplerSettings(s.chains, s.warmup, s.samples, s.target_accept)


class Health(NamedTuple):
    """``(B,)`` each fit's sampler health: worst split R-hat and least bulk ESS of its
    strengths, divergent transitions after warm-up (NaN, NaN, 0 for a closed form)."""

    rhat_max: np.ndarray
    ess_min: np.ndarray
    divergences: np.ndarray

    @classmethod
    def closed_form(cls, lanes: int) -> Health:
        return cls(np.full(lanes, np.nan), np.full(lanes, np.nan), np.zeros(lanes, np.int64))


def _fits_table(configs, replicate, human, scores, healths, names) -> pa.Table:
    """One row per (configuration, replicate, estimator), the estimators in their order."""
    e, b = len(names), len(replicate)
    r = b // len(configs)

    def interleaved(per_estimator, dtype):  # (B,) per estimator -> (B·E,), lane-major
        return np.stack([np.asarray(x, dtype) for x in per_estimator], axis=1).reshape(-1)

    columns = {
        "config_id": np.repeat(np.repeat(configs["config_id"].to_numpy(np.int64), r), e),
        "replicate": np.repeat(replicate.astype(np.int32), e),
        "estimator": np.array(names, object)[np.tile(np.arange(e), b)],
        "human_verdicts": np.repeat(human.astype(np.int64), e),
        "rhat": interleaved([h.rhat_max for h in healths], np.float64),
        "ess": interleaved([h.ess_min for h in healths], np.float64),
        "divergences": interleaved([h.divergences for h in healths], np.int64),
        "rank_held": interleaved([s.held for s in scores], np.float64),
        "all_ranks_held": interleaved([s.all_held for s in scores], bool),
        "rank_width": interleaved([s.width for s in scores], np.float64),
        "rank_width_max": interleaved([s.widest for s in scores], np.float64),
        "rank_set_width": interleaved([s.set_width for s in scores], np.float64),
        "leader_first": interleaved([s.leader_first for s in scores], bool),
        "p_leader": interleaved([s.p_leader for s in scores], np.float64),
    }
    table = pa.table(ordered(FITS, columns, "arena"))
    check_schema(FITS, table.schema, "arena")
    return table


def _summaries(scores: RankScores, health: Health, c: int, r: int) -> dict[str, np.ndarray]:
    """``(C,)`` each configuration's means of one estimator's scores over its R replicates."""

    def per_config(x):
        return np.asarray(x, np.float64).reshape(c, r)

    held = per_config(scores.held)
    mcse = held.std(axis=1, ddof=1) / np.sqrt(r) if r > 1 else np.full(c, np.nan)
    return {
        "rhat_max": per_config(health.rhat_max).max(axis=1),
        "ess_min": per_config(health.ess_min).min(axis=1),
        "divergences": per_config(health.divergences).sum(axis=1).astype(np.int64),
        "rank_coverage": held.mean(axis=1),
        "rank_coverage_mcse": mcse,
        "set_coverage": per_config(scores.all_held).mean(axis=1),
        "rank_width_mean": per_config(scores.width).mean(axis=1),
        "rank_width_max_mean": per_config(scores.widest).mean(axis=1),
        "rank_set_width_mean": per_config(scores.set_width).mean(axis=1),
        "leader_share": per_config(scores.leader_first).mean(axis=1),
        "p_leader_mean": per_config(scores.p_leader).mean(axis=1),
    }


def _surface_table(spec, index: int, configs: pd.DataFrame, names, summaries) -> pa.Table:
    """One row per (configuration, estimator), the estimators in their order."""
    e, c = len(names), len(configs)
    columns = {name: np.repeat(configs[name].to_numpy(), e) for name in configs.columns}
    columns["counts"] = np.array([spec.counts] * (c * e), object)
    columns["method"] = np.array([spec.method] * (c * e), object)
    for name, setting in spec.surface_settings().items():
        columns[name] = np.array([setting] * (c * e), object)
    columns["replicates"] = np.full(c * e, spec.replicates, np.int32)
    columns["estimator"] = np.array(names, object)[np.tile(np.arange(e), c)]
    for field in summaries[0]:
        columns[field] = np.stack([s[field] for s in summaries], axis=1).reshape(-1)
    columns["shard"] = np.full(c * e, index, np.int32)
    table = pa.Table.from_pandas(pd.DataFrame(ordered(SURFACE, columns, "arena")))
    table = table.replace_schema_metadata(None)
    check_schema(SURFACE, table.schema, "arena")
    return table


def run_arena_shard(
    spec,
    shard,
    *,
    on_fits: Callable[[int], None] | None = None,
    stop=None,
):
    """Compute one arena shard (:class:`sweep.execution.shards.Shard` of an
    :class:`sweep.spec.config.ArenaSweepSpec`): its fits and surface tables.

    Args:
        spec: the sweep.
        shard: the configurations to compute (one systems, judges and judge model).
        on_fits: called with the number of lanes finished once every estimator has fitted them.
        stop: None, or an event that, once set, stops the shard before its next estimator's
            calls with ``concurrent.futures.CancelledError``.

    Returns:
        ``(fits, surface, stages)``: the two Arrow tables and the wall seconds of each step.
    """
    require_float64()
    last = time.perf_counter()
    stages: dict[str, float] = {}

    def lap(stage: str) -> None:
        nonlocal last
        now = time.perf_counter()
        stages[stage] = stages.get(stage, 0.0) + now - last
        last = now

    configs = shard.configurations
    c, r = len(configs), spec.replicates
    keys, replicate = configuration_lane_keys(spec.seed, configs["config_id"].to_numpy(), r)
    model = spec.rating_model
    settings = model.lane_designs(configs, r)
    truth, counts = lane_counts(settings, keys, "sampled", model)
    systems = int(np.shape(settings.battles)[-1])
    human = counts[..., 1, :].sum(axis=(1, 2, 3, 4))
    lap("counts")
    names = list(spec.estimators)
    scores, healths, summaries = [], [], []
    for estimator in spec.estimator_values():
        if stop is not None and stop.is_set():
            raise CancelledError("run_arena_shard: stopped before this estimator's calls")
        if estimator.posterior:
            judges = None if estimator.reads_judges else ()
            program = arena_inputs_program(systems, judges, SAMPLER_FOLD, estimator.verdicts)
            sampler_keys, data = program(keys, counts)
            shape = arena_shape_of(configs, estimator)
            got = sample_arenas(sampler_keys, data, shape, arena_sampler(spec))
            health = Health(got.rhat_max, got.ess_min, got.divergences)
            lap("fits")
            scored = score_rankings(got.strengths, truth, spec.interval)
        else:
            scored = score_ppr(counts, truth, spec.interval)
            health = Health.closed_form(len(replicate))
            lap("fits")
        scores.append(scored)
        healths.append(health)
        summaries.append(_summaries(scored, health, c, r))
        lap("summaries")
    if on_fits is not None:
        on_fits(len(replicate))
    fits = _fits_table(configs, replicate, human, scores, healths, names)
    surface = _surface_table(spec, shard.index, configs, names, summaries)
    lap("tables")
    return fits, surface, stages
