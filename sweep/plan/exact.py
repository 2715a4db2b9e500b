"""Exact ε at integer sizes (:func:`exact_eps`): rounded expected counts and the
quadrature, as the surfaces compute it; the lanes' designs (:func:`scenario_designs`);
and a memo of the values one planning call has computed (:class:`EpsMemo`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from binmetric_sweep.kernels.counts import Design
from binmetric_sweep.kernels.paired import kinds_of_flags
from binmetric_sweep.kernels.quadrature import QuadratureRule
from binmetric_sweep.kernels.summaries import epsilon
from binmetric_sweep.sweep.plan.spec import Problems

__all__ = ["EpsMemo", "exact_eps", "scenario_designs"]


def scenario_designs(p: Problems, index, n_phi, n_m, alpha=None) -> Design:
    """``(K,)`` designs of lanes (:func:`sweep.spec.lanes.lane_designs`): each lane scenario
    ``index``'s rates and paired design, at its sizes and at ``alpha`` if given.

    Args:
        p: ``(S,)`` scenarios.
        index: ``(K,)`` scenario of each lane.
        n_phi, n_m: ``(K,)`` sizes.
        alpha: ``(K,)`` α of each lane (default: its scenario's); a separate paired set's
            share ψ of adequate items is the lane's α.
    """
    from binmetric_sweep.sweep.spec.lanes import lane_designs

    index = np.asarray(index, int)
    return lane_designs(
        p.alpha[index] if alpha is None else alpha,
        p.rho[index],
        p.eta[index],
        n_phi,
        n_m,
        paired=kinds_of_flags(p.shared[index], p.known[index]),
        n_rho_eta=p.n_pair[index],
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
    from binmetric_sweep.sweep.execution.fits import fit_lanes
    from binmetric_sweep.sweep.execution.schedule import bucket, schedule_for
    from binmetric_sweep.sweep.spec.lanes import lane_counts, lane_keys, require_float64
    from binmetric_sweep.sweep.spec.rating_model import BINARY

    require_float64()
    index = np.asarray(index, int)
    n_phi, n_m = np.asarray(n_phi), np.asarray(n_m)
    k = len(index)
    if k == 0:
        return np.zeros(0)
    keys = lane_keys(0, np.zeros((k, 2), np.uint32), np.zeros(k, np.uint32))  # unused
    counts = lane_counts(scenario_designs(p, index, n_phi, n_m), keys, "expected", BINARY)
    schedule = schedule_for(chunk_size=chunk_size)
    fits = fit_lanes(counts, keys, "quadrature", nested=rule, schedule=schedule).fits
    # Eagerly run jax.numpy operations compile once per shape: padded to a few bucket
    # sizes (by repeating the first lane), a planning call's rounds, whose lane counts
    # all differ, do not compile anew every round.
    padded = np.concatenate([np.arange(k), np.zeros(bucket(k) - k, int)])
    sd = np.asarray(fits.post_sd)[padded]
    eps = np.asarray(epsilon(sd, p.gamma[index[padded]], p.power[index[padded]]))[:k]
    eps = np.where(np.isfinite(eps), eps, np.inf)
    return np.where((n_phi == 0) & (n_m == 0), 1.0, eps)


class EpsMemo(NamedTuple):
    """Exact ε already computed, by (scenario, N_Φ, N_M); shared by every stage of one
    planning call (:func:`sweep.plan.plan_grid`).

    Attributes:
        p: the call's ``(S,)`` scenarios.
        chunk_size: lanes per compiled call (:func:`exact_eps`).
        values: ε by (scenario, N_Φ, N_M), filled by :meth:`eps`. A memo of the same
            scenarios in another mode (``p.by_target``) may share it: ε does not depend
            on the mode.
    """

    p: Problems
    chunk_size: int | None
    values: dict

    def eps(self, index, n_phi, n_m) -> np.ndarray:
        """``(K,)`` :func:`exact_eps` of the lanes, computing only those not yet in the memo."""
        keys = [(int(i), int(x), int(y)) for i, x, y in zip(index, n_phi, n_m, strict=True)]
        todo = sorted({key for key in keys if key not in self.values})
        if todo:
            i, x, y = (np.array(v, np.int64) for v in zip(*todo, strict=True))
            values = exact_eps(self.p, i, x, y, chunk_size=self.chunk_size)
            self.values.update(zip(todo, values.tolist(), strict=True))
        return np.array([self.values[key] for key in keys], float)
