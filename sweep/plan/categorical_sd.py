"""The planning SD of θ = vᵀπ at sizes (N_Φ, N_M) of a K-class campaign, from expected counts.

Two kinds, both over ``(B,)`` lanes of :class:`kernels.categorical.counts.CategoricalDesign`
at their expected counts (:func:`mean_counts`: h = N_Φ·π, T_k = T_k·C_k, m = N_M·Cᵀπ, not
rounded; :func:`kernels.categorical.counts.expected_counts` rounds them so that each part is
a whole number, which at a few items leaves every judge-only item in one verdict, with an
SE of 0, and makes σ a step function of the sizes; above a few hundred items the two agree
to rounding):

* a classical estimator's own SE (:func:`classical_se`): its ``Estimate.se`` at those
  counts, the closed form or delta method it reports (NaN where it does not apply);
* the posterior's asymptotic SD (:func:`posterior_sd`): the Fisher-information (Laplace)
  SD of θ in the additive log-ratio coordinates that :mod:`kernels.categorical.logdensity`
  samples, √(gᵀI⁻¹g). Each Dirichlet part (π from h, each row of C from T) contributes
  A·(diag q − qqᵀ), its exponents' total A (counts + 1 per part: the Dirichlet(1) prior
  with the Jacobian) at q = its exponents' shares, which is that part's own mode; the
  judge-only items add N_M·J_pᵀ diag(1/p) J_p, p = Cᵀπ at those q (J_p = ∂p/∂x, by
  ``jax.jacfwd``); g = ∂θ/∂x. Smoothed shares keep q interior where a true share is 0 (a
  judge that never says tie), and the information positive definite at any sizes. As N
  grows it is the observed information at the MLE (Bernstein–von Mises); at small N it
  is an approximation, which the planner measures against NUTS (:mod:`.categorical`).

Compiled once per (estimator, layout, lanes) and kept: the search calls these at a few
fixed lane counts (:func:`padded`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from binmetric_sweep.kernels.categorical.counts import (
    CategoricalCounts,
    CategoricalDesign,
    Layout,
    judged_rates,
)
from binmetric_sweep.kernels.categorical.logdensity import (
    density_terms,
    log_parameters,
)
from binmetric_sweep.sweep.spec.lanes import require_float64

__all__ = ["classical_se", "mean_counts", "padded", "posterior_sd", "posterior_sd_of_counts"]

#: Lanes of one compiled call: candidate lists are padded to a multiple (fewer compiles).
_CALL_LANES = 256


def padded(fn, *lanes, multiple: int = _CALL_LANES):
    """``fn`` (a compiled function of ``(B,)`` lanes: pytrees with leading ``(B,)``) on
    ``lanes``, padded with the first lane to a multiple of ``multiple``, so that a search's
    rounds reuse a few compiled shapes; its ``(B,)`` outputs, as NumPy."""
    b = int(np.shape(jax.tree.leaves(lanes[0])[0])[0])
    size = max(multiple, -(-b // multiple) * multiple)
    index = np.concatenate([np.arange(b), np.zeros(size - b, int)])

    def pad(x):
        return x[index] if isinstance(x, jax.Array) else jnp.asarray(np.asarray(x)[index])

    out = fn(*(jax.tree.map(pad, tree) for tree in lanes))
    return jax.tree.map(lambda x: np.asarray(x)[:b], out)


def mean_counts(design: CategoricalDesign) -> CategoricalCounts:
    """One lane's expected counts, not rounded: h = N_Φ·π; T's rows total h (shared), N_ρη·ψ
    (separate) or 0 (C known), T_k = T_k·C_k; m = N_M·Cᵀπ."""
    human = design.n_phi * design.shares
    rows = jnp.where(design.shared_paired, human, design.n_rho_eta * design.paired_shares)
    rows = jnp.where(design.known, 0.0, rows)
    return CategoricalCounts(
        human=human,
        paired=rows[:, None] * design.confusion,
        judged=design.n_m * judged_rates(design.shares, design.confusion),
        confusion=design.confusion,
        known=design.known,
    )


@functools.cache
def _classical_program(form, layout: Layout):
    def run(designs):
        counts = jax.vmap(mean_counts)(designs)
        found = form(counts, layout, 0.95)
        return found.se, found.reason

    return jax.jit(run)


def classical_se(form, layout: Layout, designs: CategoricalDesign) -> tuple[np.ndarray, np.ndarray]:
    """A classical estimator's SE of θ at each lane's expected counts, and why it does not
    apply.

    Args:
        form: the estimator's K-class form (:attr:`kernels.estimators.Estimator.categorical`).
        layout: the classes' values and the judges.
        designs: ``(B,)`` lanes.

    Returns:
        ``(B,)`` its ``Estimate.se`` (NaN where it does not apply) and ``(B,)`` its reason
        code (:data:`kernels.estimates.REASONS`; 0 where it applies).
    """
    require_float64()
    return padded(_classical_program(form, layout), designs)


def posterior_sd_of_counts(
    counts: CategoricalCounts, layout: Layout, independent: bool = False, known: bool = False
):
    """One lane's asymptotic posterior SD of θ (module docstring) at ``counts``.

    Args:
        counts: one lane's :class:`CategoricalCounts` (real-valued counts are taken).
        layout: the classes' values and the judges (static).
        independent: the posterior takes the judges as independent given the truth
            (each judge's C_j sampled), else their joint verdict (static).
        known: the confusion is known (static): π alone is sampled.

    Returns:
        A scalar SD, on θ's scale.
    """
    terms = density_terms(counts, layout, independent, known)
    exponents = [jnp.stack(a) for a in terms.exponents]
    shares = [a / a.sum() for a in exponents]
    position = jnp.concatenate([jnp.log(q[1:]) - jnp.log(q[0]) for q in shares])

    def judged_rates(x):
        log_pi, log_c = log_parameters(x, layout, independent, terms)
        pi = jnp.exp(jnp.stack(log_pi))
        c = jnp.exp(jnp.stack([jnp.stack(row) for row in log_c]))
        return pi @ c

    blocks = [
        a.sum() * (jnp.diag(q) - jnp.outer(q, q))[1:, 1:]
        for a, q in zip(exponents, shares, strict=True)
    ]
    info = jax.scipy.linalg.block_diag(*blocks)
    rates = judged_rates(position)
    jac = jax.jacfwd(judged_rates)(position)  # (L, d)
    n_m = jnp.sum(counts.judged)
    info = info + n_m * (jac.T / rates) @ jac
    pi = shares[0]
    v = jnp.asarray(layout.values, pi.dtype)
    grad = jnp.zeros(position.shape[0], pi.dtype).at[: len(v) - 1].set(pi[1:] * (v[1:] - pi @ v))
    return jnp.sqrt(grad @ jnp.linalg.solve(info, grad))


@functools.cache
def _posterior_program(layout: Layout, independent: bool, known: bool):
    def run(designs):
        counts = jax.vmap(mean_counts)(designs)
        return jax.vmap(lambda c: posterior_sd_of_counts(c, layout, independent, known))(counts)

    return jax.jit(run)


def posterior_sd(
    layout: Layout, designs: CategoricalDesign, independent: bool = False
) -> np.ndarray:
    """``(B,)`` the posterior's asymptotic SD of θ at each lane's expected counts
    (:func:`posterior_sd_of_counts`); every lane's confusion known, or none."""
    require_float64()
    known = np.unique(np.asarray(designs.known, bool))
    if len(known) > 1:
        raise ValueError("posterior_sd: lanes with and without a known confusion")
    program = _posterior_program(layout, bool(independent), bool(known[0]))
    return padded(program, designs)
