"""``sweep compare`` on a battles file: a leaderboard from pairwise verdicts, by method.

::

    options = ArenaOptions.of(estimator="all", level=0.95)
    result = compare_battles("examples/arena_battles.csv", options)
    result.leaderboard, result.pairs, result.judges, result.health, result.warnings

A battles file (:mod:`~.battles`) holds battles of two systems each, a human verdict on
some and each judge's on all or most. The methods (:data:`ARENA_METHODS`, ``--estimator``)
all read the same battles and, the posterior ones, the same key (``jax.random.key(seed)``):

- ``bayes``: the arena's posterior (:mod:`kernels.arena.posterior`, MODEL.md "Battles: many
  systems from pairwise comparisons") with every judge, their confusions learnt from the
  battles that also have a human verdict;
- ``human_only``: the same model on the battles with a human verdict, no judge;
- ``judge_only``: the same model with one judge's verdicts taken as the truth, no human
  verdict: one fit per judge (what a judge-only leaderboard would say);
- ``ppr``: prediction-powered ranking (:mod:`kernels.arena.ppr`, Chatzi et al. 2024) per
  judge: PPI win rates (a tie counts as no win), their covariance and the χ² rank sets. On
  a file where every battle has a human verdict a judge adds nothing, and ppr is one fit,
  the human verdicts' win rates (λ = 0).

``--model pairs`` (:data:`PAIRS`) replaces Bradley–Terry's strengths by each pair's own π
for every posterior method (a check of Bradley–Terry); a "strength" is then a system's
centred log-odds of its win rate against the field.

Every refusal (a system not connected to the others through the battles a method reads, a
method that cannot run on these battles) is raised before any sampling, so that bad input
costs nothing and writes nothing.

The tables (columns in :data:`LEADERBOARD_COLUMNS`, :data:`PAIR_COLUMNS`,
:data:`JUDGE_COLUMNS`, :data:`HEALTH_COLUMNS`):

- ``leaderboard``: one row per (method, judge, system), each method's systems ranked;
  posterior methods fill the strength, win-rate and rank columns, ppr the ``ppr_`` ones;
  ``rank_set_low``/``high`` (simultaneous at ``level``: all systems' sets hold at once) are
  every method's.
- ``pairs``: P(i truly better than j) for every ordered pair of a posterior method's fit.
- ``judges``: bayes's judges: each confusion cell P(says verdict | truth) with its central
  interval, and the position-bias measures (:data:`BIAS_MEASURES`).
- ``health``: each posterior fit's sampler health.
- ``next``: what to judge next (:mod:`kernels.arena.next_verdicts`), from bayes's draws:
  each pair's expected reduction of the summed central rank-interval width from
  :data:`~kernels.arena.next_verdicts.DEFAULT_K` more human verdicts on it, best first.
- ``heterogeneity``: where bayes reads judges, each judge's G-test of one confusion on each
  system's battles against the rest's (:mod:`kernels.arena.heterogeneity`); a warning
  names each (judge, system) that differs at Holm-adjusted :data:`HETEROGENEITY_ALPHA`.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Integral
from typing import NamedTuple

import jax
import numpy as np
import pandas as pd

from binmetric_sweep.kernels.arena.cells import (
    A_BETTER,
    B_BETTER,
    NONE,
    TIE,
    BattleCells,
    with_human_verdict,
)
from binmetric_sweep.kernels.arena.heterogeneity import judge_heterogeneity
from binmetric_sweep.kernels.arena.logdensity import arena_data, arena_shape
from binmetric_sweep.kernels.arena.next_verdicts import next_verdicts
from binmetric_sweep.kernels.arena.posterior import (
    DEFAULT_SETTINGS,
    ArenaDraws,
    SamplerSettings,
    rank_draws,
    rank_intervals,
    sample_arena,
    simultaneous_rank_sets,
)
from binmetric_sweep.kernels.arena.ppr import PPRWinRates, ppr_win_rates, rank_sets
from binmetric_sweep.sweep.compare.battles import (
    DEFAULT_VERDICTS,
    Battles,
    VerdictWords,
    battles_from_frame,
    read_battles,
    require_connected,
)
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.spec.categorical import INDEPENDENT, JudgeModel

__all__ = [
    "ALL",
    "ARENA_METHODS",
    "ARENA_MODELS",
    "BIAS_MEASURES",
    "HEALTH_COLUMNS",
    "HETEROGENEITY_ALPHA",
    "HETEROGENEITY_COLUMNS",
    "JUDGE_COLUMNS",
    "LEADERBOARD_COLUMNS",
    "NEXT_CANDIDATES",
    "NEXT_COLUMNS",
    "PAIR_COLUMNS",
    "RHAT_LIMIT",
    "ArenaComparison",
    "ArenaMethod",
    "ArenaModel",
    "ArenaOptions",
    "ArenaTask",
    "arena_comparison",
    "compare_battles",
    "fit_title",
]

#: Sampler health above which a fit is named in a warning: R-hat, and any divergence.
RHAT_LIMIT = 1.01
#: ``--estimator all``.
ALL = "all"
#: The verdict classes in the order the tables and the terminal show them (side A first).
SHOWN_CLASSES = (A_BETTER, TIE, B_BETTER)
TRUTH_WORDS = {A_BETTER: "A better", TIE: "tie", B_BETTER: "B better"}
VERDICT_WORDS = {A_BETTER: "A", TIE: "tie", B_BETTER: "B"}

LEADERBOARD_COLUMNS = (
    "method",
    "judge",
    "rank",
    "system",
    "battles",
    "strength_mean",
    "strength_low",
    "strength_high",
    "win_rate_mean",
    "win_rate_low",
    "win_rate_high",
    "rank_median",
    "rank_low",
    "rank_high",
    "p_rank1",
    "rank_set_low",
    "rank_set_high",
    "ppr_theta",
    "ppr_se",
    "ppr_low",
    "ppr_high",
    "ppr_lambda",
)
PAIR_COLUMNS = ("method", "judge", "system_i", "system_j", "p_better")
JUDGE_COLUMNS = ("method", "judge", "measure", "truth", "verdict", "mean", "ci_low", "ci_high")
HEALTH_COLUMNS = (
    "method",
    "judge",
    "chains",
    "warmup",
    "samples",
    "rhat_max",
    "ess_min",
    "divergences",
)
_RANK_COLUMNS = ("rank_median", "rank_low", "rank_high", "rank_set_low", "rank_set_high")
NEXT_COLUMNS = (
    "method",
    "judge",
    "order",
    "system_i",
    "system_j",
    "k",
    "reduction",
    "reduction_se",
    "expected_width",
    "current_width",
    "ess",
    "trusted",
)
HETEROGENEITY_COLUMNS = (
    "judge",
    "system",
    "battles",
    "statistic",
    "df",
    "p_value",
    "p_holm",
    "differs",
)
#: The level at which a judge's confusion on one system's battles is said to differ.
HETEROGENEITY_ALPHA = 0.05
#: The most pairs what-to-judge-next evaluates (its cost grows with pairs × S²): above
#: it, the pairs whose order is least sure (P(i better than j) nearest ½).
NEXT_CANDIDATES = 500
#: The systems a heterogeneity warning names (the least likely under one confusion first).
_NAMED = 5
#: The ``measure`` of a judges row that is one cell of the confusion.
CONFUSION = "confusion"


class ArenaModel(NamedTuple):
    """What the posterior methods assume about the systems (``--model``).

    Attributes:
        name: as the flag and the settings spell it.
        description: in words, for ``--help``.
        pairs: each unordered pair its own π (no Bradley–Terry assumption).
    """

    name: str
    description: str
    pairs: bool


BRADLEY_TERRY = ArenaModel("bt", "Bradley–Terry strengths with Davidson ties", pairs=False)
PAIRS = ArenaModel(
    "pairs", "each pair its own π over (worse, tie, better): a check of Bradley–Terry", pairs=True
)
ARENA_MODELS = {m.name: m for m in (BRADLEY_TERRY, PAIRS)}


class ArenaTask(NamedTuple):
    """One fit to make: a method on the battles it reads.

    Attributes:
        method: the method's name.
        judge: the judges it reads, as the tables show them: every judge joined by commas
            (bayes), one judge (judge_only, ppr), or empty (the human verdicts alone).
        cells: the battles it reads; for judge_only the judge's verdicts stand in ``human``.
        judges: the judges whose verdicts enter as judges (bayes: all; else none).
        ppr_judge: ppr's judge column in ``cells.judged``, or None: the human verdicts alone;
            unused by the posterior methods.
        posterior: whether the fit is a posterior's draws (else ppr's closed form).
    """

    method: str
    judge: str
    cells: BattleCells
    judges: tuple[str, ...]
    ppr_judge: int | None
    posterior: bool


class ArenaFit(NamedTuple):
    """A task's result: the posterior's draws, or ppr's win rates."""

    task: ArenaTask
    draws: ArenaDraws | None
    ppr: PPRWinRates | None


class ArenaMethod(NamedTuple):
    """One way of ranking from battles (``--estimator``).

    Attributes:
        name: as the flag, the tables and the settings spell it.
        description: in words, for ``--help``.
        tasks: ``(battles, options) -> (tasks, notes)``: the fits it makes, each checked
            (SweepError on battles it cannot rank), and notes on what it left out.
    """

    name: str
    description: str
    tasks: Callable[[Battles, ArenaOptions], tuple[list[ArenaTask], list[str]]]


@dataclass(frozen=True)
class ArenaOptions:
    """The options of one battles comparison, parsed (:meth:`of`).

    Attributes:
        methods: the methods, in :data:`ARENA_METHODS`' order (``--estimator``).
        model: :data:`BRADLEY_TERRY` or :data:`PAIRS` (``--model``).
        judge_model: how bayes models several judges (``--judge-model``; independent by
            default: each judge its own confusion).
        judge_columns: the judge columns, in order; None: every column of verdicts.
        verdicts: the verdict words (``--verdicts``).
        level: the level of every interval and rank set, in (0, 1).
        seed: the posterior's key, ``jax.random.key(seed)``, the same for every fit.
        sampler: NUTS's settings (``--nuts``; 4 chains × (500 + 1000) by default).
    """

    methods: tuple[ArenaMethod, ...]
    model: ArenaModel = BRADLEY_TERRY
    judge_model: JudgeModel = INDEPENDENT
    judge_columns: tuple[str, ...] | None = None
    verdicts: VerdictWords = DEFAULT_VERDICTS
    level: float = 0.95
    seed: int = 0
    sampler: SamplerSettings = DEFAULT_SETTINGS

    @classmethod
    def of(
        cls,
        *,
        estimator: str = "bayes",
        model: str | ArenaModel = BRADLEY_TERRY.name,
        judge_model: str | JudgeModel | None = None,
        judge_columns: str | tuple[str, ...] | None = None,
        verdicts: VerdictWords | Mapping[str, str] | str | None = None,
        level: float = 0.95,
        seed: int = 0,
        sampler: str | SamplerSettings | None = None,
    ) -> ArenaOptions:
        """The options the keywords name, each checked (one line naming its flag).

        ``estimator``: a method's name or ``all``; ``judge_columns``: a tuple, or names
        joined by commas; ``sampler``: :class:`SamplerSettings` or ``--nuts``' text
        ``CHAINS,WARMUP,SAMPLES``.
        """
        if estimator == ALL:
            methods = tuple(ARENA_METHODS.values())
        elif isinstance(estimator, str) and estimator in ARENA_METHODS:
            methods = (ARENA_METHODS[estimator],)
        else:
            allowed = ", ".join((*ARENA_METHODS, ALL))
            raise SweepError(
                f"--estimator: {shown(estimator)} is not a battles method; allowed: {allowed}"
            )
        if isinstance(model, ArenaModel) and ARENA_MODELS.get(model.name) == model:
            parsed_model = model
        elif isinstance(model, str) and model in ARENA_MODELS:
            parsed_model = ARENA_MODELS[model]
        else:
            raise SweepError(
                f"--model: {shown(model)} is not allowed; allowed: {', '.join(ARENA_MODELS)}"
            )
        judges = INDEPENDENT if judge_model is None else JudgeModel.of(judge_model)
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
            raise SweepError(f"--level: {shown(level)} is not allowed; give a number in (0, 1)")
        if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
            raise SweepError(f"--seed: {shown(seed)} is not allowed; give a whole number ≥ 0")
        if isinstance(judge_columns, str):
            judge_columns = tuple(c.strip() for c in judge_columns.split(","))
        elif judge_columns is not None:
            judge_columns = tuple(str(c).strip() for c in judge_columns)
        return cls(
            methods=methods,
            model=parsed_model,
            judge_model=judges,
            judge_columns=judge_columns,
            verdicts=VerdictWords.of(verdicts),
            level=float(level),
            seed=int(seed),
            sampler=_sampler(sampler),
        )

    @property
    def estimator_shown(self) -> str:
        """The methods as ``--estimator`` names them: the one's name, or ``all``."""
        return self.methods[0].name if len(self.methods) == 1 else ALL

    def settings(self, battles: Battles) -> dict:
        """The comparison's settings, plain values, as every output carries them."""
        return {
            "estimator": self.estimator_shown,
            "methods": [m.name for m in self.methods],
            "model": self.model.name,
            "judge_model": self.judge_model.name,
            "judge_columns": list(battles.judges),
            "verdicts": dict(
                zip(
                    self.verdicts.words,
                    (_VERDICT_NAMES[c] for c in self.verdicts.classes),
                    strict=True,
                )
            ),
            "level": self.level,
            "seed": self.seed,
            "chains": self.sampler.chains,
            "warmup": self.sampler.warmup,
            "samples": self.sampler.samples,
            "target_accept": self.sampler.target_accept,
        }


_VERDICT_NAMES = {A_BETTER: "model_a", B_BETTER: "model_b", TIE: "tie"}
_NUTS_FORM = "CHAINS,WARMUP,SAMPLES, whole numbers ≥ 1 (default 4,500,1000)"


def _sampler(given: str | SamplerSettings | None) -> SamplerSettings:
    """NUTS's settings from ``--nuts``' text, a value, or None (the default)."""
    if given is None:
        return DEFAULT_SETTINGS
    if isinstance(given, SamplerSettings):
        return given
    parts = str(given).split(",")
    try:
        numbers = [int(p.strip()) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) != 3 or min(numbers) < 1:
        raise SweepError(f"--nuts: {shown(given)} is not {_NUTS_FORM}")
    return SamplerSettings(chains=numbers[0], warmup=numbers[1], samples=numbers[2])


class ArenaComparison(NamedTuple):
    """A battles comparison: its tables (module docstring), settings and what was read.

    Attributes:
        leaderboard, pairs, judges, health, next, heterogeneity: the tables.
        settings: :meth:`ArenaOptions.settings`.
        warnings: one line each (sampler health, judges with nothing to learn from).
        notes: one line each (what a method left out).
        battles: what was read.
        fits: each fit, its task with its draws or ppr's win rates (the figure's input).
    """

    leaderboard: pd.DataFrame
    pairs: pd.DataFrame
    judges: pd.DataFrame
    health: pd.DataFrame
    next: pd.DataFrame
    heterogeneity: pd.DataFrame
    settings: dict
    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    battles: Battles
    fits: tuple[ArenaFit, ...] = ()


# --- the methods' tasks ----------------------------------------------------------------


def _as_truth(cells: BattleCells, judge: int) -> BattleCells:
    """The battles judge ``judge`` gave a verdict on, that verdict in ``human`` and no
    judges, alike cells merged."""
    verdict = cells.judged[:, judge]
    keep = verdict != NONE
    rows = np.column_stack([cells.a[keep], cells.b[keep], verdict[keep]])
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    count = np.bincount(inverse.reshape(-1), cells.count[keep], len(unique)).astype(np.int64)
    return BattleCells(
        a=unique[:, 0].astype(np.int32),
        b=unique[:, 1].astype(np.int32),
        human=unique[:, 2].astype(np.int32),
        judged=np.zeros((len(unique), 0), np.int32),
        count=count,
    )


def _bayes_tasks(battles: Battles, options: ArenaOptions):
    require_connected(battles)
    task = ArenaTask("bayes", ",".join(battles.judges), battles.cells, battles.judges, None, True)
    return [task], []


def _human_only_tasks(battles: Battles, options: ArenaOptions):
    cells = with_human_verdict(battles.cells)
    if not len(cells.count):
        raise SweepError(
            f"{battles.source}: column human: no battle has a human verdict, so human_only "
            "has nothing to rank (give human verdicts, or another --estimator)"
        )
    require_connected(battles, cells, " with a human verdict (human_only reads those alone)")
    return [ArenaTask("human_only", "", cells, (), None, True)], []


def _judge_only_tasks(battles: Battles, options: ArenaOptions):
    tasks = []
    for j, name in enumerate(battles.judges):
        cells = _as_truth(battles.cells, j)
        require_connected(battles, cells, f" judge {name} gave a verdict on (judge_only)")
        tasks.append(ArenaTask("judge_only", name, cells, (), None, True))
    return tasks, []


def _ppr_tasks(battles: Battles, options: ArenaOptions):
    cells, s, source = battles.cells, len(battles.systems), battles.source
    human = cells.human != NONE

    def require_all(subset: BattleCells, where: str) -> None:
        absent = np.flatnonzero(_played(subset, s) == 0)
        if absent.size:
            names = ", ".join(battles.systems[i] for i in absent)
            raise SweepError(
                f"{source}: ppr: systems {names} have no battle {where}; prediction-powered "
                "ranking needs every system there (or another --estimator)"
            )

    require_all(with_human_verdict(cells), "with a human verdict")
    if human.all():
        note = (
            "ppr: every battle has a human verdict, so a judge adds nothing: ppr is the human "
            "verdicts' win rates (λ = 0)"
        )
        return [ArenaTask("ppr", "", cells, (), None, False)], [note]
    tasks, notes = [], []
    for j, name in enumerate(battles.judges):
        seen = cells.judged[:, j] != NONE
        judged = BattleCells(*(np.asarray(x)[seen] for x in cells))
        if not seen.all():
            left = int(cells.count[~seen].sum())
            notes.append(
                f"ppr, judge {name}: {left:,} battles without its verdict left out (PPI needs "
                "the judge's verdict on every battle it reads)"
            )
        require_all(with_human_verdict(judged), f"with a human verdict and judge {name}'s")
        unlabelled = BattleCells(*(np.asarray(x)[judged.human == NONE] for x in judged))
        require_all(unlabelled, f"without a human verdict that judge {name} judged")
        tasks.append(ArenaTask("ppr", name, judged, (), j, False))
    return tasks, notes


BAYES = ArenaMethod(
    "bayes",
    "the posterior with every judge, their confusions learnt from the human verdicts",
    _bayes_tasks,
)
HUMAN_ONLY = ArenaMethod(
    "human_only", "the same model on the battles with a human verdict, no judge", _human_only_tasks
)
JUDGE_ONLY = ArenaMethod(
    "judge_only", "each judge's verdicts taken as the truth (one fit per judge)", _judge_only_tasks
)
PPR = ArenaMethod(
    "ppr",
    "prediction-powered ranking (Chatzi et al. 2024) per judge: PPI win rates, χ² rank sets",
    _ppr_tasks,
)
#: The methods by name, in the order ``--estimator all`` runs and shows them.
ARENA_METHODS = {m.name: m for m in (BAYES, HUMAN_ONLY, JUDGE_ONLY, PPR)}


# --- fits ------------------------------------------------------------------------------


def _fit(task: ArenaTask, battles: Battles, options: ArenaOptions, key) -> ArenaFit:
    s = len(battles.systems)
    if not task.posterior:
        return ArenaFit(task, None, ppr_win_rates(task.cells, s, task.ppr_judge))
    columns = tuple(battles.judges.index(j) for j in task.judges)
    data = arena_data(task.cells, s, columns)
    shape = arena_shape(s, len(columns), options.judge_model.independent, options.model.pairs)
    return ArenaFit(task, sample_arena(key, data, shape, options.sampler), None)


def compare_battles(
    source: str | os.PathLike | pd.DataFrame, options: ArenaOptions | None = None, **fields
) -> ArenaComparison:
    """The comparison of a battles file (or DataFrame of its columns) under ``options``, or
    in its place :meth:`ArenaOptions.of`'s keywords.

    Raises:
        SweepError: bad input (one line naming the file, row and column, or the option).
        TypeError: both ``options`` and keywords.
    """
    if options is None:
        options = ArenaOptions.of(**fields)
    elif fields:
        raise TypeError("compare_battles(): give ArenaOptions or its keywords, not both")
    if isinstance(source, pd.DataFrame):
        battles = battles_from_frame(source, options.judge_columns, options.verdicts)
    else:
        battles = read_battles(source, options.judge_columns, options.verdicts)
    return arena_comparison(battles, options)


def arena_comparison(battles: Battles, options: ArenaOptions) -> ArenaComparison:
    """Every method's fits of ``battles`` and their tables; every refusal is raised before
    the first fit."""
    if len(battles.systems) < 2:
        raise SweepError(
            f"{battles.source}: a leaderboard needs two systems or more; it has one "
            f"({battles.systems[0]!r})"
        )
    tasks, notes = [], []
    for method in options.methods:
        more, said = method.tasks(battles, options)
        tasks += more
        notes += said
    jax.config.update("jax_enable_x64", True)  # before the data are made: float64 counts
    key = jax.random.key(options.seed)
    fits = [_fit(task, battles, options, key) for task in tasks]
    level = options.level
    leaderboard = pd.concat(
        [_leaderboard_rows(f, battles.systems, level) for f in fits], ignore_index=True
    )
    posterior = [f for f in fits if f.draws is not None]
    pairs = _frame([_pair_rows(f, battles.systems) for f in posterior], PAIR_COLUMNS)
    judges = _frame([_judge_rows(f, level) for f in posterior if f.task.judges], JUDGE_COLUMNS)
    health = _frame([_health_row(f, options.sampler) for f in posterior], HEALTH_COLUMNS)
    judged = [f for f in posterior if f.task.judges]
    following = _frame([_next_rows(f, battles.systems, level, key) for f in judged], NEXT_COLUMNS)
    heterogeneity = _frame([_heterogeneity_rows(battles)] if judged else [], HETEROGENEITY_COLUMNS)
    # Ranks are whole numbers, missing (NA) in ppr's rows: nullable integers.
    leaderboard = leaderboard.astype(dict.fromkeys(_RANK_COLUMNS, "Int64"))
    return ArenaComparison(
        leaderboard=leaderboard[list(LEADERBOARD_COLUMNS)],
        pairs=pairs,
        judges=judges,
        health=health,
        next=following,
        heterogeneity=heterogeneity,
        settings=options.settings(battles),
        warnings=tuple(_warnings(battles, fits, heterogeneity)),
        notes=tuple(notes),
        battles=battles,
        fits=tuple(fits),
    )


def _frame(frames: list[pd.DataFrame], columns) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame({c: [] for c in columns})
    return pd.concat(frames, ignore_index=True)[list(columns)]


# --- tables ----------------------------------------------------------------------------


def _tails(level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0
    return tail, 1.0 - tail


def _played(cells: BattleCells, systems: int) -> np.ndarray:
    """``(S,)`` each system's battles among ``cells``."""
    return (
        np.bincount(cells.a, cells.count, systems) + np.bincount(cells.b, cells.count, systems)
    ).astype(np.int64)


def _leaderboard_rows(fit: ArenaFit, systems: tuple[str, ...], level: float) -> pd.DataFrame:
    """One row per system of one fit, best first (columns :data:`LEADERBOARD_COLUMNS`)."""
    s = len(systems)
    nan = np.full(s, np.nan)
    columns = dict.fromkeys(LEADERBOARD_COLUMNS[5:], nan)
    columns["battles"] = _played(fit.task.cells, s)
    if fit.draws is not None:
        d, (low, high) = fit.draws, _tails(level)
        ranks = rank_draws(d.strengths)
        rank_low, rank_high = rank_intervals(ranks, level)
        set_low, set_high = simultaneous_rank_sets(ranks, level)
        strength_q = np.quantile(d.strengths, [low, high], axis=0)
        win_q = np.quantile(d.win_rates, [low, high], axis=0)
        columns.update(
            strength_mean=d.strengths.mean(axis=0),
            strength_low=strength_q[0],
            strength_high=strength_q[1],
            win_rate_mean=d.win_rates.mean(axis=0),
            win_rate_low=win_q[0],
            win_rate_high=win_q[1],
            rank_median=np.quantile(ranks, 0.5, axis=0, method="inverted_cdf").astype(np.int64),
            rank_low=rank_low.astype(np.int64),
            rank_high=rank_high.astype(np.int64),
            p_rank1=(ranks == 1).mean(axis=0),
            rank_set_low=set_low.astype(np.int64),
            rank_set_high=set_high.astype(np.int64),
        )
        key = columns["strength_mean"]
    else:
        p = fit.ppr
        se = np.sqrt(np.clip(np.diag(p.cov), 0.0, None))
        z = statistics.NormalDist().inv_cdf(0.5 + level / 2.0)
        set_low, set_high = rank_sets(p.theta, p.cov, level)
        columns.update(
            rank_set_low=set_low.astype(np.int64),
            rank_set_high=set_high.astype(np.int64),
            ppr_theta=p.theta,
            ppr_se=se,
            ppr_low=p.theta - z * se,
            ppr_high=p.theta + z * se,
            ppr_lambda=np.full(s, p.lam),
        )
        key = p.theta
    order = np.argsort(-np.asarray(key), kind="stable")
    frame = pd.DataFrame({"system": list(systems), **columns}).iloc[order]
    frame.insert(0, "rank", np.arange(1, s + 1))
    frame.insert(0, "judge", fit.task.judge)
    frame.insert(0, "method", fit.task.method)
    return frame.reset_index(drop=True)


def _order(fit: ArenaFit) -> np.ndarray:
    return np.argsort(-fit.draws.strengths.mean(axis=0), kind="stable")


def _pair_rows(fit: ArenaFit, systems: tuple[str, ...]) -> pd.DataFrame:
    """P(i better than j) for every ordered pair i ≠ j, i and j in the fit's ranking."""
    p = fit.draws.better.mean(axis=0)
    order = _order(fit)
    i, j = (x.reshape(-1) for x in np.meshgrid(order, order, indexing="ij"))
    keep = i != j
    i, j = i[keep], j[keep]
    names = np.array(systems, dtype=object)
    return pd.DataFrame(
        {
            "method": fit.task.method,
            "judge": fit.task.judge,
            "system_i": names[i],
            "system_j": names[j],
            "p_better": p[i, j],
        }
    )


#: Position-bias measures of a confusion C[truth, verdict] ``(M, 3, 3)``: name, truth,
#: verdict words, and the function of the draws. "Not tie" weighs the two sides equally.
BIAS_MEASURES = (
    ("P(says A | tie)", "tie", "A", lambda c: c[:, TIE, A_BETTER]),
    ("P(says B | tie)", "tie", "B", lambda c: c[:, TIE, B_BETTER]),
    ("P(says A | B better)", "B better", "A", lambda c: c[:, B_BETTER, A_BETTER]),
    ("P(says B | A better)", "A better", "B", lambda c: c[:, A_BETTER, B_BETTER]),
    (
        "P(says tie | not tie)",
        "not tie",
        "tie",
        lambda c: 0.5 * (c[:, A_BETTER, TIE] + c[:, B_BETTER, TIE]),
    ),
)


def _judge_rows(fit: ArenaFit, level: float) -> pd.DataFrame:
    """Each judge's 9 confusion cells and :data:`BIAS_MEASURES`, mean and central interval."""
    low, high = _tails(level)
    confusion = np.exp(fit.draws.log_confusion)  # (M, J, truth, verdict)
    rows = []
    for j, name in enumerate(fit.task.judges):
        c = confusion[:, j]
        values = [
            (CONFUSION, TRUTH_WORDS[t], VERDICT_WORDS[v], c[:, t, v])
            for t in SHOWN_CLASSES
            for v in SHOWN_CLASSES
        ]
        values += [(measure, t, v, f(c)) for measure, t, v, f in BIAS_MEASURES]
        for measure, truth, verdict, x in values:
            q = np.quantile(x, [low, high])
            rows.append((fit.task.method, name, measure, truth, verdict, x.mean(), q[0], q[1]))
    return pd.DataFrame(rows, columns=list(JUDGE_COLUMNS))


def _health_row(fit: ArenaFit, sampler: SamplerSettings) -> pd.DataFrame:
    d = fit.draws
    return pd.DataFrame(
        [
            (
                fit.task.method,
                fit.task.judge,
                sampler.chains,
                sampler.warmup,
                sampler.samples,
                d.rhat_max,
                d.ess_min,
                d.divergences,
            )
        ],
        columns=list(HEALTH_COLUMNS),
    )


def _next_rows(fit: ArenaFit, systems: tuple[str, ...], level: float, key) -> pd.DataFrame:
    """What to judge next from one fit's draws, best first (columns :data:`NEXT_COLUMNS`)."""
    d = fit.draws
    candidates = None
    if d.pairs.shape[1] > NEXT_CANDIDATES:
        i, j = np.triu_indices(len(systems), 1)
        doubt = np.abs(d.better[:, i, j].mean(axis=0) - 0.5)
        candidates = np.sort(np.argsort(doubt, kind="stable")[:NEXT_CANDIDATES])
    n = next_verdicts(key, d.strengths, d.pairs, level, candidates=candidates)
    names = np.array(systems, dtype=object)
    return pd.DataFrame(
        {
            "method": fit.task.method,
            "judge": fit.task.judge,
            "order": np.arange(1, len(n.pair) + 1),
            "system_i": names[n.first],
            "system_j": names[n.second],
            "k": n.k,
            "reduction": n.reduction,
            "reduction_se": n.reduction_se,
            "expected_width": n.expected_width,
            "current_width": n.current_width,
            "ess": n.ess,
            "trusted": n.trusted,
        }
    )


def _heterogeneity_rows(battles: Battles) -> pd.DataFrame:
    """Each (judge, system)'s test (columns :data:`HETEROGENEITY_COLUMNS`); ``battles``:
    the system's battles with both a human verdict and the judge's."""
    h = judge_heterogeneity(battles.cells, len(battles.systems), HETEROGENEITY_ALPHA)
    j, s = np.indices(h.df.shape)
    on_a_or_b = h.tables[:, :, :2].sum(axis=(2, 3, 4))  # (J, S): s on side A or B
    return pd.DataFrame(
        {
            "judge": np.array(battles.judges, dtype=object)[j.reshape(-1)],
            "system": np.array(battles.systems, dtype=object)[s.reshape(-1)],
            "battles": on_a_or_b.reshape(-1),
            "statistic": h.statistic.reshape(-1),
            "df": h.df.reshape(-1),
            "p_value": h.p_value.reshape(-1),
            "p_holm": h.p_holm.reshape(-1),
            "differs": h.differs.reshape(-1),
        }
    )


def _warnings(battles: Battles, fits: list[ArenaFit], heterogeneity: pd.DataFrame) -> list[str]:
    """Sampler health per posterior fit; judges whose confusion nothing informs, or whose
    confusion differs between systems."""
    out = []
    for fit in fits:
        d = fit.draws
        if d is None or (d.rhat_max <= RHAT_LIMIT and d.divergences == 0):
            continue
        out.append(
            f"NUTS ({_fit_name(fit.task)}): R-hat max {d.rhat_max:.3f}, ESS min "
            f"{d.ess_min:.0f}, {d.divergences} divergent transitions: its draws may not "
            f"represent the posterior (healthy: R-hat ≤ {RHAT_LIMIT}, none divergent; more "
            "--nuts warm-up or samples may help)"
        )
    cells = battles.cells
    if any(f.task.judges for f in fits):
        human = cells.human != NONE
        for j, name in enumerate(battles.judges):
            if not np.any(human & (cells.judged[:, j] != NONE)):
                out.append(
                    f"judge {name}: no battle has both its verdict and a human one, so bayes "
                    "learns its confusion from the prior alone and its verdicts say little"
                )
    differs = heterogeneity[heterogeneity["differs"].astype(bool)]
    for judge, rows in differs.groupby("judge", sort=False):
        rows = rows.sort_values("p_holm", kind="stable")
        tested = int((heterogeneity["judge"] == judge).sum())
        named = ", ".join(
            f"{r.system} (Holm p = {r.p_holm:.2g})" for r in rows.head(_NAMED).itertuples()
        )
        more = f" and {len(rows) - _NAMED} more" if len(rows) > _NAMED else ""
        out.append(
            f"judge {judge}: its confusion differs between systems (G-test at Holm-adjusted "
            f"{HETEROGENEITY_ALPHA}) on {len(rows)} of {tested}: {named}{more}; bayes shares one "
            "confusion per judge, so its correction of their verdicts may be off (the "
            "heterogeneity table, --json or --out, has every test)"
        )
    return out


def fit_title(task: ArenaTask) -> str:
    """A fit as the tables' (method, judge) read together: ``bayes (gpt-4,gpt-3.5)``,
    ``human_only``, ``ppr (gpt-4)``."""
    return f"{task.method} ({task.judge})" if task.judge else task.method


def _fit_name(task: ArenaTask) -> str:
    """A fit as the report names it: the method, and its judge where it has one alone."""
    if task.judge and not task.judges:  # one judge's fit (judge_only, ppr)
        return f"{task.method}, judge {task.judge}"
    return task.method
