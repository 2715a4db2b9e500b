"""The record a benchmark script keeps as it runs (sweep/storage/records.py)."""

import json

import pytest

from binmetric_sweep.sweep.storage.records import StageLog, provenance


def test_a_stage_log_rewrites_the_record_as_each_stage_ends(tmp_path, capsys):
    result = {"partial": True}
    log = StageLog(result, tmp_path / "out", "bench")
    assert json.loads(log.path.read_text()) == {"partial": True, "stages": []}
    with log.stage("counts drawn"):
        pass
    with pytest.raises(KeyboardInterrupt), log.stage("cut short"):
        raise KeyboardInterrupt
    on_disk = json.loads(log.path.read_text())
    # Only the stage that ended is logged: the record says where a killed run was.
    assert [s["stage"] for s in on_disk["stages"]] == ["counts drawn"]
    assert on_disk["stages"][0]["s"] >= 0 and on_disk["partial"] is True
    assert "counts drawn" in capsys.readouterr().err
    del result["partial"]
    log.write()
    assert "partial" not in json.loads(log.path.read_text())
    assert [p.name for p in (tmp_path / "out").iterdir()] == [log.path.name]


def test_the_provenance_names_the_package_version_and_the_command(monkeypatch):
    from binmetric_sweep import sweep

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    record = provenance("bench_kernels.py", ["--sizes", "100"])
    # Runs of two versions are told apart by the record alone.
    assert record["binmetric_sweep"] == sweep.__version__
    assert record["command"] == "python scripts/bench_kernels.py --sizes 100"
    assert {"device", "host", "jax", "numpyro"} <= record.keys() and "xla_flags" not in record
