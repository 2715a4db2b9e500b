"""``sweep compare --classes``: K-class ratings (preferences with ties, scales, several judges).

Reading both layouts into the categorical counts (by hand on small files), every refusal
through the command (one line, exit 2, nothing written), the classical estimators at K = 2
bit-equal to binary compare's, and the posterior against the exact Dirichlet (no judge-only
items: π's posterior is Dir(1 + h)), with its determinism by the seed. NUTS runs small
(2 chains × (200 + 400)) and twice compiled in all.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from binmetric_sweep import sweep
from binmetric_sweep.kernels.nuts import NUTSSettings
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.compare.categorical_ratings import read_classes
from binmetric_sweep.sweep.compare.classes import Classes
from binmetric_sweep.sweep.compare.report import comparison_json, comparison_text
from binmetric_sweep.sweep.errors import SweepError

from .helpers import REPO

#: The tests' sampler: small, and one program for every posterior call here.
SMALL = NUTSSettings(chains=2, warmup=200, samples=400)
PREFERENCE = "worse,tie,better"


def _write(tmp_path: pathlib.Path, text: str, name: str = "r.csv") -> pathlib.Path:
    path = tmp_path / name
    path.write_text(text)
    return path


#: Two systems, two judges, items: a paired output over two rows, a human-only and a
#: judge-only one, an unlabelled row; y's second item is rated by a human twice (alike).
RATINGS = """system,item,human,judge_a,judge_b,note
x,1,better,,,n
x,1,,tie,better,n
x,2,tie,,,n
x,3,,worse,worse,n
x,4,,,,n
y,1,worse,worse,tie,n
y,2,tie,tie,tie,n
y,2,tie,,,n
"""


# --- classes -------------------------------------------------------------------------------


def test_classes_name_their_values():
    assert Classes.of("1,2,3,4,5").values == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert Classes.of("1,2,3,4,5").numeric
    assert Classes.of("worse, tie ,better").values == (0.0, 0.5, 1.0)
    assert Classes.of("worse, tie ,better").names == ("worse", "tie", "better")
    assert Classes.of("B=0,tie=0.5,A=1").values == (0.0, 0.5, 1.0)
    assert Classes.of("lo=-1,hi=3").values == (-1.0, 3.0)
    assert Classes.of("a,b,c").verdict_names(2)[:4] == ("a+a", "a+b", "a+c", "b+a")


@pytest.mark.parametrize(
    "given",
    ["one", "a,a", "3,2,1", "a=0,b=0", "a=0,b", "a=0,b=inf", "a=0,b=x", "a,,b", "a+b,c"],
)
def test_bad_classes_exit_2_naming_the_flag(tmp_path, capsys, given):
    path = _write(tmp_path, RATINGS)
    assert main(["compare", str(path), "--classes", given]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("sweep: error: --classes: ")


# --- reading ---------------------------------------------------------------------------------


def test_ratings_by_hand(tmp_path):
    data = read_classes(_write(tmp_path, RATINGS), PREFERENCE, annotators="majority")
    c = data.counts
    assert data.systems == ("x", "y") and data.layout.judges == 2
    assert data.reading.judge_columns == ("judge_a", "judge_b")
    w, t, b = 0, 1, 2
    verdict = lambda a, z: 3 * a + z  # noqa: E731 - row-major, judge 1 first
    human = np.zeros((2, 3))
    human[0, [b, t]] = 1
    human[1, [w, t]] = 1
    np.testing.assert_array_equal(c.human, human)
    paired = np.zeros((2, 3, 9))
    paired[0, b, verdict(t, b)] = 1
    paired[1, w, verdict(w, t)] = 1
    paired[1, t, verdict(t, t)] = 1
    np.testing.assert_array_equal(c.paired, paired)
    judged = np.zeros((2, 9))
    judged[0, verdict(w, w)] = 1
    np.testing.assert_array_equal(c.judged, judged)
    np.testing.assert_array_equal(data.n_outputs, [3, 2])
    r = data.reading
    assert (r.unlabelled, r.unlabelled_items, r.several_human, r.split_human) == (1, 1, 1, 0)
    assert r.ignored == ("note",)


def test_the_counts_table_reads_as_its_ratings(tmp_path):
    data = read_classes(_write(tmp_path, RATINGS), PREFERENCE, annotators="majority")
    classes = Classes.of(PREFERENCE)
    verdicts = classes.verdict_names(2)
    rows = []
    for s, name in enumerate(data.systems):
        row = {"system": name, "extra": 1}
        row.update({f"h_{k}": data.counts.human[s, i] for i, k in enumerate(classes.names)})
        for i, k in enumerate(classes.names):
            row.update({f"t_{k}_{v}": data.counts.paired[s, i, j] for j, v in enumerate(verdicts)})
        row.update({f"m_{v}": int(data.counts.judged[s, j]) for j, v in enumerate(verdicts)})
        rows.append(row)
    for suffix in ("csv", "parquet"):
        path = tmp_path / f"counts.{suffix}"
        frame = pd.DataFrame(rows)
        frame.to_csv(path, index=False) if suffix == "csv" else frame.to_parquet(path)
        table = read_classes(path, PREFERENCE)
        assert table.systems == data.systems and table.layout == data.layout
        for a, b in zip(table.counts, data.counts, strict=True):
            np.testing.assert_array_equal(a, b)
        assert table.reading.ignored == ("extra",)
        np.testing.assert_array_equal(table.n_outputs, [3, 2])
    assert "t_tie_worse+better" in rows[0]


def test_numeric_classes_match_numbers(tmp_path):
    path = _write(tmp_path, "system,human,metric\na,1.0,2\na, 3 ,\nb,,5\nb,2,1.00\n")
    data = read_classes(path, "1,2,3,4,5")
    np.testing.assert_array_equal(data.counts.human, [[1, 0, 1, 0, 0], [0, 1, 0, 0, 0]])
    assert data.counts.paired[0, 0, 1] == 1 and data.counts.paired[1, 1, 0] == 1
    np.testing.assert_array_equal(data.counts.judged, [[0, 0, 0, 0, 0], [0, 0, 0, 0, 1]])
    frame = pd.DataFrame({"system": ["a", "b"], "human": [1, 4], "judge": [2.0, np.nan]})
    typed = read_classes(frame, "1,2,3,4,5")
    np.testing.assert_array_equal(typed.counts.human, [[1, 0, 0, 0, 0], [0, 0, 0, 1, 0]])


@pytest.mark.parametrize(
    "text, args, message",
    [
        (
            "system,human,judge\na,best,worse\n",
            [],
            "r.csv: row 1, column human: 'best' is not a class; "
            "allowed: worse, tie, better or empty",
        ),
        (
            "system,human,judge\na,tie,worse\na,tie,NA\n",
            [],
            "row 2, column judge: 'NA' is not a class",
        ),
        (
            "system,human,judge_a,judge_b\na,tie,worse,\n",
            [],
            "row 1, column judge_b: system 'a' has no judge_b label but a judge_a one",
        ),
        (
            "system,human,metric,judge\na,tie,worse,tie\n",
            [],
            "both a metric column and judge columns",
        ),
        ("system,human,score\na,tie,worse\n", [], "no judge column"),
        (
            "system,human,score\na,tie,worse\n",
            ["--judge-columns", "rating"],
            "r.csv has no column 'rating'; columns found",
        ),
        (
            "system,human,score\na,tie,worse\n",
            ["--judge-columns", "score,score"],
            "--judge-columns: 'score' is named twice",
        ),
        (
            "system,item,human,judge\na,1,tie,worse\na,1,better,\n",
            [],
            "row 2, column human: system 'a', item '1' has 2 labels (1 × tie, 1 × better); "
            "say how to combine several labels of one item: --annotators majority",
        ),
        (
            "system,item,human,judge\na,1,tie,worse\na,1,better,\n",
            ["--annotators", "majority"],
            "has 2 labels that tie (1 × tie, 1 × better): no majority",
        ),
        (
            "system,item,human,judge\na,1,tie,worse\na,1,,tie\n",
            [],
            "row 2, column judge: system 'a', item '1' has 2 labels",
        ),
        (
            "system,human,judge\na,tie,worse\n",
            [],
            "a comparison needs two systems or more; it has one ('a')",
        ),
        ("system,human,judge\n,tie,worse\n", [], "row 1, column system: empty"),
        ("system,h_worse,h_tie,h_better\na,1,2,3\n", [], "no judge-only columns m_<verdict>"),
    ],
)
def test_bad_ratings_exit_2_with_one_line(tmp_path, capsys, text, args, message):
    path = _write(tmp_path, text)
    out_dir = tmp_path / "out"
    argv = ["compare", str(path), "--classes", PREFERENCE, "--out", str(out_dir), *args]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err, err
    assert not out_dir.exists()


def _counts_row(**changes) -> dict:
    classes = Classes.of("lo,hi")
    row = {"system": "a", "h_lo": 5, "h_hi": 4, "m_lo": 10, "m_hi": 3}
    row.update({f"t_{k}_{v}": 1 for k in classes.names for v in classes.names})
    row.update(changes)
    return row


@pytest.mark.parametrize(
    "change, message",
    [
        ({"h_lo": -1}, "row 2, column h_lo: '-1' is not a count; allowed: a whole number ≥ 0"),
        ({"m_hi": 2.5}, "row 2, column m_hi: '2.5' is not a count"),
        ({"t_hi_lo": ""}, "row 2, column t_hi_lo: empty"),
        (
            {"t_hi_lo": 4},
            "row 2, column h_hi: the paired ratings of class hi (t_hi_*, 5) exceed h_hi (4)",
        ),
        (
            {
                "h_lo": 0,
                "h_hi": 0,
                "m_lo": 0,
                "m_hi": 0,
                "t_lo_lo": 0,
                "t_lo_hi": 0,
                "t_hi_lo": 0,
                "t_hi_hi": 0,
            },
            "row 2: system 'b' has no ratings",
        ),
        ({"system": "a"}, "row 2, column system: 'a' repeats row 1"),
    ],
)
def test_bad_counts_tables(tmp_path, capsys, change, message):
    path = tmp_path / "c.csv"
    pd.DataFrame([_counts_row(), _counts_row(**{"system": "b", **change})]).to_csv(
        path, index=False
    )
    assert main(["compare", str(path), "--classes", "lo,hi"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err, err


def test_a_counts_table_missing_a_column(tmp_path, capsys):
    path = tmp_path / "c.csv"
    row = _counts_row()
    del row["t_lo_hi"]
    pd.DataFrame([row, {**row, "system": "b"}]).to_csv(path, index=False)
    assert main(["compare", str(path), "--classes", "lo,hi"]) == 2
    assert "no column 't_lo_hi'; a K-class counts table has columns" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--rates", "shared"], "--rates: shared is not built for K classes"),
        (["--cost-metric", "0.1"], "--cost-metric: plans binary ratings; not with --classes"),
        (["-o", "fig.png"], "-o: the figure draws binary α; not with --classes"),
        (["--judge-model", "both"], "--judge-model: invalid choice"),
    ],
)
def test_options_k_classes_do_not_take(tmp_path, capsys, args, message):
    path = _write(tmp_path, RATINGS)
    assert main(["compare", str(path), "--classes", PREFERENCE, *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "fig.png").exists()


@pytest.mark.parametrize("flag, value", [("--judge-columns", "a"), ("--judge-model", "joint")])
def test_judge_options_need_classes(tmp_path, capsys, flag, value):
    path = _write(tmp_path, "system,human,metric\na,1,0\nb,0,1\n")
    assert main(["compare", str(path), flag, value]) == 2
    assert f"sweep: error: {flag}: needs --classes" in capsys.readouterr().err


# --- estimators ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["human_only", "judge_only", "rogan_gladen", "ppi", "ppi_pp"])
def test_two_classes_give_binary_compares_estimates_to_the_bit(name):
    """K = 2 (classes 0, 1) with one judge, the ``metric`` column: each classical estimator's
    systems and pairs are binary compare's on the same file."""
    path = REPO / "examples" / "arena_judge_gpt-4o-mini_calibration.csv"
    binary = sweep.compare(path, estimator=name)
    classes = sweep.compare(path, estimator=name, classes="0,1")
    numbers = ["estimate", "se", "ci_low", "ci_high", "n_human", "n_paired", "n_metric"]
    a = binary.systems.set_index("system")[[*numbers, "applicable", "reason"]]
    b = classes.systems.set_index("system")[[*numbers, "applicable", "reason"]]
    pd.testing.assert_frame_equal(a, b.loc[a.index], check_exact=True)
    keys = ["a", "b", "diff_mean", "se_diff", "p_value", "significant", "eps"]
    pd.testing.assert_frame_equal(binary.pairs[keys], classes.pairs[keys], check_exact=True)


def test_several_judges_in_every_estimator_and_the_json(tmp_path, capsys):
    path = REPO / "examples" / "preferences.csv"
    argv = ["compare", str(path), "--classes", PREFERENCE, "--estimator", "ppi_pp", "--json"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out.splitlines()[0])
    assert [s["system"] for s in result["systems"]][:2] == ["claude-v1", "gpt-4"]
    assert result["settings"]["classes"] == ["worse", "tie", "better"]
    assert result["settings"]["judge_columns"] == ["judge_gpt4", "judge_gpt35"]
    assert result["read"]["judges_rated"] == 2 and len(result["pairs"]) == 10
    assert "ignored columns: 'side'" in err
    meta = pq.read_table(tmp_path / "out" / "systems.parquet").schema.metadata
    assert json.loads(meta[b"binmetric_sweep.settings"])["values"] == [0.0, 0.5, 1.0]
    rg = sweep.compare(path, classes=PREFERENCE, estimator="rogan_gladen")
    assert not rg.systems["applicable"].any()  # L = 9 verdicts ≠ K = 3 classes
    one = sweep.compare(
        path, classes=PREFERENCE, estimator="rogan_gladen", judge_columns="judge_gpt4"
    )
    assert one.systems["applicable"].all()
    assert "every estimator" not in comparison_text(one) and "θ" in comparison_text(one)


# --- the posterior ---------------------------------------------------------------------------


def _no_judge_only(seed: int = 3) -> pd.DataFrame:
    """Two systems of 1–3 ratings, every one rated by the human and the judge."""
    rng = np.random.default_rng(seed)
    rows = []
    for system, shares, n in (("s1", [0.2, 0.5, 0.3], 60), ("s2", [0.4, 0.4, 0.2], 45)):
        human = rng.choice(3, size=n, p=shares) + 1
        judge = np.clip(human + rng.integers(-1, 2, size=n), 1, 3)
        rows += [
            {"system": system, "human": str(h), "judge": str(j)}
            for h, j in zip(human, judge, strict=True)
        ]
    return pd.DataFrame(rows)


def test_the_posterior_is_the_exact_dirichlet_without_judge_only_items():
    """With N_M = 0, π's posterior is Dir(1 + h): θ = vᵀπ's mean and SD in closed form,
    which the NUTS draws must meet within their Monte Carlo error (5 MCSEs); the same seed
    gives the same numbers in any order of the rows, another seed other numbers."""
    frame = _no_judge_only()
    result = sweep.compare(frame, classes="1,2,3", nuts=SMALL, seed=7)
    v = np.arange(1.0, 4.0)
    for system, group in frame.groupby("system"):
        a = 1.0 + np.bincount(group["human"].astype(int) - 1, minlength=3)
        p = a / a.sum()
        mean = v @ p
        sd = np.sqrt((v**2 @ p - mean**2) / (a.sum() + 1))
        row = result.systems.set_index("system").loc[system]
        assert abs(row["theta_mean"] - mean) < 5 * sd / np.sqrt(row["ess"])
        assert abs(row["theta_sd"] - sd) < 5 * sd / np.sqrt(2 * row["ess"]) + 0.02 * sd
        assert row["rhat"] < 1.05 and row["divergences"] == 0
    assert set(result.pairs.columns) >= {"a", "b", "diff_mean", "p_a_better", "eps", "significant"}
    p = result.p_better[0, 1]
    assert result.pairs["p_a_better"].iloc[0] == p and 0.5 < p <= 1.0
    text = comparison_text(result)
    assert "theta" in text and "row's θ − column's θ" in text and "2 chains × (200 + 400)" in text
    assert json.loads(comparison_json(result))["settings"]["seed"] == 7
    again = sweep.compare(frame.iloc[::-1], classes="1,2,3", nuts=SMALL, seed=7)
    columns = ["system", "theta_mean", "theta_sd", "ci_low", "ci_high", "rhat", "ess"]
    pd.testing.assert_frame_equal(result.systems[columns], again.systems[columns], check_exact=True)
    other = sweep.compare(frame, classes="1,2,3", nuts=SMALL, seed=8)
    assert not np.array_equal(other.systems["theta_mean"], result.systems["theta_mean"])


def test_the_example_file_reads_as_documented():
    data = read_classes(REPO / "examples" / "preferences.csv", PREFERENCE)
    assert data.systems == ("gpt-4", "claude-v1", "gpt-3.5-turbo", "vicuna-13b", "koala-13b")
    np.testing.assert_array_equal(data.counts.human.sum(axis=1), 200)
    np.testing.assert_array_equal(data.counts.paired.sum(axis=(1, 2)), 200)
    np.testing.assert_array_equal(data.counts.judged.sum(axis=1), 800)
    assert (REPO / "examples" / "preferences.csv").stat().st_size < 300_000


def test_a_bad_option_is_refused_before_the_file_is_read(tmp_path):
    with pytest.raises(SweepError, match="^--classes: "):
        sweep.compare(tmp_path / "missing.csv", classes="a")


@pytest.mark.skipif(
    not (REPO.parent / "shared" / "reference" / "arena_battles.csv").exists(),
    reason="the example's source (../shared/reference/arena_battles.csv) is not here",
)
def test_the_example_file_is_the_scripts_derivation(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "make_preference_example", REPO / "scripts" / "make_preference_example.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(script, "TARGET", tmp_path / "preferences.csv")
    monkeypatch.setattr(script, "ROOT", tmp_path)
    monkeypatch.setattr("sys.argv", ["make_preference_example.py"])
    script.main()
    assert (tmp_path / "preferences.csv").read_bytes() == (
        REPO / "examples" / "preferences.csv"
    ).read_bytes()
