"""Ray faults injected for real: a worker process killed mid-shard, a node removed mid-shard.

A real two-node cluster on this machine (``ray.cluster_utils.Cluster``: a head
and a second node of one CPU each), its own for this module because the last
test takes a node away. A fault hook (:class:`~tests.sweep.faults.HoldOneShard`)
stops one shard's task and publishes its worker's process id and node; the test
then kills that process, or removes that node, while ``sweep.run`` goes on in a
thread. Ray resubmits the lost task (``max_retries``), the retry passes through
the hook unchanged, and the finished sweep must equal an undisturbed local run
bit for bit, with nothing lost or duplicated, without a rerun by hand.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from binmetric_sweep import sweep

from . import faults
from .faults import HoldOneShard, check_against_reference, visible_files_are_whole
from .helpers import tiny

ray = pytest.importorskip("ray")
from ray import cloudpickle  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.slow

SPEC = tiny(name="ray-faults", shard_size=2)  # 16 configurations in 8 shards
#: Seconds allowed for a shard to reach the hook, and for the sweep to finish after the fault.
REACH, FINISH = 240, 300


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "out"
    sweep.run(SPEC, out)
    return sweep.load_surface(out), sweep.load_fits(out)


@pytest.fixture(scope="module")
def cluster(reference):
    """Head + one worker node, this process connected as the driver; yields (cluster, node)."""
    node = {"num_cpus": 1, "num_gpus": 0, "object_store_memory": 100 * 2**20}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    # The hook travels to the workers by value: they cannot import the tests package.
    cloudpickle.register_pickle_by_value(faults)
    try:
        worker_node = cluster.add_node(**node)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address)
        yield cluster, worker_node
    finally:
        cloudpickle.unregister_pickle_by_value(faults)
        ray.shutdown()
        cluster.shutdown()


class SweepThread(threading.Thread):
    """``sweep.run(..., backend="ray")`` in a thread: the test injects the fault meanwhile."""

    def __init__(self, out, hook):
        super().__init__(daemon=True)
        self.out, self.hook = out, hook
        self.report, self.error = None, None

    def run(self):
        try:
            self.report = sweep.run(SPEC, self.out, backend="ray", fault=self.hook)
        except BaseException as err:  # re-raised by finish() in the test's thread
            self.error = err

    def finish(self):
        self.join(FINISH)
        assert not self.is_alive(), f"the sweep did not finish within {FINISH} s of the fault"
        if self.error is not None:
            raise self.error
        return self.report


def test_a_worker_killed_while_it_runs_a_shard_is_retried(cluster, reference, tmp_path):
    marker, out = str(tmp_path / "held.json"), tmp_path / "out"
    run = SweepThread(out, HoldOneShard(marker))
    run.start()
    held = faults.wait_for_marker(marker, REACH)
    os.kill(held["pid"], signal.SIGKILL)
    report = run.finish()

    assert (report.shards, report.already_done, report.computed) == (8, 0, 8), report.line()
    assert "8 computed" in report.line() and "\n" not in report.line()
    check_against_reference(out, reference, "Ray worker killed mid-shard")
    visible_files_are_whole(out)
    assert sweep.status(out).done == 8


def test_a_node_removed_while_it_runs_a_shard_is_retried_elsewhere(cluster, reference, tmp_path):
    cluster, worker_node = cluster
    head = ray.get_runtime_context().get_node_id()  # the driver's node is the head
    marker, out = str(tmp_path / "held.json"), tmp_path / "out"
    run = SweepThread(out, HoldOneShard(marker, avoid_node=head))
    run.start()
    held = faults.wait_for_marker(marker, REACH)
    assert held["node"] == worker_node.node_id != head
    cluster.remove_node(worker_node)
    report = run.finish()

    assert (report.shards, report.computed) == (8, 8), report.line()
    check_against_reference(out, reference, "Ray node removed mid-shard")
    visible_files_are_whole(out)
    assert [n["NodeID"] for n in ray.nodes() if n["Alive"]] == [head]
