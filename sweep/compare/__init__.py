"""``sweep compare``: real ratings of several systems → who is better, how sure, what next.

The steps, each callable alone: :func:`~.ratings.read_ratings` (a ratings or
counts file → one row of counts per system), :func:`~.analysis.compare_systems`
(counts → posteriors and pair probabilities), :func:`~.next_ratings.next_ratings`
(pairs not significant → the cheapest ratings to add), :mod:`.report` (text,
JSON, Parquet) and :mod:`.figure`. :func:`compare` chains the first three.

A battles file (pairwise verdicts among many systems: :mod:`.battles`) is compared by
:func:`~.arena.compare_battles` (a leaderboard by method, :mod:`.arena`; text, JSON and
Parquet by :mod:`.arena_report`), which :func:`compare` and ``sweep compare`` call for a
file or DataFrame with columns ``model_a`` and ``model_b``.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pandas as pd

from binmetric_sweep.sweep.compare.analysis import Comparison, compare_systems
from binmetric_sweep.sweep.compare.arena import ArenaComparison, ArenaOptions, compare_battles
from binmetric_sweep.sweep.compare.battles import file_columns, is_battles
from binmetric_sweep.sweep.compare.categorical import compare_classes
from binmetric_sweep.sweep.compare.options import CompareOptions, Method, options_of
from binmetric_sweep.sweep.compare.ratings import ratings_from_frame, read_ratings
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.compile_cache import DEFAULT, use_compilation_cache

__all__ = [
    "ArenaComparison",
    "ArenaOptions",
    "CompareOptions",
    "Comparison",
    "compare",
    "compare_battles",
]

#: The keyword fields :func:`compare` takes in place of its options
#: (:meth:`CompareOptions.of`).
FIELDS = (
    "rates",
    "gamma",
    "level",
    "adjust",
    "method",
    "seed",
    "cost_metric",
    "cost_human",
    "power",
    "annotators",
    "judges",
    "progress",
    "estimator",
    "classes",
    "judge_columns",
    "judge_model",
    "nuts",
)


def compare(
    ratings: str | os.PathLike | pd.DataFrame,
    options: CompareOptions | ArenaOptions | None = None,
    **fields,
) -> Comparison | ArenaComparison:
    """Compare the systems of a ratings file or DataFrame (one row per rated output, or per
    system with counts), as ``sweep compare``.

    A battles file or DataFrame (columns ``model_a`` and ``model_b``) is compared by
    :func:`~.arena.compare_battles`: ``options`` is then an :class:`~.arena.ArenaOptions`
    or its keywords, and the result an :class:`~.arena.ArenaComparison` (a leaderboard by
    method).

    ::

        result = sweep.compare("examples/ratings.csv", rates="shared")
        options = CompareOptions.of(rates="shared", adjust="holm")
        result = sweep.compare("examples/ratings.csv", options)
        result.systems, result.pairs, result.warnings

    ``options`` is a :class:`~.options.CompareOptions`, or in its place its keyword
    fields (:meth:`CompareOptions.of`, the same names and defaults):
    ``rates`` is a rate model (:data:`~.analysis.RATE_MODELS`: "per-system",
    "shared") and ``adjust`` an adjustment (:data:`~.analysis.ADJUSTMENTS`: "none",
    "holm", "bh"), each a value or its name; the settings name them; ``gamma``
    (0.05) and ``level`` (0.95) in (0, 1).
    ``method`` "nuts" computes the same comparison from NUTS draws (the check,
    :func:`~.sampled.compare_by_nuts`, with ``seed``). With ``cost_metric``, the
    pairs not significant also get the cheapest ratings that would make them so
    (:func:`~.next_ratings.next_ratings`, with ``cost_human`` 1 and ``power`` 0.8).
    ``annotators`` and ``judges`` say how
    several human or metric labels of one item are combined ("refuse" or
    "majority": label policies, :mod:`~.ratings`); the result's ``reading`` says
    what was read.
    A DataFrame is read as a file of its columns would be, layout and messages
    alike (:func:`~.ratings.ratings_from_frame`). ``progress`` shows the quadrature's
    stages on standard error.

    ``estimator`` (a registered estimator or its name, or "all") other than the
    posterior ("bayes") gives, in place of the posterior's tables, one row per
    (estimator, system) and one per (estimator, pair) with its z-test
    (:mod:`~.by_estimator`); "all" includes the posterior's rows. A pair an
    estimator cannot test has ``significant`` NA (a nullable boolean column),
    not False.

    ``classes`` (:class:`~.classes.Classes`, or ``--classes``' text: ``worse,tie,better``,
    ``1,2,3,4,5``, ``B=0,tie=0.5,A=1``) reads K-class labels instead of binary ones, with
    ``judge_columns`` and ``judge_model`` (:mod:`~.categorical`; ``nuts`` the sampler's
    settings, the sweeps' defaults if None): θ = vᵀπ for α, from NUTS draws.

    Raises:
        SweepError: bad input (one line naming the file, row and column, or the option).
        TypeError: both ``options`` and fields, or a field not one of :data:`FIELDS`.
    """
    if _battles(ratings):
        if options is not None and not isinstance(options, ArenaOptions):
            raise TypeError(
                "compare(): a battles file (columns model_a, model_b) takes ArenaOptions or "
                "its keywords, not CompareOptions"
            )
        return compare_battles(ratings, options, **fields)
    # The options are parsed once, here, before the file is read: the value goes on down.
    o = options_of(options, fields, "compare", FIELDS)
    # Compiled programs kept for the next run, as ``sweep run`` keeps them.
    use_compilation_cache(DEFAULT, strict=False)
    if o.classes is not None:
        return compare_classes(ratings, o, o.nuts)
    if isinstance(ratings, pd.DataFrame):
        counts, reading = ratings_from_frame(ratings, **o.label_policies)
    else:
        counts, reading = read_ratings(ratings, **o.label_policies)
    if len(counts) < 2:
        source = "ratings" if isinstance(ratings, pd.DataFrame) else os.fspath(ratings)
        only = f" ({counts['system'].iloc[0]!r})" if len(counts) else ""
        raise SweepError(f"{source}: a comparison needs two systems or more; it has one{only}")
    if not o.has_posterior:
        return _by_estimator(counts, None, o, reading)
    if o.method is Method.NUTS:
        from binmetric_sweep.sweep.compare.sampled import compare_by_nuts

        result = compare_by_nuts(counts, o)
    else:
        result = compare_systems(counts, o)
    if not o.posterior_only:
        return _by_estimator(counts, result, o, reading)
    settings = o.settings(posterior=True, sampler=result.settings, read=True)
    result = replace(result, reading=reading, settings=settings)
    if o.next_ratings is None:
        return result
    from binmetric_sweep.sweep.compare.next_ratings import next_ratings

    return replace(result, pairs=next_ratings(result, o.next_ratings))


def _by_estimator(
    counts: pd.DataFrame, posterior: Comparison | None, options: CompareOptions, reading
) -> Comparison:
    """The ``options``' estimators on ``counts`` under its rate model and adjustment:
    systems and pairs in long form, by estimator; ``posterior`` (the posterior's
    comparison) gives the posterior's rows where the estimators hold it."""
    from binmetric_sweep.sweep.compare.by_estimator import estimates_table, z_test_pairs

    o, estimators = options, options.estimators
    systems = estimates_table(counts, estimators, rates=o.rates, level=o.level, posterior=posterior)
    pairs = z_test_pairs(systems, gamma=o.gamma, adjust=o.adjust)
    warnings = []
    if posterior is not None:
        name = next(e.name for e in estimators if e.posterior)
        pairs = pd.concat([posterior.pairs.assign(estimator=name), pairs], ignore_index=True)
        pairs = pairs[["estimator", *(c for c in pairs.columns if c != "estimator")]]
        warnings = posterior.warnings
    settings = o.settings(
        posterior=posterior is not None,
        sampler=None if posterior is None else posterior.settings,
        read=True,
    )
    return Comparison(systems, pairs, settings, warnings, None, reading)


def _battles(source: str | os.PathLike | pd.DataFrame) -> bool:
    """Whether ``source`` is a battles table; a file that cannot be read is not (its
    reader then says why)."""
    if isinstance(source, pd.DataFrame):
        return is_battles(source.columns)
    columns = file_columns(source)
    return columns is not None and is_battles(columns)
