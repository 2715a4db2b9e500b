"""``sweep plan --ratings arena`` (issue 67 item 6): the share of battles that needs a human
verdict for every rank interval to be at most w places wide, found and checked by
simulated arenas."""

from __future__ import annotations

import jax
import numpy as np
import pyarrow.parquet as pq
import pytest

from binmetric_sweep.sweep import api
from binmetric_sweep.sweep.cli import UNREACHABLE_STATUS, main
from binmetric_sweep.sweep.plan.arena import RHAT_LIMIT, SHARES, arena_plan_spec, plan_arena

SCENARIO = {"systems": 4, "spread": 1.0, "battles": 12, "accuracy": 0.7}
SAMPLER = {"chains": 2, "warmup": 100, "samples": 100}


def spec(estimator="bayes", **changes):
    return arena_plan_spec(
        {**SCENARIO, **changes},
        replicates=16,
        seed=0,
        level=0.9,
        estimator=estimator,
        sampler=SAMPLER,
    )


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--systems", "4", "--spread", "1", "--battles", "12", "--accuracy", "0.7"], "--width"),
        (["--width", "2", "--spread", "1", "--battles", "12", "--accuracy", "0.7"], "--systems"),
        (["--width", "2", "--systems", "1.5", "--spread", "1", "--battles", "12"], "--accuracy"),
        (["--width", "2", "--alpha", "0.5"], "--alpha: not with --ratings arena"),
        (["--width", "2", "--cost-judge", "0.1"], "--cost-judge: not with --ratings arena"),
    ],
)
def test_bad_arena_plans_exit_2_with_one_line(flags, line, capsys):
    assert main(["plan", "--ratings", "arena", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sweep: error: {line}") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--systems", "2.5"], "--systems: value 2.5 is not a whole number"),
        (["--battles", "0"], "--battles: value 0 is out of range"),
        (["--judges", "two"], "--judges: value 'two' is not a finite number"),
        (["--level", "1.5"], "--level:"),
        (["--estimator", "ppi"], "--estimator: 'ppi' is not an arena estimator"),
        (["--estimator", "judge_only"], "--estimator: 'judge_only' is not an arena estimator"),
    ],
)
def test_a_bad_scenario_names_its_flag(flags, line, capsys):
    base = ["--systems", "4", "--spread", "1", "--battles", "12", "--accuracy", "0.7"]
    given = dict(zip(base[::2], base[1::2], strict=True)) | dict(
        zip(flags[::2], flags[1::2], strict=True)
    )
    argv = ["plan", "--ratings", "arena", "--width", "2"]
    argv += [x for pair in given.items() for x in pair]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sweep: error: {line}") and err.count("\n") == 1, err


def test_arena_flags_are_refused_without_ratings_arena(capsys):
    assert main(["plan", "--systems", "4", "--alpha", "0.5"]) == 2
    assert "--systems: an arena's; give --ratings arena" in capsys.readouterr().err


@pytest.fixture(scope="module")
def plan():
    jax.config.update("jax_enable_x64", True)
    return plan_arena(spec(), 3, 0.8)


def test_the_plan_is_the_least_share_searched_that_meets_the_width(plan):
    assert plan.reachable and plan.searched[0].human_share == SHARES[-1]
    met = [p for p in plan.searched if p.met >= 0.8]
    assert plan.plan.human_share == min(p.human_share for p in met)
    # The bisection tried the share below the plan (when there is one), and it fell short.
    below = SHARES.index(plan.plan.human_share) - 1
    if below >= 0:
        (short,) = [p for p in plan.searched if p.human_share == SHARES[below]]
        assert short.met < 0.8
    assert plan.plan.human_verdicts == pytest.approx(plan.plan.human_share * 12 * 4 * 3)
    assert plan.check.human_share == plan.plan.human_share
    assert plan.check != plan.plan  # fresh arenas
    lines = plan.lines()
    assert lines[0].startswith("arena plan (bayes): 4 systems, 12 battles an ordered pair")
    assert lines[1].startswith("checked on 16 fresh arenas (seed 1)")


def test_the_plan_s_numbers_are_an_arena_sweep_s_at_its_share(plan, tmp_path):
    """The plan's point, recomputed by running the same arenas as a sweep file through the
    store: the share of fits whose widest interval is at most w, and the surface's rank
    coverage."""
    block = {**{k: [v] for k, v in SCENARIO.items()}, "human_share": [plan.plan.human_share]}
    sweep = {
        "name": "arena-plan",
        "ratings": "arena",
        "replicates": 16,
        "seed": 0,
        "interval": 0.9,
        "sampler": SAMPLER,
        "grid": block,
    }
    api.run(sweep, tmp_path / "s", progress=False, compile_cache=None)
    fits = pq.read_table(next((tmp_path / "s" / "fits").glob("*.parquet"))).to_pandas()
    surface = api.load_surface(tmp_path / "s")
    met = (fits["rank_width_max"] <= 3) & (fits["rhat"] <= RHAT_LIMIT)
    assert plan.plan.met == np.mean(met)
    assert plan.plan.unmixed == np.sum(fits["rhat"] > RHAT_LIMIT)
    assert plan.plan.rank_coverage == surface["rank_coverage"].iloc[0]


def test_a_width_out_of_reach_is_unreachable_after_one_simulation():
    jax.config.update("jax_enable_x64", True)
    unreachable = plan_arena(spec(battles=2), 1, 0.8)
    assert not unreachable.reachable and len(unreachable.searched) == 1
    assert "UNREACHABLE" in unreachable.lines()[0]
    assert UNREACHABLE_STATUS == 3


def test_ppr_is_planned_by_its_rank_sets_with_no_sampler():
    """ppr's sets stand in for the intervals; a closed form has no R-hat to miss by, so no
    arena counts as unmixed, and its JSON says null where a sampler's R-hat would be."""
    import json

    from binmetric_sweep.sweep.plan.arena import plans_json

    plan = plan_arena(spec("ppr", battles=40), 3, 0.8)
    assert all(p.unmixed == 0 and np.isnan(p.rhat_max) for p in plan.searched)
    lines = plan.lines()
    assert lines[0].startswith("arena plan (ppr): 4 systems, 40 battles an ordered pair")
    if plan.reachable:
        assert "a closed form, no sampler" in lines[1]
    record = json.loads(plans_json([plan]))
    assert record["estimator"] == "ppr" and record["searched"][0]["rhat_max"] is None
