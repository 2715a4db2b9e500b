"""α, ρ and η read off a pilot file (``sweep plan --pilot``, ``sweep.plan(pilot=)``): the Beta
posterior means of its counts, every refusal one line naming the file and the column."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pandas as pd
import pytest

from binmetric_sweep import sweep
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.plan import Pilot, read_pilot

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "pilot.csv"
CHUNK = 64  # the exact fits' chunk on CPU, as tests/sweep/test_plan.py uses


def example_pilot() -> pd.DataFrame:
    """examples/pilot.csv: 120 items of one system drawn from the model (α = 0.6, ρ = 0.85,
    η = 0.75, seed 64), each rated by a human and by the metric."""
    rng = np.random.default_rng(64)
    n = 120
    human = rng.random(n) < 0.6
    metric = np.where(human, rng.random(n) < 0.85, rng.random(n) >= 0.75)
    items = [f"q{i:03d}" for i in range(1, n + 1)]
    return pd.DataFrame({"item": items, "human": human.astype(int), "metric": metric.astype(int)})


def test_the_example_pilot_is_its_generators():
    pd.testing.assert_frame_equal(pd.read_csv(EXAMPLE), example_pilot())


def test_the_rates_are_the_beta_posterior_means_of_the_counts():
    frame = example_pilot()
    h, m = frame["human"], frame["metric"]
    pilot = read_pilot(EXAMPLE)
    n_pos, n_tp, n_tn = int(h.sum()), int((h & m).sum()), int(((1 - h) & (1 - m)).sum())
    assert (pilot.n_phi, pilot.n_rho_eta, pilot.n_m) == (120, 120, 0)
    assert (pilot.n_pos, pilot.n_pos_paired, pilot.n_tp, pilot.n_tn) == (n_pos, n_pos, n_tp, n_tn)
    assert pilot.alpha == pytest.approx((n_pos + 1) / 122)
    assert pilot.rho == pytest.approx((n_tp + 1) / (n_pos + 2))
    assert pilot.eta == pytest.approx((n_tn + 1) / (120 - n_pos + 2))
    a, b = n_tp + 1, n_pos - n_tp + 1  # ρ's Beta
    assert pilot.sd()["rho"] == pytest.approx(np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1))))
    assert pilot.agreement == pytest.approx((n_tp + n_tn) / 120)


def test_human_only_rows_count_toward_alpha_metric_only_rows_are_left_out(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("human,metric\n1,1\n1,0\n0,0\n1,\n0,\n,1\n,0\n,1\n")
    pilot = read_pilot(path)
    assert (pilot.n_phi, pilot.n_pos, pilot.n_rho_eta, pilot.n_m) == (5, 3, 3, 3)
    assert pilot.alpha == pytest.approx(4 / 7) and pilot.rho == pytest.approx(2 / 4)
    assert pilot.eta == pytest.approx(2 / 3)
    assert any("3 metric-only ratings not used" in note for note in pilot.notes())
    assert "3 paired ratings + 2 human-only" in pilot.line()


def test_formats_and_a_system_column(tmp_path):
    frame = example_pilot().assign(system="chatbot-1")
    frame.to_parquet(tmp_path / "p.parquet")
    frame.to_json(tmp_path / "p.jsonl", orient="records", lines=True)
    expected = read_pilot(EXAMPLE)._replace(source="")
    for name in ("p.parquet", "p.jsonl"):
        assert read_pilot(tmp_path / name)._replace(source="") == expected, name


@pytest.mark.parametrize(
    ("text", "name", "needle"),
    [
        ("human,metric\n1,\n0,\n", "p.csv", "no paired ratings"),
        ("human,metric\n1,yes\n0,0\n", "p.csv", "column metric: 'yes' is not a label"),
        ("human,metrc\n1,1\n", "p.csv", "no column 'metric'"),
        ("system,human,metric\na,1,1\nb,0,0\n", "p.csv", "column system holds 2 systems"),
        ("item,human,metric\nq1,1,1\nq1,0,\n", "p.csv", "item 'q1' has several human labels"),
        ("human,metric\n1,1\n", "p.txt", "unknown format '.txt'"),
        ("", "p.csv", "empty"),
    ],
)
def test_a_bad_pilot_is_refused_in_one_line_naming_file_and_field(
    tmp_path, capsys, text, name, needle
):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SweepError, match="^pilot ") as err:
        read_pilot(path)
    assert needle in str(err.value) and str(path) in str(err.value)
    argv = ["plan", "--pilot", str(path), "--eps", "0.05", "--cost-metric", "0.01"]
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith(f"sweep: error: --pilot {path}: ")
    assert needle in out.err and out.err.count("\n") == 1


def test_pilot_with_grid_or_without_rates_is_refused(tmp_path, capsys):
    grid = tmp_path / "g.yaml"
    grid.write_text("- {alpha: 0.6, rho: 0.8, eta: 0.8, eps: 0.1, cost_metric: 0.01}\n")
    assert main(["plan", "--grid", str(grid), "--pilot", str(EXAMPLE)]) == 2
    assert "not both (got --pilot)" in capsys.readouterr().err
    assert main(["plan", "--eps", "0.1", "--cost-metric", "0.01"]) == 2
    assert "--alpha: required (or give --pilot FILE or --grid" in capsys.readouterr().err
    with pytest.raises(SweepError, match=r"^alpha: required \(or give pilot=FILE\)$"):
        sweep.plan(eps=0.1, cost_metric=0.01, replicates=0)


def test_a_plan_from_a_pilot_says_what_it_read_and_what_a_flag_replaced(capsys):
    """One plan (no simulation): the pilot's rates planned with, a flag's replacing its value,
    said in the text and in the JSON; the API plans the same scenario."""
    pilot = read_pilot(EXAMPLE)
    argv = ["plan", "--pilot", str(EXAMPLE), "--eps", "0.1", "--cost-metric", "0.002"]
    assert main([*argv, "--rho", "0.9", "--replicates", "0", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["alpha"], answer["rho"], answer["eta"]) == (pilot.alpha, 0.9, pilot.eta)
    assert answer["pilot"]["rho"] == pilot.rho and answer["pilot"]["n_rho_eta"] == 120
    api = sweep.plan(
        rho=0.9, eps=0.1, cost_metric=0.002, pilot=EXAMPLE, replicates=0, chunk_size=CHUNK
    )
    assert isinstance(api.pilot, Pilot) and (api.n_phi, api.n_m) == (answer["n_phi"], answer["n_m"])
    first, second = api.lines()[:2]
    assert first.startswith(f"pilot {EXAMPLE}: 120 paired ratings (agreement ")
    assert f"α = {pilot.alpha:.3f} ± " in first and "(posterior means ± SD" in first
    assert first.endswith("; ρ = 0.9 given, used instead") and "η = 0.9" not in first
    assert second.startswith("plan per system: ")


def test_the_estimators_table_from_a_pilot_says_what_it_read(capsys):
    """A classical estimator's table (no JAX, nothing simulated): the pilot's line above it,
    and in the JSON each row with the pilot."""
    argv = ["plan", "--pilot", str(EXAMPLE), "--eps", "0.05", "--cost-metric", "0.002"]
    argv += ["--estimator", "human_only", "--replicates", "0"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    pilot = read_pilot(EXAMPLE)
    assert lines[0] == pilot.line() and lines[1].startswith(
        f"plans per system for α = {pilot.alpha:g}"
    )
    assert main([*argv, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["estimator"] == "human_only" and row["pilot"] == pilot.as_dict()
