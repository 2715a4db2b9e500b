"""Kernel throughput, side by side in one run, written as JSON under benchmarks/results/.

Measures, on whatever device JAX has:
  * quadrature posteriors/s and batched NUTS fits/s at several batch sizes,
    NUTS with each of its loops (``NUTSSettings.loop``): "leapfrog"
    (kernels/stepwise.py, the default on CPU) and "kernel"
    (kernels/chain_kernel.py, the default on a GPU), with their ratio; every
    program is compiled before its timing starts, so these are the fits'
    times alone;
  * the conventional baseline: one NumPyro ``MCMC`` per configuration,
    5 chains × (2000 warm-up + 10000 draws), one configuration after another;
  * the ratio of batched NUTS (draws sized by :func:`batched_samples`) to
    that baseline at equal ε accuracy (|ε − quadrature ε| ≤ 0.002 for every
    configuration timed), on those configurations alone with the leapfrog
    loop and, with the default loop, among ``--baseline-batch`` fits (128 by
    default) as a sweep runs them;
  * optionally (``--nuts-chunks``), NUTS fits/s with the first of ``--loops`` when
    ``fit_lanes`` splits each lane group into chunks of each given size
    instead of the device's (:func:`sweep.execution.schedule.nuts_call`):
    smaller chunks pad less and let easy lanes finish without stepping with
    the hardest chain; larger ones may run wider on the device;
  * optionally (``--quadrature-chunks``), quadrature posteriors/s (the
    driver) with each given chunk size instead of ``fit_lanes``' default: on
    an accelerator larger chunks fill more of the device per call;
  * the quadrature's plan itself may be changed for the whole run:
    ``--rule-chunks gauss_hermite=16384`` gives a rule's chunks their own
    size, ``--middle-rules on`` tries the rules between the Gauss–Hermite
    and the nested one on an accelerator too (``off``: not on CPU either)
    (``schedule_for(rule_lanes=...)``, ``sweep.execution.cascade.default_cascade``);
  * optionally (``--workers``), quadrature and NUTS throughput with each
    given number of chunks in flight at once (``Schedule.workers``;
    the device's, :func:`sweep.execution.schedule.schedule_for`, is one per CPU core,
    and on an accelerator 2), and for NUTS how
    many fits' numbers differ from the default's (none should);
  * optionally (``--kernel-blocks``, ``--kernel-warps``), the chain kernel's
    fits/s with each block of chains and Triton warps per block;
  * lock-step efficiency, the mean leapfrog steps per lane over the steps the
    batch executes, with lanes in input order and ordered by
    :func:`sweep.execution.calls.difficulty`: for the leapfrog loop the maximum over
    lanes of each lane's total (warm-up, searches and draws), and for the
    chain kernel the same per block of chains, for several block sizes (from
    the leapfrog loop's totals: the kernel's chains take the same steps).

Quadrature is timed as the driver runs it (the adaptive Gauss–Hermite rule;
on the lanes it rejects, Gauss–Hermite in (α, t) where the s rule is not
exact and in t outermost where it is; the nested rule with a Gauss–Hermite
t axis; the nested rule on the rest), without the rule with t outermost
(0.13.0's passes), without the (α, t) rule, without any of the three middle
rules (0.8.0's two passes), and with the nested rule alone, with the
share of full-model lanes each rule takes and the largest differences to
the nested rule alone, each variant ``--quadrature-repeats`` times (3 by
default) and more until its runs have taken ``--quadrature-seconds`` (2 by
default; the rates are from the median run, every run is in
``quadrature_runs_s``); and once more
with one worker, each compiled call timed alone, for each rule's cost a lane
(``rule_costs_one_worker``). ``--quadrature-variants driver`` times the
driver alone: the nested rule alone takes about 5 minutes a run of 10^5
lanes on the development CPU.

``--loops`` names the NUTS loops to time (the leapfrog loop by default; the
first named is the one the chunk-size and worker comparisons use);
``--lockstep 0`` and ``--baseline 0`` skip those parts (``--baseline-batch 0`` the baseline's
configurations among a batch of fits); ``--warm-up`` runs each timed set of fits
once untimed first (for accelerators, see :func:`timed_fits`).

Usage: python scripts/bench_kernels.py [--sizes 100 1000] [--baseline 3] [--baseline-batch 128]
           [--lockstep 64]
           [--nuts-chunks 64 256 1024] [--quadrature-chunks 1024 16384]
           [--loops leapfrog kernel] [--workers 1 2] [--quadrature-only | --nuts-only]
           [--kernel-blocks 16 32 64] [--kernel-warps 1 2 4]
           [--warm-up] [--quadrature-repeats 3] [--quadrature-seconds 2]
           [--quadrature-variants all|driver]
           [--rule-chunks RULE=LANES ...] [--middle-rules on|off]
           [--out DIR]
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import shutil
import sys
import tempfile
import time
from contextlib import nullcontext

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402

from binmetric_sweep.kernels.counts import Design, draw_counts, expected_counts  # noqa: E402
from binmetric_sweep.kernels.logdensity import logdensity  # noqa: E402
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop  # noqa: E402
from binmetric_sweep.kernels.quadrature import model_kind  # noqa: E402
from binmetric_sweep.kernels.summaries import epsilon, fits_differing  # noqa: E402
from binmetric_sweep.sweep.execution.calls import difficulty, plan_chunks  # noqa: E402
from binmetric_sweep.sweep.execution.cascade import (  # noqa: E402
    FULL_MODEL_RULES,
    default_cascade,
    nested,
)
from binmetric_sweep.sweep.execution.fits import fit_lanes  # noqa: E402
from binmetric_sweep.sweep.execution.programs import nuts_program  # noqa: E402
from binmetric_sweep.sweep.execution.schedule import nuts_call, schedule_for  # noqa: E402
from binmetric_sweep.sweep.spec.lanes import lane_keys  # noqa: E402
from binmetric_sweep.sweep.storage.records import StageLog, provenance  # noqa: E402


def sample_designs(n: int, seed: int) -> Design:
    """Configurations from the legacy grid's ranges (docs/model.md), shared paired set."""
    r = np.random.default_rng(seed)
    sizes = np.array([10, 100, 500, 1000, 2000, 5000, 10000], float)
    metric = np.array([500, 1000, 5000, 10000, 20000, 50000, 100000], float)
    rates = np.array([0.55, 0.65, 0.75, 0.85, 0.95])
    alpha = r.choice(np.linspace(0.1, 0.9, 9), n)
    n_phi = r.choice(sizes, n)
    return Design(
        alpha=alpha,
        rho=r.choice(rates, n),
        eta=r.choice(rates, n),
        n_phi=n_phi,
        n_rho_eta=n_phi,
        psi=alpha,
        n_m=r.choice(metric, n),
        shared_paired=np.ones(n, bool),
        rho_eta_known=np.zeros(n, bool),
    )


#: The run's record, with each stage's time as it ends (set by :func:`main`; None
#: where another script imports these functions).
LOG: StageLog | None = None


def stage(name: str):
    """Time a block as :data:`LOG`'s stage ``name`` (nothing where there is no log)."""
    return LOG.stage(name) if LOG is not None else nullcontext()


def lanes(design: Design, seed: int):
    n = len(design.alpha)
    with stage(f"counts of {n} lanes drawn"):
        words = np.stack([np.arange(n), np.zeros(n)], 1).astype(np.uint32)
        keys = lane_keys(seed, words, np.zeros(n))
        counts = jax.vmap(lambda k, d: draw_counts(k, d))(keys, design)
        return jax.tree.map(np.asarray, counts), keys


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


#: Run each timed set of fits once untimed first (``--warm-up``; see timed_fits).
WARM_UP = False
#: Timed runs of each quadrature variant (``--quadrature-repeats``); the median counts.
QUADRATURE_REPEATS = 3
#: ... and more, until they have taken this many seconds in all
#: (``--quadrature-seconds``): small batches' first runs after compiling are
#: slower than the next ones, so a few runs' median drifts between runs of the
#: script; 2 s of runs keeps it within the machine's own drift
#: (docs/performance.md).
QUADRATURE_SECONDS = 2.0
#: ``schedule_for(rule_lanes=...)`` for every quadrature run (``--rule-chunks``).
RULE_CHUNKS: dict | None = None
#: Whether every quadrature run's cascade has the middle rules
#: (``--middle-rules``; None: :func:`sweep.execution.cascade.default_cascade`'s choice).
MIDDLE_RULES: bool | None = None


def cascade_without(*names: str) -> tuple:
    """The quadrature runs' cascade (:data:`MIDDLE_RULES`) less the rules ``names``."""
    middle = schedule_for().middle_rules if MIDDLE_RULES is None else MIDDLE_RULES
    base = default_cascade(middle)
    return tuple(rule for rule in base if rule.name not in names)


def timed_fits(
    counts,
    keys,
    method,
    chunk: int | None,
    settings=NUTSSettings(),
    workers=None,
    cascade=None,
    runs=None,
    info=None,
):
    """The driver's fits of these lanes and their wall time, its programs compiled beforehand.

    Each chunk's program (and those of the rules its rejected lanes fall back
    to) is compiled ahead (into the persistent compilation cache that
    :func:`main` sets up), so the time is the fits', not XLA's. ``chunk`` and
    ``workers`` as in ``schedule_for``, ``cascade`` as in ``fit_lanes`` (None:
    :func:`cascade_without` of nothing).
    With :data:`WARM_UP` set (``--warm-up``), the fits also run once untimed
    first: on an accelerator the first run of a program also loads it onto
    the device, so that a first run's rate understates the program's
    (docs/performance.md, "One GPU").
    With ``runs`` (a list, emptied first), the fits run
    :data:`QUADRATURE_REPEATS` times, and more until they have taken
    :data:`QUADRATURE_SECONDS` in all, each timed into it, and the time
    returned is the median (a short run's time drifts from one run to the
    next with the machine's load; docs/performance.md).
    With ``info`` (a list), it receives the last timed run's
    :class:`sweep.execution.fits.FitInfo`.
    """
    quadrature = method == "quadrature"
    schedule = schedule_for(
        chunk_size=chunk,
        workers=workers,
        rule_lanes=RULE_CHUNKS if quadrature else None,
    )
    cascade = cascade_without() if cascade is None else cascade
    plan = {"nuts": settings, "cascade": cascade, "schedule": schedule}
    label = f"{method}, {len(np.asarray(counts.n_m))} lanes"
    if method == "nuts":
        label += f", {settings.loop} loop"
        if settings.loop == "kernel":
            warps = settings.kernel_warps
            label += f" (blocks of {settings.kernel_block}, {warps} warp{'s' * (warps > 1)})"
    label += f", chunks of {chunk}" if chunk else ""
    label += f", {workers} worker{'s' if workers > 1 else ''}" if workers else ""
    chunks = plan_chunks(counts, method, **plan)
    with stage(f"{label}: {len(chunks)} chunks' programs compiled"):
        compiled = set()
        for c in chunks:
            # A fallback rule's calls hold that rule's own lanes (Stage.size),
            # not this chunk's: compile what will run.
            programs = [(stage.fn, stage.size) for stage in c.stages]
            for fn, size in programs:
                if (fn, size) in compiled:
                    continue
                compiled.add((fn, size))
                padded = np.resize(c.padded, size)
                lanes = jax.tree.map(lambda x, p=padded: np.asarray(x)[p], counts)
                n_valid = min(len(c.piece), size)
                if not c.sampled:
                    fn.prepare(lanes, n_valid)
                else:
                    fn.prepare(keys[padded], lanes, n_valid)
    if WARM_UP:
        with stage(f"{label}: warm-up run"):
            fit_lanes(counts, keys, method, **plan)

    def fits():
        (out, last), seconds = timed(lambda: fit_lanes(counts, keys, method, **plan))
        if info is not None:
            info[:] = [last]
        return out, seconds

    if runs is None:
        out, seconds = fits()
        if LOG is not None:  # once the clock has stopped: the log's writing is not timed
            LOG.record(f"{label}: timed run", seconds)
        return out, seconds
    runs.clear()
    while len(runs) < QUADRATURE_REPEATS or sum(runs) < QUADRATURE_SECONDS:
        out, seconds = fits()
        runs.append(seconds)
    if LOG is not None:
        LOG.record(f"{label}: {len(runs)} timed runs", sum(runs))
    return out, float(np.median(runs))


def quadrature_throughput(counts, keys, variants: bool = True) -> dict:
    """Posteriors/s of the driver's quadrature, and of the nested rule alone, on the same lanes.

    Also the share of lanes each rule takes, each rule's cost from a
    one-worker run, and, with ``variants``, the driver without each of its
    middle rules (``without_hermite_t``: without any), with t outermost the
    only one, the nested rule alone (on the development CPU about 300
    posteriors/s: 17 minutes for three runs of 10^5 lanes) and the largest
    differences between its numbers and the driver's.
    """
    n = len(np.asarray(counts.n_m))
    full = model_kind(counts.n_m, counts.rho_eta_known) == 2
    names = ("without_t_outer", "without_alpha_t", "without_hermite_t", "t_outer_only", "nested")
    runs = {name: [] for name in ("driver", *(names if variants else ()))}
    info = []
    driver, driver_s = timed_fits(counts, keys, "quadrature", None, runs=runs["driver"], info=info)
    rules = info[0].rules
    with stage(f"quadrature, {n} lanes, 1 worker: each call timed"):
        schedule = schedule_for(workers=1, rule_lanes=RULE_CHUNKS)
        _, one_worker = fit_lanes(
            counts, keys, "quadrature", cascade=cascade_without(), schedule=schedule
        )
    digest = fits_digest(driver)
    out = {
        "quadrature_per_s": n / driver_s,
        # Of all full-model lanes: the share whose numbers come from each rule.
        "rule_shares": {rule: float(np.mean(rules[full] == rule)) for rule in FULL_MODEL_RULES},
        "quadrature_s": driver_s,
        # Each variant's timed runs, in order; the rates are from their medians.
        "quadrature_runs_s": runs,
        "rule_costs_one_worker": rule_costs(one_worker.calls),
        # A fingerprint of the driver's fits, to compare plans run in other
        # processes (another --rule-chunks, XLA_FLAGS or device): the same
        # digest means every field of every fit has the same bits.
        "quadrature_post_mean_sum": float(np.sum(np.asarray(driver.post_mean))),
        "quadrature_digest": digest,
    }
    if not variants:
        return out

    def variant(name: str, cascade):
        return timed_fits(counts, keys, "quadrature", None, cascade=cascade, runs=runs[name])

    _, no_t_outer_s = variant("without_t_outer", cascade_without("t_outer"))
    _, three_rules_s = variant("without_alpha_t", cascade_without("hermite_alpha_t"))
    middle = ("hermite_alpha_t", "t_outer", "hermite_t")
    _, two_rules_s = variant("without_hermite_t", cascade_without(*middle))
    # The cheapest middle rule a lane alone: a plan that only moves lanes off the
    # nested rule (the rules' costs: docs/performance.md).
    _, t_outer_only_s = variant("t_outer_only", cascade_without("hermite_alpha_t", "hermite_t"))
    only_nested, nested_s = variant("nested", (nested(),))
    gap = {
        name: float(np.max(np.abs(getattr(driver, name) - getattr(only_nested, name))))
        for name in ("post_mean", "post_sd", "ci_low", "ci_high")
    }
    return {
        **out,
        "quadrature_without_t_outer_per_s": n / no_t_outer_s,
        "quadrature_without_alpha_t_per_s": n / three_rules_s,
        "quadrature_without_hermite_t_per_s": n / two_rules_s,
        "quadrature_t_outer_only_per_s": n / t_outer_only_s,
        "quadrature_nested_only_per_s": n / nested_s,
        "quadrature_over_without_t_outer": no_t_outer_s / driver_s,
        "quadrature_over_without_alpha_t": three_rules_s / driver_s,
        "quadrature_over_without_hermite_t": two_rules_s / driver_s,
        "quadrature_over_t_outer_only": t_outer_only_s / driver_s,
        "quadrature_over_nested_only": nested_s / driver_s,
        "quadrature_max_abs_difference_to_nested_only": gap,
    }


def rule_costs(chunk_times) -> dict:
    """Per rule, from one run of the driver with one worker: its calls, the lanes sent
    to it and in its calls (padding included), its seconds and milliseconds a lane sent."""
    costs = {}
    for t in chunk_times:
        c = costs.setdefault(t.rule, {"calls": 0, "lanes": 0, "padded": 0, "seconds": 0.0})
        c["calls"] += 1
        c["lanes"] += t.lanes
        c["padded"] += t.padded
        c["seconds"] += t.seconds
    for c in costs.values():
        c["ms_per_lane"] = 1e3 * c["seconds"] / c["lanes"]
    return costs


def throughput(
    n: int,
    seed: int,
    settings: NUTSSettings,
    nuts_chunks=(),
    workers=(),
    nuts=True,
    quadrature_chunks=(),
    loops=("leapfrog",),
    quadrature=True,
    quadrature_variants=True,
    kernel_shapes=(),
) -> dict:
    """Fits per second of quadrature and of NUTS with each of ``loops``, on the same lanes.

    With ``quadrature_chunks``, also the driver's quadrature posteriors/s
    with each chunk size; with ``nuts_chunks``, NUTS (the first of ``loops``)
    fits/s with each chunk size; with ``workers``, quadrature and NUTS with
    each number of chunks in flight at once. Without ``nuts``, quadrature
    alone; without ``quadrature``, NUTS alone; without
    ``quadrature_variants``, the quadrature driver alone (see
    :func:`quadrature_throughput`). With
    ``kernel_shapes`` (``(block, warps)`` pairs), the chain kernel's fits/s
    with each (``NUTSSettings.kernel_block``, ``kernel_warps``), and the
    largest difference of its posterior means from the kernel's default
    (from the first loop's, if the kernel is not among ``loops``).
    """
    counts, keys = lanes(sample_designs(n, seed), seed)
    # Chunks of fit_lanes' default size (None), as a sweep runs them. Not named
    # `quadrature`: a dict of results is true, and under that name --nuts-only
    # --workers compiled and timed the quadrature too (a lease's minutes, 2026-11-26).
    measured = {
        "fits": n,
        **(quadrature_throughput(counts, keys, quadrature_variants) if quadrature else {}),
    }
    if quadrature and quadrature_chunks:
        measured["quadrature_per_s_by_chunk"] = {
            str(c): n / timed_fits(counts, keys, "quadrature", c)[1] for c in quadrature_chunks
        }
    # Chunks in flight at once: quadrature here, so that --quadrature-only times it too.
    by_workers = {str(w): {} for w in workers}
    for w in workers if quadrature else ():
        out_w, took = timed_fits(counts, keys, "quadrature", None, workers=w)
        by_workers[str(w)]["quadrature_per_s"] = n / took
        by_workers[str(w)]["quadrature_digest"] = fits_digest(out_w)
    if not nuts:
        return {**measured, **({"by_workers": by_workers} if by_workers else {})}
    calls = {loop: [] for loop in loops}
    fitted = {
        loop: timed_fits(counts, keys, "nuts", None, settings._replace(loop=loop), info=calls[loop])
        for loop in loops
    }
    seconds = {loop: s for loop, (_, s) in fitted.items()}
    first = settings._replace(loop=loops[0])
    reference = fitted[loops[0]][0]

    by_chunk = {str(c): n / timed_fits(counts, keys, "nuts", c, first)[1] for c in nuts_chunks}
    kernel = fitted["kernel"][0] if "kernel" in fitted else reference
    by_shape = {}
    for block, warps in kernel_shapes:
        variant = settings._replace(loop="kernel", kernel_block=block, kernel_warps=warps)
        out, s = timed_fits(counts, keys, "nuts", None, variant)
        gap = np.abs(np.asarray(out.post_mean) - np.asarray(kernel.post_mean))
        by_shape[f"{block}x{warps}"] = {
            "fits_per_s": n / s,
            "s": s,
            "post_mean_max_abs_diff": float(np.max(gap)),
        }
    for w in workers:
        out_w, took = timed_fits(counts, keys, "nuts", None, first, w)
        by_workers[str(w)]["nuts_fits_per_s"] = n / took
        # Against the default's fits: a fit's numbers must not depend on the workers.
        by_workers[str(w)]["nuts_fits_differing"] = fits_differing(out_w, reference)
    # "nuts_*" without a loop's name is the leapfrog loop's (the default everywhere before 0.24.0).
    names = {"leapfrog": "nuts", "kernel": "nuts_kernel_loop"}
    out = {**measured}
    for loop, s in seconds.items():
        out[f"{names[loop]}_fits_per_s"] = n / s
        out[f"{names[loop]}_s"] = s
        # A fingerprint of each loop's fits, to compare runs across processes
        # (another XLA_FLAGS, another device).
        out[f"{names[loop]}_post_mean_sum"] = float(np.sum(np.asarray(fitted[loop][0].post_mean)))
        # Its calls, and the host's summaries within them: with one worker (an
        # accelerator's default before 0.29.0) the device waits through them.
        loop_calls = calls[loop][0].calls
        out[f"{names[loop]}_calls"] = len(loop_calls)
        out[f"{names[loop]}_calls_s"] = sum(t.seconds for t in loop_calls)
        out[f"{names[loop]}_host_summaries_s"] = sum(t.host_seconds for t in loop_calls)
    if {"leapfrog", "kernel"} <= seconds.keys():
        out["kernel_over_leapfrog_loop"] = seconds["leapfrog"] / seconds["kernel"]
    return {
        **out,
        "nuts_chunk_size": nuts_call(
            schedule_for(), resolve_loop(first, schedule_for().device), n
        ).fits,
        "default_workers": schedule_for().workers,
        **({f"{names[loops[0]]}_fits_per_s_by_chunk": by_chunk} if by_chunk else {}),
        **({"by_workers": by_workers} if by_workers else {}),
        **({"nuts_kernel_by_block_x_warps": by_shape} if by_shape else {}),
    }


def fits_digest(fits) -> str:
    """SHA-256 of every field of every fit, in :class:`FitResults`' order (hex)."""
    digest = hashlib.sha256()
    for field in fits:
        digest.update(np.ascontiguousarray(np.asarray(field)).tobytes())
    return digest.hexdigest()


def lockstep(n: int, seed: int, settings: NUTSSettings) -> dict:
    counts, keys = lanes(sample_designs(n, seed), seed)
    out = {}
    leapfrog = settings._replace(loop="leapfrog")
    for name, order in (
        ("input_order", np.arange(n)),
        ("difficulty_order", np.argsort(difficulty(counts), kind="stable")),
    ):
        c = jax.tree.map(lambda x, order=order: x[order], counts)
        # The driver's compiled kernel, here choosing coordinates per lane:
        # each lane runs the same chain as when grouped, but logit and
        # ridge lanes share the batches (the driver batches them apart).
        draws = jax.device_get(nuts_program(3, leapfrog)(keys[order], c))
        chunk = max(1, n // 4) * settings.chains  # four lock-step batches of lanes
        # Each chain's leapfrog steps in all (warm-up, searches and draws): a
        # batch of the leapfrog loop runs until its chain with the most is done.
        totals = np.asarray(draws.leapfrogs, float).reshape(-1)
        eff = [
            totals[start : start + chunk].mean() / totals[start : start + chunk].max()
            for start in range(0, totals.shape[0], chunk)
        ]
        out[f"leapfrog_loop_{name}"] = float(np.mean(eff))
        out[f"kernel_blocks_{name}"] = kernel_block_efficiency(totals)
    return out


def kernel_block_efficiency(totals: np.ndarray, blocks=(8, 16, 32, 64, 128)) -> dict:
    """The chain kernel's lock-step efficiency for each block size, from chains' step totals.

    ``totals``: each chain's leapfrog steps, in a call's order (a fit's chains
    together). The kernel runs the leapfrog loop's NUTS, so a chain takes the
    same steps in either; a block of chains runs until its slowest is done.
    Over the whole blocks only: mean steps over the mean of the blocks' maxima.
    """
    out = {}
    for size in blocks:
        whole = totals[: len(totals) // size * size].reshape(-1, size)
        if len(whole):
            out[str(size)] = float(whole.mean() / whole.max(axis=1).mean())
    return out


#: ε's error bound in the baseline comparison, and the Monte Carlo SEs of ε it must hold.
EPS_TOLERANCE, EPS_SES = 0.002, 3.0
#: Effective draws per draw assumed when sizing the baseline's batched run
#: (conservative: the bulk ESS of the SD was ~0.8 per draw on its configurations).
ESS_PER_DRAW = 0.5


def batched_samples(sd: float, settings: NUTSSettings) -> int:
    """Draws per chain that put ε within :data:`EPS_TOLERANCE` by design, at posterior SD ``sd``.

    The SD of n effective draws has a Monte Carlo SE of about sd/√(2n), and ε
    is proportional to the SD; n is chosen so that the bound is
    :data:`EPS_SES` SEs of ε, at :data:`ESS_PER_DRAW`. At least 4× the
    default draws, rounded up to a thousand, and at most 50,000 per chain
    (an SD above ~0.1 would ask for more; ``equal_accuracy`` then tells).
    """
    eps_per_sd = float(epsilon(1.0, 0.05))
    ess = (EPS_SES * eps_per_sd * sd / EPS_TOLERANCE) ** 2 / 2
    per_chain = ess / ESS_PER_DRAW / settings.chains
    return int(min(50_000, max(4 * settings.samples, 1000 * np.ceil(per_chain / 1000))))


def baseline(n: int, seed: int, settings: NUTSSettings, batch: int = 0) -> dict:
    """One MCMC object per configuration, as the replaced tool did; vs. one batched call.

    The ratio is taken at equal accuracy, |ε − quadrature ε| ≤ 0.002 for every
    configuration, and ``equal_accuracy`` says whether it held. The batched
    sampler's draws are sized for it by design (:func:`batched_samples`);
    the conventional tool's 5 × 10,000 are what it used.

    The ``n`` configurations alone are a batch of ``n`` fits, far too few to
    fill a call (on CPU 128 fits), so their ratio is the worst case. With
    ``batch``, the default loop also fits them among ``batch`` fits, as a
    sweep runs them: each configuration repeated with replicate keys of its
    own, the time a fit and the ratio from that (``leapfrog_loop_in_batch``).
    """
    design = sample_designs(n, seed)
    counts = jax.tree.map(np.asarray, jax.vmap(expected_counts)(design))
    words = np.stack([np.arange(n), np.zeros(n)], 1).astype(np.uint32)
    keys = lane_keys(seed, words, np.zeros(n))
    exact, _ = fit_lanes(counts, keys, "quadrature")
    eps_exact = np.asarray(epsilon(exact.post_sd, 0.05))
    samples = batched_samples(float(np.max(exact.post_sd)), settings)
    conventional_eps, start = [], time.perf_counter()
    for i in range(n):
        c = jax.tree.map(lambda x, i=i: jnp.asarray(x[i]), counts)
        kernel = NUTS(potential_fn=lambda z, c=c: -logdensity(z, c))
        mcmc = MCMC(
            kernel,
            num_warmup=2000,
            num_samples=10000,
            num_chains=5,
            chain_method="sequential",
            progress_bar=False,
        )
        mcmc.run(jax.random.key(i), init_params=jnp.zeros((5, 3)))
        draws = jax.nn.sigmoid(mcmc.get_samples()[:, 0])
        conventional_eps.append(float(epsilon(jnp.std(draws, ddof=1), 0.05)))
    conventional_s = (time.perf_counter() - start) / n
    out = {
        "configurations": n,
        "conventional_s_per_config": conventional_s,
        "conventional_max_eps_error": float(np.max(np.abs(np.array(conventional_eps) - eps_exact))),
    }
    batched_settings = settings._replace(samples=samples, loop="leapfrog")
    batched, batched_s = timed_fits(counts, keys, "nuts", None, batched_settings)
    eps = np.asarray(epsilon(batched.post_sd, 0.05))
    error = float(np.max(np.abs(eps - eps_exact)))
    out["leapfrog_loop"] = {
        "samples_per_chain": batched_settings.samples,
        "batched_s_per_config": batched_s / n,
        "ratio": conventional_s / (batched_s / n),
        "batched_max_eps_error": error,
        "equal_accuracy": bool(error <= EPS_TOLERANCE),
    }
    if batch:
        rounds = -(-batch // n)
        index = np.tile(np.arange(n), rounds)[:batch]
        replicate = np.repeat(np.arange(rounds), n)[:batch]
        tiled = jax.tree.map(lambda x: np.asarray(x)[index], counts)
        batched_settings = settings._replace(samples=samples)
        batched, batched_s = timed_fits(
            tiled, lane_keys(seed, words[index], replicate), "nuts", None, batched_settings
        )
        errors = np.abs(np.asarray(epsilon(batched.post_sd, 0.05)) - eps_exact[index])
        out["leapfrog_loop_in_batch"] = {
            "fits": batch,
            "samples_per_chain": samples,
            "batched_s_per_config": batched_s / batch,
            "ratio": conventional_s / (batched_s / batch),
            "batched_max_eps_error": float(errors.max()),
            "share_within_eps_tolerance": float(np.mean(errors <= EPS_TOLERANCE)),
            "equal_accuracy": bool(errors.max() <= EPS_TOLERANCE),
        }
    return out


def main(argv=None) -> None:
    global WARM_UP, QUADRATURE_REPEATS, QUADRATURE_SECONDS, RULE_CHUNKS, MIDDLE_RULES
    global LOG
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--baseline", type=int, default=3, help="configurations for the baseline")
    parser.add_argument(
        "--baseline-batch",
        type=int,
        default=128,
        help="fits the baseline's configurations are also timed among (0: not at all)",
    )
    parser.add_argument("--lockstep", type=int, default=64, help="fits for lock-step efficiency")
    parser.add_argument(
        "--nuts-chunks", type=int, nargs="*", default=[], help="NUTS chunk sizes to compare"
    )
    parser.add_argument(
        "--quadrature-chunks", type=int, nargs="*", default=[], help="quadrature chunk sizes"
    )
    parser.add_argument(
        "--loops",
        nargs="+",
        choices=["leapfrog", "kernel"],
        default=["leapfrog"],
        help="NUTS loops to time (kernel: whole chains in one Pallas kernel, Triton on a GPU)",
    )
    parser.add_argument(
        "--workers", type=int, nargs="*", default=[], help="chunks in flight at once to compare"
    )
    parser.add_argument(
        "--kernel-blocks",
        type=int,
        nargs="*",
        default=[],
        help="the chain kernel's blocks (chains, powers of two) to compare, each with "
        "each of --kernel-warps",
    )
    parser.add_argument(
        "--kernel-warps",
        type=int,
        nargs="+",
        default=[NUTSSettings().kernel_warps],
        help="Triton warps per block of the chain kernel, with --kernel-blocks",
    )
    parser.add_argument(
        "--quadrature-only", action="store_true", help="time quadrature alone (no NUTS)"
    )
    parser.add_argument("--nuts-only", action="store_true", help="time NUTS alone (no quadrature)")
    parser.add_argument(
        "--quadrature-variants",
        choices=["all", "driver"],
        default="all",
        help="time the driver without its middle rules and the nested rule alone, or not",
    )
    parser.add_argument(
        "--warm-up", action="store_true", help="run each timed set of fits once untimed first"
    )
    parser.add_argument(
        "--quadrature-repeats",
        type=int,
        default=QUADRATURE_REPEATS,
        help="timed runs of each quadrature variant (the median counts)",
    )
    parser.add_argument(
        "--quadrature-seconds",
        type=float,
        default=QUADRATURE_SECONDS,
        help="and more runs, until they have taken this many seconds in all",
    )
    parser.add_argument(
        "--rule-chunks",
        nargs="*",
        default=[],
        metavar="RULE=LANES",
        help=f"lanes in each chunk of a quadrature rule ({', '.join(FULL_MODEL_RULES)})",
    )
    parser.add_argument(
        "--middle-rules",
        choices=["on", "off"],
        help="try the middle quadrature rules (default: on CPU only)",
    )
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--seed", type=int, default=0)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    # Programs compiled ahead are found here by the timed calls (see timed_fits);
    # a cache named by JAX_COMPILATION_CACHE_DIR also serves later runs.
    if not jax.config.jax_compilation_cache_dir:
        own_cache = tempfile.mkdtemp(prefix="bench-xla-")  # this run's alone: removed at exit
        atexit.register(shutil.rmtree, own_cache, ignore_errors=True)
        jax.config.update("jax_compilation_cache_dir", own_cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    WARM_UP = args.warm_up
    if args.quadrature_repeats < 1:
        parser.error("--quadrature-repeats: at least 1")
    QUADRATURE_REPEATS = args.quadrature_repeats
    if not args.quadrature_seconds >= 0.0:
        parser.error("--quadrature-seconds: 0 or more")
    QUADRATURE_SECONDS = args.quadrature_seconds
    rule_chunks = {}
    for item in args.rule_chunks:
        rule, _, lanes_text = item.partition("=")
        if rule not in FULL_MODEL_RULES or not lanes_text.isdigit() or int(lanes_text) < 1:
            parser.error(
                f"--rule-chunks: {item!r} is not RULE=LANES with RULE one of "
                f"{', '.join(FULL_MODEL_RULES)} and LANES a positive integer"
            )
        rule_chunks[rule] = int(lanes_text)
    RULE_CHUNKS = rule_chunks or None
    MIDDLE_RULES = None if args.middle_rules is None else args.middle_rules == "on"
    settings = resolve_loop(NUTSSettings(), schedule_for().device)  # the loop "auto" runs here
    stem = f"kernels-{jax.devices()[0].platform}"
    # Written after each part and stage, marked partial until the last, so that a run
    # cut short (a time limit on a lent machine) still leaves what it measured and
    # where its time went.
    result = {
        **provenance("bench_kernels.py", argv),
        "timed": "fits only: every program compiled before its timing starts",
        "nuts_settings": settings._asdict(),
        "partial": True,
        "throughput": [],
    }
    LOG = StageLog(result, args.out, stem)
    for n in args.sizes:
        result["throughput"].append(
            throughput(
                n,
                args.seed,
                settings,
                args.nuts_chunks,
                args.workers,
                not args.quadrature_only,
                args.quadrature_chunks,
                tuple(args.loops),
                not args.nuts_only,
                args.quadrature_variants == "all",
                [(b, w) for b in args.kernel_blocks for w in args.kernel_warps],
            )
        )
        print(json.dumps(result["throughput"][-1]), flush=True)
        LOG.write()
    if not args.quadrature_only and args.lockstep:
        with stage(f"lock-step efficiency of {args.lockstep} fits"):
            result["lockstep_efficiency"] = lockstep(args.lockstep, args.seed, settings)
    if not args.quadrature_only:
        result["baseline"] = None
        if args.baseline:
            with stage(f"baseline of {args.baseline} configurations"):
                result["baseline"] = baseline(
                    args.baseline, args.seed, settings, args.baseline_batch
                )
    del result["partial"]
    print(json.dumps(result, indent=2))
    LOG.write()


if __name__ == "__main__":
    main()
