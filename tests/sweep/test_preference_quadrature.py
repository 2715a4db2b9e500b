"""A preference sweep's posterior by quadrature where the judges' confusion is known
(``method: quadrature``, ``n_rho_eta: known``): the fits are exact and are the kernel's
(kernels/categorical/quadrature.py) on the same counts; without a known confusion the
method is refused."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import yaml

from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout
from binmetric_sweep.kernels.categorical.families import preference_confusion
from binmetric_sweep.sweep import api
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.categorical_fits import fit_categorical_lanes
from binmetric_sweep.sweep.execution.programs import (
    KNOWN_CONFUSION_RULE,
    categorical_quadrature_program,
)
from binmetric_sweep.sweep.execution.schedule import schedule_for
from binmetric_sweep.sweep.spec.config import load_sweep

PREFERENCE = Layout((0.0, 0.5, 1.0))
SWEEP = {
    "name": "prefs-known",
    "ratings": "preference",
    "counts": "sampled",
    "replicates": 6,
    "seed": 5,
    "method": "quadrature",
    "estimators": ["bayes", "ppi"],
    "grid": {
        "win": [0.4],
        "tie": [0.2],
        "accuracy": [0.6, 0.9],
        "position_bias": [0.3],
        "n_phi": [0, 80],
        "n_rho_eta": "known",
        "n_m": [0, 3000],
    },
    "shard_size": 3,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("prefs-known") / "out"
    api.run(SWEEP, out)
    return out


def test_the_posterior_is_exact_and_the_kernel_s(run):
    fits = api.load_fits(run, estimator="bayes")
    assert len(fits) == 8 * 6 and fits.exact.all() and fits.applicable.all()
    assert fits.rhat.isna().all() and fits.ess.isna().all()
    assert (fits.divergences == 0).all() and (fits.steps == 0).all()
    assert ((fits.ci_low < fits.estimate) & (fits.estimate < fits.ci_high)).all()
    surface = api.load_surface(run, estimator="bayes")
    assert set(surface.method) == {"quadrature"} and surface.rhat_max.isna().all()
    # The kernel's numbers on the fits' own counts, C from the configuration's judge.
    configs = api.load_surface(run, estimator="bayes").drop_duplicates("config_id")
    judge = {
        row.config_id: np.asarray(preference_confusion(row.accuracy, row.tie_rate, 0.3))
        for row in configs.itertuples()
    }
    lanes = CategoricalCounts(
        human=np.stack(fits.human.map(np.asarray)).astype(float),
        paired=np.zeros((len(fits), 3, 3)),
        judged=np.stack(fits.judged.map(np.asarray)).astype(float),
        confusion=np.stack([judge[c] for c in fits.config_id]),
        known=np.ones(len(fits), bool),
    )
    size = schedule_for("cpu").call_lanes(KNOWN_CONFUSION_RULE)
    index = np.resize(np.arange(len(fits)), size)
    assert len(fits) <= size
    kernel = categorical_quadrature_program(PREFERENCE, 0.95)(
        jax.tree.map(lambda x: x[index], lanes)
    )
    expected = np.asarray(kernel)[:, : len(fits)]
    got = fits[["estimate", "se", "ci_low", "ci_high"]].to_numpy().T
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    # With no evidence at all the posterior is the flat Dirichlet's: θ has mean ½, SD 1/√24.
    empty = (lanes.human.sum(1) == 0) & (lanes.judged.sum(1) == 0)
    assert empty.any()
    np.testing.assert_allclose(fits.se[empty], 1 / np.sqrt(24), rtol=1e-10)
    ppi = api.load_fits(run, estimator="ppi")
    assert [list(h) for h in ppi.human] == [list(h) for h in fits.human]


def test_each_distinct_lane_is_fitted_once():
    h = np.array([[3.0, 1.0, 6.0], [0.0, 0.0, 0.0], [3.0, 1.0, 6.0]])
    m = np.array([[40.0, 10.0, 50.0], [5.0, 1.0, 4.0], [40.0, 10.0, 50.0]])
    c = np.broadcast_to(np.asarray(preference_confusion(0.7, 1 / 3, 0.0)), (3, 3, 3))
    counts = CategoricalCounts(h, np.zeros((3, 3, 3)), m, c.copy(), np.ones(3, bool))
    done = []
    fits, info = fit_categorical_lanes(
        counts, None, PREFERENCE, False, method="quadrature", on_chunk=done.append
    )
    assert info.distinct == 2 and sum(done) == 3 and set(info.rules) == {KNOWN_CONFUSION_RULE}
    assert fits.post_mean[0] == fits.post_mean[2] != fits.post_mean[1] and fits.exact.all()
    with pytest.raises(ValueError, match="confusion known"):
        fit_categorical_lanes(
            counts._replace(known=np.zeros(3, bool)), None, PREFERENCE, False, method="quadrature"
        )


@pytest.mark.parametrize(
    ("grid", "where"),
    [
        ({**SWEEP["grid"], "n_rho_eta": "n_phi"}, "it has n_rho_eta 'n_phi'"),
        ([SWEEP["grid"], {**SWEEP["grid"], "n_rho_eta": [100]}], "grid[1] has n_rho_eta [100]"),
    ],
)
def test_quadrature_without_a_known_confusion_is_refused(grid, where, tmp_path, capsys):
    with pytest.raises(SweepError, match="method: 'quadrature' applies to a preference") as e:
        load_sweep({**SWEEP, "grid": grid})
    assert where in str(e.value) and "n_rho_eta: known" in str(e.value) and "\n" not in str(e.value)
    # The classical estimators alone take no method: allowed.
    load_sweep({**SWEEP, "grid": grid, "estimators": ["ppi"]})
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({**SWEEP, "grid": grid}))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "method: 'quadrature' applies" in err[0]
    assert not (tmp_path / "out").exists()
