"""Shards: slices of the configurations table, and the one function that computes a shard.

:func:`run_shard` is what every runner calls, in-process or in a Ray task:
configurations → counts (expected, or drawn from each replicate's own key) →
fits (:func:`sweep.fits.fit_lanes`) → per-configuration summaries → two
Arrow tables, ``fits`` (one row per configuration × replicate) and
``surface`` (one row per configuration × γ × power). It reads and writes nothing.
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

from binmetric_sweep.kernels.counts import Design
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop
from binmetric_sweep.kernels.summaries import FitResults, summarize_configurations
from binmetric_sweep.sweep.config import SweepSpec
from binmetric_sweep.sweep.fits import FitMemo, fit_lanes_info
from binmetric_sweep.sweep.grid import CONFIG_COLUMNS, id_words
from binmetric_sweep.sweep.lanes import lane_counts, lane_keys, require_float64
from binmetric_sweep.sweep.schedule import Schedule, bucket, schedule_for

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

COUNT_COLUMNS = ("n_pos", "n_tp", "n_pos_paired", "n_tn", "n_neg_paired", "m_pos")
FIT_COLUMNS = (
    "config_id",
    "replicate",
    *COUNT_COLUMNS,
    "post_mean",
    "post_sd",
    "ci_low",
    "ci_high",
    "rhat",
    "ess",
    "sd_mcse",
    "divergences",
    "tree_depth",
    "steps",
    "exact",
    "finite",
)
SURFACE_COLUMNS = (
    *CONFIG_COLUMNS,
    "counts",
    "method",
    "replicates",
    "gamma",
    "power",
    "eps",
    "sd_mean",
    "sd_sd",
    "bias_mean",
    "bias_sd",
    "bias_mcse",
    "coverage",
    "coverage_mcse",
    "coverage_low",
    "coverage_high",
    "rhat_max",
    "ess_min",
    "divergences",
    "nonfinite",
    "shard",
)


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
        fits: one row per (configuration, replicate), columns :data:`FIT_COLUMNS`.
        surface: one row per (configuration, γ, power), columns :data:`SURFACE_COLUMNS`.
        node: where it ran (host name, and Ray node id when under Ray).
        seconds: wall-clock time spent computing it.
        device: what computed it, as "platform: kind" (JAX's first device,
            e.g. "cpu: cpu" or "gpu: NVIDIA H100 80GB HBM3"): a CPU and a GPU
            give different draws for the same seed.
        loop: the NUTS loop that ran its fits (``sampler.loop`` resolved for
            the device, :func:`kernels.nuts.resolve_loop`: never "auto"), ""
            for quadrature. On a GPU the chain kernel and the leapfrog loop
            give different draws for the same seed.
        stages: wall seconds of each step: "counts" (keys and counts), "fits"
            (programs traced, loaded or compiled included), "summaries" (per
            configuration), "tables" (Arrow).
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


def make_shards(configurations: pd.DataFrame, shard_size: int) -> list[Shard]:
    """Consecutive slices of ``shard_size`` configurations (the last may be shorter)."""
    return [
        Shard(i, configurations.iloc[start : start + shard_size].reset_index(drop=True))
        for i, start in enumerate(range(0, len(configurations), shard_size))
    ]


def nuts_settings(spec: SweepSpec) -> NUTSSettings:
    """The kernel's sampler settings for a sweep."""
    return NUTSSettings(**spec.sampler.model_dump())


def _designs(configurations: pd.DataFrame, replicates: int) -> Design:
    """``(C·R,)`` lane designs, each configuration repeated for its R replicates."""

    def column(name, dtype=float):
        return np.repeat(configurations[name].to_numpy(dtype=dtype, na_value=0), replicates)

    return Design(
        alpha=column("alpha"),
        rho=column("rho"),
        eta=column("eta"),
        n_phi=column("n_phi"),
        n_rho_eta=column("n_rho_eta"),
        psi=column("psi"),
        n_m=column("n_m"),
        shared_paired=column("shared_paired", bool),
        rho_eta_known=column("rho_eta_known", bool),
    )


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
            (:func:`sweep.schedule.schedule_for`; None: JAX's default device's).
        memo: exact fits of the sweep's other shards, taken for lanes with the
            same counts (:class:`sweep.fits.FitMemo`); the numbers do not depend on it.
        on_fits: called with the number of fits finished after each call.
        fault: test hook applied to the fits before they are summarised (for
            fault injection: it may put NaN or infinity into any field).
        stop: None, or an event that, once set, stops the shard's fits
            after the calls under way (:func:`sweep.fits.fit_lanes`), which
            then raise ``concurrent.futures.CancelledError``.

    Returns:
        The shard's fits and surface tables. Depends only on the sweep and the
        shard's configurations, never on other shards, the schedule's workers
        or where it runs.
    """
    require_float64()
    start = last = time.perf_counter()
    stages: dict[str, float] = {}

    def lap(stage: str) -> None:  # the wall time since the last lap, added to this stage's
        nonlocal last
        now = time.perf_counter()
        stages[stage] = stages.get(stage, 0.0) + now - last
        last = now

    configs = shard.configurations
    c, r = len(configs), spec.replicates
    words = np.repeat(id_words(configs["config_id"].to_numpy()), r, axis=0)
    replicate = np.tile(np.arange(r), c)
    keys = lane_keys(spec.seed, words, replicate)
    counts = lane_counts(_designs(configs, r), keys, spec.counts)
    lap("counts")
    schedule = schedule_for() if schedule is None else schedule
    nuts = resolve_loop(nuts_settings(spec), schedule.device)
    fits, info = fit_lanes_info(
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
    if fault is not None:
        fits = fault(fits)
    finite = np.isfinite(fits.post_mean) & np.isfinite(fits.post_sd)
    finite &= np.isfinite(fits.ci_low) & np.isfinite(fits.ci_high)
    fits = fits._replace(post_mean=np.where(finite, fits.post_mean, np.nan))
    fits_table = _fits_table(configs, replicate, counts, fits, finite)
    lap("tables")  # the fits' table; the surface's is added below
    gammas, powers = (
        np.asarray(v, np.float64).ravel()
        for v in np.meshgrid(spec.gamma, spec.power, indexing="ij")
    )
    summary = _summaries(configs, fits, r, gammas, powers)
    lap("summaries")
    surface = _surface_table(spec, shard.index, configs, gammas, powers, summary)
    lap("tables")
    rule_seconds: dict[str, float] = {}
    for call in info.calls:
        rule_seconds[call.rule] = rule_seconds.get(call.rule, 0.0) + call.seconds
    return ShardResult(
        shard.index,
        fits_table,
        surface,
        _node_name(),
        time.perf_counter() - start,
        device_name(),
        nuts.loop if spec.method == "nuts" else "",
        stages,
        rule_seconds,
    )


def _summaries(configs: pd.DataFrame, fits: FitResults, replicates: int, gammas, powers):
    """Each configuration's summaries over its replicates, as NumPy.

    The summaries run as JAX operations one by one, each compiled on first
    use for its shapes, so the configurations are padded to a power of two
    (repeating the first): a sweep's shards then share one set of compiled
    operations. Each configuration's row is computed on its own values alone,
    the same in any batch (tests/sweep/test_run.py: shard sizes change no
    number).
    """
    c = len(configs)
    rows = np.resize(np.arange(c), bucket(c))
    per_config = FitResults(*(np.asarray(x).reshape(c, replicates)[rows] for x in fits))
    summary = summarize_configurations(
        configs["alpha"].to_numpy(float)[rows],
        per_config,
        gammas,
        ((configs["n_phi"] == 0) & (configs["n_m"] == 0)).to_numpy()[rows],
        powers,
    )
    return jax.tree.map(lambda x: np.asarray(x)[:c], summary)


def _fits_table(configs, replicate, counts, fits: FitResults, finite) -> pa.Table:
    r = len(replicate) // max(len(configs), 1)
    columns = {
        "config_id": np.repeat(configs["config_id"].to_numpy(np.int64), r),
        "replicate": replicate.astype(np.int32),
    }
    for name in COUNT_COLUMNS:
        columns[name] = np.asarray(getattr(counts, name)).astype(np.int64)
    floats = ("post_mean", "post_sd", "ci_low", "ci_high", "rhat", "ess", "sd_mcse", "tree_depth")
    for name in floats:
        columns[name] = np.asarray(getattr(fits, name), np.float64)
    columns["divergences"] = np.asarray(fits.divergences).astype(np.int64)
    columns["steps"] = np.asarray(fits.steps).astype(np.int64)
    columns["exact"] = np.asarray(fits.exact, bool)
    columns["finite"] = np.asarray(finite, bool)
    return pa.table({name: columns[name] for name in FIT_COLUMNS})


def _surface_table(
    spec: SweepSpec, index: int, configs: pd.DataFrame, gammas, powers, summary
) -> pa.Table:
    g = len(gammas)  # one row per configuration and (γ, power) pair
    per_config = {name: configs[name].to_numpy() for name in configs.columns}
    columns = {name: np.repeat(values, g) for name, values in per_config.items()}
    columns["n_rho_eta"] = pd.array(np.repeat(configs["n_rho_eta"].to_numpy(), g), "Int64")
    columns["counts"] = [spec.counts] * (len(configs) * g)
    columns["method"] = [spec.method] * (len(configs) * g)
    columns["replicates"] = np.full(len(configs) * g, spec.replicates, np.int32)
    columns["gamma"] = np.tile(gammas, len(configs))
    columns["power"] = np.tile(powers, len(configs))
    columns["eps"] = np.asarray(summary.eps, np.float64).reshape(-1)
    for name in summary._fields:
        if name != "eps":
            values = np.repeat(np.asarray(summary[summary._fields.index(name)]), g)
            dtype = np.int64 if name in ("divergences", "nonfinite") else np.float64
            columns[name] = values.astype(dtype)
    columns["shard"] = np.full(len(configs) * g, index, np.int32)
    frame = pd.DataFrame({name: columns[name] for name in SURFACE_COLUMNS})
    return pa.Table.from_pandas(frame, preserve_index=False)
