"""``sweep plan``: the cheapest mix of human and metric ratings for a target ε, power and budget.

A *scenario* (:class:`PlanSpec`) fixes the system's α, the metric's ρ and η,
how ρ and η are learnt (``n_rho_eta``: the human-rated items are the paired
ones, "shared"; ρ and η are "known" numbers; or a separate paired set of N
items), the test (γ, power) and the prices of one human and one metric rating.
A *plan* is the integer sample sizes (N_Φ, N_M) of one system's campaign
(every size, cost and budget is per system: ε is the difference between two
systems each rated so, and comparing two costs twice the cost shown):

* **target mode** (``eps``): the cheapest (N_Φ, N_M) whose
  ε_{γ,β} = √2·σ·(z₁₋γ/₂ + z_power) is at most ``eps``, σ being the exact
  posterior SD of α from expected counts (the published method);
* **budget mode** (``budget`` alone): the smallest ε whose cost is within the budget;
* both: the target plan when it fits the budget; otherwise the budget plan,
  marked unreachable.

Cost = cost_human·N_Φ + cost_metric·N_M, plus cost_human·N for a separate
paired set of N items (a fixed cost). With the shared paired set the human
ratings are the paired ones and cost nothing extra. With cost_human = 1 (the
default) cost_metric is the price of one metric (judge) rating in human
ratings, and a cost is counted in human ratings.

α, ρ and η may come from a **pilot** (:func:`read_pilot`): a small file of
one system's paired ratings, whose posterior means under the model's uniform
priors are planned with (``plan(..., pilot=FILE)``, ``sweep plan --pilot``).

How (see :func:`plan_grid`):

1. **Relax.** The counts become real numbers and σ a smooth function of
   (log N_Φ, log N_M). The exact quadrature cannot be differentiated (its
   tangents are NaN: empty Gauss panels put ``log 0`` into its weights) and
   costs a quadrature fit a lane, so the relaxed problem uses
   :func:`relaxed_sd`, the Laplace (delta-method) posterior SD of α under
   the same Beta posteriors, scaled by κ = σ_exact/σ_relaxed measured with the
   exact quadrature at the relaxed optimum. The surrogate alone is within 1 %
   of the exact σ for N_Φ ≥ 50 (8 % at N_Φ ≈ 25); with κ it is exact where κ
   was measured.
2. **Solve** min cost s.t. ε ≤ target (or min ε s.t. cost ≤ budget) for all
   scenarios at once: an augmented Lagrangian, each subproblem minimised by
   optax Adam on (log(1 + N_Φ), log(1 + N_M)), vmapped over scenarios and run as one
   jitted ``lax.scan`` (:func:`solve_relaxed`); twice, the second time with κ.
3. **Confirm on integers** with the exact quadrature
   (:func:`sweep.execution.fits.fit_lanes`, every lane of every scenario batched into
   one call per round): for N_M at the relaxed optimum ×2^(k/4), k = −4…4, at
   0 (humans alone) and at :data:`UNLIMITED` (the metric's floor), the least
   N_Φ meeting the target, and for N_Φ = ⌊N_Φ*⌋, ⌈N_Φ*⌉ (and 0 where ρ, η do
   not come from the human ratings) the least N_M. Each least size is a
   boundary, ε(n) ≤ target < ε(n − 1), found by Newton steps on the
   κ-corrected surrogate with κ re-measured at every exact evaluation, and by
   bisection when those do not close the bracket. The cheapest of these is
   the plan; every plan returned meets its target at its integer sizes.

**Reachable** means the target is met within the budget. Without a budget
every target in (0, 1) is reachable by human ratings alone. With a shared
paired set, metric ratings can replace only part of them: as N_M → ∞ the
posterior SD falls to a floor set by the uncertainty of ρ and η, which are
learnt from the same N_Φ items (``n_phi_unlimited`` is the least N_Φ with
unlimited metric ratings; ``eps_floor`` the smallest ε any N_M gives with all
of the budget spent on human ratings). A target below that floor is reported
as unreachable, with what N_Φ alone would need, not answered with a huge N_M.

**Checked by simulation** (:func:`simulate_tests`): R campaigns of two systems
at the planned sizes, α and α + ε (α − ε where α + ε > 1), with sampled counts
and quadrature posteriors; the two-sided z-test at γ on the two posterior
means gives the empirical power with its Monte Carlo SE, and two systems both
at α give the type-I error rate. ε is the target (budget mode: the plan's ε).

A **K-class campaign** with one to three judges, each priced, is planned by
:func:`plan_campaign` (:mod:`~binmetric_sweep.sweep.plan.categorical`) for θ = vᵀπ: a
preference (``sweep plan --ratings preference``, :func:`plan_preference`; A better, tie,
B better; θ = A's win rate with ties counted half) or a scale or named classes
(``--ratings scale`` or ``classes``, :func:`plan_scale`; θ the mean value, in the values'
units). Each kind is a scenario value (:class:`PreferencePlanSpec`, :class:`ScalePlanSpec`)
that gives the planner its layout, its designs at (N_Φ, N_M), θ and the shifted system its
power check compares with (:mod:`~binmetric_sweep.sweep.plan.categorical_spec`).
"""

from binmetric_sweep.sweep.plan.categorical import plan_campaign, plan_preference, plan_scale
from binmetric_sweep.sweep.plan.categorical_report import CategoricalPlan, CategoricalPlans
from binmetric_sweep.sweep.plan.exact import exact_eps
from binmetric_sweep.sweep.plan.figure import plot_frontier
from binmetric_sweep.sweep.plan.pilot import Pilot, read_pilot
from binmetric_sweep.sweep.plan.planner import plan, plan_estimators, plan_grid
from binmetric_sweep.sweep.plan.preference_spec import PreferencePlanSpec
from binmetric_sweep.sweep.plan.relaxed import SolverSettings, relaxed_sd, solve_relaxed
from binmetric_sweep.sweep.plan.report import (
    HOLDS_MCSE,
    EstimatorPlan,
    FrontierPoint,
    Plan,
    plan_table,
    plans_json,
)
from binmetric_sweep.sweep.plan.scale_spec import ScalePlanSpec
from binmetric_sweep.sweep.plan.simulate import simulate_tests
from binmetric_sweep.sweep.plan.spec import (
    UNLIMITED,
    PlanSpec,
    Problems,
    flag_spec,
    load_plan_grid,
    problems,
)

__all__ = [
    "plan_campaign",
    "plan_preference",
    "plan_scale",
    "CategoricalPlan",
    "CategoricalPlans",
    "PreferencePlanSpec",
    "ScalePlanSpec",
    "plan_estimators",
    "EstimatorPlan",
    "HOLDS_MCSE",
    "Pilot",
    "read_pilot",
    "UNLIMITED",
    "PlanSpec",
    "Problems",
    "SolverSettings",
    "FrontierPoint",
    "Plan",
    "problems",
    "relaxed_sd",
    "solve_relaxed",
    "exact_eps",
    "simulate_tests",
    "plan",
    "plan_grid",
    "flag_spec",
    "load_plan_grid",
    "plan_table",
    "plans_json",
    "plot_frontier",
]
