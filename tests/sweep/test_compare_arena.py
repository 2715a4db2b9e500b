"""``sweep compare`` on a battles file (sweep/compare/arena.py, arena_report.py, the CLI).

A small simulated arena (4 systems of clearly separated strengths, 400 battles, about half
with a human verdict, one judge with a position bias) is fitted once by every method at
small NUTS settings (``--nuts``; the CLI's default stays 4 × (500 + 1000)), and the CLI
once more with bayes alone: the same seed gives the same numbers. Bad input is refused
before any sampling, so those checks take no NUTS time.
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from binmetric_sweep.kernels.arena.heterogeneity import judge_heterogeneity
from binmetric_sweep.kernels.arena.posterior import SamplerSettings
from binmetric_sweep.kernels.arena.ppr import ppr_win_rates, rank_sets
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.compare import arena
from binmetric_sweep.sweep.compare.arena import (
    ArenaOptions,
    arena_comparison,
    compare_battles,
)
from binmetric_sweep.sweep.compare.arena_report import arena_json, arena_text, draw_arena
from binmetric_sweep.sweep.compare.battles import battles_from_frame, read_battles

from .helpers import REPO

#: Small enough for a test (a compile and seconds of sampling per fit).
SMALL = SamplerSettings(chains=2, warmup=300, samples=300)
SMALL_FLAG = "2,300,300"
STRENGTHS = (1.5, 0.5, -0.5, -1.5)
SYSTEMS = tuple(f"sys{i}" for i in range(len(STRENGTHS)))
WORDS = np.array(["model_b", "tie", "model_a"], dtype=object)  # classes 0, 1, 2

#: The tables' columns, written out here: a change to them is a change to the docs.
LEADERBOARD = [
    "method",
    "judge",
    "rank",
    "system",
    "battles",
    "strength_mean",
    "strength_low",
    "strength_high",
    "win_rate_mean",
    "win_rate_low",
    "win_rate_high",
    "rank_median",
    "rank_low",
    "rank_high",
    "p_rank1",
    "rank_set_low",
    "rank_set_high",
    "ppr_theta",
    "ppr_se",
    "ppr_low",
    "ppr_high",
    "ppr_lambda",
]
PAIRS = ["method", "judge", "system_i", "system_j", "p_better"]
JUDGES = ["method", "judge", "measure", "truth", "verdict", "mean", "ci_low", "ci_high"]
HEALTH = ["method", "judge", "chains", "warmup", "samples", "rhat_max", "ess_min", "divergences"]
NEXT = [
    "method",
    "judge",
    "order",
    "system_i",
    "system_j",
    "k",
    "reduction",
    "reduction_se",
    "expected_width",
    "current_width",
    "ess",
    "trusted",
]
HETEROGENEITY = ["judge", "system", "battles", "statistic", "df", "p_value", "p_holm", "differs"]


def simulated_arena(seed=0, n=400, human_share=0.5, nu=0.4, bias=0.25) -> pd.DataFrame:
    """Battles drawn from Bradley–Terry–Davidson at :data:`STRENGTHS`; the judge is right
    80 % of the time, else uniform, and says A (side shown first) on a further ``bias``."""
    rng = np.random.default_rng(seed)
    s, k = np.array(STRENGTHS), len(STRENGTHS)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    d = s[a] - s[b]
    p = np.stack([np.exp(-d / 2), np.full(n, nu), np.exp(d / 2)], axis=1)
    p /= p.sum(axis=1, keepdims=True)
    truth = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    judge = np.where(rng.random(n) < 0.8, truth, rng.integers(0, 3, n))
    judge = np.where(rng.random(n) < bias, 2, judge)
    return pd.DataFrame(
        {
            "model_a": np.array(SYSTEMS)[a],
            "model_b": np.array(SYSTEMS)[b],
            "human": np.where(rng.random(n) < human_share, WORDS[truth], ""),
            "judge": WORDS[judge],
        }
    )


def run_cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["compare", *map(str, argv)])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def battles_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("arena") / "battles.csv"
    simulated_arena().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def every_method(battles_file):
    return compare_battles(battles_file, ArenaOptions.of(estimator="all", sampler=SMALL))


@pytest.fixture(scope="module")
def cli_bayes(battles_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "tables"
    figure = out.parent / "leaderboard.png"
    status, stdout, stderr = run_cli(
        battles_file, "--nuts", SMALL_FLAG, "--json", "--out", out, "-o", figure
    )
    return status, stdout, stderr, out


# --- the methods -----------------------------------------------------------------------


@pytest.mark.slow
def test_every_method_recovers_the_true_order(every_method):
    board = every_method.leaderboard
    fits = board.groupby(["method", "judge"], sort=False)
    assert [k for k, _ in fits] == [
        ("bayes", "judge"),
        ("human_only", ""),
        ("judge_only", "judge"),
        ("ppr", "judge"),
    ]
    for (method, _), rows in fits:
        assert rows["rank"].tolist() == [1, 2, 3, 4]
        truth = rows["system"].map(SYSTEMS.index).to_numpy() + 1
        assert ((rows["rank_set_low"] <= truth) & (truth <= rows["rank_set_high"])).all()
        # judge_only takes the side-biased judge for the truth: its order need not be right
        # (here it swaps sys2 and sys3, inside their rank sets); the others correct for it.
        if method != "judge_only":
            assert tuple(rows["system"]) == SYSTEMS, method
    bayes = board[board["method"] == "bayes"]
    assert bayes["p_rank1"].iloc[0] > 0.9
    assert (bayes["rank_low"] <= bayes["rank_median"]).all()
    assert (bayes["rank_median"] <= bayes["rank_high"]).all()
    assert (bayes["strength_low"] < bayes["strength_mean"]).all()
    assert (bayes["win_rate_mean"] < bayes["win_rate_high"]).all()
    # Each rank set is simultaneous: no narrower than the central interval.
    assert (bayes["rank_set_low"] <= bayes["rank_low"]).all()
    assert (bayes["rank_set_high"] >= bayes["rank_high"]).all()
    assert np.isclose(bayes["strength_mean"].sum(), 0.0, atol=1e-9)  # centred strengths


@pytest.mark.slow
def test_the_methods_read_their_own_battles(every_method, battles_file):
    frame = pd.read_csv(battles_file, keep_default_na=False)
    board = every_method.leaderboard
    played = pd.concat([frame["model_a"], frame["model_b"]]).value_counts()
    with_human = frame[frame["human"] != ""]
    played_human = pd.concat([with_human["model_a"], with_human["model_b"]]).value_counts()
    for method, want in (("bayes", played), ("human_only", played_human), ("ppr", played)):
        rows = board[board["method"] == method].set_index("system")["battles"]
        assert rows.to_dict() == want.to_dict(), method


@pytest.mark.slow
def test_ppr_rows_are_the_kernels(every_method, battles_file):
    battles = read_battles(battles_file)
    want = ppr_win_rates(battles.cells, len(battles.systems), judge=0)
    low, high = rank_sets(want.theta, want.cov, 0.95)
    rows = every_method.leaderboard
    rows = rows[rows["method"] == "ppr"].set_index("system").loc[list(battles.systems)]
    assert np.allclose(rows["ppr_theta"], want.theta, rtol=1e-12)
    assert np.allclose(rows["ppr_se"], np.sqrt(np.diag(want.cov)), rtol=1e-12)
    assert np.allclose(rows["ppr_high"] - rows["ppr_theta"], 1.959964 * rows["ppr_se"], rtol=1e-6)
    assert np.allclose(rows["ppr_lambda"], want.lam)
    assert rows["rank_set_low"].tolist() == low.tolist()
    assert rows["rank_set_high"].tolist() == high.tolist()
    assert rows["strength_mean"].isna().all() and rows["rank_median"].isna().all()


@pytest.mark.slow
def test_pairs_are_each_fits_p_better(every_method):
    pairs = every_method.pairs
    assert list(pairs.columns) == PAIRS
    assert set(pairs["method"]) == {"bayes", "human_only", "judge_only"}  # ppr has none
    bayes = pairs[pairs["method"] == "bayes"].set_index(["system_i", "system_j"])["p_better"]
    assert len(bayes) == 12
    for i in SYSTEMS:
        for j in SYSTEMS:
            if i < j:  # P(i better) + P(j better) = 1: strengths tie with probability 0
                assert bayes[(i, j)] + bayes[(j, i)] == pytest.approx(1.0)
    assert bayes[("sys0", "sys3")] == 1.0


@pytest.mark.slow
def test_the_judges_confusion_shows_its_position_bias(every_method):
    judges = every_method.judges
    assert list(judges.columns) == JUDGES
    assert set(judges["method"]) == {"bayes"}
    cells = judges[judges["measure"] == "confusion"]
    assert len(cells) == 9
    assert np.allclose(cells.groupby("truth")["mean"].sum(), 1.0)
    assert (cells["ci_low"] <= cells["mean"]).all() and (cells["mean"] <= cells["ci_high"]).all()
    bias = judges[judges["measure"] != "confusion"].set_index("measure")["mean"]
    assert list(bias.index) == [
        "P(says A | tie)",
        "P(says B | tie)",
        "P(says A | B better)",
        "P(says B | A better)",
        "P(says tie | not tie)",
    ]
    cell = cells.set_index(["truth", "verdict"])["mean"]
    assert bias["P(says A | tie)"] == cell[("tie", "A")]
    assert bias["P(says A | B better)"] == cell[("B better", "A")]
    # The simulated judge says A on a further 25 %: A is said far more often when wrong.
    assert bias["P(says A | B better)"] > bias["P(says B | A better)"] + 0.1
    assert bias["P(says A | tie)"] > bias["P(says B | tie)"]


@pytest.mark.slow
def test_health_is_one_row_per_posterior_fit(every_method):
    health = every_method.health
    assert list(health.columns) == HEALTH
    assert health[["method", "judge"]].values.tolist() == [
        ["bayes", "judge"],
        ["human_only", ""],
        ["judge_only", "judge"],
    ]
    assert (health["chains"] == 2).all() and (health["samples"] == 300).all()
    assert (health["rhat_max"] < 1.05).all() and (health["ess_min"] > 50).all()


@pytest.mark.slow
def test_what_to_judge_next_and_heterogeneity_come_from_bayes(every_method, battles_file):
    following = every_method.next
    assert list(following.columns) == NEXT
    assert set(following["method"]) == {"bayes"} and len(following) == 6  # every pair
    assert following["order"].tolist() == list(range(1, 7))
    assert (np.diff(following["reduction"]) <= 0).all()  # best first
    assert following["k"].eq(50).all() and following["trusted"].dtype == bool
    pairs = set(zip(following["system_i"], following["system_j"], strict=True))
    assert pairs == {(i, j) for i in SYSTEMS for j in SYSTEMS if i < j}
    h = every_method.heterogeneity
    assert list(h.columns) == HETEROGENEITY and h["system"].tolist() == list(SYSTEMS)
    battles = read_battles(battles_file)
    want = judge_heterogeneity(battles.cells, 4, 0.05)
    assert np.allclose(h["p_holm"], want.p_holm[0], equal_nan=True)
    assert not h["differs"].any()  # the simulated judge's bias is the same for every system


@pytest.mark.slow
def test_the_terminal_shows_the_methods_side_by_side(every_method):
    text = arena_text(every_method)
    lines = text.splitlines()
    assert lines[0] == "400 battles among 4 systems; human verdicts on " + (
        f"{every_method.battles.human_verdicts}; judge judge"
    )
    header = next(line for line in lines if line.startswith("system "))
    assert header.split() == [
        "system",
        "bayes",
        "(judge)",
        "human_only",
        "judge_only",
        "(judge)",
        "ppr",
        "(judge)",
    ]
    assert sum(line.startswith("NUTS ") for line in lines) == 3
    assert "P(says A | B better):" in text


@pytest.mark.slow
def test_json_is_one_object_of_the_tables(every_method):
    got = json.loads(arena_json(every_method))
    assert set(got) == {
        "leaderboard",
        "pairs",
        "judges",
        "health",
        "next",
        "heterogeneity",
        "settings",
        "read",
        "warnings",
        "notes",
    }
    assert list(got["leaderboard"][0]) == LEADERBOARD
    assert got["leaderboard"][-1]["strength_mean"] is None  # ppr's row: NaN is null
    assert got["settings"]["methods"] == ["bayes", "human_only", "judge_only", "ppr"]
    assert got["read"]["judges"] == ["judge"] and got["read"]["battles"] == 400


# --- the CLI ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_cli_gives_the_same_numbers_for_the_same_seed(cli_bayes, every_method):
    status, stdout, stderr, _ = cli_bayes
    assert status == 0, stderr
    got = pd.DataFrame(json.loads(stdout)["leaderboard"])
    want = every_method.leaderboard
    want = want[want["method"] == "bayes"].reset_index(drop=True)
    assert got["system"].tolist() == want["system"].tolist()
    for column in ("strength_mean", "strength_low", "win_rate_mean", "p_rank1"):
        assert np.allclose(got[column], want[column], rtol=1e-12), column


@pytest.mark.slow
def test_out_writes_readable_parquet_with_the_documented_columns(cli_bayes):
    status, stdout, stderr, out = cli_bayes
    assert status == 0, stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "health.parquet",
        "heterogeneity.parquet",
        "judges.parquet",
        "leaderboard.parquet",
        "next.parquet",
        "pairs.parquet",
    ]
    for name, columns, rows in (
        ("leaderboard", LEADERBOARD, 4),
        ("pairs", PAIRS, 12),
        ("judges", JUDGES, 14),
        ("health", HEALTH, 1),
        ("next", NEXT, 6),
        ("heterogeneity", HETEROGENEITY, 4),
    ):
        table = pq.read_table(out / f"{name}.parquet")
        assert table.column_names == columns and table.num_rows == rows, name
        settings = json.loads(table.schema.metadata[b"binmetric_sweep.settings"])
        assert settings["estimator"] == "bayes" and settings["chains"] == 2
    board = pq.read_table(out / "leaderboard.parquet").to_pandas()
    assert board["rank_set_low"].dtype == "Int64"
    assert f"wrote {out / 'leaderboard.parquet'}" in stderr  # with --json, on stderr
    figure = out.parent / "leaderboard.png"
    assert f"wrote {figure}" in stderr
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_the_figure_draws_every_method(every_method, tmp_path):
    path = draw_arena(every_method, tmp_path / "all.png", "battles.csv")
    assert path == tmp_path / "all.png" and path.stat().st_size > 10_000


@pytest.mark.slow
def test_the_pairs_model_ranks_a_separated_arena():
    frame = simulated_arena(seed=1)
    options = ArenaOptions.of(model="pairs", sampler=SMALL)
    result = arena_comparison(battles_from_frame(frame), options)
    board = result.leaderboard
    assert tuple(board["system"]) == SYSTEMS
    # A strength under the pairs model is the centred log-odds of the win rate.
    logit = np.log(board["win_rate_mean"] / (1 - board["win_rate_mean"]))
    assert np.corrcoef(logit, board["strength_mean"])[0, 1] > 0.99
    assert result.settings["model"] == "pairs"


# --- bad input -------------------------------------------------------------------------


def _file(tmp_path, rows, columns=("model_a", "model_b", "human", "judge")):
    path = tmp_path / "battles.csv"
    pd.DataFrame(rows, columns=list(columns)).to_csv(path, index=False)
    return path


CONNECTED = [
    ("x", "y", "model_a", "model_a"),
    ("y", "z", "tie", "model_b"),
    ("z", "x", "", "tie"),
]


@pytest.mark.parametrize(
    ("rows", "args", "message"),
    [
        (
            [*CONNECTED, ("x", "z", "win", "tie")],
            (),
            "battles.csv: row 4, column human: 'win' is not a verdict; allowed: model_a, "
            "model_b, tie, tie (bothbad) or empty (--verdicts WORD=VERDICT,... maps others)",
        ),
        (
            [*CONNECTED, ("x", "z", "tie", "A>B")],
            ("--judge-columns", "judge"),
            "battles.csv: row 4, column judge: 'A>B' is not a verdict",
        ),
        (
            [*CONNECTED, ("x", "x", "tie", "tie")],
            (),
            "battles.csv: row 4: model_a and model_b are both 'x'; a battle is between two "
            "different systems",
        ),
        (
            [(a, b, h, "") for a, b, h, _ in CONNECTED],
            ("--judge-columns", "judge"),
            "battles.csv: column judge: no verdict in any row",
        ),
        (
            [*CONNECTED, ("u", "v", "tie", "tie"), ("v", "w", "tie", "tie")],
            (),
            "battles.csv: the systems are not all connected through the battles (2 groups with "
            "no battle between them: {u, v, w}; {x, y, z}); the ranking is not identified",
        ),
        (
            [("x", "y", "model_a", "tie"), ("y", "z", "", "tie"), ("z", "x", "", "model_a")],
            ("--estimator", "human_only"),
            "battles.csv: the systems are not all connected through the battles with a human "
            "verdict (human_only reads those alone) (2 groups with no battle between them: "
            "{x, y}; {z})",
        ),
        (
            [("x", "y", "model_a", "tie"), ("y", "z", "", "tie"), ("z", "x", "", "model_a")],
            ("--estimator", "all"),
            "with a human verdict (human_only reads those alone)",
        ),
        (
            [("x", "y", "model_a", ""), ("y", "z", "tie", ""), ("z", "x", "", "tie")],
            ("--estimator", "judge_only"),
            "battles.csv: the systems are not all connected through the battles judge judge gave "
            "a verdict on (judge_only) (2 groups with no battle between them: {x, z}; {y})",
        ),
        (
            [("x", "y", "model_a", "tie"), ("y", "z", "", "tie"), ("z", "x", "", "model_a")],
            ("--estimator", "ppr"),
            "battles.csv: ppr: systems z have no battle with a human verdict; prediction-powered "
            "ranking needs every system there",
        ),
        (
            [("x", "y", "", "tie"), ("y", "z", "", "tie")],
            ("--estimator", "human_only"),
            "battles.csv: column human: no battle has a human verdict, so human_only has nothing "
            "to rank",
        ),
    ],
)
def test_bad_battles_exit_2_with_one_line_and_write_nothing(tmp_path, rows, args, message):
    path = _file(tmp_path, rows)
    out = tmp_path / "out"
    status, stdout, stderr = run_cli(path, "--out", out, *args)
    assert status == 2
    assert stdout == ""
    assert stderr.count("\n") == 1 and stderr.startswith("sweep: error: ")
    assert message in stderr
    assert not out.exists()


def test_battles_connected_through_the_human_verdicts_are_accepted(tmp_path):
    """x–z and one x–y have no human verdict, but x, y, z are joined through y: every
    method's checks pass (they run before any sampling, so they are called here alone)."""
    battles = read_battles(_file(tmp_path, [*CONNECTED, ("x", "y", "", "tie")]))
    options = ArenaOptions.of(estimator="all")
    tasks = [t for m in options.methods for t in m.tasks(battles, options)[0]]
    assert [(t.method, t.judge, t.cells.battles) for t in tasks] == [
        ("bayes", "judge", 4),
        ("human_only", "", 2),
        ("judge_only", "judge", 4),
        ("ppr", "judge", 4),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--rates", "shared"), "--rates: not for a battles file"),
        (("--gamma", "0.1"), "--gamma: not for a battles file"),
        (("--adjust", "holm"), "--adjust: not for a battles file"),
        (("--method", "nuts"), "--method: not for a battles file"),
        (("--classes", "a,b"), "--classes: not for a battles file"),
        (("--cost-metric", "0.1"), "--cost-metric: not for a battles file"),
        (("--annotators", "majority"), "--annotators: not for a battles file"),
        (("--estimator", "ppi"), "--estimator: 'ppi' is not a battles method; allowed: bayes, "),
        (("--nuts", "4,500"), "--nuts: '4,500' is not CHAINS,WARMUP,SAMPLES"),
        (("--level", "1.5"), "--level: 1.5 is not allowed; give a number in (0, 1)"),
        (("--verdicts", "win=model_a,win=tie"), "--verdicts: 'win' is mapped twice"),
    ],
)
def test_bad_options_for_battles_exit_2_naming_the_flag(tmp_path, args, message):
    path = _file(tmp_path, CONNECTED)
    status, stdout, stderr = run_cli(path, *args)
    assert (status, stdout) == (2, "")
    assert stderr.count("\n") == 1 and message in stderr


@pytest.mark.parametrize(
    "args", [("--model", "pairs"), ("--verdicts", "win=model_a"), ("--nuts", "1,1,1")]
)
def test_battles_flags_are_refused_on_a_ratings_file(args):
    status, stdout, stderr = run_cli(REPO / "examples" / "ratings.csv", *args)
    assert (status, stdout) == (2, "")
    assert f"{args[0]}: reads a battles file (columns model_a, model_b)" in stderr


def test_verdict_words_are_mapped_and_the_flags_are_read(tmp_path):
    path = _file(tmp_path, [("x", "y", "win", "draw"), ("y", "z", "loss", "win")])
    battles = read_battles(path, verdicts="win=model_a,loss=model_b,draw=tie")
    assert battles.cells.battles == 2
    options = ArenaOptions.of(
        estimator="all", model="pairs", judge_model="joint", level=0.9, seed=3, sampler="1,2,3"
    )
    assert [m.name for m in options.methods] == ["bayes", "human_only", "judge_only", "ppr"]
    assert options.model.pairs and not options.judge_model.independent
    assert options.sampler == SamplerSettings(chains=1, warmup=2, samples=3)
    assert ArenaOptions.of().sampler == SamplerSettings(4, 500, 1000)  # the CLI's default


def test_a_judge_partial_to_one_system_is_named_in_a_warning():
    """The judge copies the human verdict, except that it always calls sys0 the winner: its
    confusion on sys0's battles differs from the rest's (a check of the battles alone, no
    fit: the warning reads the heterogeneity table, :mod:`kernels.arena.heterogeneity`)."""
    frame = simulated_arena(seed=2, n=600, human_share=1.0, bias=0.0)
    frame["judge"] = frame["human"]
    frame.loc[frame["model_a"] == "sys0", "judge"] = "model_a"
    frame.loc[frame["model_b"] == "sys0", "judge"] = "model_b"
    battles = battles_from_frame(frame)
    table = arena._heterogeneity_rows(battles)
    assert table.set_index("system")["differs"].to_dict()["sys0"]
    lines = arena._warnings(battles, [], table)
    said = "judge judge: its confusion differs between systems (G-test at Holm-adjusted 0.05) on "
    assert any(line.startswith(said) and "sys0 (Holm p = " in line for line in lines)


def test_the_api_s_compare_routes_a_battles_file_to_compare_battles(battles_file):
    """sweep.compare on a battles file or DataFrame is compare_battles; CompareOptions refused."""
    from binmetric_sweep import sweep
    from binmetric_sweep.sweep.compare import CompareOptions

    want = compare_battles(battles_file, ArenaOptions.of(estimator="ppr")).leaderboard
    for source in (battles_file, pd.read_csv(battles_file)):
        got = sweep.compare(source, estimator="ppr")
        assert isinstance(got, arena.ArenaComparison)
        pd.testing.assert_frame_equal(got.leaderboard, want)
    assert sweep.compare(battles_file, ArenaOptions.of(estimator="ppr")).leaderboard.equals(want)
    with pytest.raises(TypeError, match="ArenaOptions"):
        sweep.compare(battles_file, CompareOptions.of())
