"""What the categorical fits cost: the project's NUTS beside NumPyro's, and the classical
estimators, on preferences (K = L = 3, one judge).

In one run, side by side:

(a) ``kernels.categorical.nuts.sample_fits`` on ``--lanes`` fits drawn across realistic
    settings (accuracy 0.5–0.95, tie rate 0.1–0.4, position bias ±0.2, win 0.2–0.65,
    ties 0.05–0.3, N_Φ 50–1000 shared with the paired set, N_M 500–10^5, both
    log-uniform), at the sweep's default settings (4 chains × (500 + 1000)): cold (the
    first call, compile included) and marginal (a second call, timed alone) fits/s;
(b) the same model written in NumPyro (Dirichlet(1) priors on π and every row of C,
    multinomial likelihoods), one ``numpyro.infer.MCMC`` (NUTS, 4 chains, vectorised
    chains, the same warm-up and draws) per configuration on the first ``--numpyro``
    lanes: fits/s with the first (its compile) and without it;
(c) the five classical estimators (``kernels/categorical/estimators.py``) jitted
    together on ``--estimator-lanes`` lanes: fits/s of a second call.

The record (fits/s, leapfrogs per transition, divergences, worst R-hat and the ratios)
is written to ``--out`` as ``categorical-<device>-<time>.json``; the ratios are printed.

Usage: python scripts/bench_categorical.py [--lanes 512] [--numpyro 8]
           [--estimator-lanes 100000] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from binmetric_sweep.kernels.categorical.counts import (  # noqa: E402
    CategoricalDesign,
    Layout,
    draw_counts,
)
from binmetric_sweep.kernels.categorical.estimators import CATEGORICAL_FORMS  # noqa: E402
from binmetric_sweep.kernels.categorical.families import (  # noqa: E402
    PREFERENCE_VALUES,
    preference_confusion,
    preference_shares,
)
from binmetric_sweep.kernels.categorical.nuts import sample_fits  # noqa: E402
from binmetric_sweep.kernels.nuts import (  # noqa: E402
    NUTSSettings,
    resolve_loop,
    sampler_key,
    summarize_draws,
)
from binmetric_sweep.sweep.storage.records import provenance, write_record  # noqa: E402

PREFERENCE = Layout(PREFERENCE_VALUES)


def _log_uniform(rng, low, high, size):
    return np.round(np.exp(rng.uniform(np.log(low), np.log(high), size)))


def draw_lanes(b: int, seed: int):
    """``(B,)`` preference campaigns' counts across the ranges in the module's docstring."""
    rng = np.random.default_rng(seed)
    tie = rng.uniform(0.05, 0.3, b)
    win = rng.uniform(0.2, 0.65, b) * (1.0 - tie)
    n_phi = _log_uniform(rng, 50, 1000, b)
    confusion = preference_confusion(
        rng.uniform(0.5, 0.95, b), rng.uniform(0.1, 0.4, b), rng.uniform(-0.2, 0.2, b)
    )
    design = CategoricalDesign(
        shares=np.asarray(preference_shares(win, tie)),
        confusion=np.asarray(confusion),
        n_phi=n_phi,
        n_rho_eta=n_phi,
        paired_shares=np.full((b, 3), 1 / 3),
        n_m=_log_uniform(rng, 500, 1e5, b),
        shared_paired=np.ones(b, bool),
        known=np.zeros(b, bool),
    )
    keys = jax.random.split(jax.random.key(seed + 1), b)
    return jax.tree.map(np.asarray, jax.jit(jax.vmap(draw_counts))(keys, design))


def _timed(f, *args):
    start = time.perf_counter()
    out = jax.block_until_ready(f(*args))
    return out, time.perf_counter() - start


def bench_nuts(counts, settings: NUTSSettings, seed: int) -> dict:
    b = counts.human.shape[0]
    keys = jax.vmap(lambda i: sampler_key(jax.random.fold_in(jax.random.key(seed), i)))(
        jnp.arange(b)
    )
    run = jax.jit(lambda k, c: sample_fits(k, c, PREFERENCE, settings, False))
    _, cold = _timed(run, keys, counts)
    draws, hot = _timed(run, keys, counts)
    summary = summarize_draws(np.asarray(draws.alpha), 0.95)
    transitions = b * settings.chains * settings.samples
    return {
        "lanes": b,
        "cold_s": cold,
        "marginal_s": hot,
        "cold_fits_per_s": b / cold,
        "marginal_fits_per_s": b / hot,
        "leapfrogs_per_transition": float(np.asarray(draws.steps).sum() / transitions),
        "leapfrogs_per_chain": float(np.asarray(draws.leapfrogs).mean()),
        "divergences": int(np.asarray(draws.divergences).sum()),
        "max_rhat": float(np.max(summary.rhat)),
        "min_ess": float(np.min(summary.ess)),
        "mean_theta": summary.mean,
    }


def numpyro_model(human, paired, judged):
    """The same posterior in NumPyro: Dirichlet(1) priors, multinomial likelihoods."""
    import numpyro
    import numpyro.distributions as dist

    human, paired, judged = (jnp.asarray(x) for x in (human, paired, judged))
    k, outcomes = paired.shape
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(k)))
    c = numpyro.sample("c", dist.Dirichlet(jnp.ones((k, outcomes))).to_event(1))
    numpyro.sample("h", dist.Multinomial(jnp.sum(human), pi), obs=human)
    numpyro.sample("t", dist.Multinomial(jnp.sum(paired, -1), c).to_event(1), obs=paired)
    numpyro.sample("m", dist.Multinomial(jnp.sum(judged), pi @ c), obs=judged)


def bench_numpyro(counts, settings: NUTSSettings, fits: int, seed: int) -> dict:
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(
        NUTS(numpyro_model, target_accept_prob=settings.target_accept),
        num_warmup=settings.warmup,
        num_samples=settings.samples,
        num_chains=settings.chains,
        chain_method="vectorized",
        progress_bar=False,
        jit_model_args=True,
    )
    seconds, means, rhats = [], [], []
    values = jnp.asarray(PREFERENCE_VALUES)
    for i in range(fits):
        args = (counts.human[i], counts.paired[i], counts.judged[i])
        start = time.perf_counter()
        mcmc.run(jax.random.key(seed + i), *args)
        theta = jax.block_until_ready(mcmc.get_samples(group_by_chain=True)["pi"] @ values)
        seconds.append(time.perf_counter() - start)
        summary = summarize_draws(np.asarray(theta)[None], 0.95)
        means.append(float(summary.mean[0]))
        rhats.append(float(summary.rhat[0]))
    rest = seconds[1:] or seconds
    return {
        "fits": fits,
        "seconds": seconds,
        "fits_per_s": fits / sum(seconds),
        "marginal_fits_per_s": len(rest) / sum(rest),
        "mean_theta": means,
        "max_rhat": max(rhats),
    }


def bench_estimators(counts, level: float = 0.95) -> dict:
    def all_five(c):
        return {name: f(c, PREFERENCE, level) for name, f in CATEGORICAL_FORMS.items()}

    run = jax.jit(all_five)
    _, cold = _timed(run, counts)
    _, hot = _timed(run, counts)
    b = counts.human.shape[0]
    return {"lanes": b, "cold_s": cold, "marginal_s": hot, "fits_per_s": b / hot}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=512)
    parser.add_argument("--numpyro", type=int, default=8, help="NumPyro fits (0: none)")
    parser.add_argument("--estimator-lanes", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)

    settings = resolve_loop(NUTSSettings(), "cpu")
    counts = draw_lanes(args.lanes, args.seed)
    nuts = bench_nuts(counts, settings, args.seed + 2)
    print(
        f"(a) NUTS, {args.lanes} lanes: {nuts['marginal_fits_per_s']:.2f} fits/s marginal, "
        f"{nuts['cold_fits_per_s']:.2f} cold; {nuts['leapfrogs_per_transition']:.1f} "
        f"leapfrogs/transition, {nuts['divergences']} divergences, "
        f"max R-hat {nuts['max_rhat']:.4f}",
        flush=True,
    )
    record = {
        **provenance("bench_categorical.py", argv),
        "settings": settings._asdict(),
        "nuts": {k: v for k, v in nuts.items() if k != "mean_theta"},
    }
    if args.numpyro:
        numpyro = bench_numpyro(counts, settings, args.numpyro, args.seed + 3)
        ours = np.asarray(nuts["mean_theta"][: args.numpyro])
        numpyro["largest_mean_difference"] = float(
            np.max(np.abs(ours - np.asarray(numpyro["mean_theta"])))
        )
        record["numpyro"] = numpyro
        record["nuts_over_numpyro"] = nuts["marginal_fits_per_s"] / numpyro["marginal_fits_per_s"]
        print(
            f"(b) NumPyro MCMC, {args.numpyro} fits: {numpyro['marginal_fits_per_s']:.3f} "
            f"fits/s after its compile ({numpyro['fits_per_s']:.3f} with it); ours "
            f"{record['nuts_over_numpyro']:.1f}× faster; means differ by at most "
            f"{numpyro['largest_mean_difference']:.4f}",
            flush=True,
        )
    if args.estimator_lanes:
        big = draw_lanes(args.estimator_lanes, args.seed + 4)
        estimators = bench_estimators(big)
        record["estimators"] = estimators
        record["estimators_over_nuts"] = estimators["fits_per_s"] / nuts["marginal_fits_per_s"]
        print(
            f"(c) five classical estimators, {args.estimator_lanes} lanes: "
            f"{estimators['fits_per_s']:.3g} fits/s "
            f"({record['estimators_over_nuts']:.3g}× NUTS's)",
            flush=True,
        )
    path = write_record(record, args.out, f"categorical-{jax.devices()[0].platform}")
    print(f"record: {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
