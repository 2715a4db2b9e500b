"""Runners: where shards are computed. Each yields :class:`ShardResult` as shards finish.

A runner takes the sweep and the shards still to do and knows nothing of the
store; the caller writes each result as it arrives. The in-process runner is
here; the Ray runner lives in :mod:`sweep.ray_runner` so that Ray is imported
only when it is used.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import jax

from binmetric_sweep.kernels.summaries import FitResults
from binmetric_sweep.sweep.config import SweepSpec
from binmetric_sweep.sweep.shards import Shard, ShardResult, run_shard

__all__ = ["ACCELERATOR_SHARDS_AHEAD", "default_shards_ahead", "run_local"]

#: On an accelerator, shards :func:`run_local` begins before the one in hand
#: is yielded. With none, the device would wait at the end of every shard
#: while the host summarises its last NUTS call's draws (about three quarters
#: as long as the device's own work on the call; two workers overlap a call's
#: summaries with the next call only within a shard) and the store writes
#: it. See docs/performance.md; ``scripts/bench_sweep.py --ahead 0 1`` times it.
ACCELERATOR_SHARDS_AHEAD = 1


def default_shards_ahead(backend: str | None = None) -> int:
    """Shards :func:`run_local` keeps begun ahead when the caller names no number.

    On CPU none: its fits already keep every core busy
    (:func:`sweep.fits.default_workers`), so a shard begun ahead gains
    nothing there, for NUTS or quadrature sweeps (docs/performance.md).
    Elsewhere :data:`ACCELERATOR_SHARDS_AHEAD`.
    """
    return 0 if (backend or jax.default_backend()) == "cpu" else ACCELERATOR_SHARDS_AHEAD


def run_local(
    spec: SweepSpec,
    shards: list[Shard],
    *,
    on_fits: Callable[[int], None] | None = None,
    fault: Callable[[FitResults], FitResults] | None = None,
    ahead: int | None = None,
) -> Iterator[ShardResult]:
    """Compute the shards in this process, on whatever device JAX has; yield them in order.

    ``ahead``: shards begun, each in a thread of its own, while the caller
    takes the one in hand (0: one shard at a time; by default
    :func:`default_shards_ahead`). The device then computes
    the next shard's first calls while the host summarises the last calls of
    this one and the caller writes it. A shard's numbers do not depend on it,
    nor on which shards run beside it. If the caller stops taking results
    (an error, an interrupt), the shards begun stop after their chunks under
    way and nothing more is computed.
    """
    ahead = default_shards_ahead() if ahead is None else ahead
    if ahead <= 0:
        for shard in shards:
            yield run_shard(spec, shard, on_fits=on_fits, fault=fault)
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
                pool.submit(run_shard, spec, shard, on_fits=report, fault=fault, stop=stop)
            )
            if len(begun) > ahead:
                yield begun.popleft().result()
        while begun:
            yield begun.popleft().result()
    finally:
        stop.set()  # a no-op once every shard is done
        pool.shutdown(wait=True, cancel_futures=True)
