"""Exact ε at integer sizes (:func:`exact_eps`): rounded expected counts and the
quadrature, as the surfaces compute it; a memo of the values one planning call has
computed; and the lane padding that the simulation shares."""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from binmetric_sweep.kernels.counts import Design
from binmetric_sweep.kernels.quadrature import QuadratureRule
from binmetric_sweep.kernels.summaries import epsilon
from binmetric_sweep.sweep.plan.spec import Problems


def _designs(p: Problems, index, n_phi, n_m, alpha=None) -> Design:
    """``(K,)`` designs of lanes (scenario ``index``, sizes), at ``alpha`` if given."""
    index = np.asarray(index, int)
    a = p.alpha[index] if alpha is None else np.asarray(alpha, float)
    return Design(
        alpha=a,
        rho=p.rho[index],
        eta=p.eta[index],
        n_phi=np.asarray(n_phi, float),
        n_rho_eta=p.n_pair[index],
        psi=a,
        n_m=np.asarray(n_m, float),
        shared_paired=p.shared[index],
        rho_eta_known=p.known[index],
    )


def exact_eps(
    p: Problems,
    index,
    n_phi,
    n_m,
    *,
    chunk_size: int | None = None,
    rule: QuadratureRule = QuadratureRule(),
) -> np.ndarray:
    """ε_{γ,β} at integer sizes: rounded expected counts, exact quadrature, as the surface does.

    Args:
        p: ``(S,)`` scenarios.
        index: ``(K,)`` scenario of each lane.
        n_phi: ``(K,)`` integer N_Φ.
        n_m: ``(K,)`` integer N_M.
        chunk_size: lanes per compiled call (default 64 on CPU, 1024 elsewhere).
        rule: quadrature rule.

    Returns:
        ``(K,)`` √2·σ·(z₁₋γ/₂ + z_power); 1 where N_Φ = N_M = 0 (no evidence,
        the surfaces' convention); +inf where the fit is not finite.
    """
    from binmetric_sweep.sweep.fits import fit_lanes
    from binmetric_sweep.sweep.lanes import lane_counts, lane_keys, require_float64
    from binmetric_sweep.sweep.schedule import schedule_for

    require_float64()
    index = np.asarray(index, int)
    k = len(index)
    if k == 0:
        return np.zeros(0)
    size = _lane_bucket(k)
    index, n_phi, n_m = (_pad(np.asarray(v), size) for v in (index, n_phi, n_m))
    keys = lane_keys(0, np.zeros((size, 2), np.uint32), np.zeros(size, np.uint32))  # unused
    counts = _first(lane_counts(_designs(p, index, n_phi, n_m), keys, "expected"), k)
    schedule = schedule_for(chunk_size=chunk_size)
    fits = fit_lanes(counts, keys[:k], "quadrature", nested=rule, schedule=schedule).fits
    sd = _pad(np.asarray(fits.post_sd), size)
    eps = np.asarray(epsilon(sd, p.gamma[index], p.power[index]))[:k]
    eps = np.where(np.isfinite(eps), eps, np.inf)
    return np.where((n_phi[:k] == 0) & (n_m[:k] == 0), 1.0, eps)


def _lane_bucket(k: int) -> int:
    """Lanes a batch of k is padded to before the JAX steps that compile per shape:
    powers of two of at least 64 keep the compiled shapes few (tuning constants:
    docs/performance.md)."""
    return max(64, 1 << (max(k, 1) - 1).bit_length())


def _pad(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` along axis 0, padded to ``size`` by repeating its first row.

    Eagerly run jax.numpy operations compile once per shape; padding to a few bucket
    sizes keeps a planning call's rounds, whose lane counts all differ, from compiling
    anew every round.
    """
    return np.concatenate([values, np.repeat(values[:1], size - len(values), axis=0)])


def _first(tree, k: int):
    return jax.tree.map(lambda v: np.asarray(v)[:k], tree)


class _Memo(NamedTuple):
    """Exact ε already computed, by (scenario, N_Φ, N_M); shared by every stage of one call."""

    p: Problems
    chunk_size: int | None
    values: dict


def _memo_eps(memo: _Memo, index, n_phi, n_m) -> np.ndarray:
    """:func:`exact_eps` of the lanes, computing only those not yet in ``memo``."""
    keys = [(int(i), int(x), int(y)) for i, x, y in zip(index, n_phi, n_m, strict=True)]
    todo = sorted({key for key in keys if key not in memo.values})
    if todo:
        i, x, y = (np.array(v, np.int64) for v in zip(*todo, strict=True))
        values = exact_eps(memo.p, i, x, y, chunk_size=memo.chunk_size)
        memo.values.update(zip(todo, values.tolist(), strict=True))
    return np.array([memo.values[key] for key in keys], float)
