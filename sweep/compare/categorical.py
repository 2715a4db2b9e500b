"""``sweep compare --classes``: K-class ratings of several systems → θ's posteriors, every
pair's P(θ_a > θ_b), and the classical estimators, as binary compare reports α's.

::

    options = CompareOptions.of(classes="worse,tie,better")
    result = compare_classes("examples/preferences.csv", options)
    result.systems, result.pairs, result.settings, result.warnings

Per system s, θ_s = vᵀπ_s under the categorical model (MODEL.md, "Ratings with more than
two classes, and several judges"): each system its own π_s and its own judges' confusion
C_s (per-system rates; one C shared by all systems is not built), with Dirichlet(1)
priors, the judges' joint verdict modelled freely per true class (``joint``) or the judges
independent given the truth (``independent``; :class:`sweep.spec.categorical.JudgeModel`).
There is no exact rule for this posterior, so it is sampled: every system is a lane of one batched
call of :func:`binmetric_sweep.kernels.categorical.nuts.sample_fits`, at the sweeps'
settings (:data:`NUTS_SETTINGS`: 4 chains × (500 warm-up + 1000 draws)); a system's key
comes from the seed and its name (:func:`system_keys`), so its numbers depend on neither
the file's order nor the other systems. The systems' posteriors are independent, so
P(θ_a > θ_b) is the share of draw pairs (one of a's, one of b's, drawn together by index)
with θ_a > θ_b: its Monte Carlo SE is about √(P(1 − P)/ESS), below 0.01 at 4,000 draws.
Sampler health (split R-hat, bulk ESS, divergent transitions) is kept per system, and a
warning names each system whose draws look unhealthy.

The classical estimators (``--estimator``) are the registry's K-class forms
(:attr:`~binmetric_sweep.kernels.estimators.Estimator.categorical`) on each system's counts,
their pairs z-tested as binary compare tests them (:func:`~.by_estimator.z_test_pairs`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop
from binmetric_sweep.sweep.compare.analysis import (
    Comparison,
    Method,
    comparison_settings,
    pair_table,
)
from binmetric_sweep.sweep.compare.by_estimator import (
    estimate_rows,
    posterior_rows,
    z_test_pairs,
)
from binmetric_sweep.sweep.compare.categorical_ratings import ClassCounts, read_classes
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.fits import sampled_fits
from binmetric_sweep.sweep.execution.programs import categorical_nuts_program

__all__ = [
    "ESS_LIMIT",
    "NUTS_SETTINGS",
    "RHAT_LIMIT",
    "class_estimates_table",
    "class_posterior",
    "compare_classes",
    "system_counts",
    "system_keys",
]

#: The sampler's settings: the sweeps' NUTS defaults (4 chains × (500 + 1000)).
NUTS_SETTINGS = NUTSSettings()
#: Sampler health below which a system is named in a warning (as ``--method nuts``).
RHAT_LIMIT, ESS_LIMIT = 1.01, 400
#: The systems table's count columns, named as binary compare names them: every human
#: rating, the paired ones, the judge-only ones.
COUNTS = ("n_outputs", "n_human", "n_paired", "n_metric")


def compare_classes(ratings, options, nuts: NUTSSettings | None = None) -> Comparison:
    """The K-class comparison of a ratings or counts file (or DataFrame) under ``options``
    (a :class:`~.options.CompareOptions` whose ``classes`` is set): the posterior's tables,
    or with estimators other than the posterior alone one row per (estimator, system) and
    per (estimator, pair); ``nuts``: the sampler's settings (None: :data:`NUTS_SETTINGS`).

    Raises:
        SweepError: bad input (one line naming the file, row and column, or the option).
    """
    o = options
    data = read_classes(
        ratings,
        o.classes,
        o.judge_columns,
        annotators=o.annotator_policy,
        judges=o.judge_policy,
    )
    if len(data.systems) < 2:
        source = data.reading.source if not isinstance(ratings, pd.DataFrame) else "ratings"
        only = f" ({data.systems[0]!r})" if data.systems else ""
        raise SweepError(
            f"{os.fspath(source)}: a comparison needs two systems or more; it has one{only}"
        )
    jax.config.update("jax_enable_x64", True)
    posterior = class_posterior(data, o, nuts) if o.has_posterior else None
    extra = _settings(data, o)
    if o.posterior_only:
        return replace(posterior, settings={**posterior.settings, **extra}, reading=data.reading)
    systems = class_estimates_table(data, o.estimators, o.level, posterior)
    pairs = z_test_pairs(systems, gamma=o.gamma, adjust=o.adjust)
    warnings = []
    if posterior is not None:
        name = next(e.name for e in o.estimators if e.posterior)
        pairs = pd.concat([posterior.pairs.assign(estimator=name), pairs], ignore_index=True)
        pairs = pairs[["estimator", *(c for c in pairs.columns if c != "estimator")]]
        warnings = posterior.warnings
    settings = comparison_settings(
        o.rates,
        o.gamma,
        o.level,
        o.adjust,
        method=Method.NUTS if posterior is not None else None,
        sampler=None if posterior is None else posterior.settings,
        seed=o.seed,
        label_policies=o.label_policies,
        estimator=o.estimator_shown,
    )
    return Comparison(systems, pairs, {**settings, **extra}, warnings, None, data.reading)


def _settings(data: ClassCounts, options) -> dict:
    """The K-class settings a comparison's outputs carry beside binary compare's."""
    out = {"classes": list(data.reading.classes), "values": list(data.reading.values)}
    out["judge_columns"] = list(data.reading.judge_columns)
    out["judge_model"] = options.judge_model.name
    return out


def system_keys(seed: int, systems) -> jax.Array:
    """``(S,)`` keys: system s's from ``jax.random.key(seed)`` folded with the two 32-bit
    words of the SHA-256 of its name, never from its place in the file."""
    words = [
        np.frombuffer(hashlib.sha256(name.encode()).digest()[:8], np.uint32) for name in systems
    ]
    base = jax.random.key(seed)
    return jnp.stack(
        [jax.random.fold_in(jax.random.fold_in(base, int(w[0])), int(w[1])) for w in words]
    )


def system_counts(data: ClassCounts) -> pd.DataFrame:
    """Each system's counts as the systems tables name them: ``system``, ``n_outputs``,
    ``n_human`` (N_Φ, every human rating), ``n_paired`` (N_ρη), ``n_metric`` (N_M: the
    judge-only ratings)."""
    c = data.counts
    return pd.DataFrame(
        {
            "system": list(data.systems),
            "n_outputs": data.n_outputs,
            "n_human": c.human.sum(axis=1).astype(np.int64),
            "n_paired": c.paired.sum(axis=(1, 2)).astype(np.int64),
            "n_metric": c.judged.sum(axis=1).astype(np.int64),
        }
    )


def class_posterior(data: ClassCounts, options, nuts: NUTSSettings | None = None) -> Comparison:
    """Each system's θ posterior from NUTS draws, best first, and every pair's
    P(θ_a > θ_b) with its test (:func:`~.analysis.pair_table`: the same columns as binary
    compare's, θ for α).

    The systems table: :data:`COUNTS`, ``theta_mean``, ``theta_sd``, ``ci_low``, ``ci_high``
    (central, at ``options.level``), ``rhat``, ``ess``, ``divergences``. Settings: binary
    compare's under :attr:`~.analysis.Method.NUTS` (``chains``, ``draws``, ``rhat_max``,
    ``ess_min``, ``seed``) and ``warmup``.
    """
    o = options
    settings = resolve_loop(NUTS_SETTINGS if nuts is None else nuts, jax.default_backend())
    independent = o.judge_model.independent
    program = categorical_nuts_program(data.layout, settings, independent, False, None)
    s = len(data.systems)
    counts = jax.tree.map(jnp.asarray, data.counts)
    draws = jax.device_get(program(system_keys(o.seed, data.systems), counts, s))
    fits = sampled_fits(draws, s, o.level)
    theta = np.asarray(draws.alpha).reshape(s, -1)  # (S, chains × samples)
    # Row by row: S × S × draws at once would not fit for a leaderboard of thousands.
    p = np.stack([np.mean(row > theta, axis=1) for row in theta])
    np.fill_diagonal(p, 0.5)
    order = np.argsort(-fits.post_mean, kind="stable")
    systems = system_counts(data).iloc[order].reset_index(drop=True)
    systems = systems.assign(
        theta_mean=fits.post_mean[order],
        theta_sd=fits.post_sd[order],
        ci_low=fits.ci_low[order],
        ci_high=fits.ci_high[order],
        rhat=fits.rhat[order],
        ess=fits.ess[order],
        divergences=fits.divergences[order].astype(np.int64),
    )
    p = p[np.ix_(order, order)]
    as_alpha = systems.rename(columns={"theta_mean": "alpha_mean", "theta_sd": "alpha_sd"})
    pairs = pair_table(as_alpha, p, o.gamma, o.adjust)
    sampler = {
        "chains": settings.chains,
        "draws": settings.chains * settings.samples,
        "rhat_max": float(np.nanmax(fits.rhat)),
        "ess_min": float(np.nanmin(fits.ess)),
    }
    result = comparison_settings(
        o.rates, o.gamma, o.level, o.adjust, Method.NUTS, sampler, o.seed, o.label_policies
    )
    result["warmup"] = settings.warmup
    return Comparison(systems, pairs, result, _warnings(data, systems), p)


def _warnings(data: ClassCounts, systems: pd.DataFrame) -> list[str]:
    """A line for each system whose judge-only ratings have no paired ones to learn its
    judges' confusion from, and for each whose draws look unhealthy."""
    out = [
        f"system {name!r} has judge-only ratings but no paired ones: its judges' confusion "
        "comes from the prior alone, so its judge ratings say little about θ"
        for name, paired, judged in zip(
            systems["system"], systems["n_paired"], systems["n_metric"], strict=True
        )
        if paired == 0 and judged > 0
    ]
    for row in systems.itertuples():
        if not (row.rhat <= RHAT_LIMIT and row.ess >= ESS_LIMIT and row.divergences == 0):
            out.append(
                f"NUTS: system {row.system!r} has R-hat {row.rhat:.3f}, ESS {row.ess:.0f} and "
                f"{row.divergences} divergent transitions: its draws may not represent the "
                f"posterior (healthy: R-hat ≤ {RHAT_LIMIT}, ESS ≥ {ESS_LIMIT}, none divergent)"
            )
    return out


def class_estimates_table(
    data: ClassCounts, estimators, level: float, posterior: Comparison | None = None
) -> pd.DataFrame:
    """One row per (estimator, system), as binary compare's
    (:func:`~.by_estimator.estimates_table`) without its ρ, η columns: ``estimator``,
    ``system``, :data:`COUNTS`, ``estimate``, ``se``, ``ci_low``, ``ci_high`` at ``level``,
    ``applicable`` and ``reason``. A classical estimator is its K-class form on each
    system's counts; one without a K-class form does not apply (its reason says so); the
    posterior's rows come from ``posterior`` (its systems table), required where
    ``estimators`` holds it. Within an estimator, systems are ranked by its estimate, best
    first, those it does not apply to last."""
    shown = system_counts(data)
    counts = jax.tree.map(jnp.asarray, data.counts)
    frames = []
    for estimator in estimators:
        if estimator.posterior:
            if posterior is None:
                raise ValueError(f"{estimator.name}'s rows need the posterior's comparison")
            frame = posterior_rows(posterior.systems, "theta")
        elif estimator.categorical is None:
            nan = np.full(len(data.systems), np.nan)
            frame = pd.DataFrame(
                {
                    "system": list(data.systems),
                    "estimate": nan,
                    "se": nan,
                    "ci_low": nan,
                    "ci_high": nan,
                    "applicable": False,
                    "reason": "no K-class form",
                }
            )
        else:
            e = estimator.categorical(counts, data.layout, float(level))
            frame = estimate_rows(data.systems, e)
        frame = frame.merge(shown, on="system", how="left", validate="one_to_one")
        frame.insert(0, "estimator", estimator.name)
        order = np.lexsort((-frame["estimate"].fillna(-np.inf).to_numpy(), ~frame["applicable"]))
        frames.append(frame.iloc[order])
    columns = ["estimator", "system", *COUNTS, "estimate", "se", "ci_low", "ci_high"]
    table = pd.concat(frames, ignore_index=True)
    return table[[*columns, "applicable", "reason"]]
