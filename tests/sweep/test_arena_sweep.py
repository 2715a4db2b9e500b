"""Arena sweeps (``ratings: arena``, issue 67 item 6): the sweep file, its configurations,
a run through the store, and its numbers recomputed from the kernels alone."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from binmetric_sweep.kernels.arena.logdensity import arena_shape
from binmetric_sweep.kernels.arena.posterior import SamplerSettings, sample_arenas
from binmetric_sweep.kernels.arena.ppr import ppr_win_rates, rank_sets
from binmetric_sweep.kernels.arena.scores import score_rankings
from binmetric_sweep.kernels.arena.simulate import ArenaSetting, cell_data, cells_of, draw_arena
from binmetric_sweep.kernels.categorical.families import preference_confusion
from binmetric_sweep.sweep import api
from binmetric_sweep.sweep.display.tables import default_value
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.shards import make_shards
from binmetric_sweep.sweep.spec.config import load_sweep, spec_digest, spec_from_canonical
from binmetric_sweep.sweep.spec.grid import expand_grid, id_words
from binmetric_sweep.sweep.spec.lanes import lane_keys
from binmetric_sweep.sweep.storage.columns import FITS, SURFACE, names

ARENA = {
    "name": "leaderboards",
    "ratings": "arena",
    "replicates": 3,
    "seed": 11,
    "estimators": "all",
    "sampler": {"chains": 2, "warmup": 60, "samples": 60},
    "grid": {
        "systems": [3],
        "spread": [0.8],
        "battles": [4, 12],
        "human_share": [0.5],
        "accuracy": [0.6],
        "position_bias": [0.5],
    },
}


def arena(**changes) -> dict:
    return {**ARENA, **changes}


def grid(**axes) -> dict:
    return arena(grid={**ARENA["grid"], **axes})


def test_an_arena_sweep_reads_its_axes_and_defaults_and_keeps_its_digest():
    spec = load_sweep(arena())
    (block,) = spec.grid
    assert block.nu == (0.5,) and block.judges == (1.0,) and block.judge_model == ("joint",)
    assert spec.estimators == ("bayes", "human_only", "judge_only", "ppr")
    assert spec.counts == "sampled"
    assert spec_from_canonical(spec.canonical()) == spec
    assert spec_digest(spec_from_canonical(spec.canonical())) == spec_digest(spec)
    assert "gamma" not in spec.canonical() and "loop" not in spec.canonical()["sampler"]


@pytest.mark.parametrize(
    ("sweep", "line"),
    [
        (arena(counts="expected"), "counts: 'expected' is not allowed with ratings arena"),
        (arena(method="quadrature"), "method: 'quadrature' is not allowed with ratings arena"),
        (arena(gamma=0.1), "gamma: not allowed with ratings arena"),
        (arena(sampler={"loop": "kernel"}), "sampler.loop: not allowed with ratings arena"),
        (arena(estimators=["ppi"]), "estimators: 'ppi' is not an arena estimator"),
        (grid(systems=[2.5]), "grid.systems: value 2.5 is not a whole number"),
        (grid(systems=[31]), "grid.systems: value 31 is out of range"),
        (grid(battles=[0]), "grid.battles: value 0 is out of range"),
        (grid(spread=[0]), "grid.spread: value 0 is not allowed"),
        (grid(human_share=[0]), "grid.human_share: value 0 is not allowed"),
        (grid(position_bias=[1.5]), "grid.position_bias: value 1.5 is out of range"),
        (grid(judge_model=["both"]), "grid.judge_model: 'both' is not allowed"),
        (grid(n_phi=[10]), "grid.n_phi: unknown axis 'n_phi'"),
    ],
)
def test_bad_arena_sweep_files_get_one_line_naming_the_field(sweep, line):
    with pytest.raises(SweepError) as caught:
        load_sweep(sweep)
    assert str(caught.value).startswith(line), caught.value
    assert "\n" not in str(caught.value)


def test_configurations_are_one_per_distinct_arena_and_shards_keep_one_shape():
    spec = load_sweep(grid(systems=[3, 4], judges=[1, 2], copy_rate=[0.0, 0.4]))
    table = expand_grid(spec)
    # One judge copies no one: its two copy rates are one configuration.
    assert len(table) == 2 * 2 * (1 + 2)
    assert (
        list(table.columns) == [c for c in names(SURFACE, "arena") if c in table.columns]
        and "config_id" in table.columns
    )
    assert table["config_id"].is_unique
    one = table[table["judges"] == 1]
    assert (one["copy_rate"] == 0).all() and (one["judge_model"] == "joint").all()
    shards = make_shards(table, 100, spec.rating_model.layout_columns)
    assert len(shards) == 4  # (systems, judges) vary slowest: four shapes, four shards
    for shard in shards:
        assert len(shard.configurations[["systems", "judges"]].drop_duplicates()) == 1


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    jax.config.update("jax_enable_x64", True)
    out = tmp_path_factory.mktemp("arena") / "sweep"
    api.run(arena(), out, progress=False, compile_cache=None)
    return out


def _table(out, table: str) -> pd.DataFrame:
    frames = [pq.read_table(p).to_pandas() for p in sorted((out / table).glob("*.parquet"))]
    return pd.concat(frames, ignore_index=True)


def test_a_run_writes_the_registry_s_arena_columns(ran):
    fits, surface = _table(ran, FITS), _table(ran, SURFACE)
    assert tuple(fits.columns) == names(FITS, "arena")
    assert tuple(surface.columns) == names(SURFACE, "arena")
    assert len(fits) == 2 * 3 * 4 and len(surface) == 2 * 4
    ppr = fits[fits["estimator"] == "ppr"]
    assert ppr["rhat"].isna().all() and ppr["p_leader"].isna().all()
    assert (ppr["divergences"] == 0).all()
    assert set(surface["ratings"]) == {"arena"} and set(surface["method"]) == {"nuts"}
    assert default_value(surface) == "rank_coverage"
    assert api.load_surface(ran).shape == surface.shape


def _ppr_scores(counts, truth, level):
    """PPR's rank sets of each lane (judge 0's verdicts), scored here by hand."""
    held, every, width, named = [], [], [], []
    for n, true in zip(counts, truth, strict=True):
        s = len(true)
        estimate = ppr_win_rates(cells_of(n), s, 0)
        low, high = rank_sets(estimate.theta, estimate.cov, level)
        rank = 1 + np.argsort(np.argsort(-true))
        inside = (low <= rank) & (rank <= high)
        held.append(inside.mean())
        every.append(inside.all())
        width.append((high - low + 1).mean())
        named.append(np.argmax(estimate.theta) == np.argmax(true))
    return held, every, width, named


def test_each_fit_is_the_kernels_own_leaderboard_of_its_lane(ran):
    """The lane's key → its arena (draw_arena) → each method's posterior (sample_arenas, the
    sampler key fold 5; judge_only: the judge's verdict counts put in the truth's place) or
    ppr's rank sets → its scores, recomputed here from the kernels for every lane."""
    fits = _table(ran, FITS)
    spec = load_sweep(arena())
    table = expand_grid(spec)
    r = spec.replicates
    words = np.repeat(id_words(table["config_id"].to_numpy()), r, axis=0)
    keys = lane_keys(spec.seed, words, np.tile(np.arange(r), len(table)))
    pairs = 1.0 - np.eye(3)
    confusion = np.asarray(preference_confusion(0.6, 1 / 3, 0.5))[None]
    settings = SamplerSettings(2, 60, 60)
    for i, battles in enumerate(table["battles"]):
        lanes = keys[i * r : (i + 1) * r]
        truth, counts = [], []
        for key in lanes:
            setting = ArenaSetting(0.8, np.log(0.5), battles * pairs, 0.5, confusion, np.zeros(1))
            s, n = draw_arena(key, setting)
            truth.append(np.asarray(s))
            counts.append(np.asarray(n))
        sampler_keys = jax.vmap(lambda k: jax.random.fold_in(k, 5))(lanes)
        rows = fits[fits["config_id"] == table["config_id"][i]]
        said = []  # the judge's verdicts as the truth, every battle kept
        for n in counts:
            judged = np.zeros((3, 3, 3, 2, 1), n.dtype)
            judged[:, :, :, 1, 0] = n.sum(axis=(2, 3))  # one judge: its pattern is its verdict
            said.append(judged)
        for name, judges, read in (
            ("bayes", None, counts),
            ("human_only", (), counts),
            ("judge_only", (), said),
        ):
            data = jax.tree.map(
                lambda *x: np.stack(x), *[cell_data(n, pairs, judges) for n in read]
            )
            shape = arena_shape(3, 1 if judges is None else 0)
            draws = sample_arenas(sampler_keys, data, shape, settings)
            scores = score_rankings(draws.strengths, np.stack(truth), spec.interval)
            got = rows[rows["estimator"] == name].sort_values("replicate")
            np.testing.assert_array_equal(got["rank_held"], scores.held)
            np.testing.assert_array_equal(got["all_ranks_held"], scores.all_held)
            np.testing.assert_array_equal(got["rank_width"], scores.width)
            np.testing.assert_array_equal(got["rank_width_max"], scores.widest)
            np.testing.assert_array_equal(got["rank_set_width"], scores.set_width)
            np.testing.assert_array_equal(got["p_leader"], scores.p_leader)
            np.testing.assert_array_equal(got["rhat"], draws.rhat_max)
            np.testing.assert_array_equal(got["divergences"], draws.divergences)
        got = rows[rows["estimator"] == "ppr"].sort_values("replicate")
        held, every, width, named = _ppr_scores(counts, truth, spec.interval)
        np.testing.assert_allclose(got["rank_held"], held, rtol=1e-15)
        np.testing.assert_array_equal(got["all_ranks_held"], every)
        np.testing.assert_allclose(got["rank_width"], width, rtol=1e-15)
        np.testing.assert_allclose(got["rank_set_width"], width, rtol=1e-15)
        np.testing.assert_array_equal(got["leader_first"], named)
        human = np.array([n[..., 1, :].sum() for n in counts])
        np.testing.assert_array_equal(
            rows[rows["estimator"] == "bayes"].sort_values("replicate")["human_verdicts"], human
        )


def test_the_surface_is_the_fits_means_over_replicates(ran):
    fits, surface = _table(ran, FITS), _table(ran, SURFACE)
    by = fits.groupby(["config_id", "estimator"], sort=False)
    merged = surface.merge(
        by.agg(
            held=("rank_held", "mean"),
            held_sd=("rank_held", "std"),
            sets=("all_ranks_held", "mean"),
            width=("rank_width", "mean"),
            widest=("rank_width_max", "mean"),
            set_width=("rank_set_width", "mean"),
            leader=("leader_first", "mean"),
            p=("p_leader", "mean"),
            rhat=("rhat", "max"),
            div=("divergences", "sum"),
        ).reset_index(),
        on=["config_id", "estimator"],
    )
    assert len(merged) == len(surface)
    np.testing.assert_allclose(merged["rank_coverage"], merged["held"], rtol=1e-15)
    np.testing.assert_allclose(merged["rank_coverage_mcse"], merged["held_sd"] / np.sqrt(3))
    np.testing.assert_allclose(merged["set_coverage"], merged["sets"], rtol=1e-15)
    np.testing.assert_allclose(merged["rank_width_mean"], merged["width"], rtol=1e-15)
    np.testing.assert_allclose(merged["rank_width_max_mean"], merged["widest"], rtol=1e-15)
    np.testing.assert_allclose(merged["rank_set_width_mean"], merged["set_width"], rtol=1e-15)
    np.testing.assert_allclose(merged["leader_share"], merged["leader"], rtol=1e-15)
    np.testing.assert_allclose(merged["p_leader_mean"], merged["p"], rtol=1e-15)
    np.testing.assert_array_equal(merged["rhat_max"].isna(), merged["estimator"] == "ppr")
    np.testing.assert_array_equal(merged["rhat_max"], merged["rhat"])
    np.testing.assert_array_equal(merged["divergences"], merged["div"])


def test_shard_sizes_change_no_number(ran, tmp_path):
    out = tmp_path / "one-per-shard"
    api.run(arena(shard_size=1), out, progress=False, compile_cache=None)
    for table in (FITS, SURFACE):
        keys = ["config_id", "estimator"] + (["replicate"] if table == FITS else [])
        a = _table(ran, table).drop(columns=["shard"], errors="ignore")
        b = _table(out, table).drop(columns=["shard"], errors="ignore")
        pd.testing.assert_frame_equal(
            a.sort_values(keys).reset_index(drop=True), b.sort_values(keys).reset_index(drop=True)
        )
