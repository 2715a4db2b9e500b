"""The classical estimators of a shard's lanes, computed in calls of one size.

Every lane's counts go through :func:`sweep.programs.estimators_program` in
calls of the schedule's ``estimator_lanes`` (the last padded with its first
lane), so that a lane's numbers never depend on the lanes beside it
(:mod:`sweep.schedule`). The posterior (``bayes``) is not here: it is the
fits' (:mod:`sweep.fits`), turned into an :class:`kernels.estimators.Estimate`
by :func:`kernels.estimators.posterior_estimate`.
"""

from __future__ import annotations

import jax
import numpy as np

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.estimators import ESTIMATOR_NAMES, Estimate
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.programs import estimators_program
from binmetric_sweep.sweep.schedule import Schedule

__all__ = ["ESTIMATOR_CHOICES", "estimate_lanes", "estimator_names"]

#: What ``--estimator`` (``sweep compare``, ``sweep plan``) takes: a name, or ``all``.
ESTIMATOR_CHOICES = (*ESTIMATOR_NAMES, "all")


def estimator_names(estimator: str) -> tuple[str, ...]:
    """The estimators ``--estimator`` names (``all``: every one, ``bayes`` first)."""
    if estimator == "all":
        return ESTIMATOR_NAMES
    if estimator not in ESTIMATOR_NAMES:
        allowed = ", ".join(ESTIMATOR_CHOICES)
        raise SweepError(f"--estimator: {estimator!r} is not an estimator; allowed: {allowed}")
    return (estimator,)


def estimate_lanes(
    counts: Counts, names: tuple[str, ...], level: float, schedule: Schedule
) -> dict[str, Estimate]:
    """Each classical estimator's ``(B,)`` estimates of B lanes' counts (NumPy), by name.

    Args:
        counts: ``(B,)`` lanes' counts (:func:`sweep.lanes.lane_counts`).
        names: classical estimators (:data:`kernels.estimators.CLASSICAL`), not ``bayes``.
        level: the intervals' level, in (0, 1).
        schedule: the device's (its ``estimator_lanes``).
    """
    b = int(np.shape(counts.n_pos)[0])
    if b == 0:
        empty = Estimate(*(np.zeros(0) for _ in range(4)), np.zeros(0, np.int8))
        return dict.fromkeys(names, empty)
    program = estimators_program(tuple(names), float(level))
    size = schedule.estimator_lanes
    calls = []
    for start in range(0, b, size):
        index = np.arange(start, start + size)
        index[index >= b] = start  # the last call padded with its own first lane
        calls.append(program(jax.tree.map(lambda x, i=index: np.asarray(x)[i], counts)))
    parts = jax.device_get(calls)
    out = {}
    for k, name in enumerate(names):
        fields = [np.concatenate([part[k][f] for part in parts])[:b] for f in range(5)]
        out[name] = Estimate(*fields)
    return out
