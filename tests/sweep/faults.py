"""Shared parts of the fault-injection tests: the check, the bookkeeping, a Ray hook.

Each fault test compares the finished sweep with an undisturbed run
(:func:`check_against_reference`) and calls :func:`record`. When
``SWEEP_FAULT_LOG`` names a file, one JSON line per injection is appended to
it; ``scripts/fault_report.py`` runs the fault tests with it set and prints the
table. :class:`HoldOneShard` stops one Ray task so a test can kill its worker
or remove its node.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

import pandas as pd

from binmetric_sweep import sweep

from .helpers import sorted_surface

KEYS = {"surface": ["config_id", "gamma", "power"], "fits": ["config_id", "replicate"]}


def lost_and_duplicated(got: pd.DataFrame, reference: pd.DataFrame, table: str) -> tuple[int, int]:
    """Rows of ``reference`` missing from ``got``, and rows of ``got`` that repeat a key."""
    keys = KEYS[table]
    present = got[keys].drop_duplicates()
    merged = reference[keys].merge(present, on=keys, how="left", indicator=True)
    return int((merged["_merge"] == "left_only").sum()), int(got.duplicated(keys).sum())


def record(fault: str, survived: bool, lost: int = 0, duplicated: int = 0) -> None:
    """Log one injection of ``fault`` (a no-op unless ``SWEEP_FAULT_LOG`` is set)."""
    path = os.environ.get("SWEEP_FAULT_LOG")
    if not path:
        return
    line = {"fault": fault, "survived": bool(survived), "lost": lost, "duplicated": duplicated}
    with open(path, "a") as handle:
        handle.write(json.dumps(line) + "\n")


def check_against_reference(out, reference, fault: str) -> None:
    """The directory's surface and fits equal the undisturbed run's, bit for bit."""
    surface, fits = sweep.load_surface(out), sweep.load_fits(out)
    lost_s, dup_s = lost_and_duplicated(surface, reference[0], "surface")
    lost_f, dup_f = lost_and_duplicated(fits, reference[1], "fits")
    same = len(surface) == len(reference[0]) and sorted_surface(surface).equals(
        sorted_surface(reference[0])
    )
    same &= sorted_surface(fits).equals(sorted_surface(reference[1]))
    record(fault, same and not (lost_s or dup_s or lost_f or dup_f), lost_s + lost_f, dup_s + dup_f)
    assert (lost_s, dup_s, lost_f, dup_f) == (0, 0, 0, 0)
    pd.testing.assert_frame_equal(
        sorted_surface(surface), sorted_surface(reference[0]), check_exact=True
    )
    pd.testing.assert_frame_equal(
        sorted_surface(fits), sorted_surface(reference[1]), check_exact=True
    )


def visible_files_are_whole(out) -> None:
    """Every file a reader would pick up opens; temporaries are hidden."""
    for table in ("surface", "fits"):
        for path in (out / table).glob("*.parquet"):
            pd.read_parquet(path)
        assert not list((out / table).glob("shard-*.tmp"))
        if list((out / table).glob("*.parquet")):
            pd.read_parquet(out / table)


@dataclass(frozen=True)
class HoldOneShard:
    """A fault hook for the Ray tests: one shard's task stops and waits to be killed.

    The first call to reach it (on any node but ``avoid_node``, when given)
    publishes ``{"pid", "node"}`` of its worker process in ``marker`` (atomically:
    a hard link that exists only once) and sleeps; the test then kills that
    process or removes that node. Every other call, including Ray's retry of
    the held shard, passes the fits through unchanged, so the finished sweep
    must equal an undisturbed one.
    """

    marker: str
    avoid_node: str | None = None
    seconds: float = 600.0

    def __call__(self, fits):
        import ray

        node = ray.get_runtime_context().get_node_id()
        if node == self.avoid_node or os.path.exists(self.marker):
            return fits
        draft = f"{self.marker}.{os.getpid()}"
        with open(draft, "w") as handle:
            json.dump({"pid": os.getpid(), "node": node}, handle)
        try:
            os.link(draft, self.marker)
        except FileExistsError:
            return fits
        finally:
            os.unlink(draft)
        time.sleep(self.seconds)
        return fits


def wait_for_marker(path: str, timeout: float) -> dict:
    """The JSON a :class:`HoldOneShard` published, once it is there."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no shard reached the fault hook within {timeout:.0f} s")
        time.sleep(0.05)
    with open(path) as handle:
        return json.load(handle)
