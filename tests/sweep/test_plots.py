import ast
import itertools
import pathlib

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from binmetric_sweep import sweep
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.plots import label, plot_surface

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
    assert path.is_file() and path.stat().st_size > 0
    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels.std() > 0  # something was drawn
    return pixels


def refuses(fn, *needles: str) -> None:
    with pytest.raises(SweepError) as info:
        fn()
    message = str(info.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message


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


@pytest.mark.parametrize("log_x", [None, True, False])
def test_lines_on_a_log_axis_with_zeros(surface, tmp_path, log_x):
    # N_M spans 0 and 10..100000: automatic log-x, with the zero on a linear stretch.
    out = tmp_path / f"log-{log_x}.png"
    read_png(
        plot_surface(surface, "eps", where=WHERE, x="n_m", lines="n_phi", log_x=log_x, out=out)
    )


def test_lines_along_a_partly_null_axis_and_a_title(surface, tmp_path):
    out = tmp_path / "nre.png"
    plot_surface(surface, "eps", where=WHERE, x="n_rho_eta", lines="n_m", out=out, title="T")
    read_png(out)


@pytest.mark.parametrize(
    ("options", "needles"),
    [
        ({}, ("--rows", "--x")),
        ({"rows": "n_phi"}, ("--cols",)),
        ({"cols": "n_m"}, ("--rows",)),
        ({"rows": "n_phi", "cols": "n_m", "x": "n_m"}, ("--x", "--rows")),
        ({"lines": "n_phi"}, ("--lines", "--x")),
        ({"rows": "n_phi", "cols": "n_m", "log_x": True}, ("--log-x",)),
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
        "rho (it takes 0.51, 0.7 in these rows)",
    )
    refuses(
        lambda: plot_surface(surface, "epz", where=WHERE, x="n_m", out=tmp_path / "a.png"),
        "--value",
        "'epz'",
    )


def test_log_x_needs_a_positive_value(surface, tmp_path):
    zeros = surface[surface.n_m == 0]
    refuses(
        lambda: plot_surface(
            zeros, "eps", where=WHERE, x="n_m", lines="n_phi", log_x=True, out=tmp_path / "z.png"
        ),
        "--log-x",
    )


def test_out_must_be_an_image_in_an_existing_directory(surface, tmp_path):
    options = {"where": WHERE, "rows": "n_phi", "cols": "n_m"}
    refuses(
        lambda: plot_surface(surface, "eps", out=tmp_path / "h.txt", **options), "--out", ".png"
    )
    refuses(lambda: plot_surface(surface, "eps", out=tmp_path / "no" / "h.png", **options), "--out")


def test_labels_are_readable():
    assert "Phi" in label("n_phi") and "human ratings" in label("n_phi")
    assert "varepsilon" in label("eps") and label("sd_mean") == "mean posterior SD"
    assert label("something_else") == "something_else"


def test_plots_imports_matplotlib_only_inside_functions():
    tree = ast.parse(pathlib.Path(sweep.plots.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in top if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n.startswith("matplotlib")]
