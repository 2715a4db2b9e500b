"""Estimators of α on one campaign's counts: the posterior's and five classical ones.

Teams that rate with an LLM judge or a metric mostly report one of these
instead of a posterior (docs/estimators.md). Their closed forms are
:mod:`kernels.binary_estimators` (binary counts) and
:mod:`kernels.categorical.estimators` (K classes, several judges); what an
estimate is, :mod:`kernels.estimates`. All are importable from here.

An :class:`Estimate` holds, per lane, the estimate, its standard error, an
interval and a reason code: 0 where the estimator applies; otherwise one of
:data:`REASONS`, and the numbers are NaN. An :class:`Estimator` is one value
carrying all that the layers above need of an estimator: a pure function
``(counts (B,), level) -> Estimate (B,)`` and its K-class form, its interval's kind, its planning
SE (:mod:`~binmetric_sweep.kernels.planning_se`) and whether it pools rates.
The posterior (:data:`POSTERIOR`, ``bayes``) is one of them, marked as the
posterior: it is computed elsewhere (the quadrature cascade or NUTS) and
enters as :func:`posterior_estimate`. The registry (:func:`register`,
:func:`registered`, :func:`estimator_named`) holds them in the order tables
list them; the layers above ask it, never an estimator's name.

Every function works on ``(B,)`` lanes (or scalars) with ``jax.numpy``; the
caller decides ``jit``. Use float64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax

from binmetric_sweep.kernels import planning_se
from binmetric_sweep.kernels.binary_estimators import (
    human_only,
    judge_only,
    ppi,
    ppi_pp,
    rogan_gladen,
)
from binmetric_sweep.kernels.categorical import estimators as categorical
from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.estimates import (
    APPLIES,
    CHANCE_JUDGE,
    FEW_PAIRED,
    NO_HUMAN,
    NO_METRIC,
    NO_PAIRED_ADEQUATE,
    NO_PAIRED_CLASS,
    NO_PAIRED_INADEQUATE,
    NO_PAIRED_SET,
    REASONS,
    SEVERAL_JUDGES,
    SINGULAR_CONFUSION,
    Estimate,
    posterior_estimate,
)
from binmetric_sweep.kernels.planning_se import PlanningSE

Array = jax.Array

__all__ = [
    "Estimate",
    "Estimator",
    "REASONS",
    "APPLIES",
    "NO_HUMAN",
    "NO_METRIC",
    "NO_PAIRED_ADEQUATE",
    "NO_PAIRED_INADEQUATE",
    "CHANCE_JUDGE",
    "NO_PAIRED_SET",
    "FEW_PAIRED",
    "SEVERAL_JUDGES",
    "NO_PAIRED_CLASS",
    "SINGULAR_CONFUSION",
    "posterior_estimate",
    "human_only",
    "judge_only",
    "rogan_gladen",
    "ppi",
    "ppi_pp",
    "POSTERIOR",
    "HUMAN_ONLY",
    "register",
    "unregister",
    "registered",
    "estimator_names",
    "estimator_named",
    "is_posterior",
]


class Estimator(NamedTuple):
    """An estimator of α, with what every layer needs of it: one value, the posterior among them.

    Attributes:
        name: as sweep files, tables and ``--estimator`` spell it.
        estimate: ``(counts, level) -> Estimate``: ``(B,)`` lanes' counts and
            the interval's level in (0, 1); None for the posterior, whose
            estimates are its fits' (``sweep.execution.fits``, :func:`posterior_estimate`).
        interval: the interval's kind, in words (docs/estimators.md's table).
        planning: its asymptotic SE for ``sweep plan``
            (:class:`~binmetric_sweep.kernels.planning_se.PlanningSE`); None
            for the posterior, planned by its exact SD.
        pools_rates: under shared rates (``sweep compare --rates shared``) it
            takes ρ̂, η̂ from every system's paired ratings pooled, as the
            posterior pools (ρ, η); the others read each system's own paired
            ratings as pairs, not as rates.
        posterior: it is the posterior (fitted, with a sampler's health, and
            compared by P(a better than b) rather than by a z-test).
        categorical: ``(counts, layout, level) -> Estimate``: its form on K-class counts
            (:class:`kernels.categorical.counts.CategoricalCounts` of a
            :class:`~kernels.categorical.counts.Layout`), estimating θ = vᵀπ; None where it
            has none (the posterior's is sampled, elsewhere).
    """

    name: str
    estimate: Callable[[Counts, float], Estimate] | None
    interval: str
    planning: PlanningSE | None
    pools_rates: bool = False
    posterior: bool = False
    categorical: Callable | None = None


#: The posterior: α's posterior mean, SD and central credible interval.
POSTERIOR = Estimator("bayes", None, "central credible", None, pools_rates=True, posterior=True)
HUMAN_ONLY = Estimator(
    "human_only",
    human_only,
    "Wilson score",
    planning_se.HUMAN_ONLY,
    categorical=categorical.human_only,
)

_REGISTRY: dict[str, Estimator] = {}
_RESERVED = ("all",)


def register(estimator: Estimator) -> Estimator:
    """Add ``estimator`` to the registry, after those there: sweeps, ``sweep plan`` and
    ``sweep compare`` then take its name, and ``all`` includes it. Returns it.

    A worker process (Ray) sees an estimator registered where its module is
    imported: register it at import time of a module the workers import.

    Raises:
        ValueError: a name taken, reserved (``all``) or not a lower-case identifier, or a
            second posterior.
    """
    if not isinstance(estimator, Estimator):
        raise TypeError(f"register: {estimator!r} is not an Estimator")
    name = estimator.name
    if name in _REGISTRY or name in _RESERVED:
        raise ValueError(f"register: the estimator name {name!r} is taken")
    if not (name.isidentifier() and name == name.lower()):
        raise ValueError(f"register: {name!r} is not a lower-case identifier")
    if estimator.posterior != (estimator.estimate is None):
        raise ValueError(f"register: {name!r}: the posterior alone has no estimate function")
    if estimator.posterior and any(e.posterior for e in _REGISTRY.values()):
        raise ValueError(f"register: {name!r}: there is one posterior")
    _REGISTRY[name] = estimator
    return estimator


def unregister(name: str) -> None:
    """Remove a registered estimator (those of this module stay)."""
    if _REGISTRY.get(name) in _BUILT_IN:
        raise ValueError(f"unregister: {name!r} is one of the project's estimators")
    _REGISTRY.pop(name, None)


def registered() -> tuple[Estimator, ...]:
    """Every estimator, in the order tables list them: the posterior first."""
    return tuple(_REGISTRY.values())


def estimator_names() -> tuple[str, ...]:
    """Every estimator's name, in :func:`registered` order (what ``all`` means)."""
    return tuple(_REGISTRY)


def estimator_named(name: str) -> Estimator:
    """The registered estimator called ``name``.

    Raises:
        KeyError: none is (the message lists those that are).
    """
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise KeyError(f"{name!r} is not an estimator; allowed: {', '.join(_REGISTRY)}") from None


def is_posterior(name: str) -> bool:
    """Whether ``name`` is the posterior's (False for names not registered, e.g. a stored
    sweep's estimator since removed)."""
    found = _REGISTRY.get(name)
    return found is not None and found.posterior


_BUILT_IN = (
    POSTERIOR,
    HUMAN_ONLY,
    Estimator(
        "judge_only",
        judge_only,
        "Wilson score",
        planning_se.JUDGE_ONLY,
        categorical=categorical.judge_only,
    ),
    Estimator(
        "rogan_gladen",
        rogan_gladen,
        "Lee et al.'s smoothed plug-in",
        planning_se.ROGAN_GLADEN,
        pools_rates=True,
        categorical=categorical.rogan_gladen,
    ),
    Estimator("ppi", ppi, "normal", planning_se.PPI, categorical=categorical.ppi),
    Estimator("ppi_pp", ppi_pp, "normal", planning_se.PPI_PP, categorical=categorical.ppi_pp),
)
for _estimator in _BUILT_IN:
    register(_estimator)
