"""The Python API: run a sweep, ask how far it is, load what it made.

The pipeline is sweep file → configurations → shards → fits → Parquet: each
step is its own function (:func:`sweep.spec.config.load_sweep`,
:func:`sweep.spec.grid.expand_grid`, :func:`sweep.execution.shards.make_shards`,
:func:`sweep.execution.shards.run_shard`, :class:`sweep.storage.store.Store`) and :func:`run`
chains them. The CLI is a thin layer over these functions.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import jax
import pandas as pd

from binmetric_sweep.kernels.summaries import FitResults
from binmetric_sweep.sweep.display.progress import ProgressBar
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.compile_cache import (
    DEFAULT,
    CompileClock,
    use_compilation_cache,
)
from binmetric_sweep.sweep.execution.shards import make_shards
from binmetric_sweep.sweep.paths import check_out_dir
from binmetric_sweep.sweep.spec.config import SweepSpec, load_sweep, spec_from_canonical
from binmetric_sweep.sweep.spec.grid import DEFAULT_MAX_CONFIGURATIONS, expand_grid
from binmetric_sweep.sweep.storage.store import Store, open_store, read_manifest

__all__ = [
    "IncompleteSweepWarning",
    "RunReport",
    "SweepStatus",
    "run",
    "status",
    "load_surface",
    "load_fits",
    "unfinished_note",
]

Backend = Literal["local", "ray"]


class IncompleteSweepWarning(UserWarning):
    """:func:`load_surface` or :func:`load_fits` of a sweep whose shards are not all done.

    The rows are part of the grid only (a run was interrupted, or a shard is
    corrupt); the next ``sweep run`` of the same sweep file into the same
    directory computes the rest. Silence it with
    ``warnings.simplefilter("ignore", sweep.IncompleteSweepWarning)``.
    """


@dataclass(frozen=True)
class RunReport:
    """What one call of :func:`run` did.

    ``stages``: where its wall time went, in seconds: "start" (the sweep file,
    the grid, the store opened), then over the shards it computed "counts",
    "fits" (of which "programs": traced, loaded or compiled, in this process),
    "summaries", "tables" (Arrow), and "writes" (Parquet, synced). With shards
    begun ahead the shards' stages overlap in time. ``rule_seconds``: of
    "fits", each quadrature rule's (or NUTS's) calls, summed over calls that
    overlap in time.
    """

    out: Path
    configurations: int
    shards: int
    already_done: int
    computed: int
    recomputed_corrupt: list[int] = field(default_factory=list)
    stale_temporaries: int = 0
    seconds: float = 0.0
    compile_cache: Path | None = None
    stages: dict[str, float] = field(default_factory=dict)
    rule_seconds: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        """One readable line for the user."""
        line = (
            f"{self.out}: {counted(self.shards, 'shard')} "
            f"({counted(self.configurations, 'configuration')}); "
            f"{self.already_done:,} already done, {self.computed:,} computed in "
            f"{self.seconds:.1f} s"
        )
        if self.recomputed_corrupt:
            listed = ", ".join(str(i) for i in self.recomputed_corrupt)
            line += f"; recomputed corrupt {plural(len(self.recomputed_corrupt), 'shard')} {listed}"
        if self.stale_temporaries:
            line += f"; removed {counted(self.stale_temporaries, 'temporary file')} of a killed run"
        return line


@dataclass(frozen=True)
class SweepStatus:
    """How far a sweep directory is."""

    out: Path
    name: str
    shards: int
    done: int
    missing: list[int]
    corrupt: dict[int, str]
    configurations: int
    configurations_done: int
    fits_done: int
    compute_seconds: float
    elapsed_seconds: float
    nodes: dict[str, int]
    devices: dict[str, int] = field(default_factory=dict)
    loops: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """A few readable lines for the user."""
        out = [
            f"sweep {self.name!r} in {self.out}",
            f"shards: {self.done} done, {len(self.missing)} to do, {len(self.corrupt)} corrupt "
            f"(of {self.shards})",
            f"configurations: {self.configurations_done:,} done, "
            f"{self.configurations - self.configurations_done:,} to do; fits: {self.fits_done:,}",
            f"time: {self.compute_seconds:.1f} s computing shards (summed over the shards, "
            f"which may overlap), {self.elapsed_seconds:.1f} s of wall time between the first "
            "and the last shard written",
        ]
        for index, reason in sorted(self.corrupt.items()):
            out.append(f"corrupt: shard {index}: {reason} (the next `sweep run` recomputes it)")
        devices = Counter()
        for name, k in self.devices.items():
            devices[device_name(name)] += k
        labelled = (("node", self.nodes), ("device", devices), ("NUTS loop", self.loops))
        for label, counts in labelled:
            if counts:
                listed = ", ".join(
                    f"{name} ({counted(k, 'shard')})" for name, k in sorted(counts.items())
                )
                out.append(f"{plural(len(counts), label)}: {listed}")
        if len(set(self.devices) - {"not recorded"}) > 1:
            out.append(
                "note: shards were computed on different kinds of device, whose draws differ "
                "for the same seed (see the README, GPU)"
            )
        return out


def plural(n: int, word: str) -> str:
    """``word`` for one, else its plural (``shard`` → ``shards``)."""
    return word if n == 1 else f"{word}s"


def counted(n: int, word: str) -> str:
    """``1 shard``, ``2 shards``, ``1,024 configurations``."""
    return f"{n:,} {plural(n, word)}"


def device_name(recorded: str) -> str:
    """A shard's recorded device (``platform: kind``) as a person names it.

    ``cpu: cpu`` → ``cpu``; ``gpu: NVIDIA H200`` → ``NVIDIA H200 (gpu)``.
    """
    platform, _, kind = recorded.partition(": ")
    if not kind or kind.lower() == platform.lower():
        return platform
    return f"{kind} ({platform})"


def _plan(sweep, max_configurations: int):
    spec = load_sweep(sweep)
    configurations = expand_grid(spec, max_configurations)
    shards = make_shards(configurations, spec.shard_size, spec.rating_model.layout_columns)
    return spec, configurations, shards


def run(
    sweep: str | Path | dict | SweepSpec,
    out: str | Path,
    backend: Backend = "local",
    *,
    address: str | None = None,
    progress: bool | None = None,
    max_configurations: int = DEFAULT_MAX_CONFIGURATIONS,
    fault: Callable[[FitResults], FitResults] | None = None,
    compile_cache: str | Path | None = DEFAULT,
    shards_ahead: int | None = None,
) -> RunReport:
    """Run (or finish) a sweep into ``out``; shards already on disk are not recomputed.

    An entry point: it switches JAX to float64 for this process (the kernels'
    accuracy is checked in float64), as :func:`sweep.plan.plan_grid` does.

    Args:
        sweep: a sweep file path, YAML text, a dict or a :class:`SweepSpec`.
        out: the output directory (created; must be new, empty, or hold this sweep).
        backend: "local" (in-process, CPU or GPU) or "ray".
        address: Ray cluster address (else ``RAY_ADDRESS``, else a local Ray).
        progress: show a progress bar of fits on standard error (:mod:`sweep.display.progress`);
            None (the default): when standard error is a terminal.
        max_configurations: refuse sweeps with more fits than this.
        fault: fault-injection hook applied to each shard's fits (tests).
        compile_cache: where to keep traced and compiled programs for later runs: a
            directory, "default" (the default:
            :func:`sweep.execution.compile_cache.default_cache_dir`) or None (not at all,
            unless JAX already has a cache directory); on Ray, each worker
            process uses the same request. See :mod:`sweep.execution.compile_cache`.
        shards_ahead: with the local backend, shards begun before the one in
            hand is written (:func:`sweep.execution.runners.run_local`; None: the
            device's, :func:`sweep.execution.schedule.schedule_for`). The numbers do not
            depend on it.

    Raises:
        SweepError: bad input; nothing is written.
    """
    jax.config.update("jax_enable_x64", True)
    if backend not in ("local", "ray"):
        raise SweepError(f"--backend: {backend!r} is not a backend; allowed: local, ray")
    started = time.perf_counter()
    spec, configurations, shards = _plan(sweep, max_configurations)
    check_out_dir(out)  # before a compile cache is made: an unwritable --out writes nothing
    cache = use_compilation_cache(compile_cache)
    store = open_store(out, spec, [len(s.configurations) for s in shards], create=True)
    stages: dict[str, float] = {}
    rule_seconds: dict[str, float] = {}
    with store.lock(), CompileClock() as programs:
        stale = store.remove_stale_temporaries()
        states = store.states()
        corrupt = [s.index for s in states if s.state == "corrupt"]
        todo = [shards[s.index] for s in states if s.state != "done"]
        done_configs = sum(len(shards[s.index].configurations) for s in states if s.state == "done")
        if progress is None:
            progress = sys.stderr.isatty()
        bar = (
            ProgressBar(
                spec.name, len(configurations) * spec.replicates, done_configs * spec.replicates
            )
            if progress
            else None
        )

        def on_fits(n: int) -> None:
            if bar is not None:
                bar.add(n)

        if backend == "local":
            from binmetric_sweep.sweep.execution.runners import run_local
            from binmetric_sweep.sweep.execution.schedule import schedule_for

            schedule = schedule_for(shards_ahead=shards_ahead)
            results = run_local(spec, todo, schedule=schedule, on_fits=on_fits, fault=fault)
        else:
            from binmetric_sweep.sweep.execution.ray_runner import run_ray

            # A named directory as this process resolved it, for workers elsewhere.
            request = compile_cache if cache is None or compile_cache == DEFAULT else cache
            results = run_ray(spec, todo, address=address, fault=fault, compile_cache=request)
        computed = 0
        stages["start"] = time.perf_counter() - started
        try:
            for result in results:
                wrote = time.perf_counter()
                store.write_shard(result)
                _add(stages, {"writes": time.perf_counter() - wrote, **result.stages})
                _add(rule_seconds, result.rule_seconds)
                computed += 1
                if bar is not None:
                    if backend == "ray":
                        bar.add(len(shards[result.index].configurations) * spec.replicates)
                    bar.shards(len(shards) - len(todo) + computed, len(shards))
        finally:
            if bar is not None:
                bar.close()
    stages["programs"] = programs.seconds
    return RunReport(
        out=Path(out),
        configurations=len(configurations),
        shards=len(shards),
        already_done=len(shards) - len(todo),
        computed=computed,
        recomputed_corrupt=corrupt,
        stale_temporaries=stale,
        seconds=time.perf_counter() - started,
        compile_cache=cache,
        stages=stages,
        rule_seconds=rule_seconds,
    )


def _add(total: dict[str, float], more) -> None:
    for name, seconds in more.items():
        total[name] = total.get(name, 0.0) + seconds


def _open_existing(out: str | Path) -> tuple[Store, dict]:
    manifest = read_manifest(out)
    spec = spec_from_canonical(manifest["sweep"])
    return Store(Path(out), spec, [int(n) for n in manifest["shard_rows"]]), manifest


def status(out: str | Path) -> SweepStatus:
    """How far the sweep in ``out`` is: shards done, to do and corrupt, fits, time, nodes."""
    store, manifest = _open_existing(out)
    states = store.states()
    done = [s for s in states if s.state == "done"]
    written = [s.written for s in done]
    configs_done = sum(store.shard_rows[s.index] for s in done)
    return SweepStatus(
        out=Path(out),
        name=store.spec.name,
        shards=len(states),
        done=len(done),
        missing=[s.index for s in states if s.state == "missing"],
        corrupt={s.index: s.reason for s in states if s.state == "corrupt"},
        configurations=int(manifest["configurations"]),
        configurations_done=configs_done,
        fits_done=configs_done * store.spec.replicates,
        compute_seconds=sum(s.seconds for s in done),
        elapsed_seconds=(max(written) - min(written)) if written else 0.0,
        nodes=dict(Counter(s.node for s in done)),
        devices=dict(Counter(s.device or "not recorded" for s in done)),
        loops=dict(Counter(s.loop or "not recorded" for s in done))
        if store.spec.has_posterior and store.spec.method == "nuts"
        else {},
    )


def unfinished_note(frame: pd.DataFrame, what: str) -> str | None:
    """``3 of 5 shards done: {what} part of the sweep; …`` for a frame of an unfinished
    sweep (from :func:`load_surface` or :func:`load_fits`), else None.

    ``what`` names the reader's view: ``"the table shows"``, ``"the surface holds"``.
    """
    shards, done = frame.attrs.get("shards"), frame.attrs.get("shards_done")
    if shards is None or done is None or done >= shards:
        return None
    corrupt = frame.attrs.get("shards_corrupt", 0)
    also = f" ({corrupt} corrupt)" if corrupt else ""
    return (
        f"{done} of {shards} shards done{also}: {what} part of the sweep; run `sweep run` "
        f"with its sweep file and --out {frame.attrs.get('dir', 'DIR')} again to finish"
    )


def _load(out: str | Path, table: str, filters: dict) -> pd.DataFrame:
    store, _ = _open_existing(out)
    states = store.states()
    paths = [store.path(table, s.index) for s in states if s.state == "done"]
    if not paths:
        raise SweepError(f"DIR: {str(out)!r} has no finished shards yet")
    frame = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    if filters:
        from binmetric_sweep.sweep.display.tables import filter_surface

        frame = filter_surface(frame, filters, option=None)
    # What the rows cannot say themselves: the intervals' nominal level (sweep.display.tables
    # marks estimators that cover far less often) and how much of the sweep they are.
    frame.attrs.update(
        dir=str(out),
        interval=float(store.spec.interval),
        shards=len(states),
        shards_done=len(paths),
        shards_corrupt=sum(s.state == "corrupt" for s in states),
    )
    note = unfinished_note(frame, "the surface holds" if table == "surface" else "the fits hold")
    if note:
        warnings.warn(f"{out}: {note}", IncompleteSweepWarning, stacklevel=3)
    return frame


def load_surface(out: str | Path, **filters) -> pd.DataFrame:
    """The surface of finished shards as a DataFrame, optionally filtered by equal values.

    Example: ``load_surface("runs/quickstart", rho=0.7, gamma=0.05)``, or
    ``load_surface("runs/estimators", estimator="ppi_pp")``.

    ``attrs`` records what the rows do not: ``interval`` (the sweep's nominal
    interval level), ``shards`` and ``shards_done``. Where some shards are not
    done (an interrupted run) it warns with an :class:`IncompleteSweepWarning`
    (``3 of 5 shards done: …``): the rows are then part of the grid.
    """
    return _load(out, "surface", filters)


def load_fits(out: str | Path, **filters) -> pd.DataFrame:
    """The per-fit rows of finished shards (one per configuration, replicate and estimator).

    Filters by ``estimator``, e.g. ``load_fits(out, estimator="bayes")``; join the
    surface on ``config_id`` for a configuration's settings. ``attrs`` and the
    warning for an unfinished sweep as for :func:`load_surface`.
    """
    return _load(out, "fits", filters)
