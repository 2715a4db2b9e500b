"""Outputs that cannot be written: refused before any work in one line, and writes that fail
anyway end in one line with nothing half-written.

Tests run as root here, where permission bits stop nothing, and no read-only mount can be
made: the unwritable places are under ``/proc`` (nothing can be created there) and ``/sys``
(where ``os.access`` says a directory is writable and it is not).
"""

from __future__ import annotations

import os
import pathlib
import types

import pandas as pd
import pyarrow as pa
import pytest

from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.paths import PROBE_PREFIX, check_file_path, check_out_dir, writing
from binmetric_sweep.sweep.spec.config import load_sweep

from .helpers import refuses, tiny

linux = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
ENOENT = os.strerror(2)  # No such file or directory


@linux
def test_an_out_dir_that_cannot_be_made_or_written_is_refused_in_one_line():
    assert refuses(lambda: check_out_dir("/proc/binmetric-test/out")) == (
        "--out: '/proc/binmetric-test/out' cannot be made: cannot create a directory in "
        f"'/proc': {ENOENT}"
    )
    assert refuses(lambda: check_out_dir("/proc", option="DIR")) == (
        f"DIR: '/proc' cannot be written: cannot create a file in it: {ENOENT}"
    )


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="needs Linux's /sys")
def test_a_directory_os_access_calls_writable_is_tried_not_trusted():
    # As root, os.access("/sys/kernel", os.W_OK) is True; creating a file there fails.
    refuses(lambda: check_out_dir("/sys/kernel"), "--out: '/sys/kernel' cannot be written: ")
    refuses(lambda: check_file_path("/sys/kernel/f.png", "-o"), "-o: '/sys/kernel/f.png' ")


@linux
def test_a_file_that_cannot_be_made_is_refused_in_one_line(tmp_path):
    assert refuses(lambda: check_file_path("/proc/binmetric-test/f.png", "-o")) == (
        "-o: '/proc/binmetric-test/f.png' cannot be made: cannot create a directory in "
        f"'/proc': {ENOENT}"
    )
    assert refuses(lambda: check_file_path("/proc/f.png", "-o")) == (
        f"-o: '/proc/f.png' cannot be written: cannot create a file in '/proc': {ENOENT}"
    )
    refuses(lambda: check_file_path(tmp_path, "-o"), "is a directory, not a file")


def test_a_file_in_the_way_and_a_name_too_long(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert refuses(lambda: check_out_dir(blocker / "a" / "b")) == (
        f"--out: {str(blocker / 'a' / 'b')!r} cannot be made: {str(blocker)!r} is a file"
    )
    assert refuses(lambda: check_out_dir(blocker)) == (
        f"--out: {str(blocker)!r} is a file, not a directory"
    )
    refuses(lambda: check_file_path(blocker / "f.png", "-o"), f"{str(blocker)!r} is a file")
    long = tmp_path / ("x" * 300)
    refuses(lambda: check_out_dir(long), f"--out: {str(long)!r}", os.strerror(36))


def test_writable_places_pass_and_the_check_leaves_nothing(tmp_path):
    (tmp_path / "existing").mkdir()
    for path in (tmp_path / "new" / "deeper", tmp_path / "existing", tmp_path):
        assert check_out_dir(path) == path
    for path in (tmp_path / "f.png", tmp_path / "new" / "f.png", tmp_path / "existing" / "f"):
        assert check_file_path(path, "-o") == path
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["existing"]
    assert not list(tmp_path.rglob(PROBE_PREFIX + "*"))


def test_a_write_that_fails_is_one_line_naming_the_option_and_the_file():
    with pytest.raises(SweepError) as caught, writing("--out", "/out"):
        raise FileNotFoundError(2, ENOENT, "/out/sub")
    assert str(caught.value) == f"--out: '/out' cannot be written: {ENOENT} ('/out/sub')"
    with pytest.raises(SweepError) as caught, writing("-o", "/f.png"):
        raise PermissionError(13, os.strerror(13), "/f.png")
    assert str(caught.value) == f"-o: '/f.png' cannot be written: {os.strerror(13)}"


def _figure():
    from binmetric_sweep.sweep.display.plots import new_figure

    fig = new_figure(1.0, 1.0)
    fig.add_subplot().plot([0, 1], [1, 0])
    return fig


def test_a_figure_is_written_whole_or_not_at_all(tmp_path):
    from binmetric_sweep.sweep.display.plots import DPI, save_figure

    # The bytes a direct save writes, under the path's own name, and no scratch left.
    direct = tmp_path / "direct.png"
    _figure().savefig(direct, dpi=DPI)
    saved = save_figure(_figure(), tmp_path / "sub" / "f.png")
    assert saved == tmp_path / "sub" / "f.png" and saved.read_bytes() == direct.read_bytes()
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["f.png"]
    # A rename that fails (a directory holds the name): one line, the figure released,
    # the directory as it was and no scratch directory left.
    held = tmp_path / "held.png"
    (held / "inside").mkdir(parents=True)
    fig = _figure()
    refuses(lambda: save_figure(fig, held), f"-o: {str(held)!r} cannot be written: ")
    assert not fig.axes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["direct.png", "held.png", "sub"]
    assert [p.name for p in held.iterdir()] == ["inside"]


@linux
def test_a_figure_saved_where_nothing_can_be_made_is_one_line():
    from binmetric_sweep.sweep.display.plots import save_figure

    assert refuses(lambda: save_figure(_figure(), "/proc/binmetric-test/f.png")) == (
        f"-o: '/proc/binmetric-test/f.png' cannot be written: {ENOENT} ('/proc/binmetric-test')"
    )
    refuses(lambda: save_figure(_figure(), "/proc/f.png", option="--out"), "--out: '/proc/f.png'")


def test_compare_tables_are_written_both_or_neither(tmp_path):
    from binmetric_sweep.sweep.compare.report import write_tables

    result = types.SimpleNamespace(
        settings={"gamma": 0.05},
        systems=pd.DataFrame({"system": ["A", "B"], "alpha": [0.5, 0.6]}),
        pairs=pd.DataFrame({"a": ["A"], "b": ["B"], "p": [0.4]}),
        reading=None,
    )
    out = tmp_path / "tables"
    out.mkdir()
    (out / f".pairs.parquet.{os.getpid()}.tmp").mkdir()  # the second draft cannot be made
    refuses(lambda: write_tables(result, out, "r.csv"), f"--out: {str(out)!r} cannot be written: ")
    assert [p.name for p in out.iterdir()] == [f".pairs.parquet.{os.getpid()}.tmp"]
    (out / f".pairs.parquet.{os.getpid()}.tmp").rmdir()
    written = write_tables(result, out, "r.csv")
    assert written == [out / "systems.parquet", out / "pairs.parquet"]
    assert sorted(p.name for p in out.iterdir()) == ["pairs.parquet", "systems.parquet"]
    pd.testing.assert_frame_equal(pd.read_parquet(written[0]), result.systems)


@linux
def test_a_shard_that_cannot_be_written_is_one_line():
    from binmetric_sweep.sweep.storage.store import Store

    store = Store(pathlib.Path("/proc/binmetric-test"), load_sweep(tiny()), [3])
    path = store.path("surface", 0)
    assert refuses(lambda: store._write_atomic(pa.table({"a": [1]}), path)) == (
        f"--out: cannot write {path.name} in {str(path.parent)!r}: {ENOENT}; shards written "
        "so far are kept"
    )
