"""Runners: where shards are computed. Each yields :class:`ShardResult` as shards finish.

A runner takes the sweep and the shards still to do and knows nothing of the
store; the caller writes each result as it arrives. The in-process runner is
here; the Ray runner lives in :mod:`sweep.ray_runner` so that Ray is imported
only when it is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kernels.summaries import FitResults
from sweep.config import SweepSpec
from sweep.shards import Shard, ShardResult, run_shard

__all__ = ["run_local"]


def run_local(
    spec: SweepSpec,
    shards: list[Shard],
    *,
    on_fits: Callable[[int], None] | None = None,
    fault: Callable[[FitResults], FitResults] | None = None,
) -> Iterator[ShardResult]:
    """Compute the shards one after another in this process, on whatever device JAX has."""
    for shard in shards:
        yield run_shard(spec, shard, on_fits=on_fits, fault=fault)
