"""The battles leaderboard figure (sweep/compare/arena_figure.py): real matplotlib drawing on
Agg from synthetic posterior draws and a PPR estimate, read back as a PNG.

The draws are synthetic (strengths from independent normals, win rates from Davidson's
probabilities at ν = 1, each judge's confusion a Dirichlet around a positional one); what is
checked is what the figure draws from them, against the kernels' own summaries.
"""

from __future__ import annotations

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pytest

from binmetric_sweep.kernels.arena.logdensity import davidson_log_probabilities
from binmetric_sweep.kernels.arena.posterior import (
    ArenaDraws,
    rank_draws,
    rank_intervals,
    simultaneous_rank_sets,
)
from binmetric_sweep.kernels.arena.ppr import PPRWinRates, rank_sets
from binmetric_sweep.sweep.compare.arena_figure import (
    CONFUSION_HEIGHT,
    confusion_summary,
    draw_leaderboard,
    leaderboard_figure,
    summarise_method,
)
from binmetric_sweep.sweep.compare.figure import FIGURE_WIDTH, MAX_HEIGHT
from binmetric_sweep.sweep.display.plots import DPI

from .helpers import refuses

NAMES = ("vicuna", "koala", "alpaca", "dolly", "llama", "chatglm")


def synthetic_draws(
    seed: int, systems: int = 6, judges: int = 2, draws: int = 600, spread: float = 0.3
) -> ArenaDraws:
    rng = np.random.default_rng(seed)
    mean = np.linspace(1.2, -1.2, systems)[rng.permutation(systems)]
    s = mean + spread * rng.standard_normal((draws, systems))
    s -= s.mean(axis=1, keepdims=True)
    d = s[:, :, None] - s[:, None, :]
    p = np.exp(np.asarray(davidson_log_probabilities(d, np.zeros(()))))
    off = 1.0 - np.eye(systems)
    win = ((p[..., 2] + 0.5 * p[..., 1]) * off).sum(axis=2) / (systems - 1)
    i, j = np.triu_indices(systems, 1)
    base = np.array([[6.0, 1.0, 3.0], [2.0, 2.0, 6.0], [0.5, 1.0, 8.5]])  # favours side A
    confusion = rng.gamma(base * 30, size=(draws, judges, 3, 3))
    confusion /= confusion.sum(axis=-1, keepdims=True)
    return ArenaDraws(
        strengths=s,
        log_nu=np.zeros(draws),
        win_rates=win,
        better=d > 0,
        pairs=p[:, i, j],
        log_confusion=np.log(confusion) if judges else None,
        rhat_max=1.0,
        ess_min=float(draws),
        divergences=0,
    )


def synthetic_ppr(seed: int, systems: int = 6) -> PPRWinRates:
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0.2, 0.7, systems)
    a = rng.normal(size=(systems, systems)) * 0.02
    return PPRWinRates(
        theta=theta, cov=a @ a.T + 1e-4 * np.eye(systems), lam=0.7, human=500, judge_only=5000
    )


@pytest.fixture(autouse=True)
def no_figures_left_open():
    yield
    assert plt.get_fignums() == []


def _axes(fig) -> dict[str, object]:
    return {ax.get_label(): ax for ax in fig.axes}


def test_a_posterior_s_summary_is_the_kernels():
    draws = synthetic_draws(0)
    summary = summarise_method(draws, 0.9)
    ranks = rank_draws(draws.strengths)
    assert np.array_equal(summary.rank_low, rank_intervals(ranks, 0.9)[0])
    assert np.array_equal(summary.set_high, simultaneous_rank_sets(ranks, 0.9)[1])
    assert np.allclose(summary.win, draws.win_rates.mean(axis=0))
    assert np.allclose(summary.win_low, np.quantile(draws.win_rates, 0.05, axis=0))
    assert np.all(summary.rank_low <= summary.rank) and np.all(summary.rank <= summary.rank_high)
    assert not summary.share_won


def test_ppr_s_summary_is_its_rank_sets_and_normal_intervals():
    rates = synthetic_ppr(1)
    summary = summarise_method(rates, 0.95)
    low, high = rank_sets(rates.theta, rates.cov, 0.95)
    assert np.array_equal(summary.set_low, low) and np.array_equal(summary.set_high, high)
    half = 1.959963984540054 * np.sqrt(np.diag(rates.cov))
    assert np.allclose(summary.win_high - summary.win, half)
    assert np.all(np.isnan(summary.rank_low)) and summary.share_won
    assert sorted(summary.rank) == list(range(1, 7))
    assert summary.rank[np.argmax(rates.theta)] == 1


def test_confusion_summary_is_the_mean_of_the_probabilities():
    draws = synthetic_draws(2)
    mean, low, high = confusion_summary(draws.log_confusion, 0.95)
    c = np.exp(draws.log_confusion)
    assert mean.shape == (2, 3, 3) and np.allclose(mean.sum(axis=-1), 1)
    assert np.allclose(mean, c.mean(axis=0)) and np.all(low <= mean) and np.all(mean <= high)


def test_the_figure_has_its_panels_rows_in_order_and_the_judges_heatmaps():
    draws = synthetic_draws(3)
    methods = {"bayes": draws, "human_only": synthetic_draws(4, judges=0), "ppr": synthetic_ppr(5)}
    fig = leaderboard_figure(NAMES, methods, 0.95, judges=("gpt-4", "gpt-3.5"), source="b.csv")
    axes = _axes(fig)
    assert len(fig.axes) == 4
    assert set(axes) == {"win-rates", "ranks", "confusion-gpt-4", "confusion-gpt-3.5"}
    # Rows best first by bayes's mean win rate.
    best_first = [NAMES[i] for i in np.argsort(-draws.win_rates.mean(axis=0))]
    labels = [t.get_text() for t in axes["win-rates"].get_yticklabels()]
    assert labels == best_first
    # Every method drawn in both panels; ppr has no central interval.
    gids = {artist.get_gid() for ax in fig.axes for artist in ax.get_children()}
    for name in methods:
        assert {f"win-{name}", f"win-interval-{name}", f"rank-set-{name}"} <= gids
    assert "rank-interval-bayes" in gids
    heat = axes["confusion-gpt-4"]
    shown = heat.get_images()[0].get_array()
    mean = np.exp(draws.log_confusion).mean(axis=0)[0]
    assert np.allclose(shown, mean[::-1, ::-1])  # rows and columns A, tie, B
    texts = [t.get_text() for t in heat.texts]
    assert len(texts) == 9 and texts[0].startswith(f"{mean[2, 2]:.2f}\n")
    assert "ppr: share of battles won" in axes["win-rates"].get_xlabel()
    assert fig._suptitle.get_text().startswith("b.csv — leaderboard: 3 methods, 95 %")
    assert fig.get_figwidth() == FIGURE_WIDTH
    fig.clear()


def test_seven_long_method_names_fit_in_the_legend():
    """--estimator all with two judges: seven fits, named with their judges."""
    names = ["bayes", "human_only"]
    names += [f"{m}, judge gpt-4-0125-preview-{i}" for m in ("judge_only", "ppr") for i in (1, 2)]
    names += ["ppr"]
    methods = {
        n: synthetic_draws(i) if "ppr" not in n else synthetic_ppr(i) for i, n in enumerate(names)
    }
    fig = leaderboard_figure(NAMES, methods, 0.95)
    fig.draw_without_rendering()
    legend = next(x for x in fig.legends if x.get_gid() == "methods")
    box = legend.get_window_extent()
    assert 0 <= box.x0 and box.x1 <= fig.get_figwidth() * fig.dpi
    assert [t.get_text() for t in legend.get_texts()] == names
    fig.clear()


def test_draw_leaderboard_writes_a_readable_png(tmp_path):
    methods = {"bayes": synthetic_draws(6), "ppr": synthetic_ppr(7)}
    out = draw_leaderboard(tmp_path / "sub" / "board.png", NAMES, methods, 0.9, ("gpt-4", "x"))
    image = matplotlib.image.imread(out)
    assert image.ndim == 3 and image.shape[1] == round(FIGURE_WIDTH * DPI)
    assert image.shape[0] >= round(CONFUSION_HEIGHT * DPI)
    assert image[..., :3].std() > 0.05  # something is drawn


def test_without_judges_two_panels_and_many_systems_fit_the_page():
    many = [f"system-{i:03d}" for i in range(60)]
    wide = synthetic_ppr(9, 60)._replace(cov=np.eye(60))  # intervals past 0 and 1
    methods = {"bayes": synthetic_draws(8, systems=60, judges=0, draws=200), "ppr": wide}
    fig = leaderboard_figure(many, methods, 0.95)
    assert len(fig.axes) == 2 and set(_axes(fig)) == {"win-rates", "ranks"}
    assert fig.get_figheight() <= MAX_HEIGHT
    low, high = _axes(fig)["win-rates"].get_xlim()
    assert 0.0 <= low < high <= 1.0
    fig.clear()


def test_bad_input_is_refused_and_nothing_written(tmp_path):
    draws = synthetic_draws(9)
    out = tmp_path / "board.png"
    cases = [
        ((NAMES[:5], {"bayes": draws}, 0.95), "methods: 'bayes' ranks 6 systems, not 5"),
        ((NAMES, {}, 0.95), "methods: none given"),
        ((NAMES, {"bayes": draws}, 1.5), "level: 1.5"),
        ((("a", "a", *NAMES[2:]), {"bayes": draws}, 0.95), "systems: 'a' appears twice"),
        ((NAMES, {"bayes": draws, "odd": np.zeros(6)}, 0.95), "methods: 'odd' is a ndarray"),
    ]
    for args, message in cases:
        refuses(lambda args=args: draw_leaderboard(out, *args), message)
    refuses(
        lambda: draw_leaderboard(out, NAMES, {"bayes": draws}, 0.95, ("a", "b", "c")),
        "judges: 3 named, 'bayes' has 2 confusions",
    )
    refuses(
        lambda: draw_leaderboard(out, NAMES, {"ppr": synthetic_ppr(1)}, 0.95, ("a",)),
        "judges: no method has the judges' confusions to draw",
    )
    refuses(
        lambda: draw_leaderboard(tmp_path / "board.unknown", NAMES, {"bayes": draws}, 0.95),
        "-o",
    )
    assert list(tmp_path.iterdir()) == []
