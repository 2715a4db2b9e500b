"""fit_lanes' plan: which compiled calls it makes on which lanes, and in how many threads."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import CancelledError

import jax
import numpy as np
import pytest

from binmetric_sweep.kernels.chain_kernel import TRITON_LOWERING, can_import
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop
from binmetric_sweep.kernels.quadrature import model_kind, paired_rule_is_exact
from binmetric_sweep.kernels.summaries import fits_differing, take_fits
from binmetric_sweep.sweep.execution.calls import (
    Stage,
    Waiting,
    next_calls,
    plan_chunks,
    spread,
    staged_chunks,
    take,
)
from binmetric_sweep.sweep.execution.cascade import (
    FULL_MODEL_RULES,
    QUADRATURE_RULES,
    default_cascade,
    gauss_hermite,
    hermite_t,
    make_cascade,
    nested,
)
from binmetric_sweep.sweep.execution.fits import (
    FitInfo,
    FitMemo,
    LaneFits,
    distinct_lanes,
    fit_lanes,
)
from binmetric_sweep.sweep.execution.schedule import (
    ACCELERATOR_QUADRATURE_LANES,
    ACCELERATOR_RULE_LANES,
    ACCELERATOR_WORKERS,
    CPU_QUADRATURE_LANES,
    schedule_for,
    usable_cores,
)
from binmetric_sweep.sweep.spec.lanes import lane_keys, require_float64
from tests.kernels.helpers import counts


def mixed_lanes(b: int, seed: int):
    """``b`` lanes of modest sizes: a third with ρ, η known, a few without metric ratings."""
    r = np.random.default_rng(seed)
    n_phi = r.integers(20, 200, b).astype(float)
    n_pos = r.binomial(n_phi.astype(int), 0.6).astype(float)
    n_m = r.integers(100, 2000, b).astype(float)
    n_m[::17] = 0
    known = np.arange(b) % 3 == 0
    return counts(
        n_pos=n_pos,
        n_phi=n_phi,
        n_tp=np.where(known, 0, r.binomial(n_pos.astype(int), 0.8)),
        n_pos_paired=np.where(known, 0, n_pos),
        n_tn=np.where(known, 0, r.binomial((n_phi - n_pos).astype(int), 0.7)),
        n_neg_paired=np.where(known, 0, n_phi - n_pos),
        m_pos=r.binomial(n_m.astype(int), 0.6 * 0.8 + 0.4 * 0.3),
        n_m=n_m,
        rho=np.where(known, 0.8, 0.0),
        eta=np.where(known, 0.7, 0.0),
        rho_eta_known=known,
    )


def with_few_paired(c, skip=()):
    """``c`` with every ninth full-model lane not in ``skip`` given a separate set of 9
    paired ratings (3 of 4 and 4 of 5 agree), so that its s rule is exact; and their indices."""
    full = model_kind(c.n_m, c.rho_eta_known) == 2
    pick = np.flatnonzero(full & ~np.isin(np.arange(len(c.n_m)), skip))[3::9]
    small = np.isin(np.arange(len(c.n_m)), pick)
    c = c._replace(
        n_tp=np.where(small, 3.0, c.n_tp),
        n_pos_paired=np.where(small, 4.0, c.n_pos_paired),
        n_tn=np.where(small, 4.0, c.n_tn),
        n_neg_paired=np.where(small, 5.0, c.n_neg_paired),
    )
    return c, pick


def test_every_lane_is_fitted_once_in_power_of_two_calls():
    c = mixed_lanes(150, seed=4)
    for method in ("nuts", "quadrature"):
        chunks = plan_chunks(c, method, schedule=schedule_for(chunk_size=64))
        pieces = np.concatenate([chunk.piece for chunk in chunks])
        np.testing.assert_array_equal(np.sort(pieces), np.arange(150))
        for chunk in chunks:
            size = len(chunk.padded)
            assert size <= 64 and size & (size - 1) == 0
            np.testing.assert_array_equal(chunk.padded[: len(chunk.piece)], chunk.piece)
            assert set(chunk.padded) == set(chunk.piece)  # padding repeats its own lanes
            # Only lanes without metric ratings (a Beta posterior) are exact under NUTS.
            assert chunk.sampled == (method == "nuts" and bool(c.n_m[chunk.piece].all()))
        # One kind of lane per call: the three kinds (and, for NUTS, two coordinates) apart.
        assert len(chunks) >= 3


def test_a_requested_chunk_size_is_rounded_down_to_a_power_of_two():
    """Every call of a rule has the size asked for (rounded down), whatever its group's size."""
    c = mixed_lanes(300, seed=5)
    for asked, expected in ((100, 64), (8, 8), (5, 4), (200, 128)):
        sizes = {
            len(chunk.padded)
            for chunk in plan_chunks(c, "quadrature", schedule=schedule_for(chunk_size=asked))
        }
        assert sizes == {expected}


def test_on_cpu_every_chunk_has_one_size_whatever_the_group_size():
    """One shape per program for every group, so a lane's numbers do not depend on its shard.

    For NUTS the shape a lane's draws depend on is the slots (chains advanced
    at once); its calls have one size too, so that each coordinates compile once.
    """
    c = mixed_lanes(700, seed=6)
    groups = {}  # each group of lanes runs one program
    for method in ("nuts", "quadrature"):
        for chunk in plan_chunks(c, method, schedule=schedule_for("cpu", workers=2)):
            if not chunk.sampled:
                assert len(chunk.padded) == CPU_QUADRATURE_LANES
            else:  # 128 fits of 4 chains, whatever the group's size
                assert len(chunk.padded) == 128
                groups[chunk.fn] = groups.get(chunk.fn, 0) + len(chunk.piece)
    # 128 slots, but 32 where the group's calls, split between the two workers,
    # hold at most 256 chains (here a group of 13 fits, in calls of 7 and 6).
    slots = {fn: fn.static[-1] for fn in groups}
    assert all(
        slots[fn] == (32 if -(-size // 2) * 4 <= 256 else 128) for fn, size in groups.items()
    )
    assert set(slots.values()) == {32, 128}


def test_a_nuts_lane_does_not_depend_on_its_queue():
    """A fit's draws are the same whatever its call's size and slots, and whichever
    lanes share its call.

    On CPU every call is a queue (more chains than slots). A call whose chains
    all have slots from the start runs another program (kernels.stepwise's
    run_lanes), which XLA may round apart: since 0.21.0 some of these fits'
    draws differ there. Only accelerators run it, for every call."""
    settings = NUTSSettings(chains=2, warmup=50, samples=50)  # as the test below
    c = ridge_lanes(140, seed=8)
    b = len(c.n_m)
    keys = lane_keys(4, np.stack([np.arange(b), np.zeros(b)], axis=1), np.zeros(b))
    # Calls of 32 fits of 2 chains: 64 chains on 32 slots. Calls of 256 fits hold
    # the group's 280 chains: a queue on 128 slots.
    sizes = (32, 256)
    slotted, queued = (
        fit_lanes(
            c, keys, "nuts", nuts=settings, schedule=schedule_for(chunk_size=n, workers=1)
        ).fits
        for n in sizes
    )
    # Two workers: the group (one call of 256 fits with one) is split in two calls of 70
    # fits, every other lane in each, so that both cores have work: 140 chains a
    # call, a queue on 32 slots.
    pieces = plan_chunks(c, "nuts", nuts=settings, schedule=schedule_for("cpu", workers=2))
    assert [len(chunk.piece) for chunk in pieces] == [70, 70]
    assert {len(chunk.padded) for chunk in pieces} == {256}
    assert {chunk.fn.static[-1] for chunk in pieces} == {32}
    plans = [
        plan_chunks(c, "nuts", nuts=settings, schedule=schedule_for(chunk_size=n, workers=1))
        for n in sizes
    ]
    assert [{chunk.fn.static[-1] for chunk in plan} for plan in plans] == [{32}, {128}]
    split = fit_lanes(c, keys, "nuts", nuts=settings, schedule=schedule_for(workers=2)).fits
    assert fits_differing(slotted, queued) == fits_differing(slotted, split) == 0
    assert np.isfinite(queued.post_sd).all()


def test_on_an_accelerator_quadrature_chunks_have_one_size_and_nuts_chunks_fit_the_group():
    """Quadrature's numbers there depend on the call's size, a NUTS lane's draws did not.

    A rule's calls have one size (Gauss–Hermite its own), and there the quadrature
    takes two rules, not five (the schedule has no middle rules). NUTS runs the
    chain kernel.
    """
    c, _ = with_few_paired(mixed_lanes(700, seed=6))
    gpu = schedule_for("gpu")
    quadrature = plan_chunks(c, "quadrature", schedule=gpu)
    sizes = {}
    for chunk in quadrature:
        for stage in chunk.stages:
            sizes.setdefault(stage.rule, set()).add(stage.size)
        assert len(chunk.padded) == chunk.stages[0].size
    assert sizes.pop("gauss_hermite") == {ACCELERATOR_RULE_LANES["gauss_hermite"]}
    assert sizes and all(size == {ACCELERATOR_QUADRATURE_LANES} for size in sizes.values())
    # A caller's chunk size is every rule's.
    asked = plan_chunks(c, "quadrature", schedule=schedule_for("gpu", chunk_size=256))
    assert {len(chunk.padded) for chunk in asked} == {256}
    # There the full model's lanes go from Gauss–Hermite straight to the nested rule.
    passes = {(chunk.rule, *(stage.rule for stage in chunk.fallbacks)) for chunk in quadrature}
    assert ("gauss_hermite", "nested") in passes
    on_cpu = plan_chunks(c, "quadrature", schedule=schedule_for("cpu"))
    for middle in ("hermite_alpha_t", "t_outer", "hermite_t"):
        assert not any(middle in rules for rules in passes)
        assert any(middle in (ch.rule, *(st.rule for st in ch.fallbacks)) for ch in on_cpu)
    nuts = plan_chunks(c, "nuts", schedule=gpu)
    for chunk in nuts:
        size = len(chunk.padded)
        if not chunk.sampled:  # lanes without metric ratings: the Beta, as quadrature
            assert size == ACCELERATOR_QUADRATURE_LANES
        else:  # the group's own power of two, well below the memory budget's 4096 fits
            assert 64 <= size < 4096 and size >= len(chunk.piece)
            assert chunk.fn.static[1].loop == "kernel"  # nuts_program's settings, resolved
    assert any(chunk.sampled for chunk in nuts)
    # NUTSSettings' "auto" is the leapfrog loop on CPU; a loop asked for is kept.
    assert {
        ch.fn.static[1].loop
        for ch in plan_chunks(c, "nuts", schedule=schedule_for("cpu"))
        if ch.sampled
    } == {"leapfrog"}
    assert resolve_loop(NUTSSettings(), "gpu") == NUTSSettings(loop="kernel", device="gpu")
    # ... where this JAX lowers Pallas to Triton, as the JAX of these tests does; a
    # later one may not (the lowering is deprecated), and "auto" is then the leapfrog loop.
    assert can_import(TRITON_LOWERING) and not can_import(TRITON_LOWERING + "_gone")
    for loop in ("leapfrog", "kernel"):
        assert resolve_loop(NUTSSettings(loop=loop), "gpu").loop == loop
        assert resolve_loop(NUTSSettings(loop=loop), "cpu").loop == loop
    with pytest.raises(ValueError, match="loop must be one of auto, leapfrog, kernel"):
        resolve_loop(NUTSSettings(loop="transition"), "cpu")


def test_a_benchmark_may_size_each_rule_s_chunks_and_try_the_middle_rules_anywhere():
    """``schedule_for(rule_lanes=...)`` and the full cascade, which bench_kernels.py tries
    on a GPU."""
    c, _ = with_few_paired(mixed_lanes(700, seed=6))
    plan = plan_chunks(
        c,
        "quadrature",
        cascade=default_cascade(middle_rules=True),
        schedule=schedule_for("gpu", rule_lanes={"gauss_hermite": 5000}),
    )
    sizes = {}
    for chunk in plan:
        for stage in chunk.stages:
            sizes.setdefault(stage.rule, set()).add(stage.size)
    # Gauss–Hermite's calls rounded down to a power of two; every other rule keeps the default.
    assert sizes.pop("gauss_hermite") == {4096}
    assert set(sizes) >= {"hermite_alpha_t", "t_outer", "hermite_t", "nested"}
    assert all(size == {ACCELERATOR_QUADRATURE_LANES} for size in sizes.values())
    # On an accelerator a call computes its whole chunk: no rule runs in slices there.
    assert all(stage.slice_lanes is None for ch in plan for stage in ch.stages)
    # A lane a rule rejects goes on in calls of the next rule's size, not the rejecting one's.
    (chunk, *_) = (ch for ch in plan if ch.rule == "gauss_hermite" and ch.fallbacks)
    (first, *_) = staged_chunks(chunk.fallbacks, chunk.piece[:3])
    assert len(first.padded) == ACCELERATOR_QUADRATURE_LANES
    # On CPU the middle rules may be left out.
    rules = {
        r
        for ch in plan_chunks(
            c,
            "quadrature",
            cascade=default_cascade(middle_rules=False),
            schedule=schedule_for("cpu"),
        )
        for r in (ch.rule, *(st.rule for st in ch.fallbacks))
    }
    assert rules == {"beta", "known", "gauss_hermite", "nested"}


def test_a_later_pass_spreads_a_sliced_rule_s_few_lanes_over_the_workers():
    """One call per worker for a rule computed in slices, as long as each has a slice."""
    sliced = Stage("hermite_t", None, True, None, 64, 8)
    whole = Stage("gauss_hermite", None, True, None, 64)
    assert spread(sliced, 17, 2) == 2  # three slices of 8: a call for each worker
    assert spread(sliced, 17, 8) == 3  # no more calls than slices
    assert spread(sliced, 17, 1) is None
    assert spread(sliced, 8, 2) is None  # one slice: one call
    assert spread(sliced, 130, 2) is None  # three calls already
    assert spread(sliced._replace(size=16), 40, 2) is None  # calls of 16: three calls
    assert spread(whole, 17, 2) is None  # a call computes its whole chunk: no gain
    # Each piece a call of the same size, every lane in one of them.
    pieces = staged_chunks((sliced,), np.arange(17), spread(sliced, 17, 2))
    assert [len(ch.padded) for ch in pieces] == [64, 64]
    assert sorted(np.concatenate([ch.piece for ch in pieces])) == list(range(17))


def test_gathered_a_rule_waits_for_every_lane_that_may_reach_it():
    """``next_calls``: a rule's lanes from everywhere in one set of calls."""
    first, middle, last = (
        Stage(rule, object(), True, None, 64) for rule in ("gauss_hermite", "hermite_t", "nested")
    )
    waiting = [
        Waiting((first, middle, last), np.arange(0, 10)),
        Waiting((middle, last), np.arange(10, 15)),
        Waiting((last,), np.arange(20, 22)),
    ]
    # Only the rule no waiting lane may still reach.
    chunks, held = next_calls(waiting, workers=1)
    assert [ch.rule for ch in chunks] == ["gauss_hermite"] and held == waiting[1:]
    # Its rejects join the lanes waiting for the next rule: one call.
    chunks, held = next_calls([*held, Waiting((middle, last), np.arange(30, 33))], 1)
    got = [(ch.rule, len(ch.padded), sorted(ch.piece.tolist())) for ch in chunks]
    assert got == [("hermite_t", 64, [*range(10, 15), 30, 31, 32])]
    assert held == waiting[2:]


def ridge_lanes(b: int, seed: int):
    """``b`` full-model lanes dominated by the metric (NUTS runs them in ridge coordinates)."""
    r = np.random.default_rng(seed)
    n_phi = r.integers(50, 100, b).astype(float)
    n_pos = r.binomial(n_phi.astype(int), 0.6).astype(float)
    n_m = r.integers(200, 1000, b).astype(float)
    return counts(
        n_pos=n_pos,
        n_phi=n_phi,
        n_tp=r.binomial(n_pos.astype(int), 0.7),
        n_pos_paired=n_pos,
        n_tn=r.binomial((n_phi - n_pos).astype(int), 0.7),
        n_neg_paired=n_phi - n_pos,
        m_pos=r.binomial(n_m.astype(int), 0.6 * 0.7 + 0.4 * 0.3),
        n_m=n_m,
    )


def test_chunks_in_threads_give_the_same_numbers_in_the_same_order():
    """Several calls at once (one per core on CPU) change neither results nor progress.

    With NUTS the progress calls are the same too; with quadrature a later
    pass may make more calls with more workers (:func:`sweep.execution.calls.spread`).
    """
    assert schedule_for("cpu").workers == usable_cores() >= 1
    # On an accelerator a second call overlaps the host's work on the first.
    assert schedule_for("gpu").workers == ACCELERATOR_WORKERS == 2
    # The NUTS settings of test_nuts' determinism test, and calls of 32 fits on 32 slots,
    # as in the queue test above: one NUTS program compiled for both.
    settings = NUTSSettings(chains=2, warmup=50, samples=50)
    for method, c in (("nuts", ridge_lanes(140, seed=7)), ("quadrature", mixed_lanes(200, seed=7))):
        b = len(c.n_m)
        keys = lane_keys(3, np.stack([np.arange(b), np.zeros(b)], axis=1), np.zeros(b))
        runs, calls = [], []
        for workers in (1, 3):
            progress = []
            fits, info = fit_lanes(
                c,
                keys,
                method,
                nuts=settings,
                on_chunk=progress.append,
                schedule=schedule_for(chunk_size=32 if method == "nuts" else 64, workers=workers),
            )
            times = info.calls
            runs.append((fits, progress))
            calls.append(len(times))
        (one, one_progress), (three, three_progress) = runs
        assert sum(one_progress) == sum(three_progress) == b
        if method == "quadrature":
            # A later pass's few lanes for a rule computed in slices go out as one
            # call per worker (sweep.execution.calls.spread): more calls, the same numbers.
            assert calls[1] > calls[0]
        else:
            assert one_progress == three_progress
        assert calls[0] >= 3  # several calls, so threads did run side by side
        # The host's part of each call: a NUTS call's summaries, none for quadrature.
        if method == "nuts":
            assert all(0.0 < t.host_seconds < t.seconds for t in times)
        else:
            assert all(t.host_seconds == 0.0 for t in times)
        assert fits_differing(one, three) == 0
        assert np.isfinite(one.post_sd).all()


def test_quadrature_takes_each_rule_where_it_can_and_the_nested_rule_elsewhere():
    c = mixed_lanes(96, seed=8)
    # Every paired positive also positive by the metric: too few counts for
    # the fast rule ever to accept these lanes.
    few = np.flatnonzero((model_kind(c.n_m, c.rho_eta_known) == 2) & (np.arange(96) % 7 == 0))
    c = c._replace(n_tp=np.where(np.isin(np.arange(96), few), c.n_pos_paired, c.n_tp))
    # And on two of those every paired negative negative by the metric: a
    # kink that rules out the Gauss–Hermite t axis as well.
    kinked = few[:2]
    c = c._replace(n_tn=np.where(np.isin(np.arange(96), kinked), c.n_neg_paired, c.n_tn))
    # And a few with a separate set of 9 paired ratings, so that s is exact.
    c, small = with_few_paired(c, skip=few)
    keys = lane_keys(0, np.zeros((96, 2), np.uint32), np.arange(96))
    fast = [chunk for chunk in plan_chunks(c, "quadrature") if chunk.rule == "gauss_hermite"]
    assert fast and all(c.n_m[chunk.piece].all() for chunk in fast)
    # Lanes the fast rule could never accept skip it, and those with kinks
    # the t-axis rule as well: the nested rule, first pass.
    assert len(few) >= 3 and not np.isin(few, np.concatenate([ch.piece for ch in fast])).any()
    first = {}
    for chunk in plan_chunks(c, "quadrature"):
        first[chunk.rule] = np.concatenate([first.get(chunk.rule, []), chunk.piece])
    assert np.isin(kinked, first["nested"]).all()
    # The others, whose s rule is not exact, to the Gauss–Hermite rule in (α, t).
    others = np.setdiff1d(few, kinked)
    assert not np.isin(others, np.flatnonzero(paired_rule_is_exact(c))).any()
    assert np.isin(others, first["hermite_alpha_t"]).all()
    # Those with s exact to the rule with t outermost.
    assert len(small) >= 3 and np.isin(small, first["t_outer"]).all()
    both, info = fit_lanes(c, keys, "quadrature", schedule=schedule_for(workers=2))
    rules, times = info.rules, info.calls
    assert info.distinct == 96  # no two lanes share their counts
    # Each call is timed, with the lanes sent to its rule: all that the rule
    # took, and for the rules that pass lanes on, perhaps more.
    sent = {}
    for t in times:
        assert t.seconds > 0 and t.padded >= t.lanes and t.padded & (t.padded - 1) == 0
        sent[t.rule] = sent.get(t.rule, 0) + t.lanes
    taken = {rule: int(np.sum(rules == rule)) for rule in set(rules)}
    assert set(sent) == set(taken)
    assert all(sent[r] == taken[r] for r in ("beta", "known", "nested"))
    assert all(sent[r] >= taken[r] for r in FULL_MODEL_RULES[:-1])
    # Every rule is exercised: some lanes are passed on by the fast rule and
    # taken by the next.
    full = model_kind(c.n_m, c.rho_eta_known) == 2
    assert set(rules[full]) == set(FULL_MODEL_RULES)
    assert set(rules[~full]) == {"beta", "known"}
    passed_on = np.isin(np.arange(96), np.concatenate([ch.piece for ch in fast]))
    assert (passed_on & (rules == "hermite_t")).any()
    only_nested = fit_lanes(c, keys, "quadrature", cascade=(nested(),)).fits
    for name in ("post_mean", "post_sd"):
        np.testing.assert_allclose(getattr(both, name), getattr(only_nested, name), atol=1e-6)
    for name in ("ci_low", "ci_high"):
        np.testing.assert_allclose(getattr(both, name), getattr(only_nested, name), atol=1e-5)
    assert both.exact.all()
    # Each rule waits for every lane that may still reach it, wherever it comes
    # from: one worker makes one call of each program that has lanes (every
    # rule's lanes fit one chunk of 64; the t-axis rule has a program for lanes
    # whose s rule is exact and one for the others); the same numbers as two.
    one, info = fit_lanes(c, keys, "quadrature", schedule=schedule_for(workers=1))
    times = info.calls
    calls = Counter(t.rule for t in times)
    assert calls == {**dict.fromkeys(QUADRATURE_RULES, 1), "hermite_t": 2}
    assert fits_differing(one, both) == 0
    # A lane's numbers do not depend on the lanes rejected with it.
    alone = fit_lanes(jax.tree.map(lambda x: x[::2], c), keys[::2], "quadrature").fits
    np.testing.assert_array_equal(alone.post_sd, both.post_sd[::2])


def test_a_stopped_fit_begins_no_chunk_and_says_so():
    """``stop`` set: no chunk begins, and fit_lanes raises rather than return NaNs."""
    c = mixed_lanes(100, seed=3)
    stop, progress = threading.Event(), []
    stop.set()
    with pytest.raises(CancelledError):
        fit_lanes(c, None, "quadrature", stop=stop, on_chunk=progress.append)
    assert progress == []
    # Unset, the same event changes nothing.
    fits, _ = fit_lanes(c, None, "quadrature", stop=threading.Event(), on_chunk=progress.append)
    assert sum(progress) == 100 and np.isfinite(fits.post_mean).all()


def test_library_calls_refuse_float32_and_leave_the_switch_to_entry_points():
    """x64 is switched on by the entry points (sweep.run, plan_grid, the Ray task), never
    by a library call: in float32 ``require_float64`` refuses, and says how to switch."""
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(RuntimeError, match="jax_enable_x64"):
            require_float64()
        assert not jax.config.jax_enable_x64  # refused, not switched
    finally:
        jax.config.update("jax_enable_x64", True)
    require_float64()


def test_a_cascade_that_could_leave_a_lane_unanswered_is_refused_when_built():
    """Every lane must end with an answer: the last rule answers all it gets."""
    assert make_cascade(gauss_hermite(), nested())[-1].name == "nested"
    for rules, match in (
        ((), "at least one rule"),
        ((gauss_hermite(),), "'gauss_hermite' passes some on"),
        ((nested(), hermite_t()), "'hermite_t' passes some on"),
        ((nested(), nested()), "'nested' answers every lane: the rules after it"),
        ((hermite_t(), hermite_t(), nested()), "distinct names"),
    ):
        with pytest.raises(ValueError, match=match):
            make_cascade(*rules)
    # fit_lanes refuses one before computing anything.
    with pytest.raises(ValueError, match="passes some on"):
        fit_lanes(mixed_lanes(8, seed=1), None, "quadrature", cascade=(gauss_hermite(),))


def test_lanes_with_the_same_counts_are_fitted_once_and_get_the_same_numbers():
    """Exact posteriors depend on the counts each rule reads alone: repeated lanes are
    fitted once (FitInfo.distinct), and what a lane's rule does not read (ρ, η of a
    full-model lane; the paired counts of a Beta lane) changes no bit."""
    c, _ = with_few_paired(mixed_lanes(60, seed=12))
    b = len(c.n_m)
    r = np.random.default_rng(0)
    kinds = model_kind(c.n_m, c.rho_eta_known)
    full, beta = kinds == 2, kinds == 0
    # Each lane twice, the second copy with what its rule does not read changed.
    copy = c._replace(
        rho=np.where(full, r.uniform(0.5, 1.0, b), c.rho),
        eta=np.where(full, r.uniform(0.5, 1.0, b), c.eta),
        n_tp=np.where(beta, 1.0, c.n_tp),
        n_pos_paired=np.where(beta, 3.0, c.n_pos_paired),
    )
    both = jax.tree.map(lambda x, y: np.concatenate([np.asarray(x), np.asarray(y)]), c, copy)
    result = fit_lanes(c, None, "quadrature")  # one value: the fits and how they were made
    assert isinstance(result, LaneFits) and isinstance(result.info, FitInfo)
    alone, info = result
    twice, twice_info = fit_lanes(both, None, "quadrature")
    assert info.distinct == b and twice_info.distinct == b
    assert sum(t.lanes for t in twice_info.calls) == sum(t.lanes for t in info.calls)
    for half in (slice(0, b), slice(b, 2 * b)):
        assert fits_differing(alone, take_fits(twice, half)) == 0
        assert (twice_info.rules[half] == info.rules).all()
    # NUTS lanes are their own (their keys differ); a Beta lane is still exact under NUTS.
    first, lanes = distinct_lanes(both, "nuts")
    own = first[lanes] == np.arange(2 * b)  # the lanes fitted for themselves
    assert len(first) == own.sum() == 2 * b - beta.sum()
    assert (lanes[b:][beta] == lanes[:b][beta]).all() and own[:b].all()


def test_a_memo_carries_exact_fits_to_later_batches_with_the_same_counts():
    """A runner's FitMemo: a later batch's lanes with known counts are not fitted again,
    and get the same bits; a batch with another level is refused."""
    c = mixed_lanes(40, seed=13)
    memo = FitMemo()
    alone = fit_lanes(c, None, "quadrature").fits
    first, info = fit_lanes(take(c, slice(0, 30)), None, "quadrature", memo=memo)
    assert info.distinct == 30
    progress = []
    again, info = fit_lanes(c, None, "quadrature", memo=memo, on_chunk=progress.append)
    assert info.distinct == 10 and sum(progress) == 40 and progress[0] == 30
    assert fits_differing(alone, again) == 0
    with pytest.raises(ValueError, match="another level"):
        fit_lanes(c, None, "quadrature", level=0.9, memo=memo)
