"""The columns of a sweep's two tables, ``fits`` and ``surface``: one value each.

Every column is one :class:`Column` in :data:`COLUMNS`: its name, dtype, the
table(s) it is in, what it is (an identifier, an axis, a count or a value),
what computes it, its meaning in words, its figure label and symbol, and the
flags the layers above ask (a sample size, an axis of a sweep file's grid, one
value per (γ, power), read off the estimator's interval, a spread over
replicates). Everything else is derived from it: each table's columns in order
(:func:`names`, :data:`FIT_COLUMNS`, :data:`SURFACE_COLUMNS`) and their Arrow
schema (:func:`schema`), the configurations table's columns
(:data:`CONFIG_COLUMNS`), the grid's axes (:data:`GRID_AXES`,
:data:`SIZE_AXES`, :data:`PROBABILITY_AXES`), the fits' counts
(:data:`COUNT_COLUMNS`), ``sweep show``'s axes and meanings
(:data:`SURFACE_AXES`, :data:`CATEGORY_COLUMNS`, :data:`IDENTIFIERS`,
:data:`MEANINGS`, :data:`INTERVAL_VALUES`, :data:`REPLICATE_VALUES`) and the
figures' labels and integer formatting (:data:`LABELS`, :data:`SYMBOLS`,
:data:`INTEGER_COLUMNS`).

A shard's tables are built through :func:`ordered`, which refuses a computed
column the registry does not list and a listed column that was not computed,
and checked with :func:`check_schema`: a new column is one more :class:`Column`
here, or the shard fails naming it; it is never silently dropped.

The registry's order is each table's column order (a table's columns are the
registry's, filtered): the Parquet files' schemas are these, byte for byte.
Nothing here imports a layer above, nor pyarrow until a schema is asked for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple, TypeVar

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CATEGORY_COLUMNS",
    "COLUMNS",
    "CONFIG_COLUMNS",
    "COUNT_COLUMNS",
    "Column",
    "ColumnError",
    "DTYPES",
    "FITS",
    "FIT_COLUMNS",
    "GRID_AXES",
    "IDENTIFIERS",
    "INTEGER_COLUMNS",
    "INTERVAL_VALUES",
    "LABELS",
    "MEANINGS",
    "MODELS",
    "MODEL_GROUPS",
    "ANY_MODEL",
    "PROBABILITY_AXES",
    "REPLICATE_VALUES",
    "ROLES",
    "SIZE_AXES",
    "SOURCES",
    "SURFACE",
    "SURFACE_AXES",
    "SURFACE_COLUMNS",
    "SYMBOLS",
    "TABLES",
    "check_schema",
    "columns_of",
    "names",
    "ordered",
    "registered",
    "schema",
]

FITS = "fits"
SURFACE = "surface"
#: The two tables of a sweep, each a Parquet file per shard (:mod:`sweep.storage.store`).
TABLES = (FITS, SURFACE)

#: The dtypes a column may have, each with its NumPy dtype (strings: Python objects).
DTYPES: dict[str, str] = {
    "int64": "int64",
    "int32": "int32",
    "float64": "float64",
    "bool": "bool",
    "string": "object",
    "int64 list": "object",
}

#: The rating models whose tables a column is in: ``""`` every one, else one of these
#: (:attr:`sweep.spec.rating_model.RatingModel.columns`) or a group of them
#: (:data:`MODEL_GROUPS`). Binary is MODEL.md's model; preference and scale its K-class,
#: J-judge generalisation (a scale also stands for explicit ``classes``); arena its
#: leaderboards of many systems from battles (MODEL.md, "Battles").
MODELS = ("binary", "preference", "scale", "arena")
#: Names for several models' columns: ``items``, every model that rates items for one
#: estimand (α or θ: its sizes, estimates and their summaries); ``categorical``, every
#: K-class model's; ``judged``, every model with J judges; ``positional``, every model whose
#: judges say A, tie or B with a family of positional confusions.
MODEL_GROUPS: dict[str, tuple[str, ...]] = {
    "items": ("binary", "preference", "scale"),
    "categorical": ("preference", "scale"),
    "judged": ("preference", "scale", "arena"),
    "positional": ("preference", "arena"),
}
ANY_MODEL = "any"

#: What a column is.
ROLES: dict[str, str] = {
    "identifier": "names a row or a file (a configuration, a replicate, a shard), not a quantity",
    "axis": "a setting the rows vary over, that a table or figure may lay out or fix",
    "count": "a count the lane observed (of the fits' counts, kernels.counts.Counts)",
    "value": "a number computed for the row",
}

#: What computes a column.
SOURCES: dict[str, str] = {
    "configuration": "the configurations table (sweep.spec.grid.expand_grid)",
    "sweep": "the sweep file's settings",
    "replicate": "the replicate's number",
    "estimator": "the estimator of the row",
    "counts": "the lane's counts (kernels.counts.Counts; categorical: CategoricalCounts)",
    "estimate": "the estimator's estimate (kernels.estimators.Estimate)",
    "sampler": "the posterior's sampler (kernels.summaries.FitResults, SamplerHealth)",
    "level": "the test level γ and power of the row (the sweep file's gamma, power)",
    "summary": "the estimator's summary over the replicates (kernels.summaries.EstimateSummary)",
    "ranking": "the posterior's ranks scored against the arena's true strengths "
    "(kernels.arena.scores.RankScores)",
    "rankings": "the rank scores' means over the configuration's replicates",
    "shard": "the shard's number",
}


class ColumnError(ValueError):
    """A computed table and the registry disagree: a column one has and the other has not,
    or another dtype. A bug to fix in :data:`COLUMNS` or in what computes the column."""


class Column(NamedTuple):
    """One column of the fits and/or surface tables.

    Attributes:
        name: the column's name in the tables and on the command line.
        dtype: one of :data:`DTYPES` (strings are Arrow ``string`` or, through
            pandas, ``large_string``).
        tables: the tables it is in (:data:`FITS`, :data:`SURFACE`).
        role: what it is, one of :data:`ROLES`.
        source: what computes it, one of :data:`SOURCES`.
        meaning: what it means, in words (``sweep show`` prints it above a table).
        label: a figure axis's label (matplotlib mathtext); None: the name.
        symbol: a short symbol for figure titles and legends; None: none (titles then
            use the label, legends the name).
        size: a sample size (figures: a logarithmic axis, ticks written 2.5k).
        grid: an axis a sweep file's grid names (``grid:``), in the order the
            grid's Cartesian product varies (the last fastest).
        per_level: one value per (γ, power) of a surface row (ε); otherwise the
            configuration's value, the same on each of its (γ, power) rows.
        interval: a value read off the estimator's interval or SE, which is
            misleading where the intervals cover α far less often than promised
            (``sweep show`` and ``sweep plot`` mark it there).
        replicated: a value that summarises the spread over replicates, which
            one replicate of expected counts cannot say.
        unsampled: a sampler column's value on an estimator that samples nothing
            (every estimator but the posterior, and the posterior's exact fits).
        model: the rating model whose tables have it (one of :data:`MODELS` or a group of
            :data:`MODEL_GROUPS`), or ``""`` for every model's.
    """

    name: str
    dtype: str
    tables: tuple[str, ...]
    role: str
    source: str
    meaning: str
    label: str | None = None
    symbol: str | None = None
    size: bool = False
    grid: bool = False
    per_level: bool = False
    interval: bool = False
    replicated: bool = False
    unsampled: float | int | bool | None = None
    model: str = ""

    @property
    def integer(self) -> bool:
        """Whether its values are whole numbers (shown without decimals)."""
        return self.dtype in ("int64", "int32")

    @property
    def numpy(self) -> str:
        """Its NumPy dtype (:data:`DTYPES`)."""
        return DTYPES[self.dtype]


_BOTH = (FITS, SURFACE)
_FITS = (FITS,)
_SURFACE = (SURFACE,)
_NAN = math.nan


def _summary(name: str, meaning: str, label: str | None = None, **flags) -> Column:
    """A surface value of :class:`kernels.summaries.EstimateSummary` (an item model's)."""
    return Column(
        name, "float64", _SURFACE, "value", "summary", meaning, label, model="items", **flags
    )


def _sampled(
    name: str, dtype: str, tables, meaning: str, unsampled, label=None, model: str = ""
) -> Column:
    """A value of the posterior's sampler, ``unsampled`` on every other estimator."""
    return Column(
        name, dtype, tables, "value", "sampler", meaning, label, unsampled=unsampled, model=model
    )


def _estimate(name: str, dtype: str, meaning: str) -> Column:
    """A fits value of the estimator's :class:`kernels.estimators.Estimate` (an item model's)."""
    return Column(name, dtype, _FITS, "value", "estimate", meaning, model="items")


def _count(name: str, meaning: str) -> Column:
    """A fits count of :class:`kernels.counts.Counts`."""
    return Column(name, "int64", _FITS, "count", "counts", meaning, model="binary")


def _class_counts(name: str, meaning: str) -> Column:
    """A fits count vector of :class:`kernels.categorical.counts.CategoricalCounts`."""
    return Column(name, "int64 list", _FITS, "count", "counts", meaning, model="categorical")


def _axis(name: str, dtype: str, source: str, meaning: str, label: str, **flags) -> Column:
    """A surface axis."""
    return Column(name, dtype, _SURFACE, "axis", source, meaning, label, **flags)


def _ranking(name: str, dtype: str, tables, meaning: str, label: str | None = None) -> Column:
    """An arena's rank score (fits, :class:`kernels.arena.scores.RankScores`) or its mean
    over replicates (surface)."""
    source = "ranking" if tables == _FITS else "rankings"
    return Column(name, dtype, tables, "value", source, meaning, label, model="arena")


_REGISTRY: tuple[Column, ...] = (
    # Both tables: the configuration a row is of.
    Column(
        "config_id",
        "int64",
        _BOTH,
        "identifier",
        "configuration",
        "hash of the configuration's values (63 bits), the same in fits and surface",
    ),
    # The surface: the configuration's values (the configurations table, in its order).
    _axis(
        "alpha",
        "float64",
        "configuration",
        "α, the share of adequate outputs: what the estimators estimate",
        r"$\alpha$ (share of positives)",
        symbol=r"$\alpha$",
        grid=True,
        model="binary",
    ),
    _axis(
        "rho",
        "float64",
        "configuration",
        "ρ, the metric's true-positive rate",
        r"$\rho$ (metric true-positive rate)",
        symbol=r"$\rho$",
        grid=True,
        model="binary",
    ),
    _axis(
        "eta",
        "float64",
        "configuration",
        "η, the metric's true-negative rate",
        r"$\eta$ (metric true-negative rate)",
        symbol=r"$\eta$",
        grid=True,
        model="binary",
    ),
    # The surface: a categorical configuration's values (preferences: sweep.spec.categorical;
    # scales and explicit classes: sweep.spec.scale).
    _axis(
        "theta",
        "float64",
        "configuration",
        "θ = Σ v_k π_k, what the estimators estimate (preferences: A's win rate, ties half; "
        "a scale: the mean score)",
        r"$\theta$ (estimand)",
        symbol=r"$\theta$",
        model="categorical",
    ),
    _axis(
        "win",
        "float64",
        "configuration",
        "share of items where A, the output shown first, is truly better",
        "share A better",
        symbol="win",
        grid=True,
        model="preference",
    ),
    _axis(
        "tie",
        "float64",
        "configuration",
        "share of items where A and B truly tie",
        "share of ties",
        symbol="tie",
        grid=True,
        model="preference",
    ),
    # The surface: an arena's values (leaderboards from battles: sweep.spec.arena).
    _axis(
        "systems",
        "int64",
        "configuration",
        "S, the systems of the arena, every ordered pair of them in battle",
        "systems",
        symbol="S",
        grid=True,
        model="arena",
    ),
    _axis(
        "spread",
        "float64",
        "configuration",
        "SD of the true strengths (log-λ units), each replicate's drawn from N(0, spread²) "
        "and centred",
        "spread of strengths",
        symbol="spread",
        grid=True,
        model="arena",
    ),
    _axis(
        "nu",
        "float64",
        "configuration",
        "ν, Davidson's tie parameter: two equal systems tie with probability ν/(2 + ν)",
        r"$\nu$ (ties)",
        symbol=r"$\nu$",
        grid=True,
        model="arena",
    ),
    _axis(
        "battles",
        "int64",
        "configuration",
        "battles of each ordered pair (system i shown first against j)",
        "battles per ordered pair",
        symbol="battles",
        grid=True,
        size=True,
        model="arena",
    ),
    _axis(
        "human_share",
        "float64",
        "configuration",
        "the chance that a battle carries a human verdict (the judges give one on every battle)",
        "share with a human verdict",
        symbol="human share",
        grid=True,
        model="arena",
    ),
    _axis(
        "accuracy",
        "float64",
        "configuration",
        "each judge's chance of knowing the true class (else it guesses)",
        "judge accuracy",
        symbol="accuracy",
        grid=True,
        model="positional",
    ),
    _axis(
        "tie_rate",
        "float64",
        "configuration",
        "share of a judge's guesses that say tie",
        "judge's tie rate when guessing",
        symbol="tie rate",
        grid=True,
        model="positional",
    ),
    _axis(
        "position_bias",
        "float64",
        "configuration",
        "b in [-1, 1]: a guess that is not a tie says A with probability (1 + b)/2",
        "judge's position bias",
        symbol="position bias",
        grid=True,
        model="positional",
    ),
    _axis(
        "shares",
        "string",
        "configuration",
        "the class shares π: the name of one of the sweep file's share vectors (shares:)",
        "class shares",
        symbol="shares",
        grid=True,
        model="scale",
    ),
    _axis(
        "off_by_one",
        "float64",
        "configuration",
        "each judge's chance of a verdict one class off the truth (null with a named confusion)",
        "judge off by one",
        symbol="off by one",
        grid=True,
        model="scale",
    ),
    _axis(
        "off_by_more",
        "float64",
        "configuration",
        "each judge's chance of a verdict two or more classes off the truth (null with a "
        "named confusion)",
        "judge off by more",
        symbol="off by more",
        grid=True,
        model="scale",
    ),
    _axis(
        "confusion",
        "string",
        "configuration",
        "each judge's confusion: the name of one of the sweep file's matrices "
        "(confusions:; null with off_by_one, off_by_more)",
        "judge confusion",
        symbol="confusion",
        grid=True,
        model="scale",
    ),
    _axis(
        "judges",
        "int64",
        "configuration",
        "J, judges giving a verdict on every paired and judge-only item (an arena: every battle)",
        "judges",
        symbol="J",
        grid=True,
        model="judged",
    ),
    _axis(
        "copy_rate",
        "float64",
        "configuration",
        "chance that each later judge repeats the first judge's verdict (0: errors "
        "independent given the truth)",
        "judges' copy rate",
        symbol="copy_rate",
        grid=True,
        model="judged",
    ),
    _axis(
        "judge_model",
        "string",
        "configuration",
        "the posterior's model of the judges: joint (their joint verdict, any correlation) "
        "or independent given the truth (joint for one judge or a known confusion)",
        "judge model",
        symbol="judge model",
        grid=True,
        model="judged",
    ),
    _axis(
        "n_phi",
        "int64",
        "configuration",
        "N_Φ, human-rated outputs",
        r"$N_\Phi$ (human ratings)",
        symbol=r"$N_\Phi$",
        grid=True,
        size=True,
        model="items",
    ),
    _axis(
        "n_rho_eta",
        "int64",
        "configuration",
        "N_ρη, paired items rated by human and metric (= n_phi for a shared paired set; "
        "null where ρ, η are known)",
        r"$N_{\rho\eta}$ (paired ratings)",
        symbol=r"$N_{\rho\eta}$",
        grid=True,
        size=True,
        model="items",
    ),
    _axis(
        "rho_eta_known",
        "bool",
        "configuration",
        "whether ρ and η are known numbers (no paired set)",
        r"$\rho,\eta$ known",
        symbol=r"$\rho,\eta$ known",
        model="binary",
    ),
    _axis(
        "confusion_known",
        "bool",
        "configuration",
        "whether the judges' confusion is known (no paired set)",
        "confusion known",
        symbol="C known",
        model="categorical",
    ),
    _axis(
        "shared_paired",
        "bool",
        "configuration",
        "whether the paired items are the human-rated outputs (N_ρη = N_Φ)",
        "shared paired set",
        symbol="shared paired set",
        model="items",
    ),
    _axis(
        "psi",
        "float64",
        "configuration",
        "ψ, the share of adequate items in a separate paired set (= α unless a separate set)",
        r"$\psi$",
        symbol=r"$\psi$",
        grid=True,
        model="binary",
    ),
    _axis(
        "n_m",
        "int64",
        "configuration",
        "N_M, metric-only rated outputs",
        r"$N_M$ (metric ratings)",
        symbol=r"$N_M$",
        grid=True,
        size=True,
        model="items",
    ),
    # The surface: the sweep's settings.
    _axis(
        "counts", "string", "sweep", "expected or sampled counts, as in the sweep file", "counts"
    ),
    _axis(
        "method",
        "string",
        "sweep",
        "the posterior's fitting method, as in the sweep file (null without bayes)",
        "method",
    ),
    _axis(
        "ratings",
        "string",
        "sweep",
        "what is rated, as in the sweep file (preference, scale, classes or arena)",
        "ratings",
        model="judged",
    ),
    Column(
        "replicates",
        "int32",
        _SURFACE,
        "value",
        "sweep",
        "replicates per configuration",
        "replicates",
    ),
    # The fits: the replicate a row is of.
    Column("replicate", "int32", _FITS, "identifier", "replicate", "the replicate, 0 … R − 1"),
    # Both tables: the estimator.
    Column(
        "estimator", "string", _BOTH, "axis", "estimator", "the estimator of the row", "estimator"
    ),
    # The fits: the lane's counts.
    _count("n_pos", "human ratings saying adequate, n₊, of N_Φ"),
    _count("n_tp", "paired items rated 1 by human and metric, of n_pos_paired"),
    _count("n_pos_paired", "paired items the human calls adequate, P"),
    _count("n_tn", "paired items rated 0 by human and metric, of n_neg_paired"),
    _count("n_neg_paired", "paired items the human calls inadequate, N_ρη − P"),
    _count("m_pos", "metric-only ratings saying adequate, m₊, of N_M"),
    _class_counts("human", "h: human-rated items per class, of N_Φ"),
    _class_counts("paired", "T: paired items by (human class, judges' joint verdict), row-major"),
    _class_counts("judged", "m: judge-only items per joint verdict, of N_M"),
    Column(
        "human_verdicts",
        "int64",
        _FITS,
        "count",
        "counts",
        "battles with a human verdict, of battles × S(S − 1)",
        model="arena",
    ),
    # The fits: the estimate (null where the estimator does not apply).
    _estimate("estimate", "float64", "the estimate of α (bayes: the posterior mean)"),
    _estimate("se", "float64", "its standard error (bayes: the posterior SD)"),
    _estimate("ci_low", "float64", "the lower end of its interval at the sweep's interval level"),
    _estimate("ci_high", "float64", "the upper end of its interval"),
    _estimate("applicable", "bool", "whether the estimator applies to the lane's counts"),
    _estimate("reason", "string", "why the estimator does not apply (null where it does)"),
    # The fits: the posterior's sampler diagnostics.
    _sampled("rhat", "float64", _FITS, "split R-hat (NaN if exact)", _NAN),
    _sampled("ess", "float64", _FITS, "bulk ESS (NaN if exact)", _NAN),
    _sampled("sd_mcse", "float64", _FITS, "Monte Carlo SE of se (0 if exact)", 0.0, model="items"),
    # The surface: the row's test level and power.
    _axis(
        "gamma",
        "float64",
        "level",
        "γ, the level of the two-sided test ε is for",
        r"$\gamma$",
        symbol=r"$\gamma$",
        model="items",
    ),
    _axis(
        "power", "float64", "level", "the power ε is for", "power", symbol="power", model="items"
    ),
    # The surface: the estimator's summaries of the configuration's replicates.
    _summary(
        "eps",
        "ε, the smallest difference between two systems that a two-sided test at level γ "
        "calls significant with probability `power` (power 0.5: the published ε; `sweep plan` "
        "plans for power 0.8 by default, which at γ = 0.05 needs about twice the ratings)",
        r"$\varepsilon_\gamma$",
        symbol=r"$\varepsilon_\gamma$",
        per_level=True,
        interval=True,
    ),
    _summary(
        "se_mean",
        "mean SE of α over replicates (bayes: mean posterior SD)",
        "mean SE (posterior SD)",
        interval=True,
    ),
    _summary("se_sd", "SD of the SE over replicates", "SD of the SE", replicated=True),
    _summary(
        "se_ratio",
        "mean SE over the SD of the estimates (below 1: over-confident)",
        "mean SE / SD of the estimates",
        replicated=True,
    ),
    _summary(
        "bias_mean", "mean of estimate − true α over replicates", r"mean bias of $\hat\alpha$"
    ),
    _summary(
        "bias_sd",
        "SD of estimate − true α over replicates",
        r"SD of the bias of $\hat\alpha$",
        replicated=True,
    ),
    _summary(
        "bias_mcse",
        "Monte Carlo SE of the mean bias",
        "Monte Carlo s.e. of the mean bias",
        replicated=True,
    ),
    _summary("rmse", "root mean square of estimate − true α", r"RMSE of $\hat\alpha$"),
    _summary("width_mean", "mean interval width", "mean interval width", interval=True),
    _summary(
        "coverage",
        "share of replicates whose interval holds the true α",
        "coverage",
        interval=True,
        replicated=True,
    ),
    _summary(
        "coverage_mcse",
        "Monte Carlo SE of coverage",
        "Monte Carlo s.e. of coverage",
        replicated=True,
    ),
    _summary(
        "coverage_low",
        "lower end of coverage's 95 % Wilson interval",
        "coverage, lower end of its Wilson interval",
        replicated=True,
    ),
    _summary(
        "coverage_high",
        "upper end of coverage's 95 % Wilson interval",
        "coverage, upper end of its Wilson interval",
        replicated=True,
    ),
    # The surface: the posterior's sampler health over the configuration's replicates.
    _sampled(
        "rhat_max",
        "float64",
        _SURFACE,
        "worst split R-hat over replicates",
        _NAN,
        r"largest $\hat R$",
    ),
    _sampled(
        "ess_min", "float64", _SURFACE, "smallest bulk ESS over replicates", _NAN, "smallest ESS"
    ),
    # Both tables: divergences (a fit's; a surface row's replicates' sum).
    _sampled(
        "divergences",
        "int64",
        _BOTH,
        "divergent transitions after warm-up, of all the row's replicates",
        0,
        "divergent transitions",
    ),
    # The fits: more of the sampler's diagnostics, and whether the row is counted.
    _sampled(
        "tree_depth", "float64", _FITS, "mean NUTS tree depth (NaN if exact)", _NAN, model="items"
    ),
    _sampled(
        "steps",
        "int64",
        _FITS,
        "leapfrog steps after warm-up, all chains (0 if exact)",
        0,
        model="items",
    ),
    _sampled(
        "exact",
        "bool",
        _FITS,
        "not sampled: quadrature, the Beta posterior where N_M = 0, or a closed form",
        True,
        model="items",
    ),
    _estimate(
        "finite",
        "bool",
        "the estimator applies and its estimate, SE and interval are finite "
        "(else the row counts in nonfinite or not_applicable)",
    ),
    # The surface: replicates left out of the summaries, and the shard.
    Column(
        "nonfinite",
        "int64",
        _SURFACE,
        "value",
        "summary",
        "replicates whose numbers are not finite",
        "non-finite fits",
        model="items",
    ),
    Column(
        "not_applicable",
        "int64",
        _SURFACE,
        "value",
        "summary",
        "replicates where the estimator does not apply",
        "replicates not applicable",
        model="items",
    ),
    # The fits: an arena's ranks scored against its true strengths (kernels.arena.scores).
    _ranking(
        "rank_held",
        "float64",
        _FITS,
        "share of the systems whose central rank interval at the sweep's interval level (ppr: "
        "rank set) holds the true rank",
    ),
    _ranking(
        "all_ranks_held",
        "bool",
        _FITS,
        "whether the simultaneous rank sets at the interval level hold every system's true rank",
    ),
    _ranking("rank_width", "float64", _FITS, "mean places in a central rank interval"),
    _ranking("rank_width_max", "float64", _FITS, "places in the widest central rank interval"),
    _ranking("rank_set_width", "float64", _FITS, "mean places in a simultaneous rank set"),
    _ranking(
        "leader_first",
        "bool",
        _FITS,
        "whether the system of highest posterior mean strength (ppr: estimated win rate) is "
        "the true leader",
    ),
    _ranking(
        "p_leader",
        "float64",
        _FITS,
        "the posterior probability that the true leader ranks first (ppr: NaN)",
    ),
    # The surface: those scores over an arena configuration's replicates.
    _ranking(
        "rank_coverage",
        "float64",
        _SURFACE,
        "share of systems whose central rank interval (ppr: rank set) holds the true rank, "
        "over replicates (nominal: the interval level; ppr's sets: at least it)",
        "rank coverage",
    ),
    _ranking(
        "rank_coverage_mcse",
        "float64",
        _SURFACE,
        "Monte Carlo SE of rank_coverage (the SD of the replicates' shares over √R)",
        "Monte Carlo s.e. of rank coverage",
    ),
    _ranking(
        "set_coverage",
        "float64",
        _SURFACE,
        "share of replicates whose simultaneous rank sets hold every system's true rank",
        "simultaneous coverage",
    ),
    _ranking(
        "rank_width_mean",
        "float64",
        _SURFACE,
        "mean places in a central rank interval (1: every rank pinned)",
        "mean rank-interval width",
    ),
    _ranking(
        "rank_width_max_mean",
        "float64",
        _SURFACE,
        "mean over replicates of the places in the widest central rank interval",
        "mean widest rank interval",
    ),
    _ranking(
        "rank_set_width_mean",
        "float64",
        _SURFACE,
        "mean places in a simultaneous rank set",
        "mean rank-set width",
    ),
    _ranking(
        "leader_share",
        "float64",
        _SURFACE,
        "share of replicates whose highest posterior mean strength (ppr: estimated win rate) "
        "is the true leader's",
        "true leader ranked first",
    ),
    _ranking(
        "p_leader_mean",
        "float64",
        _SURFACE,
        "mean posterior probability that the true leader ranks first",
        "P(true leader first)",
    ),
    Column("shard", "int32", _SURFACE, "identifier", "shard", "the shard's number"),
)


def _checked(columns: tuple[Column, ...]) -> dict[str, Column]:
    """The registry by name, after checking each column's fields say something allowed."""
    by_name: dict[str, Column] = {}
    for column in columns:
        where = f"column {column.name!r}"
        if column.name in by_name:
            raise ValueError(f"{where} is registered twice")
        if column.dtype not in DTYPES:
            raise ValueError(f"{where}: dtype {column.dtype!r} is not one of {list(DTYPES)}")
        if not column.tables or not set(column.tables) <= set(TABLES):
            raise ValueError(f"{where}: tables {column.tables!r} are not some of {TABLES}")
        if column.role not in ROLES or column.source not in SOURCES:
            raise ValueError(f"{where}: role or source {column.role!r}, {column.source!r}")
        if (column.size or column.grid) and not (
            column.role == "axis" and column.source == "configuration"
        ):
            raise ValueError(f"{where}: only a configuration's axis is a size or a grid axis")
        if (column.per_level or column.interval or column.replicated) and not (
            column.tables == _SURFACE and column.role == "value"
        ):
            raise ValueError(f"{where}: only a surface value is per level, interval or replicated")
        if column.model and column.model not in (*MODELS, *MODEL_GROUPS):
            raise ValueError(f"{where}: model {column.model!r} is not one of {MODELS}")
        if (column.unsampled is None) != (column.source != "sampler"):
            raise ValueError(f"{where}: a sampler's column, and only one, has an unsampled value")
        by_name[column.name] = column
    return by_name


#: Every column of the fits and surface tables, by name, in the tables' order.
COLUMNS: Mapping[str, Column] = _checked(_REGISTRY)


def columns_of(table: str, model: str = "binary") -> tuple[Column, ...]:
    """The columns of ``table`` (:data:`FITS` or :data:`SURFACE`) of a ``model``'s sweep
    (one of :data:`MODELS`, or :data:`ANY_MODEL` for every model's), in its order."""
    if table not in TABLES:
        raise ValueError(f"table {table!r} is not one of {TABLES}")
    if model != ANY_MODEL and model not in MODELS:
        raise ValueError(f"model {model!r} is not one of {MODELS} or {ANY_MODEL!r}")
    return tuple(
        c
        for c in COLUMNS.values()
        if table in c.tables and (model == ANY_MODEL or _in_model(c, model))
    )


def _in_model(column: Column, model: str) -> bool:
    """Whether ``model``'s tables have ``column``."""
    return column.model in ("", model) or model in MODEL_GROUPS.get(column.model, ())


def names(table: str, model: str = "binary") -> tuple[str, ...]:
    """The names of ``table``'s columns of a ``model``'s sweep, in its order."""
    return tuple(c.name for c in columns_of(table, model))


def _where(**fields) -> tuple[str, ...]:
    """The names of the registry's columns whose fields have these values, in its order."""
    return tuple(
        c.name
        for c in COLUMNS.values()
        if all(getattr(c, key) == value for key, value in fields.items())
    )


#: The fits' columns: one row per (configuration, replicate, estimator).
FIT_COLUMNS = names(FITS)
#: The surface's columns: one row per (configuration, estimator, γ, power).
SURFACE_COLUMNS = names(SURFACE)
#: The configurations table's columns (:func:`sweep.spec.grid.expand_grid`), in order.
CONFIG_COLUMNS = tuple(c.name for c in columns_of(SURFACE) if c.source == "configuration")
#: The axes a binary sweep file's grid names, in the order their Cartesian product varies.
GRID_AXES = tuple(c.name for c in columns_of(SURFACE) if c.grid)
#: The grid's sample sizes (every model's).
SIZE_AXES = _where(size=True)
#: The binary grid's probabilities.
PROBABILITY_AXES = tuple(a for a in GRID_AXES if not COLUMNS[a].size)
#: The fits' counts, each lane's (:class:`kernels.counts.Counts`).
COUNT_COLUMNS = tuple(c.name for c in columns_of(FITS) if c.role == "count")
#: The surface's axes that are numbers or flags, every model's: what identifies a
#: configuration and its (γ, power) row.
SURFACE_AXES = tuple(
    c.name for c in columns_of(SURFACE, ANY_MODEL) if c.role == "axis" and c.dtype != "string"
)
#: The surface's axes that are words, every model's: the estimator and the sweep's settings.
CATEGORY_COLUMNS = tuple(
    c.name for c in columns_of(SURFACE, ANY_MODEL) if c.role == "axis" and c.dtype == "string"
)
#: The surface's identifiers: columns that name a row or a file, not quantities to tabulate.
IDENTIFIERS = frozenset(c.name for c in columns_of(SURFACE, ANY_MODEL) if c.role == "identifier")
#: Columns of whole numbers, shown without decimals.
INTEGER_COLUMNS = frozenset(c.name for c in COLUMNS.values() if c.integer)
#: Values read off each estimator's interval or SE (:attr:`Column.interval`).
INTERVAL_VALUES = frozenset(_where(interval=True))
#: Values that summarise the spread over replicates (:attr:`Column.replicated`).
REPLICATE_VALUES = _where(replicated=True)
#: What each surface column means, in words (``sweep show`` prints a value's above its table).
MEANINGS: Mapping[str, str] = {c.name: c.meaning for c in columns_of(SURFACE, ANY_MODEL)}
#: Figure axis labels (matplotlib mathtext); a column without one shows its name.
LABELS: Mapping[str, str] = {c.name: c.label for c in COLUMNS.values() if c.label is not None}
#: Short symbols for figure titles and legends (matplotlib mathtext).
SYMBOLS: Mapping[str, str] = {c.name: c.symbol for c in COLUMNS.values() if c.symbol is not None}

V = TypeVar("V")


def registered(table: str, name: str, source: str | None = None) -> Column:
    """The registry's column ``name`` of ``table`` (and computed by ``source``, if given).

    Raises:
        ColumnError: ``table`` has no such column: a computed value not registered.
    """
    column = COLUMNS.get(name)
    if column is None or table not in column.tables:
        raise ColumnError(
            f"{table}: computed column {name!r} is not in the column registry's {table} table "
            "(sweep/storage/columns.py): register it with its dtype, meaning and label"
        )
    if source is not None and column.source != source:
        raise ColumnError(
            f"{table}: column {name!r} is computed by {source} but registered as {column.source}'s"
        )
    return column


def ordered(table: str, computed: Mapping[str, V], model: str = "binary") -> dict[str, V]:
    """``computed`` (column name → values) in ``table``'s column order (of a ``model``'s
    sweep).

    Raises:
        ColumnError: a computed column the registry does not list for ``table``
            (it would be dropped), or a registered column not computed; naming each.
    """
    expected = names(table, model)
    extra = [name for name in computed if name not in expected]
    missing = [name for name in expected if name not in computed]
    if extra:
        raise ColumnError(
            f"{table}: computed column(s) {', '.join(map(repr, extra))} not in the column "
            f"registry's {table} table (sweep/storage/columns.py): register each with its dtype, "
            "meaning and label"
        )
    if missing:
        raise ColumnError(
            f"{table}: registered column(s) {', '.join(map(repr, missing))} not computed"
        )
    return {name: computed[name] for name in expected}


def _arrow(dtype: str) -> pa.DataType:
    import pyarrow as pa

    return {
        "int64": pa.int64(),
        "int32": pa.int32(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "string": pa.string(),
        "int64 list": pa.list_(pa.int64()),
    }[dtype]


def schema(table: str, model: str = "binary") -> pa.Schema:
    """``table``'s Arrow schema: its columns in order, each of its dtype (strings ``string``)."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, _arrow(c.dtype)) for c in columns_of(table, model)])


def check_schema(table: str, computed: pa.Schema, model: str = "binary") -> None:
    """Raise :class:`ColumnError` unless ``computed`` has ``table``'s columns (of a
    ``model``'s sweep), in order, of their dtypes (a string column may be Arrow's
    ``string`` or ``large_string``, which pandas makes)."""
    import pyarrow as pa

    got = list(computed.names)
    ordered(table, dict.fromkeys(got), model)
    if tuple(got) != names(table, model):
        raise ColumnError(f"{table}: columns in the order {got}, not the registry's")
    for field, column in zip(computed, columns_of(table, model), strict=True):
        want = _arrow(column.dtype)
        same = field.type == want or (want == pa.string() and field.type == pa.large_string())
        if not same:
            raise ColumnError(
                f"{table}: column {column.name!r} is {field.type}, registered as {column.dtype}"
            )
