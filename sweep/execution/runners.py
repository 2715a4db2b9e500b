"""Runners: where shards are computed. Each yields :class:`ShardResult` as shards finish.

A runner takes the sweep and the shards still to do and knows nothing of the
store; the caller writes each result as it arrives. The in-process runner is
here; the Ray runner lives in :mod:`sweep.execution.ray_runner` so that Ray is imported
only when it is used.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from binmetric_sweep.kernels.summaries import FitResults
from binmetric_sweep.sweep.execution.fits import FitMemo
from binmetric_sweep.sweep.execution.schedule import Schedule, schedule_for
from binmetric_sweep.sweep.execution.shards import Shard, ShardResult, run_shard
from binmetric_sweep.sweep.spec.config import SweepSpec

__all__ = ["run_local"]


def run_local(
    spec: SweepSpec,
    shards: list[Shard],
    *,
    schedule: Schedule | None = None,
    on_fits: Callable[[int], None] | None = None,
    fault: Callable[[FitResults], FitResults] | None = None,
) -> Iterator[ShardResult]:
    """Compute the shards in this process, on whatever device JAX has; yield them in order.

    ``schedule``: the device's (:func:`sweep.execution.schedule.schedule_for`; None: JAX's
    default device's). Its ``shards_ahead`` shards are begun, each in a thread
    of its own, while the caller takes the one in hand (0: one shard at a
    time). The device then computes the next shard's first calls while the
    host summarises the last calls of this one and the caller writes it. A
    shard's numbers do not depend on it, nor on which shards run beside it. If
    the caller stops taking results (an error, an interrupt), the shards begun
    stop after their calls under way and nothing more is computed.
    """
    schedule = schedule_for() if schedule is None else schedule
    memo = FitMemo()  # configurations whose counts recur across shards are fitted once
    ahead = schedule.shards_ahead
    if ahead <= 0:
        for shard in shards:
            yield run_shard(spec, shard, schedule=schedule, memo=memo, on_fits=on_fits, fault=fault)
        return
    stop, lock = threading.Event(), threading.Lock()

    def progress(n: int) -> None:  # shards in several threads report to one caller
        with lock:
            on_fits(n)

    report = progress if on_fits is not None else None
    pool = ThreadPoolExecutor(ahead + 1, thread_name_prefix="shard")
    begun: deque = deque()
    try:
        for shard in shards:
            begun.append(
                pool.submit(
                    run_shard,
                    spec,
                    shard,
                    schedule=schedule,
                    memo=memo,
                    on_fits=report,
                    fault=fault,
                    stop=stop,
                )
            )
            if len(begun) > ahead:
                yield begun.popleft().result()
        while begun:
            yield begun.popleft().result()
    finally:
        stop.set()  # a no-op once every shard is done
        pool.shutdown(wait=True, cancel_futures=True)
