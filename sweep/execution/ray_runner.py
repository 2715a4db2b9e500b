"""The Ray runner: one Ray task per shard, on an existing cluster or a local Ray instance.

Each task calls the same :func:`sweep.execution.shards.run_shard` as the in-process
runner, so results are identical; only *where* differs. Tasks are spread over
the nodes, retried when a worker or node dies, and ask for a share of a GPU
when the cluster has GPUs (with JAX told, through ``runtime_env``, not to
preallocate the device, so several workers can share it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import jax

from binmetric_sweep.kernels.summaries import FitResults
from binmetric_sweep.sweep.execution.compile_cache import use_compilation_cache
from binmetric_sweep.sweep.execution.schedule import schedule_for
from binmetric_sweep.sweep.execution.shards import Shard, ShardResult, run_shard
from binmetric_sweep.sweep.spec.config import SweepSpec

__all__ = ["run_ray", "task_options", "task_workers"]

#: Times a shard's task is resubmitted after its worker or node died.
MAX_RETRIES = 5


def task_options(gpus_in_cluster: float, workers_per_gpu: int) -> dict:
    """Ray task options for a shard: retries, spreading, and a GPU share when there are GPUs."""
    env = {"JAX_ENABLE_X64": "1"}
    options: dict = {
        "max_retries": MAX_RETRIES,
        "retry_exceptions": False,
        "scheduling_strategy": "SPREAD",
    }
    if gpus_in_cluster > 0:
        options["num_gpus"] = 1.0 / workers_per_gpu
        options["num_cpus"] = 1
        env.update(
            XLA_PYTHON_CLIENT_PREALLOCATE="false",
            XLA_PYTHON_CLIENT_MEM_FRACTION=f"{0.9 / workers_per_gpu:.3f}",
        )
    else:
        options["num_cpus"] = 1
    options["runtime_env"] = {"env_vars": env}
    return options


def task_workers(gpus_in_cluster: float) -> int | None:
    """Calls a shard's task makes at once (its schedule's ``workers``).

    Without GPUs 1: a task holds one CPU (:func:`task_options`). With GPUs
    None, the device's own (:func:`sweep.execution.schedule.schedule_for`): two calls
    in flight, so that the GPU computes one while the host prepares or
    summarises the other.
    """
    return None if gpus_in_cluster > 0 else 1


def run_ray(
    spec: SweepSpec,
    shards: list[Shard],
    *,
    address: str | None = None,
    workers_per_gpu: int = 1,
    max_in_flight: int | None = None,
    fault: Callable[[FitResults], FitResults] | None = None,
    compile_cache: str | os.PathLike | None = None,
) -> Iterator[ShardResult]:
    """Compute shards as Ray tasks and yield each result as it finishes (any order).

    Connects to ``address`` (or ``RAY_ADDRESS``); with neither, and no Ray
    already initialised in this process, starts a local Ray instance and stops
    it afterwards. At most ``max_in_flight`` tasks (default: twice the
    cluster's CPUs) are queued at once so the object store holds few results.
    Each task first asks for ``compile_cache`` in its worker process
    (:func:`sweep.execution.compile_cache.use_compilation_cache`; "default" is that
    node's own default directory), going without where it cannot be had.
    """
    import ray

    started_here = False
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS")
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        started_here = True
    running: list = []
    try:
        resources = ray.cluster_resources()
        options = task_options(resources.get("GPU", 0.0), workers_per_gpu)
        workers = task_workers(resources.get("GPU", 0.0))
        task = ray.remote(_run_shard_task).options(**options)
        limit = max_in_flight or max(2, int(2 * resources.get("CPU", 1)))
        spec_ref = ray.put(spec)
        queue = list(reversed(shards))
        while queue or running:
            while queue and len(running) < limit:
                shard = queue.pop()
                running.append(
                    task.remote(spec_ref, shard, compile_cache, workers=workers, fault=fault)
                )
            done, running = ray.wait(running, num_returns=1)
            yield ray.get(done[0])
    finally:
        for ref in running:  # the caller stopped early (an error, an interrupt): free the cluster
            ray.cancel(ref)
        if started_here:
            ray.shutdown()


def _run_shard_task(
    spec: SweepSpec, shard: Shard, compile_cache, workers: int | None, **kwargs
) -> ShardResult:
    """A Ray task: :func:`sweep.execution.shards.run_shard` with the compilation cache asked for,
    on its worker's device (whose schedule is built here, where the task runs).

    An entry point of its worker process: float64 is switched on here, as in
    :func:`sweep.run`.
    """
    jax.config.update("jax_enable_x64", True)
    use_compilation_cache(compile_cache, strict=False)
    return run_shard(spec, shard, schedule=schedule_for(workers=workers), **kwargs)
