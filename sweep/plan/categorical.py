"""``sweep plan --ratings preference|scale|classes``: the cheapest (N_Φ, N_M) of a K-class
campaign for a target ε on θ (or the least ε within a budget), per estimator, checked by
simulated campaigns.

A scenario is a :class:`~.categorical_spec.JudgedPlanSpec`: a preference
(:class:`~.preference_spec.PreferencePlanSpec`) or a scale or named classes
(:class:`~.scale_spec.ScalePlanSpec`); it gives the planner its layout, its lane designs at
(N_Φ, N_M), θ and the shifted system the power check compares it with (its prices, and what
is not priced, are :mod:`.categorical_spec`'s). For each estimator, ε = √2·σ·(z₁₋γ/₂ +
z_power), σ the planning SD of θ at integer sizes from expected counts
(:mod:`.categorical_sd`):

* a classical estimator: its own SE at the expected counts (delta method or closed form);
* ``bayes``: the posterior's asymptotic (Fisher-information) SD for the search; at the plan
  the posterior SD is measured by NUTS (:func:`nuts_check`, the sweep's sampler on the
  plan's expected counts). Where the two differ by more than :data:`KAPPA_TOLERANCE` plus
  two Monte Carlo SEs, the asymptotic SD is scaled by κ = σ_NUTS/σ_asymptotic (as the
  binary planner scales its surrogate by the quadrature) and the plan re-solved once, and
  NUTS measured again at the new plan; both SDs are reported.

The search (:func:`search_sizes`) is exact on integers: for N_M on a geometric grid from 1
to :data:`~.spec.UNLIMITED`, and 0, the least N_Φ ≥ 0 with ε ≤ target by bisection (NaN,
where the estimator does not apply, counts as not meeting it), so every plan has
ε(N_Φ, N_M) ≤ target < ε(N_Φ − 1, N_M); the cheapest, then N_M refined on integers between
its grid neighbours (steps of 0.2 % of N_M). Budget mode: at each N_M the rest of the
budget on human verdicts, the least ε, then N_Φ lowered to the least that keeps that ε.
Every candidate list is one vectorised, compiled call.

**Unreachable**: a target no sizes up to the limit reach (a separate paired set, whose
fixed N caps what the judges' confusion can be learnt to; an estimator whose SE floor is
above it), or one the budget cannot buy: the plan is the least ε within the budget,
marked unreachable. With a shared paired set, as N_M → ∞ σ falls to a floor set by the
confusion's uncertainty, learnt from the same N_Φ items: ``n_phi_unlimited`` is the least
N_Φ with unlimited judge verdicts, ``eps_floor`` the least ε with all of a budget on human
verdicts.

**A second judge** (J ≥ 2): every plan is also made with judge 1 alone at its price
(:meth:`~.categorical_spec.JudgedPlanSpec.one_judge`), so that the cheaper is shown.

**Checked by simulation** (:func:`simulate_tests`): R campaigns each of three systems at the
plan's sizes: θ, θ + ε (or θ − ε: the scenario's ``shifted``, which for a preference moves
``win`` with ``tie`` kept and for a scale moves items from the lowest value to the highest),
and a second at θ; sampled counts (:func:`kernels.categorical.counts.draw_counts`), the
estimator's estimate and SE (the posterior's mean and SD, by NUTS), and the two-sided
z-test at γ: the empirical power (θ vs θ ± ε) and type-I rate (θ vs θ) with their Monte
Carlo SEs. The classical estimators are simulated by default (seconds); ``bayes`` only when
asked (``replicates`` given): 3R NUTS fits, slow on a CPU (docs/performance.md).
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Iterable
from statistics import NormalDist
from typing import NamedTuple

import jax
import numpy as np

from binmetric_sweep.kernels.categorical.counts import (
    CategoricalCounts,
    draw_counts,
    expected_counts,
)
from binmetric_sweep.kernels.estimates import REASONS
from binmetric_sweep.kernels.estimators import Estimator
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.execution.categorical_fits import fit_categorical_lanes
from binmetric_sweep.sweep.execution.compile_cache import DEFAULT, use_compilation_cache
from binmetric_sweep.sweep.execution.schedule import schedule_for
from binmetric_sweep.sweep.plan.categorical_report import (
    CategoricalPlan,
    CategoricalPlans,
    NUTSCheck,
)
from binmetric_sweep.sweep.plan.categorical_sd import classical_se, padded, posterior_sd
from binmetric_sweep.sweep.plan.categorical_spec import JudgedPlanSpec
from binmetric_sweep.sweep.plan.preference_spec import PreferencePlanSpec, preference_spec
from binmetric_sweep.sweep.plan.scale_spec import ScalePlanSpec, scale_spec
from binmetric_sweep.sweep.plan.spec import BUDGET_SLACK, UNLIMITED
from binmetric_sweep.sweep.spec.lanes import lane_keys, require_float64

__all__ = [
    "DEFAULT_REPLICATES",
    "draw_campaigns",
    "estimates_of",
    "KAPPA_TOLERANCE",
    "Sizes",
    "eps_function",
    "least_n_phi",
    "nuts_check",
    "plan_campaign",
    "plan_preference",
    "plan_scale",
    "search_sizes",
    "simulate_tests",
]

#: Simulated campaigns per system for a classical estimator when ``replicates`` is not given.
DEFAULT_REPLICATES = 400

#: How far σ_NUTS/σ_asymptotic may be from 1, beyond two Monte Carlo SEs, before the plan is
#: re-solved with κ: the asymptotic SD is within about 2 % of NUTS for one judge at N_Φ ≥ 50
#: (tests/sweep/test_plan_preference.py); several joint judges' 9 or 27 outcomes a row
#: take more paired items before it is (5-14 % off at N_Φ = 100-200 with N_M ≫ N_Φ).
KAPPA_TOLERANCE = 0.03

#: N_M tried before refining: 0 and a geometric grid to UNLIMITED (ratio 1.09).
_GRID = np.unique(np.concatenate([[0.0], np.round(np.geomspace(1, UNLIMITED, 240))]))


def _z(spec: JudgedPlanSpec) -> float:
    normal = NormalDist()
    return normal.inv_cdf(1.0 - 0.5 * spec.gamma) + normal.inv_cdf(spec.power)


def eps_function(
    spec: JudgedPlanSpec, estimator: Estimator, kappa: float = 1.0, independent: bool = False
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``(n_phi, n_m) -> ε`` (``(B,)`` arrays) of ``estimator`` on ``spec``: √2·z·σ, σ its SE
    at the expected counts, or for the posterior κ times its asymptotic SD (NaN where the
    estimator does not apply)."""
    scale = math.sqrt(2.0) * _z(spec) * kappa
    layout = spec.layout

    def eps_of(n_phi, n_m):
        n_phi = np.atleast_1d(np.asarray(n_phi, float))
        n_m = np.broadcast_to(np.asarray(n_m, float), n_phi.shape)
        designs = spec.designs(n_phi, n_m)
        if estimator.posterior:
            sd = posterior_sd(layout, designs, independent)
        else:
            sd = classical_se(estimator.categorical, layout, designs)[0]
        return scale * sd

    return eps_of


def least_n_phi(eps_of, n_m: np.ndarray, target: float) -> np.ndarray:
    """Least integer N_Φ ≥ 0 with ε(N_Φ, N_M) ≤ target at each N_M, by bisection: ε(N_Φ) ≤
    target < ε(N_Φ − 1) (NaN is not ≤ target); inf where N_Φ = UNLIMITED does not reach it."""
    n_m = np.asarray(n_m, float)
    zero = eps_of(np.zeros_like(n_m), n_m) <= target
    reach = eps_of(np.full_like(n_m, float(UNLIMITED)), n_m) <= target
    lo, hi = np.zeros_like(n_m), np.full_like(n_m, float(UNLIMITED))
    while np.any(open_ := reach & ~zero & (hi - lo > 1)):
        mid = np.floor(0.5 * (lo + hi))
        good = eps_of(mid, n_m) <= target
        lo = np.where(open_ & ~good, mid, lo)
        hi = np.where(open_ & good, mid, hi)
    return np.where(zero, 0.0, np.where(reach, hi, np.inf))


class Sizes(NamedTuple):
    """One estimator's integer plan (:func:`search_sizes`).

    Attributes:
        n_phi, n_m: the sizes (0 where no plan).
        eps: ε at them (NaN where no plan).
        reachable: the target is met within the budget (budget mode: a plan was found).
        found: a plan was found (else no sizes up to the limit reach the target and there
            is no budget to fall back on).
        n_phi_alone: least N_Φ meeting the target with no judge verdicts (None: none does,
            or no target).
        n_phi_unlimited: least N_Φ meeting it with N_M = UNLIMITED (None: none does).
        eps_floor: with a budget, the least ε with all of it on human verdicts and N_M =
            UNLIMITED; without one, the least ε of N_Φ = N_M = UNLIMITED where the target
            is out of reach (else None).
    """

    n_phi: int
    n_m: int
    eps: float
    reachable: bool
    found: bool
    n_phi_alone: int | None
    n_phi_unlimited: int | None
    eps_floor: float | None


def _refined(y0: float, score) -> float:
    """The integer N_M between ``y0``'s grid neighbours with the least ``score``, in steps of
    0.2 % of N_M."""
    i = int(np.searchsorted(_GRID, y0))
    lo, hi = _GRID[max(i - 1, 0)], _GRID[min(i + 1, len(_GRID) - 1)]
    step = max(1.0, math.floor(2e-3 * y0))
    grid = np.unique(np.concatenate([np.arange(lo, hi + step, step), [y0]]))
    grid = grid[grid <= UNLIMITED]
    return float(grid[np.argmin(score(grid))])


def _size(value: float) -> int | None:
    return int(value) if math.isfinite(value) else None


def search_sizes(spec: JudgedPlanSpec, eps_of) -> Sizes:
    """The cheapest integer (N_Φ, N_M) with ε ≤ ``spec.eps`` (within ``spec.budget`` where
    given), else the least ε within the budget (module docstring)."""
    alone = unlimited = floor = None
    if spec.eps is not None:
        ends = least_n_phi(eps_of, np.array([0.0, float(UNLIMITED)]), spec.eps)
        alone, unlimited = _size(ends[0]), _size(ends[1])

        def target_cost(n_m):
            x = least_n_phi(eps_of, n_m, spec.eps)
            cost = np.where(np.isfinite(x), spec.cost(np.where(np.isfinite(x), x, 0), n_m), np.inf)
            if spec.budget is not None:
                cost = np.where(cost <= spec.budget * (1 + BUDGET_SLACK), cost, np.inf)
            return cost

        cost = target_cost(_GRID)
        if np.isfinite(cost).any():
            y = _refined(_GRID[np.argmin(cost)], target_cost)
            x = float(least_n_phi(eps_of, np.array([y]), spec.eps)[0])
            eps = float(eps_of(np.array([x]), np.array([y]))[0])
            return Sizes(int(x), int(y), eps, True, True, alone, unlimited, floor)
    if spec.budget is None:
        top = np.array([float(UNLIMITED)])
        floor = float(eps_of(top, top)[0])
        floor = floor if math.isfinite(floor) else None
        return Sizes(0, 0, math.nan, False, False, alone, unlimited, floor)
    room = (spec.budget - spec.fixed_cost()) / spec.cost_human
    floor = float(eps_of(np.array([math.floor(room)]), np.array([float(UNLIMITED)]))[0])
    floor = floor if math.isfinite(floor) else None

    def budget_eps(n_m):
        left = (spec.budget - spec.fixed_cost() - spec.judge_price * n_m) / spec.cost_human
        x = np.floor(np.maximum(left, 0.0))
        eps = np.nan_to_num(eps_of(x, n_m), nan=np.inf)
        return np.where(left >= 0, eps, np.inf)

    e = budget_eps(_GRID)
    if not np.isfinite(e).any():
        return Sizes(0, 0, math.nan, False, False, alone, unlimited, floor)
    y = _refined(_GRID[np.argmin(e)], budget_eps)
    best = float(budget_eps(np.array([y]))[0])
    # The least N_Φ that keeps the least ε: a budget is a cap, not a sum to spend.
    x = float(least_n_phi(eps_of, np.array([y]), best * (1 + 1e-12))[0])
    eps = float(eps_of(np.array([x]), np.array([y]))[0])
    reachable = spec.eps is None or eps <= spec.eps
    return Sizes(int(x), int(y), eps, reachable, True, alone, unlimited, floor)


def _words(spec: JudgedPlanSpec, role: str) -> np.ndarray:
    """Two uint32 words naming (scenario, system) for :func:`sweep.spec.lanes.lane_keys`."""
    text = f"plan|{spec.ratings}|{spec.model_dump_json()}|{role}"
    value = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return np.array([value & 0xFFFFFFFF, value >> 32], np.uint32)


def nuts_check(
    spec: JudgedPlanSpec,
    n_phi: int,
    n_m: int,
    settings: NUTSSettings,
    seed: int = 0,
    independent: bool = False,
) -> NUTSCheck:
    """The posterior SD of θ by NUTS on the expected counts at (N_Φ, N_M): one fit of the
    sweep's sampler (``settings``), with its Monte Carlo SE and health."""
    require_float64()
    designs = jax.tree.map(jax.numpy.asarray, spec.designs([n_phi], [n_m]))
    counts = jax.tree.map(np.asarray, jax.vmap(expected_counts)(designs))
    keys = lane_keys(seed, _words(spec, "nuts")[None], np.zeros(1, np.uint32))
    schedule = schedule_for()
    nuts = resolve_loop(settings, schedule.device)
    fits = fit_categorical_lanes(
        counts, keys, spec.layout, independent, nuts=nuts, schedule=schedule
    ).fits
    return NUTSCheck(
        sd=float(fits.post_sd[0]),
        mcse=float(fits.sd_mcse[0]),
        rhat=float(fits.rhat[0]),
        ess=float(fits.ess[0]),
        divergences=int(fits.divergences[0]),
        chains=settings.chains,
        warmup=settings.warmup,
        samples=settings.samples,
    )


#: Lanes of one compiled call of sampled counts (padded): one compile for a plan's checks.
_DRAWN_LANES = 4096


@jax.jit
def _draw(keys, designs):
    return jax.vmap(draw_counts)(keys, designs)


def draw_campaigns(keys: jax.Array, designs) -> CategoricalCounts:
    """``(B,)`` sampled counts (:func:`kernels.categorical.counts.draw_counts`) of ``(B,)``
    lane designs, each from its key, as NumPy; compiled calls of a multiple of 4,096 lanes."""
    return padded(_draw, keys, designs, multiple=_DRAWN_LANES)


@functools.cache
def _estimate_program(form, layout):
    return jax.jit(lambda counts: form(counts, layout, 0.95))


def estimates_of(estimator: Estimator, layout, counts: CategoricalCounts):
    """A classical estimator's ``(B,)`` :class:`~kernels.estimates.Estimate` (NumPy) of
    ``(B,)`` counts of ``layout``, compiled once per (estimator, layout) and lane multiple."""
    return padded(_estimate_program(estimator.categorical, layout), counts, multiple=_DRAWN_LANES)


def simulate_tests(
    spec: JudgedPlanSpec,
    estimator: Estimator,
    n_phi: int,
    n_m: int,
    eps: float,
    replicates: int,
    seed: int = 0,
    *,
    nuts: NUTSSettings | None = None,
    independent: bool = False,
) -> tuple[float, float, float, float]:
    """Empirical power and type-I rate of the two-sided z-test at the plan's sizes (module
    docstring): R campaigns of each of three systems, each lane keyed by (scenario, system,
    replicate).

    Args:
        spec: the scenario.
        estimator: a classical estimator (its K-class form) or the posterior (NUTS with
            ``nuts``).
        n_phi, n_m: the plan's sizes.
        eps: the difference to detect.
        replicates: R ≥ 1.
        seed: the simulation's seed.
        nuts: sampler settings for the posterior.
        independent: the posterior's judges independent given the truth.

    Returns:
        Power, its MCSE, type-I rate, its MCSE (over the campaigns whose z is finite; NaN
        where the scenario has no system at θ ± ε: ``spec.shifted(eps)`` is None).
    """
    require_float64()
    shifted = spec.shifted(eps)
    if shifted is None:
        return (math.nan,) * 4
    r = int(replicates)
    roles = np.repeat(np.stack([_words(spec, role) for role in ("base", "shifted", "null")]), r, 0)
    keys = lane_keys(seed, roles, np.tile(np.arange(r), 3))
    sizes = (np.full(r, float(n_phi)), np.full(r, float(n_m)))
    systems = [system.designs(*sizes) for system in (spec, shifted, spec)]
    designs = jax.tree.map(lambda *parts: np.concatenate(parts), *systems)
    counts = draw_campaigns(keys, designs)
    if estimator.posterior:
        schedule = schedule_for()
        settings = resolve_loop(nuts or NUTSSettings(), schedule.device)
        fits = fit_categorical_lanes(
            counts, keys, spec.layout, independent, nuts=settings, schedule=schedule
        ).fits
        mean, sd = np.asarray(fits.post_mean), np.asarray(fits.post_sd)
    else:
        found = estimates_of(estimator, spec.layout, counts)
        mean, sd = found.value, found.se
    mean, sd = mean.reshape(3, r), sd.reshape(3, r)
    crit = NormalDist().inv_cdf(1.0 - 0.5 * spec.gamma)

    def rate(other: int):
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (mean[0] - mean[other]) / np.sqrt(sd[0] ** 2 + sd[other] ** 2)
        finite = np.isfinite(z)
        n = max(int(finite.sum()), 1)
        share = float(np.sum(finite & (np.abs(z) > crit)) / n)
        return share, math.sqrt(share * (1.0 - share) / n)

    return (*rate(1), *rate(2))


def _reason(spec: JudgedPlanSpec, estimator: Estimator, independent: bool) -> str:
    """Why ``estimator`` gives no plan: a reason it never applies here, else the limit."""
    if not estimator.posterior:
        top = np.array([float(UNLIMITED)])
        _, code = classical_se(estimator.categorical, spec.layout, spec.designs(top, top))
        if int(code[0]):
            return REASONS[int(code[0])]
    return f"no sizes up to {UNLIMITED:,} reach the target"


def _estimator_plan(
    spec: JudgedPlanSpec,
    estimator: Estimator,
    replicates: int,
    seed: int,
    nuts: NUTSSettings | None,
    independent: bool,
) -> CategoricalPlan:
    """One estimator's :class:`CategoricalPlan` of ``spec``."""
    z = _z(spec)
    nan = math.nan
    if estimator.categorical is None and not estimator.posterior:
        return CategoricalPlan.none(estimator.name, "it has no form for K-class ratings")
    eps_of = eps_function(spec, estimator, 1.0, independent)
    sizes = search_sizes(spec, eps_of)
    checks: tuple[NUTSCheck, ...] = ()
    kappa = 1.0
    if estimator.posterior and nuts is not None and sizes.found:
        approx = sizes.eps / (math.sqrt(2.0) * z)
        check = nuts_check(spec, sizes.n_phi, sizes.n_m, nuts, seed, independent)
        checks = (check._replace(sd_asymptotic=approx),)
        ratio = check.sd / approx
        if abs(ratio - 1.0) > KAPPA_TOLERANCE + 2.0 * check.mcse / approx:
            kappa = ratio
            eps_of = eps_function(spec, estimator, kappa, independent)
            sizes = search_sizes(spec, eps_of)
            if sizes.found:
                again = nuts_check(spec, sizes.n_phi, sizes.n_m, nuts, seed, independent)
                approx = sizes.eps / (math.sqrt(2.0) * z * kappa)
                checks += (again._replace(sd_asymptotic=approx),)
    if not sizes.found:
        reason = _reason(spec, estimator, independent)
        return CategoricalPlan.none(estimator.name, reason)._replace(
            n_phi_alone=sizes.n_phi_alone,
            n_phi_unlimited=sizes.n_phi_unlimited,
            eps_floor=sizes.eps_floor,
            checks=checks,
            kappa=kappa,
        )
    tested = spec.eps if spec.eps is not None and sizes.reachable else sizes.eps
    sim = (nan,) * 4
    if replicates:
        sim = simulate_tests(
            spec, estimator, sizes.n_phi, sizes.n_m, tested, replicates, seed,
            nuts=nuts, independent=independent,
        )  # fmt: skip
    return CategoricalPlan(
        estimator=estimator.name,
        n_phi=sizes.n_phi,
        n_m=sizes.n_m,
        cost=float(spec.cost(sizes.n_phi, sizes.n_m)),
        eps=sizes.eps,
        sd=sizes.eps / (math.sqrt(2.0) * z),
        reachable=sizes.reachable,
        reason="",
        posterior=estimator.posterior,
        kappa=kappa,
        checks=checks,
        n_phi_alone=sizes.n_phi_alone,
        n_phi_unlimited=sizes.n_phi_unlimited,
        eps_floor=sizes.eps_floor,
        eps_tested=float(tested),
        power=sim[0],
        power_mcse=sim[1],
        type1_rate=sim[2],
        type1_mcse=sim[3],
        replicates=int(replicates),
    )


def _check_replicates(replicates) -> None:
    if replicates is None:
        return
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 0:
        raise SweepError(f"replicates: {shown(replicates)} is not allowed; give an integer ≥ 0")


def plan_campaign(
    spec: JudgedPlanSpec,
    estimators: Iterable[Estimator],
    *,
    replicates: int | None = None,
    seed: int = 0,
    nuts: NUTSSettings | None = NUTSSettings(),
    one_judge: bool = True,
    independent: bool = False,
) -> CategoricalPlans:
    """The plans of one K-class scenario, one per estimator (module docstring); with J ≥ 2
    judges and ``one_judge``, also judge 1's alone at its price.

    ::

        from binmetric_sweep.kernels.estimators import registered
        p = plan_preference(dict(win=0.45, tie=0.2, accuracy=0.7, judges=2,
                                 cost_judge="0.01,0.02", eps=0.03), registered())
        p.plans[0].n_phi, p.one_judge.plans[0].cost, p.second_judge_pays("bayes")

    Args:
        spec: the scenario, validated (a :class:`PreferencePlanSpec` or a
            :class:`ScalePlanSpec`; :func:`plan_preference` and :func:`plan_scale` take a
            dict of its fields).
        estimators: registered estimators (the posterior's is ``bayes``).
        replicates: simulated campaigns per system; None: :data:`DEFAULT_REPLICATES` for a
            classical estimator and none for the posterior (NUTS fits, slow on CPU); an
            integer applies to every estimator (0: none).
        seed: the simulations' and NUTS checks' seed.
        nuts: sampler settings of the posterior's NUTS check and simulation (default: a
            sweep's, 4 chains × (500 + 1000)); None: the posterior's plan is the asymptotic
            SD's, unchecked.
        one_judge: with J ≥ 2, also plan judge 1 alone.
        independent: the posterior takes the judges as independent given the truth (else
            their joint verdict, any correlation: the sweep's default).

    Raises:
        SweepError: a bad ``replicates`` (one line naming the field).
    """
    jax.config.update("jax_enable_x64", True)
    use_compilation_cache(DEFAULT, strict=False)
    _check_replicates(replicates)
    rows = []
    for estimator in estimators:
        r = replicates
        if r is None:
            r = 0 if estimator.posterior else DEFAULT_REPLICATES
        rows.append(_estimator_plan(spec, estimator, r, seed, nuts, independent))
    alone = None
    if one_judge and spec.judges > 1:
        alone = plan_campaign(
            spec.one_judge(), estimators, replicates=replicates, seed=seed, nuts=nuts,
            one_judge=False, independent=independent,
        )  # fmt: skip
    return CategoricalPlans(spec, tuple(rows), alone, seed, replicates is None)


def plan_preference(
    spec: PreferencePlanSpec | dict, estimators: Iterable[Estimator], **options
) -> CategoricalPlans:
    """:func:`plan_campaign` of a preference scenario (a :class:`PreferencePlanSpec` or a
    dict of its fields; a bad one: :class:`SweepError` naming the field)."""
    return plan_campaign(preference_spec(spec), estimators, **options)


def plan_scale(
    spec: ScalePlanSpec | dict, estimators: Iterable[Estimator], **options
) -> CategoricalPlans:
    """:func:`plan_campaign` of a scale or named-classes scenario (a :class:`ScalePlanSpec`
    or a dict of its fields, e.g. ``dict(values="1,2,3,4,5", shares="0.05,0.1,0.25,0.35,0.25",
    off_by_one=0.3, cost_judge=0.01, eps=0.1)``; a bad one: :class:`SweepError` naming the
    field)."""
    return plan_campaign(scale_spec(spec), estimators, **options)
