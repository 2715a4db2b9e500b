"""The paired design, one type (kernels.paired): every edge's spelling parses to the same
value, the value gives the config_id text, bad spellings are refused in one line, and no
module above the kernels tests the design's words itself."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

import numpy as np
import pytest

from binmetric_sweep.kernels.paired import (
    KNOWN,
    SHARED,
    PairedDesign,
    PairedKind,
    flags_of_kinds,
    from_flags,
    kinds_of_flags,
    separate,
)
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.plan.spec import (
    PlanSpec,
    as_spec,
    flag_spec,
    load_plan_grid,
    plan_paired,
)
from binmetric_sweep.sweep.spec.config import load_sweep, paired_kind
from binmetric_sweep.sweep.spec.grid import config_id, expand_grid

SWEEP = Path(__file__).parents[2] / "sweep"
BLOCK = "  - {{alpha: [0.6], rho: [0.8], eta: [0.7], n_phi: [200], n_rho_eta: {}, n_m: [900]}}\n"
#: Each design as a sweep file, sweep plan and the configurations table spell it.
SPELLINGS = [("n_phi", "shared", SHARED), ("[150]", 150, separate(150)), ("known", "known", KNOWN)]


def sweep_table(*n_rho_eta: str):
    grid = "".join(BLOCK.format(n) for n in n_rho_eta)
    return expand_grid(load_sweep(f"name: paired\ngrid:\n{grid}"))


PLAN = dict(alpha=0.6, rho=0.8, eta=0.7, eps=0.05, cost_metric=0.1)


def plan_spec(n_rho_eta) -> PlanSpec:
    return PlanSpec(**PLAN, n_rho_eta=n_rho_eta)


@pytest.mark.parametrize(("in_sweep", "in_plan", "design"), SPELLINGS)
def test_every_edge_spelling_parses_to_the_same_design(in_sweep, in_plan, design):
    """A sweep file's block, its configurations table's row, sweep plan's flag, a plan
    grid's scenario and the Python argument all give the same PairedDesign (a separate
    set's ψ is α: the table's row carries it as a number, the plan leaves it to α)."""
    block = load_sweep(f"name: paired\ngrid:\n{BLOCK.format(in_sweep)}").grid[0]
    assert block.paired is design.kind is paired_kind(block.n_rho_eta)
    (row,) = sweep_table(in_sweep).itertuples()
    from_table = from_flags(row.shared_paired, row.rho_eta_known, row.n_rho_eta, row.psi)
    assert from_table == (separate(150, 0.6) if design.separate else design)
    assert plan_paired(in_plan) == plan_paired(str(in_plan)) == design
    flags = dict(alpha="0.6", rho="0.8", eta="0.7", eps="0.05", cost_metric="0.1")
    assert flag_spec({**flags, "n_rho_eta": str(in_plan)}).paired == design
    grid = load_plan_grid([{**{k: float(v) for k, v in flags.items()}, "n_rho_eta": in_plan}])
    assert grid[0].paired == design == plan_spec(design).paired == plan_spec(in_plan).paired
    # the field keeps the plan's spelling (it seeds the simulations), whatever was given
    assert plan_spec(design).n_rho_eta == plan_spec(in_plan).n_rho_eta == in_plan
    assert (design.shared, design.known, design.separate) == (
        design.kind.shared,
        design.kind.known,
        design.kind.separate,
    )
    assert sum((design.shared, design.known, design.separate)) == 1


def test_the_tables_bools_and_the_kinds_round_trip():
    kinds = kinds_of_flags([True, False, False], [False, False, True])
    assert kinds.tolist() == [PairedKind.SHARED, PairedKind.SEPARATE, PairedKind.KNOWN]
    shared, known = flags_of_kinds(kinds)
    assert shared.tolist() == [True, False, False] and known.tolist() == [False, False, True]
    table = sweep_table("n_phi", "[150]", "known")
    assert flags_of_kinds(kinds_of_flags(table.shared_paired, table.rho_eta_known))[0].tolist() == (
        table.shared_paired.tolist()
    )
    assert [separate(3).n_pair, SHARED.n_pair, KNOWN.n_pair] == [3, 0, 0]


def test_config_id_text_comes_from_the_design():
    """The config_id hashes the values and the design's text (``shared``, ``known`` or
    ``separate|N|ψ``): pinned here by hashing that text by hand, for every row of a grid
    with the three designs, so that no sweep's ids (and so no sweep's numbers) move."""
    assert (SHARED.id_text(), KNOWN.id_text()) == ("shared", "known")
    assert separate(150, 0.25).id_text() == "separate|150|0.25"
    assert separate(150).id_text(psi=0.6) == "separate|150|0.6"
    with pytest.raises(ValueError, match="psi"):
        separate(150).id_text()
    table = sweep_table("n_phi", "[150]", "known")
    texts = ["shared", "separate|150|0.6", "known"]
    for row, tail in zip(table.itertuples(), texts, strict=True):
        design = from_flags(row.shared_paired, row.rho_eta_known, row.n_rho_eta, row.psi)
        assert design.id_text() == tail
        text = f"{row.alpha!r}|{row.rho!r}|{row.eta!r}|{row.n_phi}|{row.n_m}|{tail}"
        digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
        expected = int.from_bytes(digest, "little") & (2**63 - 1)
        n_rho_eta = 0 if design.known else row.n_rho_eta
        values = (row.alpha, row.rho, row.eta, row.n_phi, n_rho_eta, row.psi, row.n_m)
        assert row.config_id == expected == config_id(*values, design.kind)


def test_a_design_holds_only_what_its_kind_has():
    with pytest.raises(ValueError, match="no n_rho_eta or psi"):
        PairedDesign(PairedKind.SHARED, 10)
    with pytest.raises(ValueError, match="n_rho_eta >= 0"):
        PairedDesign(PairedKind.SEPARATE)
    with pytest.raises(ValueError, match="psi"):
        separate(10, 1.5)
    with pytest.raises(TypeError, match="PairedKind"):
        PairedDesign("shared")
    assert separate(0).n_pair == 0  # a sweep may plan a separate set of no items
    with pytest.raises(ValueError, match="both shared and known"):
        from_flags(True, True)


@pytest.mark.parametrize(
    ("edge", "bad", "message"),
    [
        ("sweep", "shared", "grid.n_rho_eta: 'shared' names no axis it can be tied to; allowed:"),
        ("sweep", "separate", "grid.n_rho_eta: 'separate' names no axis"),
        ("plan", "separate", "n_rho_eta: 'separate' is not allowed; give 'shared', 'known' or a"),
        ("plan", "n_phi", "n_rho_eta: 'n_phi' is not allowed"),
        ("plan", 0, "n_rho_eta: 0 is not allowed"),
        ("flags", "1.5", "--n-rho-eta: '1.5' is not allowed"),
        ("flags", "true", "--n-rho-eta: 'true' is not allowed"),
    ],
)
def test_a_bad_spelling_is_refused_in_one_line_at_each_edge(edge, bad, message):
    with pytest.raises(SweepError) as error:
        if edge == "sweep":
            sweep_table(bad)
        elif edge == "plan":
            as_spec({**PLAN, "n_rho_eta": bad})
        else:
            flags = dict(alpha="0.6", rho="0.8", eta="0.7", eps="0.05", cost_metric="0.1")
            flag_spec({**flags, "n_rho_eta": bad})
    text = str(error.value)
    assert text.startswith(message) and "\n" not in text
    if edge != "sweep":
        assert "from 1 to" in text


#: The paired design's words; only the parse functions at the edges may compare with them.
WORDS = {"shared", "known", "separate"}
#: (module, function) pairs allowed to compare a value with the words: the parse functions
#: of an edge's spelling, and the quadrature rules' kinds, whose "known" is the kind of a
#: lane's model (ρ, η given: kernels.quadrature.MODEL_KINDS), not a spelling of the design.
ALLOWED = {("calls.py", "plan_chunks")}


def word_compares(tree: ast.AST, words=WORDS):
    """``(function, lineno, word)`` of each comparison (==, !=, in, not in) of a value with
    one of ``words`` (alone or in a tuple, list or set of constants)."""
    found = []

    def visit(node, function):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                items = (
                    operand.elts
                    if isinstance(operand, ast.Tuple | ast.List | ast.Set)
                    else [operand]
                )
                for item in items:
                    if isinstance(item, ast.Constant) and item.value in words:
                        found.append((function, node.lineno, item.value))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return found


def test_the_syntax_walk_finds_a_comparison_with_a_word():
    tree = ast.parse(
        "def f(s):\n    return s.n_rho_eta == 'known' or s.x in ('a', 'shared')\n"
        "def g(s):\n    return s.paired.known\n"
    )
    assert word_compares(tree) == [("f", 2, "known"), ("f", 2, "shared")]


def test_no_module_of_sweep_tests_the_paired_design_s_words():
    """Above the kernels the layers ask the value (``.shared``, ``.known``,
    ``.separate``); the compare package's rate model "shared" is a value of its own
    (RateModel), so sweep/compare/ is walked for the design's other words only."""
    found = []
    for path in sorted(SWEEP.rglob("*.py")):
        words = WORDS - {"shared"} if "compare" in path.parts else WORDS
        for function, line, word in word_compares(ast.parse(path.read_text()), words):
            if (path.name, function) not in ALLOWED:
                found.append(f"{path.relative_to(SWEEP.parent)}:{line} {function}: {word!r}")
    assert not found, found
    assert np.all(kinds_of_flags(False, False) == PairedKind.SEPARATE)
