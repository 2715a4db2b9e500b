"""What an estimator gives for each lane: an :class:`Estimate`, and why it may not apply.

Shared by the binary estimators (:mod:`kernels.binary_estimators`), their K-class forms
(:mod:`kernels.categorical.estimators`) and the posterior (:func:`posterior_estimate`);
:mod:`kernels.estimators` holds them all as registered values. Every function works on
``(B,)`` lanes (or scalars) with ``jax.numpy``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

Array = jax.Array

__all__ = [
    "Estimate",
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
    "reason_code",
    "masked_estimate",
    "posterior_estimate",
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


def reason_code(*checks) -> Array:
    """The code of the first ``(condition, code)`` that holds, lane by lane; 0 if none."""
    reason = jnp.zeros(jnp.shape(checks[0][0]), jnp.int8)
    for condition, code in reversed(checks):
        reason = jnp.where(condition, jnp.int8(code), reason)
    return reason


def masked_estimate(value, se, ci_low, ci_high, reason) -> Estimate:
    """An :class:`Estimate` with NaN numbers where ``reason`` is not 0."""
    applies = reason == APPLIES

    def masked(x):
        return jnp.where(applies, x, jnp.nan)

    return Estimate(masked(value), masked(se), masked(ci_low), masked(ci_high), reason)


def posterior_estimate(post_mean, post_sd, ci_low, ci_high) -> Estimate:
    """The posterior (``bayes``) as an :class:`Estimate`: it always applies."""
    return Estimate(post_mean, post_sd, ci_low, ci_high, jnp.zeros(jnp.shape(post_mean), jnp.int8))
