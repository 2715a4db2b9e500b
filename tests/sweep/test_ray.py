"""The Ray backend on a real Ray cluster (no mocks): same numbers as in-process, spread, resume.

One Ray instance serves the whole module: a two-node cluster on this machine
(``ray.cluster_utils.Cluster``: a head node and a second node of one CPU each,
so two CPUs in all, like ``ray.init(num_cpus=2)``), with this process connected
to it as the driver. A process holds one Ray connection at a time, so a
separate single-node instance would have to be shut down before the cluster
starts, and the tests would depend on their order; one shared instance avoids
that, and it starts once. Every sweep still goes through
``sweep.run(..., backend="ray")``, which finds the initialised Ray and sends one
task per shard to it.

Time goes mostly into XLA compiling the quadrature, once per process (this
one, and each Ray worker). The local reference run compiles first, into a JAX
persistent compilation cache that the workers are pointed at, so they load the
compiled programs instead of compiling them again on the same two cores.
"""

from __future__ import annotations

import shutil

import jax
import pandas as pd
import pytest

from binmetric_sweep import sweep

from .helpers import tiny

ray = pytest.importorskip("ray")
from jax.experimental.compilation_cache import compilation_cache  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402 - only once Ray is known to be installed

pytestmark = pytest.mark.slow

#: The tiny sweep (2 × 2 × 2 × 2 = 16 configurations) in shards of 3: six shards, the last
#: one of one; every estimator, so that the classical ones run in the workers too.
SWEEP = tiny(name="ray-test", gamma=[0.05, 0.1], estimators="all")
SHARDS = 6


def _surface(out) -> pd.DataFrame:
    frame = sweep.load_surface(out)
    return frame.sort_values(["config_id", "estimator", "gamma"]).reset_index(drop=True)


def _fits(out) -> pd.DataFrame:
    frame = sweep.load_fits(out)
    return frame.sort_values(["config_id", "replicate", "estimator"]).reset_index(drop=True)


def _assert_same_results(out, reference) -> None:
    pd.testing.assert_frame_equal(_surface(out), _surface(reference), check_exact=True)
    pd.testing.assert_frame_equal(_fits(out), _fits(reference), check_exact=True)


@pytest.fixture(scope="module")
def jax_cache(tmp_path_factory):
    """A persistent compilation cache for this process and the workers.

    The session's (``tests/conftest.py``), which may already hold the programs;
    else one made here for the module, and the settings restored after.
    """
    if jax.config.jax_compilation_cache_dir:
        yield jax.config.jax_compilation_cache_dir
        return
    path = tmp_path_factory.mktemp("jax-cache")
    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    saved = {name: getattr(jax.config, name) for name in names}
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    compilation_cache.reset_cache()  # takes the new directory even if JAX compiled before
    yield path
    for name, value in saved.items():
        jax.config.update(name, value)
    compilation_cache.reset_cache()


@pytest.fixture(scope="module")
def local_run(jax_cache, tmp_path_factory):
    """The sweep computed in this process by the local runner: the reference."""
    out = tmp_path_factory.mktemp("local") / "sweep"
    report = sweep.run(SWEEP, out, backend="local")
    assert (report.shards, report.computed) == (SHARDS, SHARDS)
    return out


@pytest.fixture(scope="module")
def ray_cluster(jax_cache):
    """A real two-node Ray cluster on this machine, with this process connected as driver."""
    node = {"num_cpus": 1, "num_gpus": 0, "object_store_memory": 100 * 2**20}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        env = {
            "JAX_COMPILATION_CACHE_DIR": str(jax_cache),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        }
        ray.init(address=cluster.address, runtime_env={"env_vars": env})
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(scope="module")
def ray_run(ray_cluster, local_run, tmp_path_factory):
    """The sweep computed once on the cluster through ``sweep.run(..., backend="ray")``."""
    out = tmp_path_factory.mktemp("ray") / "sweep"
    report = sweep.run(SWEEP, out, backend="ray")
    return out, report


def test_ray_gives_the_local_runners_surface_and_fits(ray_run, local_run):
    out, report = ray_run
    assert (report.shards, report.already_done, report.computed) == (SHARDS, 0, SHARDS)
    _assert_same_results(out, local_run)


def test_shards_are_spread_over_both_nodes(ray_run):
    out, _ = ray_run
    nodes = sweep.status(out).nodes
    assert sum(nodes.values()) == SHARDS
    # One host, two raylets: each name is host/<first 12 characters of the Ray node id>.
    node_ids = {n["NodeID"][:12] for n in ray.nodes() if n["Alive"]}
    assert len(node_ids) == 2
    assert {name.rpartition("/")[2] for name in nodes} == node_ids, nodes


def test_resume_under_ray_recomputes_only_the_missing_shard(ray_run, local_run, tmp_path):
    out = tmp_path / "sweep"
    shutil.copytree(ray_run[0], out)
    (out / "surface" / "shard-00002.parquet").unlink()
    assert sweep.status(out).missing == [2]

    report = sweep.run(SWEEP, out, backend="ray")
    assert (report.already_done, report.computed) == (SHARDS - 1, 1)
    assert sweep.status(out).done == SHARDS
    _assert_same_results(out, local_run)


def test_a_gpu_task_asks_for_its_share_and_fits_two_nuts_calls_at_once():
    from binmetric_sweep.sweep.execution.ray_runner import task_options, task_workers
    from binmetric_sweep.sweep.execution.schedule import schedule_for

    cpu, gpu = task_options(0.0, 1), task_options(4.0, 2)
    assert "num_gpus" not in cpu and cpu["num_cpus"] == 1
    assert gpu["num_gpus"] == 0.5
    assert gpu["runtime_env"]["env_vars"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    # One chunk at a time in a one-CPU task; on a GPU the device's default, two NUTS calls.
    assert task_workers(0.0) == 1 and task_workers(4.0) is None
    assert schedule_for("gpu").workers == 2
