"""Estimators side by side in a sweep: the same counts, long-form tables, bayes bits kept."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pandas as pd
import pytest
import yaml

from binmetric_sweep import sweep
from binmetric_sweep.kernels.estimators import REASONS, estimator_names, registered
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.shards import COUNT_COLUMNS
from binmetric_sweep.sweep.spec.config import load_sweep, spec_digest
from tests.kernels.helpers import counts

from .helpers import CONFIGS, REPO, refuses, sorted_surface, tiny

#: The last commit before estimators: its sweeps are what ``bayes`` rows must repeat.
BEFORE = "617735e7f6e13fce08592888ff65a216c86dbc4d"
#: Columns renamed since then.
RENAMED = {"post_mean": "estimate", "post_sd": "se", "sd_mean": "se_mean", "sd_sd": "se_sd"}

# A tiny sweep over every design: shared and separate paired sets, and ρ, η known.
DESIGNS = tiny(
    estimators="all",
    grid=[
        {"alpha": [0.3, 0.6], "rho": [0.7, 0.9], "eta": "rho", "n_phi": [0, 100], "n_m": [0, 1000]},
        {"alpha": [0.2], "rho": [0.8], "eta": [0.7], "n_phi": [50], "n_rho_eta": [40],
         "psi": [0.5], "n_m": [500]},
        {"alpha": [0.4], "rho": [0.8], "eta": [0.75], "n_phi": [30], "n_rho_eta": "known",
         "n_m": [0, 2000]},
    ],
)  # fmt: skip


@pytest.fixture(scope="module")
def designs(tmp_path_factory):
    out = tmp_path_factory.mktemp("designs") / "out"
    sweep.run(DESIGNS, out)
    return sweep.load_fits(out), sweep.load_surface(out)


@pytest.fixture(scope="module")
def bayes_only(tmp_path_factory):
    out = tmp_path_factory.mktemp("bayes") / "out"
    sweep.run({**DESIGNS, "estimators": ["bayes"]}, out)
    return sweep.load_fits(out), sweep.load_surface(out)


def test_every_estimator_sees_the_same_counts_and_gives_its_kernel_s_numbers(designs):
    fits, surface = designs
    assert list(fits.groupby(["config_id", "replicate"]).size().unique()) == [6]
    first = fits.groupby(["config_id", "replicate"]).first()
    for name in estimator_names():
        rows = fits[fits.estimator == name].set_index(["config_id", "replicate"])
        assert rows[list(COUNT_COLUMNS)].equals(first.loc[rows.index, list(COUNT_COLUMNS)])
    config = surface.drop_duplicates("config_id").set_index("config_id")
    for estimator in [e for e in registered() if not e.posterior]:
        rows = fits[fits.estimator == estimator.name]
        c = config.loc[rows.config_id]
        lanes = counts(
            **{name: rows[name].to_numpy(float) for name in COUNT_COLUMNS},
            **{name: c[name].to_numpy() for name in ("n_phi", "n_m", "rho", "eta")},
            rho_eta_known=c.rho_eta_known.to_numpy(bool),
        )
        expected = estimator.estimate(lanes, 0.95)
        applies = np.asarray(expected.applicable)
        assert (rows.applicable.to_numpy() == applies).all()
        for column, field in (("estimate", 0), ("se", 1), ("ci_low", 2), ("ci_high", 3)):
            got = rows[column].to_numpy(float)
            want = np.asarray(expected[field])
            np.testing.assert_allclose(got[applies], want[applies], rtol=0, atol=1e-12)
            assert np.isnan(got[~applies]).all() and rows[column][~applies].isna().all()
        reasons = rows.reason.to_numpy(object)
        assert all(r is None or r is pd.NA or r != r for r in reasons[applies])
        assert set(reasons[~applies]) <= set(REASONS[1:])


def test_each_design_shows_where_each_estimator_applies(designs):
    _, surface = designs
    s = surface[surface.gamma == 0.05].set_index(["config_id", "estimator"])
    by_kind = surface[surface.gamma == 0.05]
    known = by_kind[by_kind.rho_eta_known]
    assert (known[known.estimator.isin(["ppi", "ppi_pp"])].not_applicable == 3).all()
    assert (known[(known.estimator == "rogan_gladen") & (known.n_m > 0)].not_applicable == 0).all()
    none = by_kind[(by_kind.n_phi == 0) & (by_kind.n_m == 0)]
    assert (none[none.estimator == "bayes"].eps == 1.0).all()
    assert (none[none.estimator != "bayes"].not_applicable == 3).all()
    assert np.isnan(none[none.estimator != "bayes"].eps).all()
    assert len(s) == len(surface) // 2


def test_bayes_rows_are_the_bayes_only_sweep_s_bit_for_bit(designs, bayes_only):
    fits, surface = designs
    fits_b, surface_b = bayes_only
    mine = fits[fits.estimator == "bayes"].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        sorted_surface(mine), sorted_surface(fits_b), check_exact=True, check_dtype=False
    )
    mine = surface[surface.estimator == "bayes"]
    pd.testing.assert_frame_equal(sorted_surface(mine), sorted_surface(surface_b), check_exact=True)


def _sweep_before(spec: dict, out, tmp_path) -> None:
    """Run ``spec`` with the package as it was at :data:`BEFORE` (git archive, a subprocess)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("no git history beside this checkout")
    archive = tmp_path / "before.tar"
    made = subprocess.run(
        ["git", "-C", str(REPO), "archive", "-o", str(archive), BEFORE, "kernels", "sweep"],
        capture_output=True,
    )
    if made.returncode != 0:
        pytest.skip(f"commit {BEFORE[:7]} not in this clone's history")
    site = tmp_path / "site" / "binmetric_sweep"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    with tarfile.open(archive) as tar:
        tar.extractall(site, filter="data")
    code = (
        "import sys, yaml; from binmetric_sweep import sweep; "
        "sweep.run(yaml.safe_load(sys.argv[1]), sys.argv[2], progress=False)"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run(
        [sys.executable, "-c", code, yaml.safe_dump(spec), str(out)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_bayes_rows_repeat_a_sweep_run_before_estimators_field_by_field(designs, tmp_path):
    """The posterior's fits and surface, every field, as the code before this change wrote them."""
    # The shared design's block: the programs this session has compiled, so that the
    # earlier code's (the same programs) come from the compile cache.
    spec = {k: v for k, v in DESIGNS.items() if k != "estimators"}
    spec["grid"] = spec["grid"][:1]
    _sweep_before(spec, tmp_path / "before", tmp_path)
    before_fits = pd.read_parquet(tmp_path / "before" / "fits").rename(columns=RENAMED)
    before_surface = pd.read_parquet(tmp_path / "before" / "surface").rename(columns=RENAMED)
    fits, surface = designs
    shared = set(surface.config_id[surface.shared_paired])
    for now, before in ((fits, before_fits), (surface, before_surface)):
        now = now[(now.estimator == "bayes") & now.config_id.isin(shared)]
        now = sorted_surface(now.drop(columns="estimator"))
        before = sorted_surface(before)
        assert len(now) == len(before) > 0
        for column in before.columns:
            a, b = now[column].to_numpy(), before[column].to_numpy()
            if a.dtype.kind == "f":
                same = (a == b) | (np.isnan(a) & np.isnan(b))
            else:
                same = pd.Series(a).astype(str).to_numpy() == pd.Series(b).astype(str).to_numpy()
            assert same.all(), f"{column}: {(~same).sum()} rows differ"


def test_a_sweep_file_without_estimators_keeps_its_digest():
    """configs/quickstart.yaml's digest as 0.35.0 wrote it: its directories still resume."""
    assert spec_digest(load_sweep(CONFIGS / "quickstart.yaml")) == QUICKSTART_DIGEST
    with_key = load_sweep({**tiny(), "estimators": ["bayes"]})
    assert spec_digest(with_key) == spec_digest(load_sweep(tiny()))
    assert spec_digest(load_sweep(tiny(estimators="all"))) != spec_digest(with_key)


QUICKSTART_DIGEST = "f25571bd3ad8072f"


def test_without_bayes_method_and_sampler_change_nothing():
    a = load_sweep(tiny(estimators=["ppi", "ppi_pp"], method="nuts"))
    b = load_sweep(tiny(estimators=["ppi_pp", "ppi"], method="quadrature", sampler={"chains": 8}))
    assert spec_digest(a) == spec_digest(b) and a.estimators == ("ppi", "ppi_pp")
    assert "method" not in a.canonical() and not a.has_posterior


@pytest.mark.parametrize(
    ("given", "needles"),
    [
        (["bayes", "ppl"], ("estimators: 'ppl' is not an estimator", "allowed: bayes, human_only")),
        ([], ("estimators: [] is not a list of estimators", "or all")),
        (["ppi", "ppi"], ("names an estimator twice",)),
        ({"ppi": 1}, ("is not a list of estimators",)),
    ],
)
def test_an_unknown_or_repeated_estimator_is_refused_in_one_line(given, needles):
    message = refuses(lambda: load_sweep(tiny(estimators=given)), *needles)
    assert "\n" not in message


def test_classical_only_sweep_runs_without_a_posterior(tmp_path):
    report = sweep.run(tiny(estimators=["human_only", "ppi_pp"], replicates=20), tmp_path / "o")
    assert report.computed == report.shards
    surface = sweep.load_surface(tmp_path / "o", estimator="ppi_pp", gamma=0.05)
    assert surface.method.isna().all() and len(surface) == 16
    fits = sweep.load_fits(tmp_path / "o", estimator="human_only")
    assert len(fits) == 16 * 20 and fits.rhat.isna().all() and (fits.divergences == 0).all()


def test_estimator_is_an_axis_of_show_and_plot(designs, tmp_path):
    fits, surface = designs
    from binmetric_sweep.sweep.display.tables import format_table, pivot_surface

    where = {"alpha": 0.6, "rho": 0.9, "n_m": 1000, "gamma": 0.05, "shared_paired": True}
    table = pivot_surface(surface, "n_phi", "estimator", "coverage", where)
    assert list(table.columns) == sorted(estimator_names()) and list(table.index) == [0, 100]
    assert "ppi_pp" in format_table(table, "coverage")
    with pytest.raises(SweepError, match="--where must fix estimator"):
        pivot_surface(
            surface, "n_phi", "n_m", "coverage", {k: v for k, v in where.items() if k != "n_m"}
        )


def test_a_sweep_of_estimators_resumes_where_it_stopped(designs, tmp_path):
    """Shards lost from a finished directory are recomputed: the same rows, none twice."""
    fits, surface = designs
    out = tmp_path / "out"
    first = sweep.run(DESIGNS, out)
    for table in ("fits", "surface"):
        (out / table / "shard-00001.parquet").unlink()
    again = sweep.run(DESIGNS, out)
    assert (first.computed, again.already_done, again.computed) == (
        first.shards,
        first.shards - 1,
        1,
    )
    pd.testing.assert_frame_equal(
        sorted_surface(sweep.load_fits(out)), sorted_surface(fits), check_exact=True
    )
    pd.testing.assert_frame_equal(
        sorted_surface(sweep.load_surface(out)), sorted_surface(surface), check_exact=True
    )
