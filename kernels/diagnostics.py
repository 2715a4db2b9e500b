"""Effective sample sizes of many fits' chains at once, each fit's bits its own.

NumPyro's ``effective_sample_size`` is the estimator (Geyer 1992's initial
monotone sequence, on Stan-style autocorrelations); this is the same
arithmetic with the fits on a leading axis, so that a batch of thousands
costs a few vectorised FFTs instead of thousands of calls. It is written out
here for two reasons (docs/design.md):

* speed: called fit by fit, NumPyro's function makes a fit's two ESS (the
  bulk ESS and the SD's MCSE's) the largest host cost after a NUTS call;
  here they cost about a third as much;
* determinism: called on a batch, NumPyro's (through ``scipy.fft`` with
  every core, and a complex product whose SIMD and scalar paths round
  differently) gives some fits other bits in batches of other sizes. Here
  every operation is either elementwise on real numbers or works within
  one fit (NumPy's FFT along the last axis, which transforms each row
  alone, and reductions over one fit's chains or draws), so a fit's ESS
  does not depend on which fits share its call. Tests hold it to NumPyro's
  to 1e-12 and to the same bits in batches of any size.

Host-side NumPy, like :func:`kernels.nuts.summarize_draws`, which calls it.
"""

from __future__ import annotations

from functools import cache
from statistics import NormalDist

import numpy as np

__all__ = ["effective_sample_size", "bulk_effective_sample_size", "sd_mcse"]


def effective_sample_size(x: np.ndarray) -> np.ndarray:
    """ESS of each fit's chains, NumPyro's estimator: ``x`` ``(B, chains, n)`` → ``(B,)``.

    ``n ≥ 2``. Constant chains give NaN, as NumPyro's does. Its temporaries
    are a few times ``x``'s size: callers bound that by blocks of fits
    (:func:`kernels.nuts.summarize_draws`).
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    b, chains, n = x.shape
    padded = 2 * _next_fast_length(n)
    centred = x - x.mean(axis=-1, keepdims=True)
    spectrum = np.fft.rfft(centred, n=padded, axis=-1)
    # |F|² as two real squares: NumPy's complex product F·F̄ leaves a rounding
    # residue in the imaginary part on its SIMD path (0 on its scalar tail),
    # which irfft reads, and which path a number takes follows the batch size.
    power = np.square(spectrum.real) + np.square(spectrum.imag)
    autocov = np.fft.irfft(power, n=padded, axis=-1)[..., :n] / n  # biased, as NumPyro's default
    var_within = x.var(axis=-1, ddof=1).mean(axis=-1)
    var_estimator = var_within * (n - 1) / n
    if chains > 1:
        var_estimator = var_estimator + x.mean(axis=-1).var(axis=-1, ddof=1)
    else:
        var_within = var_estimator
    rho = 1.0 - (var_within[:, None] - autocov.mean(axis=1)) / var_estimator[:, None]
    rho[:, 0] = 1.0
    pairs = rho[:, :-1:2] + rho[:, 1::2]
    monotone = np.minimum.accumulate(np.clip(pairs[:, 1:], 0.0, None), axis=1)
    tau = -1.0 + 2.0 * np.concatenate([pairs[:, :1], monotone], axis=1).sum(axis=1)
    return chains * n / tau


def _next_fast_length(n: int) -> int:
    """The smallest 5-smooth integer ≥ ``n``: NumPyro's FFT length (scipy's next_fast_len)."""
    if n <= 2:
        return n
    while True:
        m = n
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        if m == 1:
            return n
        n += 1


def bulk_effective_sample_size(draws: np.ndarray) -> np.ndarray:
    """Bulk ESS of ``(B, chains, samples)`` draws, ``(B,)``: ESS of rank-normalised split chains.

    Vehtari et al. (2021): each chain split in halves (the middle draw of an
    odd number left out, as in the posterior package and NumPyro's split
    R-hat), and the pooled draws
    replaced by the normal scores Φ⁻¹((r − 3/8)/(S + 1/4)) of their ranks r
    among all S, tied draws sharing their average rank (as the posterior
    package and ArviZ do; NUTS repeats a draw often, 1-5 % of a fit's draws
    on the agreement lanes).
    """
    b, c, s = draws.shape
    half = s // 2
    split = np.concatenate([draws[:, :, :half], draws[:, :, s - half :]], axis=1)
    flat = split.reshape(b, 2 * c * half)
    n = flat.shape[1]
    order = np.argsort(flat, axis=1)  # ties in any order: they share a rank
    ordered = np.take_along_axis(flat, order, axis=1)
    position = np.arange(n)
    starts = np.ones((b, n), dtype=bool)  # where a run of equal draws starts
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones((b, n), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, n - 1)[:, ::-1], axis=1)[:, ::-1]
    scores = np.empty_like(flat)
    np.put_along_axis(scores, order, _normal_scores(n)[first + last], axis=1)
    return effective_sample_size(scores.reshape(b, 2 * c, half))


@cache
def _normal_scores(n: int) -> np.ndarray:
    """Blom's normal scores of the average ranks of ``n`` draws, ``(2n − 1,)``.

    Entry k is the score of rank k/2 + 1 (a run of tied draws at 0-based
    positions i..j has average rank (i + j)/2 + 1, entry i + j). One table
    serves every fit, and no ``(B, n)`` computation has a shape that follows
    the call's (such a shape moved some fits' ESS between calls of different
    sizes on a GPU).
    """
    quantile = NormalDist().inv_cdf  # float64 whatever JAX's x64 flag says
    ranks = np.arange(2 * n - 1) / 2.0 + 1.0
    scores = np.array([quantile(p) for p in (ranks - 0.375) / (n + 0.25)])
    scores.flags.writeable = False
    return scores


def sd_mcse(draws: np.ndarray) -> np.ndarray:
    """Monte Carlo SE of the SD of ``(B, chains, samples)`` draws, ``(B,)``.

    With d = (α − ᾱ)², SD = √E[d] and Var(SD) ≈ Var(d)/(4·E[d]·ESS(d)), as
    the posterior package's mcse_sd.
    """
    b, c, s = draws.shape
    d = (draws - draws.reshape(b, c * s).mean(axis=1)[:, None, None]) ** 2
    flat = d.reshape(b, c * s)
    return np.sqrt(flat.var(axis=1, ddof=1) / (4.0 * flat.mean(axis=1) * effective_sample_size(d)))
