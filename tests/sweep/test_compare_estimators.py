"""``sweep compare --estimator``: each estimator on the same real counts, side by side."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.compare import compare
from binmetric_sweep.sweep.compare.ratings import read_ratings
from binmetric_sweep.sweep.compare.report import comparison_text

from .helpers import REPO

EXAMPLE = REPO / "examples" / "ratings.csv"
ARENA = REPO / "examples" / "arena_judge_gpt-4o-mini.csv"
CALIBRATION = REPO / "examples" / "arena_judge_gpt-4o-mini_calibration.csv"


def test_a_classical_estimator_per_system_and_its_z_tests():
    result = compare(EXAMPLE, estimator="human_only", level=0.9)
    systems = result.systems
    assert set(systems["estimator"]) == {"human_only"} and systems["applicable"].all()
    counts = pd.read_csv(EXAMPLE).groupby("system")["human"].agg(["sum", "count"])
    expected = (counts["sum"] / counts["count"]).loc[systems["system"]].to_numpy()
    np.testing.assert_allclose(systems["estimate"], expected, rtol=1e-12)
    assert systems["estimate"].is_monotonic_decreasing  # ranked by the estimator's estimate
    pairs = result.pairs
    assert len(pairs) == 6 and set(pairs["estimator"]) == {"human_only"}
    for row in pairs.itertuples():
        a, b = (systems.set_index("system").loc[x] for x in (row.a, row.b))
        z = (a.estimate - b.estimate) / np.hypot(a.se, b.se)
        assert row.diff_mean == pytest.approx(a.estimate - b.estimate, abs=1e-15)
        assert row.p_value == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-10)
        assert row.significant == (row.p_value <= 0.05)
        assert row.eps == pytest.approx(stats.norm.ppf(0.975) * row.se_diff, rel=1e-12)
    assert result.settings["estimator"] == "human_only" and result.p_better is None


def test_rogan_gladen_pools_the_rates_under_shared_rates():
    counts = pd.read_csv(EXAMPLE)
    pooled = compare(EXAMPLE, estimator="rogan_gladen", rates="shared").systems
    alone = compare(EXAMPLE, estimator="rogan_gladen").systems
    paired = counts.dropna(subset=["human", "metric"])
    rho = ((paired.human == 1) & (paired.metric == 1)).sum() / (paired.human == 1).sum()
    eta = ((paired.human == 0) & (paired.metric == 0)).sum() / (paired.human == 0).sum()
    for name, group in counts[counts.human.isna()].groupby("system"):
        p = group.metric.mean()
        row = pooled.set_index("system").loc[name]
        # Lee et al.'s smoothed plug-in: the point estimate is the plain one, clipped to [0, 1].
        assert row.estimate == pytest.approx(np.clip((p + eta - 1) / (rho + eta - 1), 0, 1))
    assert not np.allclose(pooled.set_index("system").estimate, alone.set_index("system").estimate)


def drawn_titles(monkeypatch) -> list[str]:
    """The titles of the comparison figures drawn from now on (one line each)."""
    from binmetric_sweep.sweep.compare import figure

    titles, draw = [], figure.comparison_figure

    def recording(*args, **kwargs):
        fig = draw(*args, **kwargs)
        titles.append(fig.get_suptitle().replace("\n", " "))
        return fig

    monkeypatch.setattr(figure, "comparison_figure", recording)
    return titles


def test_every_estimator_side_by_side(tmp_path, capsys, monkeypatch):
    result = compare(EXAMPLE, estimator="all")
    systems, pairs = result.systems, result.pairs
    assert list(dict.fromkeys(systems["estimator"])) == [
        "bayes", "human_only", "judge_only", "rogan_gladen", "ppi", "ppi_pp",
    ]  # fmt: skip
    bayes = compare(EXAMPLE)
    mine = systems[systems["estimator"] == "bayes"]
    np.testing.assert_array_equal(mine["estimate"], bayes.systems["alpha_mean"])
    # The rate columns the posterior's table has, in every estimator's rows.
    for column in ("rho_mean", "eta_mean"):
        np.testing.assert_array_equal(mine[column], bayes.systems[column])
        by_system = systems.groupby("system")[column]
        assert (by_system.nunique() == 1).all() and systems[column].notna().all()
    np.testing.assert_array_equal(
        pairs[pairs.estimator == "bayes"]["p_a_better"], bayes.pairs["p_a_better"]
    )
    assert len(pairs) == 6 * 6 and result.settings["estimator"] == "all"
    assert pairs.loc[pairs.estimator == "bayes", "p_value"].isna().all()
    assert pairs.loc[pairs.estimator != "bayes", "p_a_better"].isna().all()
    text = comparison_text(result)
    assert "ppi_pp" in text and "bayes: " in text and "0.7" in text
    # The same in --json and --out, an estimator field and column.
    out, fig = tmp_path / "out", tmp_path / "all.png"
    titles = drawn_titles(monkeypatch)
    argv = ["compare", str(ARENA), "--estimator", "all", "--json", "--out", str(out)]
    assert main([*argv, "-o", str(fig)]) == 0
    answer = json.loads(capsys.readouterr().out)
    # -o draws every estimator's intervals, the title naming the file and what is drawn.
    assert fig.stat().st_size > 10_000 and len(titles) == 1
    assert titles[0].startswith(f"{ARENA.name} — 6 estimators' 95 % intervals")
    assert {s["estimator"] for s in answer["systems"]} == set(systems["estimator"])
    assert len(answer["pairs"]) == 6 * 3 and answer["settings"]["estimator"] == "all"
    assert all({"rho_mean", "eta_mean"} <= set(s) for s in answer["systems"])
    assert all(s["rho_mean"] is not None for s in answer["systems"])
    # A pair an estimator cannot test (no metric-only ratings here) is neither significant
    # nor not: null, as its p-value; a tested pair true or false.
    for pair in answer["pairs"]:
        untested = pair["estimator"] in ("judge_only", "rogan_gladen")
        assert (pair["significant"] is None) == untested, pair
        assert pair["estimator"] == "bayes" or (pair["p_value"] is None) == untested, pair
    table = pq.read_table(out / "systems.parquet").to_pandas()
    assert len(table) == 6 * 3 and "estimator" in table.columns
    assert table[["rho_mean", "eta_mean"]].notna().all().all()
    written = pq.read_table(out / "pairs.parquet")
    assert written.schema.field("significant").type == pa.bool_()
    flags = written.to_pandas()
    assert str(flags["significant"].dtype) == "boolean"
    untested = flags["estimator"].isin(["judge_only", "rogan_gladen"])
    assert flags.loc[untested, "significant"].isna().all()
    assert flags.loc[~untested, "significant"].notna().all()
    text = comparison_text(compare(ARENA, estimator="judge_only"))
    assert "judge_only: no pair tested (each has a system it does not apply to)" in text
    assert text.count(": not tested") == 3 and "0 of 3" not in text


def test_the_real_arena_file_reads_as_it_is(capsys, tmp_path, monkeypatch):
    """Extra columns are ignored and said once; an estimator that does not apply prints the
    reason, not a number."""
    assert main(["compare", str(ARENA), "--estimator", "all", "--level", "0.9"]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "sweep: ignored columns: 'claude_position' (read: system, item, human, metric)\n"
    )
    assert "n/a (1): no metric-only ratings" in captured.out
    assert "877 rows, 877 (system, item) outputs of 3 systems" in captured.out
    titles, fig = drawn_titles(monkeypatch), tmp_path / "judge.png"
    assert main(["compare", str(ARENA), "--estimator", "judge_only", "-o", str(fig)]) == 0
    text = capsys.readouterr().out
    assert text.count("does not apply: no metric-only ratings") == 3
    # Drawn though it applies to no system: no interval, a grey matrix, the title saying so.
    assert fig.is_file() and f"wrote {fig}" in text
    assert titles == [
        f"{ARENA.name} — judge_only's 95 % intervals; rates: per-system; matrix: judge_only's "
        r"z-test, Φ(z) of row − col; $\gamma$ = 0.05"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--estimator", "ppii"],
            "--estimator: 'ppii' is not an estimator; allowed: bayes, "
            "human_only, judge_only, rogan_gladen, ppi, ppi_pp, all",
        ),
        (["--estimator", "all", "--cost-metric", "0.01"], "--cost-metric: plans the posterior"),
    ],
)
def test_bad_estimator_options(argv, message, tmp_path, capsys):
    assert main(["compare", str(EXAMPLE), *argv, "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sweep: error: ") and "\n" not in err and message in err, err
    assert not (tmp_path / "never").exists()


def test_the_shipped_calibration_split_is_the_script_s_and_puts_the_judge_to_work():
    """examples/arena_judge_gpt-4o-mini_calibration.csv is what scripts/calibration_split.py
    makes of the Arena file, byte for byte: per system ⌈10 %⌉ of the battles keep their human
    label (paired), the rest the judge's only; so judge-only and Rogan–Gladen apply."""
    import importlib.util
    import io

    spec = importlib.util.spec_from_file_location(
        "calibration_split", REPO / "scripts" / "calibration_split.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    fields, rows = script.read_rows(ARENA)
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows(script.calibration_split(rows, 0.1, 64))
    assert CALIBRATION.read_bytes() == buffer.getvalue().encode()

    original = pd.read_csv(ARENA).groupby("system").size()
    counts = read_ratings(CALIBRATION).counts.set_index("system")
    np.testing.assert_array_equal(counts["n_phi"], np.ceil(0.1 * original[counts.index]))
    assert (counts["n_rho_eta"] == counts["n_phi"]).all()  # every kept battle has a pick
    # The judge's battle without a pick lost its human label, so it is gone.
    dropped = (original[counts.index] - counts["n_outputs"]).to_dict()
    assert dropped == {
        "vs-gemini-2.5-flash": 0, "vs-gemini-2.5-pro": 1, "vs-qwen3-235b-a22b-no-thinking": 0,
    }  # fmt: skip
    assert (counts["n_m"] == counts["n_outputs"] - counts["n_phi"]).all()
    for name in ("judge_only", "rogan_gladen"):
        assert compare(CALIBRATION, estimator=name).systems["applicable"].all()
