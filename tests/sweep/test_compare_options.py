"""sweep compare's options as values: the rate models (``--rates``), the adjustments
(``--adjust``) and the label policies for several labels (``--annotators``, ``--judges``).

The command's choices and help come from the registries, a name is parsed once into its
value, and the layers call the value: a model or an adjustment registered in a test
alone runs through the command, the API, the report and the plans of what to rate next.
Cheap: the toy values need no compiled program.
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
from dataclasses import replace
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from binmetric_sweep import sweep
from binmetric_sweep.sweep.cli import build_parser, main
from binmetric_sweep.sweep.compare import analysis
from binmetric_sweep.sweep.compare.analysis import (
    ADJUSTMENTS,
    BH,
    HOLM,
    NO_ADJUSTMENT,
    PER_SYSTEM,
    RATE_MODELS,
    SHARED,
    Adjustment,
    RateModel,
    counts_of,
    pair_table,
    parse_options,
)
from binmetric_sweep.sweep.compare.next_ratings import next_level
from binmetric_sweep.sweep.compare.ratings import LABEL_POLICIES, MAJORITY, REFUSE, LabelPolicy
from binmetric_sweep.sweep.errors import SweepError

COMPARE = pathlib.Path(analysis.__file__).parent
#: Four systems' counts: the toy model reads only the human ratings.
COUNTS = pd.DataFrame(
    {
        "system": ["a", "b", "c", "d"],
        "n_phi": [200, 150, 120, 80],
        "n_pos": [150, 90, 80, 30],
        "n_rho_eta": [40, 30, 0, 20],
        "n_pos_paired": [30, 18, 0, 8],
        "n_tp": [27, 15, 0, 7],
        "n_tn": [8, 10, 0, 11],
        "n_m": [400, 300, 0, 100],
        "m_pos": [290, 170, 0, 40],
    }
)


def compare_options() -> dict[str, argparse.Action]:
    """``sweep compare``'s options by flag, from a parser built now."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {flag: a for a in commands.choices["compare"]._actions for flag in a.option_strings}


def human_only_posterior(counts: pd.DataFrame, level: float, progress):
    """A toy rate model's posterior: α_s from its human ratings' Beta alone; P(α_a > α_b)
    by the normal approximation."""
    a = counts["n_pos"].to_numpy(float) + 1
    b = (counts["n_phi"] - counts["n_pos"]).to_numpy(float) + 1
    mean, sd = stats.beta.mean(a, b), stats.beta.std(a, b)
    low, high = stats.beta.ppf((1 - level) / 2, a, b), stats.beta.ppf((1 + level) / 2, a, b)
    z = (mean[:, None] - mean[None, :]) / np.sqrt(sd[:, None] ** 2 + sd[None, :] ** 2)
    p = stats.norm.cdf(z)
    np.fill_diagonal(p, 0.5)
    return (mean, sd, low, high), p, ["toy: the metric ratings are not used"]


#: A third rate model, defined here alone.
HUMAN_ONLY = RateModel(
    name="human-only",
    description="no metric rates: α from the human ratings alone",
    posterior=human_only_posterior,
    rate_means=PER_SYSTEM.rate_means,
    estimated_rates=PER_SYSTEM.estimated_rates,
    drawn_rates=PER_SYSTEM.drawn_rates,
    nuts_warnings=lambda counts: [],
)
#: A third adjustment, defined here alone.
BONFERRONI = Adjustment(
    name="bonferroni",
    description="Bonferroni's m·p, controlling the family-wise error",
    adjusted=lambda p: np.minimum(1.0, len(p) * p),
    held_level=lambda gamma, tested, called: gamma / max(tested, 1),
    label="Bonferroni",
    title="Bonferroni",
    controls="family-wise error",
    held_rule="γ/m",
)


@pytest.fixture
def registered(monkeypatch):
    """The toy rate model, adjustment and label policy registered for one test."""
    monkeypatch.setitem(RATE_MODELS, HUMAN_ONLY.name, HUMAN_ONLY)
    monkeypatch.setitem(ADJUSTMENTS, BONFERRONI.name, BONFERRONI)
    first = LabelPolicy("first", "the first label given", True)
    monkeypatch.setitem(LABEL_POLICIES, "first", first)


def test_the_command_s_choices_and_help_are_the_registries():
    options = compare_options()
    for flag, registry, default in (
        ("--rates", RATE_MODELS, PER_SYSTEM),
        ("--adjust", ADJUSTMENTS, NO_ADJUSTMENT),
    ):
        assert options[flag].choices == tuple(registry) and options[flag].default == default.name
        for value in registry.values():
            assert f"{value.name}: {value.description}" in options[flag].help
    for flag in ("--annotators", "--judges"):
        # No argparse choices: all is refused with its reason (sweep.compare.ratings).
        assert options[flag].choices is None and options[flag].default == REFUSE.name
        metavar = "{" + ",".join(LABEL_POLICIES) + "}"
        assert options[flag].metavar == metavar == "{refuse,majority}"
        policies = LABEL_POLICIES.values()
        assert all(f"{p.name}: {p.description}" in options[flag].help for p in policies)


def test_a_value_registered_shows_up_in_the_command_without_editing_it(registered):
    options = compare_options()
    assert options["--rates"].choices == ("per-system", "shared", "human-only")
    assert options["--adjust"].choices == ("none", "holm", "bh", "bonferroni")
    assert HUMAN_ONLY.description in options["--rates"].help
    assert BONFERRONI.description in options["--adjust"].help
    assert options["--judges"].metavar == "{refuse,majority,first}"


def test_a_registered_model_and_adjustment_run_through_the_command(registered, tmp_path, capsys):
    """The toy model's numbers, the toy adjustment's p-values, levels and words reach the
    JSON, the text and the plans of what to rate next: no layer names a model."""
    path = tmp_path / "counts.csv"
    COUNTS.to_csv(path, index=False)
    argv = ["compare", str(path), "--rates", "human-only", "--adjust", "bonferroni"]
    assert main([*argv, "--gamma", "0.2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["rates"] == "human-only" and out["settings"]["adjust"] == "bonferroni"
    systems, pairs = pd.DataFrame(out["systems"]), pd.DataFrame(out["pairs"])
    a = COUNTS.set_index("system")
    expected = (a["n_pos"] + 1) / (a["n_phi"] + 2)
    np.testing.assert_allclose(systems.set_index("system")["alpha_mean"], expected[systems.system])
    assert list(systems.system) == list(expected.sort_values(ascending=False).index)
    m = len(pairs)
    tail = np.minimum(1, 2 * np.minimum(pairs.p_a_better, 1 - pairs.p_a_better))
    np.testing.assert_allclose(pairs.p_adjusted, np.minimum(1, m * tail))
    assert (pairs.significant == (pairs.p_adjusted <= 0.2)).all()
    assert pairs.significant.any() and not pairs.significant.all()
    sd = systems.set_index("system")["alpha_sd"]
    z = NormalDist().inv_cdf(1 - 0.2 / (2 * m))
    np.testing.assert_allclose(
        pairs.eps, z * np.sqrt(sd[pairs.a].to_numpy() ** 2 + sd[pairs.b].to_numpy() ** 2)
    )
    assert main([*argv, "--gamma", "0.2"]) == 0
    text, err = capsys.readouterr()
    assert "4 systems; no metric rates: α from the human ratings alone; " in text
    assert "γ = 0.2, Bonferroni-adjusted over all pairs (family-wise error)" in text
    assert "Bonferroni-adjusted two-sided tail" in text
    assert "sweep: warning: toy: the metric ratings are not used" in err


def test_what_to_rate_next_plans_at_the_registered_adjustment_s_level(registered):
    result = sweep.compare(COUNTS, rates="human-only", adjust="bonferroni", gamma=0.2)
    assert next_level(result) == pytest.approx(0.2 / len(result.pairs), rel=1e-15)
    plain = sweep.compare(COUNTS, rates=HUMAN_ONLY, gamma=0.2)
    assert next_level(plain) == 0.2 and "p_adjusted" not in plain.pairs


def test_names_parse_once_into_the_registered_values():
    assert [RateModel.of(n) for n in ("per-system", "shared")] == [PER_SYSTEM, SHARED]
    assert RateModel.of(SHARED) is SHARED and RateModel.of(replace(SHARED)) is SHARED
    assert [Adjustment.of(n) for n in ("none", "holm", "bh")] == [NO_ADJUSTMENT, HOLM, BH]
    assert parse_options("shared", 0.05, 0.9, HOLM) == (SHARED, HOLM)
    assert list(LABEL_POLICIES.values()) == [REFUSE, MAJORITY]
    for call, message in (
        (lambda: RateModel.of("Shared"), "--rates: 'Shared' is not a rate model; allowed: "),
        (lambda: RateModel.of(["shared"]), "--rates: ['shared'] is not a rate model; allowed: "),
        (lambda: RateModel.of(HUMAN_ONLY), "--rates: 'human-only' is not in RATE_MODELS; "),
        (lambda: Adjustment.of("fdr"), "--adjust: 'fdr' is not allowed; allowed: none, holm, bh"),
        (lambda: Adjustment.of(BONFERRONI), "--adjust: 'bonferroni' is not in ADJUSTMENTS; "),
        (lambda: parse_options("shared", 1.5, 0.9, "none"), "--gamma: 1.5 is not allowed"),
    ):
        with pytest.raises(SweepError) as error:
            call()
        assert str(error.value).startswith(message) and "\n" not in str(error.value)
    with pytest.raises(SweepError, match="^--judges: 'first' is not allowed; allowed: refuse, "):
        sweep.compare(COUNTS, judges="first")


def test_each_model_s_rates_and_counts():
    """Per-system: each system's own Beta means and counts; shared: the pooled ones."""
    c = counts_of(COUNTS)
    r, e = PER_SYSTEM.rate_means(c)
    np.testing.assert_array_equal(r, (COUNTS.n_tp + 1) / (COUNTS.n_pos_paired + 2))
    negatives = COUNTS.n_rho_eta - COUNTS.n_pos_paired
    np.testing.assert_array_equal(e, (COUNTS.n_tn + 1) / (negatives + 2))
    r, e = SHARED.rate_means(c)
    assert (r == (COUNTS.n_tp.sum() + 1) / (COUNTS.n_pos_paired.sum() + 2)).all()
    assert (e == (COUNTS.n_tn.sum() + 1) / (negatives.sum() + 2)).all()
    assert PER_SYSTEM.estimated_rates(c) is c
    pooled = SHARED.estimated_rates(c)
    for f in c._fields:
        own = np.asarray(getattr(c, f))
        expected = np.full_like(own, own.sum()) if f in analysis.PAIRED_COUNTS else own
        np.testing.assert_array_equal(np.asarray(getattr(pooled, f)), expected)
    assert SHARED.nuts_warnings(COUNTS) == analysis._heterogeneity(COUNTS)
    assert PER_SYSTEM.nuts_warnings(COUNTS) == []


def test_pairs_follow_the_adjustment_value():
    systems = pd.DataFrame(
        {"system": list("abc"), "alpha_mean": [0.7, 0.6, 0.5], "alpha_sd": [0.02, 0.03, 0.04]}
    )
    p = np.array([[0.5, 0.995, 0.9999], [0.005, 0.5, 0.97], [1e-4, 0.03, 0.5]])
    for adjustment in ADJUSTMENTS.values():
        pairs = pair_table(systems, p, 0.05, adjustment)
        assert pairs.equals(pair_table(systems, p, 0.05, adjustment.name))
        assert ("p_adjusted" in pairs) == adjustment.adjusts
    held = {a.name: a.held_level(0.05, 10, 3) for a in ADJUSTMENTS.values()}
    assert held == {"none": 0.05, "holm": 0.005, "bh": pytest.approx(0.015, rel=1e-15)}
    assert HOLM.header == "Holm-adjusted over all pairs (family-wise error)"
    assert BH.value_name == "BH-adjusted" and BH.held_rule == "γ·R/m"


def name_tests(source: str, names: set[str]) -> list[int]:
    """The lines of ``source`` that compare something to one of ``names`` (``==``, ``!=``,
    ``in`` a literal tuple, set or list)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                listed = side.elts if isinstance(side, ast.Tuple | ast.Set | ast.List) else [side]
                if any(isinstance(c, ast.Constant) and c.value in names for c in listed):
                    lines.append(node.lineno)
    return lines


def test_no_layer_tests_a_model_an_adjustment_or_a_label_policy_by_name():
    """Nothing in sweep/compare/ compares a value to a rate model's, an adjustment's or a
    label policy's name: the layers call the values (the registries look names up)."""
    names = {*RATE_MODELS, *ADJUSTMENTS, *LABEL_POLICIES}
    found = {p.name: name_tests(p.read_text(), names) for p in sorted(COMPARE.glob("*.py"))}
    assert len(found) >= 8 and not any(found.values()), found
    # What the layers did before: found.
    before = 'if rates == "shared" and adjust not in ("holm", "bh"):\n    x = rule != "refuse"'
    assert name_tests(before, names) == [1, 1, 2]
