"""Every estimator on the same real counts: each system's estimate, and each pair's z-test.

::

    counts = read_ratings("examples/arena_judge_gpt-4o-mini.csv").counts
    systems = estimates_table(counts, ["human_only", "ppi_pp"], rates="per-system", level=0.9)
    pairs = z_test_pairs(systems, gamma=0.05, adjust="holm")

The classical estimators are :mod:`binmetric_sweep.kernels.estimators`' closed
forms on each system's counts, as a sweep computes them on a replicate's. A
system's human ratings are its set H, its paired ratings L and its
metric-only ratings U. Rogan–Gladen takes ρ̂, η̂ from the counts the rate
model gives (:attr:`~.analysis.RateModel.estimated_rates`): under shared rates
every system's paired ratings pooled, as the posterior pools (ρ, η); the
others have no rates to pool (an estimator's
:attr:`~binmetric_sweep.kernels.estimators.Estimator.pools_rates`). The
posterior comes from :func:`~.analysis.compare_systems` and enters as rows of
the same table.

A pair of a classical estimator is tested by z = (â − b̂)/√(se_a² + se_b²),
two-sided: the systems' estimates are independent under per-system rates;
under shared rates Rogan–Gladen's share ρ̂, η̂, whose error moves both the
same way, so the test counts that error twice and errs on the safe side.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from binmetric_sweep.kernels import estimators as ke
from binmetric_sweep.sweep.compare.analysis import (
    Adjustment,
    Comparison,
    RateModel,
    adjusted_tests,
    counts_of,
    system_counts,
)

__all__ = ["estimate_rows", "estimates_table", "posterior_rows", "z_test_pairs"]

#: The systems table's count columns (:func:`~.analysis.system_counts`).
COUNTS = ("n_outputs", "n_human", "n_paired", "n_metric")
#: The paired ratings' rate columns, as the posterior's systems table has them.
RATES_SHOWN = ("rho_mean", "eta_mean")


def posterior_rows(systems: pd.DataFrame, parameter: str) -> pd.DataFrame:
    """The posterior's rows of an estimates table, from its systems table (the posterior
    mean and SD of ``parameter``, e.g. "alpha" or "theta", as estimate and SE)."""
    return pd.DataFrame(
        {
            "system": systems["system"].to_numpy(),
            "estimate": systems[f"{parameter}_mean"].to_numpy(),
            "se": systems[f"{parameter}_sd"].to_numpy(),
            "ci_low": systems["ci_low"].to_numpy(),
            "ci_high": systems["ci_high"].to_numpy(),
            "applicable": True,
            "reason": "",
        }
    )


def estimates_table(
    counts: pd.DataFrame,
    estimators: Sequence[str | ke.Estimator],
    *,
    rates: str | RateModel = "per-system",
    level: float = 0.95,
    posterior: Comparison | None = None,
) -> pd.DataFrame:
    """One row per (estimator, system): ``estimator``, ``system``, the counts, ``estimate``,
    ``se``, ``ci_low``, ``ci_high`` at ``level``, ``rho_mean`` and ``eta_mean`` (the paired
    ratings' Beta means, as the posterior's systems table has them: the system's own, or
    pooled under shared rates; the same for every estimator), ``applicable`` and ``reason``
    ("" where it applies; the estimate's numbers are NaN where it does not).

    ``counts``: one row per system (:func:`~.ratings.read_ratings`).
    ``estimators``: registered estimators or their names; the posterior's rows
    come from ``posterior`` (its ``systems``), required when ``estimators``
    holds it. Within an estimator, systems are ranked by its estimate, best
    first, those it does not apply to last. ``rates``: a rate model or its name.
    """
    model = RateModel.of(rates)
    jax.config.update("jax_enable_x64", True)
    shown = system_counts(counts)
    shown["rho_mean"], shown["eta_mean"] = model.rate_means(counts_of(counts))
    frames = []
    for estimator in estimators:
        if not isinstance(estimator, ke.Estimator):
            estimator = ke.estimator_named(estimator)
        if estimator.posterior:
            if posterior is None:
                raise ValueError(f"{estimator.name}'s rows need the posterior's comparison")
            frame = posterior_rows(posterior.systems, "alpha")
        else:
            frame = _classical(counts, estimator, model, level)
        frame = frame.merge(shown, on="system", how="left", validate="one_to_one")
        frame.insert(0, "estimator", estimator.name)
        order = np.lexsort((-frame["estimate"].fillna(-np.inf).to_numpy(), ~frame["applicable"]))
        frames.append(frame.iloc[order])
    columns = ["estimator", "system", *COUNTS, "estimate", "se", "ci_low", "ci_high", *RATES_SHOWN]
    table = pd.concat(frames, ignore_index=True)
    return table[[*columns, "applicable", "reason"]]


def _classical(
    counts: pd.DataFrame, estimator: ke.Estimator, rates: RateModel, level: float
) -> pd.DataFrame:
    """An estimator on each system's counts (for one that pools rates, the counts its ρ̂, η̂
    come from under ``rates``: pooled paired counts under shared)."""
    c = jax.tree.map(jnp.asarray, counts_of(counts))
    if estimator.pools_rates:
        c = rates.estimated_rates(c)
    return estimate_rows(counts["system"].to_numpy(), estimator.estimate(c, float(level)))


def estimate_rows(systems, e: ke.Estimate) -> pd.DataFrame:
    """An estimator's rows of an estimates table: ``(S,)`` system names and its
    ``(S,)`` :class:`kernels.estimates.Estimate`, its reasons in words."""
    reason = np.asarray(e.reason)
    return pd.DataFrame(
        {
            "system": list(systems),
            "estimate": np.asarray(e.value),
            "se": np.asarray(e.se),
            "ci_low": np.asarray(e.ci_low),
            "ci_high": np.asarray(e.ci_high),
            "applicable": reason == ke.APPLIES,
            "reason": [ke.REASONS[r] for r in reason],
        }
    )


def z_test_pairs(
    estimates: pd.DataFrame, *, gamma: float, adjust: str | Adjustment
) -> pd.DataFrame:
    """Every pair of systems under each estimator of ``estimates`` but the posterior
    (:func:`estimates_table`), ``a`` ranked above ``b``: ``diff_mean`` = â − b̂, ``se_diff``,
    the two-sided z-test's ``p_value``, ``significant`` (``p_value`` ≤ γ, or with
    ``adjust`` ``p_adjusted`` ≤ γ, adjusted over that estimator's testable pairs) and
    ``eps``, z·se_diff at the level the pair is held to (as for the posterior). A pair with a
    system the estimator does not apply to is not tested: NaN numbers, and ``significant``
    missing (pandas' nullable boolean: NA; null in JSON and Parquet), neither true nor false.
    ``adjust``: an adjustment or its name.
    """
    adjustment = Adjustment.of(adjust)
    frames = []
    for name, group in estimates.groupby("estimator", sort=False):
        if ke.is_posterior(name):
            continue
        a, b = np.triu_indices(len(group), k=1)
        value, se = group["estimate"].to_numpy(), group["se"].to_numpy()
        diff = value[a] - value[b]
        se_diff = np.sqrt(se[a] ** 2 + se[b] ** 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.abs(diff) / se_diff
        p_value = _two_sided(z)
        testable = np.isfinite(p_value)
        frame = pd.DataFrame(
            {
                "estimator": name,
                "a": group["system"].to_numpy()[a],
                "b": group["system"].to_numpy()[b],
                "diff_mean": diff,
                "se_diff": se_diff,
                "p_value": p_value,
                "significant": testable & (p_value <= gamma),
            }
        )
        level = gamma
        if adjustment.adjusts:
            frame["p_adjusted"], frame["significant"], level = adjusted_tests(
                p_value, gamma, adjustment
            )
        frame["significant"] = frame["significant"].astype("boolean").mask(~testable)
        frame["eps"] = NormalDist().inv_cdf(1.0 - level / 2.0) * se_diff
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["estimator", "a", "b", "diff_mean", "se_diff", "p_value"])
    return pd.concat(frames, ignore_index=True)


def _two_sided(z: np.ndarray) -> np.ndarray:
    """2·(1 − Φ(|z|)), vectorised through the complementary error function."""
    from jax.scipy.special import erfc

    return np.asarray(erfc(jnp.asarray(z) / np.sqrt(2.0)))
