"""The classical estimators of θ = vᵀπ on K-class counts (MODEL.md, "Ratings with more than
two classes, and several judges", its table of classical estimators).

The binary estimators (:mod:`kernels.estimators`) on the categorical model's three sets of
items: **H**, the human-rated items (h, ``(K,)``); **L**, the paired items (T, ``(K, L)``),
each with a human class Y and a joint verdict l; **U**, the judge-only items (m, ``(L,)``).
A human class k stands for its value v_k; a joint verdict l for g(l), the mean of the
judges' values v_{l_j} (:meth:`Layout.judge_values`), or, judge by judge, for v_{l_j}.

- ``human_only``, ``judge_only``: the mean of v_Y over H, of g over U; SE = SD/√N with the
  population SD (ddof 0, the binary √(p(1 − p)/n)); normal interval clipped to
  [min v, max v], where θ lies.
- ``rogan_gladen``: confusion-matrix inversion, π̂ = (Ĉᵀ)⁻¹p̂, θ̂ = vᵀπ̂ clipped to
  [min v, max v], its delta-method SE (:func:`rogan_gladen`); normal interval, clipped.
- ``ppi``, ``ppi_pp``: ``ppi_py``'s (population variances, normal interval, unclipped) with
  Y → v_Y and f → g(l); with several judges PPI++ weighs each (:func:`ppi_pp`).

With K = 2 and one judge each is the binary estimator on :func:`binary_counts`, its numbers
mapped by θ = v₀ + (v₁ − v₀)α (the same bits for v = (0, 1)): Wilson intervals and Lee et
al.'s interval stay what they are.

Every function takes ``(B,)`` lanes of :class:`CategoricalCounts` (fields ``(B, K)``,
``(B, K, L)``, ``(B, L)``, ``(B, K, L)``, ``(B,)``), a static :class:`Layout` and the
interval's level, and returns a :class:`kernels.estimators.Estimate` of ``(B,)`` fields;
``jax.numpy`` throughout, the caller decides ``jit``/``vmap``. Use float64.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels import binary_estimators as binary
from binmetric_sweep.kernels import estimates
from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout, binary_counts
from binmetric_sweep.kernels.estimates import (
    FEW_PAIRED,
    NO_HUMAN,
    NO_METRIC,
    NO_PAIRED_SET,
    Estimate,
    masked_estimate,
    reason_code,
)
from binmetric_sweep.kernels.intervals import two_sided_z

Array = jax.Array

__all__ = [
    "SEVERAL_JUDGES",
    "NO_PAIRED_CLASS",
    "SINGULAR_CONFUSION",
    "MAX_CONDITION",
    "human_only",
    "judge_only",
    "rogan_gladen",
    "ppi",
    "ppi_pp",
    "ppi_pp_weights",
    "CATEGORICAL_FORMS",
]

#: Why an estimator does not apply to K-class counts beyond the binary reasons: the codes
#: :data:`kernels.estimators.SEVERAL_JUDGES`, ``NO_PAIRED_CLASS``, ``SINGULAR_CONFUSION``.
SEVERAL_JUDGES, NO_PAIRED_CLASS, SINGULAR_CONFUSION = (
    estimates.SEVERAL_JUDGES,
    estimates.NO_PAIRED_CLASS,
    estimates.SINGULAR_CONFUSION,
)

#: The largest 1-norm condition number of Ĉ that ``rogan_gladen`` inverts. Solving Ĉw = v
#: loses about log₁₀ κ of float64's 16 digits: at 10¹⁰ some 6 remain, far below any SE
#: the counts allow; an exactly singular Ĉ (two classes' rows alike, a class the judge never
#: tells apart) lands far above it, or at ∞. The threshold of debiasLLMReporting's
#: ``multiclass_rg_plugin`` warning.
MAX_CONDITION = 1e10


def _bounds(layout: Layout) -> tuple[float, float]:
    return float(min(layout.values)), float(max(layout.values))


def _on_binary(estimator, counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """The binary ``estimator`` on K = 2, J = 1 counts, its α mapped to θ = v₀ + (v₁ − v₀)α.

    The SE scales by |v₁ − v₀|; a decreasing map swaps the interval's ends. For v = (0, 1)
    the binary estimate itself (the same bits, −0.0 included).
    """
    est = estimator(binary_counts(counts), level)
    v0, v1 = (float(v) for v in layout.values)
    if (v0, v1) == (0.0, 1.0):
        return est
    d = v1 - v0
    low, high = (est.ci_low, est.ci_high) if d >= 0 else (est.ci_high, est.ci_low)
    return Estimate(v0 + d * est.value, abs(d) * est.se, v0 + d * low, v0 + d * high, est.reason)


def _route(estimator, general, counts, layout: Layout, level: float) -> Estimate:
    """K = 2 and one judge to the binary ``estimator``; every other layout to ``general``."""
    if layout.is_binary:
        return _on_binary(estimator, counts, layout, level)
    return general(counts, layout, level)


def _mean_and_variance(weights: Array, x: Array) -> tuple[Array, Array, Array]:
    """Count, mean and population variance of ``x`` (``(n,)``) over items weighted ``(B, n)``."""
    n = weights.sum(-1)
    safe = jnp.maximum(n, 1.0)
    mean = weights @ x / safe
    var = (weights * (x - mean[..., None]) ** 2).sum(-1) / safe
    return n, mean, var


def _mean_with_normal_interval(weights, x, level, reason, bounds) -> Estimate:
    n, mean, var = _mean_and_variance(weights, x)
    se = jnp.sqrt(var / jnp.maximum(n, 1.0))
    z = two_sided_z(level)
    low, high = bounds
    return masked_estimate(
        mean, se, jnp.clip(mean - z * se, low, high), jnp.clip(mean + z * se, low, high), reason
    )


def _verdict_values(layout: Layout) -> np.ndarray:
    """g(l), ``(L,)``: the mean of the judges' values in joint verdict l."""
    return layout.judge_values().mean(axis=1)


def _human_only(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """The K-class form of :func:`human_only`, for any layout (K = 2 included)."""
    v = np.asarray(layout.values, np.float64)
    reason = reason_code((counts.human.sum(-1) == 0, NO_HUMAN))
    return _mean_with_normal_interval(counts.human, v, level, reason, _bounds(layout))


def _judge_only(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """The K-class form of :func:`judge_only`, for any layout (K = 2 included)."""
    reason = reason_code((counts.judged.sum(-1) == 0, NO_METRIC))
    return _mean_with_normal_interval(
        counts.judged, _verdict_values(layout), level, reason, _bounds(layout)
    )


def _rogan_gladen(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """The K-class form of :func:`rogan_gladen`, for any layout (K = 2 included)."""
    k, z = layout.classes, two_sided_z(level)
    low, high = _bounds(layout)
    v = jnp.asarray(layout.values, jnp.float64)
    n_m = counts.judged.sum(-1)
    shape = jnp.shape(n_m)
    if layout.outcomes != k:  # several judges: Ĉ is K × K^J, there is no inverse
        nan = jnp.full(shape, jnp.nan, counts.judged.dtype)
        return Estimate(nan, nan, nan, nan, jnp.full(shape, SEVERAL_JUDGES, jnp.int8))
    known = jnp.asarray(counts.known, bool)
    rows = counts.paired.sum(-1)  # (B, K)
    estimated = counts.paired / jnp.maximum(rows, 1.0)[..., None]
    c_hat = jnp.where(known[..., None, None], counts.confusion, estimated)
    empty_row = ~known & jnp.any(rows == 0, axis=-1)
    usable = (n_m > 0) & ~empty_row
    # An identity where the lane is answered by a reason, so that no lane inverts garbage.
    c_safe = jnp.where(usable[..., None, None], c_hat, jnp.eye(k))
    inverse = jnp.linalg.inv(c_safe)
    condition = jnp.linalg.norm(c_safe, 1, axis=(-2, -1)) * jnp.linalg.norm(
        inverse, 1, axis=(-2, -1)
    )
    singular = ~(condition <= MAX_CONDITION)  # NaN (an inverse of inf) is singular too
    reason = reason_code(
        (n_m == 0, NO_METRIC), (empty_row, NO_PAIRED_CLASS), (singular, SINGULAR_CONFUSION)
    )

    p = counts.judged / jnp.maximum(n_m, 1.0)[..., None]  # (B, L)
    w = inverse @ v  # (B, L): Ĉw = v
    pi = jnp.einsum("...lk,...l->...k", inverse, p)  # (Ĉᵀ)⁻¹p̂ = (Ĉ⁻¹)ᵀp̂
    theta = (p * w).sum(-1)
    var_p = (p * (w - theta[..., None]) ** 2).sum(-1) / jnp.maximum(n_m, 1.0)
    row_means = (c_safe * w[..., None, :]).sum(-1)  # (B, K), v_k up to rounding
    row_vars = (c_safe * (w[..., None, :] - row_means[..., None]) ** 2).sum(-1)
    var_c = jnp.where(known, 0.0, (pi**2 * row_vars / jnp.maximum(rows, 1.0)).sum(-1))
    se = jnp.sqrt(var_p + var_c)
    value = jnp.clip(theta, low, high)
    return masked_estimate(
        value,
        se,
        jnp.clip(value - z * se, low, high),
        jnp.clip(value + z * se, low, high),
        reason,
    )


class _Paired(NamedTuple):
    """Labels on L and U for P predictions of each verdict, f (``(L, P)``), centred."""

    n: Array  # (B,) N_ρη
    y_mean: Array  # (B,) mean of v_Y on L
    y_centred: Array  # (B, K) v_k − mean_L(v_Y)
    f_mean: Array  # (B, P) mean of f on L
    f_centred: Array  # (B, L, P) f(l) − mean_L(f)
    cov: Array  # (B, P) Cov_L(f, v_Y), ddof 0
    n_m: Array  # (B,) N_M
    f_u_mean: Array  # (B, P) mean of f on U (0 where N_M = 0)
    u_centred: Array  # (B, L, P) f(l) − mean_U(f)


def _paired(counts: CategoricalCounts, layout: Layout, scores: np.ndarray) -> _Paired:
    v = jnp.asarray(layout.values, jnp.float64)
    f = jnp.asarray(scores, jnp.float64)
    t, m = counts.paired, counts.judged
    n, n_m = t.sum((-2, -1)), m.sum(-1)
    safe = jnp.maximum(n, 1.0)
    y_mean = t.sum(-1) @ v / safe
    f_mean = t.sum(-2) @ f / safe[..., None]
    y_centred = v - y_mean[..., None]
    f_centred = f - f_mean[..., None, :]
    cov = jnp.einsum("...kl,...k,...lp->...p", t, y_centred, f_centred) / safe[..., None]
    f_u_mean = m @ f / jnp.maximum(n_m, 1.0)[..., None]
    return _Paired(
        n, y_mean, y_centred, f_mean, f_centred, cov, n_m, f_u_mean, f - f_u_mean[..., None, :]
    )


def _ppi_with(counts, layout, level, scores, lam) -> Estimate:
    """mean_L(v_Y) + λᵀ(mean_U(f) − mean_L(f)) for predictions ``scores`` ``(L, P)`` and
    weights λ ``(B, P)``, SE √(Var_L(v_Y − λᵀf)/N_ρη + Var_U(λᵀf)/N_M) (population variances,
    as ``ppi_py``), normal interval. Where N_M = 0, λ is 0: the classical mean of v_Y on L."""
    z = two_sided_z(level)
    d = _paired(counts, layout, scores)
    has_u = d.n_m > 0
    lam = jnp.where(has_u[..., None], lam, 0.0)
    value = d.y_mean + (lam * (d.f_u_mean - d.f_mean)).sum(-1)
    # v_k − λᵀf(l), centred, on every cell (k, l) of T; λᵀf(l), centred, on every verdict of m.
    residual = d.y_centred[..., :, None] - (d.f_centred @ lam[..., None])[..., None, :, 0]
    var_l = (counts.paired * residual**2).sum((-2, -1)) / jnp.maximum(d.n, 1.0)
    var_u = (counts.judged * (d.u_centred @ lam[..., None])[..., 0] ** 2).sum(-1)
    var_u = jnp.where(has_u, var_u / jnp.maximum(d.n_m, 1.0) ** 2, 0.0)
    se = jnp.sqrt(var_l / jnp.maximum(d.n, 1.0) + var_u)
    reason = reason_code((jnp.asarray(counts.known, bool), NO_PAIRED_SET), (d.n < 2, FEW_PAIRED))
    return masked_estimate(value, se, value - z * se, value + z * se, reason)


def _ppi(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """The K-class form of :func:`ppi`, for any layout (K = 2 included)."""
    scores = _verdict_values(layout)[:, None]
    return _ppi_with(counts, layout, level, scores, jnp.ones(counts.judged.shape[:-1] + (1,)))


def _faces(judges: int) -> list[tuple[tuple[int, ...], bool]]:
    """The faces of {λ ≥ 0, Σλ ≤ 1} in J dimensions: the judges free on it (the others 0)
    and whether Σλ = 1 there; the vertex λ = 0 first, then the more judges free the earlier."""
    subsets = [s for r in range(judges, 0, -1) for s in itertools.combinations(range(judges), r)]
    return [((), False)] + [(s, full) for s in subsets for full in (False, True)]


def _constrained_weights(a: Array, c: Array) -> Array:
    """argmin λᵀaλ − 2cᵀλ over {λ ≥ 0, Σλ ≤ 1}, ``a`` ``(B, J, J)`` positive semi-definite,
    ``c`` ``(B, J)``: each face's stationary point (a pseudo-inverse where ``a`` is singular,
    the minimum-norm one), the least objective among those feasible; of ties (a singular
    ``a``: judges that always agree), the least ‖λ‖.

    Every face is one (J + 1)-square system, solved in one batch: [[a_SS, 1_S], [1_Sᵀ, 0]]
    [λ; μ] = [c_S; 1] where Σλ = 1 on it, λ_j = 0 (a diagonal s) off S, μ = 0 (a diagonal s)
    where Σλ < 1; s is a's largest entry, so that the padding does not set the scale of the
    pseudo-inverse's cut-off (relative to the largest singular value).
    """
    judges = c.shape[-1]
    faces = _faces(judges)
    free = np.zeros((len(faces), judges), bool)
    for i, (members, _) in enumerate(faces):
        free[i, list(members)] = True
    full = np.array([f for _, f in faces])
    both = free[:, :, None] & free[:, None, :]  # (F, J, J)
    top = jnp.abs(a).max((-2, -1))
    s = jnp.where(top > 0, top, 1.0)[..., None, None]  # (B, 1, 1)
    eye = np.eye(judges)
    block = (
        jnp.where(both, a[..., None, :, :], 0.0)
        + eye * np.where(free, 0.0, 1.0)[:, :, None] * s[..., None]
    )
    border = (free & full[:, None]).astype(np.float64)  # (F, J)
    corner = jnp.where(full, 0.0, 1.0) * s  # (B, 1, F) → (B, F) below
    system = jnp.concatenate(
        [
            jnp.concatenate(
                [block, jnp.broadcast_to(border[..., None], block.shape[:-1] + (1,))], -1
            ),
            jnp.concatenate(
                [jnp.broadcast_to(border, block.shape[:-2] + (judges,)), corner[..., 0, :, None]],
                -1,
            )[..., None, :],
        ],
        -2,
    )
    rhs = jnp.concatenate(
        [
            jnp.where(free, c[..., None, :], 0.0),
            jnp.broadcast_to(full.astype(np.float64)[:, None], block.shape[:-2] + (1,)),
        ],
        -1,
    )
    lam = jnp.einsum("...ij,...j->...i", jnp.linalg.pinv(system, hermitian=True), rhs)
    lam = lam[..., :judges]  # (B, F, J)
    feasible = jnp.all(lam >= -_FEASIBLE, -1) & (lam.sum(-1) <= 1.0 + _FEASIBLE)
    lam = jnp.clip(lam, 0.0, None)
    objective = jnp.einsum("...fi,...ij,...fj->...f", lam, a, lam) - 2.0 * (
        lam * c[..., None, :]
    ).sum(-1)
    objective = jnp.where(feasible, objective, jnp.inf)  # λ = 0 is always feasible
    scale = jnp.abs(a).sum((-2, -1)) + jnp.abs(c).sum(-1)
    least = objective <= objective.min(-1, keepdims=True) + _TIE * scale[..., None]
    best = jnp.argmin(jnp.where(least, (lam**2).sum(-1), jnp.inf), -1)
    return jnp.take_along_axis(lam, best[..., None, None], -2)[..., 0, :]


#: How far outside {λ ≥ 0, Σλ ≤ 1} a face's stationary point may fall by rounding alone.
_FEASIBLE = 1e-12
#: Objectives within this share of the problem's scale are ties (rounding in a singular ``a``).
_TIE = 1e-12


def ppi_pp_weights(counts: CategoricalCounts, layout: Layout) -> Array:
    """PPI++'s λ̂, ``(B, J)``, one weight per judge, its predictions f_j(l) = v_{l_j}.

    The variance of Σ_j λ_j mean_U(f_j) + mean_L(Y − λᵀf), with Σ_f the judges' covariance
    on L and on U alike, is (Var(Y) − 2λᵀCov(f, Y) + (1 + N_ρη/N_M)λᵀΣ_fλ)/N_ρη. λ̂ minimises
    it with Cov_L(f, Y) (ddof 0) and Σ_f over L ∪ U (ddof 1), as ``ppi_py`` estimates them,
    over λ ≥ 0 with Σ_j λ_j ≤ 1.

    One judge: ``ppi_py``'s λ̂ for a mean, Cov_L(Y, f)/((1 + N_ρη/N_M)·Var_{L∪U}(f))
    clipped to [0, 1] (0 where f is constant on L ∪ U). Several judges: where it lies in
    that set, the unconstrained minimum λ̂ = (1 + N_ρη/N_M)⁻¹ Σ̂_f⁺ Ĉov_L(f, Y) of
    multi-prediction PPI++ (GLIDE's ``MultiPPIMeanEstimator``, with ddof 1 throughout,
    unconstrained, and refusing a singular Σ̂_f); otherwise the least variance on its
    boundary. The set is ``ppi_py``'s [0, 1] for one judge, and makes J copies of one judge
    the judge itself (their weights share its one); unconstrained, a weight follows the noise
    of Ĉov along a direction in which Σ̂_f is small (two judges that mostly agree, or U's
    verdicts nearly all alike) to estimates far outside [min v, max v]. Σ̂_f⁺ is the
    pseudo-inverse: judges that always agree share their weight equally; a constant one
    gets 0.
    """
    scores = layout.judge_values()
    d = _paired(counts, layout, scores)
    f = jnp.asarray(scores, jnp.float64)
    pooled = counts.paired.sum(-2) + counts.judged  # (B, L): verdicts on L ∪ U
    total = pooled.sum(-1)
    centred = f - (pooled @ f / jnp.maximum(total, 1.0)[..., None])[..., None, :]  # (B, L, J)
    sigma = (
        jnp.einsum("...l,...lp,...lq->...pq", pooled, centred, centred)
        / jnp.maximum(total - 1.0, 1.0)[..., None, None]
    )
    shrink = 1.0 + d.n / jnp.maximum(counts.judged.sum(-1), 1.0)
    if layout.judges == 1:
        denominator = shrink * sigma[..., 0, 0]
        positive = denominator > 0
        lam = jnp.where(positive, d.cov[..., 0] / jnp.where(positive, denominator, 1.0), 0.0)
        return jnp.clip(lam, 0.0, 1.0)[..., None]
    return _constrained_weights(shrink[..., None, None] * sigma, d.cov)


def _ppi_pp(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """The K-class form of :func:`ppi_pp`, for any layout (K = 2 included)."""
    lam = ppi_pp_weights(counts, layout)
    return _ppi_with(counts, layout, level, layout.judge_values(), lam)


def human_only(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """The mean of v_Y over the human-rated items; SE = SD/√N_Φ (population SD), normal
    interval clipped to [min v, max v]; with K = 2, one judge, the binary ``human_only``
    (Wilson). Needs N_Φ > 0."""
    return _route(binary.human_only, _human_only, counts, layout, level)


def judge_only(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """The mean of g over the judge-only items (the judges' verdicts at face value, g(l) the
    mean of their values); SE = SD/√N_M, normal interval clipped to [min v, max v]; with
    K = 2, one judge, the binary ``judge_only`` (Wilson). Needs N_M > 0."""
    return _route(binary.judge_only, _judge_only, counts, layout, level)


def rogan_gladen(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """Confusion-matrix inversion (Rogan and Gladen 1978 for K classes; debiasLLMReporting's
    ``multiclass_rg_plugin`` without its smoothing).

    Ĉ_k = T_k/T_k· (the known C where given), p̂ = m/N_M, π̂ = (Ĉᵀ)⁻¹p̂ and θ̂ = vᵀπ̂ = wᵀp̂
    with w = Ĉ⁻¹v, the value each verdict stands for once corrected (Ĉ_kᵀw = v_k). The
    delta method, p̂ and the rows Ĉ_k independent multinomial shares given the row totals:
    dθ = wᵀ(dp − Σ_k π_k dC_k), so

        SE² = vᵀA(Σ_p + Σ_k π̂_k² Σ_Ck)Aᵀv = Var_p̂(w)/N_M + Σ_k π̂_k² Var_Ĉk(w)/T_k·

    (A = (Ĉᵀ)⁻¹, Aᵀv = w, Var_q(w) = Σ_l q_l (w_l − qᵀw)²); the second sum vanishes
    where C is known. θ̂ is clipped to [min v, max v] (as the binary α̂ to [0, 1]); π̂ is not
    moved onto the simplex, which would shift θ̂ even where it lies in range, and the SE is
    taken at π̂ as inverted. Interval θ̂ ± z·SE clipped to [min v, max v]. With K = 2, one
    judge, the binary ``rogan_gladen`` (Lee et al.'s interval).

    Needs one judge (L = K), N_M > 0, every row of T non-empty (unless C is known) and Ĉ
    invertible: 1-norm condition number at most :data:`MAX_CONDITION`.
    """
    return _route(binary.rogan_gladen, _rogan_gladen, counts, layout, level)


def ppi(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """Prediction-powered inference with λ = 1 (``ppi_py``), Y → v_Y, f → g(l) (with several
    judges, the mean of their values): mean_U(g) + mean_L(v_Y − g), normal interval. Needs a
    paired set of at least 2 items; with N_M = 0 the classical mean of v_Y on L."""
    return _route(binary.ppi, _ppi, counts, layout, level)


def ppi_pp(counts: CategoricalCounts, layout: Layout, level: float) -> Estimate:
    """PPI++ (Angelopoulos et al. 2024), Y → v_Y and each judge's verdict → its value:
    Σ_j λ̂_j mean_U(f_j) + mean_L(v_Y − Σ_j λ̂_j f_j), λ̂ from :func:`ppi_pp_weights` (one
    judge: ``ppi_py``'s), SE √(Var_L(v_Y − λ̂ᵀf)/N_ρη + Var_U(λ̂ᵀf)/N_M), normal interval.
    Needs a paired set of at least 2 items."""
    return _route(binary.ppi_pp, _ppi_pp, counts, layout, level)


#: The binary registry's names → their K-class forms, ``(counts, layout, level) -> Estimate``.
CATEGORICAL_FORMS: dict[str, Callable[[CategoricalCounts, Layout, float], Estimate]] = {
    "human_only": human_only,
    "judge_only": judge_only,
    "rogan_gladen": rogan_gladen,
    "ppi": ppi,
    "ppi_pp": ppi_pp,
}
