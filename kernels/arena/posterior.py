"""Draws of an arena's posterior by NumPyro's NUTS, and what a leaderboard reads off them.

One arena is one posterior of a few dozen coordinates (S strengths, ν, the judges'
confusions) whose likelihood runs over its cells: NumPyro's NUTS with a potential
function, its chains vectorised, is the sampler (a batched engine pays off over thousands
of small fits, not one). R-hat and ESS are numpyro.diagnostics'.

The summaries are functions of the draws alone: ranks (1 the strongest) per draw, their
central intervals and P(rank 1), simultaneous rank sets, P(i better than j), each
system's win rate against the field, and the judges' confusions.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.infer import MCMC, NUTS
from numpyro.infer.hmc import hmc

from binmetric_sweep.kernels.arena.logdensity import (
    ArenaData,
    ArenaShape,
    davidson_log_probabilities,
    logdensity,
    unpack,
)

Array = jax.Array

__all__ = [
    "ArenaDraws",
    "SamplerSettings",
    "rank_draws",
    "rank_intervals",
    "sample_arena",
    "sample_arenas",
    "simultaneous_rank_sets",
]


class SamplerSettings(NamedTuple):
    """NUTS settings of an arena's fit."""

    chains: int = 4
    warmup: int = 500
    samples: int = 1000
    target_accept: float = 0.8


#: 4 chains × (500 + 1000).
DEFAULT_SETTINGS = SamplerSettings()
#: Arenas in each of :func:`sample_arenas`' calls.
ARENAS_PER_CALL = 16
#: Draws summarised together (a block's pair probabilities: block × S² × 3 floats).
SUMMARY_BLOCK = 200


class ArenaDraws(NamedTuple):
    """An arena's posterior draws, chains flattened where noted.

    Attributes:
        strengths: ``(M, S)`` centred strengths (the pairs model: each system's log-odds of
            its win rate against the field, centred, so that ranks read the same way).
        log_nu: ``(M,)`` (zeros for the pairs model).
        win_rates: ``(M, S)`` each system's win rate against the field: the mean over the
            other systems of P(i beats j) + ½·P(tie).
        better: ``(M, S, S)`` bool is i truly better than j: s_i > s_j, or for the pairs
            model P(i beats j) > P(j beats i).
        pairs: ``(M, P, 3)`` each unordered pair (i < j, row-major)'s π over (i worse, tie,
            i better).
        log_confusion: ``(M, J, 3, 3)`` each judge's log C_j (its marginal of the joint
            model's), or None without judges.
        rhat_max, ess_min: the worst split R-hat and bulk ESS over every coordinate.
        divergences: divergent transitions after warm-up.
    """

    strengths: np.ndarray
    log_nu: np.ndarray
    win_rates: np.ndarray
    better: np.ndarray
    pairs: np.ndarray
    log_confusion: np.ndarray | None
    rhat_max: float
    ess_min: float
    divergences: int


def _marginal_confusions(log_joint: Array, judges: int) -> Array:
    """``(J, 3, 3)`` each judge's log confusion from the ``(3, 3^J)`` joint one."""
    joint = jnp.exp(log_joint).reshape(3, *(3,) * judges)
    return jnp.stack(
        [
            jnp.log(joint.sum(axis=tuple(1 + k for k in range(judges) if k != j)))
            for j in range(judges)
        ]
    )


def _pair_win_matrix(parameters, shape: ArenaShape) -> tuple[Array, Array]:
    """``(S, S)`` P(i beats j) and P(tie) of one draw (zeros on the diagonal)."""
    s = shape.systems
    if shape.pairs:
        i, j = np.triu_indices(s, 1)
        p = jnp.exp(parameters.log_pairs)  # (P, 3): (i worse, tie, i better), i < j
        beats = jnp.zeros((s, s)).at[i, j].set(p[:, 2]).at[j, i].set(p[:, 0])
        ties = jnp.zeros((s, s)).at[i, j].set(p[:, 1]).at[j, i].set(p[:, 1])
        return beats, ties
    d = parameters.strengths[:, None] - parameters.strengths[None, :]
    p = jnp.exp(davidson_log_probabilities(d, parameters.log_nu))
    off = 1.0 - jnp.eye(s)
    return p[..., 2] * off, p[..., 1] * off


def _draw_summary(position: Array, shape: ArenaShape):
    parameters = unpack(position, shape)
    beats, ties = _pair_win_matrix(parameters, shape)
    win_rates = (beats + 0.5 * ties).sum(axis=1) / (shape.systems - 1)
    if shape.pairs:
        logit = jnp.log(win_rates) - jnp.log1p(-win_rates)
        strengths = logit - logit.mean()
        better = beats > beats.T
    else:
        strengths = parameters.strengths
        better = strengths[:, None] > strengths[None, :]
    log_confusion = parameters.log_confusion
    if log_confusion is not None and not shape.independent:
        log_confusion = _marginal_confusions(log_confusion, shape.judges)
    i, j = np.triu_indices(shape.systems, 1)
    pairs = jnp.stack([beats[j, i], ties[i, j], beats[i, j]], axis=-1)
    return strengths, parameters.log_nu, win_rates, better, pairs, log_confusion


def _initial_positions(key: Array, shape: ArenaShape, chains: int) -> Array:
    """``(chains, d)`` starting points: strengths and log ν near 0, each confusion near a
    judge that is right 60 % of the time, jittered (overdispersed enough for split R-hat)."""
    position = np.zeros(shape.size)
    if shape.judges:
        m = shape.confusion_rows[0]
        rows = []
        for r in range(len(shape.confusion_rows)):
            truth = r % 3 if shape.independent else r
            q = np.full(m, 0.4 / (m - 1))
            # The independent model's row r is judge r // 3's row for truth r % 3; the joint
            # model's row is truth r, whose "all judges right" verdict is r·(1 + 3 + …).
            right = truth if shape.independent else truth * sum(3**k for k in range(shape.judges))
            q[right] = 0.6
            rows.append(np.log(q[1:]) - np.log(q[0]))
        position[shape.head :] = np.concatenate(rows)
    jitter = jax.random.uniform(key, (chains, shape.size), minval=-1.0, maxval=1.0)
    return jnp.asarray(position)[None, :] + jitter


def sample_arena(
    key: Array, data: ArenaData, shape: ArenaShape, settings: SamplerSettings = DEFAULT_SETTINGS
) -> ArenaDraws:
    """The posterior's draws of an arena (its cells in ``data``) by NUTS, and their health."""
    jax.config.update("jax_enable_x64", True)
    init_key, run_key = jax.random.split(key)
    mcmc = MCMC(
        NUTS(
            potential_fn=lambda position: -logdensity(position, data, shape),
            target_accept_prob=settings.target_accept,
        ),
        num_warmup=settings.warmup,
        num_samples=settings.samples,
        num_chains=settings.chains,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(run_key, init_params=_initial_positions(init_key, shape, settings.chains))
    positions = mcmc.get_samples(group_by_chain=True)  # (chains, samples, d)
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    # Draw by draw in blocks: all M at once would hold M × S × S × 3 pair probabilities.
    summary = jax.jit(
        lambda p: jax.lax.map(lambda x: _draw_summary(x, shape), p, batch_size=SUMMARY_BLOCK)
    )(positions.reshape(-1, shape.size))
    strengths, log_nu, win_rates, better, pairs, log_confusion = (
        None if x is None else np.asarray(x) for x in summary
    )
    # Health over what is reported: the strengths (or win rates), ν, the confusions.
    grouped = [win_rates.reshape(settings.chains, settings.samples, -1)]
    if not shape.pairs:
        grouped.append(strengths.reshape(settings.chains, settings.samples, -1))
        grouped.append(log_nu.reshape(settings.chains, settings.samples, 1))
    if log_confusion is not None:
        grouped.append(log_confusion.reshape(settings.chains, settings.samples, -1))
    stacked = np.concatenate(grouped, axis=-1)
    rhat = np.asarray(split_gelman_rubin(stacked))
    ess = np.asarray(effective_sample_size(stacked))
    return ArenaDraws(
        strengths=strengths,
        log_nu=log_nu,
        win_rates=win_rates,
        better=better,
        pairs=pairs,
        log_confusion=log_confusion,
        rhat_max=float(np.nanmax(rhat)),
        ess_min=float(np.nanmin(ess)),
        divergences=divergences,
    )


class BatchDraws(NamedTuple):
    """The draws of a batch of arenas (:func:`sample_arenas`).

    Attributes:
        strengths: ``(B, chains, samples, S)`` centred strengths.
        divergences: ``(B,)`` divergent transitions after warm-up.
        rhat_max, ess_min: ``(B,)`` the worst split R-hat and bulk ESS of the strengths.
    """

    strengths: np.ndarray
    divergences: np.ndarray
    rhat_max: np.ndarray
    ess_min: np.ndarray


@functools.lru_cache(maxsize=8)
def _batch_program(shape: ArenaShape, settings: SamplerSettings):
    """The jitted ``(keys, data) -> (strengths, divergences)`` of a call of
    :func:`sample_arenas`, built once per shape and settings (both hashable), so that a
    simulation's many calls compile once."""
    init_kernel, sample_kernel = hmc(
        potential_fn_gen=lambda d: lambda position: -logdensity(position, d, shape),
        algo="NUTS",
    )
    total = settings.warmup + settings.samples

    def chain(key, position, d):
        state = init_kernel(
            position,
            num_warmup=settings.warmup,
            target_accept_prob=settings.target_accept,
            model_args=(d,),
            rng_key=key,
        )

        def transition(state, _):
            state = sample_kernel(state, model_args=(d,))
            return state, (unpack(state.z, shape).strengths, state.diverging)

        _, (strengths, diverging) = jax.lax.scan(transition, state, None, length=total)
        return strengths[settings.warmup :], diverging[settings.warmup :].sum()

    def arena(key, d):
        init_key, run_key = jax.random.split(key)
        positions = _initial_positions(init_key, shape, settings.chains)
        chain_keys = jax.random.split(run_key, settings.chains)
        return jax.vmap(chain, in_axes=(0, 0, None))(chain_keys, positions, d)

    # Calls of a fixed size, the last padded: XLA's code (and its rounding, which chaotic
    # trajectories amplify) depends on the batch's size, so a lane's draws would otherwise
    # depend on how many arenas were sampled with it (not on which, nor on its slot).
    return jax.jit(jax.vmap(arena))


def sample_arenas(
    keys: Array, data: ArenaData, shape: ArenaShape, settings: SamplerSettings = DEFAULT_SETTINGS
) -> BatchDraws:
    """The strengths' posterior draws of B arenas of one shape in one vectorised call.

    NumPyro's NUTS kernel (its functional form, :func:`numpyro.infer.hmc.hmc`, each chain
    its own adaptation) vmapped over the arenas and their chains, so that a batch of small
    arenas (a simulation's replicates) shares one compiled program and every loop trip.
    For one large arena :func:`sample_arena` is the same sampler. The arenas run in calls of
    :data:`ARENAS_PER_CALL`, the last padded.

    Args:
        keys: ``(B,)`` one key per arena; arena b's draws depend on ``keys[b]`` and its
            data alone.
        data: :class:`ArenaData` with leading ``(B,)`` in one layout
            (:func:`kernels.arena.simulate.cell_data`).
        shape: the arenas' :class:`ArenaShape` (strengths, not ``pairs``).
        settings: NUTS settings.
    """
    if shape.pairs:
        raise ValueError("sample_arenas: the strengths model only (shape.pairs is True)")
    jax.config.update("jax_enable_x64", True)
    run = _batch_program(shape, settings)
    b = keys.shape[0]
    parts = []
    for start in range(0, b, ARENAS_PER_CALL):
        index = np.resize(np.arange(start, min(start + ARENAS_PER_CALL, b)), ARENAS_PER_CALL)
        out = run(keys[index], jax.tree.map(lambda x, i=index: x[i], data))
        parts.append([np.asarray(x)[: min(ARENAS_PER_CALL, b - start)] for x in out])
    strengths, divergences = (np.concatenate(x) for x in zip(*parts, strict=True))
    rhat = np.stack([np.asarray(split_gelman_rubin(x)) for x in strengths])
    ess = np.stack([np.asarray(effective_sample_size(x)) for x in strengths])
    return BatchDraws(
        strengths=strengths,
        divergences=np.asarray(divergences).sum(axis=1),
        rhat_max=np.nanmax(rhat, axis=1),
        ess_min=np.nanmin(ess, axis=1),
    )


def rank_draws(strengths: np.ndarray) -> np.ndarray:
    """``(M, S)`` int each system's rank in each draw (1 the strongest; ties by index)."""
    order = np.argsort(-strengths, axis=1, kind="stable")
    ranks = np.empty_like(order)
    rows = np.arange(strengths.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, strengths.shape[1] + 1)[None, :]
    return ranks


def rank_intervals(ranks: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """``(S,)`` lower and upper ends of each rank's central interval at ``level`` (ranks of
    the draws, the inverted empirical CDF)."""
    tail = (1.0 - level) / 2.0
    low = np.quantile(ranks, tail, axis=0, method="inverted_cdf")
    high = np.quantile(ranks, 1.0 - tail, axis=0, method="inverted_cdf")
    return low.astype(int), high.astype(int)


def simultaneous_rank_sets(ranks: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """``(S,)`` rank intervals that hold every system's rank at once in a share ≥ ``level``
    of the draws: the central intervals at the largest common tail that still does.

    The tail shrinks from (1 − level)/2 (each interval alone at ``level``) until the share
    of draws whose every rank is inside reaches ``level``; at tail 0 the intervals hold
    every draw.
    """
    m = ranks.shape[0]
    tails = np.unique(np.concatenate([np.arange(0, m + 1) / m, [(1.0 - level) / 2.0]]))
    tails = tails[tails <= (1.0 - level) / 2.0][::-1]
    for tail in tails:
        low = np.quantile(ranks, tail, axis=0, method="inverted_cdf")
        high = np.quantile(ranks, 1.0 - tail, axis=0, method="inverted_cdf")
        inside = np.all((ranks >= low) & (ranks <= high), axis=1).mean()
        if inside >= level:
            return low.astype(int), high.astype(int)
    return ranks.min(axis=0), ranks.max(axis=0)  # pragma: no cover - tail 0 holds all
