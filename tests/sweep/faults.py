"""Bookkeeping for the fault-injection tests: what was injected, and what survived.

Each fault test compares the finished sweep with an undisturbed run and calls
:func:`record`. When ``SWEEP_FAULT_LOG`` names a file, one JSON line per
injection is appended to it; ``scripts/fault_report.py`` runs the fault tests
with it set and prints the table.
"""

from __future__ import annotations

import json
import os

import pandas as pd

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
