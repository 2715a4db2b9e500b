"""Small sweeps shared by the sweep tests."""

from __future__ import annotations

import copy
import pathlib

import pandas as pd
import pytest

from binmetric_sweep.sweep.errors import SweepError

REPO = pathlib.Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"

TINY = {
    "name": "tiny",
    "counts": "sampled",
    "replicates": 3,
    "seed": 11,
    "method": "quadrature",
    "gamma": [0.05, 0.01],
    "grid": {
        "alpha": [0.3, 0.6],
        "rho": [0.7, 0.9],
        "eta": "rho",
        "n_phi": [0, 100],
        "n_m": [0, 1000],
    },
    "shard_size": 3,
}


def tiny(**changes) -> dict:
    """A copy of the tiny sweep (16 configurations, 3 replicates) with top-level changes."""
    sweep = copy.deepcopy(TINY)
    sweep.update(changes)
    return sweep


def sorted_surface(frame: pd.DataFrame) -> pd.DataFrame:
    """A surface in a canonical row order (and without the shard it landed in)."""
    frame = frame.drop(columns=["shard"], errors="ignore")
    keys = [
        k for k in ("config_id", "estimator", "gamma", "power", "replicate") if k in frame.columns
    ]
    return frame.sort_values(keys).reset_index(drop=True)


def refuses(fn, *needles: str) -> str:
    """The one-line SweepError message ``fn()`` raises, which must hold every needle."""
    with pytest.raises(SweepError) as info:
        fn()
    message = str(info.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message
