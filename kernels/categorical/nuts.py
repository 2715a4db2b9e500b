"""Batched NUTS for the categorical posterior: θ = vᵀπ's draws from (π, C) chains.

The project's engine runs it unchanged (:mod:`kernels.stepwise`, :mod:`kernels.chain_kernel`,
both loops of :mod:`kernels.nuts`): the sampler knows no model, only a potential and what
to keep of each draw. Here the potential is −:func:`logdensity.logdensity` in the
additive log-ratio coordinates of π and of each row of C (or of each judge's C_j), and
each kept draw is θ, so that :class:`kernels.nuts.ChainDraws` (its ``alpha`` field holding
θ) and :func:`kernels.nuts.summarize_draws` serve as they are.

The model's numbers (:class:`logdensity.DensityTerms`) are one scalar per lane in every
leaf, as the chain kernel takes its arguments; the density is written over each
coordinate's scalar, as its Triton lowering needs. ``ridge`` does not apply.

Nothing here is jitted.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout
from binmetric_sweep.kernels.categorical.logdensity import (
    DensityTerms,
    alr,
    density_terms,
    logdensity,
    theta,
)
from binmetric_sweep.kernels.nuts import ChainDraws, NUTSSettings, chain_keys, run_chains

Array = jax.Array

__all__ = ["initial_position", "sample_fits"]


def initial_position(key: Array, terms: DensityTerms) -> Array:
    """A starting point drawn from the posterior *without* the judge-only items.

    π ~ Dir(h + 1) and each row of C (or of each judge's C_j) ~ Dir(T_k + 1): the
    Dirichlets whose exponents ``terms`` carries. They are overdispersed relative to the
    full posterior (which the judge-only items only sharpen), as split R-hat needs.

    Args:
        key: the chain's initial key.
        terms: one lane's :func:`logdensity.density_terms`.

    Returns:
        ``(d,)`` log-ratios (:func:`logdensity.alr` of each drawn distribution).
    """
    keys = jax.random.split(key, len(terms.exponents))
    parts = [
        alr(jax.random.dirichlet(k, jnp.stack(a)))
        for k, a in zip(keys, terms.exponents, strict=True)
    ]
    return jnp.concatenate(parts)


def _potential_fn_gen(layout: Layout, independent: bool):
    """``terms -> (position -> −log density)``, for :func:`kernels.stepwise.make_sampler`."""
    # Times −1 rather than negated, as kernels/nuts.py does: a negated constant in the
    # gradient is what Pallas's Triton lowering cannot take.
    return lambda terms: lambda position: logdensity(position, terms, layout, independent) * -1.0


def sample_fits(
    keys: Array,
    counts: CategoricalCounts,
    layout: Layout,
    settings: NUTSSettings,
    independent: bool,
    slots: int | None = None,
    n_valid=None,
    *,
    known: bool = False,
) -> ChainDraws:
    """Every chain of a batch of categorical fits in one loop.

    Args:
        keys: ``(B,)`` the fits' sampler keys (:func:`kernels.nuts.sampler_key` of each
            replicate key); chain c of a fit uses ``fold_in(key, c)``, split into its
            initial and run keys, as :func:`kernels.nuts.sample_fits` derives them.
        counts: :class:`CategoricalCounts` with leading ``(B,)``.
        layout: the classes' values and the number of judges (static).
        settings: sampler settings, resolved (:func:`kernels.nuts.resolve_loop`); both
            loops run (``"leapfrog"``, ``"kernel"``); ``ridge`` is not read.
        independent: judges independent given the truth (static; the same model as
            the joint one for J = 1).
        slots: static; chains in flight at once with ``loop="leapfrog"``
            (:func:`kernels.stepwise.run_queue`; all if None).
        n_valid: run only the first ``n_valid`` fits (traced; all if None), the rest
            coming back as zeros.
        known: C is known (static): the model samples π alone, and reads C from
            ``counts.confusion``; every lane of a call is one model.

    Returns:
        :class:`kernels.nuts.ChainDraws` with leading ``(B, chains)``; its ``alpha`` holds
        θ = vᵀπ's draws ``(B, chains, samples)``. A fit's draws do not depend on the
        other fits of the batch.
    """
    b, chains = keys.shape[0], settings.chains
    lane_keys = jax.vmap(lambda k: chain_keys(k, chains))(keys).reshape(b * chains)
    init_keys, run_keys = jnp.moveaxis(jax.vmap(jax.random.split)(lane_keys), 1, 0)
    terms = density_terms(counts, layout, independent, known)
    lane_terms = jax.tree.map(lambda x: jnp.repeat(jnp.asarray(x), chains, axis=0), terms)
    positions = jax.vmap(initial_position)(init_keys, lane_terms)
    valid = None if n_valid is None else n_valid * chains
    draws = run_chains(
        _potential_fn_gen(layout, independent),
        (lane_terms,),
        run_keys,
        positions,
        settings,
        lambda position: theta(position, layout),
        slots,
        valid,
    )
    return jax.tree.map(lambda x: x.reshape(b, chains, *x.shape[1:]), draws)
