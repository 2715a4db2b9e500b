"""Designs, counts and an exact reference posterior shared by the kernel tests and scripts."""

from __future__ import annotations

import inspect
import pathlib
from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import betainc, betaln, gammaln

from binmetric_sweep.kernels.counts import Counts, Design, draw_counts, expected_counts
from binmetric_sweep.kernels.quadrature import MODEL_KINDS, model_kind
from binmetric_sweep.kernels.summaries import epsilon

#: The published table in ``shared/reference`` beside the clone, which the project reads.
SHARED_PUBLISHED_EPS = (
    pathlib.Path(__file__).resolve().parents[3] / "shared" / "reference" / "published_eps.csv"
)
#: A copy of it, for a clone with no ``shared/`` beside it
#: (``test_the_copied_published_table_is_the_shared_one`` keeps the two alike).
COPIED_PUBLISHED_EPS = pathlib.Path(__file__).resolve().parents[1] / "data" / "published_eps.csv"
PUBLISHED_EPS = SHARED_PUBLISHED_EPS if SHARED_PUBLISHED_EPS.exists() else COPIED_PUBLISHED_EPS


def published_table() -> pd.DataFrame:
    return pd.read_csv(PUBLISHED_EPS)


def design(**fields) -> Design:
    """A (B,) design from keyword arrays, with docs/model.md's defaults."""
    alpha = np.atleast_1d(np.asarray(fields["alpha"], float))
    b = alpha.shape[0]

    def get(name, default):
        return np.broadcast_to(np.asarray(fields.get(name, default)), (b,)).copy()

    return Design(
        alpha=alpha,
        rho=get("rho", 0.8).astype(float),
        eta=get("eta", 0.8).astype(float),
        n_phi=get("n_phi", 100).astype(float),
        n_rho_eta=get("n_rho_eta", 0).astype(float),
        psi=get("psi", alpha).astype(float),
        n_m=get("n_m", 1000).astype(float),
        shared_paired=get("shared_paired", True).astype(bool),
        rho_eta_known=get("rho_eta_known", False).astype(bool),
    )


def published_eps(frame: pd.DataFrame, post_sd) -> np.ndarray:
    """ε of the table's cells from their posterior SDs, 1 where N_Φ = N_M = 0 (no evidence)."""
    eps = np.asarray(epsilon(np.asarray(post_sd), frame.gamma.values))
    return np.where((frame.n_phi.values == 0) & (frame.n_m.values == 0), 1.0, eps)


def published_counts(frame: pd.DataFrame) -> Counts:
    d = design(
        alpha=frame.alpha.values,
        rho=frame.rho.values,
        eta=frame.eta.values,
        n_phi=frame.n_phi.values,
        n_rho_eta=frame.n_rho_eta.values,
        n_m=frame.n_m.values,
    )
    return jax.tree.map(np.asarray, jax.vmap(expected_counts)(d))


def counts(**fields) -> Counts:
    """(B,) counts given directly; unspecified paired counts are empty, ρ/η unknown."""
    b = max(np.atleast_1d(np.asarray(v)).shape[0] for v in fields.values())
    n = np.broadcast_to(np.asarray(fields["n_m"], float), (b,)).copy()

    def get(name, default=0.0):
        return np.broadcast_to(np.asarray(fields.get(name, default), float), (b,)).copy()

    return Counts(
        n_pos=get("n_pos"),
        n_phi=get("n_phi"),
        n_tp=get("n_tp"),
        n_pos_paired=get("n_pos_paired"),
        n_tn=get("n_tn"),
        n_neg_paired=get("n_neg_paired"),
        m_pos=get("m_pos"),
        n_m=n,
        rho=get("rho"),
        eta=get("eta"),
        rho_eta_known=np.broadcast_to(np.asarray(fields.get("rho_eta_known", False)), (b,)).copy(),
    )


def random_counts(n: int, seed: int, known_share: float = 0.0) -> Counts:
    """Counts drawn across the issue's ranges: N_M to 1e7, N_Φ and N_ρη to 1e6, edges included.

    A ``known_share`` of the lanes has ρ and η known (their paired counts are then empty).
    """
    r = np.random.default_rng(seed)

    def size(hi_exp, p0):
        v = np.floor(10 ** r.uniform(0, hi_exp, n))
        v[r.random(n) < p0] = 0
        return v

    alpha = r.uniform(0, 1, n)
    edge = r.random(n) < 0.08
    alpha[edge] = r.choice([0.0, 1.0], edge.sum())
    rho = np.where(r.random(n) < 0.1, 1.0, r.uniform(0.3, 1, n))
    eta = np.where(
        r.random(n) < 0.1, np.clip(1 - rho - r.uniform(0, 0.2, n), 0, 1), r.uniform(0.3, 1, n)
    )
    d = design(
        alpha=alpha,
        rho=rho,
        eta=eta,
        n_phi=size(6, 0.12),
        n_rho_eta=size(6, 0.12),
        psi=r.uniform(0, 1, n),
        n_m=size(7, 0.05),
        shared_paired=r.random(n) < 0.6,
        rho_eta_known=r.random(n) < known_share,
    )
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(seed), i))(np.arange(n))
    return jax.tree.map(np.asarray, jax.vmap(draw_counts)(keys, d))


def _sweep_program(summary: Callable, args: tuple, kwargs: dict):
    """The sweep's own compiled program of ``summary(lane, *args, **kwargs)``
    (:mod:`sweep.execution.programs`), with CPU's slices: its compile is the sweep's, which
    the session's cache then holds once for both."""
    from binmetric_sweep.kernels.gauss_hermite import alpha_t_summary, laplace_summary
    from binmetric_sweep.kernels.quadrature import hermite_t_summary, posterior_summary
    from binmetric_sweep.kernels.t_outer import t_outer_summary
    from binmetric_sweep.sweep.execution import programs
    from binmetric_sweep.sweep.execution.schedule import CPU_RULE_SLICES

    bound = inspect.signature(summary).bind(None, *args, **kwargs)
    bound.apply_defaults()
    a = dict(bound.arguments)
    if summary is posterior_summary:
        lanes = CPU_RULE_SLICES["nested"] if a["kind"] == "full" else None
        return programs.quadrature_program(
            a["kind"], a["level"], a["rule"], lanes, a["exact_paired"]
        )
    if summary is hermite_t_summary:
        return programs.hermite_t_program(
            a["level"], a["rule"], a["check"], CPU_RULE_SLICES["hermite_t"], a["exact_paired"]
        )
    if summary is laplace_summary:
        return programs.gauss_hermite_program(a["ridge"], a["level"], a["rule"])
    if summary is alpha_t_summary:
        return programs.alpha_t_program(
            a["level"], a["s_rule"], a["rule"], CPU_RULE_SLICES["hermite_alpha_t"]
        )
    if summary is t_outer_summary:
        return programs.t_outer_program(a["level"], a["rule"], CPU_RULE_SLICES["t_outer"])
    raise ValueError(f"per_lane: no sweep program for {summary.__name__}")


def per_lane(summary: Callable, lanes: Counts, *args, **kwargs):
    """``summary(lane, *args, **kwargs)`` of each of the ``(B,)`` ``lanes``, as NumPy arrays.

    Computed by the sweep's own program for that rule and settings
    (:mod:`sweep.execution.programs`, calls of the CPU's 64 lanes, the last padded), so
    that each rule compiles once a session, for the sweep and the tests alike,
    and a lane's numbers are the sweep's. ``args`` and ``kwargs`` are the
    rule's settings.
    """
    from binmetric_sweep.sweep.execution.schedule import CPU_QUADRATURE_LANES as size

    fn = _sweep_program(summary, args, kwargs)
    lanes = jax.tree.map(np.asarray, lanes)
    b = len(lanes.n_m)
    if b == 0:  # the output's shapes, from a call on placeholder lanes
        zeros = jax.tree.map(lambda x: np.zeros((size, *x.shape[1:]), x.dtype), lanes)
        return _first(jax.device_get(fn(zeros, 1)), 0)
    parts = []
    for start in range(0, b, size):
        index = np.arange(start, min(start + size, b))
        padded = np.resize(index, size)
        lanes_in = jax.tree.map(lambda x, p=padded: x[p], lanes)
        parts.append(_first(jax.device_get(fn(lanes_in, len(index))), len(index)))
    return jax.tree.map(lambda *x: np.concatenate(x), *parts)


def _first(tree, n: int):
    return jax.tree.map(lambda x: np.asarray(x)[:n], tree)


def full_model_lanes(n: int, seed: int) -> Counts:
    """The lanes of ``random_counts(n, seed)`` whose ρ, η are unknown and N_M > 0."""
    c = random_counts(n, seed)
    full = model_kind(c.n_m, c.rho_eta_known) == MODEL_KINDS.index("full")
    return jax.tree.map(lambda x: x[full], c)


def agreement_lanes() -> tuple[pd.DataFrame, Counts]:
    """The published table and the lanes NUTS is checked on against quadrature.

    The table's expected counts, then 120 tuples drawn across the issue's
    ranges (a tenth with ρ, η known): tests/kernels/test_nuts.py asserts the
    issue's bounds on them, scripts/nuts_agreement.py records what it measures.
    """
    table = published_table()
    drawn = random_counts(120, seed=11, known_share=0.1)
    lanes = jax.tree.map(lambda a, b: np.concatenate([a, b]), published_counts(table), drawn)
    return table, lanes


class MixturePosterior(NamedTuple):
    """The exact α-marginal of one full-model lane as a finite mixture of Betas.

    Attributes:
        weights: ``(N_M + 1,)`` posterior probabilities of K, the number of
            truly adequate outputs among the metric-only ones.
        a: ``(N_M + 1,)`` first Beta parameter of α given K.
        b: ``(N_M + 1,)`` second Beta parameter of α given K.
    """

    weights: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def moments(self) -> tuple[float, float]:
        """Posterior mean and SD of α."""
        total = self.a + self.b
        mean = np.sum(self.weights * self.a / total)
        second = np.sum(self.weights * self.a * (self.a + 1.0) / (total * (total + 1.0)))
        return float(mean), float(np.sqrt(second - mean * mean))

    def quantile(self, q: float) -> float:
        """The q-quantile of α, from the mixture's CDF (regularised incomplete Betas)."""
        keep = self.weights > 1e-300
        w, a, b = self.weights[keep], self.a[keep], self.b[keep]
        return optimize.brentq(lambda x: np.sum(w * betainc(a, b, x)) - q, 0.0, 1.0, xtol=1e-15)


def mixture_posterior(c: Counts, i: int) -> MixturePosterior:
    """Lane ``i``'s exact α-marginal in the full model (ρ, η unknown), by data augmentation.

    Split the m₊ positive metric ratings into k true and m₊ − k false
    positives and the N_M − m₊ negative ones into j false and the rest true
    negatives. Given (k, j) all three Beta priors are conjugate, so

        w(k, j) ∝ C(m₊, k)·C(N_M − m₊, j)·B(a_α + k + j, b_α + N_M − k − j)
                  ·B(a_ρ + k, b_ρ + j)·B(a_η + N_M − m₊ − j, b_η + m₊ − k)

    and α | k, j ~ Beta(a_α + K, b_α + N_M − K) with K = k + j. This is the
    binomial expansion of p^m₊·(1 − p)^(N_M − m₊): an exact finite sum, and an
    independent reference for the quadrature. Its cost grows as N_M², so keep
    N_M to a few thousand.
    """
    a_a, b_a = c.n_pos[i] + 1.0, c.n_phi[i] - c.n_pos[i] + 1.0
    a_r, b_r = c.n_tp[i] + 1.0, c.n_pos_paired[i] - c.n_tp[i] + 1.0
    a_e, b_e = c.n_tn[i] + 1.0, c.n_neg_paired[i] - c.n_tn[i] + 1.0
    m, n = int(c.m_pos[i]), int(c.n_m[i])
    k = np.arange(m + 1.0)[:, None]
    j = np.arange(n - m + 1.0)[None, :]
    log_w = (
        gammaln(m + 1.0)
        - gammaln(k + 1.0)
        - gammaln(m - k + 1.0)
        + gammaln(n - m + 1.0)
        - gammaln(j + 1.0)
        - gammaln(n - m - j + 1.0)
        + betaln(a_a + k + j, b_a + n - k - j)
        + betaln(a_r + k, b_r + j)
        + betaln(a_e + n - m - j, b_e + m - k)
    )
    w = np.exp(log_w - log_w.max())
    big_k = (k + j).astype(np.int64)
    weights = np.bincount(big_k.ravel(), w.ravel(), minlength=n + 1)
    total_k = np.arange(n + 1.0)
    return MixturePosterior(weights / weights.sum(), a_a + total_k, b_a + n - total_k)


def exact_summaries(c: Counts, level: float = 0.95) -> np.ndarray:
    """``(B, 4)``: exact posterior mean, SD and central ``level`` interval of α per lane.

    From :func:`mixture_posterior`, so full-model lanes with N_M up to a few thousand.
    """
    tail = 0.5 * (1.0 - level)
    rows = []
    for i in range(len(c.n_m)):
        mixture = mixture_posterior(c, i)
        rows.append((*mixture.moments(), mixture.quantile(tail), mixture.quantile(1.0 - tail)))
    return np.array(rows).reshape(-1, 4)


def numpyro_nuts(keys, lanes: Counts, dim: int, dense_mass: bool, settings=None) -> np.ndarray:
    """α draws ``(B, chains, samples)`` of NumPyro's own NUTS on ``lanes``: the tests' oracle.

    NumPyro's functional API (``numpyro.infer.hmc.hmc(potential_fn_gen, algo="NUTS")``)
    on the kernels' log-density and coordinates, vmapped over fits and chains, with
    a diagonal or a dense mass matrix. The sampler of :mod:`kernels.stepwise` runs
    the same transitions one leapfrog at a time; this is an independent implementation
    of them, held to the same bounds against the exact posterior.
    """
    import jax.numpy as jnp
    from numpyro.infer.hmc import hmc

    from binmetric_sweep.kernels.nuts import (
        NUTSSettings,
        _coordinates,
        _potential_fn_gen,
        initial_position,
    )

    settings = settings or NUTSSettings()
    init_kernel, sample_kernel = hmc(potential_fn_gen=_potential_fn_gen, algo="NUTS")
    depths = (min(settings.warmup_max_tree_depth, settings.max_tree_depth), settings.max_tree_depth)

    def chain(key, c):
        init_key, run_key = jax.random.split(key)
        ridge = _coordinates(c, settings, dim, None)
        model_args = (c, ridge)
        state = init_kernel(
            initial_position(init_key, c, dim, ridge),
            settings.warmup,
            dense_mass=dense_mass,
            target_accept_prob=settings.target_accept,
            max_tree_depth=depths,
            model_args=model_args,
            rng_key=run_key,
        )

        def transition(state, _):
            state = sample_kernel(state, model_args=model_args)
            return state, jax.nn.sigmoid(state.z[0])

        state, _ = jax.lax.scan(transition, state, None, length=settings.warmup)
        return jax.lax.scan(transition, state, None, length=settings.samples)[1]

    def fit(key, c):
        return jax.vmap(lambda k: chain(k, c))(jax.random.split(key, settings.chains))

    lanes = jax.tree.map(jnp.asarray, lanes)
    return np.asarray(jax.jit(jax.vmap(fit))(keys, lanes))
