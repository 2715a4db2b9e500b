"""``sweep compare``'s options as one value: :class:`CompareOptions`, parsed once.

::

    options = CompareOptions.of(rates="shared", adjust="holm", estimator="all")
    result = sweep.compare("examples/ratings.csv", options)

Every name a caller or the command gives (``--rates shared``, ``--method nuts``,
``--judges majority``, ``--estimator all``) becomes its value here, checked, before
a file is read: a :class:`~.analysis.RateModel`, an :class:`~.analysis.Adjustment`, a
:class:`Method`, the estimators, two :class:`~.ratings.LabelPolicy` values and the
plan of what to rate next. The layers below take the value and call what it holds;
none takes a loose option or tests a name. A comparison's ``settings`` (the text,
JSON and Parquet outputs read them) are built from it by
:meth:`CompareOptions.settings`, through the one function that writes them
(:func:`~.analysis.comparison_settings`, which ``compare_systems`` also calls), with
the names the flags take.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral

from binmetric_sweep.kernels.estimators import POSTERIOR, Estimator
from binmetric_sweep.kernels.nuts import NUTSSettings
from binmetric_sweep.sweep.compare.analysis import (
    NO_ADJUSTMENT,
    PER_SYSTEM,
    SAMPLER_SETTINGS,
    Adjustment,
    Method,
    RateModel,
    comparison_settings,
    parse_options,
)
from binmetric_sweep.sweep.compare.classes import Classes
from binmetric_sweep.sweep.compare.next_ratings import NextRatingsPlan
from binmetric_sweep.sweep.compare.ratings import REFUSE, LabelPolicy
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.estimates import ALL, estimators_of_option
from binmetric_sweep.sweep.spec.categorical import JOINT, JudgeModel

__all__ = ["SAMPLER_SETTINGS", "CompareOptions", "Method", "NextRatingsPlan", "options_of"]
# Method, SAMPLER_SETTINGS and NextRatingsPlan live with what computes them (analysis,
# next_ratings), which must not import this module; they are named here as the options'.


@dataclass(frozen=True)
class CompareOptions:
    """The options of one comparison, parsed (:meth:`of`): values, not names.

    Attributes:
        rates: how the systems' metric rates ρ, η are learnt (``--rates``).
        gamma: the two-sided significance level of a pair's test, in (0, 1).
        level: the credible (or confidence) level of each system's interval, in (0, 1).
        adjust: how the pairs' tests answer for their number (``--adjust``).
        method: how the posterior is computed (``--method``).
        seed: the NUTS draws' seed, a whole number ≥ 0 (read under :attr:`Method.NUTS`).
        estimators: the estimators tabulated (``--estimator``: one, or ``all``, the
            posterior first); the posterior alone gives the posterior's tables.
        annotator_policy: how several human labels of one item are combined
            (``--annotators``).
        judge_policy: how several metric labels of one item are combined (``--judges``).
        next_ratings: what the plans of what to rate next are asked for; None: no plans
            (no ``--cost-metric``).
        progress: whether the quadrature's stages are shown on standard error.
        classes: the K classes of a K-class comparison (``--classes``); None: binary
            labels (every other field below is read only with classes).
        judge_columns: the judges' columns of a K-class ratings table
            (``--judge-columns``); None: the default rule (:mod:`~.categorical_ratings`).
        judge_model: how the K-class posterior models several judges (``--judge-model``).
        nuts: the K-class posterior's sampler settings; None: the sweeps' defaults
            (:data:`~.categorical.NUTS_SETTINGS`, 4 chains × (500 + 1000)). Python only.
    """

    rates: RateModel = PER_SYSTEM
    gamma: float = 0.05
    level: float = 0.95
    adjust: Adjustment = NO_ADJUSTMENT
    method: Method = Method.QUADRATURE
    seed: int = 0
    estimators: tuple[Estimator, ...] = (POSTERIOR,)
    annotator_policy: LabelPolicy = REFUSE
    judge_policy: LabelPolicy = REFUSE
    next_ratings: NextRatingsPlan | None = None
    progress: bool = False
    classes: Classes | None = None
    judge_columns: tuple[str, ...] | None = None
    judge_model: JudgeModel = JOINT
    nuts: NUTSSettings | None = None

    @classmethod
    def of(
        cls,
        *,
        rates: str | RateModel = PER_SYSTEM.name,
        gamma: float = 0.05,
        level: float = 0.95,
        adjust: str | Adjustment = NO_ADJUSTMENT.name,
        method: str | Method = Method.QUADRATURE.value,
        seed: int = 0,
        cost_metric: float | None = None,
        cost_human: float = 1.0,
        power: float = 0.8,
        annotators: str | LabelPolicy = REFUSE.name,
        judges: str | LabelPolicy = REFUSE.name,
        progress: bool = False,
        estimator: str | Estimator = POSTERIOR.name,
        classes: str | Classes | None = None,
        judge_columns: str | tuple[str, ...] | None = None,
        judge_model: str | JudgeModel | None = None,
        nuts: NUTSSettings | None = None,
    ) -> CompareOptions:
        """The options that the keywords of :func:`~binmetric_sweep.sweep.compare.compare`
        name, each checked once: the rate model, the adjustment, γ and the level; the label
        policies; the estimators, and that a plan of what to rate next is asked of the
        posterior alone; the method, the seed; the plan's costs and power (read only with
        ``cost_metric``, as without it there is no plan). With ``classes`` (K-class labels:
        :class:`~.classes.Classes` or ``--classes``' text) also the judges' columns (a list,
        or their names joined by commas) and the judge model; ``--rates shared`` and
        ``--cost-metric`` are refused with classes, and the judges' options without them.

        Raises:
            SweepError: an option out of range or not registered (one line naming its flag).
        """
        model, adjustment = parse_options(rates, gamma, level, adjust)
        annotator_policy = LabelPolicy.of(annotators, "--annotators")
        judge_policy = LabelPolicy.of(judges, "--judges")
        estimators = estimators_of_option(estimator)
        if cost_metric is not None and not _posterior_only(estimators):
            shown_as = estimator.name if isinstance(estimator, Estimator) else estimator
            raise SweepError(
                f"--cost-metric: plans the posterior's ratings; not with --estimator {shown_as}"
            )
        parsed_method = Method.of(method)
        if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
            raise SweepError(f"--seed: {seed!r} is not allowed; give a whole number ≥ 0")
        plan = None
        if cost_metric is not None:
            plan = NextRatingsPlan.of(cost_metric, cost_human, power)
        classes, judge_columns, judge_model = _class_options(
            classes, judge_columns, judge_model, model, cost_metric
        )
        return cls(
            rates=model,
            gamma=float(gamma),
            level=float(level),
            adjust=adjustment,
            method=parsed_method,
            seed=int(seed),
            estimators=estimators,
            annotator_policy=annotator_policy,
            judge_policy=judge_policy,
            next_ratings=plan,
            progress=bool(progress),
            classes=classes,
            judge_columns=judge_columns,
            judge_model=judge_model,
            nuts=nuts,
        )

    @property
    def posterior_only(self) -> bool:
        """Whether the posterior is the one estimator: the posterior's tables, not one row
        per (estimator, system)."""
        return _posterior_only(self.estimators)

    @property
    def has_posterior(self) -> bool:
        """Whether the posterior is among the estimators (the analysis computes it)."""
        return any(e.posterior for e in self.estimators)

    @property
    def estimator_shown(self) -> str:
        """The estimators as ``--estimator`` names them: the one's name, or ``all``."""
        return self.estimators[0].name if len(self.estimators) == 1 else ALL

    @property
    def label_policies(self) -> dict[str, LabelPolicy]:
        """The label policies by the keywords :func:`~.ratings.read_ratings` takes."""
        return {"annotators": self.annotator_policy, "judges": self.judge_policy}

    def settings(
        self, *, posterior: bool, sampler: Mapping | None = None, read: bool = False
    ) -> dict:
        """A comparison's settings, as its outputs carry them
        (:func:`~.analysis.comparison_settings`, in its order): ``rates``, ``gamma``,
        ``level``, ``adjust``; with ``posterior`` (the posterior was computed) ``method``,
        and under NUTS :data:`SAMPLER_SETTINGS` from ``sampler`` and ``seed``; with ``read``
        (the comparison of a ratings file, :func:`~binmetric_sweep.sweep.compare.compare`)
        the label policies ``annotators``, ``judges`` and, unless the posterior is the one
        estimator, ``estimator``. Every value is plain (names, numbers)."""
        return comparison_settings(
            self.rates,
            self.gamma,
            self.level,
            self.adjust,
            method=self.method if posterior else None,
            sampler=sampler,
            seed=self.seed,
            label_policies=self.label_policies if read else None,
            estimator=self.estimator_shown if read and not self.posterior_only else None,
        )


def options_of(
    options: CompareOptions | None, fields: Mapping, called: str, allowed: tuple[str, ...]
) -> CompareOptions:
    """``options``, or the options the keyword ``fields`` of ``called`` name (those of
    ``allowed`` only, :meth:`CompareOptions.of`): a call takes one or the other.

    Raises:
        TypeError: both given, ``options`` not a :class:`CompareOptions`, or a field not in
            ``allowed``.
        SweepError: a field out of range (:meth:`CompareOptions.of`).
    """
    if options is None:
        unknown = [k for k in fields if k not in allowed]
        if unknown:
            raise TypeError(f"{called}() got an unexpected keyword argument {unknown[0]!r}")
        return CompareOptions.of(**fields)
    if not isinstance(options, CompareOptions):
        raise TypeError(f"{called}(): options must be a CompareOptions, not {options!r}")
    if fields:
        raise TypeError(
            f"{called}(): give a CompareOptions or its keyword fields, not both "
            f"(got options and {', '.join(fields)})"
        )
    return options


def _class_options(classes, judge_columns, judge_model, rates, cost_metric):
    """``classes``, the judges' columns and the judge model, parsed; the options that K
    classes do not take, and the judges' options without classes, refused."""
    if classes is None:
        for flag, given in (("--judge-columns", judge_columns), ("--judge-model", judge_model)):
            if given is not None:
                raise SweepError(f"{flag}: needs --classes (K-class labels)")
        return None, None, JOINT
    classes = Classes.of(classes)
    if rates is not PER_SYSTEM:
        raise SweepError(
            f"--rates: {rates.name} is not built for K classes (one confusion shared by all "
            "systems); use --rates per-system"
        )
    if cost_metric is not None:
        raise SweepError("--cost-metric: plans binary ratings; not with --classes")
    if isinstance(judge_columns, str):
        judge_columns = tuple(c.strip() for c in judge_columns.split(","))
    elif judge_columns is not None:
        judge_columns = tuple(str(c).strip() for c in judge_columns)
    if judge_columns is not None and not all(judge_columns):
        raise SweepError(
            f"--judge-columns: {','.join(judge_columns)!r} names an empty column; give "
            "column names joined by commas"
        )
    model = JOINT if judge_model is None else JudgeModel.of(judge_model)
    return classes, judge_columns, model


def _posterior_only(estimators: tuple[Estimator, ...]) -> bool:
    return len(estimators) == 1 and estimators[0].posterior
