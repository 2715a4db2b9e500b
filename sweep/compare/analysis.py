"""Per-system counts → posteriors of α, and every pair's P(α_a > α_b), under either rate model.

::

    counts = read_ratings("examples/ratings.csv")       # one row per system
    result = compare_systems(counts, rates="shared")     # or "per-system", or SHARED
    result.systems, result.pairs, result.settings, result.warnings

A rate model (how the systems' metric rates ρ, η are learnt: :data:`PER_SYSTEM`,
:data:`SHARED`) and an adjustment of the pairs' tests (:data:`NO_ADJUSTMENT`,
:data:`HOLM`, :data:`BH`) are values (:class:`RateModel`, :class:`Adjustment`)
that carry what differs between them; :data:`RATE_MODELS` and
:data:`ADJUSTMENTS` hold them by the names ``--rates`` and ``--adjust`` take
(the command's choices are built from them). A name is parsed into its value
once, where it comes in (:meth:`RateModel.of`, :func:`parse_options`, and with the
other options of a comparison into one :class:`~.options.CompareOptions`); below,
the layers call the value and never test a name.

The numbers come from :mod:`binmetric_sweep.kernels.compare` (exact
quadrature) and, for each system's moments under per-system rates, from the
sweep's own posterior (:func:`binmetric_sweep.sweep.execution.fits.fit_lanes`), so
that a system's row equals a sweep configuration's fit for the same counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from statistics import NormalDist

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from binmetric_sweep.kernels import compare as kc
from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.quadrature import QuadratureRule, alpha_log_marginal
from binmetric_sweep.sweep.compare.ratings import Reading
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.compile_cache import ExportedProgram
from binmetric_sweep.sweep.execution.fits import fit_lanes

__all__ = [
    "ADJUSTMENTS",
    "BH",
    "HOLM",
    "NO_ADJUSTMENT",
    "Method",
    "PER_SYSTEM",
    "RATE_MODELS",
    "SAMPLER_SETTINGS",
    "SHARED",
    "Adjustment",
    "Comparison",
    "RateModel",
    "adjusted_tests",
    "benjamini_hochberg",
    "compare_systems",
    "comparison_settings",
    "counts_of",
    "holm",
    "pair_table",
    "parse_options",
    "system_counts",
]

#: α-densities for pairs: panels × nodes over the posterior mean ± WIDTH SDs.
PANELS, NODES, WIDTH = 16, 16, 12.0
#: The shared model's outer rule: nodes per (logit ρ, logit η) axis, and a coarser
#: rule it is checked against (a warning names what moved by more than CHECK_TOLERANCE).
SHARED_NODES, SHARED_CHECK_NODES, CHECK_TOLERANCE = 12, 8, 1e-4
#: Systems per compiled call of their α-densities: the full model's nested rule
#: at every node of every system of a call is held at once, so the call's size
#: bounds the memory (docs/performance.md, "sweep compare").
DENSITY_CHUNK = 64
#: The common rule of the pair probabilities: panels of 16 Gauss–Legendre nodes
#: GRID_PANEL_SDS SDs of the narrowest density wide, visited GRID_BLOCK panels at
#: a time (why a common rule, and how close to the per-pair sums: docs/design.md).
GRID_NODES, GRID_PANEL_SDS, GRID_BLOCK = 16, 2.0, 16
#: Outer (ρ, η) nodes per compiled call of the shared model's pair probabilities
#: (a call per chunk: progress between them).
NODE_CHUNK = 16


class Progress:
    """The analysis's stages on standard error (tqdm), where ``show``; else nothing.

    Each stage has its own bar: α densities (systems), the shared model's
    (ρ, η) rule, and the pairs (calls of :data:`NODE_CHUNK` outer nodes).
    """

    def __init__(self, show: bool = False):
        self.show, self._bar = show, None

    def stage(self, name: str, total: int) -> None:
        self.close()
        if self.show:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=f"compare: {name}", leave=False, dynamic_ncols=True)

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare_systems` found.

    Attributes:
        systems: one row per system, best first (by posterior mean of α).
        pairs: one row per pair, ``a`` ranked above ``b``.
        settings: the analysis's settings (rates, gamma, level, adjust, method).
        warnings: one line each, for the user.
        p_better: ``(S, S)`` P(α_i > α_j), systems in the order of ``systems``.
        reading: what the ratings file held and how its labels were combined
            (:class:`~.ratings.Reading`), where the counts came from a file or frame.
    """

    systems: pd.DataFrame
    pairs: pd.DataFrame
    settings: dict
    warnings: list[str] = field(default_factory=list)
    p_better: np.ndarray | None = None
    reading: Reading | None = None


class Method(Enum):
    """How the posterior of a comparison is computed (``--method``); ``.value`` is the word
    the flag and the settings (``"method"``) take."""

    #: Exact quadrature (:func:`compare_systems`), the default.
    QUADRATURE = "quadrature"
    #: NumPyro's NUTS draws, as a check of the quadrature (:func:`~.sampled.compare_by_nuts`).
    NUTS = "nuts"

    @classmethod
    def of(cls, given: str | Method) -> Method:
        """The method ``given`` names (or is).

        Raises:
            SweepError: not a method's word (one line naming ``--method``).
        """
        if isinstance(given, Method):
            return given
        for method in cls:
            if isinstance(given, str) and given == method.value:
                return method
        allowed = ", ".join(m.value for m in cls)
        raise SweepError(f"--method: {given!r} is not allowed; allowed: {allowed}")


@dataclass(frozen=True)
class RateModel:
    """How the systems' metric rates ρ, η are learnt (``--rates``): one value per model,
    :data:`RATE_MODELS` by name. Each layer calls the value's function where the models
    differ; none tests a name, so a new model is one value registered there.

    Attributes:
        name: as ``--rates`` and the settings (``"rates"``) spell it.
        description: the model in words: ``--help`` and the text reports' headers.
        posterior: ``(counts, level, progress) -> ((mean, sd, low, high), p_better,
            warnings)``: each system's α moments and central interval at ``level``, the
            ``(S, S)`` P(α_i > α_j) and the warnings of the counts under this model, by
            exact quadrature, systems in the order of the counts table
            (:func:`compare_systems`).
        rate_means: ``Counts -> (ρ means, η means)``, one per system: the Beta means of
            the paired ratings the model learns ρ, η from, as the systems tables show
            them and what to rate next plans at.
        estimated_rates: ``Counts -> Counts``: the counts a classical estimator's ρ̂, η̂
            come from (:mod:`~.by_estimator`): each system's own, or every system's
            paired counts pooled.
        drawn_rates: ``(a_ρ, b_ρ, a_η, b_η, systems) -> (ρ, η)``: the NUTS model's rate
            sites (:mod:`~.sampled`), from each system's paired-rating Beta parameters
            ``(S,)`` and the systems' ``numpyro.plate``; ρ, η broadcast against α.
        nuts_warnings: ``counts -> [line]``: what the NUTS check warns of the counts.
    """

    name: str
    description: str
    posterior: Callable
    rate_means: Callable[[Counts], tuple[np.ndarray, np.ndarray]]
    estimated_rates: Callable[[Counts], Counts]
    drawn_rates: Callable
    nuts_warnings: Callable[[pd.DataFrame], list[str]]

    @staticmethod
    def of(rates: str | RateModel) -> RateModel:
        """The model of :data:`RATE_MODELS` that ``rates`` names (or is): the reports and
        figures find a comparison's model by the name its settings keep.

        Raises:
            SweepError: not a registered model or its name (one line naming ``--rates``).
        """
        return _registered(RATE_MODELS, "RATE_MODELS", rates, "--rates", "is not a rate model")


@dataclass(frozen=True)
class Adjustment:
    """How the pairs' tests answer for their number (``--adjust``): one value per
    adjustment, :data:`ADJUSTMENTS` by name; the layers call it, none tests a name.

    Attributes:
        name: as ``--adjust`` and the settings (``"adjust"``) spell it.
        description: what it does, for ``--help``.
        adjusted: ``p (m,) -> adjusted p (m,)`` over the m pairs tested, in ``p``'s
            order; None where each pair is tested alone (no ``p_adjusted`` column).
        held_level: ``(gamma, tested, called) -> level``: the two-sided level a pair is
            held to among ``tested`` pairs of which ``called`` are significant. A pair
            not significant has its tail above it, so ``eps`` and the plans of what to
            rate next use it.
        label: its short name in a figure's title and in "Holm-adjusted" ("" unadjusted).
        title: its full name in the text report's header ("Benjamini–Hochberg").
        controls: the error rate it controls, for that header ("false discovery rate").
        held_rule: :attr:`held_level` in symbols ("γ/m"), where what to rate next says it.
    """

    name: str
    description: str
    adjusted: Callable[[np.ndarray], np.ndarray] | None
    held_level: Callable[[float, int, int], float]
    label: str = ""
    title: str = ""
    controls: str = ""
    held_rule: str = ""

    @property
    def adjusts(self) -> bool:
        """Whether the pairs' tails are adjusted (the pairs table has ``p_adjusted``)."""
        return self.adjusted is not None

    @property
    def header(self) -> str:
        """``Holm-adjusted over all pairs (family-wise error)``: the text report's words."""
        return f"{self.title}-adjusted over all pairs ({self.controls})"

    @property
    def value_name(self) -> str:
        """``Holm-adjusted``: how the text report names an adjusted value."""
        return f"{self.label}-adjusted"

    @staticmethod
    def of(adjust: str | Adjustment) -> Adjustment:
        """The adjustment of :data:`ADJUSTMENTS` that ``adjust`` names (or is): the
        reports, figures and plans find a comparison's adjustment by its settings' name.

        Raises:
            SweepError: not a registered adjustment or its name (one line naming
            ``--adjust``).
        """
        return _registered(ADJUSTMENTS, "ADJUSTMENTS", adjust, "--adjust", "is not allowed")


def _registered(registry: dict, called: str, given, flag: str, what: str):
    """The value of ``registry`` (named ``called``) that ``given`` names or is; a SweepError
    naming ``flag`` otherwise, a value not registered under its name included."""
    if isinstance(given, str):
        if given in registry:
            return registry[given]
    elif registry.get(getattr(given, "name", None)) == given:
        return registry[given.name]
    elif hasattr(given, "name"):
        allowed = ", ".join(registry)
        raise SweepError(f"{flag}: {given.name!r} is not in {called}; allowed: {allowed}")
    raise SweepError(f"{flag}: {given!r} {what}; allowed: {', '.join(registry)}")


def counts_of(frame: pd.DataFrame) -> Counts:
    """The kernels' :class:`Counts` (one lane per system) of a per-system counts table."""
    f = {c: frame[c].to_numpy(np.float64) for c in frame.columns if c != "system"}
    zeros = np.zeros(len(frame))
    return Counts(
        n_pos=f["n_pos"],
        n_phi=f["n_phi"],
        n_tp=f["n_tp"],
        n_pos_paired=f["n_pos_paired"],
        n_tn=f["n_tn"],
        n_neg_paired=f["n_rho_eta"] - f["n_pos_paired"],
        m_pos=f["m_pos"],
        n_m=f["n_m"],
        rho=zeros,
        eta=zeros,
        rho_eta_known=np.zeros(len(frame), bool),
    )


def compare_systems(counts: pd.DataFrame, options=None, **fields) -> Comparison:
    """Posteriors of each system's α and P(α_a > α_b) for every pair, by exact quadrature.

    Args:
        counts: one row per system: ``system`` and the columns of
            :data:`binmetric_sweep.sweep.compare.ratings.COUNT_COLUMNS`.
        options: the comparison's options (a :class:`~.options.CompareOptions`: its rate
            model, γ, level, adjustment and progress are read); or, in its place, the
            keyword fields:
        rates: a rate model or its name (:data:`RATE_MODELS`): "per-system" (each
            system its own ρ, η, the default) or "shared" (one ρ, η).
        gamma: two-sided significance level of a pair's test (default 0.05).
        level: credible level of each system's central interval (default 0.95).
        adjust: an adjustment or its name (:data:`ADJUSTMENTS`): "none" (the default),
            "holm" to control the family-wise error over all pairs, "bh" the false
            discovery rate (Benjamini–Hochberg).
        progress: show the stages' progress on standard error.

    An entry point: it switches JAX to float64 for this process, as
    :func:`binmetric_sweep.sweep.run` does.

    Raises:
        SweepError: an option out of range (one line naming it).
        TypeError: both ``options`` and fields, or a field not listed above.
    """
    # The options value is read, not imported: options.py imports this module (its values).
    if options is None:
        unknown = [k for k in fields if k not in _QUADRATURE_FIELDS]
        if unknown:
            raise TypeError(f"compare_systems() got an unexpected keyword argument {unknown[0]!r}")
        f = {**_QUADRATURE_FIELDS, **fields}
        model, adjustment = parse_options(f["rates"], f["gamma"], f["level"], f["adjust"])
        gamma, level, progress = float(f["gamma"]), float(f["level"]), bool(f["progress"])
    elif fields:
        raise TypeError(
            "compare_systems(): give a CompareOptions or its keyword fields, not both "
            f"(got options and {', '.join(fields)})"
        )
    else:
        model, adjustment = options.rates, options.adjust
        gamma, level, progress = options.gamma, options.level, options.progress
    jax.config.update("jax_enable_x64", True)
    steps = Progress(progress)
    moments, p, warnings = model.posterior(counts, level, steps)
    steps.close()
    systems, p_sorted = ranked(counts, model, moments, p)
    settings = comparison_settings(model, gamma, level, adjustment, Method.QUADRATURE)
    pairs = pair_table(systems, p_sorted, gamma, adjustment)
    return Comparison(systems, pairs, settings, warnings, p_sorted)


#: The keyword fields :func:`compare_systems` takes in place of its options, with their
#: defaults (those of :meth:`~.options.CompareOptions.of`).
_QUADRATURE_FIELDS = {
    "rates": "per-system",
    "gamma": 0.05,
    "level": 0.95,
    "adjust": "none",
    "progress": False,
}
#: What the NUTS check reports of its draws, in a comparison's settings after ``method``
#: (:func:`~.sampled.compare_by_nuts`); the seed follows them.
SAMPLER_SETTINGS = ("chains", "draws", "rhat_max", "ess_min")


def comparison_settings(
    rates: RateModel,
    gamma: float,
    level: float,
    adjust: Adjustment,
    method: Method | None = None,
    sampler: Mapping | None = None,
    seed: int = 0,
    label_policies: Mapping | None = None,
    estimator: str | None = None,
) -> dict:
    """A comparison's settings, as its outputs (text, JSON, Parquet, figures) carry them, in
    this order: ``rates``, ``gamma``, ``level``, ``adjust`` (names and numbers); where the
    posterior was computed its ``method``, and under :attr:`Method.NUTS`
    :data:`SAMPLER_SETTINGS` from ``sampler`` and the ``seed``; for a ratings file read,
    the ``label_policies`` (``annotators``, ``judges``: the names); and the ``estimator``
    shown where the result is by estimator. The one place the settings are written
    (:meth:`~.options.CompareOptions.settings` gives it its values)."""
    out = {"rates": rates.name, "gamma": gamma, "level": level, "adjust": adjust.name}
    if method is not None:
        out["method"] = method.value
        if method is Method.NUTS:
            out.update({k: sampler[k] for k in SAMPLER_SETTINGS})
            out["seed"] = seed
    if label_policies is not None:
        out.update({k: policy.name for k, policy in label_policies.items()})
    if estimator is not None:
        out["estimator"] = estimator
    return out


def ranked(
    counts: pd.DataFrame,
    rates: str | RateModel,
    posterior: tuple[np.ndarray, ...],
    p_better: np.ndarray,
) -> tuple[pd.DataFrame, np.ndarray]:
    """The systems table, best first, and ``p_better`` in that order.

    ``posterior``: each system's α mean, SD and interval ends, in ``counts``' order;
    the counts as :func:`system_counts` names them;
    ``rho_mean``, ``eta_mean`` are the Beta means of the paired ratings the rate
    model learns ρ, η from (:attr:`RateModel.rate_means`: each system's own, or
    pooled under shared rates).
    """
    mean, sd, low, high = posterior
    r_mean, e_mean = RateModel.of(rates).rate_means(counts_of(counts))
    order = np.argsort(-mean, kind="stable")
    systems = system_counts(counts).iloc[order].reset_index(drop=True)
    systems = systems.assign(
        alpha_mean=mean[order],
        alpha_sd=sd[order],
        ci_low=low[order],
        ci_high=high[order],
        rho_mean=r_mean[order],
        eta_mean=e_mean[order],
    )
    # Quadrature sums can pass 1 (or 0) by a few ulps; a probability is shown in [0, 1].
    return systems, np.clip(p_better[np.ix_(order, order)], 0.0, 1.0)


def system_counts(counts: pd.DataFrame) -> pd.DataFrame:
    """Each system's counts as the systems tables name them: ``system``, ``n_outputs`` (from
    :func:`~.ratings.read_ratings`; for a bare counts table N_Φ + N_M, each output rated
    once), ``n_human`` (N_Φ), ``n_paired`` (N_ρη), ``n_metric`` (N_M)."""
    if "n_outputs" in counts.columns:
        outputs = counts["n_outputs"].to_numpy()
    else:
        outputs = (counts["n_phi"] + counts["n_m"]).to_numpy()
    return pd.DataFrame(
        {
            "system": counts["system"].to_numpy(),
            "n_outputs": outputs,
            "n_human": counts["n_phi"].to_numpy(),
            "n_paired": counts["n_rho_eta"].to_numpy(),
            "n_metric": counts["n_m"].to_numpy(),
        }
    )


def parse_options(
    rates: str | RateModel, gamma: float, level: float, adjust: str | Adjustment
) -> tuple[RateModel, Adjustment]:
    """The rate model and the adjustment that ``rates`` and ``adjust`` name (or are), once
    γ and the level are checked: the options of a comparison, parsed where they come in.

    Raises:
        SweepError: an option out of range (one line naming it).
    """
    model, adjustment = RateModel.of(rates), Adjustment.of(adjust)
    for name, value in (("gamma", gamma), ("level", level)):
        if not (isinstance(value, int | float) and 0.0 < float(value) < 1.0):
            raise SweepError(f"--{name}: {value!r} is not allowed; give a number in (0, 1)")
    return model, adjustment


def pair_table(
    systems: pd.DataFrame, p_better: np.ndarray, gamma: float, adjust: str | Adjustment
) -> pd.DataFrame:
    """Every pair of ``systems`` (ranked best first), ``a`` above ``b``, with its test.

    ``significant``: P(α_a > α_b) > 1 − γ/2; with an ``adjust`` that adjusts
    (:data:`HOLM`: Holm's step-down, family-wise error; :data:`BH`:
    Benjamini–Hochberg's step-up, false discovery rate) over all pairs on the
    two-sided posterior tail 2·min(P, 1 − P), ``p_adjusted`` ≤ γ. ``eps`` is
    z·√(sd_a² + sd_b²) at the level each pair's test is held to
    (:attr:`Adjustment.held_level`): z₁₋γ/₂ (the published ε_γ when both SDs are
    equal); under Holm z₁₋γ/(2m) for m pairs, the level at which Holm calls a
    pair significant whatever the others; under BH z₁₋γR/(2m) with R the pairs
    called significant (γ/m where none is), the level its step-up reached.
    """
    adjustment = Adjustment.of(adjust)
    s = len(systems)
    a, b = np.triu_indices(s, k=1)
    mean, sd = systems["alpha_mean"].to_numpy(), systems["alpha_sd"].to_numpy()
    p = p_better[a, b]
    pairs = pd.DataFrame(
        {
            "a": systems["system"].to_numpy()[a],
            "b": systems["system"].to_numpy()[b],
            "diff_mean": mean[a] - mean[b],
            "p_a_better": p,
            "significant": p > 1.0 - gamma / 2.0,
        }
    )
    level = gamma
    if adjustment.adjusts:
        tail = np.minimum(1.0, 2.0 * np.minimum(p, 1.0 - p))
        pairs["p_adjusted"], pairs["significant"], level = adjusted_tests(tail, gamma, adjustment)
    z = NormalDist().inv_cdf(1.0 - level / 2.0)
    pairs.insert(4, "eps", z * np.sqrt(sd[a] ** 2 + sd[b] ** 2))
    return pairs


def adjusted_tests(p_values: np.ndarray, gamma: float, adjust: str | Adjustment):
    """``adjust``'s adjusted ``p_values`` (Holm's, Benjamini–Hochberg's) over the pairs
    that can be tested (finite; the others NaN and not significant), whether each is ≤ γ,
    and the level a pair is held to (:attr:`Adjustment.held_level`: γ/m for Holm, m pairs
    tested; γ·R/m for BH, R called, at least 1)."""
    adjustment = Adjustment.of(adjust)
    tested = np.isfinite(p_values)
    out = np.full(len(p_values), np.nan)
    out[tested] = adjustment.adjusted(p_values[tested])
    significant = tested & (out <= gamma)
    level = adjustment.held_level(gamma, int(tested.sum()), int(significant.sum()))
    return out, significant, level


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values: max over j ≤ i of min(1, (m − j + 1)·p_(j)), in p's order."""
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg's adjusted p-values: min over j ≥ i of min(1, m·p_(j)/j), in p's
    order."""
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return adjusted


#: Each pair tested alone: held to γ, whatever the others.
NO_ADJUSTMENT = Adjustment(
    name="none",
    description="each pair tested alone at γ",
    adjusted=None,
    held_level=lambda gamma, tested, called: gamma,
)
#: Holm's step-down over all pairs: a pair is held to γ/m (m pairs tested), the level at
#: which Holm calls it significant whatever the others.
HOLM = Adjustment(
    name="holm",
    description="Holm's step-down over all pairs, controlling the family-wise error",
    adjusted=holm,
    held_level=lambda gamma, tested, called: gamma / max(tested, 1),
    label="Holm",
    title="Holm",
    controls="family-wise error",
    held_rule="γ/m",
)
#: Benjamini–Hochberg's step-up over all pairs: a pair is held to γ·R/m (R of m called,
#: at least 1), the level its step-up reached.
BH = Adjustment(
    name="bh",
    description="Benjamini–Hochberg's step-up over all pairs, controlling the false discovery rate",
    adjusted=benjamini_hochberg,
    held_level=lambda gamma, tested, called: gamma * max(called, 1) / max(tested, 1),
    label="BH",
    title="Benjamini–Hochberg",
    controls="false discovery rate",
    held_rule="γ·R/m",
)
#: The adjustments by the names ``--adjust`` takes (its choices), the default first.
ADJUSTMENTS = {a.name: a for a in (NO_ADJUSTMENT, HOLM, BH)}


def _own_rate_means(c: Counts) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means of ρ and η from each system's paired ratings (Beta(1, 1) priors)."""
    r = (c.n_tp + 1.0) / (c.n_pos_paired + 2.0)
    e = (c.n_tn + 1.0) / (c.n_neg_paired + 2.0)
    return np.asarray(r), np.asarray(e)


def _pooled_rate_means(c: Counts) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means of ρ and η from all systems' paired ratings pooled, for each system."""
    a_r, b_r, a_e, b_e = (float(v) for v in kc.pooled_rates(c))
    n = len(np.asarray(c.n_phi))
    return np.full(n, a_r / (a_r + b_r)), np.full(n, a_e / (a_e + b_e))


#: The paired counts from which ρ̂ and η̂ are estimated (hits and trials of each rate).
PAIRED_COUNTS = ("n_tp", "n_pos_paired", "n_tn", "n_neg_paired")


def _pooled_paired(c: Counts) -> Counts:
    """``c`` with every system's paired counts (:data:`PAIRED_COUNTS`) the sums over all."""
    return c._replace(
        **{f: jnp.full_like(getattr(c, f), jnp.sum(getattr(c, f))) for f in PAIRED_COUNTS}
    )


def _per_system(c: Counts, level: float, progress: Progress):
    """Moments and interval from the sweep's posterior, pair probabilities from the densities."""
    fits = fit_lanes(c, None, "quadrature", level=level).fits
    mean, sd = np.asarray(fits.post_mean), np.asarray(fits.post_sd)
    lo = np.clip(mean - WIDTH * sd, 0.0, 1.0)
    hi = np.clip(mean + WIDTH * sd, 0.0, 1.0)
    densities = _marginal_densities(c, lo, hi, progress)
    p = _p_matrix(densities, progress)
    return mean, sd, np.asarray(fits.ci_low), np.asarray(fits.ci_high), p


def _bucket(n: int) -> int:
    """Systems per compiled call: a power of two of at least 8, so few programs are compiled."""
    return max(8, 1 << max(0, int(n) - 1).bit_length())


def _padded(c: Counts, size: int) -> Counts:
    """``c`` with systems of no ratings appended up to ``size``: their Z_s is constant, so they
    change neither the shared joint nor any other system's numbers; their rows are dropped."""
    return jax.tree.map(
        lambda v: np.concatenate([np.asarray(v), np.zeros(size - len(v), np.asarray(v).dtype)]), c
    )


def _marginal_densities(
    c: Counts, lo: np.ndarray, hi: np.ndarray, progress: Progress
) -> kc.PanelDensity:
    """Each system's α-marginal on :data:`PANELS` × :data:`NODES` nodes over [lo, hi].

    Systems without metric ratings have a Beta marginal ("beta"), the others the
    full model's ("full"): two compiled programs, called on at most
    :data:`DENSITY_CHUNK` systems at a time, their rows put back in order.
    """
    beta = np.asarray(c.n_m) == 0
    fields: dict[str, np.ndarray] = {}
    progress.stage("α densities", len(lo))
    for kind, rows in (("beta", np.flatnonzero(beta)), ("full", np.flatnonzero(~beta))):
        size = min(_bucket(len(rows)), DENSITY_CHUNK)
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            sub = _padded(jax.tree.map(lambda v, r=chunk: np.asarray(v)[r], c), size)
            window = [
                np.concatenate([v[chunk], np.full(size - len(chunk), e)])
                for v, e in ((lo, 0.0), (hi, 1.0))
            ]
            part = _density_program(kind)(sub, *window)
            for name, value in part._asdict().items():
                value = np.asarray(value)[: len(chunk)]
                fields.setdefault(name, np.zeros((len(lo), *value.shape[1:])))[chunk] = value
            progress.update(len(chunk))
    return kc.PanelDensity(**fields)


@cache
def _density_program(kind: str) -> ExportedProgram:
    rule = QuadratureRule()

    def one(counts, lo, hi):
        hi = jnp.maximum(hi, lo + 1e-12)
        x = kc.panel_nodes(lo, hi, PANELS, NODES)
        return kc.panel_density(lo, hi, x, alpha_log_marginal(x, counts, kind, rule))

    return ExportedProgram(
        jax.jit(jax.vmap(one)), f"compare_density_{kind}", (kind, rule, PANELS, NODES)
    )


def common_rule(lo: np.ndarray, hi: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights ``(B, G)`` of the pairs' common rule, in B blocks of G nodes.

    It spans every density's window ([min lo, max hi]) in panels of
    :data:`GRID_NODES` nodes at most :data:`GRID_PANEL_SDS` times the smallest
    SD wide; the number of blocks is a power of two (few compiled shapes).
    """
    start, stop = float(np.min(lo)), float(np.max(hi))
    narrowest = max(float(np.min(sd)), 1e-12 * max(stop - start, 1e-12))
    panels = max(1, int(np.ceil((stop - start) / (GRID_PANEL_SDS * narrowest))))
    blocks = 1 << max(0, -(-panels // GRID_BLOCK) - 1).bit_length()
    x, w = kc.grid_rule(start, max(stop, start + 1e-12), blocks * GRID_BLOCK, GRID_NODES)
    return np.asarray(x).reshape(blocks, -1), np.asarray(w).reshape(blocks, -1)


_PAIR_MATRIX = ExportedProgram(jax.jit(kc.p_greater_matrix), "compare_pair_matrix")
_SHARED_MATRIX = ExportedProgram(jax.jit(kc.shared_p_greater), "compare_shared_matrix")
_SHARED_LIST = ExportedProgram(
    jax.jit(lambda c, r, e, lw, x, w, a, b: kc.shared_p_greater(c, r, e, lw, x, w, (a, b))),
    "compare_shared_list",
)


def _symmetric(p: np.ndarray) -> np.ndarray:
    """``(S, S)`` P(α_i > α_j) from the upper triangle of ``p``: the lower is 1 − P, the
    diagonal ½ (the computed lower triangle is the same up to the rule's error)."""
    s = len(p)
    a, b = np.triu_indices(s, k=1)
    upper = np.clip(p[a, b], 0.0, 1.0)
    out = np.full((s, s), 0.5)
    out[a, b], out[b, a] = upper, 1.0 - upper
    return out


def _p_matrix(densities: kc.PanelDensity, progress: Progress) -> np.ndarray:
    """``(S, S)`` P(α_i > α_j) of independent systems with α-densities ``densities``."""
    s = np.shape(densities.lo)[0]
    x, w = common_rule(densities.lo, densities.hi, densities.sd)
    padded = jax.tree.map(
        lambda v: np.concatenate([v, np.repeat(v[:1], _bucket(s) - s, axis=0)]), densities
    )
    progress.stage("pairs", 1)
    p = np.asarray(_PAIR_MATRIX(padded, x, w))[:s, :s]
    progress.update(1)
    return _symmetric(p)


def _shared_p(c: Counts, rule: kc.SharedRule, s: int, progress: Progress, only=None):
    """P(α_a > α_b) under the shared model: ``(S, S)``, or ``(P,)`` for ``only = (a, b)``.

    ``c`` and ``rule`` hold the S systems and padding after them; the common
    rule spans the S systems' conditional densities at every outer node. The
    nodes go in calls of :data:`NODE_CHUNK` (padded with nodes of weight 0).
    """
    d = rule.densities
    x, w = common_rule(*(np.asarray(v)[:, :s] for v in (d.lo, d.hi, d.sd)))
    k = len(np.asarray(rule.log_weight))
    nodes = NODE_CHUNK * -(-k // NODE_CHUNK)
    rho, eta, log_weight = (
        np.concatenate([np.asarray(v), np.full(nodes - k, fill)])
        for v, fill in ((rule.rho, 0.5), (rule.eta, 0.5), (rule.log_weight, -np.inf))
    )
    if only is not None:
        n, size = len(only[0]), _bucket(len(only[0]))
        a, b = (np.concatenate([v, np.zeros(size - n, int)]).astype(np.int32) for v in only)
        p = np.asarray(_SHARED_LIST(c, rho, eta, log_weight, x, w, a, b))[:n]
        return np.clip(p, 0.0, 1.0)
    total = 0.0
    progress.stage("pairs", nodes // NODE_CHUNK)
    for i in range(0, nodes, NODE_CHUNK):
        part = (v[i : i + NODE_CHUNK] for v in (rho, eta, log_weight))
        total = total + np.asarray(_SHARED_MATRIX(c, *part, x, w))
        progress.update(1)
    return _symmetric(total[:s, :s])


def _shared(c: Counts, level: float, progress: Progress):
    """The shared model's moments, intervals and pair probabilities, with a coarser rule's check.

    The coarser rule recomputes the moments, intervals and the pairs of systems
    adjacent in the ranking (the closest, where the rule matters most).
    """
    fine, rates_mean = _shared_summary(c, level, SHARED_NODES, progress)
    order = np.argsort(-fine[0], kind="stable")
    adjacent = (order[:-1], order[1:])
    coarse, _ = _shared_summary(c, level, SHARED_CHECK_NODES, progress, adjacent)
    moved = max(
        float(np.max(np.abs(f - g), initial=0.0)) for f, g in zip(fine[:4], coarse[:4], strict=True)
    )
    a, b = adjacent
    moved = max(moved, float(np.max(np.abs(fine[4][a, b] - coarse[4]), initial=0.0)))
    return (*fine, moved, rates_mean)


def _shared_summary(c: Counts, level: float, nodes: int, progress: Progress, only=None):
    """Moments, interval ends and pair probabilities from the ``nodes``² rule: ``(S, S)``, or
    for the pairs ``only = (a, b)`` alone, ``(P,)``; and the posterior means of ρ and η."""
    s = len(np.asarray(c.n_phi))
    progress.stage(f"(ρ, η) rule of {nodes}² nodes", 1)
    padded = _padded(c, _bucket(s))
    rule = _shared_program(nodes)(padded)
    progress.update(1)
    mean, sd, low, high = (np.asarray(v)[:s] for v in _SHARED_MARGINALS(rule, np.float64(level)))
    only = None if only is None else tuple(np.asarray(v) for v in only)
    weight = np.exp(np.asarray(rule.log_weight))
    rates_mean = (float(weight @ np.asarray(rule.rho)), float(weight @ np.asarray(rule.eta)))
    return (mean, sd, low, high, _shared_p(padded, rule, s, progress, only)), rates_mean


@cache
def _shared_program(nodes: int) -> ExportedProgram:
    return ExportedProgram(
        jax.jit(lambda c: kc.shared_outer_rule(c, nodes)), "compare_shared_rule", (nodes,)
    )


def _shared_marginals(rule: kc.SharedRule, level):
    """Each system's mean, SD and central interval under the mixture Σ_k W_k q_s(· | ρ_k, η_k)."""
    w = jnp.exp(rule.log_weight)
    d = rule.densities  # each field (K, S, ...)
    mean = w @ jnp.sum(d.mass * d.x, axis=(2, 3))
    second = w @ jnp.sum(d.mass * d.x**2, axis=(2, 3))
    sd = jnp.sqrt(jnp.maximum(second - mean**2, 0.0))
    tail = (1.0 - level) / 2.0

    def interval(ds: kc.PanelDensity):  # fields (K, ...) of one system
        cdf = lambda x: jnp.sum(w * jax.vmap(lambda dk: kc.density_cdf(dk, x))(ds))  # noqa: E731
        lo, hi = jnp.min(ds.lo), jnp.max(ds.hi)
        return kc.density_quantile(cdf, lo, hi, tail), kc.density_quantile(cdf, lo, hi, 1 - tail)

    low, high = jax.vmap(interval)(jax.tree.map(lambda v: jnp.swapaxes(v, 0, 1), d))
    return mean, sd, low, high


_SHARED_MARGINALS = ExportedProgram(jax.jit(_shared_marginals), "compare_shared_marginals")


#: How many SDs of the pooled paired ratings' Beta posterior the shared model's mean ρ
#: or η may lie from its mean before a warning says so.
PULLED_SDS = 4.0


def _rates_pulled(c: Counts, rates_mean: tuple[float, float]) -> list[str]:
    """A warning where the shared model's (ρ, η) lies far from what the paired ratings say.

    The joint posterior's (ρ, η) also answers to the metric-only ratings,
    through each α's uniform prior. With many metric-only ratings and few
    human ones per system, that pull can outweigh the paired ratings: then
    the shared rates rest on the prior of α, not on the calibration set.
    """
    a_r, b_r, a_e, b_e = (float(v) for v in kc.pooled_rates(c))
    out = []
    for name, value, a, b in (("ρ", rates_mean[0], a_r, b_r), ("η", rates_mean[1], a_e, b_e)):
        mean = a / (a + b)
        sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
        if abs(value - mean) > PULLED_SDS * sd:
            out.append(
                f"under shared rates the posterior mean of {name} is {value:.3f}, but the "
                f"paired ratings alone say {mean:.3f} ± {sd:.3f}: the metric-only ratings, "
                "through α's uniform prior, outweigh the calibration set; with few human "
                "ratings per system prefer --rates per-system"
            )
    return out


def _heterogeneity(counts: pd.DataFrame) -> list[str]:
    """Warnings where the systems' own paired ratings contradict one shared ρ or η.

    For each rate, a χ² test of homogeneity over the systems with paired items
    of that kind at 1 %. Where it rejects, the system farthest from the pooled
    rate of the rest is set aside and the test repeated, until the rest agree:
    the systems set aside are named.
    """
    out = []
    pos = counts["n_pos_paired"].to_numpy(float)
    neg = (counts["n_rho_eta"] - counts["n_pos_paired"]).to_numpy(float)
    names = counts["system"].to_numpy()
    for name, hits, n in (
        ("ρ", counts["n_tp"].to_numpy(float), pos),
        ("η", counts["n_tn"].to_numpy(float), neg),
    ):
        kept = list(np.flatnonzero(n > 0))
        first, odd = None, []
        while len(kept) >= 2:
            chi2, df, p_value, z = _homogeneity(hits[kept], n[kept])
            first = first or (chi2, df, p_value)
            if p_value >= 0.01:
                break
            worst = kept[int(np.argmax(np.abs(z)))]
            odd.append(
                f"{names[worst]} ({name} {hits[worst] / n[worst]:.2f} on {int(n[worst])} paired)"
            )
            kept.remove(worst)
        if odd:
            chi2, df, p_value = first
            pooled = hits[n > 0].sum() / n[n > 0].sum()
            out.append(
                f"the paired ratings contradict one shared {name} (χ² = {chi2:.1f}, df = {df}, "
                f"p = {p_value:.1e}; pooled {pooled:.2f}): {', '.join(odd)} differ from the rest; "
                "consider --rates per-system"
            )
    return out


def _homogeneity(hits: np.ndarray, n: np.ndarray) -> tuple[float, int, float, np.ndarray]:
    """χ², its degrees of freedom and p-value for equal rates, and each system's z against the
    pooled rate of the others."""
    pooled = hits.sum() / n.sum()
    if pooled <= 0.0 or pooled >= 1.0:
        return 0.0, len(n) - 1, 1.0, np.zeros(len(n))
    z_all = (hits / n - pooled) / np.sqrt(pooled * (1 - pooled) / n)
    chi2, df = float(np.sum(z_all**2)), len(n) - 1
    p_value = float(jax.scipy.special.gammaincc(df / 2.0, chi2 / 2.0))
    rest_hits, rest_n = hits.sum() - hits, n.sum() - n
    rest = np.clip(rest_hits / rest_n, 1e-12, 1 - 1e-12)
    z = (hits / n - rest) / np.sqrt(rest * (1 - rest) * (1 / n + 1 / rest_n))
    return chi2, df, p_value, z


# --- the rate models --------------------------------------------------------------------


def _per_system_posterior(counts: pd.DataFrame, level: float, progress: Progress):
    """:attr:`RateModel.posterior` of :data:`PER_SYSTEM`, with a warning for each system
    whose metric ratings have no paired ones to learn its rates from."""
    mean, sd, low, high, p = _per_system(counts_of(counts), level, progress)
    warnings = [
        f"system {name!r} has metric ratings but no paired ones: its ρ and η come "
        "from the uniform prior alone, so its metric ratings say little about α"
        for name in counts["system"][(counts["n_rho_eta"] == 0) & (counts["n_m"] > 0)]
    ]
    return (mean, sd, low, high), p, warnings


def _shared_posterior(counts: pd.DataFrame, level: float, progress: Progress):
    """:attr:`RateModel.posterior` of :data:`SHARED`, with warnings where the shared (ρ, η)
    is pulled from the paired ratings, where they contradict one (ρ, η), for systems
    without human ratings, and where the coarser rule's check moved a number."""
    c = counts_of(counts)
    mean, sd, low, high, p, checked, rates_mean = _shared(c, level, progress)
    warnings = _rates_pulled(c, rates_mean) + _heterogeneity(counts)
    for name in counts["system"][counts["n_phi"] == 0]:
        warnings.append(
            f"system {name!r} has no human ratings: its α rests on its metric ratings "
            "and the pooled (ρ, η) alone"
        )
    if checked > CHECK_TOLERANCE:
        warnings.append(
            f"the shared (ρ, η) rule moved a probability or moment by {checked:.1e} "
            "against a coarser rule: treat the last digits with care"
        )
    return (mean, sd, low, high), p, warnings


def _own_drawn_rates(a_r, b_r, a_e, b_e, systems):
    """NUTS's (ρ_s, η_s): one pair per system, from its own paired ratings' Betas."""
    import numpyro
    import numpyro.distributions as dist

    with systems:
        return (
            numpyro.sample("rho", dist.Beta(a_r, b_r)),
            numpyro.sample("eta", dist.Beta(a_e, b_e)),
        )


def _pooled_drawn_rates(a_r, b_r, a_e, b_e, systems):
    """NUTS's one (ρ, η) for all systems, from the pooled paired ratings' Betas."""
    import numpyro
    import numpyro.distributions as dist

    return (
        numpyro.sample("rho", dist.Beta(jnp.sum(a_r - 1) + 1, jnp.sum(b_r - 1) + 1)),
        numpyro.sample("eta", dist.Beta(jnp.sum(a_e - 1) + 1, jnp.sum(b_e - 1) + 1)),
    )


#: Each system its own ρ, η, learnt from its own paired ratings: the systems are
#: independent (per-system α densities, pair probabilities of independent densities).
PER_SYSTEM = RateModel(
    name="per-system",
    description="each system's metric rates ρ, η from its own paired ratings",
    posterior=_per_system_posterior,
    rate_means=_own_rate_means,
    estimated_rates=lambda c: c,
    drawn_rates=_own_drawn_rates,
    nuts_warnings=lambda counts: [],
)
#: One ρ, η for all systems, learnt from every system's paired ratings: the systems'
#: α are joined through (ρ, η) (an outer (ρ, η) rule, pair probabilities under it).
SHARED = RateModel(
    name="shared",
    description="one pair of metric rates ρ, η from all systems' paired ratings",
    posterior=_shared_posterior,
    rate_means=_pooled_rate_means,
    estimated_rates=_pooled_paired,
    drawn_rates=_pooled_drawn_rates,
    nuts_warnings=_heterogeneity,
)
#: The rate models by the names ``--rates`` takes (its choices), the default first.
RATE_MODELS = {m.name: m for m in (PER_SYSTEM, SHARED)}
