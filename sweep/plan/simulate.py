"""The simulation check (:func:`simulate_tests`): empirical power and type-I rate of the
two-sided z-test at planned sizes, with sampled counts and quadrature posteriors."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from binmetric_sweep.kernels.estimators import POSTERIOR, Estimator
from binmetric_sweep.sweep.plan.exact import scenario_designs
from binmetric_sweep.sweep.plan.spec import PlanSpec, problems

__all__ = ["simulate_tests"]


def _words(spec: PlanSpec, role: str) -> np.ndarray:
    """Two uint32 words naming (scenario, system) for :func:`sweep.spec.lanes.lane_keys`."""
    text = f"plan|{spec.model_dump_json()}|{role}"
    value = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return np.array([value & 0xFFFFFFFF, value >> 32], np.uint32)


def simulate_tests(
    specs: Sequence[PlanSpec],
    n_phi,
    n_m,
    eps,
    replicates: int,
    seed: int = 0,
    *,
    chunk_size: int | None = None,
    estimator: Estimator = POSTERIOR,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Empirical power and type-I rate of the two-sided z-test at the planned sizes.

    For each scenario, R campaigns each of three systems at the same sizes:
    α, α + ε (α − ε where α + ε > 1) and a second one at α; sampled counts
    (:func:`kernels.counts.draw_counts`, each lane keyed by scenario, system
    and replicate), quadrature posteriors (or, with an ``estimator`` other than
    the posterior, its estimates and SEs on the same counts); z = (m₁ − m₂)/√(s₁² +
    s₂²) rejects when |z| > z₁₋γ/₂. Power: α vs α ± ε; type I: α vs α.

    Args:
        specs: S scenarios.
        n_phi, n_m: ``(S,)`` planned sizes.
        eps: ``(S,)`` the difference to detect.
        replicates: R ≥ 1.
        seed: the simulation's seed.
        chunk_size: lanes per compiled call (default 64 on CPU, 1024 elsewhere).

    Returns:
        ``(S,)`` power, its MCSE, type-I rate, its MCSE (finite fits only).
    """
    from binmetric_sweep.sweep.execution.fits import fit_lanes
    from binmetric_sweep.sweep.execution.schedule import schedule_for
    from binmetric_sweep.sweep.spec.lanes import lane_counts, lane_keys, require_float64
    from binmetric_sweep.sweep.spec.rating_model import BINARY

    require_float64()
    s, r = len(specs), int(replicates)
    p = problems(specs)
    alpha = p.alpha
    eps = np.asarray(eps, float)
    shifted = np.where(alpha + eps <= 1.0, alpha + eps, alpha - eps)
    rates = np.stack([alpha, shifted, alpha], 1)  # (S, 3)
    roles = ("base", "shifted", "null")
    words = np.stack([[_words(spec, role) for role in roles] for spec in specs])  # (S, 3, 2)
    index = np.repeat(np.arange(s), 3 * r)
    lane_alpha = np.repeat(rates.reshape(-1), r)
    lane_words = np.repeat(words.reshape(-1, 2), r, axis=0)
    replicate = np.tile(np.arange(r), 3 * s)
    keys = lane_keys(seed, lane_words, replicate)
    n_phi, n_m = np.asarray(n_phi)[index], np.asarray(n_m)[index]
    designs = scenario_designs(p, index, n_phi, n_m, lane_alpha)
    counts = lane_counts(designs, keys, "sampled", BINARY)
    if estimator.posterior:
        schedule = schedule_for(chunk_size=chunk_size)
        fits = fit_lanes(counts, keys, "quadrature", schedule=schedule).fits
        mean, sd = np.asarray(fits.post_mean), np.asarray(fits.post_sd)
    else:
        found = estimator.estimate(counts, 0.95)
        mean, sd = np.asarray(found.value), np.asarray(found.se)
    mean, sd = mean.reshape(s, 3, r), sd.reshape(s, 3, r)
    crit = np.array([NormalDist().inv_cdf(1.0 - 0.5 * spec.gamma) for spec in specs])[:, None]

    def rate(other: int):
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (mean[:, 0] - mean[:, other]) / np.sqrt(sd[:, 0] ** 2 + sd[:, other] ** 2)
        finite = np.isfinite(z)
        n = np.maximum(finite.sum(1), 1)
        share = np.sum(finite & (np.abs(z) > crit), 1) / n
        return share, np.sqrt(share * (1.0 - share) / n)

    power, power_se = rate(1)
    type1, type1_se = rate(2)
    return power, power_se, type1, type1_se
