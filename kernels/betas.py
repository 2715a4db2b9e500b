"""Beta kernels and moments: the posteriors of α, ρ and η that place every quadrature rule.

Each of α, ρ and η has a Beta posterior from its own ratings (docs/model.md);
the rules place their nodes from these Betas' moments and kernels, in
probability or logit coordinates. One lane (scalars); use float64.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import xlogy

from binmetric_sweep.kernels.counts import Counts

Array = jax.Array

__all__ = [
    "alpha_given_rate",
    "beta_from_moments",
    "beta_moments",
    "log_beta_kernel",
    "log_beta_slope",
    "logit_beta_kernel",
    "paired_betas",
    "paired_moments",
]


def beta_moments(a: Array, b: Array) -> tuple[Array, Array]:
    total = a + b
    return a / total, jnp.sqrt(a * b / (total * total * (total + 1.0)))


def log_beta_kernel(v, one_minus_v, a, b):
    return xlogy(a - 1.0, v) + xlogy(b - 1.0, one_minus_v)


def log_beta_slope(v, one_minus_v, a, b):
    """First and second derivatives in v of (a − 1)·log v + (b − 1)·log(1 − v)."""
    up = jnp.where(a > 1.0, (a - 1.0) / v, 0.0)
    down = jnp.where(b > 1.0, (b - 1.0) / one_minus_v, 0.0)
    return up - down, -up / v - down / one_minus_v


def logit_beta_kernel(a, b):
    """log of x^a (1 − x)^b as a function of u = logit(x), with its mode and scale.

    This is a Beta(a, b) kernel with the logit Jacobian: mode x* = a/(a + b),
    curvature (a + b)·x*(1 − x*) in u; the scale is returned on the x scale.
    """
    mode = a / (a + b)
    scale = jnp.sqrt(mode * (1.0 - mode) / (a + b))

    def log_f(u):
        return a * jax.nn.log_sigmoid(u) + b * jax.nn.log_sigmoid(-u)

    return log_f, mode, scale


def beta_from_moments(mean, sd):
    """Beta(a, b) with the given mean and SD, flattened to a, b ≥ 1 when too wide."""
    mean = jnp.clip(mean, 1e-300, 1.0 - 1e-16)
    total = jnp.maximum(mean * (1.0 - mean) / jnp.maximum(sd * sd, 1e-300) - 1.0, 0.0)
    return jnp.maximum(mean * total, 1.0), jnp.maximum((1.0 - mean) * total, 1.0)


def paired_betas(counts: Counts):
    """Beta posterior parameters (a_ρ, b_ρ, a_η, b_η) from the paired counts."""
    return (
        counts.n_tp + 1.0,
        counts.n_pos_paired - counts.n_tp + 1.0,
        counts.n_tn + 1.0,
        counts.n_neg_paired - counts.n_tn + 1.0,
    )


def paired_moments(counts: Counts):
    """Posterior means and variances (E ρ, E η, Var ρ, Var η) from the paired counts."""
    a_r, b_r, a_e, b_e = paired_betas(counts)
    mean_r, sd_r = beta_moments(a_r, b_r)
    mean_e, sd_e = beta_moments(a_e, b_e)
    return mean_r, mean_e, sd_r**2, sd_e**2


def alpha_given_rate(counts: Counts, rate, rate_var, mean_r, mean_e, var_r, var_e):
    """Logit-scale centre and (probability-scale) scale of α given a metric rate p.

    p ≈ α·E ρ + (1 − α)(1 − E η) solved for α, with the spread of p
    (``rate_var``), ρ and η propagated, matched to a Beta; times the human
    ratings' Beta(n₊ + 1, N_Φ − n₊ + 1) kernel, a Beta kernel, whose
    logit-scale mode and curvature are returned.
    """
    a_a, b_a = counts.n_pos + 1.0, counts.n_phi - counts.n_pos + 1.0
    slope = mean_r + mean_e - 1.0
    safe_slope = jnp.where(jnp.abs(slope) > 1e-12, slope, 1e-12)
    alpha_m = jnp.clip((rate - 1.0 + mean_e) / safe_slope, 0.0, 1.0)
    spread = alpha_m**2 * var_r + (1.0 - alpha_m) ** 2 * var_e
    a_m, b_m = beta_from_moments(alpha_m, jnp.sqrt(rate_var + spread) / jnp.abs(safe_slope))
    _, centre, scale = logit_beta_kernel(a_a + a_m - 1.0, b_a + b_m - 1.0)
    return centre, scale
