"""``sweep compare``: real ratings of several systems → who is better, how sure, what next.

The steps, each callable alone: :func:`~.ratings.read_ratings` (a ratings or
counts file → one row of counts per system), :func:`~.analysis.compare_systems`
(counts → posteriors and pair probabilities), :func:`~.next_ratings.next_ratings`
(pairs not significant → the cheapest ratings to add), :mod:`.report` (text,
JSON, Parquet) and :mod:`.figure`. :func:`compare` chains the first three.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pandas as pd

from binmetric_sweep.kernels.estimators import POSTERIOR, Estimator
from binmetric_sweep.sweep.compare.analysis import (
    Adjustment,
    Comparison,
    RateModel,
    compare_systems,
    parse_options,
)
from binmetric_sweep.sweep.compare.ratings import ratings_from_frame, read_ratings
from binmetric_sweep.sweep.compile_cache import DEFAULT, use_compilation_cache
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.estimates import ALL, estimators_of_option

__all__ = ["Comparison", "compare"]


def compare(
    ratings: str | os.PathLike | pd.DataFrame,
    *,
    rates: str | RateModel = "per-system",
    gamma: float = 0.05,
    level: float = 0.95,
    adjust: str | Adjustment = "none",
    method: str = "quadrature",
    seed: int = 0,
    cost_metric: float | None = None,
    cost_human: float = 1.0,
    power: float = 0.8,
    annotators: str = "refuse",
    judges: str = "refuse",
    progress: bool = False,
    estimator: str | Estimator = POSTERIOR.name,
) -> Comparison:
    """Compare the systems of a ratings file or DataFrame (one row per rated output, or per
    system with counts), as ``sweep compare``.

    ::

        result = sweep.compare("examples/ratings.csv", rates="shared")
        result.systems, result.pairs, result.warnings

    ``rates`` is a rate model (:data:`~.analysis.RATE_MODELS`: "per-system",
    "shared") and ``adjust`` an adjustment (:data:`~.analysis.ADJUSTMENTS`: "none",
    "holm", "bh"), each a value or its name; the settings name them.
    ``method`` "nuts" computes the same comparison from NUTS draws (the check,
    :func:`~.sampled.compare_by_nuts`, with ``seed``). With ``cost_metric``, the
    pairs not significant also get the cheapest ratings that would make them so
    (:func:`~.next_ratings.next_ratings`). ``annotators`` and ``judges`` say how
    several human or metric labels of one item are combined ("refuse" or
    "majority"; :mod:`~.ratings`); the result's ``reading`` says what was read.
    A DataFrame is read as a file of its columns would be, layout and messages
    alike (:func:`~.ratings.ratings_from_frame`). ``progress`` shows the quadrature's
    stages on standard error.

    ``estimator`` (a registered estimator or its name, or "all") other than the
    posterior ("bayes") gives, in place of the posterior's tables, one row per
    (estimator, system) and one per (estimator, pair) with its z-test
    (:mod:`~.by_estimator`); "all" includes the posterior's rows. A pair an
    estimator cannot test has ``significant`` NA (a nullable boolean column),
    not False.

    Raises:
        SweepError: bad input (one line naming the file, row and column, or the option).
    """
    # Compiled programs kept for the next run, as ``sweep run`` keeps them.
    use_compilation_cache(DEFAULT, strict=False)
    # The options are parsed once, here, before the file is read: the values go on down.
    model, adjustment = parse_options(rates, gamma, level, adjust)
    rules = {"annotators": annotators, "judges": judges}
    if isinstance(ratings, pd.DataFrame):
        counts, reading = ratings_from_frame(ratings, **rules)
    else:
        counts, reading = read_ratings(ratings, **rules)
    chosen = estimators_of_option(estimator)
    posterior_only = len(chosen) == 1 and chosen[0].posterior
    if not posterior_only and cost_metric is not None:
        shown_as = estimator.name if isinstance(estimator, Estimator) else estimator
        raise SweepError(
            f"--cost-metric: plans the posterior's ratings; not with --estimator {shown_as}"
        )
    if len(counts) < 2:
        source = "ratings" if isinstance(ratings, pd.DataFrame) else os.fspath(ratings)
        only = f" ({counts['system'].iloc[0]!r})" if len(counts) else ""
        raise SweepError(f"{source}: a comparison needs two systems or more; it has one{only}")
    if not any(e.posterior for e in chosen):
        settings = {
            "rates": model.name,
            "gamma": float(gamma),
            "level": float(level),
            "adjust": adjustment.name,
        }
        return _by_estimator(counts, chosen, None, model, adjustment, settings, reading, rules)
    options = {"rates": model, "gamma": gamma, "level": level, "adjust": adjustment}
    if method == "nuts":
        from binmetric_sweep.sweep.compare.sampled import compare_by_nuts

        result = compare_by_nuts(counts, **options, seed=seed)
    elif method == "quadrature":
        result = compare_systems(counts, **options, progress=progress)
    else:
        raise SweepError(f"--method: {method!r} is not allowed; allowed: quadrature, nuts")
    if not posterior_only:
        return _by_estimator(
            counts, chosen, result, model, adjustment, result.settings, reading, rules
        )
    result = replace(result, reading=reading, settings={**result.settings, **rules})
    if cost_metric is None:
        return result
    from binmetric_sweep.sweep.compare.next_ratings import next_ratings

    pairs = next_ratings(result, cost_metric=cost_metric, cost_human=cost_human, power=power)
    return replace(result, pairs=pairs)


def _by_estimator(
    counts, estimators, posterior, model, adjustment, settings, reading, rules
) -> Comparison:
    """The ``estimators`` on ``counts`` under the rate model ``model`` and the
    ``adjustment``: systems and pairs in long form, by estimator; ``posterior`` (the
    posterior's comparison) gives the posterior's rows where ``estimators`` holds it."""
    from binmetric_sweep.sweep.compare.by_estimator import estimates_table, z_test_pairs

    s = settings
    systems = estimates_table(
        counts, estimators, rates=model, level=s["level"], posterior=posterior
    )
    pairs = z_test_pairs(systems, gamma=s["gamma"], adjust=adjustment)
    warnings = []
    if posterior is not None:
        name = next(e.name for e in estimators if e.posterior)
        pairs = pd.concat([posterior.pairs.assign(estimator=name), pairs], ignore_index=True)
        pairs = pairs[["estimator", *(c for c in pairs.columns if c != "estimator")]]
        warnings = posterior.warnings
    one = estimators[0].name if len(estimators) == 1 else ALL
    settings = {**s, **rules, "estimator": one}
    return Comparison(systems, pairs, settings, warnings, None, reading)
