"""Observed counts of a simulated evaluation campaign.

A *design* is one configuration of the model (α, ρ, η and the three sample
sizes); its *counts* are what a campaign run under it observes. Counts are made
either as rounded expected values (the published tables) or as binomial draws,
one set per replicate. See ``docs/model.md`` for the model.

Every function here works on one lane (scalars); callers ``jax.vmap`` over
lanes. Counts are carried as floating-point numbers so that they enter the
log-density without casts; they are exact integers up to 2**53 in float64.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

Array = jax.Array

__all__ = [
    "Design",
    "Counts",
    "round_half_up",
    "expected_counts",
    "replicate_key",
    "draw_counts",
]


class Design(NamedTuple):
    """One configuration of the model (each field a scalar or a ``(B,)`` array).

    Attributes:
        alpha: true success rate α of the system, in [0, 1].
        rho: metric true-positive rate ρ, in [0, 1].
        eta: metric true-negative rate η, in [0, 1].
        n_phi: number of human-rated outputs N_Φ (integer-valued float).
        n_rho_eta: number of paired outputs N_ρη; ignored when ``shared_paired``
            (then N_ρη = N_Φ) or ``rho_eta_known``.
        psi: share of adequate outputs among separately paired ones, in [0, 1].
        n_m: number of metric-only outputs N_M.
        shared_paired: the human-rated outputs are the paired ones (P = n₊).
        rho_eta_known: ρ and η are known numbers, not estimated.
    """

    alpha: Array
    rho: Array
    eta: Array
    n_phi: Array
    n_rho_eta: Array
    psi: Array
    n_m: Array
    shared_paired: Array
    rho_eta_known: Array


class Counts(NamedTuple):
    """What one campaign observes (each field a scalar or a ``(B,)`` array).

    Attributes:
        n_pos: human ratings saying adequate, n₊, out of ``n_phi``.
        n_phi: human-rated outputs N_Φ.
        n_tp: paired items rated 1 by human and metric, n_ρ, out of ``n_pos_paired``.
        n_pos_paired: paired items the human calls adequate, P.
        n_tn: paired items rated 0 by human and metric, n_η, out of ``n_neg_paired``.
        n_neg_paired: paired items the human calls inadequate, N_ρη − P.
        m_pos: metric-only ratings saying adequate, m₊, out of ``n_m``.
        n_m: metric-only outputs N_M.
        rho: the known ρ when ``rho_eta_known``; otherwise unused.
        eta: the known η when ``rho_eta_known``; otherwise unused.
        rho_eta_known: whether ρ and η are known numbers.
    """

    n_pos: Array
    n_phi: Array
    n_tp: Array
    n_pos_paired: Array
    n_tn: Array
    n_neg_paired: Array
    m_pos: Array
    n_m: Array
    rho: Array
    eta: Array
    rho_eta_known: Array


def round_half_up(x: Array) -> Array:
    """⌊x + ½⌋, tolerant of the representation error of decimal halves.

    ``0.35 * 10`` is 3.4999999999999996 in binary floating point; the published
    tables mean 3.5, which rounds up. A relative slack of 1e-12, far above the
    rounding error of a product of three numbers and far below any count's
    resolution (1/N ≥ 1e-7), keeps such values on the intended side.
    """
    x = jnp.asarray(x)
    return jnp.floor(x + 0.5 + 1e-12 * jnp.maximum(1.0, jnp.abs(x)))


def _paired_sizes(design: Design, n_pos: Array, paired_pos: Array) -> tuple[Array, Array]:
    """(P, N_ρη − P): the paired positives and negatives, zero when ρ, η are known."""
    n_paired = jnp.where(design.shared_paired, design.n_phi, design.n_rho_eta)
    pos = jnp.where(design.shared_paired, n_pos, paired_pos)
    pos = jnp.where(design.rho_eta_known, 0.0, pos)
    neg = jnp.where(design.rho_eta_known, 0.0, n_paired - pos)
    return pos, neg


def _metric_rate(design: Design) -> Array:
    """p = α·ρ + (1 − α)·(1 − η), the probability that the metric says 1."""
    return design.alpha * design.rho + (1.0 - design.alpha) * (1.0 - design.eta)


def _as_float(design: Design) -> Design:
    dtype = jnp.result_type(float)
    return design._replace(
        **{
            name: jnp.asarray(getattr(design, name), dtype)
            for name in ("alpha", "rho", "eta", "n_phi", "n_rho_eta", "psi", "n_m")
        },
        shared_paired=jnp.asarray(design.shared_paired, bool),
        rho_eta_known=jnp.asarray(design.rho_eta_known, bool),
    )


def _counts(design: Design, n_pos, pos, neg, n_tp, n_tn, m_pos) -> Counts:
    known = design.rho_eta_known
    return Counts(
        n_pos=n_pos,
        n_phi=design.n_phi,
        n_tp=jnp.where(known, 0.0, n_tp),
        n_pos_paired=pos,
        n_tn=jnp.where(known, 0.0, n_tn),
        n_neg_paired=neg,
        m_pos=m_pos,
        n_m=design.n_m,
        rho=design.rho,
        eta=design.eta,
        rho_eta_known=known,
    )


def expected_counts(design: Design) -> Counts:
    """Every count at its expected value, rounded half up (the published method)."""
    design = _as_float(design)
    n_pos = round_half_up(design.alpha * design.n_phi)
    pos, neg = _paired_sizes(design, n_pos, round_half_up(design.psi * design.n_rho_eta))
    n_tp = round_half_up(design.rho * pos)
    n_tn = round_half_up(design.eta * neg)
    m_pos = round_half_up(_metric_rate(design) * design.n_m)
    return _counts(design, n_pos, pos, neg, n_tp, n_tn, m_pos)


def replicate_key(seed_key: Array, config_id: Array, replicate: Array) -> Array:
    """The key of one (configuration, replicate): independent of any batch.

    Args:
        seed_key: the sweep's key, ``jax.random.key(seed)``.
        config_id: ``(2,)`` uint32, the two 32-bit words of the configuration's
            64-bit identifier (a hash of its parameter values).
        replicate: replicate index, a non-negative integer.

    Returns:
        A key derived only from (seed, configuration, replicate), so a lane's
        randomness never depends on its position in a batch or shard.
    """
    config_id = jnp.asarray(config_id, jnp.uint32)
    key = jax.random.fold_in(seed_key, config_id[0])
    key = jax.random.fold_in(key, config_id[1])
    return jax.random.fold_in(key, jnp.asarray(replicate, jnp.uint32))


def draw_counts(key: Array, design: Design) -> Counts:
    """Fresh binomial counts of one replicate (the sampled method).

    n₊ ~ Bin(N_Φ, α); P = n₊ for a shared paired set, else P ~ Bin(N_ρη, ψ);
    n_ρ ~ Bin(P, ρ); n_η ~ Bin(N_ρη − P, η); m₊ ~ Bin(N_M, αρ + (1 − α)(1 − η)).

    Args:
        key: the replicate's key (see :func:`replicate_key`); the counts use
            ``fold_in(key, 0)`` so that other consumers can take other tags.
        design: one configuration (scalars).
    """
    design = _as_float(design)
    k_pos, k_paired, k_tp, k_tn, k_metric = jax.random.split(jax.random.fold_in(key, 0), 5)
    dtype = design.alpha.dtype

    def binomial(k, n, p):
        # Clipping keeps p in [0, 1] against representation error of 1 − η etc.
        return jax.random.binomial(k, n, jnp.clip(p, 0.0, 1.0), dtype=dtype)

    n_pos = binomial(k_pos, design.n_phi, design.alpha)
    pos, neg = _paired_sizes(design, n_pos, binomial(k_paired, design.n_rho_eta, design.psi))
    n_tp = binomial(k_tp, pos, design.rho)
    n_tn = binomial(k_tn, neg, design.eta)
    m_pos = binomial(k_metric, design.n_m, _metric_rate(design))
    return _counts(design, n_pos, pos, neg, n_tp, n_tn, m_pos)
