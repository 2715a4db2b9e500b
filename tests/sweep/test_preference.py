"""Preference sweeps (``ratings: preference``, issue 66): the sweep file, its configurations,
its shards and a run of the classical estimators (the posterior's is in test_preference_nuts)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from binmetric_sweep.kernels.categorical.families import copying_judges, preference_confusion
from binmetric_sweep.sweep import api
from binmetric_sweep.sweep.display.plots import setting_phrases
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.shards import make_shards
from binmetric_sweep.sweep.spec.config import load_sweep, spec_digest, spec_from_canonical
from binmetric_sweep.sweep.spec.grid import expand_grid
from binmetric_sweep.sweep.spec.rating_model import PREFERENCE as PREFERENCE_MODEL
from binmetric_sweep.sweep.storage.columns import FITS, SURFACE, names

from .helpers import tiny

PREFERENCE = {
    "name": "prefs",
    "ratings": "preference",
    "counts": "sampled",
    "replicates": 40,
    "seed": 3,
    "estimators": ["human_only", "judge_only", "rogan_gladen", "ppi", "ppi_pp"],
    "grid": {
        "win": [0.4],
        "tie": [0.2],
        "accuracy": [0.6, 0.9],
        "position_bias": [0.0, 0.6],
        "judges": [1, 2],
        "copy_rate": [0.0, 0.5],
        "n_phi": [150],
        "n_m": [1500],
    },
    "shard_size": 3,
}


def preference(**changes) -> dict:
    return {**PREFERENCE, **changes}


def grid(**axes) -> dict:
    return preference(grid={**PREFERENCE["grid"], **axes})


def test_a_preference_sweep_reads_its_axes_and_defaults():
    spec = load_sweep(preference())
    assert spec.rating_model.name == "preference"
    (block,) = spec.grid
    assert block.judge_model == ("joint",)
    assert block.tie_rate == (0.333333333333,) and block.n_rho_eta == "n_phi"
    assert spec_from_canonical(spec.canonical()) == spec
    assert spec.canonical()["ratings"] == "preference"
    # A binary sweep's canonical form has no ratings key: its digest is what it was.
    binary = load_sweep(tiny())
    assert "ratings" not in binary.canonical()
    assert spec_digest(binary) == spec_digest(load_sweep(tiny(ratings="binary")))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (grid(win=[0.9]), "grid.tie: win 0.9 + tie 0.2 exceeds 1"),
        (grid(position_bias=[1.5]), "grid.position_bias: value 1.5 is out of range"),
        (grid(judges=[4]), "grid.judges: value 4 is out of range"),
        (grid(judges=[1.5]), "grid.judges: value 1.5 is not a whole number"),
        (grid(alpha=[0.5]), "grid.alpha: unknown axis 'alpha'; allowed: win, tie, accuracy"),
        (grid(accuracy="win"), "grid.accuracy: 'win' is not an axis"),
        (grid(accuracy=[1.2]), "grid.accuracy: value 1.2 is out of range; allowed: numbers in"),
        (preference(ratings="prefs"), "ratings: 'prefs' is not allowed; allowed: binary, pref"),
        (preference(method="quadrature", estimators=["bayes"]), "method: 'quadrature' applies"),
        (preference(judge_model="joint"), "judge_model: is a grid axis; give it in a block"),
        (grid(judge_model=["both"]), "grid.judge_model: 'both' is not allowed; allowed: joint, "),
        (grid(judge_model=[]), "grid.judge_model: the list is empty"),
    ],
)
def test_bad_preference_values_name_their_field(changes, message):
    with pytest.raises(SweepError, match="^" + re.escape(message)):
        load_sweep(changes)


def test_a_binary_sweep_refuses_the_preference_keys():
    with pytest.raises(SweepError, match="^judge_model: unknown key 'judge_model'"):
        load_sweep(tiny(judge_model="joint"))


def test_configurations_are_the_registry_s_with_theta_and_no_copy_for_one_judge():
    table = expand_grid(load_sweep(preference()))
    assert tuple(table.columns) == (
        "config_id",
        *("theta", "win", "tie", "accuracy", "tie_rate", "position_bias", "judges"),
        *("copy_rate", "judge_model", "n_phi", "n_rho_eta", "confusion_known"),
        *("shared_paired", "n_m"),
    )
    # One judge copies no one: 2 accuracies × 2 biases × (1 + 2 copy rates of 2 judges).
    assert len(table) == 12 and (table.loc[table.judges == 1, "copy_rate"] == 0).all()
    assert np.allclose(table.theta, 0.4 + 0.5 * 0.2)
    assert table.config_id.is_unique and table.n_rho_eta.eq(150).all()
    # The ids hash the values alone: a block's order or shard size does not move them.
    again = expand_grid(load_sweep(grid(accuracy=[0.9, 0.6])))
    assert set(again.config_id) == set(table.config_id)
    known = expand_grid(load_sweep(grid(n_rho_eta="known")))
    assert known.n_rho_eta.isna().all() and known.confusion_known.all()
    assert not set(known.config_id) & set(table.config_id)


def test_judge_model_is_an_axis_that_keeps_the_joint_model_s_ids_and_digest():
    table = expand_grid(load_sweep(preference()))
    both = load_sweep(grid(judge_model=["joint", "independent"]))
    wide = expand_grid(both)
    # One judge's verdict is its own joint verdict: only two judges' configurations double.
    assert len(wide) == len(table) + (table.judges == 2).sum()
    assert set(wide.loc[wide.judges == 1, "judge_model"]) == {"joint"}
    joint = wide[wide.judge_model == "joint"]
    assert joint.config_id.tolist() == table.config_id.tolist()
    assert spec_digest(load_sweep(grid(judge_model=["joint"]))) == spec_digest(
        load_sweep(preference())
    )
    assert spec_from_canonical(both.canonical()) == both
    # 0.40.0's sweep key, kept at its one value where every block is joint: old digests hold.
    assert load_sweep(preference()).canonical()["judge_model"] == "joint"
    assert "judge_model" not in both.canonical()
    known = expand_grid(load_sweep(grid(judge_model=["independent"], n_rho_eta="known")))
    assert set(known.judge_model) == {"joint"}  # a known confusion is no model's to estimate
    independent = wide[wide.judge_model == "independent"]
    assert PREFERENCE_MODEL.independent_judges(independent)
    assert not PREFERENCE_MODEL.independent_judges(joint)
    with pytest.raises(ValueError, match="2 judge models"):
        PREFERENCE_MODEL.independent_judges(wide)


def test_a_shard_never_mixes_numbers_of_judges_or_judge_models():
    table = expand_grid(load_sweep(grid(judge_model=["joint", "independent"])))
    shards = make_shards(table, 3, PREFERENCE_MODEL.layout_columns)
    assert sum(len(s.configurations) for s in shards) == len(table)
    assert all(s.configurations.judges.nunique() == 1 for s in shards)
    assert all(s.configurations.judge_model.nunique() == 1 for s in shards)
    table = expand_grid(load_sweep(preference()))
    shards = make_shards(table, 3, PREFERENCE_MODEL.layout_columns)
    assert all(len(s.configurations) <= 3 for s in shards)
    order = pd.concat([s.configurations for s in shards]).config_id.tolist()
    assert order == table.config_id.tolist()
    plain = make_shards(table, 5)  # without the column: slices of 5
    assert [len(s.configurations) for s in plain] == [5, 5, 2]


def test_copying_judges_keep_each_judge_s_confusion_and_agree_more():
    c = np.asarray(preference_confusion(0.6, 0.3, 0.5))
    for copy in (0.0, 0.4, 1.0):
        joint = np.asarray(copying_judges(c, 2, copy)).reshape(3, 3, 3)
        assert np.allclose(joint.sum(axis=2), c) and np.allclose(joint.sum(axis=1), c)
        agree = np.trace(joint, axis1=1, axis2=2)
        independent = (c * c).sum(axis=1)
        assert np.allclose(agree, (1 - copy) * independent + copy)
    assert np.allclose(
        np.asarray(copying_judges(c, 3, 0.0)).reshape(3, 3, 3, 3),
        np.einsum("ka,kb,kc->kabc", c, c, c),
    )


@pytest.fixture(scope="module")
def estimators_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("prefs")
    api.run(preference(), out / "a")
    api.run(preference(shard_size=1), out / "b")
    return out


def test_a_preference_run_writes_the_registry_s_tables(estimators_run):
    surface = api.load_surface(estimators_run / "a")
    fits = api.load_fits(estimators_run / "a")
    assert tuple(surface.columns) == names(SURFACE, "preference")
    assert tuple(fits.columns) == names(FITS, "preference")
    assert set(surface.ratings) == {"preference"} and set(surface.judge_model) == {"joint"}
    row = fits.iloc[0]
    assert (
        len(row.human) == 3 and len(row.judged) in (3, 9) and len(row.paired) == 3 * len(row.judged)
    )
    assert sum(row.human) == 150 and sum(row.judged) == 1500 and sum(row.paired) == 150
    # Shared paired set: T's row sums are h.
    assert (np.asarray(row.paired).reshape(3, -1).sum(axis=1) == row.human).all()


def test_shard_sizes_change_no_number(estimators_run):
    a = api.load_surface(estimators_run / "a").drop(columns="shard")
    b = api.load_surface(estimators_run / "b").drop(columns="shard")
    key = ["config_id", "estimator", "gamma", "power"]
    pd.testing.assert_frame_equal(
        a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
    )


def test_the_classical_estimators_are_unbiased_where_they_should_be(estimators_run):
    surface = api.load_surface(estimators_run / "a", gamma=0.05)
    by = surface.set_index(["estimator", "accuracy", "position_bias", "judges", "copy_rate"])
    # Human-only and PPI are unbiased everywhere: |bias| within 4 MC-SE.
    for name in ("human_only", "ppi", "ppi_pp"):
        rows = by.loc[name]
        assert (rows.bias_mean.abs() <= 4 * rows.bias_mcse + 1e-12).all(), name
    # The judge's raw rate is biased by its position bias (it says A too often).
    biased = by.loc[("judge_only", 0.6, 0.6, 1, 0.0)]
    assert biased.bias_mean > 10 * biased.bias_mcse
    # Confusion-matrix inversion needs one judge's K outcomes; two judges give K² of them.
    assert by.loc["rogan_gladen"].xs(2, level="judges").not_applicable.eq(40).all()


def test_the_posterior_runs_through_a_preference_sweep_with_its_sampler_health(tmp_path):
    """bayes's fits carry θ's posterior and the sampler's health into both tables; its
    intervals are central and hold the posterior mean (the sampler itself is checked
    against a Gibbs sampler in tests/kernels/test_categorical_nuts.py). Two judges modelled
    as independent: the shard's judge model reaches the sampler."""
    sweep = preference(
        replicates=4,
        estimators=["bayes", "ppi"],
        sampler={"chains": 2, "warmup": 150, "samples": 150},
        grid={
            **PREFERENCE["grid"],
            **{"accuracy": [0.8], "position_bias": [0.5], "judges": [2], "copy_rate": [0.0]},
            "judge_model": ["independent"],
        },
    )
    api.run(sweep, tmp_path / "out")
    fits = api.load_fits(tmp_path / "out", estimator="bayes")
    assert len(fits) == 4 and fits.applicable.all() and not fits.exact.any()
    assert ((fits.ci_low < fits.estimate) & (fits.estimate < fits.ci_high)).all()
    assert (fits.rhat < 1.1).all() and (fits.ess > 20).all() and (fits.steps > 0).all()
    surface = api.load_surface(tmp_path / "out", estimator="bayes")
    assert set(surface.method) == {"nuts"} and (surface.rhat_max < 1.1).all()
    assert set(surface.judge_model) == {"independent"}
    ppi = api.load_fits(tmp_path / "out", estimator="ppi")
    # The same counts for every estimator of a lane.
    assert [list(h) for h in ppi.human] == [list(h) for h in fits.human]


def test_a_preference_figure_s_title_names_its_judges(estimators_run):
    surface = api.load_surface(estimators_run / "a", gamma=0.05)
    rows = surface[(surface.judges == 2) & (surface.accuracy == 0.6) & (surface.copy_rate == 0.5)]
    phrases = setting_phrases(rows[rows.position_bias == 0.0], shown=("estimator",))
    for phrase in (r"$\theta$ = 0.5", "accuracy = 0.6", "tie rate = 0.333", "J = 2"):
        assert phrase in phrases, phrases
    assert "judge model joint" in phrases and "copy_rate = 0.5" in phrases
    assert not any("position" in p for p in setting_phrases(rows, shown=("estimator",)))
