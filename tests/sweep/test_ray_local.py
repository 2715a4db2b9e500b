"""The Ray backend on a plain local Ray instance: the runner's default when no cluster exists.

``ray.init(address="local", num_cpus=2, include_dashboard=False)`` once for the module; every
sweep goes through ``sweep.run(..., backend="ray")``. The CLI test runs
``sweep run --backend ray`` in a fresh process with no ``RAY_ADDRESS``: with
no Ray running on the machine, the runner starts (and stops) a local instance.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from binmetric_sweep import sweep

from .helpers import REPO, sorted_surface, tiny

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow

SPEC = tiny(name="ray-local", shard_size=5)  # 16 configurations in 4 shards


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "out"
    sweep.run(SPEC, out)
    return out


@pytest.fixture(scope="module")
def local_ray(reference):
    # address="local": a new instance even if another Ray runs on this machine
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def assert_same(out, reference) -> None:
    for load in (sweep.load_surface, sweep.load_fits):
        got, want = sorted_surface(load(out)), sorted_surface(load(reference))
        assert got.equals(want)


def test_local_ray_instance_gives_the_local_runners_numbers(local_ray, reference, tmp_path):
    report = sweep.run(SPEC, tmp_path / "out", backend="ray")
    assert (report.shards, report.computed) == (4, 4)
    assert_same(tmp_path / "out", reference)
    assert ray.is_initialized()  # an instance the caller started is left running


def test_cli_starts_its_own_local_ray_when_there_is_none(reference, tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "binmetric_sweep.sweep",
            "run",
            str(path),
            "--out",
            str(tmp_path / "out"),
        ]
        + ["--backend", "ray", "--no-progress"],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(REPO)},
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "4 computed" in done.stdout
    assert_same(tmp_path / "out", reference)
