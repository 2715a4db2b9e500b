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

from binmetric_sweep.sweep.compare import figure as compare_figure
from binmetric_sweep.sweep.compare.figure import (
    FIGURE_WIDTH,
    MAX_HEIGHT,
    comparison_figure,
    comparison_title,
    plot_comparison,
    probability_matrix,
)
from binmetric_sweep.sweep.plots import DPI, save_figure

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
