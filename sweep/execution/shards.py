"""Shards: slices of the configurations table, and the one function that computes a shard.

:func:`run_shard` is what every runner calls, in-process or in a Ray task:
configurations → counts (expected, or drawn from each replicate's own key) →
each estimator's estimates of every lane (the posterior's by
:func:`sweep.execution.fits.fit_lanes`, the classical ones by
:func:`sweep.execution.estimates.estimate_lanes`) → per-configuration summaries → two
Arrow tables, ``fits`` (one row per configuration × replicate × estimator) and
``surface`` (one row per configuration × estimator × γ × power), whose columns
are the column registry's (:mod:`sweep.storage.columns`): a computed column it does not
list, or a listed one not computed, fails the shard naming it. It reads and
writes nothing.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

import jax
import numpy as np
import pandas as pd
import pyarrow as pa

from binmetric_sweep.kernels.estimators import REASONS, Estimate, is_posterior, posterior_estimate
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop
from binmetric_sweep.kernels.summaries import (
    FitResults,
    SamplerHealth,
    counted,
    sampler_health,
    summarize_estimates,
)
from binmetric_sweep.sweep.execution.arena_shards import run_arena_shard
from binmetric_sweep.sweep.execution.categorical_fits import fit_categorical_lanes
from binmetric_sweep.sweep.execution.estimates import estimate_lanes
from binmetric_sweep.sweep.execution.fits import FitMemo, fit_lanes
from binmetric_sweep.sweep.execution.schedule import Schedule, bucket, schedule_for
from binmetric_sweep.sweep.spec.config import SweepSpec
from binmetric_sweep.sweep.spec.lanes import (
    configuration_lane_keys,
    lane_counts,
    require_float64,
)
from binmetric_sweep.sweep.spec.rating_model import ARENA
from binmetric_sweep.sweep.storage.columns import (
    COUNT_COLUMNS,
    FIT_COLUMNS,
    FITS,
    SURFACE,
    SURFACE_COLUMNS,
    check_schema,
    ordered,
    registered,
    schema,
)

__all__ = [
    "Shard",
    "ShardResult",
    "make_shards",
    "nuts_settings",
    "run_shard",
    "COUNT_COLUMNS",
    "FIT_COLUMNS",
    "SURFACE_COLUMNS",
]


class Shard(NamedTuple):
    """A contiguous slice of the configurations table.

    Attributes:
        index: the shard's number, from 0, in configuration order.
        configurations: its rows of the configurations table.
    """

    index: int
    configurations: pd.DataFrame


class ShardResult(NamedTuple):
    """What computing one shard gives.

    Attributes:
        index: the shard's number.
        fits: one row per (configuration, replicate, estimator), columns :data:`FIT_COLUMNS`.
        surface: one row per (configuration, estimator, γ, power), columns
            :data:`SURFACE_COLUMNS`.
        node: where it ran (host name, and Ray node id when under Ray).
        seconds: wall-clock time spent computing it.
        device: what computed it, as "platform: kind" (JAX's first device,
            e.g. "cpu: cpu" or "gpu: NVIDIA H100 80GB HBM3"): a CPU and a GPU
            give different draws for the same seed.
        loop: the NUTS loop that ran its fits (``sampler.loop`` resolved for
            the device, :func:`kernels.nuts.resolve_loop`: never "auto"), ""
            for quadrature, "numpyro" for an arena's (NumPyro's NUTS kernel). On a
            GPU the chain kernel and the leapfrog loop give different draws for the
            same seed.
        stages: wall seconds of each step: "counts" (keys and counts), "fits"
            (the posterior's; programs traced, loaded or compiled included),
            "estimators" (the classical ones), "summaries" (per configuration),
            "tables" (Arrow).
        rule_seconds: of "fits", the seconds of each rule's calls (or "nuts"),
            summed over calls that may overlap in time (several workers).
    """

    index: int
    fits: pa.Table
    surface: pa.Table
    node: str
    seconds: float
    device: str = ""
    loop: str = ""
    stages: Mapping[str, float] = MappingProxyType({})
    rule_seconds: Mapping[str, float] = MappingProxyType({})


def make_shards(
    configurations: pd.DataFrame, shard_size: int, layout_columns: tuple[str, ...] = ()
) -> list[Shard]:
    """Consecutive slices of ``shard_size`` configurations (the last of a run may be shorter).

    With ``layout_columns`` (:attr:`sweep.spec.rating_model.RatingModel.layout_columns`), a
    slice never spans a change of their values: a shard's lanes share one layout of counts
    and one model.
    """
    if not layout_columns or len(configurations) == 0:
        starts = list(range(0, len(configurations), shard_size))
        ends = [*starts[1:], len(configurations)]
    else:
        values = configurations[list(layout_columns)].to_numpy()
        changes = (values[1:] != values[:-1]).any(axis=1)
        breaks = [0, *np.flatnonzero(changes) + 1, len(values)]
        starts, ends = [], []
        for first, last in zip(breaks[:-1], breaks[1:], strict=True):
            starts += range(first, last, shard_size)
            ends += [*range(first + shard_size, last, shard_size), last]
    return [
        Shard(i, configurations.iloc[start:end].reset_index(drop=True))
        for i, (start, end) in enumerate(zip(starts, ends, strict=True))
    ]


def nuts_settings(spec: SweepSpec) -> NUTSSettings:
    """The kernel's sampler settings for a sweep."""
    return NUTSSettings(**spec.sampler.model_dump())


def device_name() -> str:
    """JAX's first device as "platform: kind", the device a shard's fits run on."""
    device = jax.devices()[0]
    return f"{device.platform}: {device.device_kind}"


def _node_name() -> str:
    """This host's name, and under Ray the node's id (its first 12 characters)."""
    name = socket.gethostname()
    # Ray is running only where it has been imported. Importing it here to ask would
    # add Ray's import time to every in-process run, and load Ray where it is unused.
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        name += f"/{ray.get_runtime_context().get_node_id()[:12]}"
    return name


def run_shard(
    spec: SweepSpec,
    shard: Shard,
    *,
    schedule: Schedule | None = None,
    memo: FitMemo | None = None,
    on_fits: Callable[[int], None] | None = None,
    fault: Callable[[FitResults], FitResults] | None = None,
    stop: threading.Event | None = None,
) -> ShardResult:
    """Compute one shard: counts, fits and per-configuration summaries.

    Args:
        spec: the sweep.
        shard: the configurations to compute.
        schedule: how its fits are laid out on the device
            (:func:`sweep.execution.schedule.schedule_for`; None: JAX's default device's).
        memo: exact fits of the sweep's other shards, taken for lanes with the
            same counts (:class:`sweep.execution.fits.FitMemo`); the numbers do not depend on it.
        on_fits: called with the number of fits finished after each call.
        fault: test hook applied to the fits before they are summarised (for
            fault injection: it may put NaN or infinity into any field).
        stop: None, or an event that, once set, stops the shard's fits
            after the calls under way (:func:`sweep.execution.fits.fit_lanes`), which
            then raise ``concurrent.futures.CancelledError``.

    Returns:
        The shard's fits and surface tables. Depends only on the sweep and the
        shard's configurations, never on other shards, the schedule's workers
        or where it runs. An arena sweep's are leaderboards scored against their truth
        (:func:`sweep.execution.arena_shards.run_arena_shard`; ``schedule``, ``memo`` and
        ``fault`` are for the fits of one estimand and not read there).
    """
    require_float64()
    start = time.perf_counter()
    if spec.rating_model is ARENA:
        fits_table, surface, stages = run_arena_shard(spec, shard, on_fits=on_fits, stop=stop)
        loop, rule_seconds = "numpyro", {}
    else:
        fits_table, surface, loop, stages, rule_seconds = _estimate_shard(
            spec, shard, schedule, memo, on_fits, fault, stop
        )
    return ShardResult(
        shard.index,
        fits_table,
        surface,
        _node_name(),
        time.perf_counter() - start,
        device_name(),
        loop,
        stages,
        rule_seconds,
    )


def _estimate_shard(
    spec: SweepSpec,
    shard: Shard,
    schedule: Schedule | None,
    memo: FitMemo | None,
    on_fits: Callable[[int], None] | None,
    fault: Callable[[FitResults], FitResults] | None,
    stop: threading.Event | None,
) -> tuple[pa.Table, pa.Table, str, dict[str, float], dict[str, float]]:
    """:func:`run_shard` for one estimand's estimators (every rating model but the arena).

    Returns:
        ``(fits, surface, loop, stages, rule_seconds)``, as :class:`ShardResult` holds them.
    """
    last = time.perf_counter()
    stages: dict[str, float] = {}

    def lap(stage: str) -> None:  # the wall time since the last lap, added to this stage's
        nonlocal last
        now = time.perf_counter()
        stages[stage] = stages.get(stage, 0.0) + now - last
        last = now

    configs = shard.configurations
    r = spec.replicates
    keys, replicate = configuration_lane_keys(spec.seed, configs["config_id"].to_numpy(), r)
    model = spec.rating_model
    counts = lane_counts(model.lane_designs(configs, r), keys, spec.counts, model)
    layout = None if model.layout is None else model.layout(configs)
    lap("counts")
    schedule = schedule_for() if schedule is None else schedule
    nuts = resolve_loop(nuts_settings(spec), schedule.device)
    estimates: dict[str, Estimate] = {}
    fits, calls = None, ()
    chosen = spec.estimator_values()
    posterior = next((e.name for e in chosen if e.posterior), None)
    if posterior is not None and layout is not None:
        fits, info = fit_categorical_lanes(
            counts,
            keys,
            layout,
            model.independent_judges(configs),
            method=spec.method,
            level=spec.interval,
            nuts=nuts,
            schedule=schedule,
            on_chunk=on_fits,
            stop=stop,
        )
        lap("fits")
    elif posterior is not None:
        fits, info = fit_lanes(
            counts,
            keys,
            spec.method,
            level=spec.interval,
            nuts=nuts,
            schedule=schedule,
            on_chunk=on_fits,
            stop=stop,
            memo=memo,
        )
        lap("fits")
    if posterior is not None:
        calls = info.calls
        if fault is not None:
            fits = fault(fits)
        finite = np.isfinite(fits.post_mean) & np.isfinite(fits.post_sd)
        finite &= np.isfinite(fits.ci_low) & np.isfinite(fits.ci_high)
        fits = fits._replace(post_mean=np.where(finite, fits.post_mean, np.nan))
        estimates[posterior] = posterior_estimate(
            fits.post_mean, fits.post_sd, fits.ci_low, fits.ci_high
        )
    classical = tuple(e for e in chosen if not e.posterior)
    if classical:
        estimates.update(estimate_lanes(counts, classical, spec.interval, schedule, layout))
        if on_fits is not None and posterior is None:  # progress counts lanes, fitted or not
            on_fits(len(replicate))
        lap("estimators")
    fits_table = _fits_table(configs, replicate, counts, estimates, fits, model)
    lap("tables")  # the fits' table; the surface's is added below
    gammas, powers = (
        np.asarray(v, np.float64).ravel()
        for v in np.meshgrid(spec.gamma, spec.power, indexing="ij")
    )
    truth = configs[model.truth].to_numpy(float)
    summaries = _summaries(configs, truth, estimates, posterior, fits, r, gammas, powers)
    lap("summaries")
    surface = _surface_table(spec, shard.index, configs, gammas, powers, summaries)
    lap("tables")
    rule_seconds: dict[str, float] = {}
    for call in calls:
        rule_seconds[call.rule] = rule_seconds.get(call.rule, 0.0) + call.seconds
    loop = nuts.loop if posterior is not None and spec.method == "nuts" else ""
    return fits_table, surface, loop, stages, rule_seconds


def _summaries(
    configs: pd.DataFrame,
    truth: np.ndarray,
    estimates: dict[str, Estimate],
    posterior: str | None,
    fits: FitResults | None,
    replicates: int,
    gammas,
    powers,
) -> dict[str, tuple]:
    """Each estimator's summaries of each configuration over its replicates, as NumPy:
    ``{name: (EstimateSummary, SamplerHealth or None)}``.

    The summaries run as JAX operations one by one, each compiled on first
    use for its shapes, so the configurations are padded to a power of two
    (repeating the first): a sweep's shards then share one set of compiled
    operations. Each configuration's row is computed on its own values alone,
    the same in any batch (tests/sweep/test_run.py: shard sizes change no
    number). The classical estimators are summarised in one batch, stacked
    along the configurations; the posterior on its own, as before they existed.
    """
    c = len(configs)
    rows = np.resize(np.arange(c), bucket(c))
    alpha = truth[rows]

    def per_config(x):
        return np.asarray(x).reshape(c, replicates)[rows]

    def host(tree, k=0):
        return jax.tree.map(lambda x: np.asarray(x)[k * len(rows) : k * len(rows) + c], tree)

    out: dict[str, tuple] = {}
    if posterior is not None:
        bayes = Estimate(*(per_config(x) for x in estimates[posterior]))
        no_evidence = ((configs["n_phi"] == 0) & (configs["n_m"] == 0)).to_numpy()[rows]
        summary = summarize_estimates(alpha, bayes, gammas, no_evidence, powers)
        health = sampler_health(FitResults(*(per_config(x) for x in fits)), counted(bayes))
        out[posterior] = (host(summary), host(health))
    classical = [name for name in estimates if name != posterior]
    if classical:
        stacked = Estimate(
            *(
                np.concatenate([per_config(estimates[name][f]) for name in classical])
                for f in range(len(Estimate._fields))
            )
        )
        k = len(classical)
        summary = summarize_estimates(
            np.tile(alpha, k), stacked, gammas, np.zeros(k * len(rows), bool), powers
        )
        for i, name in enumerate(classical):
            out[name] = (host(summary, i), None)
    return out


#: The fields of :class:`kernels.summaries.FitResults` that are the posterior's estimate
#: (:func:`kernels.estimators.posterior_estimate`); its others are sampler diagnostics.
_POSTERIOR_ESTIMATE = ("post_mean", "post_sd", "ci_low", "ci_high")


def _strings(codes, words, null=None) -> pa.Array:
    """A string column of ``words[code]`` for each code (null where ``null``)."""
    indices = pa.array(np.asarray(codes, np.int32), mask=null)
    return pa.DictionaryArray.from_arrays(indices, pa.array(list(words))).cast(pa.string())


def _count_column(values, repeats: int):
    """A lane's count (``(B,)``) or count vector (``(B, ...)``, flattened row-major) on each
    of its ``repeats`` rows: int64, or an Arrow list of int64."""
    x = np.repeat(np.asarray(values).astype(np.int64), repeats, axis=0)
    if x.ndim == 1:
        return x
    flat = x.reshape(len(x), -1)
    offsets = np.arange(len(flat) + 1, dtype=np.int32) * flat.shape[1]
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.reshape(-1)))


def _fits_table(
    configs, replicate, counts, estimates: dict[str, Estimate], fits, model
) -> pa.Table:
    """One row per (configuration, replicate, estimator), the estimators in their order."""
    names = list(estimates)
    e, b = len(names), len(replicate)
    r = b // max(len(configs), 1)

    def each(x):  # a lane's value on each of its estimators' rows
        return np.repeat(np.asarray(x), e)

    def interleaved(arrays, dtype):  # (B,) per estimator -> (B·E,), lane-major
        return np.stack([np.asarray(a, dtype) for a in arrays], axis=1).reshape(-1)

    columns = {
        "config_id": each(np.repeat(configs["config_id"].to_numpy(np.int64), r)),
        "replicate": each(replicate.astype(np.int32)),
        "estimator": _strings(np.tile(np.arange(e, dtype=np.int8), b), names),
    }
    for name in model.count_fields:
        columns[name] = _count_column(getattr(counts, name), e)
    applicable = interleaved([estimates[n].applicable for n in names], bool)
    for column, field in (("estimate", 0), ("se", 1), ("ci_low", 2), ("ci_high", 3)):
        values = interleaved([estimates[n][field] for n in names], np.float64)
        columns[column] = pa.array(values, mask=~applicable)
    columns["applicable"] = applicable
    reason = interleaved([estimates[n].reason for n in names], np.int8)
    columns["reason"] = _strings(reason, REASONS, null=applicable)

    diagnostics = [f for f in FitResults._fields if f not in _POSTERIOR_ESTIMATE]
    for name in diagnostics:  # the posterior's; ``unsampled`` on the other estimators
        column = registered(FITS, name, "sampler")
        per_name = [
            getattr(fits, name) if is_posterior(n) else np.full(b, column.unsampled) for n in names
        ]
        columns[name] = interleaved(per_name, column.numpy)
    finite = [
        counted(estimates[n]) & np.isfinite(estimates[n].ci_low) & np.isfinite(estimates[n].ci_high)
        for n in names
    ]
    columns["finite"] = interleaved(finite, bool)
    table = pa.table(ordered(FITS, columns, model.columns))
    check_schema(FITS, table.schema, model.columns)
    return table


def _surface_table(
    spec: SweepSpec, index: int, configs: pd.DataFrame, gammas, powers, summaries: dict
) -> pa.Table:
    """One row per configuration, estimator and (γ, power) pair, in that order."""
    g, names = len(gammas), list(summaries)
    e, c = len(names), len(configs)
    n = c * e * g
    per_config = {name: configs[name].to_numpy() for name in configs.columns}
    columns = {name: np.repeat(values, e * g) for name, values in per_config.items()}
    columns["n_rho_eta"] = pd.array(np.repeat(configs["n_rho_eta"].to_numpy(), e * g), "Int64")
    columns["counts"] = [spec.counts] * n
    columns["method"] = pd.array([spec.method if spec.has_posterior else None] * n, "string")
    columns["replicates"] = np.full(n, spec.replicates, np.int32)
    for name, setting in spec.surface_settings().items():
        columns[name] = [setting] * n
    columns["estimator"] = np.array(names, object)[np.tile(np.repeat(np.arange(e), g), c)]
    columns["gamma"] = np.tile(gammas, c * e)
    columns["power"] = np.tile(powers, c * e)

    def rows(values, per_gamma=False):  # (C,) or (C, G) per estimator -> (C·E·G,)
        stacked = np.stack([np.asarray(v) for v in values], axis=1)  # (C, E) or (C, E, G)
        return (stacked if per_gamma else np.repeat(stacked[..., None], g, axis=2)).reshape(-1)

    for field in summaries[names[0]][0]._fields:
        column = registered(SURFACE, field, "summary")
        values = [getattr(summaries[name][0], field) for name in names]
        columns[field] = rows(values, per_gamma=column.per_level).astype(column.numpy)
    for field in SamplerHealth._fields:  # the posterior's; ``unsampled`` for the others
        column = registered(SURFACE, field, "sampler")
        values = [
            getattr(summaries[name][1], field)
            if summaries[name][1] is not None
            else np.full(c, column.unsampled)
            for name in names
        ]
        columns[field] = rows(values).astype(column.numpy)
    columns["shard"] = np.full(n, index, np.int32)
    model = spec.rating_model.columns
    frame = pd.DataFrame(ordered(SURFACE, columns, model))
    table = pa.Table.from_pandas(frame, preserve_index=False)
    for i, field in enumerate(table.schema):  # a column of nulls alone has no type of its own
        if pa.types.is_null(field.type):
            typed = schema(SURFACE, model).field(field.name)
            table = table.set_column(i, typed, table.column(i).cast(typed.type))
    check_schema(SURFACE, table.schema, model)
    return table
