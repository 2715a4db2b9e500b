"""The classical estimators of a shard's lanes, computed in calls of one size.

Every lane's counts go through :func:`sweep.execution.programs.estimators_program` in
calls of the schedule's ``estimator_lanes`` (the last padded with its first
lane), so that a lane's numbers never depend on the lanes beside it
(:mod:`sweep.execution.schedule`). The posterior is not here: it is the
fits' (:mod:`sweep.execution.fits`), turned into an :class:`kernels.estimators.Estimate`
by :func:`kernels.estimators.posterior_estimate`.
"""

from __future__ import annotations

import jax
import numpy as np

from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout
from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.estimators import (
    Estimate,
    Estimator,
    estimator_named,
    estimator_names,
    registered,
)
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.programs import estimators_program
from binmetric_sweep.sweep.execution.schedule import Schedule

__all__ = ["ALL", "estimate_lanes", "estimator_choices", "estimators_of_option"]

#: The ``--estimator`` value for every registered estimator.
ALL = "all"


def estimator_choices() -> tuple[str, ...]:
    """What ``--estimator`` (``sweep compare``, ``sweep plan``) takes: a name, or ``all``."""
    return (*estimator_names(), ALL)


def estimators_of_option(
    option: str | Estimator, flag: str = "--estimator"
) -> tuple[Estimator, ...]:
    """The estimators an ``--estimator`` value names (``all``: every one, the posterior first).

    Raises:
        SweepError: a name not registered (one line naming ``flag`` and what is allowed).
    """
    if isinstance(option, Estimator):
        return (option,)
    if option == ALL:
        return registered()
    try:
        return (estimator_named(option),)
    except KeyError:
        allowed = ", ".join(estimator_choices())
        raise SweepError(f"{flag}: {option!r} is not an estimator; allowed: {allowed}") from None


def estimate_lanes(
    counts: Counts | CategoricalCounts,
    estimators: tuple[Estimator, ...],
    level: float,
    schedule: Schedule,
    layout: Layout | None = None,
) -> dict[str, Estimate]:
    """Each estimator's ``(B,)`` estimates of B lanes' counts (NumPy), by name.

    Args:
        counts: ``(B,)`` lanes' counts (:func:`sweep.spec.lanes.lane_counts`).
        estimators: estimators with an estimate function (not the posterior).
        level: the intervals' level, in (0, 1).
        schedule: the device's (its ``estimator_lanes``).
        layout: None for binary counts; for categorical counts their layout (each
            estimator's categorical form then estimates θ).
    """
    b = int(np.shape(jax.tree.leaves(counts)[0])[0])
    if b == 0:
        empty = Estimate(*(np.zeros(0) for _ in range(4)), np.zeros(0, np.int8))
        return dict.fromkeys((e.name for e in estimators), empty)
    program = estimators_program(tuple(estimators), float(level), layout)
    size = schedule.estimator_lanes
    calls = []
    for start in range(0, b, size):
        index = np.arange(start, start + size)
        index[index >= b] = start  # the last call padded with its own first lane
        calls.append(program(jax.tree.map(lambda x, i=index: np.asarray(x)[i], counts)))
    parts = jax.device_get(calls)
    out = {}
    for k, estimator in enumerate(estimators):
        fields = [np.concatenate([part[k][f] for part in parts])[:b] for f in range(5)]
        out[estimator.name] = Estimate(*fields)
    return out
