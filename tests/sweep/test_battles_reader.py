"""The battles reader (sweep/compare/battles.py): a battles table → BattleCells.

Checked against the shipped Arena file (its cells against a pandas groupby of the raw rows,
written here independently, and MODEL.md's measured shares), small tables worked by hand,
and its refusals' one-line messages.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import pytest

from binmetric_sweep.kernels.arena.cells import A_BETTER, B_BETTER, NONE, TIE
from binmetric_sweep.sweep.cli import build_parser
from binmetric_sweep.sweep.compare.battles import (
    DEFAULT_VERDICTS,
    VerdictWords,
    battles_from_frame,
    is_battles,
    read_battles,
)
from binmetric_sweep.sweep.errors import SweepError

from .helpers import REPO

ARENA = REPO / "examples" / "arena_battles.csv"
JUDGES = ("gpt-4-0125-preview", "gpt-3.5-turbo")
#: The Arena words' classes, written out here as the test's own decoding.
ARENA_CLASSES = {"model_a": A_BETTER, "model_b": B_BETTER, "tie": TIE, "tie (bothbad)": TIE}


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return pd.read_csv(ARENA, dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def arena():
    return read_battles(ARENA)


def _cells_frame(battles) -> pd.DataFrame:
    """The cells as a table of names and classes, one row per cell, sorted."""
    cells = battles.cells
    frame = pd.DataFrame(
        {
            "model_a": np.array(battles.systems)[cells.a],
            "model_b": np.array(battles.systems)[cells.b],
            "human": cells.human,
            **{j: cells.judged[:, i] for i, j in enumerate(battles.judges)},
            "count": cells.count,
        }
    )
    return frame.sort_values(list(frame.columns[:-1])).reset_index(drop=True)


def _table(rows: list[tuple], columns=("model_a", "model_b", "human", "judge")) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


def _refused(frame: pd.DataFrame, **options) -> str:
    with pytest.raises(SweepError) as caught:
        battles_from_frame(frame, **options)
    message = str(caught.value)
    assert "\n" not in message
    return message


# --- the shipped file -------------------------------------------------------------------


def test_the_shipped_file_reads_as_it_is(arena, raw):
    assert arena.systems == tuple(sorted(set(raw.model_a) | set(raw.model_b)))
    assert len(arena.systems) == 20
    assert arena.judges == JUDGES
    assert arena.ignored == ("battle", "question_id")
    assert arena.cells.battles == len(raw) == 26_919
    assert arena.cells.judges == 2
    assert arena.reading() == (
        f"{len(raw):,} battles among 20 systems; human verdicts on {len(raw):,}; judges "
        "gpt-4-0125-preview, gpt-3.5-turbo; columns not read: battle, question_id"
    )


def test_the_shipped_file_s_cells_are_a_groupby_of_its_rows(arena, raw):
    """Every cell, and every system's number of battles, against pandas on the raw rows."""
    decoded = raw.assign(**{c: raw[c].map(ARENA_CLASSES) for c in ("human", *JUDGES)})
    expected = (
        decoded.groupby(["model_a", "model_b", "human", *JUDGES]).size().rename("count")
    ).reset_index()
    expected = expected.sort_values(list(expected.columns[:-1])).reset_index(drop=True)
    got = _cells_frame(arena)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    cells = arena.cells
    per_system = np.bincount(cells.a, cells.count, 20) + np.bincount(cells.b, cells.count, 20)
    by_pandas = raw.model_a.value_counts().add(raw.model_b.value_counts(), fill_value=0)
    assert dict(zip(arena.systems, per_system.astype(int), strict=True)) == by_pandas.to_dict()


def test_the_shipped_file_s_decoding_gives_model_md_s_measured_shares(arena):
    """MODEL.md: GPT-3.5 says model_a on 86 % of battles, the human on 35 %; GPT-4 agrees
    with the human on 55 %, GPT-3.5 on 40 % (a tie and a bothbad tie agree)."""
    cells, n = arena.cells, arena.cells.battles

    def share(mask):
        return round(float(cells.count[mask].sum()) / n, 2)

    assert share(cells.judged[:, 1] == A_BETTER) == 0.86
    assert share(cells.human == A_BETTER) == 0.35
    assert share(cells.judged[:, 0] == cells.human) == 0.55
    assert share(cells.judged[:, 1] == cells.human) == 0.40


def test_csv_parquet_and_json_lines_give_the_same_cells(arena, raw, tmp_path):
    typed = pd.read_csv(ARENA)  # battle as integers: still not a judge
    typed.to_parquet(tmp_path / "b.parquet")
    typed.to_json(tmp_path / "b.jsonl", orient="records", lines=True)
    for other in (
        read_battles(tmp_path / "b.parquet"),
        read_battles(tmp_path / "b.jsonl"),
        battles_from_frame(raw),
    ):
        assert other.systems == arena.systems and other.judges == arena.judges
        assert other.ignored == arena.ignored
        for got, want in zip(other.cells, arena.cells, strict=True):
            np.testing.assert_array_equal(got, want)


def test_row_order_changes_no_cell(arena, raw):
    shuffled = raw.sample(frac=1.0, random_state=np.random.default_rng(64))
    # The columns reversed reverse the judges; the cells, judges matched by name, are the same.
    reversed_columns = battles_from_frame(shuffled.iloc[:, ::-1])
    assert reversed_columns.judges == arena.judges[::-1]
    got = _cells_frame(reversed_columns)[list(_cells_frame(arena).columns)]
    got = got.sort_values(list(got.columns[:-1])).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, _cells_frame(arena))
    same_order = battles_from_frame(shuffled)
    for got, want in zip(same_order.cells, arena.cells, strict=True):
        np.testing.assert_array_equal(got, want)


# --- verdicts ---------------------------------------------------------------------------


def test_default_words_by_hand():
    frame = _table(
        [
            ("x", "y", "model_a", "model_b"),
            ("y", "x", "tie (bothbad)", "tie"),
            ("x", "y", " model_a ", "model_a"),  # padding is not part of a word
            ("x", "y", "model_a", "model_b"),
        ]
    )
    battles = battles_from_frame(frame)
    assert battles.systems == ("x", "y") and battles.judges == ("judge",)
    np.testing.assert_array_equal(battles.cells.a, [0, 0, 1])
    np.testing.assert_array_equal(battles.cells.b, [1, 1, 0])
    np.testing.assert_array_equal(battles.cells.human, [A_BETTER, A_BETTER, TIE])
    np.testing.assert_array_equal(battles.cells.judged[:, 0], [B_BETTER, A_BETTER, TIE])
    np.testing.assert_array_equal(battles.cells.count, [2, 1, 1])


@pytest.mark.parametrize(
    "verdicts",
    [
        "win=model_a,loss=model_b,draw=tie",
        " win = model_a , loss=model_b,draw=tie",
        {"win": "model_a", "loss": "model_b", "draw": "tie"},
    ],
)
def test_custom_words_replace_the_default(verdicts):
    frame = _table([("x", "y", "win", "draw"), ("x", "y", "loss", ""), ("y", "x", "", "win")])
    battles = battles_from_frame(frame, verdicts=verdicts)
    table = _cells_frame(battles)
    assert table.values.tolist() == [
        ["x", "y", B_BETTER, NONE, 1],
        ["x", "y", A_BETTER, TIE, 1],
        ["y", "x", NONE, A_BETTER, 1],
    ]
    frame.loc[1, "human"] = "model_a"  # no longer a word
    assert _refused(frame, verdicts=verdicts) == (
        "battles: row 2, column human: 'model_a' is not a verdict; allowed: win, loss, draw "
        "or empty (--verdicts WORD=VERDICT,... maps others)"
    )


def test_an_unmapped_word_names_column_word_row_and_the_words_allowed():
    frame = _table([("x", "y", "model_a", "model_a"), ("x", "y", "Tie", "tie")])
    assert _refused(frame) == (
        "battles: row 2, column human: 'Tie' is not a verdict; allowed: model_a, model_b, "
        "tie, tie (bothbad) or empty (--verdicts WORD=VERDICT,... maps others)"
    )
    frame = _table([("x", "y", "model_a", "model_a"), ("x", "y", "tie", "both")])
    assert _refused(frame, judges=["judge"]).startswith(
        "battles: row 2, column judge: 'both' is not a verdict; allowed: model_a"
    )


@pytest.mark.parametrize(
    ("verdicts", "message"),
    [
        ("win", "--verdicts: 'win' is not WORD=VERDICT;"),
        ("win=good", "--verdicts: 'win' maps to 'good'; a verdict is one of model_a, model_b, tie"),
        ("win=model_a,win=tie", "--verdicts: 'win' is mapped twice"),
        ("=tie", "--verdicts: an empty word;"),
        ({}, "--verdicts: no words;"),
    ],
)
def test_bad_verdict_maps_are_refused_naming_the_flag(verdicts, message):
    frame = _table([("x", "y", "model_a", "model_a")])
    assert _refused(frame, verdicts=verdicts).startswith(message)


def test_the_default_words_are_arena_s():
    assert VerdictWords.of(None) == DEFAULT_VERDICTS
    assert dict(zip(DEFAULT_VERDICTS.words, DEFAULT_VERDICTS.classes, strict=True)) == (
        ARENA_CLASSES
    )


def test_empty_verdicts_are_none():
    """A blank, whitespace, None or NaN human verdict is no verdict; so is a judge's."""
    frame = _table(
        [
            ("x", "y", "", "model_a"),
            ("x", "y", "  ", "model_a"),
            ("x", "y", None, "model_a"),
            ("x", "y", np.nan, "model_a"),
            ("x", "y", "tie", None),
        ]
    )
    battles = battles_from_frame(frame)
    assert _cells_frame(battles).values.tolist() == [
        ["x", "y", NONE, A_BETTER, 4],
        ["x", "y", TIE, NONE, 1],
    ]
    assert battles.reading() == "5 battles among 2 systems; human verdicts on 1; judge judge"


def test_empty_csv_cells_are_none(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("model_a,model_b,human,g\nx,y,,tie\ny,x,model_b,\n")
    battles = read_battles(path)
    assert _cells_frame(battles).values.tolist() == [
        ["x", "y", NONE, TIE, 1],
        ["y", "x", B_BETTER, NONE, 1],
    ]


# --- judges -----------------------------------------------------------------------------


def _two_judges() -> pd.DataFrame:
    return _table(
        [
            ("x", "y", "model_a", "tie", "model_b", "q1", "a note", ""),
            ("y", "x", "tie", "model_a", "", "q2", "", ""),
        ],
        ("model_a", "model_b", "human", "j1", "j2", "item", "note", "blank"),
    )


def test_judges_by_default_are_the_columns_of_verdicts():
    battles = battles_from_frame(_two_judges())
    assert battles.judges == ("j1", "j2")
    assert battles.ignored == ("item", "note", "blank")
    np.testing.assert_array_equal(battles.cells.judged, [[TIE, B_BETTER], [A_BETTER, NONE]])
    assert battles.reading().endswith("judges j1, j2; columns not read: item, note, blank")


def test_judges_named_are_read_in_their_order():
    battles = battles_from_frame(_two_judges(), judges=["j2", "j1"])
    assert battles.judges == ("j2", "j1")
    np.testing.assert_array_equal(battles.cells.judged, [[B_BETTER, TIE], [NONE, A_BETTER]])
    one = battles_from_frame(_two_judges(), judges=["j2"])
    assert one.judges == ("j2",) and one.ignored == ("j1", "item", "note", "blank")


@pytest.mark.parametrize(
    ("judges", "message"),
    [
        (["j3"], "--judge-columns: battles has no column 'j3'; columns found: 'model_a',"),
        (["human"], "--judge-columns: 'human' cannot be a judge column"),
        (["item"], "--judge-columns: 'item' cannot be a judge column"),
        (["j1", "j1"], "--judge-columns: 'j1' is named twice"),
        (["blank"], "battles: column blank: no verdict in any row"),
        (["note"], "battles: row 1, column note: 'a note' is not a verdict"),
        ([], "--judge-columns: no column named"),
    ],
)
def test_bad_judge_names_are_refused(judges, message):
    assert _refused(_two_judges(), judges=judges).startswith(message)


def test_no_judge_column_is_refused_listing_the_columns():
    frame = _two_judges().drop(columns=["j1", "j2"])
    assert _refused(frame) == (
        "battles: no judge column (a column whose values are all verdicts: model_a, model_b, "
        "tie, tie (bothbad) or empty); name them with --judge-columns; columns found: "
        "'model_a', 'model_b', 'human', 'item', 'note', 'blank'"
    )


# --- the battle columns -----------------------------------------------------------------


def test_a_battle_of_a_system_against_itself_is_refused_naming_the_row():
    frame = _table([("x", "y", "tie", "tie"), ("y", " y", "tie", "tie")])
    assert _refused(frame) == (
        "battles: row 2: model_a and model_b are both 'y'; a battle is between two different "
        "systems"
    )


def test_a_missing_model_b_column_is_refused_in_one_line(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("model_a,opponent,human,g\nx,y,tie,tie\n")
    with pytest.raises(SweepError) as caught:
        read_battles(path)
    assert str(caught.value) == (
        f"{path}: no column 'model_b'; a battles table has columns model_a, model_b, human (a "
        "verdict or empty), one column per judge and optionally item; columns found: "
        "'model_a', 'opponent', 'human', 'g'"
    )


def test_an_empty_system_name_and_an_empty_table_are_refused():
    assert _refused(_table([("x", "", "tie", "tie")])) == ("battles: row 1, column model_b: empty")
    assert _refused(_table([])) == "battles: empty (no rows)"


def test_is_battles_asks_for_both_sides():
    assert is_battles(["battle", "model_a", "model_b", "human"])
    assert not is_battles(["system", "human", "metric"])
    assert not is_battles(["model_a", "human"])


def test_compare_takes_verdicts_as_text():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    compare = commands.choices["compare"]
    args = compare.parse_args(["f.csv", "--verdicts", "win=model_a,loss=model_b,draw=tie"])
    assert VerdictWords.of(args.verdicts) == VerdictWords(
        ("win", "loss", "draw"), (A_BETTER, B_BETTER, TIE)
    )
