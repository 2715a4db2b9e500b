"""Ratings files for ``sweep compare``: formats, layouts, counts and one-line refusals."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binmetric_sweep.sweep.compare.ratings import (
    COUNT_COLUMNS,
    check_counts,
    counts_from_ratings,
    counts_table,
    ratings_from_frame,
    read_ratings,
)
from binmetric_sweep.sweep.errors import SweepError

from .helpers import REPO

EXAMPLE = REPO / "examples" / "ratings.csv"
EXAMPLE_ALPHA = {"sys-A": 0.72, "sys-B": 0.68, "sys-C": 0.60, "baseline": 0.55}
EXAMPLE_RHO, EXAMPLE_ETA, EXAMPLE_SEED = 0.85, 0.80, 20240611
#: Per system, items 1–60 are rated by humans only, 61–100 by both, 101–500 by the metric only.
EXAMPLE_HUMAN_ONLY, EXAMPLE_PAIRED, EXAMPLE_ITEMS = 60, 40, 500

LABELS_ALLOWED = "allowed: 1, 0 or empty (true/false count as 1/0)"
RATINGS_LAYOUT = (
    "a ratings table has columns system, human, metric and optionally item (others are ignored)"
)
COUNTS_LAYOUT = "a counts table has columns system, " + ", ".join(COUNT_COLUMNS)

# A small campaign, in the order a real export might list it: (system, item, human, metric).
ROWS = [
    ("sys-A", "i1", 1, 1),  # paired: human 1, metric 1
    ("sys-A", "i2", 1, 0),  # paired: human 1, metric 0
    ("sys-A", "i3", 0, 0),  # paired: human 0, metric 0
    ("sys-A", "i4", 0, None),  # human only
    ("007", "i1", None, 1),  # metric only
    ("007", "i2", None, 0),
    ("sys-A", "i5", None, 1),
    ("007", "i3", 1, None),
    ("baseline", "i1", 0, 1),  # paired: human 0, metric 1
]
# Its counts by hand, in COUNT_COLUMNS order, systems in order of first appearance.
EXPECTED = {
    "sys-A": (4, 2, 3, 2, 1, 1, 1, 1),
    "007": (1, 1, 0, 0, 0, 0, 2, 1),
    "baseline": (1, 0, 1, 0, 0, 0, 0, 0),
}


def expected_counts(counts: dict) -> pd.DataFrame:
    """The result table ``read_ratings`` should return for ``{system: counts}``."""
    frame = pd.DataFrame(list(counts.values()), columns=list(COUNT_COLUMNS), dtype=np.int64)
    frame.insert(0, "system", pd.Series(list(counts), dtype="str"))
    frame["n_outputs"] = frame["n_phi"] + frame["n_m"]  # each output has one kind of rating
    return frame


def ratings_frame(rows=ROWS) -> pd.DataFrame:
    """Rows as a ratings table with nullable integer labels and an extra column."""
    frame = pd.DataFrame(rows, columns=["system", "item", "human", "metric"])
    frame["human"] = frame["human"].astype("Int64")
    frame["metric"] = frame["metric"].astype("Int64")
    frame["annotator"] = "ann-1"  # real exports carry more columns; they are ignored
    return frame


def write(frame: pd.DataFrame, path) -> None:
    """Write ``frame`` in the format its suffix names, as pandas users export."""
    suffix = path.suffix
    if suffix in (".csv", ".tsv"):
        frame.to_csv(path, index=False, sep="\t" if suffix == ".tsv" else ",")
    elif suffix in (".parquet", ".pq"):
        frame.to_parquet(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)


def refusal(path) -> str:
    """The one-line message ``read_ratings(path)`` refuses the file with."""
    with pytest.raises(SweepError) as caught:
        read_ratings(path)
    return str(caught.value)


def example_ratings(seed: int = EXAMPLE_SEED) -> pd.DataFrame:
    """The draw behind ``examples/ratings.csv``, from the model with fixed seed.

    Four systems with α = 0.72, 0.68, 0.60, 0.55 each produce an output for the
    same 500 source items (``seg-001`` …). An output is adequate with
    probability α; humans see adequacy without error; the metric says 1 with
    probability ρ = 0.85 if it is adequate and 1 − η = 0.2 if not. Per system,
    items 1–60 carry a human label only, 61–100 both labels (the paired set),
    101–500 a metric label only. Rows are listed item by item, systems in turn.

    Regenerate the file with ``python -c "from tests.sweep.test_compare_ratings
    import write_example; write_example()"`` from the repository root.
    """
    rng = np.random.default_rng(seed)
    item = np.arange(1, EXAMPLE_ITEMS + 1)
    frames = []
    for system, alpha in EXAMPLE_ALPHA.items():
        adequate = rng.random(item.size) < alpha
        says_one = rng.random(item.size) < np.where(adequate, EXAMPLE_RHO, 1 - EXAMPLE_ETA)
        human = pd.Series(adequate.astype(np.int64), dtype="Int64")
        metric = pd.Series(says_one.astype(np.int64), dtype="Int64")
        frames.append(
            pd.DataFrame(
                {
                    "system": system,
                    "item": [f"seg-{i:03d}" for i in item],
                    "human": human.mask(item > EXAMPLE_HUMAN_ONLY + EXAMPLE_PAIRED),
                    "metric": metric.mask(item <= EXAMPLE_HUMAN_ONLY),
                    "order": item,
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame = frame.sort_values("order", kind="stable").drop(columns="order")
    return frame.reset_index(drop=True)


def example_text() -> str:
    """``examples/ratings.csv`` as the generator writes it."""
    return example_ratings().to_csv(index=False, lineterminator="\n")


def write_example() -> None:
    """Write ``examples/ratings.csv`` (see :func:`example_ratings`)."""
    EXAMPLE.parent.mkdir(exist_ok=True)
    EXAMPLE.write_text(example_text(), encoding="utf-8")


# --- formats and layouts -----------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet", ".pq", ".jsonl", ".ndjson"])
def test_every_format_gives_the_counts_by_hand(tmp_path, suffix):
    path = tmp_path / f"ratings{suffix}"
    write(ratings_frame(), path)
    pd.testing.assert_frame_equal(read_ratings(path).counts, expected_counts(EXPECTED))


def test_counts_table_round_trip(tmp_path):
    counts = read_ratings(EXAMPLE).counts
    for suffix in (".csv", ".parquet", ".jsonl"):
        path = tmp_path / f"counts{suffix}"
        write(counts.assign(note="published"), path)  # an extra column is ignored
        pd.testing.assert_frame_equal(read_ratings(path).counts, counts)


def test_frames_in_python_number_rows_by_position():
    frame = ratings_frame().set_index(pd.Index([10, 20, 30, 40, 50, 60, 70, 80, 90]))
    pd.testing.assert_frame_equal(
        counts_from_ratings(frame, "mine").counts, expected_counts(EXPECTED)
    )
    frame.loc[30, "metric"] = 5
    with pytest.raises(SweepError, match=r"^mine: row 3, column metric: 5 is not a label"):
        counts_from_ratings(frame, "mine")


def test_label_spellings(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(
        "system,human,metric\n"
        "a, 1 ,1.0\n"  # paired, both 1
        "a,0.0,FALSE\n"  # paired, both 0
        "a,True,\n"  # human only, 1
        "a,  ,0\n"  # blank human: metric only, 0
    )
    pd.testing.assert_frame_equal(
        read_ratings(path).counts, expected_counts({"a": (3, 2, 2, 1, 1, 1, 1, 0)})
    )


def test_typed_labels_in_parquet(tmp_path):
    path = tmp_path / "ratings.parquet"
    frame = pd.DataFrame(
        {
            "system": ["a", "a", "a"],
            "human": pd.array([True, None, False], dtype="boolean"),
            "metric": [1.0, 0.0, np.nan],
        }
    )
    frame.to_parquet(path)
    expected = expected_counts({"a": (2, 1, 1, 1, 1, 0, 1, 0)})
    pd.testing.assert_frame_equal(read_ratings(path).counts, expected)


def test_json_lines_with_mixed_types(tmp_path):
    # pyarrow wants one type per column; pandas reads the file instead.
    path = tmp_path / "ratings.jsonl"
    records = [
        {"system": "a", "human": 1, "metric": ""},
        {"system": 7, "human": "0", "metric": None},
        {"system": "a", "human": True, "metric": 1.0},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n")
    expected = expected_counts({"a": (2, 2, 1, 1, 1, 0, 0, 0), "7": (1, 0, 0, 0, 0, 0, 0, 0)})
    pd.testing.assert_frame_equal(read_ratings(path).counts, expected)


def test_system_names_stay_text(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("system,human,metric\n007,1,\n7,0,\n7.0,,1\n sys-A ,1,\nsys-A,,0\n")
    counts = read_ratings(path).counts
    assert counts["system"].tolist() == ["007", "7", "7.0", "sys-A"]
    assert counts["n_phi"].tolist() == [1, 1, 0, 1] and counts["n_m"].tolist() == [0, 0, 1, 1]


def test_whole_numbers_in_typed_columns_name_systems(tmp_path):
    path = tmp_path / "ratings.parquet"
    pd.DataFrame({"system": [7, 7, 8], "human": [1, 0, 1], "metric": [None, 1, 0]}).to_parquet(path)
    assert read_ratings(path).counts["system"].tolist() == ["7", "8"]


def test_example_file_is_the_documented_draw():
    assert EXAMPLE.read_text(encoding="utf-8") == example_text()
    counts = read_ratings(EXAMPLE).counts.set_index("system")
    assert counts.index.tolist() == list(EXAMPLE_ALPHA)
    assert (counts["n_phi"] == EXAMPLE_HUMAN_ONLY + EXAMPLE_PAIRED).all()
    assert (counts["n_rho_eta"] == EXAMPLE_PAIRED).all()
    assert (counts["n_m"] == EXAMPLE_ITEMS - EXAMPLE_HUMAN_ONLY - EXAMPLE_PAIRED).all()
    assert EXAMPLE.stat().st_size < 100_000


@pytest.mark.long
@pytest.mark.slow  # a million rows written and read in three formats: the suite's largest files
def test_a_million_ratings(tmp_path, capsys):
    """100 systems × 10,000 ratings, with a free-text column, in each format: same counts."""
    rng = np.random.default_rng(3)
    n = 1_000_000
    kind = rng.integers(0, 3, n)  # 0: human only, 1: paired, 2: metric only
    human = pd.Series(rng.integers(0, 2, n), dtype="Int64").mask(kind == 2)
    metric = pd.Series(rng.integers(0, 2, n), dtype="Int64").mask(kind == 0)
    frame = pd.DataFrame(
        {
            "system": np.repeat([f"{i:03d}" for i in range(100)], n // 100),
            "item": np.arange(n),
            # Quoted line breaks, commas and quotes in a free-text column, across CSV blocks.
            "comment": np.where(kind == 1, 'first line\nsecond, "quoted"', ""),
            "human": human,
            "metric": metric,
        }
    )
    expected = frame.groupby("system", sort=False).agg(
        n_phi=("human", "count"), n_pos=("human", "sum"), n_m=("metric", "count")
    )
    expected["n_m"] -= (kind == 1).reshape(100, -1).sum(axis=1)
    for suffix in (".csv", ".parquet", ".jsonl"):
        path = tmp_path / f"big{suffix}"
        write(frame, path)
        counts = read_ratings(path).counts
        assert counts["system"].tolist() == [f"{i:03d}" for i in range(100)]
        assert (counts["n_phi"] + counts["n_m"] == n // 100).all()
        for column in ("n_phi", "n_pos", "n_m"):
            assert counts[column].tolist() == expected[column].tolist()
    assert capsys.readouterr() == ("", "")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from([0, 1, None]),
            st.sampled_from([0, 1, None]),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_counts_of_any_campaign(rows):
    """Any rows (unlabelled ones among them: skipped) give the counts by hand."""
    frame = pd.DataFrame(rows, columns=["system", "human", "metric"], dtype=object)
    labelled = [(s, h, m) for s, h, m in rows if h is not None or m is not None]
    if not labelled:
        with pytest.raises(SweepError, match=r"^hyp: no row has a human or a metric label"):
            counts_from_ratings(frame, "hyp")
        return
    counts, reading = counts_from_ratings(frame, "hyp")
    assert (reading.rows, reading.outputs) == (len(rows), len(labelled))
    assert reading.unlabelled == len(rows) - len(labelled)
    assert counts["system"].tolist() == list(dict.fromkeys(s for s, _, _ in labelled))
    unrated = dict.fromkeys(s for s, _, _ in rows if s not in set(counts["system"]))
    assert reading.unrated_systems == tuple(unrated)
    rows = labelled
    consistent = check_counts(counts.drop(columns="n_outputs"), "hyp")
    pd.testing.assert_frame_equal(consistent, counts.drop(columns="n_outputs"))
    assert (counts["n_outputs"] == counts["n_phi"] + counts["n_m"]).all()  # one output a row
    for _, got in counts.iterrows():
        mine = [(h, m) for s, h, m in rows if s == got["system"]]
        paired = Counter((h, m) for h, m in mine if h is not None and m is not None)
        by_hand = (
            sum(h is not None for h, _ in mine),
            sum(h == 1 for h, _ in mine),
            paired.total(),
            paired[1, 0] + paired[1, 1],
            paired[1, 1],
            paired[0, 0],
            sum(h is None for h, _ in mine),
            sum(h is None and m == 1 for h, m in mine),
        )
        assert tuple(got[list(COUNT_COLUMNS)]) == by_hand


# --- refusals ----------------------------------------------------------------------------

HEADER = "system,item,human,metric\n"


@pytest.mark.parametrize(
    "text, message",
    [
        (
            HEADER + "A,1,1,0\nA,2,yes,1\nA,3,maybe,1\n",
            f"row 2, column human: 'yes' is not a label; {LABELS_ALLOWED}",
        ),
        (HEADER + "A,1,1,2\n", f"row 1, column metric: '2' is not a label; {LABELS_ALLOWED}"),
        (HEADER + "A,1,NA,1\n", f"row 1, column human: 'NA' is not a label; {LABELS_ALLOWED}"),
        (HEADER + "A,1,,\nA,2,,\n", "no row has a human or a metric label (2 rows)"),
        (HEADER + "A,1,,\n,2,,\n", "row 2, column system: empty"),  # names: every row
        (HEADER + "A,1,1,0\nA,2,1,0\nA,3,1,0\n  ,4,1,0\n", "row 4, column system: empty"),
        (HEADER, "empty (no rows)"),
        ("", "empty (no rows)"),
        (
            "sys,human,metric\nA,1,0\n",
            "no column 'system'; columns found: 'sys', 'human', 'metric'",
        ),
        (
            "system,human,metrc\nA,1,0\n",
            f"no column 'metric'; {RATINGS_LAYOUT}; columns found: 'system', 'human', 'metrc'",
        ),
        (
            "system,item,label\nA,1,0\n",
            "neither a ratings nor a counts table; columns found: 'system', 'item', 'label'; "
            f"{RATINGS_LAYOUT}; {COUNTS_LAYOUT}",
        ),
        (
            "system,human,metric,n_phi\nA,1,0,1\n",
            f"both label and count columns ('human', 'metric', 'n_phi'); {RATINGS_LAYOUT}; "
            f"{COUNTS_LAYOUT}",
        ),
        ("system,human,human,metric\nA,1,0,1\n", "column 'human' appears 2 times"),
        (
            HEADER + "A,1,1,0\nA,2,1,0,extra\n",
            "unreadable as CSV (CSV parse error: Expected 4 columns, got 5: A,2,1,0,extra)",
        ),
        (
            HEADER + "A,1,1\n",
            "unreadable as CSV (CSV parse error: Expected 4 columns, got 3: A,1,1)",
        ),
    ],
)
def test_bad_ratings_files(tmp_path, text, message):
    path = tmp_path / "ratings.csv"
    path.write_text(text)
    assert refusal(path) == f"{path}: {message}"


def test_bad_typed_label(tmp_path):
    path = tmp_path / "ratings.parquet"
    pd.DataFrame({"system": ["A", "A"], "human": [1.0, 0.5], "metric": [None, 1.0]}).to_parquet(
        path
    )
    assert refusal(path) == f"{path}: row 2, column human: 0.5 is not a label; {LABELS_ALLOWED}"


def test_bad_typed_system(tmp_path):
    path = tmp_path / "ratings.parquet"
    pd.DataFrame({"system": [1.0, 2.5], "human": [1, 0], "metric": [None, 1]}).to_parquet(path)
    assert refusal(path) == f"{path}: row 2, column system: 2.5 is not a system name"


def test_files_that_cannot_be_read(tmp_path):
    assert refusal(tmp_path / "ratings.csv") == f"{tmp_path / 'ratings.csv'}: no such file"
    assert refusal(tmp_path) == f"{tmp_path}: not a file"
    text = tmp_path / "ratings.txt"
    text.write_text(HEADER + "A,1,1,0\n")
    assert refusal(text) == (
        f"{text}: unknown format '.txt'; allowed: .csv, .tsv, .parquet, .pq, .jsonl, .ndjson"
    )
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"system,human,metric\nsyst\xe8me,1,0\n")
    assert refusal(latin).startswith(f"{latin}: unreadable as CSV (")
    parquet = tmp_path / "ratings.parquet"
    parquet.write_text(HEADER + "A,1,1,0\n")
    assert refusal(parquet).startswith(f"{parquet}: unreadable as Parquet (")


def test_nested_values(tmp_path):
    path = tmp_path / "ratings.jsonl"
    path.write_text('{"system": "A", "human": [1], "metric": 0}\n')
    assert refusal(path) == f"{path}: row 1, column human: [1] is not a label; {LABELS_ALLOWED}"
    path.write_text('{"system": "A", "human": 1, "metric": 0}\n{"system": {"A": 1}, "human": 1}\n')
    assert refusal(path) == f"{path}: row 2, column system: {{'A': 1}} is not a system name"


def test_whitespace_is_empty(tmp_path):
    for name in ("ratings.csv", "ratings.jsonl"):
        path = tmp_path / name
        path.write_text(" \n\n")
        assert refusal(path) == f"{path}: empty (no rows)"


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            ['{"system": "A", "human": 1, "metric": 0}', "", '{"system": "A", "human": '],
            "line 3: not JSON (",
        ),
        (['{"system": "A", "human": 1, "metric": 0}', "[1, 0]"], "line 2: not a JSON object"),
        (
            ['{"system": "A", "human": 1, "metric": 0}', '{"system": "syst\udce8me"}'],
            "line 2: not UTF-8 text",
        ),
    ],
)
def test_bad_json_lines(tmp_path, lines, message):
    path = tmp_path / "ratings.jsonl"
    path.write_text("\n".join(lines) + "\n", errors="surrogateescape")  # \udce8: the byte e8
    assert refusal(path).startswith(f"{path}: {message}")


GOOD_COUNTS = {
    "system": "A",
    "n_phi": 20,
    "n_pos": 12,
    "n_rho_eta": 15,
    "n_pos_paired": 10,
    "n_tp": 8,
    "n_tn": 3,
    "n_m": 100,
    "m_pos": 60,
}
WHY = ": paired ratings are human ratings"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"n_pos": 21}, "column n_pos: 21 exceeds n_phi (20)"),
        ({"n_rho_eta": 21}, "column n_rho_eta: 21 exceeds n_phi (20)"),
        ({"n_pos_paired": 16}, "column n_pos_paired: 16 exceeds n_rho_eta (15)"),
        ({"n_tp": 11}, "column n_tp: 11 exceeds n_pos_paired (10)"),
        ({"n_tn": 6}, "column n_tn: 6 exceeds n_rho_eta − n_pos_paired (5)"),
        ({"m_pos": 101}, "column m_pos: 101 exceeds n_m (100)"),
        ({"n_pos": 9}, f"column n_pos_paired: 10 exceeds n_pos (9){WHY}"),
        (
            {"n_pos": 16},
            f"column n_rho_eta: n_rho_eta − n_pos_paired = 5 exceeds n_phi − n_pos (4){WHY}",
        ),
        ({"n_tn": -1}, "column n_tn: '-1' is not a count; allowed: a whole number ≥ 0"),
        ({"m_pos": 2.5}, "column m_pos: '2.5' is not a count; allowed: a whole number ≥ 0"),
        ({"n_m": ""}, "column n_m: empty; allowed: a whole number ≥ 0"),
        ({"system": " "}, "column system: empty"),
        ({"system": "A"}, "column system: 'A' repeats row 1"),
        (
            {"n_phi": 0, "n_pos": 0, "n_rho_eta": 0, "n_pos_paired": 0, "n_tp": 0, "n_tn": 0},
            None,  # n_m = 100: metric-only ratings are ratings
        ),
        (
            {key: 0 for key in COUNT_COLUMNS},
            "system 'B' has no ratings (n_phi = n_m = 0)",
        ),
    ],
)
def test_bad_counts_tables(tmp_path, change, message):
    path = tmp_path / "counts.csv"
    second = {**GOOD_COUNTS, "system": "B", **change}
    pd.DataFrame([GOOD_COUNTS, second]).to_csv(path, index=False)
    if message is None:
        assert read_ratings(path).counts["n_m"].tolist() == [100, 100]
        return
    separator = ": " if message.startswith("system") else ", "
    assert refusal(path) == f"{path}: row 2{separator}{message}"


def test_counts_table_missing_a_column(tmp_path):
    path = tmp_path / "counts.csv"
    pd.DataFrame([GOOD_COUNTS]).drop(columns="n_tn").to_csv(path, index=False)
    assert refusal(path) == (
        f"{path}: no column 'n_tn'; {COUNTS_LAYOUT}; columns found: 'system', 'n_phi', "
        "'n_pos', 'n_rho_eta', 'n_pos_paired', 'n_tp', 'n_m', 'm_pos'"
    )


# --- items: an output's labels on several rows, several annotators or judges -------------


def items_frame(rows) -> pd.DataFrame:
    """(system, item, human, metric) rows as a ratings table with nullable labels."""
    frame = pd.DataFrame(rows, columns=["system", "item", "human", "metric"])
    return frame.astype({"human": "Int64", "metric": "Int64"})


# Human labels and judge labels exported by two tools and concatenated: each item's
# human label and metric label on two rows, far apart.
TWO_ROW_PAIRS = [
    ("A", "q1", 1, None), ("A", "q2", 0, None), ("A", "q3", 1, None), ("B", "q1", 0, None),
    ("A", "q1", None, 1), ("A", "q2", None, 1), ("A", "q4", None, 0), ("B", "q1", None, 0),
    ("B", "q2", None, 1),
]  # fmt: skip


def test_two_rows_of_one_item_make_a_paired_rating(tmp_path):
    counts, reading = counts_from_ratings(items_frame(TWO_ROW_PAIRS), "mine")
    # A: q1 (1, 1) and q2 (0, 1) paired, q3 human only, q4 metric only; B: q1 (0, 0), q2 metric.
    expected = expected_counts({"A": (3, 2, 2, 1, 1, 0, 1, 0), "B": (1, 0, 1, 0, 0, 1, 1, 1)})
    pd.testing.assert_frame_equal(counts, expected)
    assert (reading.rows, reading.outputs, reading.by_item) == (9, 6, True)
    assert (reading.human_labels, reading.metric_labels) == (4, 5)
    assert reading.summary() == (
        "read mine: 9 rows, 6 (system, item) outputs of 2 systems; 4 human and 5 metric labels"
    )
    # Without the item column the same rows are nine outputs, none paired (as before).
    unpaired = counts_from_ratings(items_frame(TWO_ROW_PAIRS).drop(columns="item"), "mine")
    assert unpaired.counts["n_rho_eta"].tolist() == [0, 0]
    assert unpaired.reading.outputs == 9 and not unpaired.reading.by_item
    # Items are read as names: padded text, and whole numbers, name the same item.
    padded = items_frame(TWO_ROW_PAIRS)
    padded.loc[4, "item"] = " q1 "
    pd.testing.assert_frame_equal(counts_from_ratings(padded, "mine").counts, expected)


# Three annotators per item, in a file that repeats the judge's label on each row.
THREE_ANNOTATORS = [
    ("A", "q1", 1, 1), ("A", "q1", 1, None), ("A", "q1", 0, None),  # majority 1, metric 1
    ("A", "q2", 0, 0), ("A", "q2", 0, None), ("A", "q2", 0, None),  # 0, 0
    ("A", "q3", 1, None), ("A", "q3", 0, None), ("A", "q3", 0, None),  # 0, no metric
    ("B", "q1", 1, None),
]  # fmt: skip


def test_several_annotators_are_refused_by_default_naming_the_item(tmp_path):
    path = tmp_path / "three.csv"
    items_frame(THREE_ANNOTATORS).to_csv(path, index=False)
    assert refusal(path) == (
        f"{path}: row 2, column human: system 'A', item 'q1' has 3 human labels (2 × 1, 1 × 0); "
        "say how to combine several human labels of one item: --annotators majority"
    )


def test_annotators_majority(tmp_path):
    frame = items_frame(THREE_ANNOTATORS)
    counts, reading = counts_from_ratings(frame, "f", annotators="majority")
    # A: q1 paired (1, 1), q2 paired (0, 0), q3 human 0; B: human 1.
    expected = expected_counts({"A": (3, 1, 2, 1, 1, 1, 0, 0), "B": (1, 1, 0, 0, 0, 0, 0, 0)})
    pd.testing.assert_frame_equal(counts, expected)
    assert (reading.several_human, reading.split_human) == (3, 2)
    assert reading.notes() == [
        "--annotators majority: 3 items with several human labels took their majority "
        "(2 of them disagreeing)"
    ]
    # The same rows without items: every row an output, as before (rows with both labels
    # are paired), and --annotators has nothing to combine.
    flat = counts_from_ratings(frame.drop(columns="item"), "f", annotators="majority")
    assert flat.counts.set_index("system").loc["A", "n_rho_eta"] == 2
    assert "no item column" in flat.reading.notes()[0]
    with pytest.raises(SweepError, match=r"^--annotators: 'most' is not allowed; allowed: "):
        counts_from_ratings(frame, "f", annotators="most")


def test_a_tie_is_refused_under_majority(tmp_path):
    rows = [("A", 7, 1, None), ("B", 7, 1, None), ("A", 7, None, 1), ("A", 7, 0, None)]
    path = tmp_path / "tie.parquet"
    items_frame(rows).to_parquet(path)
    with pytest.raises(SweepError) as caught:
        read_ratings(path, annotators="majority")
    assert str(caught.value) == (
        f"{path}: row 1, column human: system 'A', item '7' has 2 human labels that tie "
        "(1 × 1, 1 × 0): no majority; add a label, or remove the item"
    )


def test_several_judges(tmp_path):
    rows = [
        ("A", "q1", 1, 1), ("A", "q1", None, 1), ("A", "q1", None, 0),  # metric majority 1
        ("A", "q2", None, 0), ("A", "q2", None, 0),  # metric only, 0
    ]  # fmt: skip
    frame = items_frame(rows)
    with pytest.raises(SweepError, match=r"column metric: system 'A', item 'q1' has 3 metric"):
        counts_from_ratings(frame, "f")
    counts = counts_from_ratings(frame, "f", judges="majority").counts
    pd.testing.assert_frame_equal(counts, expected_counts({"A": (1, 1, 1, 1, 1, 0, 1, 0)}))
    # Both sides combined at once: q1's human labels 1, 0, 1 and metric labels 1, 1, 0 are
    # one paired rating (1, 1); q2 one metric-only rating (0).
    both = items_frame([*rows, ("A", "q1", 0, None), ("A", "q1", 1, None)])
    counts = counts_from_ratings(both, "f", annotators="majority", judges="majority").counts
    pd.testing.assert_frame_equal(counts, expected_counts({"A": (1, 1, 1, 1, 1, 0, 1, 0)}))


def test_bad_items(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("system,item,human,metric\nA,q1,1,\nA, ,0,1\n")
    assert refusal(path) == f"{path}: row 2, column item: empty"
    path.write_text("system,item,human,metric,item\nA,q1,1,,q2\n")
    assert refusal(path) == f"{path}: column 'item' appears 2 times"


# --- several labels of one item are one output (issue 64, item 1) ------------------------

NOT_INDEPENDENT = (
    "'all' is not allowed: the labels of one item share one truth, so counting each as its "
    "own output makes the intervals too narrow"
)


def test_all_is_refused_saying_why_before_anything_is_read(tmp_path):
    """An item's human label counted once per judge label narrows every interval: no rule
    counts labels one by one, for a file (refused before it is read), a frame or counts."""
    judges = f"--judges: {NOT_INDEPENDENT}; use --judges majority; a later version will model "
    judges += "several judges"
    annotators = f"--annotators: {NOT_INDEPENDENT}; use --annotators majority"
    frame = items_frame(THREE_ANNOTATORS)
    counts = pd.DataFrame([("A", 1, 1, 0, 0, 0, 0, 0, 0)], columns=["system", *COUNT_COLUMNS])
    for call in (
        lambda **rule: read_ratings(tmp_path / "absent.csv", **rule),
        lambda **rule: counts_from_ratings(frame, "f", **rule),
        lambda **rule: counts_table(counts, "f", **rule),
        lambda **rule: ratings_from_frame(frame, **rule),
    ):
        for rule, message in (({"judges": "all"}, judges), ({"annotators": "all"}, annotators)):
            with pytest.raises(SweepError) as caught:
                call(**rule)
            assert str(caught.value) == message
    with pytest.raises(SweepError, match=r"^--judges: 'most' is not allowed; allowed: refuse, "):
        counts_from_ratings(frame, "f", judges="most")


def test_repeated_rows_of_one_item_are_one_output():
    """An export that repeats a row (one item, its labels twice) is not two ratings."""
    rows = [("A", "q1", 1, 1), ("A", "q2", 0, None), ("A", "q1", 1, 1), ("B", "q1", 1, 0)]
    with pytest.raises(SweepError, match=r"^f: row 3, column human: system 'A', item 'q1' has 2"):
        counts_from_ratings(items_frame(rows), "f")
    rules = {"annotators": "majority", "judges": "majority"}
    counts, reading = counts_from_ratings(items_frame(rows), "f", **rules)
    # A: q1 one paired rating (1, 1), q2 one human rating; B: q1 paired (1, 0).
    expected = expected_counts({"A": (2, 1, 1, 1, 1, 0, 0, 0), "B": (1, 1, 1, 1, 0, 0, 0, 0)})
    pd.testing.assert_frame_equal(counts, expected)
    assert (reading.outputs, reading.several_human, reading.several_metric) == (3, 1, 1)


# --- rows without a label (issue 64, item 10) --------------------------------------------

# A judge that returned no pick, an item nobody rated, a system none of whose rows is rated.
UNRATED = [
    ("A", "q1", 1, 1), ("A", "q2", None, None), ("C", "q1", None, None), ("A", "q3", 0, None),
    ("B", "q1", 1, None), ("B", "q1", None, 0), ("B", "q2", None, None), ("B", "q2", None, None),
    ("A", "q2", None, 1), ("B", "q3", None, 1), ("A", "q4", None, None),
]  # fmt: skip


def test_rows_without_a_label_are_skipped_and_counted(tmp_path):
    path = tmp_path / "unrated.csv"
    items_frame(UNRATED).to_csv(path, index=False)
    counts, reading = read_ratings(path)
    # A: q1 paired (1, 1), q2 metric only (its unlabelled row skipped), q3 human only, q4 not
    # an output; B: q1 paired (1, 0) on two rows, q2 not an output, q3 metric only; C: none.
    expected = expected_counts({"A": (2, 1, 1, 1, 1, 0, 1, 1), "B": (1, 1, 1, 1, 0, 0, 1, 1)})
    pd.testing.assert_frame_equal(counts, expected)
    assert (reading.rows, reading.outputs, reading.systems) == (11, 5, 2)
    assert (reading.unlabelled, reading.unlabelled_items) == (5, 3)  # A q4, B q2, C q1
    assert reading.unrated_systems == ("C",)
    assert reading.summary() == (
        f"read {path}: 11 rows, 5 (system, item) outputs of 2 systems; 3 human and 4 metric "
        "labels; 5 rows had no label and were skipped (3 items with no label at all)"
    )
    assert reading.notes() == ["not compared: system 'C' (none of its rows has a label)"]
    read = reading.as_dict()  # what --json's read and --out's metadata carry
    assert (read["unlabelled"], read["unlabelled_items"], read["unrated_systems"]) == (5, 3, ("C",))
    # Without items each unlabelled row is skipped alone; one of them, said in the singular.
    flat = counts_from_ratings(items_frame(UNRATED[:4]).drop(columns="item"), "f").reading
    assert (flat.outputs, flat.unlabelled, flat.unlabelled_items) == (2, 2, 0)
    assert flat.summary().endswith("; 2 rows had no label and were skipped")
    one = counts_from_ratings(items_frame(UNRATED[:2]), "f").reading
    assert one.summary().endswith(
        "; 1 row had no label and was skipped (1 item with no label at all)"
    )
    assert one.notes() == []
    # Errors still name the file's rows: row 9 gives A's q2 its first label, row 12 a second.
    path.write_text(path.read_text() + "A,q2,,0\n")
    assert refusal(path) == (
        f"{path}: row 12, column metric: system 'A', item 'q2' has 2 metric labels (1 × 1, "
        "1 × 0); say how to combine several metric labels of one item: --judges majority"
    )


# --- a DataFrame is read by the file's rule (issue 64, item 13) --------------------------


@pytest.mark.parametrize(
    "columns, message",
    [
        (
            ["system", "item", "humna", "metric"],
            f"no column 'human'; {RATINGS_LAYOUT}; columns found: 'system', 'item', 'humna', "
            "'metric'",
        ),
        (
            ["system", "item", "humna", "metrc"],
            "neither a ratings nor a counts table; columns found: 'system', 'item', 'humna', "
            f"'metrc'; {RATINGS_LAYOUT}; {COUNTS_LAYOUT}",
        ),
        (
            ["system", "item", "human", "n_phi"],
            f"both label and count columns ('human', 'n_phi'); {RATINGS_LAYOUT}; {COUNTS_LAYOUT}",
        ),
        (
            ["sys", "item", "human", "metric"],
            "no column 'system'; columns found: 'sys', 'item', 'human', 'metric'",
        ),
    ],
)
def test_a_frame_is_refused_as_its_file_would_be(tmp_path, columns, message):
    frame = ratings_frame().drop(columns="annotator").set_axis(columns, axis=1)
    path = tmp_path / "ratings.csv"
    frame.to_csv(path, index=False)
    assert refusal(path) == f"{path}: {message}"
    with pytest.raises(SweepError) as caught:
        ratings_from_frame(frame)
    assert str(caught.value) == f"ratings: {message}"


def test_a_frame_takes_the_files_layout(tmp_path):
    pd.testing.assert_frame_equal(
        ratings_from_frame(ratings_frame()).counts, expected_counts(EXPECTED)
    )
    counts = read_ratings(EXAMPLE).counts
    by_frame = ratings_from_frame(counts.drop(columns="n_outputs"))
    pd.testing.assert_frame_equal(by_frame.counts, counts)
    assert (by_frame.reading.layout, by_frame.reading.source) == ("counts", "counts")
    with pytest.raises(SweepError, match=r"^counts: no column 'n_tn'; a counts table has"):
        ratings_from_frame(counts.drop(columns=["n_outputs", "n_tn"]))
