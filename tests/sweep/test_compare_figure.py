"""The ``sweep compare -o FIG`` figure: α intervals beside the P(α_row > α_col) matrix.

Real matplotlib drawing on Agg, synthetic systems whose pair probabilities
come from normal approximations of their posteriors.
"""

import ast
import itertools
import math
import pathlib

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from binmetric_sweep.sweep.compare import figure as compare_figure
from binmetric_sweep.sweep.compare.figure import (
    FIGURE_WIDTH,
    MAX_HEIGHT,
    comparison_figure,
    comparison_title,
    plot_comparison,
    probability_matrix,
)
from binmetric_sweep.sweep.display.plots import DPI, save_figure

from .helpers import refuses

SETTINGS = {
    "rates": "per-system",
    "gamma": 0.05,
    "level": 0.95,
    "method": "quadrature",
    "adjust": "none",
}


def synthetic(n: int, seed: int = 0, names=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``n`` systems best first, and every pair with P(α_a > α_b) from normal posteriors."""
    rng = np.random.default_rng(seed)
    mean = np.sort(rng.uniform(0.35, 0.9, n))[::-1]
    sd = rng.uniform(0.01, 0.04, n)
    names = list(names) if names is not None else [f"sys-{i:02d}" for i in range(n)]
    systems = pd.DataFrame(
        {
            "system": names,
            "n_human": 200,
            "n_paired": 100,
            "n_metric": 5000,
            "alpha_mean": mean,
            "alpha_sd": sd,
            "ci_low": mean - 1.96 * sd,
            "ci_high": mean + 1.96 * sd,
        }
    )
    rows = []
    for i, j in itertools.combinations(range(n), 2):
        z = (mean[i] - mean[j]) / math.hypot(sd[i], sd[j])
        p = 0.5 * (1 + math.erf(z / math.sqrt(2)))
        rows.append(
            {
                "a": names[i],
                "b": names[j],
                "diff_mean": mean[i] - mean[j],
                "p_a_better": p,
                "eps": 0.05,
                "significant": p > 0.975 or p < 0.025,
            }
        )
    return systems, pd.DataFrame(rows)


@pytest.fixture(autouse=True)
def no_figures_left_open():
    yield
    assert plt.get_fignums() == []


def panels(fig) -> dict:
    """The figure's axes by label: forest, matrix, colorbar."""
    return {ax.get_label(): ax for ax in fig.axes}


def by_gid(artists, gid):
    (found,) = [a for a in artists if a.get_gid() == gid]
    return found


def shown_ticklabels(fig, axis) -> dict:
    """The visible, non-empty tick labels in ``axis``'s view, with their window extents."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    lo, hi = sorted(axis.get_view_interval())
    at = 0 if axis.axis_name == "x" else 1
    return {
        t.get_text(): t.get_window_extent(renderer)
        for t in axis.get_ticklabels()
        if t.get_visible() and t.get_text() and lo <= t.get_position()[at] <= hi
    }


def assert_apart(boxes: dict) -> None:
    for (a, box), (b, other) in itertools.combinations(boxes.items(), 2):
        assert not box.overlaps(other), f"tick labels {a!r} and {b!r} overlap"


def expected_matrix(systems, pairs, flag="significant"):
    """P(α_row > α_col) and significance built from ``pairs`` directly."""
    where = {name: i for i, name in enumerate(systems["system"])}
    n = len(systems)
    p, marked = np.full((n, n), np.nan), np.zeros((n, n), dtype=bool)
    for row in pairs.itertuples():
        i, j = where[row.a], where[row.b]
        p[i, j], p[j, i] = row.p_a_better, 1 - row.p_a_better
        marked[i, j] = marked[j, i] = getattr(row, flag)
    return p, marked


def assert_outlines(segments, marked: np.ndarray) -> None:
    """Each drawn edge separates a marked cell from an unmarked one (or the border), and every
    edge of a marked cell is drawn unless its neighbour across it is marked too."""

    def at(i, j):
        inside = 0 <= i < len(marked) and 0 <= j < len(marked)
        return bool(inside and marked[i, j])

    drawn = set()
    for (x0, y0), (x1, y1) in segments:
        if x0 == x1:  # vertical: between columns x - 0.5 and x + 0.5 in row (y0 + y1) / 2
            i, j = round((y0 + y1) / 2), round(x0 - 0.5)
            assert at(i, j) != at(i, j + 1), ((x0, y0), (x1, y1))
            drawn.add(("v", i, j + 1))
        else:
            i, j = round(y0 - 0.5), round((x0 + x1) / 2)
            assert at(i, j) != at(i + 1, j), ((x0, y0), (x1, y1))
            drawn.add(("h", i + 1, j))
    for i, j in zip(*np.nonzero(marked), strict=True):
        for edge, neighbour in (
            (("v", i, j), (i, j - 1)),
            (("v", i, j + 1), (i, j + 1)),
            (("h", i, j), (i - 1, j)),
            (("h", i + 1, j), (i + 1, j)),
        ):
            assert edge in drawn or at(*neighbour), (i, j, edge)


def read_png(path: pathlib.Path, width: float) -> np.ndarray:
    pixels = matplotlib.image.imread(path)
    assert pixels.shape[1] == round(width * DPI)
    assert pixels.std() > 0
    return pixels


def check_figure(fig, systems, pairs, flag="significant") -> dict:
    """What every comparison figure must show, whatever its size; returns its panels."""
    axes = panels(fig)
    assert {"forest", "matrix", "colorbar"} <= set(axes)
    forest, matrix = axes["forest"], axes["matrix"]
    names = systems["system"].tolist()
    n = len(names)
    # Forest: row k is systems' row k, the first at the top.
    dots = by_gid(forest.lines, "alpha-mean")
    np.testing.assert_array_equal(dots.get_ydata(), np.arange(n))
    np.testing.assert_allclose(dots.get_xdata(), systems["alpha_mean"])
    intervals = by_gid(forest.collections, "alpha-interval")
    ends = np.array([[s[0][0], s[1][0], s[0][1]] for s in intervals.get_segments()])
    np.testing.assert_allclose(ends, np.c_[systems["ci_low"], systems["ci_high"], np.arange(n)])
    top, bottom = forest.get_ylim()[1], forest.get_ylim()[0]
    assert top < 0 < n - 1 < bottom
    for tick, text in zip(forest.get_yticks(), forest.get_yticklabels(), strict=True):
        assert text.get_text() == names[round(tick)]
    low, high = forest.get_xlim()
    assert 0 <= low <= systems["ci_low"].min() and systems["ci_high"].max() <= high <= 1
    assert "share of adequate outputs" in forest.get_xlabel()
    assert f"{SETTINGS['level'] * 100:g} %" in forest.get_xlabel()
    # Matrix: the rows beside the forest's, P(α_row > α_col) on a fixed 0..1 scale.
    assert matrix.get_ylim() == forest.get_ylim()
    fig.canvas.draw()
    f_box, m_box = forest.get_window_extent(), matrix.get_window_extent()
    assert (f_box.y0, f_box.y1) == pytest.approx((m_box.y0, m_box.y1))
    (image,) = matrix.images
    assert image.get_clim() == (0.0, 1.0)
    drawn = image.get_array()
    p, marked = expected_matrix(systems, pairs, flag)
    assert np.array_equal(np.ma.getmaskarray(drawn), np.isnan(p))
    np.testing.assert_allclose(drawn.filled(np.nan), p, equal_nan=True)
    assert_outlines(by_gid(matrix.collections, "significant").get_segments(), marked)
    bar = axes["colorbar"]
    assert "row" in bar.get_ylabel() and "col" in bar.get_ylabel()
    assert tuple(bar.get_ylim()) == (0.0, 1.0)
    for axis in (forest.yaxis, forest.xaxis, matrix.xaxis, matrix.yaxis, bar.yaxis):
        assert_apart(shown_ticklabels(fig, axis))
    assert fig.get_figwidth() == pytest.approx(FIGURE_WIDTH)
    return axes


def test_three_systems_every_cell_written(tmp_path):
    systems, pairs = synthetic(3)
    pairs.loc[1, "significant"] = False  # an isolated mark: its outline is one cell's
    fig = comparison_figure(systems, pairs, SETTINGS)
    axes = check_figure(fig, systems, pairs)
    matrix = axes["matrix"]
    names = systems["system"].tolist()
    assert [t.get_text() for t in matrix.get_xticklabels()] == names
    assert not [t for t in matrix.get_yticklabels() if t.get_visible() and t.get_text()]
    p, _ = expected_matrix(systems, pairs)
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in matrix.texts}
    assert set(texts) == {(i, j) for i in range(3) for j in range(3) if i != j}
    for (i, j), text in texts.items():
        assert text.get_text() == f"{p[i, j]:.2f}"
        assert 5 <= text.get_fontsize() <= 7
    thresholds = [line.get_ydata()[0] for line in axes["colorbar"].lines]
    assert sorted(thresholds) == pytest.approx([0.025, 0.975])
    assert "outlined: significant" in matrix.get_xlabel()
    assert fig.get_suptitle() == r"rates: per-system, quadrature; $\gamma$ = 0.05, 95 % intervals"
    path = plot_comparison(systems, pairs, SETTINGS, tmp_path / "three.png")
    assert path == tmp_path / "three.png"
    pixels = read_png(path, FIGURE_WIDTH)
    assert pixels.shape[0] < pixels.shape[1] / 2


def test_hundred_systems_fit_a_page(tmp_path):
    systems, pairs = synthetic(100, seed=1)
    fig = comparison_figure(systems, pairs, SETTINGS)
    axes = check_figure(fig, systems, pairs)
    forest, matrix = axes["forest"], axes["matrix"]
    assert fig.get_figheight() == pytest.approx(MAX_HEIGHT)
    names = shown_ticklabels(fig, forest.yaxis)
    assert len(names) == 100  # every system named, in smaller type
    assert 5 <= forest.get_yticklabels()[0].get_fontsize() < 7
    assert not matrix.texts  # too many cells to write in
    ranks = [t.get_text() for t in matrix.get_xticklabels()]
    assert ranks[:3] == ["1", "10", "20"] and ranks[-1] == "100"
    assert [t.get_text() for t in matrix.get_yticklabels()] == ranks
    assert "rank" in matrix.get_xlabel()
    path = plot_comparison(systems, pairs, SETTINGS, tmp_path / "hundred.png")
    pixels = read_png(path, FIGURE_WIDTH)
    assert pixels.shape[0] == round(MAX_HEIGHT * DPI)


def test_height_grows_with_the_systems():
    heights = []
    for n in (3, 12, 30, 60):
        fig = comparison_figure(*synthetic(n), SETTINGS)
        heights.append(fig.get_figheight())
        fig.clear()
    assert heights == sorted(heights) and heights[0] < heights[-1] <= MAX_HEIGHT


def test_twelve_systems_named_up_the_columns():
    systems, pairs = synthetic(12, seed=2)
    fig = comparison_figure(systems, pairs, SETTINGS)
    matrix = check_figure(fig, systems, pairs)["matrix"]
    labels = matrix.get_xticklabels()
    assert [t.get_text() for t in labels] == systems["system"].tolist()
    assert {t.get_rotation() for t in labels} == {90.0}
    assert not matrix.texts


def test_long_names_number_the_columns():
    names = [f"organisation-{i}/a-rather-long-model-name-{i}" for i in range(6)]
    systems, pairs = synthetic(6, seed=3, names=names)
    fig = comparison_figure(systems, pairs, SETTINGS)
    matrix = check_figure(fig, systems, pairs)["matrix"]
    assert [t.get_text() for t in matrix.get_xticklabels()] == ["1", "2", "3", "4", "5", "6"]
    assert len(matrix.texts) == 30


def test_holm_marks_the_adjusted_significance():
    systems, pairs = synthetic(5, seed=4)
    unadjusted = expected_matrix(systems, pairs)[1]
    pairs["p_adjusted"] = 0.01
    pairs["significant"] = pairs["significant"] & (pairs.index % 2 == 0)
    settings = dict(SETTINGS, adjust="holm", method="nuts", rates="shared", level=0.9)
    fig = comparison_figure(systems, pairs, settings)
    axes = panels(fig)
    _, marked = expected_matrix(systems, pairs)
    assert marked.any() and not np.array_equal(marked, unadjusted)
    assert_outlines(by_gid(axes["matrix"].collections, "significant").get_segments(), marked)
    assert not axes["colorbar"].lines  # Holm's thresholds are not fixed probabilities
    assert fig.get_suptitle() == r"rates: shared, NUTS; $\gamma$ = 0.05 (Holm), 90 % intervals"
    assert "90 % interval" in axes["forest"].get_xlabel()
    assert "Holm" in axes["matrix"].get_xlabel()
    fig.clear()


def test_significance_from_p_without_the_column():
    systems, pairs = synthetic(6, seed=5)
    p, marked = probability_matrix(systems, pairs.drop(columns="significant"), SETTINGS)
    expected_p, expected_marked = expected_matrix(systems, pairs)
    np.testing.assert_allclose(p, expected_p, equal_nan=True)
    np.testing.assert_array_equal(marked, expected_marked)


def test_title_words():
    settings = dict(SETTINGS, level=0.999, gamma=0.01)
    assert comparison_title(settings).endswith(r"$\gamma$ = 0.01, 99.9 % intervals")


@pytest.mark.parametrize("width", [5.0, 3.4])
def test_width_sets_the_png_width(tmp_path, width):
    systems, pairs = synthetic(5)
    fig = comparison_figure(systems, pairs, SETTINGS, width=width)
    assert fig.get_figwidth() == pytest.approx(width)
    axes = panels(fig)
    fig.canvas.draw()
    labels = [axes[name].xaxis.label.get_window_extent() for name in ("forest", "matrix")]
    assert not labels[0].overlaps(labels[1])  # broken into more lines when narrow
    for name in ("forest", "matrix"):
        assert_apart(shown_ticklabels(fig, axes[name].xaxis))
    read_png(save_figure(fig, tmp_path / "narrow.png"), width)


def test_vector_formats_and_a_new_directory(tmp_path):
    systems, pairs = synthetic(4)
    pdf = plot_comparison(systems, pairs, SETTINGS, tmp_path / "new" / "cmp.pdf")
    assert pdf.read_bytes()[:5] == b"%PDF-"
    svg = plot_comparison(systems, pairs, SETTINGS, str(tmp_path / "cmp.svg"))
    assert b"<svg" in svg.read_bytes()[:1000]


def test_one_system_has_nothing_to_compare(tmp_path):
    systems, _ = synthetic(1)
    path = plot_comparison(systems, pd.DataFrame(), SETTINGS, tmp_path / "one.png")
    read_png(path, FIGURE_WIDTH)


def test_unsupported_suffix_refused(tmp_path):
    systems, pairs = synthetic(3)
    out = tmp_path / "cmp.txt"
    refuses(lambda: plot_comparison(systems, pairs, SETTINGS, out), "-o", "cmp.txt", "png", "pdf")
    assert not out.exists()


def test_bad_inputs_refused():
    systems, pairs = synthetic(3)

    def draw(s=systems, p=pairs, settings=SETTINGS):
        return lambda: comparison_figure(s, p, settings)

    refuses(draw(s=systems.drop(columns="ci_low")), "systems", "ci_low")
    refuses(draw(p=pairs.drop(columns="p_a_better")), "pairs", "p_a_better")
    refuses(draw(settings={"rates": "shared"}), "settings", "gamma")
    refuses(draw(s=systems.assign(system=["x", "y", "x"])), "'x'", "twice")
    refuses(draw(p=pairs.assign(b="nobody")), "'nobody'", "not among the systems")
    refuses(draw(p=pd.concat([pairs, pairs.iloc[:1]])), "paired twice")
    refuses(draw(s=systems.iloc[:0]), "no system")


def test_module_imports_matplotlib_only_inside_functions():
    tree = ast.parse(pathlib.Path(compare_figure.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in top if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n.startswith("matplotlib")]


def long_tables(estimators, n: int = 4, seed: int = 6, missing=()):
    """By-estimator tables as ``sweep compare --estimator`` gives them: each estimator's
    systems (ranked by its estimate, those it does not apply to last) and its pairs; the
    (estimator, system) in ``missing`` not applicable (NaN, pairs not tested)."""
    rng = np.random.default_rng(seed)
    names = [f"sys-{i}" for i in range(n)]
    systems, pairs = [], []
    for k, name in enumerate(estimators):
        est = np.sort(rng.uniform(0.4, 0.8, n))[::-1]
        se = rng.uniform(0.01, 0.05, n)
        gone = np.array([(name, s) in missing for s in names])
        est[gone], se[gone] = np.nan, np.nan
        order = np.r_[np.flatnonzero(~gone), np.flatnonzero(gone)] if k else np.arange(n)
        frame = pd.DataFrame(
            {
                "estimator": name,
                "system": np.array(names)[order],
                "estimate": est[order],
                "se": se[order],
                "ci_low": (est - 1.96 * se)[order],
                "ci_high": (est + 1.96 * se)[order],
            }
        )
        systems.append(frame)
        for i, j in itertools.combinations(range(n), 2):
            a, b = frame.iloc[i], frame.iloc[j]
            diff, se_diff = a.estimate - b.estimate, math.hypot(a.se, b.se)
            z = diff / se_diff
            p = 0.5 * (1 + math.erf(z / math.sqrt(2))) if np.isfinite(z) else np.nan
            two_sided = 2 * min(p, 1 - p)
            row = {"estimator": name, "a": a.system, "b": b.system, "diff_mean": diff}
            if name == "bayes":
                row.update(p_a_better=p, significant=bool(two_sided <= 0.05))
            else:
                tested = np.isfinite(two_sided)
                row.update(
                    se_diff=se_diff,
                    p_value=two_sided,
                    significant=bool(two_sided <= 0.05) if tested else pd.NA,
                )
            pairs.append(row)
    pairs = pd.DataFrame(pairs).astype({"significant": "boolean"})
    return pd.concat(systems, ignore_index=True), pairs


def forest_intervals(forest, name):
    """One estimator's drawn intervals (low, high, row position) and estimates."""
    lines = by_gid(forest.collections, f"interval-{name}").get_segments()
    dots = by_gid(forest.lines, f"estimate-{name}")
    ends = np.array([[s[0][0], s[1][0], s[0][1]] for s in lines]).reshape(-1, 3)
    return ends, np.c_[dots.get_xdata(), dots.get_ydata()]


def test_every_estimator_side_by_side_with_the_posterior_s_matrix():
    """--estimator all: per system one interval per estimator, in its own colour, in the row
    of the matrix's system; a legend names each estimator and where it does not apply; the
    matrix is the posterior's P; the title names the file, the estimators and the matrix."""
    estimators = ("bayes", "human_only", "judge_only")
    missing = {("judge_only", "sys-1")}
    systems, pairs = long_tables(estimators, missing=missing)
    settings = dict(SETTINGS, level=0.9)
    fig = comparison_figure(systems, pairs, settings, source="arena.csv")
    axes = panels(fig)
    forest, matrix = axes["forest"], axes["matrix"]
    order = systems.loc[systems.estimator == "bayes", "system"].tolist()
    assert [t.get_text() for t in forest.get_yticklabels()] == order
    colours = set()
    for name in estimators:
        ends, dots = forest_intervals(forest, name)
        mine = systems[systems.estimator == name].set_index("system").loc[order]
        drawn = mine["estimate"].notna().to_numpy()
        rows = np.flatnonzero(drawn)
        np.testing.assert_allclose(ends[:, :2], mine.loc[drawn, ["ci_low", "ci_high"]])
        np.testing.assert_allclose(dots[:, 0], mine.loc[drawn, "estimate"])
        assert (np.abs(ends[:, 2] - rows) < 0.45).all() and (dots[:, 1] == ends[:, 2]).all()
        assert len(rows) == len(order) - sum(e == name for e, _ in missing)
        colours.add(tuple(by_gid(forest.collections, f"interval-{name}").get_colors()[0]))
    assert len(colours) == len(estimators)
    # Within a row the estimators sit apart, in the legend's order.
    offsets = [forest_intervals(forest, name)[0][0, 2] for name in estimators]
    assert offsets == sorted(offsets) and len(set(offsets)) == 3
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "bayes", "human_only", "judge_only (n/a: 1 of 4)",
    ]  # fmt: skip
    bayes_systems = systems[systems.estimator == "bayes"].rename(columns={"estimate": "alpha_mean"})
    p, marked = expected_matrix(bayes_systems, pairs[pairs.estimator == "bayes"])
    np.testing.assert_allclose(matrix.images[0].get_array().filled(np.nan), p, equal_nan=True)
    assert_outlines(by_gid(matrix.collections, "significant").get_segments(), marked)
    fig.canvas.draw()
    f_box, m_box = forest.get_window_extent(), matrix.get_window_extent()
    assert (f_box.y0, f_box.y1) == pytest.approx((m_box.y0, m_box.y1))
    title = fig.get_suptitle().replace("\n", " ")
    assert title.startswith("arena.csv — 3 estimators' 90 % intervals; rates: per-system;")
    assert "matrix: the posterior's P(row > col), quadrature" in title
    assert "P" in axes["colorbar"].get_ylabel()
    assert fig.get_figwidth() == pytest.approx(FIGURE_WIDTH)
    fig.clear()


def test_one_classical_estimator_draws_its_z_test():
    """A classical estimator alone: its intervals, and its z-test as Φ(z) on the matrix's
    scale (a pair it cannot test grey, not outlined), said in the title and the colorbar; no
    sampler in the title, none needed in the settings."""
    systems, pairs = long_tables(["ppi"], n=5, missing={("ppi", "sys-4")})
    settings = {k: v for k, v in SETTINGS.items() if k != "method"}
    fig = comparison_figure(systems, pairs, settings, source="r.csv")
    axes = panels(fig)
    ends, _ = forest_intervals(axes["forest"], "ppi")
    assert len(ends) == 4
    z = pairs["diff_mean"] / pairs["se_diff"]
    expected = pairs.assign(
        p_a_better=stats.norm.cdf(z), significant=pairs.significant.fillna(False)
    )
    p, marked = expected_matrix(systems.rename(columns={"estimate": "alpha_mean"}), expected)
    drawn = axes["matrix"].images[0].get_array()
    np.testing.assert_allclose(drawn.filled(np.nan), p, atol=1e-14, equal_nan=True)
    assert np.isnan(p[4]).all() and marked.any()  # sys-4: no test, a grey row
    assert_outlines(by_gid(axes["matrix"].collections, "significant").get_segments(), marked)
    assert "Phi(z)" in axes["colorbar"].get_ylabel()
    assert "outlined: z-test significant at" in axes["matrix"].get_xlabel()
    title = fig.get_suptitle().replace("\n", " ")
    assert title == (
        r"r.csv — ppi's 95 % intervals; rates: per-system; matrix: ppi's z-test, Φ(z) of "
        r"row − col; $\gamma$ = 0.05"
    )
    assert "quadrature" not in title and "NUTS" not in title
    fig.clear()


def test_the_file_s_name_heads_the_posterior_s_title():
    settings = dict(SETTINGS, adjust="bh")
    assert comparison_title(settings, "ratings.csv") == (
        r"ratings.csv — rates: per-system, quadrature; $\gamma$ = 0.05 (BH), 95 % intervals"
    )
    systems, pairs = synthetic(3)
    fig = comparison_figure(systems, pairs, SETTINGS, source="a-rather-long-file-name.parquet")
    assert fig.get_suptitle().startswith("a-rather-long-file-name.parquet — rates: per-system")
    fig.clear()


def test_by_estimator_tables_refused_in_one_line():
    systems, pairs = long_tables(["bayes", "ppi"])

    def draw(s=systems, p=pairs, settings=SETTINGS):
        return lambda: comparison_figure(s, p, settings)

    refuses(draw(s=systems.drop(columns="ci_high")), "systems", "ci_high")
    refuses(draw(p=pairs.drop(columns="p_a_better")), "pairs", "p_a_better", "bayes")
    refuses(draw(settings={"rates": "shared", "gamma": 0.05, "level": 0.9}), "settings", "adjust")
    settings = {k: v for k, v in SETTINGS.items() if k != "method"}
    refuses(draw(settings=settings), "settings", "method")
    refuses(draw(s=pd.concat([systems, systems.iloc[:1]])), "'sys-0'", "twice for bayes")
    refuses(draw(s=systems.iloc[:-1]), "'sys-3'", "not rated by every estimator")
