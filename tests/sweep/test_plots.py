import ast
import itertools
import pathlib
import re

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import LogNorm

from binmetric_sweep import sweep
from binmetric_sweep.sweep.display.plots import (
    COLUMN_WIDTH,
    DPI,
    cell_format,
    colour_scale,
    format_size,
    label,
    plot_surface,
    surface_figure,
)
from binmetric_sweep.sweep.plan import PlanSpec
from binmetric_sweep.sweep.plan.figure import frontier_figure, plot_frontier
from binmetric_sweep.sweep.plan.report import FrontierPoint, Plan

from .helpers import refuses

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "published_eps.csv"
COLUMN_PIXELS = round(COLUMN_WIDTH * DPI)
WHERE = {"rho": "0.7", "gamma": "0.05"}


@pytest.fixture
def surface() -> pd.DataFrame:
    """ρ (= η) × N_Φ × N_M at one γ; N_M spans zero and four decades."""
    records = []
    grid = itertools.product((0.51, 0.7), (0, 100, 250), (0, 10, 1000, 10000, 100000))
    for i, (rho, n_phi, n_m) in enumerate(grid):
        records.append(
            {
                "config_id": i,
                "alpha": 0.6,
                "rho": rho,
                "eta": rho,
                "n_phi": n_phi,
                "n_rho_eta": n_phi if n_phi else None,
                "psi": 1.0,
                "n_m": n_m,
                "rho_eta_known": n_phi == 0,
                "shared_paired": True,
                "gamma": 0.05,
                "power": 0.5,
                "eps": rho / (1.0 + n_phi / 100.0 + n_m / 5000.0),
                "divergences": i % 3,
                "counts": "expected",
                "method": "quadrature",
                "replicates": 1,
                "shard": 0,
            }
        )
    return pd.DataFrame(records).astype({"n_phi": "int64", "n_m": "int64", "n_rho_eta": "Int64"})


@pytest.fixture(autouse=True)
def no_figures_left_open():
    yield
    assert plt.get_fignums() == []


def read_png(path):
    """The PNG's pixels; it is one paper column wide at the print resolution."""
    assert path.is_file() and path.stat().st_size > 0
    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] == COLUMN_PIXELS
    assert pixels.std() > 0  # something was drawn
    return pixels


@pytest.fixture(scope="module")
def published() -> pd.DataFrame:
    """The published ε table for ρ = η = 0.7 as a surface: 1.0 and 0.73 where N_Φ = 0, else
    0.013 to 0.13."""
    table = pd.read_csv(DATA)
    table = table[table.rho == 0.7].drop(columns="source")
    return table.assign(
        rho_eta_known=False,
        shared_paired=True,
        psi=table.alpha,
        power=0.5,
        counts="expected",
        method="quadrature",
        replicates=1,
    )


def shown_ticklabels(fig, axis):
    """The non-empty tick labels drawn on ``axis``, with their window extents."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    lo, hi = sorted(axis.get_view_interval())
    at = 0 if axis.axis_name == "x" else 1
    labels = [
        t
        for t in axis.get_ticklabels(which="both")
        if t.get_visible() and t.get_text() and lo <= t.get_position()[at] <= hi
    ]
    return {t.get_text(): t.get_window_extent(renderer) for t in labels}


def assert_apart(boxes) -> None:
    """No two of the boxes overlap."""
    for (a, box), (b, other) in itertools.combinations(boxes.items(), 2):
        assert not box.overlaps(other), f"tick labels {a!r} and {b!r} overlap"


def texts_in(sizes):
    return [rf"$N_\Phi$ = {n}" for n in sizes]


def cell_texts(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


def significant_digits(text: str) -> int:
    digits = re.sub(r"[^0-9]", "", text).lstrip("0")
    return len(digits)


def test_heatmap_writes_a_png(surface, tmp_path):
    out = plot_surface(
        surface, "eps", where=WHERE, rows="n_phi", cols="n_m", out=tmp_path / "h.png"
    )
    assert out == tmp_path / "h.png"
    read_png(out)


def test_heatmap_with_gaps_counts_and_a_large_grid(surface, tmp_path):
    gappy = surface.drop(index=[0, 7])
    read_png(
        plot_surface(
            gappy, "divergences", where=WHERE, rows="n_m", cols="n_phi", out=tmp_path / "g.png"
        )
    )
    wide = pd.DataFrame(
        {"alpha": 0.6, "n_phi": np.repeat(np.arange(16), 16), "n_m": np.tile(np.arange(16), 16)}
    ).assign(eps=lambda f: 1.0 / (1.0 + f.n_phi + f.n_m))
    read_png(
        plot_surface(wide, "eps", where=None, rows="n_phi", cols="n_m", out=str(tmp_path / "w.png"))
    )


def test_lines_write_a_png(surface, tmp_path):
    out = tmp_path / "l.png"
    assert plot_surface(surface, "eps", where=WHERE, x="n_m", lines="n_phi", out=out) == out
    read_png(out)
    single = dict(WHERE, n_phi="100")
    read_png(plot_surface(surface, "eps", where=single, x="n_m", out=tmp_path / "one.png"))


def test_heatmap_title_names_every_fixed_setting(published, surface):
    fig = surface_figure(published, "eps", where=None, rows="n_phi", cols="n_m")
    title = fig.get_suptitle()
    for setting in (
        r"$\varepsilon_\gamma$",
        r"$\alpha$ = 0.6",
        r"$\rho$ = $\eta$ = 0.7",
        r"$N_{\rho\eta} = N_\Phi$",
        r"$\gamma$ = 0.05",
        "power 0.5",
        "expected counts",
        "quadrature",
    ):
        assert setting in title, (setting, title)
    assert "replicates" not in title and r"$N_\Phi$ =" not in title and "$N_M$ =" not in title
    # Read from the rows: ρ ≠ η, sampled counts by NUTS with 50 replicates, ρ and η known.
    other = surface.assign(eta=0.8, counts="sampled", method="nuts", replicates=50)
    other = other.assign(rho_eta_known=True, shared_paired=False, n_rho_eta=None)
    title = surface_figure(other, "eps", where=WHERE, x="n_m", lines="n_phi").get_suptitle()
    for setting in (r"$\rho$ = 0.7", r"$\eta$ = 0.8", "sampled counts", "NUTS", "50 replicates"):
        assert setting in title, (setting, title)
    assert r"$\eta$ = 0.8 (known)" in title and r"N_{\rho\eta}" not in title
    assert "\n" in title  # wrapped to the column


def test_heatmap_colours_resolve_the_informative_range(published):
    fig = surface_figure(published, "eps", where=None, rows="n_phi", cols="n_m")
    assert fig.get_figwidth() == pytest.approx(COLUMN_WIDTH)
    image = fig.axes[0].images[0]
    assert isinstance(image.norm, LogNorm)
    # The N_Φ > 0 cells (0.013 … 0.13) take more than half the scale, not one colour.
    low, high = published.eps[published.n_phi > 0].agg(["min", "max"])
    assert float(image.norm(high) - image.norm(low)) > 0.5
    c_low, c_high = (np.array(image.cmap(image.norm(v)))[:3] for v in (0.013, 0.13))
    assert np.linalg.norm(c_high - c_low) > 0.4


def test_heatmap_cells_carry_two_significant_digits(published):
    fig = surface_figure(published, "eps", where=None, rows="n_phi", cols="n_m")
    texts = cell_texts(fig)
    assert len(texts) == 56 and {"1.0", "0.73", "0.13", "0.013"} <= set(texts)
    assert {significant_digits(t) for t in texts} == {2}, sorted(set(texts))
    # Every cell label is readable against its cell: black on light, white on dark.
    image = fig.axes[0].images[0]
    for text in fig.axes[0].texts:
        j, i = text.get_position()
        r, g, b, _ = image.cmap(image.norm(image.get_array()[round(i), round(j)]))
        light = 0.299 * r + 0.587 * g + 0.114 * b > 0.5
        assert text.get_color() == ("black" if light else "white")


def test_linear_colour_scale_marks_the_extreme_cells():
    # Coverage near 0.95 with one extreme row (1.0, and 0.5 where the fit failed).
    rng = np.random.default_rng(0)
    cells = 0.95 + rng.normal(0.0, 0.005, size=(6, 5))
    cells[0] = 1.0
    cells[1, 1] = 0.5
    norm, extend = colour_scale(cells)
    assert not isinstance(norm, LogNorm) and extend == "both"
    assert 0.9 < norm.vmin < norm.vmax < 1.0
    fmt, power = cell_format(norm, whole=False)
    assert power == 0 and fmt(0.9512) == "0.951" and fmt(1.0) == "1.000"
    bias, power = cell_format(
        colour_scale(np.array([-0.1, -0.0017, -0.0004, 0.0, 0.0002]))[0], False
    )
    assert power == 3 and bias(-0.0017) == "\N{MINUS SIGN}1.7" and bias(-0.00001) == "0.0"
    assert colour_scale(np.array([[2.0, 2.0]]))[0].vmin < 2.0  # one value: still a scale


def test_heatmap_colorbar_arrow_for_out_of_range_cells(surface, tmp_path):
    # Coverage 0.94 to 0.96, and 0.5 in one cell.
    frame = surface.assign(coverage=0.94 + 0.02 * (surface.index % 5) / 4, counts="sampled")
    frame.loc[(frame.n_phi == 0) & (frame.n_m == 0), "coverage"] = 0.5
    fig = surface_figure(frame, "coverage", where=WHERE, rows="n_phi", cols="n_m")
    bar = fig.axes[1]
    assert fig.axes[0].images[0].colorbar.extend == "min" and bar.get_ylim()[0] > 0.9
    assert "0.500" in cell_texts(fig) and "0.940" in cell_texts(fig)


@pytest.mark.parametrize("log_x", [None, True])
def test_lines_on_a_log_axis_with_zeros(published, surface, tmp_path, log_x):
    # N_M is 0 and 1k…100k: log by default, 0 one decade left of 1k, no label overprinted.
    fig = surface_figure(published, "eps", where=None, x="n_m", lines="n_phi", log_x=log_x)
    ax = fig.axes[0]
    assert ax.get_xscale() == "symlog" and ax.get_yscale() == "log"
    boxes = shown_ticklabels(fig, ax.xaxis)
    assert {"0", "1k", "10k", "100k"} <= set(boxes), sorted(boxes)
    assert_apart(boxes)
    y_boxes = shown_ticklabels(fig, ax.yaxis)
    assert {"0.02", "0.1", "1"} <= set(y_boxes), sorted(y_boxes)
    assert_apart(y_boxes)
    assert fig.get_figwidth() == pytest.approx(COLUMN_WIDTH)
    # N_M from 10, with the same rule.
    out = tmp_path / f"log-{log_x}.png"
    read_png(
        plot_surface(surface, "eps", where=WHERE, x="n_m", lines="n_phi", log_x=log_x, out=out)
    )


def test_lines_on_a_linear_axis_on_request(published):
    fig = surface_figure(published, "eps", where=None, x="n_m", lines="n_phi", log_x=False)
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear"
    assert_apart(shown_ticklabels(fig, ax.xaxis))
    plain = surface_figure(published, "eps", where=None, x="n_m", lines="n_phi", log_y=False)
    assert plain.axes[0].get_yscale() == "linear"
    # Not a sample size: linear by default.
    by_rho = surface_figure(
        published.assign(rho=published.n_phi / 10000), "eps", where=None, x="rho", lines="n_m"
    )
    assert by_rho.axes[0].get_xscale() == "linear"


def test_line_legend_renders_symbols(published):
    fig = surface_figure(published, "eps", where=None, x="n_m", lines="n_phi")
    fig.draw_without_rendering()  # the mathtext parses
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    expected = ["0", "100", "250", "500", "1k", "2.5k", "5k", "10k"]
    assert sorted(texts) == sorted(texts_in(expected))
    assert not [t for t in texts if "N_Φ" in t or "n_phi" in t]
    # Read row by row, the entries run in order.
    places = [(t.get_window_extent(), t.get_text()) for t in legend.get_texts()]
    reading = sorted(places, key=lambda p: (-round(p[0].y0), p[0].x0))
    assert [text for _, text in reading] == texts_in(expected)
    legend_box = legend.get_window_extent()
    assert legend_box.x1 <= fig.bbox.x1 and legend_box.x0 >= fig.bbox.x0


def frontier_plan() -> Plan:
    """A target plan with its frontier, as ``sweep plan --alpha 0.6 --rho 0.8 --eta 0.8
    --eps 0.02 --cost-metric 0.002`` gives it (not solved here)."""
    spec = PlanSpec(alpha=0.6, rho=0.8, eta=0.8, eps=0.02, cost_metric=0.002)
    sizes = [(0, 9416), (5000, 8163), (20000, 6968), (100000, 6312), (1000000, 6137)]
    frontier = tuple(FrontierPoint(m, n, spec.cost(n, m), 0.02) for m, n in sizes)
    return Plan(
        spec=spec,
        n_phi=6317,
        n_m=96414,
        cost=spec.cost(6317, 96414),
        eps=0.02,
        sd=0.0078,
        reachable=True,
        n_phi_alone=9416,
        cost_alone=9416.0,
        n_phi_unlimited=6116,
        eps_floor=None,
        eps_tested=0.02,
        empirical_power=float("nan"),
        empirical_power_mcse=float("nan"),
        type1_rate=float("nan"),
        type1_mcse=float("nan"),
        replicates=0,
        seed=0,
        frontier=frontier,
    )


def test_frontier_at_column_width(tmp_path):
    plan = frontier_plan()
    fig = frontier_figure(plan)
    assert fig.get_figwidth() == pytest.approx(COLUMN_WIDTH)
    title = fig.get_suptitle()
    for setting in (
        r"$\varepsilon \leq 0.02$",
        r"$\alpha$ = 0.6",
        r"$\rho$ = $\eta$ = 0.8",
        r"$N_{\rho\eta} = N_\Phi$",
        r"$\gamma$ = 0.05",
        "power 0.8",
        "0.002 per metric",
    ):
        assert setting in title, (setting, title)
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert any(t.startswith(r"least $N_\Phi$") for t in texts) and "plan: cost 6,510" in texts
    assert not [t for t in texts if "N_Φ" in t]
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    x_boxes, y_boxes = shown_ticklabels(fig, ax.xaxis), shown_ticklabels(fig, ax.yaxis)
    assert {"10k", "100k", "1M"} <= set(x_boxes) and {"6.5k", "9k"} <= set(y_boxes)
    assert_apart(x_boxes)
    assert_apart(y_boxes)
    read_png(plot_frontier(plan, tmp_path / "f.png"))


def test_vector_formats_by_suffix(published, tmp_path):
    pdf = plot_surface(
        published, "eps", where=None, rows="n_phi", cols="n_m", out=tmp_path / "h.pdf"
    )
    assert pdf.read_bytes()[:5] == b"%PDF-"
    svg = plot_frontier(frontier_plan(), tmp_path / "f.svg")
    assert b"<svg" in svg.read_bytes()[:1000]


def test_sizes_are_written_short():
    assert [format_size(v) for v in (0, 250, 1000, 2500, 100000, 1e6, 2.5e9)] == [
        "0",
        "250",
        "1k",
        "2.5k",
        "100k",
        "1M",
        "2.5G",
    ]


def test_lines_along_a_partly_null_axis_and_a_title(surface, tmp_path):
    out = tmp_path / "nre.png"
    plot_surface(surface, "eps", where=WHERE, x="n_rho_eta", lines="n_m", out=out, title="T")
    read_png(out)
    fig = surface_figure(surface, "eps", where=WHERE, x="n_rho_eta", lines="n_m", title="T")
    assert fig.get_suptitle() == "T\n(5 points with no $N_{\\rho\\eta}$ left out)"
    # Lines of a partly null axis: the null one is ρ, η known.
    fig = surface_figure(surface, "eps", where=WHERE, x="n_m", lines="n_rho_eta")
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert sorted(texts) == sorted(
        [r"$N_{\rho\eta}$ = 100", r"$N_{\rho\eta}$ = 250", r"$\rho,\eta$ known"]
    )


@pytest.mark.parametrize(
    ("options", "needles"),
    [
        ({}, ("--rows", "--x")),
        ({"rows": "n_phi"}, ("--cols",)),
        ({"cols": "n_m"}, ("--rows",)),
        ({"rows": "n_phi", "cols": "n_m", "x": "n_m"}, ("--x", "--rows")),
        ({"lines": "n_phi"}, ("--lines", "--x")),
        ({"rows": "n_phi", "cols": "n_m", "log_x": True}, ("--log-x",)),
        ({"rows": "n_phi", "cols": "n_m", "log_y": True}, ("--log-y",)),
        ({"x": "n_m", "lines": "n_m"}, ("--lines", "'n_m'", "--x")),
        ({"x": "n_mm"}, ("--x", "'n_mm'", "n_m")),
        ({"x": "rho_eta_known", "lines": "n_m"}, ("--x", "not numeric")),
        ({"x": "alpha", "log_x": True, "lines": "n_m"}, ("--where", "n_phi")),
    ],
)
def test_mode_and_axis_errors(surface, tmp_path, options, needles):
    out = tmp_path / "bad.png"
    refuses(lambda: plot_surface(surface, "eps", where=WHERE, out=out, **options), *needles)
    assert not out.exists()


def test_ambiguous_cells_are_refused_as_in_tables(surface, tmp_path):
    refuses(
        lambda: plot_surface(
            surface, "eps", where={}, rows="n_phi", cols="n_m", out=tmp_path / "a.png"
        ),
        "--where must fix",
        "rho (it takes 0.51, 0.7 in these rows",
    )
    refuses(
        lambda: plot_surface(surface, "epz", where=WHERE, x="n_m", out=tmp_path / "a.png"),
        "--value",
        "'epz'",
    )


def test_log_axes_need_positive_values(surface, tmp_path):
    zeros = surface[surface.n_m == 0]
    refuses(
        lambda: plot_surface(
            zeros, "eps", where=WHERE, x="n_m", lines="n_phi", log_x=True, out=tmp_path / "z.png"
        ),
        "--log-x",
    )
    signed = surface.assign(bias_mean=surface.eps - 0.1)
    refuses(
        lambda: plot_surface(
            signed,
            "bias_mean",
            where=WHERE,
            x="n_m",
            log_y=True,
            lines="n_phi",
            out=tmp_path / "b.png",
        ),
        "--log-y",
        "'bias_mean'",
    )
    assert not list(tmp_path.iterdir())


def test_out_must_be_an_image_in_an_existing_directory(surface, tmp_path):
    options = {"where": WHERE, "rows": "n_phi", "cols": "n_m"}
    refuses(
        lambda: plot_surface(surface, "eps", out=tmp_path / "h.txt", **options), "--out", ".png"
    )
    refuses(lambda: plot_surface(surface, "eps", out=tmp_path / "no" / "h.png", **options), "--out")


def test_labels_are_readable():
    assert "Phi" in label("n_phi") and "human ratings" in label("n_phi")
    assert "varepsilon" in label("eps") and label("se_mean") == "mean SE (posterior SD)"
    assert label("something_else") == "something_else"


def test_plots_imports_matplotlib_only_inside_functions():
    tree = ast.parse(pathlib.Path(sweep.display.plots.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in top if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n.startswith("matplotlib")]


def with_estimators(surface: pd.DataFrame) -> pd.DataFrame:
    """The surface for bayes and judge_only, sampled: judge_only covers α in none of 400
    replicates (coverage far below 0.95) where it applies, N_M > 0."""
    cover = {"counts": "sampled", "replicates": 400}
    bayes = surface.assign(
        estimator="bayes", coverage=0.95, coverage_low=0.93, coverage_high=0.97, **cover
    )
    applies = surface.n_m > 0
    judge = surface.assign(
        estimator="judge_only",
        eps=np.where(applies, 0.01, np.nan),
        coverage=np.where(applies, 0.0, np.nan),
        coverage_low=np.where(applies, 0.0, np.nan),
        coverage_high=np.where(applies, 0.0095, np.nan),
        **cover,
    )
    return pd.concat([bayes, judge], ignore_index=True)


def test_titles_name_the_estimator_and_the_posterior_s_method_only(surface):
    frame = with_estimators(surface)
    where = {**WHERE, "estimator": "judge_only"}
    title = surface_figure(frame, "eps", where=where, rows="n_phi", cols="n_m").get_suptitle()
    assert "judge_only" in title and "sampled counts" in title and "400 replicates" in title
    assert "quadrature" not in title and "NUTS" not in title
    nuts = frame.assign(method="nuts")
    where = {**WHERE, "estimator": "bayes"}
    title = surface_figure(nuts, "eps", where=where, rows="n_phi", cols="n_m").get_suptitle()
    assert "bayes (NUTS)" in title
    # Lines of estimators: each named in the legend, the method given for the posterior.
    fig = surface_figure(frame, "eps", where={**WHERE, "n_phi": 100}, x="n_m", lines="estimator")
    assert "bayes by quadrature" in fig.get_suptitle()
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["bayes", "judge_only"]
    # Classical estimators alone (their rows have no method): no method named.
    judge = frame[frame.estimator == "judge_only"].assign(method=None)
    title = surface_figure(
        judge, "eps", where={**WHERE, "n_phi": 100}, x="n_m", lines="estimator"
    ).get_suptitle()
    assert "quadrature" not in title and "bayes" not in title


def test_titles_name_tied_axes(surface):
    # ρ down the rows and η tied to it: the title says η = ρ rather than leaving η out.
    where = {"gamma": 0.05, "n_m": 1000}
    title = surface_figure(surface, "eps", where=where, rows="rho", cols="n_phi").get_suptitle()
    assert r"$\eta$ = $\rho$" in title and "expected counts" in title
    title = surface_figure(surface, "eps", where=where, x="n_phi", lines="rho").get_suptitle()
    assert r"$\eta$ = $\rho$" in title
    # Fixed and equal: one value for both; not tied (η = 0.8 throughout): η's value alone.
    title = surface_figure(surface, "eps", where=WHERE, rows="n_phi", cols="n_m").get_suptitle()
    assert r"$\rho$ = $\eta$ = 0.7" in title and r"$\eta$ = $\rho$" not in title
    other = surface.assign(eta=0.8)
    title = surface_figure(other, "eps", where=where, rows="rho", cols="n_phi").get_suptitle()
    assert r"$\eta$ = 0.8" in title and r"$\eta$ = $\rho$" not in title


def test_cells_of_too_narrow_intervals_are_hatched_and_their_points_hollow(surface, tmp_path):
    frame = with_estimators(surface)
    where = {**WHERE, "estimator": "judge_only"}
    fig = surface_figure(frame, "eps", where=where, rows="n_phi", cols="n_m")
    hatched = [p for p in fig.axes[0].patches if p.get_hatch()]
    assert len(hatched) == 3 * 4  # N_Φ × the N_M > 0 where judge_only applies
    assert {(round(p.get_x() + 0.5), round(p.get_y() + 0.5)) for p in hatched} == {
        (j, i) for i in range(3) for j in range(1, 5)
    }
    assert fig.get_suptitle().endswith(
        "\n(hatched: coverage far below 0.95; $\\varepsilon$ not valid)"
    )
    # The posterior covers: nothing hatched, no note; nor for a value not read off intervals.
    fig = surface_figure(
        frame, "eps", where={**WHERE, "estimator": "bayes"}, rows="n_phi", cols="n_m"
    )
    assert (
        not [p for p in fig.axes[0].patches if p.get_hatch()]
        and "hatched" not in fig.get_suptitle()
    )
    fig = surface_figure(frame, "divergences", where=where, rows="n_phi", cols="n_m")
    assert not [p for p in fig.axes[0].patches if p.get_hatch()]
    # Lines: judge_only's points hollow, the posterior's filled.
    lines = {"x": "n_m", "lines": "estimator"}
    fig = surface_figure(frame, "eps", where={**WHERE, "n_phi": 100}, **lines)
    hollow = [
        line
        for line in fig.axes[0].get_lines()
        if line.get_marker() == "o" and line.get_markerfacecolor() == "white"
    ]
    assert len(hollow) == 1 and len(hollow[0].get_xdata()) == 4
    assert "(hollow: coverage far below 0.95; $\\varepsilon$ not valid)" in fig.get_suptitle()
    # The nominal level is the sweep's (sweep.load_surface records it in attrs), or as given.
    frame.attrs["interval"] = 0.005
    fig = surface_figure(frame, "eps", where=where, rows="n_phi", cols="n_m")
    assert not [p for p in fig.axes[0].patches if p.get_hatch()]
    fig = surface_figure(frame, "eps", where=where, rows="n_phi", cols="n_m", interval=0.95)
    assert len([p for p in fig.axes[0].patches if p.get_hatch()]) == 12
    fig.clear()
    out = tmp_path / "judge.png"
    plot_surface(frame, "eps", where=where, rows="n_phi", cols="n_m", out=out, interval=0.95)
    read_png(out)


def test_a_figure_of_an_unfinished_sweep_says_so(surface):
    frame = surface.copy()
    frame.attrs.update(shards=5, shards_done=3)  # as sweep.load_surface records them
    for options in ({"rows": "n_phi", "cols": "n_m"}, {"x": "n_m", "lines": "n_phi"}):
        title = surface_figure(frame, "eps", where=WHERE, **options).get_suptitle()
        assert title.endswith("\n(3 of 5 shards done: part of the sweep)")
    frame.attrs.update(shards_done=5)
    title = surface_figure(frame, "eps", where=WHERE, rows="n_phi", cols="n_m").get_suptitle()
    assert "shards" not in title


def test_a_heatmap_across_estimators_names_every_one(surface):
    # Six names at one column's width overlap level: they slant, and none is hidden (a
    # hidden name cannot be read off its neighbours as a hidden number can).
    base = with_estimators(surface)
    bayes = base[base.estimator == "bayes"]
    names = ["bayes", "human_only", "judge_only", "ppi", "ppi_pp", "rogan_gladen"]
    frame = pd.concat([bayes.assign(estimator=name) for name in names], ignore_index=True)
    fig = surface_figure(frame, "eps", where={**WHERE, "n_m": 1000}, rows="n_phi", cols="estimator")
    ax = fig.axes[0]
    assert list(shown_ticklabels(fig, ax.xaxis)) == names
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {45.0}
    # Numbers keep their upright labels (thinned where crowded).
    fig = surface_figure(surface, "eps", where=WHERE, rows="n_phi", cols="n_m")
    assert {t.get_rotation() for t in fig.axes[0].get_xticklabels()} == {0.0}
