"""The check of :func:`~binmetric_sweep.sweep.compare.analysis.compare_systems`: the same
comparison from NUTS draws (NumPyro, chains vectorised), ``sweep compare --method nuts``.

One model holds every system: α_s ~ Beta(n₊ + 1, N_Φ − n₊ + 1) (the human
ratings), m₊ₛ ~ Binomial(N_Mₛ, α_s ρ + (1 − α_s)(1 − η)), with (ρ_s, η_s) per
system from its own paired ratings' Betas (per-system, 3S dimensions, the
systems independent) or one (ρ, η) from the pooled paired ratings (shared,
S + 2 dimensions): the rate model's sites (:attr:`~.analysis.RateModel.drawn_rates`).
A pair's P(α_a > α_b) is the share of draws with
α_a > α_b; R-hat and ESS are NumPyro's (numpyro.diagnostics).
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.infer import MCMC, NUTS

from binmetric_sweep.sweep.compare.analysis import (
    Comparison,
    RateModel,
    counts_of,
    pair_table,
    ranked,
)
from binmetric_sweep.sweep.compare.options import CompareOptions, Method, options_of

__all__ = ["NUTS_CHAINS", "compare_by_nuts"]

#: Chains, warm-up and kept draws per chain (the sweep's NUTS defaults).
NUTS_CHAINS, NUTS_WARMUP, NUTS_SAMPLES = 4, 500, 1000
#: Sampler health below which a warning line is printed.
RHAT_LIMIT, ESS_LIMIT = 1.01, 400


def _model(c, rates: RateModel):
    """The NUTS model of the counts ``c``; ``rates`` draws ρ, η (:attr:`RateModel.drawn_rates`)
    from each system's paired ratings' Beta parameters."""
    systems = numpyro.plate("systems", c["n_phi"].shape[0])
    a_r, b_r = c["n_tp"] + 1.0, c["n_pos_paired"] - c["n_tp"] + 1.0
    a_e, b_e = c["n_tn"] + 1.0, c["n_neg_paired"] - c["n_tn"] + 1.0
    rho, eta = rates.drawn_rates(a_r, b_r, a_e, b_e, systems)
    with systems:
        alpha = numpyro.sample("alpha", dist.Beta(c["n_pos"] + 1.0, c["n_phi"] - c["n_pos"] + 1.0))
        p = jnp.clip(alpha * rho + (1 - alpha) * (1 - eta), 1e-300, 1 - 1e-16)
        numpyro.sample("metric", dist.Binomial(c["n_m"], probs=p), obs=c["m_pos"])


def compare_by_nuts(
    counts: pd.DataFrame, options: CompareOptions | None = None, **fields
) -> Comparison:
    """The comparison of :func:`compare_systems` from NUTS draws (see the module's text).

    ``options`` (:class:`~.options.CompareOptions`: its rate model, γ, level, adjustment
    and seed are read), or in its place the keyword fields ``rates``, ``gamma``,
    ``level``, ``adjust`` (values or their names, as for :func:`compare_systems`) and
    ``seed`` (default 0).

    Raises:
        SweepError: an option out of range (one line naming it).
        TypeError: both ``options`` and fields, or a field not listed above.
    """
    o = options_of(options, fields, "compare_by_nuts", _NUTS_FIELDS)
    o = replace(o, method=Method.NUTS)
    jax.config.update("jax_enable_x64", True)
    model, adjustment, level = o.rates, o.adjust, o.level
    c = counts_of(counts)
    data = {
        k: jnp.asarray(v, jnp.float64)
        for k, v in c._asdict().items()
        if k not in ("rho", "eta", "rho_eta_known")
    }
    mcmc = MCMC(
        NUTS(lambda: _model(data, model)),
        num_warmup=NUTS_WARMUP,
        num_samples=NUTS_SAMPLES,
        num_chains=NUTS_CHAINS,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.PRNGKey(o.seed))
    draws = np.asarray(mcmc.get_samples(group_by_chain=True)["alpha"])  # (chains, draws, S)
    flat = draws.reshape(-1, draws.shape[-1])
    tail = (1 - level) / 2
    mean, sd = flat.mean(axis=0), flat.std(axis=0, ddof=1)
    low, high = np.quantile(flat, [tail, 1 - tail], axis=0)
    rhat = np.asarray(split_gelman_rubin(draws))
    ess = np.asarray(effective_sample_size(draws))
    p = np.mean(flat[:, :, None] > flat[:, None, :], axis=0)
    np.fill_diagonal(p, 0.5)
    systems, p = ranked(counts, model, (mean, sd, low, high), p)
    sampler = {
        "chains": NUTS_CHAINS,
        "draws": NUTS_CHAINS * NUTS_SAMPLES,
        "rhat_max": float(np.max(rhat)),
        "ess_min": float(np.min(ess)),
    }
    settings = o.settings(posterior=True, sampler=sampler)
    warnings = model.nuts_warnings(counts)
    if settings["rhat_max"] > RHAT_LIMIT or settings["ess_min"] < ESS_LIMIT:
        warnings.append(
            f"NUTS: largest R-hat {settings['rhat_max']:.3f}, smallest ESS "
            f"{settings['ess_min']:.0f}: the draws may not represent the posterior"
        )
    pairs = pair_table(systems, p, o.gamma, adjustment)
    return Comparison(systems, pairs, settings, warnings, p)


#: The keyword fields :func:`compare_by_nuts` takes in place of its options.
_NUTS_FIELDS = ("rates", "gamma", "level", "adjust", "seed")
