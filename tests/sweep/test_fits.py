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
from binmetric_sweep.sweep.cascade import (
    FULL_MODEL_RULES,
    QUADRATURE_RULES,
    default_cascade,
    nested,
)
from binmetric_sweep.sweep.fits import (
    ACCELERATOR_QUADRATURE_CHUNK,
    ACCELERATOR_RULE_CHUNKS,
    ACCELERATOR_WORKERS,
    CPU_FEW_NUTS_SLOTS,
    CPU_NUTS_SLOTS,
    CPU_QUADRATURE_CHUNK,
    MIN_BATCH,
    Schedule,
    Stage,
    _next_calls,
    _nuts_fn,
    _spread,
    _staged_chunks,
    _Waiting,
    default_chunk_size,
    default_workers,
    fit_lanes,
    fit_lanes_info,
    lane_keys,
    nuts_slots,
    plan_chunks,
    require_float64,
    usable_cores,
)
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
        chunks = plan_chunks(c, method, schedule=Schedule(chunk_size=64))
        pieces = np.concatenate([chunk.piece for chunk in chunks])
        np.testing.assert_array_equal(np.sort(pieces), np.arange(150))
        for chunk in chunks:
            size = len(chunk.padded)
            assert size <= 64 and size & (size - 1) == 0
            np.testing.assert_array_equal(chunk.padded[: len(chunk.piece)], chunk.piece)
            assert set(chunk.padded) == set(chunk.piece)  # padding repeats its own lanes
            # Only lanes without metric ratings (a Beta posterior) are exact under NUTS.
            assert chunk.exact == (method == "quadrature" or not c.n_m[chunk.piece].any())
        # One kind of lane per call: the three kinds (and, for NUTS, two coordinates) apart.
        assert len(chunks) >= 3


def test_a_requested_chunk_size_is_rounded_down_to_a_power_of_two():
    c = mixed_lanes(300, seed=5)
    for asked, expected in ((100, 64), (8, 8), (5, 4), (200, 128)):
        sizes = {
            len(chunk.padded)
            for chunk in plan_chunks(c, "quadrature", schedule=Schedule(chunk_size=asked))
        }
        assert max(sizes) == expected


def test_on_cpu_every_chunk_has_one_size_whatever_the_group_size():
    """One shape per method for every group, so a lane's numbers do not depend on its shard.

    For NUTS the shape a lane's draws depend on is the slots (chains advanced
    at once); its calls have one size too, so that each coordinates compile once.
    """
    assert default_chunk_size("quadrature", backend="cpu") == CPU_QUADRATURE_CHUNK
    # NUTS calls of 512 chains, in a power of two of fits, on 128 slots.
    for chains, fits in ((4, 128), (2, 256), (3, 128), (64, 8), (600, 1)):
        assert default_chunk_size("nuts", chains, backend="cpu") == fits
    assert nuts_slots("cpu") == CPU_NUTS_SLOTS == 128
    # 32 slots where no call of the group holds more than 256 chains.
    assert nuts_slots("cpu", 256) == CPU_FEW_NUTS_SLOTS == 32
    assert nuts_slots("cpu", 257) == 128
    assert nuts_slots("gpu") is None  # there a call's chains all run at once
    assert default_chunk_size("nuts", 4, backend="gpu") is None
    c = mixed_lanes(700, seed=6)
    kernels = {
        slots: {
            _nuts_fn(d, resolve_loop(NUTSSettings(), "cpu"), r, slots)
            for d in (1, 3)
            for r in (False, True)
        }
        for slots in (32, 128)
    }
    groups = {}  # each group of lanes runs one program
    for method in ("nuts", "quadrature"):
        for chunk in plan_chunks(c, method, schedule=Schedule(backend="cpu", workers=2)):
            if chunk.exact:
                assert len(chunk.padded) == CPU_QUADRATURE_CHUNK
            else:  # 128 fits of 4 chains, whatever the group's size
                assert len(chunk.padded) == 128
                groups[chunk.fn] = groups.get(chunk.fn, 0) + len(chunk.piece)
    # 128 slots, but 32 where the group's calls, split between the two workers,
    # hold at most 256 chains (here a group of 13 fits, in calls of 7 and 6).
    slots = {fn: 32 if -(-size // 2) * 4 <= 256 else 128 for fn, size in groups.items()}
    assert all(fn in kernels[slots[fn]] for fn in groups)
    assert set(slots.values()) == {32, 128}
    # A larger chunk asked for is capped at the group's bucket: a power of two, >= MIN_BATCH.
    (first, *_) = plan_chunks(c, "quadrature", schedule=Schedule(chunk_size=4096, backend="cpu"))
    assert MIN_BATCH <= len(first.padded) < 4096


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
        fit_lanes(c, keys, "nuts", nuts=settings, schedule=Schedule(chunk_size=size, workers=1))
        for size in sizes
    )
    # Two workers: the group (one call of 256 fits with one) is split in two calls of 70
    # fits, every other lane in each, so that both cores have work: 140 chains a
    # call, a queue on 32 slots.
    pieces = plan_chunks(c, "nuts", nuts=settings, schedule=Schedule(workers=2, backend="cpu"))
    assert [len(chunk.piece) for chunk in pieces] == [70, 70]
    assert {len(chunk.padded) for chunk in pieces} == {256}
    assert {chunk.fn.static[-1] for chunk in pieces} == {32}
    plans = [
        plan_chunks(c, "nuts", nuts=settings, schedule=Schedule(chunk_size=n, workers=1))
        for n in sizes
    ]
    assert [{chunk.fn.static[-1] for chunk in plan} for plan in plans] == [{32}, {128}]
    split = fit_lanes(c, keys, "nuts", nuts=settings, schedule=Schedule(workers=2))
    for name, x, y, z in zip(slotted._fields, slotted, queued, split, strict=True):
        np.testing.assert_array_equal(x, y, err_msg=name)
        np.testing.assert_array_equal(x, z, err_msg=name)
    assert np.isfinite(queued.post_sd).all()


def test_on_an_accelerator_quadrature_chunks_have_one_size_and_nuts_chunks_fit_the_group():
    """Quadrature's numbers there depend on the chunk's size, a NUTS lane's draws did not.

    A rule's chunks have one size (Gauss–Hermite its own), and there the quadrature
    takes two passes, not five (see _quadrature_stages). NUTS runs the chain kernel.
    """
    c, _ = with_few_paired(mixed_lanes(700, seed=6))
    quadrature = plan_chunks(c, "quadrature", schedule=Schedule(backend="gpu"))
    sizes = {}
    for chunk in quadrature:
        sizes.setdefault(chunk.rule, set()).add(len(chunk.padded))
        for stage in chunk.fallbacks:
            sizes.setdefault(stage.rule, set()).add(stage.size)
    assert sizes.pop("gauss_hermite") == {ACCELERATOR_RULE_CHUNKS["gauss_hermite"]}
    assert sizes and all(size == {ACCELERATOR_QUADRATURE_CHUNK} for size in sizes.values())
    # A caller's chunk size is every rule's.
    asked = plan_chunks(c, "quadrature", schedule=Schedule(backend="gpu", chunk_size=256))
    assert {len(chunk.padded) for chunk in asked} == {256}
    # There the full model's lanes go from Gauss–Hermite straight to the nested rule.
    passes = {(chunk.rule, *(stage.rule for stage in chunk.fallbacks)) for chunk in quadrature}
    assert ("gauss_hermite", "nested") in passes
    on_cpu = plan_chunks(c, "quadrature", schedule=Schedule(backend="cpu"))
    for middle in ("hermite_alpha_t", "t_outer", "hermite_t"):
        assert not any(middle in rules for rules in passes)
        assert any(middle in (ch.rule, *(st.rule for st in ch.fallbacks)) for ch in on_cpu)
    nuts = plan_chunks(c, "nuts", schedule=Schedule(backend="gpu"))
    for chunk in nuts:
        size = len(chunk.padded)
        if chunk.exact:  # lanes without metric ratings: the Beta, as quadrature
            assert size == ACCELERATOR_QUADRATURE_CHUNK
        else:  # the group's own power of two, well below the memory budget's 4096 fits
            assert MIN_BATCH <= size < 4096 and size >= len(chunk.piece)
            assert chunk.fn.static[1].loop == "kernel"  # _nuts_fn's settings, resolved
    assert any(not chunk.exact for chunk in nuts)
    # NUTSSettings' "auto" is the leapfrog loop on CPU; a loop asked for is kept.
    assert {
        ch.fn.static[1].loop
        for ch in plan_chunks(c, "nuts", schedule=Schedule(backend="cpu"))
        if not ch.exact
    } == {"leapfrog"}
    assert resolve_loop(NUTSSettings(), "gpu") == NUTSSettings(loop="kernel", backend="gpu")
    # ... where this JAX lowers Pallas to Triton, as the JAX of these tests does; a
    # later one may not (the lowering is deprecated), and "auto" is then the leapfrog loop.
    assert can_import(TRITON_LOWERING) and not can_import(TRITON_LOWERING + "_gone")
    for loop in ("leapfrog", "kernel"):
        assert resolve_loop(NUTSSettings(loop=loop), "gpu").loop == loop
        assert resolve_loop(NUTSSettings(loop=loop), "cpu").loop == loop
    with pytest.raises(ValueError, match="loop must be one of auto, leapfrog, kernel"):
        resolve_loop(NUTSSettings(loop="transition"), "cpu")


def test_a_benchmark_may_size_each_rule_s_chunks_and_try_the_middle_rules_anywhere():
    """``Schedule.rule_chunks`` and the full cascade, which bench_kernels.py tries on a GPU."""
    c, _ = with_few_paired(mixed_lanes(700, seed=6))
    plan = plan_chunks(
        c,
        "quadrature",
        cascade=default_cascade("gpu", middle_rules=True),
        schedule=Schedule(backend="gpu", rule_chunks={"gauss_hermite": 5000}),
    )
    sizes = {}
    for chunk in plan:
        sizes.setdefault(chunk.rule, set()).add(len(chunk.padded))
        for stage in chunk.fallbacks:
            sizes.setdefault(stage.rule, set()).add(stage.size)
    # Gauss–Hermite's chunks rounded down to a power of two; every other rule keeps the default.
    assert sizes.pop("gauss_hermite") == {4096}
    assert set(sizes) >= {"hermite_alpha_t", "t_outer", "hermite_t", "nested"}
    assert all(size == {ACCELERATOR_QUADRATURE_CHUNK} for size in sizes.values())
    # On an accelerator a call computes its whole chunk: no rule runs in groups there.
    assert all(stage.group is None for ch in plan for stage in ch.fallbacks)
    # A lane a rule rejects goes on in chunks of the next rule's size, not the rejecting one's.
    (chunk, *_) = (ch for ch in plan if ch.rule == "gauss_hermite" and ch.fallbacks)
    (first, *_) = _staged_chunks(chunk.fallbacks, chunk.piece[:3], len(chunk.padded))
    assert len(first.padded) == ACCELERATOR_QUADRATURE_CHUNK
    # On CPU the middle rules may be left out.
    rules = {
        r
        for ch in plan_chunks(
            c,
            "quadrature",
            cascade=default_cascade("cpu", middle_rules=False),
            schedule=Schedule(backend="cpu"),
        )
        for r in (ch.rule, *(st.rule for st in ch.fallbacks))
    }
    assert rules == {"beta", "known", "gauss_hermite", "nested"}


def test_a_later_pass_spreads_a_grouped_rule_s_few_lanes_over_the_workers():
    """One call per worker for a rule computed in groups, as long as each has a group."""
    grouped, whole = Stage("hermite_t", None, group=8), Stage("gauss_hermite", None)
    assert _spread(grouped, 17, 64, 2) == 2  # three groups of 8: a call for each worker
    assert _spread(grouped, 17, 64, 8) == 3  # no more calls than groups
    assert _spread(grouped, 17, 64, 1) is None
    assert _spread(grouped, 8, 64, 2) is None  # one group: one call
    assert _spread(grouped, 130, 64, 2) is None  # three calls already
    assert _spread(grouped._replace(size=16), 40, 64, 2) is None  # its own chunks: three calls
    assert _spread(whole, 17, 64, 2) is None  # a call computes its whole chunk: no gain
    # Each piece a chunk of the same size, every lane in one of them.
    pieces = _staged_chunks((grouped,), np.arange(17), 64, _spread(grouped, 17, 64, 2))
    assert [len(ch.padded) for ch in pieces] == [64, 64]
    assert sorted(np.concatenate([ch.piece for ch in pieces])) == list(range(17))


def test_gathered_a_rule_waits_for_every_lane_that_may_reach_it():
    """``_next_calls``: a rule's lanes from everywhere in one set of calls, each of its own size."""
    first, middle, last = (
        Stage(rule, object()) for rule in ("gauss_hermite", "hermite_t", "nested")
    )
    waiting = [
        _Waiting((first, middle, last), 64, np.arange(0, 10)),
        _Waiting((middle, last), 64, np.arange(10, 15)),
        _Waiting((middle, last), 128, np.arange(15, 20)),
        _Waiting((last,), 64, np.arange(20, 22)),
    ]
    # Only the rule no waiting lane may still reach.
    chunks, held = _next_calls(waiting, workers=1)
    assert [ch.rule for ch in chunks] == ["gauss_hermite"] and held == waiting[1:]
    # Its rejects join the lanes waiting for the next rule, those of one chunk size together.
    chunks, held = _next_calls([*held, _Waiting((middle, last), 64, np.arange(30, 33))], 1)
    got = [(ch.rule, len(ch.padded), sorted(ch.piece.tolist())) for ch in chunks]
    assert got == [
        ("hermite_t", 64, [*range(10, 15), 30, 31, 32]),
        ("hermite_t", 128, list(range(15, 20))),
    ]
    assert held == waiting[3:]
    # A rule's own chunk size wins over the size its lanes came with.
    sized = middle._replace(size=32)
    chunks, _ = _next_calls(
        [_Waiting((sized, last), 64, np.arange(3)), _Waiting((sized, last), 128, np.arange(3, 5))],
        1,
    )
    assert [(len(ch.padded), len(ch.piece)) for ch in chunks] == [(32, 5)]


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
    """Several chunks at once (one per core on CPU) change neither results nor progress.

    With NUTS the progress calls are the same too; with quadrature a later
    pass may make more calls with more workers (:func:`sweep.fits._spread`).
    """
    assert default_workers("cpu") == usable_cores() >= 1
    # On an accelerator a second call overlaps the host's work on the first.
    assert default_workers("gpu") == ACCELERATOR_WORKERS == 2
    # The NUTS settings of test_nuts' determinism test, whose ridge program is then compiled.
    settings = NUTSSettings(chains=2, warmup=50, samples=50)
    for method, c in (("nuts", ridge_lanes(140, seed=7)), ("quadrature", mixed_lanes(200, seed=7))):
        b = len(c.n_m)
        keys = lane_keys(3, np.stack([np.arange(b), np.zeros(b)], axis=1), np.zeros(b))
        runs, calls = [], []
        for workers in (1, 3):
            progress = []
            fits, info = fit_lanes_info(
                c,
                keys,
                method,
                nuts=settings,
                on_chunk=progress.append,
                schedule=Schedule(chunk_size=64, workers=workers),
            )
            times = info.calls
            runs.append((fits, progress))
            calls.append(len(times))
        (one, one_progress), (three, three_progress) = runs
        assert sum(one_progress) == sum(three_progress) == b
        if method == "quadrature":
            # A later pass's few lanes for a rule computed in groups go out as one
            # call per worker (sweep.fits._spread): more calls, the same numbers.
            assert calls[1] > calls[0]
        else:
            assert one_progress == three_progress
        assert calls[0] >= 3  # several chunks, so threads did run side by side
        # The host's part of each call: a NUTS call's summaries, none for quadrature.
        if method == "nuts":
            assert all(0.0 < t.host_seconds < t.seconds for t in times)
        else:
            assert all(t.host_seconds == 0.0 for t in times)
        for name, x, y in zip(one._fields, one, three, strict=True):
            np.testing.assert_array_equal(x, y, err_msg=name)
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
    both, (rules, times) = fit_lanes_info(c, keys, "quadrature", schedule=Schedule(workers=2))
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
    only_nested = fit_lanes(c, keys, "quadrature", cascade=(nested(),))
    for name in ("post_mean", "post_sd"):
        np.testing.assert_allclose(getattr(both, name), getattr(only_nested, name), atol=1e-6)
    for name in ("ci_low", "ci_high"):
        np.testing.assert_allclose(getattr(both, name), getattr(only_nested, name), atol=1e-5)
    assert both.exact.all()
    # Each rule waits for every lane that may still reach it, wherever it comes
    # from: one worker makes one call of each program that has lanes (every
    # rule's lanes fit one chunk of 64; the t-axis rule has a program for lanes
    # whose s rule is exact and one for the others); the same numbers as two.
    one, (_, times) = fit_lanes_info(c, keys, "quadrature", schedule=Schedule(workers=1))
    calls = Counter(t.rule for t in times)
    assert calls == {**dict.fromkeys(QUADRATURE_RULES, 1), "hermite_t": 2}
    for name, x, y in zip(both._fields, one, both, strict=True):
        np.testing.assert_array_equal(x, y, err_msg=name)
    # A lane's numbers do not depend on the lanes rejected with it.
    alone = fit_lanes(jax.tree.map(lambda x: x[::2], c), keys[::2], "quadrature")
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
    fits = fit_lanes(c, None, "quadrature", stop=threading.Event(), on_chunk=progress.append)
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
