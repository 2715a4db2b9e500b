"""Vectorised NUTS for the α posterior, one lane per (fit × chain).

Two loops run the same NUTS (``NUTSSettings.loop``; by default ``"auto"``:
the chain kernel on a GPU, the leapfrog loop elsewhere):

* ``"leapfrog"``: :mod:`kernels.stepwise`, NumPyro's NUTS with its
  tree building made explicit state, one leapfrog step of every lane per
  iteration, so that lanes never wait for each other's trajectories;
  :func:`sample_fits` runs every chain of a batch of fits in one loop.
* ``"kernel"``: the same steps, whole chains inside one Pallas kernel per
  block of lanes (:mod:`kernels.chain_kernel`).

NumPyro's own NUTS (``numpyro.infer.hmc.hmc``, vmapped) runs the same
transitions but, vmapped, makes every lane wait for the batch's longest
trajectory in every transition; it is the tests' oracle, not a loop here.

Each chain warms up with its own step-size and mass-matrix adaptation, then
draws. Nothing here is jitted.

Each lane runs in the logits of (α, ρ, η) or, where the metric-only ratings
dominate, in the ridge coordinates of :mod:`kernels.ridge`; the first
coordinate is logit α in both, so the α draws are read the same way.

Only what the summaries need is kept: the α draws of the sampling phase
(``(chains, samples)`` per fit), divergences and tree depths.
:func:`summarize_draws` then computes, on the host, the posterior mean, SD and
central interval, split R-hat (``numpyro.diagnostics``) and bulk ESS
(:mod:`kernels.diagnostics`: NumPyro's estimator on rank-normalised split
chains, as in Vehtari et al. 2021, vectorised over fits).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.diagnostics import split_gelman_rubin

from binmetric_sweep.kernels.chain_kernel import (
    DEFAULT_BLOCK,
    TRITON_LOWERING,
    can_import,
    run_blocks,
)
from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.diagnostics import bulk_effective_sample_size, sd_mcse
from binmetric_sweep.kernels.logdensity import logdensity, logdensity_centres
from binmetric_sweep.kernels.ridge import (
    prefers_ridge,
    ridge_centres,
    ridge_logdensity,
    ridge_position,
)
from binmetric_sweep.kernels.stepwise import make_sampler, run_queue

Array = jax.Array

__all__ = [
    "NUTSSettings",
    "ChainDraws",
    "DrawSummary",
    "sampler_key",
    "initial_position",
    "sample_chain",
    "sample_fit",
    "DRIVERS",
    "LOOPS",
    "resolve_loop",
    "chain_keys",
    "run_chains",
    "sample_fits",
    "SUMMARY_BLOCK_DRAWS",
    "summary_block_fits",
    "summarize_draws",
]


class NUTSSettings(NamedTuple):
    """Sampler settings (static).

    Attributes:
        chains: independent chains per fit.
        warmup: adaptation transitions per chain (discarded).
        samples: kept transitions per chain.
        target_accept: target acceptance probability of step-size adaptation.
        max_tree_depth: cap on the NUTS doubling depth (2^depth − 1 leapfrogs).
        warmup_max_tree_depth: the cap during warm-up. Before the step size
            and mass matrix settle, trajectories run long; a lane in lock-step
            makes the whole batch wait for them. The cap of 6 (63 leapfrogs)
            shortens warm-up and keeps the agreement with quadrature
            afterwards (docs/performance.md, tuning constants).
        record_steps: keep each transition's leapfrog count, ``(chains,
            samples)`` per fit, for lock-step efficiency measurements.
        ridge: sample metric-dominated lanes of the full model in ridge
            coordinates (:mod:`kernels.ridge`); off, every lane uses the
            logits of (α, ρ, η).
        loop: ``"leapfrog"`` (:mod:`kernels.stepwise`: one leapfrog step of
            every lane per iteration, so lanes do not wait for each other's
            trajectories) or ``"kernel"`` (the same steps, whole chains inside
            one Pallas kernel per block of lanes, :mod:`kernels.chain_kernel`;
            compiled by Triton on a GPU; elsewhere Pallas interprets it, which
            lets the tests check it on CPU).
            Both are the same NUTS. ``"auto"`` (the default): ``"kernel"`` on
            a GPU, where it is faster (docs/performance.md), ``"leapfrog"``
            elsewhere (:func:`resolve_loop`).
        kernel_block, kernel_warps: with ``loop="kernel"``, the chains a
            program instance advances together (a power of two; each block
            runs until its slowest chain is done) and Triton's warps per
            instance (:func:`kernels.chain_kernel.run_blocks`). A chain's
            arithmetic is its own lane's, in any block.
        device: the platform the chains run on ("cpu", "gpu", ...), set with
            the loop by :func:`resolve_loop`. The kernels read it rather than
            ask JAX: batch-level conditionals on CPU only, where they are cheap
            (:class:`kernels.stepwise.Sampler`), and the chain kernel compiled
            by Triton on a GPU, interpreted elsewhere.
    """

    chains: int = 4
    warmup: int = 500
    samples: int = 1000
    target_accept: float = 0.8
    max_tree_depth: int = 10
    warmup_max_tree_depth: int = 6
    record_steps: bool = False
    ridge: bool = True
    loop: str = "auto"
    kernel_block: int = DEFAULT_BLOCK
    kernel_warps: int = 1
    device: str | None = None


class ChainDraws(NamedTuple):
    """What one fit's chains leave behind (leading ``(B,)`` when vmapped over fits).

    Attributes:
        alpha: ``(chains, samples)`` draws of α (probability scale).
        divergences: ``(chains,)`` divergent transitions after warm-up.
        tree_depth: ``(chains,)`` mean NUTS tree depth after warm-up.
        steps: ``(chains,)`` leapfrog steps after warm-up, or ``(chains,
            samples)`` per transition with ``record_steps``.
        leapfrogs: ``(chains,)`` leapfrog steps in all: warm-up and draws,
            and with ``loop="leapfrog"`` the step-size searches.
    """

    alpha: Array
    divergences: Array
    tree_depth: Array
    steps: Array
    leapfrogs: Array


class DrawSummary(NamedTuple):
    """Host-side summary of draws, each a ``(B,)`` NumPy array.

    Attributes:
        mean: posterior mean of α.
        sd: posterior SD of α.
        ci_low: lower end of the central credible interval.
        ci_high: upper end of the central credible interval.
        rhat: split R-hat.
        ess: bulk effective sample size (all chains together).
        sd_mcse: Monte Carlo SE of ``sd`` (delta method on the ESS of the
            squared deviations, as the posterior package's mcse_sd).
    """

    mean: np.ndarray
    sd: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    rhat: np.ndarray
    ess: np.ndarray
    sd_mcse: np.ndarray


def sampler_key(replicate_key: Array) -> Array:
    """The sampler's key of a replicate (counts use tag 0, the sampler tag 1)."""
    return jax.random.fold_in(replicate_key, 1)


def initial_position(key: Array, counts: Counts, dim: int, ridge: Array | bool = False) -> Array:
    """A starting point drawn from the posterior *without* the metric-only ratings.

    The Beta posteriors of α, ρ, η given the human and paired ratings are
    overdispersed relative to the full posterior (which the metric-only ratings
    only sharpen), as split R-hat needs. Returned as ``(dim,)`` logits, or as
    a ridge position (:mod:`kernels.ridge`) where ``ridge``.
    """
    keys = jax.random.split(key, 3)

    def logit_beta(k, successes, trials):
        v = jax.random.beta(k, successes + 1.0, trials - successes + 1.0)
        v = jnp.clip(v, 1e-12, 1.0 - 1e-12)
        return jnp.log(v) - jnp.log1p(-v)

    position = [logit_beta(keys[0], counts.n_pos, counts.n_phi)]
    if dim == 3:
        position.append(logit_beta(keys[1], counts.n_tp, counts.n_pos_paired))
        position.append(logit_beta(keys[2], counts.n_tn, counts.n_neg_paired))
        natural = jnp.stack(position)
        return jnp.where(ridge, ridge_position(*jax.nn.sigmoid(natural)), natural)
    return jnp.stack(position)


def _potential_fn_gen(counts: Counts, ridge: Array | bool, centres=(None, None)):
    """−log density in the lane's coordinates: logits of (α, ρ, η), or ridge ones.

    With a traced ``ridge`` both densities are evaluated at every step and
    one is selected; a static bool evaluates only its own. ``centres``: the
    two densities' term centres (:func:`_centres`), or None for either to
    compute its own at every evaluation.
    """
    in_logits, in_ridge = centres
    # Times −1 rather than negated: the same numbers, but a gradient's first
    # step is then −1 × its cotangent, not −(1.0), a negated constant that
    # Pallas's Triton lowering cannot take (kernels.chain_kernel).
    if isinstance(ridge, bool):
        if ridge:
            return lambda position: ridge_logdensity(position, counts, in_ridge) * -1.0
        return lambda position: logdensity(position, counts, in_logits) * -1.0
    return lambda position: (
        jnp.where(
            ridge,
            ridge_logdensity(position, counts, in_ridge),
            logdensity(position, counts, in_logits),
        )
        * -1.0
    )


def _alpha(position: tuple[Array, ...]) -> Array:
    """α (probability scale) of a lane's position, d per-coordinate arrays: the
    first coordinate is logit α in the logits and in the ridge coordinates alike."""
    return jax.nn.sigmoid(position[0])


def _centres(counts: Counts, ridge: Array | bool):
    """Term centres of the densities :func:`_potential_fn_gen` evaluates, for ``(L,)`` counts.

    They depend on the counts alone; computed once here, they are not
    recomputed at every leapfrog step (XLA did not hoist them out of the
    loop; the same numbers either way).
    """
    if isinstance(ridge, bool):
        return (None, ridge_centres(counts)) if ridge else (logdensity_centres(counts), None)
    return logdensity_centres(counts), ridge_centres(counts)


def _coordinates(counts: Counts, settings: NUTSSettings, dim: int, ridge):
    """``ridge`` as in :func:`sample_chain`, resolved: a static bool, or per lane of ``counts``."""
    if dim != 3 or not settings.ridge:
        return False
    return prefers_ridge(counts) if ridge is None else ridge


def resolve_loop(settings: NUTSSettings, device: str) -> NUTSSettings:
    """``settings`` for ``device`` (JAX's platform name: "cpu", "gpu", ...).

    ``loop="auto"`` becomes the loop that runs there: on a GPU the chain
    kernel, elsewhere the leapfrog loop (the kernel's Triton lowering is
    GPU-only; other devices would interpret it), and the leapfrog loop on a
    GPU too where this JAX has no Triton lowering for Pallas. Other loops are
    kept; ValueError for a loop not in :data:`LOOPS`. ``device`` is recorded
    in the settings, which every sampler needs (:class:`NUTSSettings`).
    """
    if settings.loop not in LOOPS:
        raise ValueError(f"loop must be one of {', '.join(LOOPS)}, got {settings.loop!r}")
    settings = settings._replace(device=device)
    if settings.loop != "auto":
        return settings
    kernel = device == "gpu" and can_import(TRITON_LOWERING)
    return settings._replace(loop="kernel" if kernel else "leapfrog")


def sample_chain(
    key: Array, counts: Counts, settings: NUTSSettings, dim: int, ridge: bool | None = None
) -> ChainDraws:
    """One NUTS chain for one fit: warm-up with adaptation, then ``settings.samples`` draws.

    Args:
        key: the chain's key.
        counts: one lane's counts (scalars).
        settings: sampler settings.
        dim: 3 (α, ρ, η unknown) or 1 (ρ, η known); see :func:`kernels.logdensity.logdensity`.
        ridge: the coordinates, static, where the caller has grouped lanes by
            :func:`kernels.ridge.prefers_ridge` (a ridge step costs about twice
            a logit one, and a per-lane choice evaluates both); ``None``
            chooses per lane. Ignored unless ``dim`` is 3 and ``settings.ridge``.

    Returns:
        :class:`ChainDraws` of one chain (no chain axis).
    """
    init_key, run_key = jax.random.split(key)
    ridge = _coordinates(counts, settings, dim, ridge)
    position = initial_position(init_key, counts, dim, ridge)
    # A batch of one; a static choice of coordinates stays static.
    one = jax.tree.map(lambda x: jnp.asarray(x)[None], (run_key, position, counts))
    lane_ridge = ridge if isinstance(ridge, bool) else jnp.asarray(ridge)[None]
    return jax.tree.map(lambda x: x[0], _run_stepwise(*one, lane_ridge, settings))


def _run_stepwise(
    run_keys,
    positions,
    counts: Counts,
    ridge,
    settings: NUTSSettings,
    slots: int | None = None,
    n_valid=None,
) -> ChainDraws:
    """:func:`kernels.stepwise.run_queue` on L chains (leading ``(L,)``) as :class:`ChainDraws`."""
    centres = _centres(counts, ridge)
    if isinstance(ridge, bool):  # one static choice: each step evaluates one density
        gen, args = (lambda c, centres: _potential_fn_gen(c, ridge, centres)), (counts, centres)
    else:
        gen, args = _potential_fn_gen, (counts, ridge, centres)
    return run_chains(gen, args, run_keys, positions, settings, _alpha, slots, n_valid)


def run_chains(
    potential_fn_gen,
    model_args: tuple,
    run_keys,
    positions,
    settings: NUTSSettings,
    observe,
    slots: int | None = None,
    n_valid=None,
) -> ChainDraws:
    """L chains (leading ``(L,)`` keys and positions) of any model on the engine, by
    ``settings.loop``'s driver (:data:`DRIVERS`), as :class:`ChainDraws` whose ``alpha``
    holds ``observe`` of each draw.

    ``potential_fn_gen(*model_args) -> (position -> −log density)``, ``model_args`` with
    leading ``(L,)``; ``settings`` resolved (:func:`resolve_loop`). The binary model's
    chains (:func:`sample_fits`) and the categorical model's
    (:func:`kernels.categorical.nuts.sample_fits`) both run here.
    """
    if settings.device is None or settings.loop == "auto":
        raise ValueError(
            "NUTSSettings: call resolve_loop(settings, device) first; "
            "the kernels do not ask JAX which device they run on"
        )
    sampler = make_sampler(
        potential_fn_gen,
        positions.shape[-1],
        settings.warmup,
        settings.samples,
        settings.target_accept,
        settings.max_tree_depth,
        settings.warmup_max_tree_depth,
        settings.record_steps,
        observe=observe,
        conditionals=settings.device == "cpu",
    )
    out = DRIVERS[settings.loop](run_keys, positions, model_args, sampler, settings, slots, n_valid)
    return ChainDraws(
        alpha=out.draws,
        divergences=out.divergences,
        tree_depth=out.depth_sum / settings.samples,
        steps=out.steps,
        leapfrogs=out.leapfrogs,
    )


def _queue_driver(keys, z, args, sampler, settings: NUTSSettings, slots, n_valid):
    """``loop="leapfrog"``: :func:`kernels.stepwise.run_queue`, ``slots`` chains at a time."""
    return run_queue(keys, z, args, sampler, slots=slots, n_valid=n_valid)


def _kernel_driver(keys, z, args, sampler, settings: NUTSSettings, slots, n_valid):
    """``loop="kernel"``: :func:`kernels.chain_kernel.run_blocks` (``slots`` unused)."""
    return run_blocks(
        keys,
        z,
        args,
        sampler,
        n_valid=n_valid,
        interpret=settings.device != "gpu",
        block=settings.kernel_block,
        num_warps=settings.kernel_warps,
    )


#: What advances a batch of chains, by ``NUTSSettings.loop``: ``driver(keys, z,
#: model_args, sampler, settings, slots, n_valid) -> ChainOutputs``, each the same
#: NUTS over a :class:`kernels.stepwise.Sampler`. A new driver is its module and a
#: name here.
DRIVERS = {"leapfrog": _queue_driver, "kernel": _kernel_driver}
#: The values of ``NUTSSettings.loop``: "auto" (:func:`resolve_loop`) and the drivers.
LOOPS = ("auto", *DRIVERS)


def chain_keys(key: Array, chains: int) -> Array:
    """``(chains,)`` keys of a fit's chains: chain c's is ``fold_in(key, c)``."""
    return jax.vmap(lambda c: jax.random.fold_in(key, c))(jnp.arange(chains))


def sample_fit(
    key: Array, counts: Counts, settings: NUTSSettings, dim: int, ridge: bool | None = None
) -> ChainDraws:
    """All chains of one fit (chain c uses ``fold_in(key, c)``), vmapped over chains.

    ``ridge`` as in :func:`sample_chain`. For a batch of fits use
    :func:`sample_fits`, which runs every chain of every fit in one loop,
    where vmapping this function would not.
    """
    keys = chain_keys(key, settings.chains)
    return jax.vmap(lambda k: sample_chain(k, counts, settings, dim, ridge))(keys)


def sample_fits(
    keys: Array,
    counts: Counts,
    settings: NUTSSettings,
    dim: int,
    ridge: bool | None = None,
    slots: int | None = None,
    n_valid=None,
) -> ChainDraws:
    """:func:`sample_fit` for a batch: ``keys`` ``(B,)`` and counts with leading ``(B,)``.

    Returns :class:`ChainDraws` with leading ``(B, chains)``; each fit runs the
    chains :func:`sample_fit` runs for its key and counts (the same numbers up
    to rounding, where the two compiled programs differ; a lane's draws never
    depend on the other fits in the batch).

    ``slots`` (static) chains run at once, each slot taking the next chain of
    the batch when its own is done (:func:`kernels.stepwise.run_queue`; all
    chains at once if None; the chain kernel ignores it), and only the first
    ``n_valid`` fits (traced; all if None) are run, the rest coming back as zeros.
    """
    b, chains = keys.shape[0], settings.chains
    lane_keys = jax.vmap(lambda k: chain_keys(k, chains))(keys).reshape(b * chains)
    init_keys, run_keys = jnp.moveaxis(jax.vmap(jax.random.split)(lane_keys), 1, 0)
    lane_counts = jax.tree.map(lambda x: jnp.repeat(jnp.asarray(x), chains, axis=0), counts)
    lane_ridge = _coordinates(lane_counts, settings, dim, ridge)
    ridge_axis = None if isinstance(lane_ridge, bool) else 0
    positions = jax.vmap(
        lambda k, c, r: initial_position(k, c, dim, r), in_axes=(0, 0, ridge_axis)
    )(init_keys, lane_counts, lane_ridge)
    valid = None if n_valid is None else n_valid * chains
    draws = _run_stepwise(run_keys, positions, lane_counts, lane_ridge, settings, slots, valid)
    return jax.tree.map(lambda x: x.reshape(b, chains, *x.shape[1:]), draws)


#: Draws (fits × chains × samples) :func:`summarize_draws` takes at a time:
#: its temporaries (ranks, normal scores, spectra: about fourteen arrays that
#: size) peak near 120 MB whatever the batch or the chains' length (262 fits
#: of 4 × 1000 draws, measured with tracemalloc).
SUMMARY_BLOCK_DRAWS = 1 << 20


def summary_block_fits(chains: int, samples: int) -> int:
    """Fits in each of :func:`summarize_draws`' blocks (at least one)."""
    return max(1, SUMMARY_BLOCK_DRAWS // max(1, chains * samples))


def summarize_draws(alpha: np.ndarray, level: float, map_blocks=map) -> DrawSummary:
    """Mean, SD and its MCSE, central ``level`` interval, split R-hat and bulk ESS of α.

    ``alpha`` has shape ``(B, chains, samples)``; every output is ``(B,)``.
    Computed in blocks of :func:`summary_block_fits` fits, mapped over with
    ``map_blocks``: the builtin ``map``, or an executor's, which runs them in
    threads (NumPy's sorts, FFTs and reductions let go of the GIL). A fit's
    summary has the same bits in any block or batch, so neither changes a
    number.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    size = summary_block_fits(*alpha.shape[1:])
    if alpha.shape[0] <= size:
        return _summarize_block(alpha, level)
    starts = range(0, len(alpha), size)
    parts = map_blocks(lambda i: _summarize_block(alpha[i : i + size], level), starts)
    return DrawSummary(*(np.concatenate(field) for field in zip(*parts, strict=True)))


def _summarize_block(alpha: np.ndarray, level: float) -> DrawSummary:
    b, c, s = alpha.shape
    flat = alpha.reshape(b, c * s)
    tail = 0.5 * (1.0 - level)
    low, high = np.quantile(flat, [tail, 1.0 - tail], axis=1)
    # Constant chains (a fit whose α never moved) have no defined R-hat: NaN.
    with np.errstate(invalid="ignore", divide="ignore"):
        rhat = np.asarray(split_gelman_rubin(np.moveaxis(alpha, 0, -1)))
        ess = bulk_effective_sample_size(alpha)
        mcse = sd_mcse(alpha)
    mean, sd = flat.mean(axis=1), flat.std(axis=1, ddof=1)
    return DrawSummary(mean, sd, low, high, rhat, ess, mcse)
