"""sweep compare's options as one typed value (:class:`CompareOptions`): names parsed once
into values, today's messages for bad ones, the same comparison whether the options come as
a value or as keywords, and one place that builds the settings the outputs carry.

Cheap: the posterior is computed once each way on the shipped example (4 systems, per-system
rates); the rest is parsing, or a classical estimator's closed forms.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib

import numpy as np
import pandas as pd
import pytest

from binmetric_sweep import sweep
from binmetric_sweep.kernels.estimators import POSTERIOR, estimator_named, registered
from binmetric_sweep.sweep.cli import build_parser, main
from binmetric_sweep.sweep.compare import CompareOptions, compare
from binmetric_sweep.sweep.compare import options as options_module
from binmetric_sweep.sweep.compare.analysis import (
    BH,
    HOLM,
    NO_ADJUSTMENT,
    PER_SYSTEM,
    SHARED,
    compare_systems,
)
from binmetric_sweep.sweep.compare.next_ratings import NextRatingsPlan, next_ratings
from binmetric_sweep.sweep.compare.options import SAMPLER_SETTINGS, Method
from binmetric_sweep.sweep.compare.ratings import (
    LABEL_POLICIES,
    MAJORITY,
    REFUSE,
    LabelPolicy,
    read_ratings,
)
from binmetric_sweep.sweep.compare.sampled import compare_by_nuts
from binmetric_sweep.sweep.errors import SweepError
from tests.sweep.test_compare_options import COUNTS, name_tests

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ratings.csv"
COMPARE = REPO / "sweep" / "compare"


def test_names_parse_once_into_values():
    o = CompareOptions.of(
        rates="shared",
        gamma=0.1,
        level=0.9,
        adjust="holm",
        method="nuts",
        seed=np.int64(7),
        cost_metric=0.01,
        cost_human=2,
        power=0.9,
        annotators="majority",
        progress=1,
    )
    assert o.rates is SHARED and o.adjust is HOLM and o.method is Method.NUTS
    assert o.annotator_policy is MAJORITY and o.judge_policy is REFUSE
    assert o.estimators == (POSTERIOR,) and o.posterior_only and o.has_posterior
    assert o.next_ratings == NextRatingsPlan(0.01, 2.0, 0.9)
    assert type(o.next_ratings.cost_human) is float
    assert (o.gamma, o.level, o.seed, o.progress) == (0.1, 0.9, 7, True)
    assert type(o.seed) is int and type(o.gamma) is float
    # The values themselves are taken as their names are.
    same = CompareOptions.of(
        rates=SHARED,
        gamma=0.1,
        level=0.9,
        adjust=HOLM,
        method=Method.NUTS,
        seed=7,
        cost_metric=0.01,
        cost_human=2.0,
        power=0.9,
        annotators=MAJORITY,
        judges=REFUSE,
        progress=True,
        estimator=POSTERIOR,
    )
    assert same == o
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.rates = PER_SYSTEM
    assert CompareOptions.of() == CompareOptions()
    default = CompareOptions()
    assert (default.rates, default.adjust, default.method) == (
        PER_SYSTEM,
        NO_ADJUSTMENT,
        Method.QUADRATURE,
    )
    every = CompareOptions.of(estimator="all", adjust="bh")
    assert every.estimators == registered() and every.adjust is BH
    assert every.has_posterior and not every.posterior_only and every.estimator_shown == "all"
    one = CompareOptions.of(estimator="judge_only")
    assert one.estimators == (estimator_named("judge_only"),) and not one.has_posterior
    # Without --cost-metric there is no plan: its price and power are not read.
    assert CompareOptions.of(cost_human=-1.0, power=5.0).next_ratings is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rates": "Shared"}, "--rates: 'Shared' is not a rate model; allowed: per-system, shared"),
        ({"adjust": "fdr"}, "--adjust: 'fdr' is not allowed; allowed: none, holm, bh"),
        ({"gamma": 1.5}, "--gamma: 1.5 is not allowed; give a number in (0, 1)"),
        ({"level": "0.9"}, "--level: '0.9' is not allowed; give a number in (0, 1)"),
        ({"annotators": "most"}, "--annotators: 'most' is not allowed; allowed: refuse, majority"),
        ({"judges": "first"}, "--judges: 'first' is not allowed; allowed: refuse, majority"),
        ({"estimator": "bayse"}, "--estimator: 'bayse' is not an estimator; allowed: "),
        (
            {"estimator": "all", "cost_metric": 0.01},
            "--cost-metric: plans the posterior's ratings; not with --estimator all",
        ),
        ({"method": "mcmc"}, "--method: 'mcmc' is not allowed; allowed: quadrature, nuts"),
        ({"seed": -1}, "--seed: -1 is not allowed; give a whole number ≥ 0"),
        ({"cost_metric": 0.0}, "--cost-metric: 0.0 is not allowed; give a price > 0"),
        ({"cost_metric": 1, "cost_human": np.inf}, "--cost-human: inf is not allowed; give a "),
        ({"cost_metric": 1, "power": 1.0}, "--power: 1.0 is not allowed; give a number in [0.5, "),
        # Two bad options: the first in the order of the checks is named.
        ({"rates": "x", "gamma": 2.0}, "--rates: 'x' is not a rate model"),
        ({"gamma": 2.0, "annotators": "x"}, "--gamma: 2.0 is not allowed"),
        ({"judges": "x", "estimator": "x"}, "--judges: 'x' is not allowed"),
        ({"estimator": "x", "method": "x"}, "--estimator: 'x' is not an estimator"),
        ({"method": "x", "cost_metric": -1}, "--method: 'x' is not allowed"),
    ],
)
def test_bad_values_give_today_s_messages_before_the_file_is_read(fields, message):
    with pytest.raises(SweepError) as error:
        CompareOptions.of(**fields)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)
    with pytest.raises(SweepError) as error:  # an absent file: the options are named first
        compare(REPO / "absent.csv", **fields)
    assert str(error.value).startswith(message)


def test_label_policies_are_values():
    assert list(LABEL_POLICIES.values()) == [REFUSE, MAJORITY]
    assert LabelPolicy.of("majority", "--judges") is MAJORITY
    assert LabelPolicy.of(MAJORITY._replace(), "--annotators") is MAJORITY
    stray = LabelPolicy("first", "the first label given", True)
    with pytest.raises(SweepError, match="^--judges: 'first' is not in LABEL_POLICIES; allowed"):
        LabelPolicy.of(stray, "--judges")
    with pytest.raises(SweepError, match="^--judges: 'all' is not allowed: the labels of one"):
        LabelPolicy.of("all", "--judges")
    with pytest.raises(SweepError, match=r"^--annotators: \['majority'\] is not allowed"):
        LabelPolicy.of(["majority"], "--annotators")
    # A policy value reads a file as its name does; the reading keeps the name (an output).
    by_value = read_ratings(EXAMPLE, annotators=MAJORITY, judges=REFUSE)
    by_name = read_ratings(EXAMPLE, annotators="majority")
    assert by_value.counts.equals(by_name.counts) and by_value.reading == by_name.reading
    assert by_value.reading.annotators == "majority" and by_value.reading.judges == "refuse"


def same_comparison(a, b) -> None:
    """Field by field: the tables, the settings (and their key order), warnings, reading."""
    pd.testing.assert_frame_equal(a.systems, b.systems, check_exact=True)
    pd.testing.assert_frame_equal(a.pairs, b.pairs, check_exact=True)
    assert list(a.settings.items()) == list(b.settings.items())
    assert a.warnings == b.warnings and a.reading == b.reading
    assert (a.p_better is None) == (b.p_better is None)
    if a.p_better is not None:
        np.testing.assert_array_equal(a.p_better, b.p_better)


def test_an_options_value_gives_the_comparison_its_fields_give():
    fields = {"adjust": "holm", "gamma": 0.2, "cost_metric": 0.01, "annotators": "majority"}
    # Two systems of the example: one pair, one plan of what to rate next.
    ratings = pd.read_csv(EXAMPLE)
    ratings = ratings[ratings["system"].isin(ratings["system"].unique()[:2])]
    by_fields = sweep.compare(ratings, **fields)
    by_value = sweep.compare(ratings, CompareOptions.of(**fields))
    same_comparison(by_value, by_fields)
    assert list(by_value.settings) == [
        "rates",
        "gamma",
        "level",
        "adjust",
        "method",
        "annotators",
        "judges",
    ]
    assert by_value.settings["annotators"] == "majority" and "add_cost" in by_value.pairs
    classical = {"estimator": "rogan_gladen", "rates": "shared", "level": 0.9}
    by_fields = compare(EXAMPLE, **classical)
    by_value = compare(EXAMPLE, CompareOptions.of(**classical))
    same_comparison(by_value, by_fields)
    assert by_value.settings == {
        "rates": "shared",
        "gamma": 0.05,
        "level": 0.9,
        "adjust": "none",
        "annotators": "refuse",
        "judges": "refuse",
        "estimator": "rogan_gladen",
    }


def test_the_command_builds_the_options_once_and_passes_the_value(tmp_path, monkeypatch, capsys):
    built = []
    of = CompareOptions.of.__func__

    def counted(cls, **fields):
        built.append(of(cls, **fields))
        return built[-1]

    monkeypatch.setattr(CompareOptions, "of", classmethod(counted))
    argv = ["compare", str(EXAMPLE), "--estimator", "judge_only", "--level", "0.9", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(built) == 1 and built[0].estimators == (estimator_named("judge_only"),)
    api = compare(EXAMPLE, built[0])
    assert out["settings"] == api.settings
    shown = pd.DataFrame(out["systems"])
    np.testing.assert_array_equal(shown["estimate"], api.systems["estimate"])


def test_options_or_fields_not_both():
    options = CompareOptions.of(rates="shared")
    with pytest.raises(TypeError, match="not both"):
        compare(EXAMPLE, options, rates="shared")
    with pytest.raises(TypeError, match="options must be a CompareOptions"):
        compare(EXAMPLE, "shared")
    with pytest.raises(TypeError, match="unexpected keyword argument 'rate'"):
        compare(EXAMPLE, rate="shared")
    with pytest.raises(TypeError, match="not both"):
        compare_systems(COUNTS, options, gamma=0.1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'seed'"):
        compare_systems(COUNTS, seed=3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'progress'"):
        compare_by_nuts(COUNTS, progress=True)
    with pytest.raises(TypeError, match="one of them"):
        next_ratings(None, NextRatingsPlan.of(0.01), cost_metric=0.01)
    with pytest.raises(SweepError, match="^--power: 0.2 is not allowed"):
        next_ratings(None, cost_metric=0.01, power=0.2)


def test_the_settings_are_built_in_one_place_with_today_s_keys():
    """compare_systems', compare_by_nuts' and compare()'s settings, key by key as the
    outputs have carried them."""
    o = CompareOptions.of(rates="shared", gamma=0.1, adjust="bh", method="nuts", seed=3)
    sampler = {"chains": 4, "draws": 4000, "rhat_max": 1.001, "ess_min": 900.0, "other": 1}
    nuts = o.settings(posterior=True, sampler=sampler)
    assert list(nuts.items()) == [
        ("rates", "shared"),
        ("gamma", 0.1),
        ("level", 0.95),
        ("adjust", "bh"),
        ("method", "nuts"),
        *((k, sampler[k]) for k in SAMPLER_SETTINGS),
        ("seed", 3),
    ]
    quadrature = dataclasses.replace(o, method=Method.QUADRATURE)
    assert list(quadrature.settings(posterior=True, read=True)) == [
        *("rates", "gamma", "level", "adjust", "method", "annotators", "judges")
    ]
    classical = CompareOptions.of(estimator="ppi_pp")
    assert list(classical.settings(posterior=False, read=True)) == [
        *("rates", "gamma", "level", "adjust", "annotators", "judges", "estimator")
    ]
    every = CompareOptions.of(estimator="all").settings(posterior=True, read=True)
    assert every["estimator"] == "all" and every["method"] == "quadrature"
    assert all(isinstance(v, str | int | float) for v in nuts.values())


def test_the_method_is_a_value_no_layer_tests_by_name():
    assert [m.value for m in Method] == ["quadrature", "nuts"]
    assert Method.of("nuts") is Method.NUTS and Method.of(Method.QUADRATURE) is Method.QUADRATURE
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flag = next(a for a in commands.choices["compare"]._actions if "--method" in a.option_strings)
    assert tuple(flag.choices) == tuple(m.value for m in Method)
    assert flag.default == Method.QUADRATURE.value
    names = {m.value for m in Method}
    found = {p.name: name_tests(p.read_text(), names) for p in sorted(COMPARE.glob("*.py"))}
    assert "options.py" in found and not any(found.values()), found
    assert name_tests('if method == "nuts":\n    pass', names) == [1]
    assert options_module.CompareOptions is CompareOptions
