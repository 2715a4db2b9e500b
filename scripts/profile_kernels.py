"""Where the kernels' device time goes: one NUTS call and the quadrature driver, traced.

For the next session with a GPU (benchmarks/GPU-NOTES.md, "Next", item 1):
the H100's NUTS and quadrature timings are 7.6 and 14 times short of their
targets, and what each compiled kernel costs there is not known.

On whatever device JAX has, on the benchmark's lanes
(``bench_kernels.sample_designs``):

  * NUTS: the driver's largest call (``sweep.fits.plan_chunks``), compiled
    and run once, then run again under ``jax.profiler.trace``. Reported: the
    wall time, the loop's iterations (the most leapfrogs of any chain in the
    call: the leapfrog loop runs until its last chain is done) and the mean,
    so the time an iteration and a chain-iteration (where the call's chains
    all run at once, as on an accelerator; on CPU they queue for 32 or 128 slots);
    and the host's time for the call's summaries (``host_summaries_s``:
    ``summarize_draws`` in one thread; ``host_summaries_in_blocks_s``: in
    blocks on every core, as ``fit_lanes`` runs them after each call);
  * quadrature: ``fit_lanes`` on the same lanes, run once, then traced;
  * for each, every device kernel's total time and launches (the ``--top``
    largest), and their sum against the wall time. On CPU, where there is no
    device plane, XLA's host threads stand in (for trying the script out).

Writes ``profile-<platform>-<time>.json`` under ``--out``; with ``--hlo``
also the NUTS call's and the quadrature programs' optimized HLO beside it
(gzipped), so that a fusion the table names can be read afterwards. Each
kernel is listed with its program (``hlo_module#program_id``), since
programs share kernel names (``loop_add_fusion`` in several).

Usage: python scripts/profile_kernels.py [--fits 4096] [--top 25] [--hlo]
           [--skip-quadrature] [--nuts-draws WARMUP SAMPLES] [--out DIR]
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import bench_kernels  # noqa: E402 - beside this script
import numpy as np  # noqa: E402
from bench_kernels import lanes, sample_designs, stage, timed  # noqa: E402
from jax.profiler import ProfileData  # noqa: E402
from result_record import StageLog, provenance  # noqa: E402 - beside this script

from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop, summarize_draws  # noqa: E402
from binmetric_sweep.sweep.fits import (  # noqa: E402
    fit_lanes,
    plan_chunks,
    usable_cores,
)


def kernel_times(trace_dir: str, top: int) -> dict:
    """Total time and launches of each kernel in the trace under ``trace_dir``.

    Device planes (``/device:…``) where there are any; else the host's XLA
    threads (CPU).
    """
    (path,) = glob.glob(f"{trace_dir}/**/*.xplane.pb", recursive=True)
    planes = list(ProfileData.from_file(path).planes)
    device = [p for p in planes if p.name.startswith("/device:")]
    lines = (
        [line for p in device for line in p.lines]
        if device
        else [
            line
            for p in planes
            if p.name == "/host:CPU"
            for line in p.lines
            if line.name.startswith("tf_XLA")
        ]
    )
    # Keyed by line, program and name: a device plane may show the same time
    # on several lines (streams, XLA ops, XLA modules), under different names,
    # and two programs may each have a kernel of the same name.
    total = collections.Counter()
    launches = collections.Counter()
    for line in lines:
        for event in line.events:
            key = line.name, _program(event), event.name
            total[key] += event.duration_ns
            launches[key] += 1
    by_line = collections.Counter()
    for (line_name, _, _), ns in total.items():
        by_line[line_name] += ns
    return {
        "source": "device planes" if device else "host XLA threads (no device plane)",
        "seconds_by_line": {name: ns * 1e-9 for name, ns in by_line.most_common()},
        "events": sum(launches.values()),
        "top": [
            {
                "line": line_name,
                "program": program,
                "name": name,
                "seconds": ns * 1e-9,
                "share_of_line": ns / by_line[line_name],
                "launches": launches[line_name, program, name],
            }
            for (line_name, program, name), ns in total.most_common(top)
        ],
    }


def _program(event) -> str:
    """The compiled program an event belongs to ("module#id"; "" where the trace has none)."""
    stats = dict(event.stats)
    module = stats.get("hlo_module", "")
    return f"{module}#{stats['program_id']}" if module and "program_id" in stats else module


def traced(fn, top: int) -> tuple[object, float, dict]:
    """``fn()`` under the profiler: its value, wall seconds and :func:`kernel_times`."""
    with tempfile.TemporaryDirectory(prefix="profile-") as trace_dir:
        with jax.profiler.trace(trace_dir):
            value, seconds = timed(fn)
        return value, seconds, kernel_times(trace_dir, top)


def profile_nuts(counts, keys, settings: NUTSSettings, top: int, hlo_path: Path | None) -> dict:
    chunks = [chunk for chunk in plan_chunks(counts, "nuts", nuts=settings) if not chunk.exact]
    chunk = max(chunks, key=lambda c: len(c.piece))
    n = len(chunk.piece)
    lanes_in = jax.tree.map(lambda x: np.asarray(x)[chunk.padded], counts)
    keys_in = keys[chunk.padded]

    def call():
        return jax.device_get(chunk.fn(keys_in, lanes_in, n))

    with stage(f"NUTS call of {n} fits: first run, compiling included"):
        _, first = timed(call)
    with stage(f"NUTS call of {n} fits: traced run, the trace read"):
        draws, seconds, kernels = traced(call, top)
    if hlo_path is not None:
        with stage("NUTS call's HLO written"), gzip.open(hlo_path, "wt") as f:
            f.write(chunk.fn.lower(keys_in, lanes_in, n).compile().as_text())
    leapfrogs = np.asarray(draws.leapfrogs)[:n]
    chains = len(chunk.padded) * leapfrogs.shape[1]
    slots = chunk.fn.static[-1]  # _nuts_fn's slots: the plan chose them
    # What fit_lanes does next, on the host: each fit's mean, SD, interval, R-hat, ESS
    # (timed the second time, once its tables and JAX's ops exist).
    alpha = np.asarray(draws.alpha)[:n]
    with stage("the call's summaries, twice in one thread and twice on every core"):
        for _ in range(2):
            _, summaries = timed(lambda: summarize_draws(alpha, 0.95))
        with ThreadPoolExecutor(usable_cores()) as pool:  # as fit_lanes does since 0.20.0
            for _ in range(2):
                _, in_blocks = timed(lambda: summarize_draws(alpha, 0.95, pool.map))
    result = {
        "loop": settings.loop,
        "fits": n,
        "padded_fits": len(chunk.padded),
        "chains_in_call": chains,
        "slots": slots,
        "first_call_s": first,
        "wall_s": seconds,
        "host_summaries_s": summaries,
        "host_summaries_threads": usable_cores(),
        "host_summaries_in_blocks_s": in_blocks,
        "mean_leapfrogs": float(leapfrogs.mean()),
        "most_leapfrogs": int(leapfrogs.max()),
    }
    if settings.loop == "kernel":
        totals = np.asarray(draws.leapfrogs, float).reshape(-1)  # the call's chains in order
        efficiency = bench_kernels.kernel_block_efficiency(totals, (settings.kernel_block,))
        result["block_lockstep_efficiency"] = efficiency[str(settings.kernel_block)]
    elif slots is None or slots >= chains:
        # Every chain in flight at once: the loop runs until the one with the most is done.
        iterations = int(leapfrogs.max())
        result.update(
            iterations=iterations,
            lockstep_efficiency=float(leapfrogs.mean() / iterations),
            seconds_per_iteration=seconds / iterations,
            ns_per_chain_iteration=seconds / iterations / chains * 1e9,
        )
    return {**result, **kernels}


def profile_quadrature(counts, top: int, hlo_path: Path | None) -> dict:
    def call():
        return fit_lanes(counts, None, "quadrature")

    with stage("quadrature: first run, compiling included"):
        _, first = timed(call)
    with stage("quadrature: traced run, the trace read"):
        _, seconds, kernels = traced(call, top)
    if hlo_path is not None:
        with stage("quadrature's HLO written"):
            write_quadrature_hlo(counts, hlo_path)
    b = int(np.asarray(counts.n_m).shape[0])
    return {"fits": b, "first_call_s": first, "wall_s": seconds, "per_s": b / seconds, **kernels}


def write_quadrature_hlo(counts, path: Path) -> None:
    """The optimized HLO of every program of the driver's passes (first and fallbacks), in one file.

    Each program's text starts with a line ``=== <rule> (<lanes> lanes)``; its
    ``HloModule`` line names it as the trace's ``program`` field does (without
    the ``#id``).
    """
    seen = set()
    with gzip.open(path, "wt") as f:
        for chunk in plan_chunks(counts, "quadrature"):
            lanes_in = jax.tree.map(lambda x, c=chunk: np.asarray(x)[c.padded], counts)
            stages = ((chunk.rule, chunk.fn), *((s.rule, s.fn) for s in chunk.fallbacks))
            for rule, fn in stages:
                if (id(fn), len(chunk.padded)) in seen:
                    continue
                seen.add((id(fn), len(chunk.padded)))
                f.write(f"=== {rule} ({len(chunk.padded)} lanes)\n")
                f.write(fn.lower(lanes_in, len(chunk.piece)).compile().as_text())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=4096, help="benchmark lanes to draw")
    parser.add_argument("--top", type=int, default=25, help="kernels to list, largest first")
    parser.add_argument(
        "--hlo", action="store_true", help="also write the NUTS call's and the quadrature's HLO"
    )
    parser.add_argument("--skip-quadrature", action="store_true")
    parser.add_argument(
        "--nuts-draws",
        type=int,
        nargs=2,
        metavar=("WARMUP", "SAMPLES"),
        help="fewer transitions than the default 500 + 1000 (a CPU's trace of the"
        " whole loop has tens of millions of events)",
    )
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--seed", type=int, default=0)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.fits < 1 or args.top < 1:
        parser.error("--fits and --top: at least 1")
    stem = f"profile-{jax.devices()[0].platform}"
    result = {**provenance("profile_kernels.py", argv), "partial": True}
    # Rewritten as each stage ends (printed to stderr too), so a run cut short says where.
    log = bench_kernels.LOG = StageLog(result, args.out, stem)
    path = log.path
    counts, keys = lanes(sample_designs(args.fits, args.seed), args.seed)
    hlo = path.with_name(path.stem + "-nuts-hlo.txt.gz") if args.hlo else None
    settings = resolve_loop(NUTSSettings())  # the loop "auto" runs here
    if args.nuts_draws:
        settings = settings._replace(warmup=args.nuts_draws[0], samples=args.nuts_draws[1])
    result["nuts_settings"] = settings._asdict()
    result["nuts"] = profile_nuts(counts, keys, settings, args.top, hlo)
    log.write()
    if not args.skip_quadrature:
        quadrature_hlo = path.with_name(path.stem + "-quadrature-hlo.txt.gz") if args.hlo else None
        result["quadrature"] = profile_quadrature(counts, args.top, quadrature_hlo)
    del result["partial"]
    log.write()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
