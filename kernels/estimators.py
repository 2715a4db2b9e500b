"""Estimators of α on one campaign's counts: the posterior's and five classical ones.

Teams that rate with an LLM judge or a metric mostly report one of these
instead of a posterior (docs/estimators.md). Each is a closed form in the
counts (:class:`kernels.counts.Counts`), on three sets of items:

- **H**, the human-rated items: N_Φ (``n_phi``), n₊ of them adequate (``n_pos``);
- **L**, the paired items, with a human label Y and a metric label f:
  N_ρη = P + (N_ρη − P) (``n_pos_paired`` + ``n_neg_paired``), n_ρ (``n_tp``)
  with Y = f = 1, n_η (``n_tn``) with Y = f = 0. With a shared paired set L is
  H; with ρ, η known there is none;
- **U**, the metric-only items: N_M (``n_m``), m₊ of them rated 1 (``m_pos``).

On L, mean(Y) = P/N_ρη, mean(f) = (n_ρ + N_ρη − P − n_η)/N_ρη and
mean(Y·f) = n_ρ/N_ρη. Variances are population variances (ddof 0), as
``ppi_py`` takes them, but for PPI++'s λ̂ (see :func:`ppi_pp`).

An :class:`Estimate` holds, per lane, the estimate, its standard error, an
interval and a reason code: 0 where the estimator applies; otherwise one of
:data:`REASONS`, and the numbers are NaN. An :class:`Estimator` is one value
carrying all that the layers above need of an estimator: a pure function
``(counts (B,), level) -> Estimate (B,)``, its interval's kind, its planning
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
import jax.numpy as jnp

from binmetric_sweep.kernels import planning_se
from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.intervals import two_sided_z, wilson_interval
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

#: Why an estimator does not apply to a lane, by code (the code 0: it applies).
REASONS = (
    "",
    "no human ratings",
    "no metric-only ratings",
    "no paired item rated adequate by the human",
    "no paired item rated inadequate by the human",
    "judge no better than chance",
    "no paired set (rho, eta known)",
    "fewer than 2 paired items",
    # K-class counts (kernels.categorical.estimators)
    "judges answer in more outcomes than classes (several judges)",
    "a class has no paired item",
    "the judge's confusion matrix is singular",
)
(
    APPLIES,
    NO_HUMAN,
    NO_METRIC,
    NO_PAIRED_ADEQUATE,
    NO_PAIRED_INADEQUATE,
    CHANCE_JUDGE,
    NO_PAIRED_SET,
    FEW_PAIRED,
    SEVERAL_JUDGES,
    NO_PAIRED_CLASS,
    SINGULAR_CONFUSION,
) = range(len(REASONS))


class Estimate(NamedTuple):
    """One estimator's answer for each lane, every field ``(B,)`` (or ``(C, R)``).

    Attributes:
        value: the estimate of α; NaN where the estimator does not apply.
        se: its standard error (for ``bayes``, the posterior SD).
        ci_low, ci_high: its interval at the sweep's level (for ``bayes``,
            the central credible interval).
        reason: int8, 0 where the estimator applies, else an index into
            :data:`REASONS`.
    """

    value: Array
    se: Array
    ci_low: Array
    ci_high: Array
    reason: Array

    @property
    def applicable(self) -> Array:
        """Where the estimator applies (bool, the fields' shape)."""
        return self.reason == APPLIES


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


def _reason(*checks) -> Array:
    """The code of the first ``(condition, code)`` that holds, lane by lane; 0 if none."""
    reason = jnp.zeros(jnp.shape(checks[0][0]), jnp.int8)
    for condition, code in reversed(checks):
        reason = jnp.where(condition, jnp.int8(code), reason)
    return reason


def _estimate(value, se, ci_low, ci_high, reason) -> Estimate:
    """An :class:`Estimate` with NaN numbers where ``reason`` is not 0."""
    applies = reason == APPLIES

    def masked(x):
        return jnp.where(applies, x, jnp.nan)

    return Estimate(masked(value), masked(se), masked(ci_low), masked(ci_high), reason)


def posterior_estimate(post_mean, post_sd, ci_low, ci_high) -> Estimate:
    """The posterior (``bayes``) as an :class:`Estimate`: it always applies."""
    return Estimate(post_mean, post_sd, ci_low, ci_high, jnp.zeros(jnp.shape(post_mean), jnp.int8))


def _proportion(successes, trials, level: float, reason) -> Estimate:
    """successes/trials with SE √(p(1 − p)/n) and Wilson's score interval."""
    n = jnp.maximum(trials, 1.0)
    p = successes / n
    low, high = wilson_interval(p, trials, two_sided_z(level))
    return _estimate(p, jnp.sqrt(p * (1.0 - p) / n), low, high, reason)


def human_only(counts: Counts, level: float) -> Estimate:
    """n₊/N_Φ, the human ratings alone; Wilson interval. Needs N_Φ > 0."""
    reason = _reason((counts.n_phi == 0, NO_HUMAN))
    return _proportion(counts.n_pos, counts.n_phi, level, reason)


def judge_only(counts: Counts, level: float) -> Estimate:
    """m₊/N_M, the metric's labels taken at face value; Wilson interval. Needs N_M > 0."""
    reason = _reason((counts.n_m == 0, NO_METRIC))
    return _proportion(counts.m_pos, counts.n_m, level, reason)


def rogan_gladen(counts: Counts, level: float) -> Estimate:
    """Rogan and Gladen's correction of the judge's rate, with Lee et al.'s interval.

    α̂ = (p̂ + η̂ − 1)/(ρ̂ + η̂ − 1) clipped to [0, 1], p̂ = m₊/N_M, ρ̂ = n_ρ/P,
    η̂ = n_η/(N_ρη − P) (ρ, η as given where known). SE by the delta method at
    the clipped α̂. Interval (Lee et al. 2025): p̂, ρ̂, η̂ smoothed (z²/2 and
    one success and failure added), its centre moved by their second-order
    shift, clipped to [0, 1]; [0, 1] where the smoothed ρ̃ + η̃ ≤ 1. Where ρ, η
    are known their terms vanish and they are not smoothed. Needs N_M > 0,
    P > 0, N_ρη − P > 0 (unless known) and ρ̂ + η̂ > 1.
    """
    z = two_sided_z(level)
    known = counts.rho_eta_known
    n, m1, m0 = counts.n_m, counts.n_pos_paired, counts.n_neg_paired
    p = counts.m_pos / jnp.maximum(n, 1.0)
    rho = jnp.where(known, counts.rho, counts.n_tp / jnp.maximum(m1, 1.0))
    eta = jnp.where(known, counts.eta, counts.n_tn / jnp.maximum(m0, 1.0))
    youden = rho + eta - 1.0
    reason = _reason(
        (n == 0, NO_METRIC),
        (~known & (m1 == 0), NO_PAIRED_ADEQUATE),
        (~known & (m0 == 0), NO_PAIRED_INADEQUATE),
        (youden <= 0, CHANCE_JUDGE),
    )
    safe = jnp.where(youden > 0, youden, 1.0)
    value = jnp.clip((p + eta - 1.0) / safe, 0.0, 1.0)
    calibration = jnp.where(
        known,
        0.0,
        (1.0 - value) ** 2 * eta * (1.0 - eta) / jnp.maximum(m0, 1.0)
        + value**2 * rho * (1.0 - rho) / jnp.maximum(m1, 1.0),
    )
    se = jnp.sqrt(p * (1.0 - p) / jnp.maximum(n, 1.0) + calibration) / safe

    z2 = z * z
    n_s = n + z2
    p_s = (counts.m_pos + z2 / 2.0) / n_s
    m0_s, m1_s = m0 + 2.0, m1 + 2.0
    eta_s = jnp.where(known, counts.eta, (counts.n_tn + 1.0) / m0_s)
    rho_s = jnp.where(known, counts.rho, (counts.n_tp + 1.0) / m1_s)
    youden_s = rho_s + eta_s - 1.0
    safe_s = jnp.where(youden_s > 0, youden_s, 1.0)
    theta = (p_s + eta_s - 1.0) / safe_s
    eta_term = eta_s * (1.0 - eta_s) / m0_s
    rho_term = rho_s * (1.0 - rho_s) / m1_s
    shift = jnp.where(known, 0.0, 2.0 * z2 * (-(1.0 - theta) * eta_term + theta * rho_term))
    spread = jnp.where(known, 0.0, (1.0 - theta) ** 2 * eta_term + theta**2 * rho_term)
    se_s = jnp.sqrt(p_s * (1.0 - p_s) / n_s + spread) / safe_s
    low = jnp.where(youden_s > 0, jnp.clip(theta + shift - z * se_s, 0.0, 1.0), 0.0)
    high = jnp.where(youden_s > 0, jnp.clip(theta + shift + z * se_s, 0.0, 1.0), 1.0)
    return _estimate(value, se, low, high, reason)


class _Paired(NamedTuple):
    """Moments of the labels on L and U (each ``(B,)``)."""

    n: Array  # N_ρη
    y: Array  # mean of Y on L
    f: Array  # mean of f on L
    var_y: Array
    var_f: Array
    cov: Array  # Cov_L(Y, f), ddof 0
    f_unlabeled: Array  # mean of f on U (0 where N_M = 0)
    reason: Array


def _paired(counts: Counts) -> _Paired:
    n = counts.n_pos_paired + counts.n_neg_paired
    safe = jnp.maximum(n, 1.0)
    y = counts.n_pos_paired / safe
    f = (counts.n_tp + counts.n_neg_paired - counts.n_tn) / safe
    reason = _reason((counts.rho_eta_known, NO_PAIRED_SET), (n < 2, FEW_PAIRED))
    return _Paired(
        n=n,
        y=y,
        f=f,
        var_y=y * (1.0 - y),
        var_f=f * (1.0 - f),
        cov=counts.n_tp / safe - y * f,
        f_unlabeled=counts.m_pos / jnp.maximum(counts.n_m, 1.0),
        reason=reason,
    )


def _ppi_with(counts: Counts, level: float, lam: Array, moments: _Paired) -> Estimate:
    """λ·mean_U(f) + mean_L(Y − λf), SE √(Var_L(Y − λf)/N_ρη + λ²Var_U(f)/N_M), normal interval.

    Where N_M = 0, λ is 0: the classical mean of Y on L.
    """
    z = two_sided_z(level)
    has_u = counts.n_m > 0
    lam = jnp.where(has_u, lam, 0.0)
    m = moments
    value = lam * m.f_unlabeled + m.y - lam * m.f
    rectifier = jnp.maximum(m.var_y + lam * lam * m.var_f - 2.0 * lam * m.cov, 0.0)
    var_u = m.f_unlabeled * (1.0 - m.f_unlabeled)
    se = jnp.sqrt(
        rectifier / jnp.maximum(m.n, 1.0)
        + jnp.where(has_u, lam * lam * var_u / jnp.maximum(counts.n_m, 1.0), 0.0)
    )
    return _estimate(value, se, value - z * se, value + z * se, m.reason)


def ppi(counts: Counts, level: float) -> Estimate:
    """Prediction-powered inference (Angelopoulos et al. 2023; ``ppi_py`` with λ = 1).

    mean_U(f) + mean_L(Y − f), normal interval. L must be a random sample of
    the outputs U comes from. Needs a paired set of at least 2 items; with
    N_M = 0 it is the classical mean of Y on L.
    """
    moments = _paired(counts)
    return _ppi_with(counts, level, jnp.ones_like(moments.y), moments)


def ppi_pp(counts: Counts, level: float) -> Estimate:
    """PPI++ (Angelopoulos et al. 2024): PPI with λ̂ tuned as ``ppi_py`` tunes it for a mean.

    λ̂ = Cov_L(Y, f) / ((1 + N_ρη/N_M)·Var_{L∪U}(f)), the covariance with
    ddof 0 and the variance over L and U together with ddof 1, clipped to
    [0, 1]. Where f takes one value on L and U every λ gives the same
    estimate and SE, and λ̂ is 0 (``ppi_py`` gives NaN there).
    """
    m = _paired(counts)
    total = m.n + counts.n_m
    ones = m.f * m.n + counts.m_pos
    var_all = (ones - ones * ones / jnp.maximum(total, 1.0)) / jnp.maximum(total - 1.0, 1.0)
    denominator = (1.0 + m.n / jnp.maximum(counts.n_m, 1.0)) * var_all
    lam = jnp.where(denominator > 0, m.cov / jnp.where(denominator > 0, denominator, 1.0), 0.0)
    return _ppi_with(counts, level, jnp.clip(lam, 0.0, 1.0), m)


#: The posterior: α's posterior mean, SD and central credible interval.
POSTERIOR = Estimator("bayes", None, "central credible", None, pools_rates=True, posterior=True)
HUMAN_ONLY = Estimator("human_only", human_only, "Wilson score", planning_se.HUMAN_ONLY)

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


def _categorical_form(name: str) -> Callable:
    """The K-class form of a built-in estimator, :mod:`kernels.categorical.estimators`'
    function ``name`` (imported when first called: that module builds on this one)."""

    def form(counts, layout, level: float) -> Estimate:
        from binmetric_sweep.kernels.categorical import estimators as categorical

        return getattr(categorical, name)(counts, layout, level)

    form.__name__ = form.__qualname__ = name
    return form


HUMAN_ONLY = HUMAN_ONLY._replace(categorical=_categorical_form("human_only"))
_BUILT_IN = (
    POSTERIOR,
    HUMAN_ONLY,
    Estimator(
        "judge_only",
        judge_only,
        "Wilson score",
        planning_se.JUDGE_ONLY,
        categorical=_categorical_form("judge_only"),
    ),
    Estimator(
        "rogan_gladen",
        rogan_gladen,
        "Lee et al.'s smoothed plug-in",
        planning_se.ROGAN_GLADEN,
        pools_rates=True,
        categorical=_categorical_form("rogan_gladen"),
    ),
    Estimator("ppi", ppi, "normal", planning_se.PPI, categorical=_categorical_form("ppi")),
    Estimator(
        "ppi_pp", ppi_pp, "normal", planning_se.PPI_PP, categorical=_categorical_form("ppi_pp")
    ),
)
for _estimator in _BUILT_IN:
    register(_estimator)
