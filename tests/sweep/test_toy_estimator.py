"""An estimator defined here alone, registered, goes through every layer: sweep, plan, compare,
show and plot (issue 65: a seventh estimator needs no project file edited).

The toy is the midpoint of human-only and judge-only, m = (n₊/N_Φ + m₊/N_M)/2, with SE
½√(se_H² + se_U²) (the two are independent) and a normal interval; its planning variance
¼[α(1 − α)/N_Φ + p(1 − p)/N_M], p = αρ + (1 − α)(1 − η).
"""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import yaml

from binmetric_sweep import sweep
from binmetric_sweep.kernels import estimators as ke
from binmetric_sweep.kernels.intervals import two_sided_z
from binmetric_sweep.kernels.planning_se import PlanningSE
from binmetric_sweep.sweep.cli import main

from .helpers import REPO, tiny

NAME = "midpoint"


def midpoint(counts, level):
    """The midpoint of the human and the judge's rates; needs N_Φ > 0 and N_M > 0."""
    h = counts.n_pos / jnp.maximum(counts.n_phi, 1.0)
    u = counts.m_pos / jnp.maximum(counts.n_m, 1.0)
    value = 0.5 * (h + u)
    se = 0.5 * jnp.sqrt(
        h * (1 - h) / jnp.maximum(counts.n_phi, 1.0) + u * (1 - u) / jnp.maximum(counts.n_m, 1.0)
    )
    z = two_sided_z(level)
    reason = jnp.where(
        counts.n_phi == 0, ke.NO_HUMAN, jnp.where(counts.n_m == 0, ke.NO_METRIC, ke.APPLIES)
    ).astype(jnp.int8)
    ok = reason == ke.APPLIES

    def masked(x):
        return jnp.where(ok, x, jnp.nan)

    return ke.Estimate(
        masked(value), masked(se), masked(value - z * se), masked(value + z * se), reason
    )


def midpoint_variance(alpha, rho, eta, paired, n_phi, n_m):
    p = alpha * rho + (1 - alpha) * (1 - eta)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = 0.25 * (alpha * (1 - alpha) / n_phi + p * (1 - p) / n_m)
    return np.where((n_phi > 0) & (n_m > 0), var, np.nan)


TOY = ke.Estimator(
    NAME, midpoint, "normal", PlanningSE(midpoint_variance, reads_human=True, reads_paired=False)
)


@pytest.fixture(scope="module")
def registered():
    ke.register(TOY)
    yield TOY
    ke.unregister(NAME)


def test_a_registered_estimator_is_refused_twice_and_leaves_when_unregistered():
    with pytest.raises(ValueError, match="taken"):
        ke.register(ke.HUMAN_ONLY)
    with pytest.raises(ValueError, match="project's"):
        ke.unregister("ppi")
    ke.register(TOY)
    ke.unregister(NAME)
    assert NAME not in ke.estimator_names()


def test_a_sweep_computes_it_beside_the_others_and_show_and_plot_name_it(registered, tmp_path):
    # Beside the two it averages (the posterior's fits would only cost time here).
    spec = tiny(estimators=["judge_only", NAME, "human_only"], shard_size=16, replicates=4)
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    fits = sweep.load_fits(out)
    assert list(dict.fromkeys(fits["estimator"])) == ["human_only", "judge_only", NAME]
    sizes = sweep.load_surface(out).drop_duplicates("config_id")[["config_id", "n_phi", "n_m"]]
    mine = fits[fits["estimator"] == NAME].merge(sizes, on="config_id")
    both = mine[(mine["n_phi"] > 0) & (mine["n_m"] > 0)]
    assert len(both) and both["applicable"].all() and not mine["applicable"].all()
    h, u = both["n_pos"] / both["n_phi"], both["m_pos"] / both["n_m"]
    assert np.allclose(both["estimate"], 0.5 * (h + u), rtol=0, atol=1e-15)
    keys = ["config_id", "replicate"]
    each = {n: fits[fits["estimator"] == n].set_index(keys)["estimate"] for n in fits.estimator}
    average = 0.5 * (each["human_only"] + each["judge_only"]).dropna()
    assert np.allclose(each[NAME].loc[average.index], average, rtol=0, atol=1e-15)
    surface = sweep.load_surface(out, estimator=NAME)
    assert len(surface) and surface["coverage"].notna().any()
    figure = tmp_path / "toy.png"
    where = ["--where", "alpha=0.3", "rho=0.7", "n_m=1000", "gamma=0.05"]
    assert main(["show", str(out), "--rows", "n_phi", "--cols", "estimator", *where]) == 0
    assert main(["plot", str(out), "--x", "n_phi", "--lines", "estimator", *where, "-o",
                 str(figure)]) == 0  # fmt: skip
    assert figure.stat().st_size > 0


def test_plan_all_plans_it_by_its_own_se_and_simulates_it(registered, capsys):
    argv = ["plan", "--alpha", "0.6", "--rho", "0.8", "--eta", "0.8", "--eps", "0.05"]
    argv += ["--cost-metric", "0.01", "--estimator", "all", "--replicates", "20", "--json"]
    assert main(argv) in (0, 3)
    rows = {row["estimator"]: row for row in json.loads(capsys.readouterr().out)}
    assert list(rows) == list(ke.estimator_names())
    mine = rows[NAME]
    assert mine["reason"] == "" and mine["n_phi"] > 0 and mine["n_m"] > 0
    sd = np.sqrt(midpoint_variance(0.6, 0.8, 0.8, None, mine["n_phi"], mine["n_m"]))
    z = two_sided_z(0.95) + 0.8416212335729143  # z_{1-γ/2} + z_power at γ = 0.05, power 0.8
    assert mine["eps"] == pytest.approx(np.sqrt(2) * float(z) * sd, rel=1e-12)
    assert mine["eps"] <= 0.05 and 0 <= mine["power"] <= 1 and mine["type1_rate"] <= 0.5


def test_compare_all_gives_its_estimate_per_system_and_its_z_test(registered, capsys):
    ratings = str(REPO / "examples" / "ratings.csv")
    assert main(["compare", ratings, "--estimator", "all", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    systems = pd.DataFrame(result["systems"])
    mine = systems[systems["estimator"] == NAME].set_index("system")
    human = systems[systems["estimator"] == "human_only"].set_index("system")
    judge = systems[systems["estimator"] == "judge_only"].set_index("system")
    both = human["applicable"] & judge["applicable"]
    assert both.any()
    expected = 0.5 * (human["estimate"] + judge["estimate"])[both]
    assert np.allclose(mine.loc[expected.index, "estimate"], expected, rtol=0, atol=1e-15)
    pairs = pd.DataFrame(result["pairs"])
    assert (pairs["estimator"] == NAME).sum() == len(mine) * (len(mine) - 1) // 2
