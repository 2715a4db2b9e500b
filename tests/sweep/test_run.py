"""The whole pipeline in-process: sweep file → Parquet, resume, determinism, metadata."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
import warnings

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml

from binmetric_sweep import sweep
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.runners import run_local
from binmetric_sweep.sweep.execution.schedule import ACCELERATOR_SHARDS_AHEAD, schedule_for
from binmetric_sweep.sweep.execution.shards import _node_name, device_name, make_shards, run_shard
from binmetric_sweep.sweep.spec.config import load_sweep
from binmetric_sweep.sweep.spec.grid import expand_grid
from tests.kernels.helpers import published_table

from .helpers import CONFIGS, sorted_surface, tiny


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "out"
    report = sweep.run(tiny(), out)
    return out, report


def test_surface_and_fits_have_the_promised_columns(tiny_run):
    out, report = tiny_run
    assert (report.shards, report.computed, report.configurations) == (6, 6, 16)
    surface = sweep.load_surface(out)
    for column in (
        "config_id",
        "alpha",
        "rho",
        "eta",
        "n_phi",
        "n_rho_eta",
        "rho_eta_known",
        "psi",
        "n_m",
        "counts",
        "method",
        "replicates",
        "estimator",
        "gamma",
        "eps",
        "se_mean",
        "se_sd",
        "se_ratio",
        "bias_mean",
        "bias_sd",
        "bias_mcse",
        "rmse",
        "width_mean",
        "coverage",
        "coverage_mcse",
        "coverage_low",
        "coverage_high",
        "rhat_max",
        "ess_min",
        "divergences",
        "nonfinite",
        "not_applicable",
    ):
        assert column in surface.columns, column
    assert (surface.estimator == "bayes").all() and (surface.not_applicable == 0).all()
    assert len(surface) == 16 * 2  # one row per (configuration, gamma)
    fits = sweep.load_fits(out)
    for column in (
        "config_id",
        "replicate",
        "estimator",
        "n_pos",
        "n_tp",
        "n_pos_paired",
        "n_tn",
        "n_neg_paired",
        "m_pos",
        "estimate",
        "se",
        "ci_low",
        "ci_high",
        "applicable",
        "reason",
        "rhat",
        "ess",
        "sd_mcse",
        "divergences",
    ):
        assert column in fits.columns, column
    assert len(fits) == 16 * 3 and not fits.duplicated(["config_id", "replicate"]).any()
    none = surface[(surface.n_phi == 0) & (surface.n_m == 0)]
    assert (none.eps == 1.0).all()
    assert sweep.load_surface(out, rho=0.9, gamma=0.01).shape[0] == 8


def test_generic_readers_and_metadata(tiny_run):
    out, _ = tiny_run
    (out / "surface" / ".shard-00099.parquet.123.tmp").write_bytes(b"half a file")
    try:
        assert len(pd.read_parquet(out / "surface")) == 32
        assert ds.dataset(out / "surface", format="parquet").count_rows() == 32
    finally:
        (out / "surface" / ".shard-00099.parquet.123.tmp").unlink()
    meta = pq.read_metadata(out / "fits" / "shard-00000.parquet").metadata
    assert yaml.safe_load(meta[b"binmetric_sweep.sweep"])["name"] == "tiny"
    assert meta[b"binmetric_sweep.version"].decode() == sweep.__version__
    assert meta[b"binmetric_sweep.numbers_version"].decode() == sweep.NUMBERS_VERSION
    assert meta[b"binmetric_sweep.seed"] == b"11"
    assert json.loads(meta[b"binmetric_sweep.sampler"])["chains"] == 4
    for module in ("polars", "duckdb"):
        try:
            reader = __import__(module)
        except ImportError:
            continue
        if module == "polars":
            assert reader.read_parquet(out / "surface" / "*.parquet").height == 32
        else:
            path = (out / "surface" / "*.parquet").as_posix()
            assert reader.sql(f"select count(*) from '{path}'").fetchone()[0] == 32


def test_a_shard_computed_in_process_names_its_host_without_importing_ray(monkeypatch):
    # Where Ray is not imported it cannot be running: asking it would import it
    # (an import that costs start-up time, and Ray loaded into a process that never uses it).
    monkeypatch.delitem(sys.modules, "ray", raising=False)
    assert _node_name() == socket.gethostname()
    assert "ray" not in sys.modules


@pytest.mark.parametrize("shard_size", [1, 7, 2048])
def test_shard_size_does_not_change_a_single_number(tmp_path, tiny_run, shard_size):
    reference = sorted_surface(sweep.load_surface(tiny_run[0]))
    sweep.run(tiny(shard_size=shard_size), tmp_path / "out")
    got = sorted_surface(sweep.load_surface(tmp_path / "out"))
    pd.testing.assert_frame_equal(got, reference, check_exact=True)
    fits = sorted_surface(sweep.load_fits(tmp_path / "out"))
    pd.testing.assert_frame_equal(
        fits, sorted_surface(sweep.load_fits(tiny_run[0])), check_exact=True
    )


@pytest.mark.parametrize("ahead", [1, 3])
def test_shards_begun_ahead_change_no_number(tmp_path, tiny_run, ahead):
    # On by default where a device waits on the host between shards; CPU cores do not.
    assert schedule_for("gpu").shards_ahead == ACCELERATOR_SHARDS_AHEAD == 1
    assert schedule_for("cpu").shards_ahead == 0
    progress = []
    sweep.run(tiny(shard_size=1), tmp_path / "out", shards_ahead=ahead)
    for table in (sweep.load_surface, sweep.load_fits):
        pd.testing.assert_frame_equal(
            sorted_surface(table(tmp_path / "out")),
            sorted_surface(table(tiny_run[0])),
            check_exact=True,
        )
    # Several shards in flight report their fits to one caller: every fit once.
    spec = load_sweep(tiny(shard_size=3))
    shards = make_shards(expand_grid(spec), spec.shard_size)
    results = list(
        run_local(spec, shards, schedule=schedule_for(shards_ahead=ahead), on_fits=progress.append)
    )
    assert [r.index for r in results] == list(range(len(shards)))
    assert sum(progress) == 16 * 3


def test_a_local_run_whose_caller_stops_computes_no_more_shards():
    spec = load_sweep(tiny(shard_size=1))
    shards = make_shards(expand_grid(spec), spec.shard_size)
    fitted = []

    def count(fits):
        fitted.append(1)
        return fits

    results = run_local(spec, shards, schedule=schedule_for(shards_ahead=2), fault=count)
    first = next(results)
    results.close()  # the caller gives up: an error in its write, an interrupt
    assert first.index == 0
    alone = run_shard(spec, shards[0]).fits.to_pandas()
    pd.testing.assert_frame_equal(first.fits.to_pandas(), alone, check_exact=True)
    # The shard yielded and at most the two begun ahead were fitted; no thread is left.
    assert 1 <= len(fitted) <= 3
    assert not [t for t in threading.enumerate() if t.name.startswith("shard")]


def test_a_shard_that_fails_ahead_fails_the_run_and_leaves_no_thread():
    spec = load_sweep(tiny(shard_size=2))
    shards = make_shards(expand_grid(spec), spec.shard_size)
    calls, lock = [], threading.Lock()

    def fail_second(fits):
        with lock:
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError("the second shard's fits broke")
        return fits

    taken = []
    with pytest.raises(RuntimeError, match="second shard"):
        for result in run_local(
            spec, shards, schedule=schedule_for(shards_ahead=1), fault=fail_second
        ):
            taken.append(result.index)
    assert taken == list(range(len(taken))) and len(taken) < len(shards)
    assert not [t for t in threading.enumerate() if t.name.startswith("shard")]


def test_rerun_computes_nothing_and_missing_or_corrupt_shards_are_redone(tmp_path, tiny_run):
    out = tmp_path / "out"
    sweep.run(tiny(), out)
    again = sweep.run(tiny(), out)
    assert (again.already_done, again.computed) == (6, 0)
    (out / "surface" / "shard-00002.parquet").unlink()
    path = out / "fits" / "shard-00004.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # truncated on disk
    state = sweep.status(out)
    assert state.missing == [2] and list(state.corrupt) == [4] and state.done == 4
    assert state.devices == {device_name(): 4}
    report = sweep.run(tiny(), out)
    assert report.computed == 2 and report.recomputed_corrupt == [4]
    pd.testing.assert_frame_equal(
        sorted_surface(sweep.load_surface(out)), sorted_surface(sweep.load_surface(tiny_run[0]))
    )
    # A shard computed on another kind of device (its record rewritten as if it had been):
    # status says so, since its draws would differ for the same seed.
    path = out / "fits" / "shard-00001.parquet"
    table = pq.read_table(path)
    meta = {**table.schema.metadata, b"binmetric_sweep.device": b"gpu: NVIDIA H100 80GB HBM3"}
    pq.write_table(table.replace_schema_metadata(meta), path)
    state = sweep.status(out)
    assert state.devices == {device_name(): 5, "gpu: NVIDIA H100 80GB HBM3": 1}
    assert any(line.startswith("note: shards were computed on different") for line in state.lines())


def test_another_sweep_in_the_same_directory_is_refused_naming_the_change(tmp_path, tiny_run):
    out = tmp_path / "out"
    sweep.run(tiny(), out)
    before = sorted(p.name for p in out.rglob("*"))
    with pytest.raises(SweepError, match=r"differs in .*seed"):
        sweep.run(tiny(seed=12), out)
    with pytest.raises(SweepError, match=r"grid\[0\]\.n_m"):
        sweep.run(tiny(grid={**tiny()["grid"], "n_m": [0, 10]}), out)
    assert sorted(p.name for p in out.rglob("*")) == before


def test_a_directory_with_other_numbers_is_refused_and_one_with_the_same_resumes(tmp_path):
    out = tmp_path / "out"
    sweep.run(tiny(), out)
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["numbers_version"] == sweep.NUMBERS_VERSION
    # Written before numbers versions were recorded: its own version counts.
    old = {k: v for k, v in manifest.items() if k != "numbers_version"}
    for written in ({**old, "version": "0.0.1"}, {**manifest, "numbers_version": "0.0.1"}):
        (out / "sweep.json").write_text(json.dumps(written))
        before = sorted(p.name for p in out.rglob("*"))
        with pytest.raises(SweepError, match=r"written by binmetric-sweep .*numbers of 0\.0\.1"):
            sweep.run(tiny(), out)
        assert sorted(p.name for p in out.rglob("*")) == before
    # Another package version with the same numbers finishes the sweep.
    (out / "sweep.json").write_text(json.dumps({**old, "version": sweep.NUMBERS_VERSION}))
    next(out.glob("fits/*.parquet")).unlink()
    report = sweep.run(tiny(), out)
    assert report.computed == 1 and sweep.status(out).done == report.shards


def test_seed_changes_sampled_counts_but_not_expected_ones(tmp_path):
    a = sweep.run(tiny(seed=1, shard_size=64), tmp_path / "a").out
    b = sweep.run(tiny(seed=2, shard_size=64), tmp_path / "b").out
    fa, fb = sweep.load_fits(a), sweep.load_fits(b)
    assert not np.array_equal(fa.n_pos.to_numpy(), fb.n_pos.to_numpy())


def test_published_tables_by_quadrature(tmp_path):
    spec = yaml.safe_load((CONFIGS / "published-tables.yaml").read_text())
    spec["method"] = "quadrature"
    sweep.run(spec, tmp_path / "out")
    surface = sweep.load_surface(tmp_path / "out")
    published = published_table()
    merged = published.merge(
        surface, on=["alpha", "rho", "eta", "n_phi", "n_m", "gamma"], suffixes=("_published", "")
    )
    assert len(merged) == len(published) == 112
    assert np.max(np.abs(merged.eps - merged.eps_published)) <= 0.002


def test_fault_hook_flags_nonfinite_fits_instead_of_averaging_them(tmp_path):
    def poison(fits):
        post_mean = np.array(fits.post_mean, copy=True)
        post_mean[::4] = np.nan
        post_sd = np.array(fits.post_sd, copy=True)
        post_sd[1::4] = np.inf
        return fits._replace(post_mean=post_mean, post_sd=post_sd)

    sweep.run(tiny(shard_size=64), tmp_path / "out", fault=poison)
    fits = sweep.load_fits(tmp_path / "out")
    assert (~fits.finite).sum() == 24
    surface = sweep.load_surface(tmp_path / "out", gamma=0.05)
    assert surface.nonfinite.sum() == 24 and np.isfinite(surface.se_mean).all()


def test_api_filters_are_refused_in_the_api_s_terms(tiny_run):
    out, _ = tiny_run
    for filters, message in [
        (dict(rho=0.8), "no row with rho = 0.8; rho takes 0.7, 0.9"),
        (dict(rhoo=0.8), "'rhoo' is not an axis column; choose one of: alpha, rho"),
        (dict(rho="x"), "rho='x' is not a number; rho takes 0.7, 0.9"),
    ]:
        with pytest.raises(sweep.SweepError) as err:
            sweep.load_surface(out, **filters)
        assert str(err.value) == message or str(err.value).startswith(message), str(err.value)
        assert "--where" not in str(err.value)


def test_an_unfinished_sweep_says_how_much_of_it_is_shown(tmp_path, tiny_run, capsys):
    """After an interrupted run the API warns, and show and plot say "N of M shards"."""
    from binmetric_sweep.sweep.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a finished sweep: no warning
        whole = sweep.load_surface(tiny_run[0])
    assert (whole.attrs["shards"], whole.attrs["shards_done"], whole.attrs["interval"]) == (
        6,
        6,
        0.95,
    )
    out = tmp_path / "part"
    shutil.copytree(tiny_run[0], out)
    (out / "surface" / "shard-00002.parquet").unlink()  # as a run stopped before writing it
    for load, what in (
        (sweep.load_surface, "the surface holds"),
        (sweep.load_fits, "the fits hold"),
    ):
        with pytest.warns(sweep.IncompleteSweepWarning, match=f"5 of 6 shards done: {what} part"):
            part = load(out)
        assert 0 < len(part) < len(load(tiny_run[0]))
    path = out / "fits" / "shard-00004.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.warns(sweep.IncompleteSweepWarning, match=r"4 of 6 shards done \(1 corrupt\)"):
        sweep.load_surface(out)
    where = ["--where", "alpha=0.6", "rho=0.7", "gamma=0.05"]
    table = ["--rows", "n_phi", "--cols", "n_m", *where]
    assert main(["show", str(out), *table]) == 0
    err = capsys.readouterr().err
    assert err.startswith(
        "sweep: note: 4 of 6 shards done (1 corrupt): the table shows part of the sweep; "
        f"run `sweep run` with its sweep file and --out {out} again to finish\n"
    )
    assert main(["plot", str(out), *table, "-o", str(tmp_path / "part.png")]) == 0
    assert (
        "sweep: note: 4 of 6 shards done (1 corrupt): the figure shows" in capsys.readouterr().err
    )
    assert main(["show", str(tiny_run[0]), *table]) == 0
    assert "shards done" not in capsys.readouterr().err
