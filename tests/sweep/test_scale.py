"""Scale and classes sweeps (``ratings: scale`` / ``classes``, issue 66): the sweep file, its
named share vectors and confusion matrices, the off-by-one family, its configurations and a
run of the classical estimators and of the posterior."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from binmetric_sweep.kernels.categorical.families import copying_judges, scale_confusion
from binmetric_sweep.sweep import api
from binmetric_sweep.sweep.display.plots import setting_phrases
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.spec.config import load_sweep, spec_digest, spec_from_canonical
from binmetric_sweep.sweep.spec.grid import expand_grid
from binmetric_sweep.sweep.storage.columns import FITS, SURFACE, names

LENIENT = [
    [0.6, 0.3, 0.1, 0.0, 0.0],
    [0.0, 0.6, 0.3, 0.1, 0.0],
    [0.0, 0.0, 0.7, 0.3, 0.0],
    [0.0, 0.0, 0.0, 0.8, 0.2],
    [0.0, 0.0, 0.0, 0.1, 0.9],
]
SCALE = {
    "name": "scores",
    "ratings": "scale",
    "values": [1, 2, 3, 4, 5],
    "counts": "sampled",
    "replicates": 40,
    "seed": 5,
    "estimators": ["human_only", "judge_only", "rogan_gladen", "ppi", "ppi_pp"],
    "shares": {"skewed": [0.05, 0.1, 0.2, 0.4, 0.25], "flat": [0.2] * 5},
    "confusions": {"lenient": LENIENT},
    "grid": [
        {
            "shares": ["skewed", "flat"],
            "off_by_one": [0.2, 0.4],
            "off_by_more": [0.05],
            "judges": [1, 2],
            "copy_rate": [0.0, 0.5],
            "n_phi": [150],
            "n_m": [1500],
        },
        {"shares": ["skewed"], "confusion": ["lenient"], "n_phi": [150], "n_m": [1500]},
    ],
    "shard_size": 3,
}


def scale(**changes) -> dict:
    return {**SCALE, **changes}


def block(i: int = 0, **axes) -> dict:
    blocks = [dict(b) for b in SCALE["grid"]]
    blocks[i] = {**blocks[i], **axes}
    for name, value in axes.items():
        if value is None:
            del blocks[i][name]
    return scale(grid=blocks)


def test_the_off_by_one_family_moves_errors_to_neighbours_and_beyond():
    c = np.asarray(scale_confusion(0.2, 0.1, 5))
    assert np.allclose(c.sum(axis=1), 1.0) and np.allclose(np.diag(c), 0.7)
    assert np.allclose(c[0, 1], 0.2) and np.allclose(c[0, 2:], 0.1 / 3)  # an end: one neighbour
    assert np.allclose(c[2, [1, 3]], 0.1) and np.allclose(c[2, [0, 4]], 0.05)
    # The middle of three classes has none two away: that share stays right.
    three = np.asarray(scale_confusion(0.2, 0.1, 3))
    assert np.allclose(three[1], [0.1, 0.8, 0.1]) and np.allclose(three[0], [0.7, 0.2, 0.1])
    assert np.allclose(np.asarray(scale_confusion(0.0, 0.0, 4)), np.eye(4))


def test_a_scale_sweep_reads_its_names_axes_and_defaults():
    spec = load_sweep(scale())
    assert spec.rating_model.name == "scale" and spec.n_classes == 5
    first, named = spec.grid
    assert first.judge_model == ("joint",) and first.n_rho_eta == "n_phi"
    assert named.off_by_one is None and named.confusion == ("lenient",)
    assert load_sweep(block(off_by_more=None)).grid[0].off_by_more == (0.0,)
    assert spec_from_canonical(spec.canonical()) == spec
    canonical = spec.canonical()
    assert canonical["shares"]["flat"] == [0.2] * 5 and canonical["confusions"]["lenient"][0][0]
    assert "classes" not in canonical
    classes = load_sweep(scale(ratings="classes", classes=["bad", "poor", "fair", "good", "great"]))
    assert classes.classes[0] == "bad" and spec_digest(classes) != spec_digest(spec)
    assert spec_from_canonical(classes.canonical()) == classes


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (scale(shares={"skewed": [0.1, 0.1, 0.2, 0.4, 0.1]}), "shares.skewed: sums to 0.9, not 1"),
        (scale(shares={"skewed": [0.5, 0.5]}), "shares.skewed: 2 numbers; give 5, one per class"),
        (
            scale(confusions={"lenient": [*LENIENT[:2], [0, 0, 0.7, 0.2, 0], *LENIENT[3:]]}),
            "confusions.lenient[2]: sums to 0.9, not 1",
        ),
        (scale(confusions={"lenient": LENIENT[:4]}), "confusions.lenient: 4 rows; give 5 rows"),
        (block(shares=["skew"]), "grid[0].shares: 'skew' is not one of the sweep file's shares"),
        (block(1, confusion=["strict"]), "grid[1].confusion: 'strict' is not one of the sweep"),
        (block(1, off_by_one=[0.1]), "grid.confusion: a block gives each judge's confusion by"),
        (block(off_by_one=None, off_by_more=None), "grid.off_by_one: required field is missing"),
        (block(off_by_one=[0.7], off_by_more=[0.4]), "grid.off_by_more: off_by_one 0.7 + off_by"),
        (block(judges=[3]), "grid[0].judges: 3 judges of 5 classes make 125 joint verdicts"),
        (scale(values=[1, 3, 2, 4, 5]), "values: [1, 3, 2, 4, 5] are not increasing"),
        (scale(values=[1, 2, 2, 4, 5]), "values: [1, 2, 2, 4, 5] repeats a value"),
        (scale(values=[1]), "values: [1] is not allowed; give 2 to 10 numbers"),
        (scale(classes=["a"] * 5), "classes: a scale's classes are its values"),
        (scale(ratings="classes"), "classes: None is not allowed; give 5 names"),
        (
            scale(method="quadrature", estimators=["bayes"]),
            "method: 'quadrature' integrates at most 3 classes; these ratings have 5",
        ),
        (scale(estimators=["bayes", "midpoint"]), "estimators: 'midpoint' is not an estimator"),
        (block(win=[0.5]), "grid[0].win: unknown axis 'win'; allowed: shares, off_by_one"),
    ],
)
def test_bad_scale_values_name_their_field(changes, message):
    with pytest.raises(SweepError, match="^" + re.escape(message)):
        load_sweep(changes)


def test_off_by_more_needs_a_class_two_away():
    two = scale(
        values=[0, 1],
        shares={"even": [0.5, 0.5]},
        confusions={},
        grid={"shares": ["even"], "off_by_one": [0.1], "off_by_more": [0.1], "n_phi": [10]}
        | {"n_m": [10]},
    )
    with pytest.raises(SweepError, match=r"^grid\.off_by_more: 0\.1 is not allowed with 2 classes"):
        load_sweep(two)


def test_configurations_hash_the_numbers_and_fill_the_other_confusion_with_nulls():
    table = expand_grid(load_sweep(scale()))
    assert (
        tuple(table.columns) == tuple(c for c in names(SURFACE, "scale") if c in table.columns)
        and "win" not in table.columns
    )
    # 2 shares × 2 off-by-one rates × (1 + 2 copy rates of 2 judges), then the named block.
    assert len(table) == 13 and table.config_id.is_unique
    values = np.arange(1, 6)
    assert np.isclose(table.theta.iloc[0], values @ [0.05, 0.1, 0.2, 0.4, 0.25])
    named = table[table.confusion.notna()]
    assert len(named) == 1 and named.off_by_one.isna().all() and named.off_by_more.isna().all()
    assert table.loc[table.confusion.isna(), "off_by_one"].notna().all()
    # The ids hash the vectors' numbers, not their names.
    renamed = expand_grid(
        load_sweep(
            scale(
                shares={"a": SCALE["shares"]["skewed"], "b": SCALE["shares"]["flat"]},
                confusions={"c": LENIENT},
                grid=[
                    {**SCALE["grid"][0], "shares": ["a", "b"]},
                    {**SCALE["grid"][1], "shares": ["a"], "confusion": ["c"]},
                ],
            )
        )
    )
    assert renamed.config_id.tolist() == table.config_id.tolist()


def test_lane_designs_take_the_family_or_the_named_matrix_and_the_copying():
    spec = load_sweep(scale())
    model = spec.rating_model
    table = expand_grid(spec)
    for judges, rows in table.groupby("judges", sort=False):
        design = model.lane_designs(rows, 2)
        assert design.shares.shape == (2 * len(rows), 5)
        assert design.confusion.shape == (2 * len(rows), 5, 5**judges)
        assert model.layout(rows).values == (1.0, 2.0, 3.0, 4.0, 5.0)
        for i, row in enumerate(rows.itertuples()):
            single = (
                np.asarray(LENIENT)
                if isinstance(row.confusion, str)
                else np.asarray(scale_confusion(row.off_by_one, row.off_by_more, 5))
            )
            want = np.asarray(copying_judges(single, judges, row.copy_rate))
            assert np.allclose(design.confusion[2 * i], want)
            assert np.allclose(
                design.shares[2 * i + 1],
                spec.rating_model.lane_designs(rows.iloc[[i]], 1).shares[0],
            )


@pytest.fixture(scope="module")
def scale_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("scale")
    api.run(scale(), out / "a")
    api.run(scale(shard_size=1), out / "b")
    return out


def test_a_scale_run_writes_the_registry_s_tables(scale_run):
    surface = api.load_surface(scale_run / "a")
    fits = api.load_fits(scale_run / "a")
    assert tuple(surface.columns) == names(SURFACE, "scale")
    assert tuple(fits.columns) == names(FITS, "scale")
    assert set(surface.ratings) == {"scale"} and set(surface.shares) == {"skewed", "flat"}
    assert surface.confusion.dropna().eq("lenient").all()
    row = fits.iloc[0]
    assert len(row.human) == 5 and sum(row.human) == 150 and sum(row.judged) == 1500
    assert (np.asarray(row.paired).reshape(5, -1).sum(axis=1) == row.human).all()
    # Shard sizes change no number.
    key = ["config_id", "estimator", "gamma", "power"]
    a, b = (api.load_surface(scale_run / d).drop(columns="shard") for d in "ab")
    pd.testing.assert_frame_equal(
        a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
    )


def test_the_classical_estimators_of_a_scale_are_unbiased_where_they_should_be(scale_run):
    surface = api.load_surface(scale_run / "a", gamma=0.05)
    for name in ("human_only", "ppi", "ppi_pp"):
        rows = surface[surface.estimator == name]
        assert (rows.bias_mean.abs() <= 4 * rows.bias_mcse + 1e-12).all(), name
    # The lenient judge scores too high: its raw mean is biased upward.
    lenient = surface[(surface.confusion == "lenient") & (surface.estimator == "judge_only")]
    assert (lenient.bias_mean > 10 * lenient.bias_mcse).all()
    inversion = surface[(surface.estimator == "rogan_gladen") & (surface.judges == 1)]
    assert (inversion.bias_mean.abs() <= 4 * inversion.bias_mcse + 1e-12).all()


def test_show_and_a_figure_s_title_name_the_scale_s_settings(scale_run, capsys):
    from binmetric_sweep.sweep.cli import main

    code = main(
        [
            *("show", str(scale_run / "a"), "--rows", "shares", "--cols", "estimator"),
            *("--value", "se_mean", "--where", "n_phi=150", "off_by_one=0.4", "judges=1"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "flat" in out and "skewed" in out
    surface = api.load_surface(scale_run / "a", gamma=0.05)
    rows = surface[(surface.shares == "flat") & (surface.off_by_one == 0.2) & (surface.judges == 2)]
    phrases = setting_phrases(rows[rows.copy_rate == 0.5], shown=("estimator",))
    for phrase in (r"$\theta$ = 3", "shares flat", "off by one = 0.2", "off by more = 0.05"):
        assert phrase in phrases, phrases
    named = surface[surface.confusion == "lenient"]
    assert "confusion lenient" in setting_phrases(named, shown=("estimator",))


def test_the_posterior_runs_through_classes_and_the_exact_rule_agrees(tmp_path):
    """Three named classes with values (0, 0.3, 1): bayes by NUTS with the sampler's health in
    both tables; with the confusion known the exact rule (K ≤ 3) and NUTS give the same
    posterior within Monte Carlo error on the same counts (the sampler itself is checked
    against a Gibbs sampler in tests/kernels/test_categorical_nuts.py)."""
    sweep = {
        "name": "grades",
        "ratings": "classes",
        "classes": ["fail", "pass", "merit"],
        "values": [0, 0.3, 1],
        "counts": "sampled",
        "replicates": 3,
        "seed": 8,
        "estimators": ["bayes", "ppi"],
        "sampler": {"chains": 4, "warmup": 200, "samples": 500},
        "shares": {"mid": [0.3, 0.5, 0.2]},
        "grid": {
            "shares": ["mid"],
            "off_by_one": [0.25],
            "off_by_more": [0.1],
            "n_phi": [120],
            "n_rho_eta": "known",
            "n_m": [1500],
        },
    }
    api.run(sweep, tmp_path / "nuts")
    api.run({**sweep, "method": "quadrature"}, tmp_path / "exact")
    nuts = api.load_fits(tmp_path / "nuts", estimator="bayes").sort_values("replicate")
    exact = api.load_fits(tmp_path / "exact", estimator="bayes").sort_values("replicate")
    assert exact.exact.all() and not nuts.exact.any()
    assert [list(h) for h in nuts.human] == [list(h) for h in exact.human]
    assert (nuts.rhat < 1.05).all() and (nuts.ess > 200).all()
    mcse = exact.se.to_numpy() / np.sqrt(nuts.ess.to_numpy())
    assert (np.abs(nuts.estimate.to_numpy() - exact.estimate.to_numpy()) < 4 * mcse).all()
    assert np.allclose(nuts.se, exact.se, rtol=0.15)
    surface = api.load_surface(tmp_path / "nuts", estimator="bayes")
    assert set(surface.ratings) == {"classes"} and set(surface.method) == {"nuts"}
