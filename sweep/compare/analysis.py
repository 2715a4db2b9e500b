"""Per-system counts → posteriors of α, and every pair's P(α_a > α_b), under either rate model.

::

    counts = read_ratings("examples/ratings.csv")       # one row per system
    result = compare_systems(counts, rates="shared")     # or "per-system"
    result.systems, result.pairs, result.settings, result.warnings

The numbers come from :mod:`binmetric_sweep.kernels.compare` (exact
quadrature) and, for each system's moments under per-system rates, from the
sweep's own posterior (:func:`binmetric_sweep.sweep.fits.fit_lanes`), so
that a system's row equals a sweep configuration's fit for the same counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from statistics import NormalDist
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from binmetric_sweep.kernels import compare as kc
from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.quadrature import QuadratureRule, alpha_log_marginal
from binmetric_sweep.sweep.compare.ratings import Reading
from binmetric_sweep.sweep.compile_cache import ExportedProgram
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.fits import fit_lanes

__all__ = ["RATES", "ADJUST", "Comparison", "compare_systems", "counts_of", "pair_table"]

RATES = ("per-system", "shared")
ADJUST = ("none", "holm")
Rates = Literal["per-system", "shared"]

#: α-densities for pairs: panels × nodes over the posterior mean ± WIDTH SDs.
PANELS, NODES, WIDTH = 16, 16, 12.0
#: The shared model's outer rule: nodes per (logit ρ, logit η) axis, and a coarser
#: rule it is checked against (a warning names what moved by more than CHECK_TOLERANCE).
SHARED_NODES, SHARED_CHECK_NODES, CHECK_TOLERANCE = 12, 8, 1e-4
#: Pairs per compiled call.
PAIR_CHUNK = 512


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


def compare_systems(
    counts: pd.DataFrame,
    *,
    rates: Rates = "per-system",
    gamma: float = 0.05,
    level: float = 0.95,
    adjust: Literal["none", "holm"] = "none",
) -> Comparison:
    """Posteriors of each system's α and P(α_a > α_b) for every pair, by exact quadrature.

    Args:
        counts: one row per system: ``system`` and the columns of
            :data:`binmetric_sweep.sweep.compare.ratings.COUNT_COLUMNS`.
        rates: "per-system" (each system its own ρ, η) or "shared" (one ρ, η).
        gamma: two-sided significance level of a pair's test.
        level: credible level of each system's central interval.
        adjust: "holm" to control the family-wise error over all pairs.

    An entry point: it switches JAX to float64 for this process, as
    :func:`binmetric_sweep.sweep.run` does.

    Raises:
        SweepError: an option out of range (one line naming it).
    """
    jax.config.update("jax_enable_x64", True)
    _check_options(rates, gamma, level, adjust)
    c = counts_of(counts)
    warnings: list[str] = []
    if rates == "per-system":
        mean, sd, low, high, p = _per_system(c, level)
        unpaired = counts["system"][(counts["n_rho_eta"] == 0) & (counts["n_m"] > 0)]
        for name in unpaired:
            warnings.append(
                f"system {name!r} has metric ratings but no paired ones: its ρ and η come "
                "from the uniform prior alone, so its metric ratings say little about α"
            )
    else:
        mean, sd, low, high, p, checked = _shared(c, level)
        warnings += _heterogeneity(counts)
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
    systems, p_sorted = ranked(counts, rates, (mean, sd, low, high), p)
    settings = {
        "rates": rates,
        "gamma": float(gamma),
        "level": float(level),
        "adjust": adjust,
        "method": "quadrature",
    }
    pairs = pair_table(systems, p_sorted, gamma, adjust)
    return Comparison(systems, pairs, settings, warnings, p_sorted)


def ranked(
    counts: pd.DataFrame, rates: str, posterior: tuple[np.ndarray, ...], p_better: np.ndarray
) -> tuple[pd.DataFrame, np.ndarray]:
    """The systems table, best first, and ``p_better`` in that order.

    ``posterior``: each system's α mean, SD and interval ends, in ``counts``' order;
    ``n_outputs`` comes from ``counts`` (:func:`~.ratings.read_ratings`), or is
    N_Φ + N_M for a bare counts table;
    ``rho_mean``, ``eta_mean`` are its paired ratings' Beta means, pooled under
    shared rates (:func:`rate_means`).
    """
    mean, sd, low, high = posterior
    r_mean, e_mean = rate_means(counts_of(counts), rates)
    order = np.argsort(-mean, kind="stable")
    if "n_outputs" in counts.columns:
        outputs = counts["n_outputs"].to_numpy()
    else:  # a counts table: each output rated once, by a human or by the metric alone
        outputs = (counts["n_phi"] + counts["n_m"]).to_numpy()
    systems = pd.DataFrame(
        {
            "system": counts["system"].to_numpy()[order],
            "n_outputs": outputs[order],
            "n_human": counts["n_phi"].to_numpy()[order],
            "n_paired": counts["n_rho_eta"].to_numpy()[order],
            "n_metric": counts["n_m"].to_numpy()[order],
            "alpha_mean": mean[order],
            "alpha_sd": sd[order],
            "ci_low": low[order],
            "ci_high": high[order],
            "rho_mean": r_mean[order],
            "eta_mean": e_mean[order],
        }
    )
    # Quadrature sums can pass 1 (or 0) by a few ulps; a probability is shown in [0, 1].
    return systems, np.clip(p_better[np.ix_(order, order)], 0.0, 1.0)


def _check_options(rates, gamma, level, adjust) -> None:
    if rates not in RATES:
        raise SweepError(f"--rates: {rates!r} is not a rate model; allowed: {', '.join(RATES)}")
    if adjust not in ADJUST:
        raise SweepError(f"--adjust: {adjust!r} is not allowed; allowed: {', '.join(ADJUST)}")
    for name, value in (("gamma", gamma), ("level", level)):
        if not (isinstance(value, int | float) and 0.0 < float(value) < 1.0):
            raise SweepError(f"--{name}: {value!r} is not allowed; give a number in (0, 1)")


def pair_table(
    systems: pd.DataFrame, p_better: np.ndarray, gamma: float, adjust: str
) -> pd.DataFrame:
    """Every pair of ``systems`` (ranked best first), ``a`` above ``b``, with its test.

    ``eps`` is z₁₋γ/₂·√(sd_a² + sd_b²), the published ε_γ when both SDs are
    equal. ``significant``: P(α_a > α_b) > 1 − γ/2, or with ``adjust`` "holm"
    Holm's step-down over all pairs on the two-sided posterior tail
    2·min(P, 1 − P) (``p_holm``, its adjusted value).
    """
    s = len(systems)
    a, b = np.triu_indices(s, k=1)
    mean, sd = systems["alpha_mean"].to_numpy(), systems["alpha_sd"].to_numpy()
    p = p_better[a, b]
    z = NormalDist().inv_cdf(1.0 - gamma / 2.0)
    pairs = pd.DataFrame(
        {
            "a": systems["system"].to_numpy()[a],
            "b": systems["system"].to_numpy()[b],
            "diff_mean": mean[a] - mean[b],
            "p_a_better": p,
            "eps": z * np.sqrt(sd[a] ** 2 + sd[b] ** 2),
            "significant": p > 1.0 - gamma / 2.0,
        }
    )
    if adjust == "holm":
        tail = np.minimum(1.0, 2.0 * np.minimum(p, 1.0 - p))
        pairs["p_holm"] = holm(tail)
        pairs["significant"] = pairs["p_holm"].to_numpy() <= gamma
    return pairs


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values: max over j ≤ i of min(1, (m − j + 1)·p_(j)), in p's order."""
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def rate_means(c: Counts, rates: str) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means of ρ and η from each system's paired ratings (Beta(1, 1) priors),
    or, under shared rates, from all systems' paired ratings pooled."""
    if rates == "shared":
        a_r, b_r, a_e, b_e = (float(v) for v in kc.pooled_rates(c))
        n = len(np.asarray(c.n_phi))
        return np.full(n, a_r / (a_r + b_r)), np.full(n, a_e / (a_e + b_e))
    r = (c.n_tp + 1.0) / (c.n_pos_paired + 2.0)
    e = (c.n_tn + 1.0) / (c.n_neg_paired + 2.0)
    return np.asarray(r), np.asarray(e)


def _per_system(c: Counts, level: float):
    """Moments and interval from the sweep's posterior, pair probabilities from the densities."""
    fits = fit_lanes(c, None, "quadrature", level=level)
    mean, sd = np.asarray(fits.post_mean), np.asarray(fits.post_sd)
    lo = np.clip(mean - WIDTH * sd, 0.0, 1.0)
    hi = np.clip(mean + WIDTH * sd, 0.0, 1.0)
    densities = _marginal_densities(c, lo, hi)
    return mean, sd, np.asarray(fits.ci_low), np.asarray(fits.ci_high), _p_matrix(densities)


def _bucket(n: int) -> int:
    """Systems per compiled call: a power of two of at least 8, so few programs are compiled."""
    return max(8, 1 << max(0, int(n) - 1).bit_length())


def _padded(c: Counts, size: int) -> Counts:
    """``c`` with systems of no ratings appended up to ``size``: their Z_s is constant, so they
    change neither the shared joint nor any other system's numbers; their rows are dropped."""
    return jax.tree.map(
        lambda v: np.concatenate([np.asarray(v), np.zeros(size - len(v), np.asarray(v).dtype)]), c
    )


def _marginal_densities(c: Counts, lo: np.ndarray, hi: np.ndarray) -> kc.PanelDensity:
    """Each system's α-marginal on :data:`PANELS` × :data:`NODES` nodes over [lo, hi].

    Systems without metric ratings have a Beta marginal ("beta"), the others the
    full model's ("full"): two compiled programs, their rows put back in order.
    """
    beta = np.asarray(c.n_m) == 0
    fields: dict[str, np.ndarray] = {}
    for kind, rows in (("beta", np.flatnonzero(beta)), ("full", np.flatnonzero(~beta))):
        if not len(rows):
            continue
        size = _bucket(len(rows))
        sub = _padded(jax.tree.map(lambda v, r=rows: np.asarray(v)[r], c), size)
        window = [
            np.concatenate([v[rows], np.full(size - len(rows), e)])
            for v, e in ((lo, 0.0), (hi, 1.0))
        ]
        part = _density_program(kind)(sub, *window)
        for name, value in part._asdict().items():
            value = np.asarray(value)[: len(rows)]
            fields.setdefault(name, np.zeros((len(lo), *value.shape[1:])))[rows] = value
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


def _pairs_in_chunks(program: ExportedProgram, data, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``program(data, a, b)`` over index pairs in calls of :data:`PAIR_CHUNK` (the last padded)."""
    out = []
    for i in range(0, len(a), PAIR_CHUNK):
        n = len(a[i : i + PAIR_CHUNK])
        out.append(np.asarray(program(data, _pad(a[i : i + n]), _pad(b[i : i + n])))[:n])
    return np.concatenate(out) if out else np.zeros(0)


def _pad(index: np.ndarray) -> np.ndarray:
    """``index`` padded with its first entry to :data:`PAIR_CHUNK` (one compiled shape)."""
    return np.concatenate([index, np.full(PAIR_CHUNK - len(index), index[0])]).astype(np.int32)


def _independent_pairs(densities: kc.PanelDensity, a, b):
    take = lambda i: jax.tree.map(lambda v: v[i], densities)  # noqa: E731
    return jax.vmap(kc.p_greater)(take(a), take(b))


_INDEPENDENT_PAIRS = ExportedProgram(jax.jit(_independent_pairs), "compare_pairs", (PAIR_CHUNK,))


def _p_matrix(densities: kc.PanelDensity) -> np.ndarray:
    """``(S, S)`` P(α_i > α_j) of independent systems (the diagonal ½)."""
    s = np.shape(densities.lo)[0]
    size = _bucket(s)
    padded = jax.tree.map(
        lambda v: np.concatenate([v, np.repeat(v[:1], size - s, axis=0)]), densities
    )
    a, b = np.triu_indices(s, k=1)
    p = _pairs_in_chunks(_INDEPENDENT_PAIRS, padded, a, b)
    out = np.full((s, s), 0.5)
    out[a, b], out[b, a] = p, 1.0 - p
    return out


def _shared(c: Counts, level: float):
    """The shared model's moments, intervals and pair probabilities, with a coarser rule's check.

    The coarser rule recomputes the moments, intervals and the pairs of systems
    adjacent in the ranking (the closest, where the rule matters most).
    """
    fine = _shared_summary(c, level, SHARED_NODES)
    order = np.argsort(-fine[0], kind="stable")
    adjacent = (order[:-1], order[1:])
    coarse = _shared_summary(c, level, SHARED_CHECK_NODES, adjacent)
    moved = max(
        float(np.max(np.abs(f - g), initial=0.0)) for f, g in zip(fine[:4], coarse[:4], strict=True)
    )
    a, b = adjacent
    moved = max(moved, float(np.max(np.abs(fine[4][a, b] - coarse[4][a, b]), initial=0.0)))
    return (*fine, moved)


def _shared_summary(c: Counts, level: float, nodes: int, only=None):
    """Moments, interval ends and ``(S, S)`` pair probabilities from the ``nodes``² rule
    (only the pairs ``only = (a, b)`` if given; the others ½)."""
    s = len(np.asarray(c.n_phi))
    rule = _shared_program(nodes)(_padded(c, _bucket(s)))
    mean, sd, low, high = (np.asarray(v)[:s] for v in _SHARED_MARGINALS(rule, np.float64(level)))
    a, b = np.triu_indices(s, k=1) if only is None else only
    p = np.full((s, s), 0.5)
    if len(a):
        vals = _pairs_in_chunks(_SHARED_PAIRS, rule, np.asarray(a), np.asarray(b))
        p[a, b], p[b, a] = vals, 1.0 - vals
    return mean, sd, low, high, p


@cache
def _shared_program(nodes: int) -> ExportedProgram:
    return ExportedProgram(
        jax.jit(lambda c: kc.shared_outer_rule(c, nodes)), "compare_shared_rule", (nodes,)
    )


def _shared_pairs(rule: kc.SharedRule, a, b):
    w = jnp.exp(rule.log_weight)

    def pair(i, j):
        per_node = jax.vmap(
            lambda d: kc.p_greater(jax.tree.map(lambda v: v[i], d), jax.tree.map(lambda v: v[j], d))
        )(rule.densities)
        return jnp.sum(w * per_node)

    return jax.vmap(pair)(a, b)


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


_SHARED_PAIRS = ExportedProgram(jax.jit(_shared_pairs), "compare_shared_pairs", (PAIR_CHUNK,))
_SHARED_MARGINALS = ExportedProgram(jax.jit(_shared_marginals), "compare_shared_marginals")


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
