"""``sweep``: the command line. It parses arguments, calls the Python API and formats errors.

Bad input exits with status 2 after one line ``sweep: error: …`` naming the
field, the value and what is allowed; nothing is written. Output cut short by
its reader (``sweep show … | head``) ends the command quietly, with the
status of a process killed by SIGPIPE (141), as other Unix tools.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from binmetric_sweep.kernels.estimators import POSTERIOR, registered
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.execution.compile_cache import DEFAULT as DEFAULT_COMPILE_CACHE
from binmetric_sweep.sweep.spec.grid import DEFAULT_MAX_CONFIGURATIONS
from binmetric_sweep.sweep.version import __version__

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (and a SweepError, exit status 2).

    A subcommand's error names it once: ``sweep: error: plan: argument --alpha: …``.
    """

    def error(self, message: str):  # noqa: D102 - argparse hook
        command = self.prog.removeprefix("sweep").strip()
        raise SweepError(f"{command}: {message}" if command else message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a positive integer")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a non-negative integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``sweep`` parser with its subcommands run, status, show, plot, plan and compare."""
    parser = _Parser(prog="sweep", description="Simulation sweeps of human + metric evaluation.")
    parser.add_argument("--version", action="version", version=f"binmetric-sweep {__version__}")
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )

    run = commands.add_parser("run", help="run (or finish) a sweep into a directory")
    run.add_argument(
        "sweep_file", metavar="SWEEP.yaml", help="the sweep file (README: Sweep files)"
    )
    run.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="the sweep's directory: created, or finished where a run stopped",
    )
    run.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="local: this process (default); ray: a task per shard on a Ray cluster",
    )
    run.add_argument("--address", default=None, help="Ray cluster address (else RAY_ADDRESS)")
    run.add_argument(
        "--max-configurations",
        type=_positive_int,
        default=DEFAULT_MAX_CONFIGURATIONS,
        help=f"refuse sweeps with more fits than this (default {DEFAULT_MAX_CONFIGURATIONS:,})",
    )
    run.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (none either when standard error is not a terminal)",
    )
    cache = run.add_mutually_exclusive_group()
    cache.add_argument(
        "--compile-cache",
        metavar="DIR",
        default=DEFAULT_COMPILE_CACHE,
        help="keep traced and compiled programs here for later runs "
        "(default: $BINMETRIC_SWEEP_COMPILE_CACHE, "
        "else ~/.cache/binmetric-sweep/xla; JAX_COMPILATION_CACHE_DIR, if set, wins)",
    )
    cache.add_argument(
        "--no-compile-cache",
        dest="compile_cache",
        action="store_const",
        const=None,
        help="trace and compile every program afresh",
    )

    status = commands.add_parser("status", help="shards and configurations done and to do")
    status.add_argument("dir", metavar="DIR", help="a sweep's directory (sweep run --out)")

    def view(name: str, help_text: str):
        sub = commands.add_parser(
            name,
            help=help_text,
            description=f"{help_text[0].upper()}{help_text[1:]}. Cells of eps, se_mean, "
            "width_mean or coverage are marked where the estimator covers far less often than "
            "the sweep's interval level (too narrow an interval gives no valid eps); an "
            "unfinished sweep says how many of its shards are done.",
        )
        sub.add_argument("dir", metavar="DIR", help="a sweep's directory (sweep run --out)")
        sub.add_argument(
            "--value",
            default=None,
            help="surface column to show (default eps, at the gamma and power of its rows: "
            "sweeps default to power 0.5, the published eps; coverage, bias_sd, se_ratio and "
            "the like need counts: sampled; an arena sweep's default is rank_coverage)",
        )
        sub.add_argument(
            "--where",
            nargs="+",
            default=[],
            metavar="AXIS=VALUE",
            help="fix every other axis that varies, e.g. alpha=0.6 estimator=ppi",
        )
        return sub

    show = view("show", "a 2-D table of one surface column")
    show.add_argument("--rows", required=True, metavar="AXIS", help="the axis down the rows")
    show.add_argument("--cols", required=True, metavar="AXIS", help="the axis across")
    show.add_argument(
        "--digits", type=int, default=3, help="decimals of each cell, 0 or more (default 3)"
    )

    plot = view("plot", "a heatmap (--rows, --cols) or lines (--x [--lines]) of one column")
    plot.add_argument(
        "-o", "--output", required=True, metavar="FILE.png", help="the figure: .png, .pdf, .svg"
    )
    plot.add_argument("--rows", metavar="AXIS", help="a heatmap's axis down (with --cols)")
    plot.add_argument("--cols", metavar="AXIS", help="a heatmap's axis across (with --rows)")
    plot.add_argument("--x", metavar="AXIS", help="the numeric axis of a line plot")
    plot.add_argument("--lines", metavar="AXIS", help="one line per value of this axis")
    plot.add_argument(
        "--log-x",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="log x axis (default: for a size axis spanning a decade or more, 0 kept)",
    )
    plot.add_argument(
        "--log-y",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="log y axis of lines (default: for positive values spanning more than a decade)",
    )
    plot.add_argument(
        "--width",
        type=float,
        default=None,
        metavar="INCHES",
        help="figure width (default 3.4, one paper column; e.g. 7 for two)",
    )
    plot.add_argument(
        "--title", help="replace the title (default: the value and every fixed setting)"
    )

    plan = commands.add_parser(
        "plan",
        help="the cheapest human + metric ratings for a target ε (--eps) or budget (--budget)",
        description="The cheapest N_Φ human and N_M metric ratings of one system for a target "
        "ε (--eps), or the least ε within a --budget, checked by simulated campaigns. Sizes "
        "and costs are per system: ε is the difference between two systems each rated so, "
        "and comparing two systems costs twice the cost shown. ρ and η are the metric's "
        "rates on the paired ratings, not its agreement with humans: agreement = αρ + (1 − "
        "α)η, so an 80 % agreement is many (ρ, η), and their plans differ (docs/model.md, "
        "'Planning a campaign'); --pilot FILE reads α, ρ, η off a small file of paired "
        "ratings.",
    )
    for name, metavar, text in PLAN_OPTIONS:
        kind = str if name == "n_rho_eta" else float
        plan.add_argument(f"--{name.replace('_', '-')}", type=kind, metavar=metavar, help=text)
    plan.add_argument(
        "--grid", metavar="PLAN.yaml", help="a YAML list of scenarios (keys as these options)"
    )
    plan.add_argument(
        "--pilot",
        metavar="FILE",
        help="one system's pilot ratings (columns human, metric: 1, 0 or empty; CSV, Parquet "
        "or JSON Lines): α, ρ, η are their posterior means under uniform priors; --alpha, "
        "--rho or --eta given replace the pilot's value",
    )
    plan.add_argument(
        "--replicates",
        type=_count,
        default=None,
        metavar="N",
        help="campaigns simulated to check the power and type-I rate; 0 skips (default 400); "
        "with --ratings preference, scale or classes, bayes is simulated only when N is given "
        "(3N NUTS fits, slow on a CPU: docs/performance.md)",
    )
    plan.add_argument(
        "--seed",
        type=_count,
        default=0,
        metavar="N",
        help="seed of the simulated campaigns, an integer >= 0 (default 0)",
    )
    plan.add_argument(
        "--estimator",
        default=POSTERIOR.name,
        metavar="NAME",
        help=f"{_estimators_listed('its closed-form SE')}, or all: one table, "
        "each plan simulated with its own estimator",
    )
    plan.add_argument("--json", action="store_true", help="one JSON object per scenario")
    plan.add_argument(
        "--ratings",
        choices=("binary", "preference", "scale", "classes", "arena"),
        default="binary",
        help="binary (adequate or not, the default: --alpha, --rho, --eta, --cost-metric), "
        "preference (A better, tie, B better; θ = A's win rate with ties counted half: "
        "--win, --tie, --accuracy, ... below, --cost-judge), scale (a score whose classes are "
        "--values, e.g. 1-5; θ = the mean score, ε in its units: --values, --shares, "
        "--off-by-one or --confusion, --cost-judge) or classes (named by --classes, each with "
        "its value in --values), or arena (a leaderboard from battles: --systems, --spread, "
        "--battles, --accuracy, --width below: the share of battles needing a human verdict)",
    )
    for name, metavar, text in (
        *PREFERENCE_PLAN_OPTIONS,
        *SCALE_PLAN_OPTIONS,
        *JUDGED_PLAN_OPTIONS,
    ):
        kind = float if name in _NUMBER_OPTIONS else str
        plan.add_argument(f"--{name.replace('_', '-')}", type=kind, metavar=metavar, help=text)
    for name, metavar, text in ARENA_PLAN_OPTIONS:
        plan.add_argument(f"--{name}", type=float, metavar=metavar, help=text)
    plan.add_argument(
        "--no-nuts-check",
        action="store_true",
        help="with --ratings preference, scale or classes: plan bayes by its asymptotic SD "
        "alone, without measuring the posterior SD by NUTS at the plan (a minute or more on "
        "CPU)",
    )
    _compare_parser(commands)
    plan.add_argument("-o", "--output", metavar="FILE.png", help="draw the frontier (needs --eps)")
    return parser


def _estimators_listed(what: str) -> str:
    """The registered estimators, as ``--estimator``'s help names them; ``what``: what the
    others give."""
    others = ", ".join(e.name for e in registered() if not e.posterior)
    return (
        f"{POSTERIOR.name} (the default: the posterior), a classical estimator ({others}: {what})"
    )


def _listed(values, default) -> str:
    """``name: description; …`` of registered values, and which is the default: a help text
    built from the values (a new one is listed without editing the parser)."""
    return "; ".join(f"{v.name}: {v.description}" for v in values) + f" (default {default})"


def _compare_parser(commands) -> None:
    from binmetric_sweep.sweep.compare.analysis import (
        ADJUSTMENTS,
        NO_ADJUSTMENT,
        PER_SYSTEM,
        RATE_MODELS,
        Method,
    )
    from binmetric_sweep.sweep.compare.arena import ARENA_METHODS, ARENA_MODELS, BRADLEY_TERRY
    from binmetric_sweep.sweep.compare.ratings import LABEL_POLICIES, REFUSE
    from binmetric_sweep.sweep.spec.categorical import INDEPENDENT, JOINT, JUDGE_MODELS

    compare = commands.add_parser(
        "compare",
        help="real ratings of several systems: who is better, how sure, what to rate next",
        description="Posterior of each system's α and P(α_a > α_b) for every pair, by exact "
        "quadrature, from human, metric and paired ratings.",
    )
    compare.add_argument(
        "ratings",
        metavar="RATINGS",
        help="CSV, Parquet or JSON Lines: rows of labels (system, human, metric: 1, 0 or "
        "empty; with an item column, one output's labels may sit on several rows), or one "
        "row per system with the model's counts; or a battles file (columns model_a, "
        "model_b, human and one per judge: a leaderboard from pairwise verdicts)",
    )
    compare.add_argument(
        "--rates",
        choices=tuple(RATE_MODELS),
        default=PER_SYSTEM.name,
        help="how the metric's rates ρ, η are learnt: "
        + _listed(RATE_MODELS.values(), PER_SYSTEM.name),
    )
    compare.add_argument(
        "--gamma",
        type=float,
        default=0.05,
        metavar="G",
        help="two-sided significance level of each pair's test, in (0, 1) (default 0.05)",
    )
    compare.add_argument(
        "--level",
        type=float,
        default=0.95,
        metavar="L",
        help="credible level of each system's interval, in (0, 1) (default 0.95); battles: of "
        "every interval and of the simultaneous rank sets",
    )
    compare.add_argument(
        "--adjust",
        choices=tuple(ADJUSTMENTS),
        default=NO_ADJUSTMENT.name,
        help="the pairs' tests, for their number (a leaderboard needs an adjustment): "
        + _listed(ADJUSTMENTS.values(), NO_ADJUSTMENT.name),
    )
    compare.add_argument(
        "--method",
        choices=tuple(m.value for m in Method),
        default=Method.QUADRATURE.value,
        help="exact quadrature (the default), or NUTS draws as a check",
    )
    compare.add_argument(
        "--seed", type=_count, default=0, metavar="N", help="seed of the NUTS draws (default 0)"
    )
    # No choices: a policy refused (all) is refused with its reason (sweep.compare.ratings).
    for flag, kind in (("--annotators", "human"), ("--judges", "metric")):
        compare.add_argument(
            flag,
            default=REFUSE.name,
            metavar="{" + ",".join(LABEL_POLICIES) + "}",
            help=f"with an item column: how several {kind} labels of one item combine: "
            + _listed(LABEL_POLICIES.values(), REFUSE.name),
        )
    compare.add_argument(
        "--estimator",
        default=POSTERIOR.name,
        metavar="NAME",
        help=f"{_estimators_listed('its estimate per system, a z-test per pair')}, "
        "or all, side by side; battles: "
        + _listed(ARENA_METHODS.values(), POSTERIOR.name)
        + ", or all",
    )
    compare.add_argument(
        "--classes",
        metavar="NAMES",
        help="K-class labels: the class names in order with their values, e.g. 1,2,3,4,5 "
        "(numeric names: values the numbers), worse,tie,better (values evenly spaced 0..1) "
        "or B=0,tie=0.5,A=1; θ = the mean class value is compared, by NUTS",
    )
    compare.add_argument(
        "--judge-columns",
        metavar="A,B",
        help="with --classes: the judges' columns, in order (default: every column called "
        "metric or starting with judge); battles: the judge columns (default: every other "
        "column of verdicts)",
    )
    compare.add_argument(
        "--judge-model",
        choices=tuple(JUDGE_MODELS),
        default=None,
        help="with --classes, several judges: "
        + _listed(JUDGE_MODELS.values(), JOINT.name)
        + f"; battles: the same models (default {INDEPENDENT.name})",
    )
    compare.add_argument(
        "--model",
        choices=tuple(ARENA_MODELS),
        default=None,
        help="battles: the systems' model: " + _listed(ARENA_MODELS.values(), BRADLEY_TERRY.name),
    )
    compare.add_argument(
        "--nuts",
        metavar="C,W,S",
        help="battles: NUTS's chains, warm-up and samples per chain (default 4,500,1000)",
    )
    compare.add_argument(
        "--verdicts",
        metavar="WORD=VERDICT,...",
        help="a battles file (columns model_a, model_b): its verdict words, each mapped to "
        "model_a, model_b or tie, e.g. win=model_a,loss=model_b,draw=tie (default: model_a, "
        "model_b, tie, tie (bothbad))",
    )
    compare.add_argument("--json", action="store_true", help="print one JSON object")
    compare.add_argument(
        "--out",
        metavar="DIR",
        help="write systems.parquet and pairs.parquet into DIR (battles: leaderboard, pairs, "
        "judges and health .parquet)",
    )
    compare.add_argument(
        "-o",
        "--output",
        metavar="FIG.png",
        help="draw the intervals (with --estimator, each estimator's side by side) and the P "
        "matrix (a classical estimator's: its z-test's Φ(z)); battles: each method's win "
        "rates, ranks and rank sets, and the judges' confusions",
    )
    compare.add_argument(
        "--cost-metric",
        type=float,
        metavar="C",
        help="price of a metric rating: add, for each pair not significant, the cheapest "
        "ratings that would make its difference significant",
    )
    compare.add_argument(
        "--cost-human",
        type=float,
        default=None,
        metavar="C",
        help="price of a human rating, with --cost-metric (default 1)",
    )
    compare.add_argument(
        "--power",
        type=float,
        default=None,
        metavar="P",
        help="power of those plans, in [0.5, 1) (default 0.8)",
    )
    # What a battles file refuses, with each flag's default (given: a value not its default).
    compare.set_defaults(
        ratings_only={f: compare.get_default(f.lstrip("-").replace("-", "_")) for f in RATINGS_ONLY}
    )


#: ``sweep compare``'s flags that mean nothing for a battles file.
RATINGS_ONLY = (
    "--rates",
    "--gamma",
    "--adjust",
    "--method",
    "--annotators",
    "--judges",
    "--classes",
    "--cost-metric",
    "--cost-human",
    "--power",
)
#: The flags only a battles file reads.
BATTLES_ONLY = ("--model", "--verdicts", "--nuts")


#: ``sweep plan``'s scenario options: name, metavar and help. Their values are
#: checked by ``sweep.plan.PlanSpec``, whose errors name the option.
PLAN_OPTIONS = (
    ("alpha", "A", "the system's success rate α, in (0, 1); required (or --pilot)"),
    (
        "rho",
        "R",
        "the metric's true-positive rate ρ, in [0, 1]: P(metric 1 | human 1); required (or "
        "--pilot)",
    ),
    (
        "eta",
        "E",
        "the metric's true-negative rate η, in [0, 1]: P(metric 0 | human 0); required (or "
        "--pilot)",
    ),
    (
        "eps",
        "EPS",
        "target difference ε between two systems' α, on its 0-1 scale, in (0, 1): the cheapest "
        "plan per system for it",
    ),
    (
        "budget",
        "B",
        "most a campaign may cost per system, in --cost-human units: the least ε it buys",
    ),
    ("gamma", "G", "significance level γ of the two-sided test, in (0, 1) (default 0.05)"),
    ("power", "P", "power the test must reach at a difference ε, in [0.5, 1) (default 0.8)"),
    ("cost_human", "C", "price of one human rating, > 0 (default 1)"),
    (
        "cost_metric",
        "C",
        "price of one metric rating (a judge's label of one output), > 0, in units of one human "
        "rating (the unit of --cost-human): 0.002 means 500 judge ratings cost as much as one "
        "human rating; required",
    ),
    (
        "n_rho_eta",
        "shared|known|N",
        "how ρ and η are learnt: from the human-rated items (shared, the default), known "
        "numbers (known), or N separately paired items",
    ),
)


#: ``sweep plan`` flags that describe a scenario (the fields of ``sweep.plan.PlanSpec``).
PLAN_FIELDS = tuple(name for name, _, _ in PLAN_OPTIONS)

#: ``sweep plan --ratings preference``'s own scenario options (checked by
#: ``sweep.plan.preference_spec.PreferencePlanSpec``, whose errors name the option).
PREFERENCE_PLAN_OPTIONS = (
    ("win", "W", "preference: share of items on which A (shown first) is better, in (0, 1)"),
    ("tie", "T", "preference: share on which A and B tie, in [0, 1), win + tie < 1"),
    ("accuracy", "A", "preference: probability a judge knows the answer (else guesses), [0, 1]"),
    ("tie_rate", "T", "preference: a guessing judge's probability of 'tie', [0, 1] (default ⅓)"),
    (
        "position_bias",
        "B",
        "preference: a guess's lean towards A, the side shown first, in [-1, 1] (default 0)",
    ),
)

#: ``sweep plan --ratings scale``'s (and ``classes``') own scenario options (checked by
#: ``sweep.plan.scale_spec.ScalePlanSpec``, whose errors name the option).
SCALE_PLAN_OPTIONS = (
    (
        "values",
        "V,V,...",
        "scale: the classes' values, increasing (1,2,3,4,5; negative: --values=-2,-1,0,1,2); "
        "classes: each named class's value, in any order; required",
    ),
    ("classes", "NAME,...", "classes: the classes' names, one per value (bad,fair,good)"),
    ("shares", "S,S,...", "scale: each class's share of the items, >= 0, summing to 1; required"),
    (
        "off_by_one",
        "A",
        "scale: probability a judge is one class off (to each neighbour equally), [0, 1]",
    ),
    (
        "off_by_more",
        "B",
        "scale: probability a judge is two or more classes off, [0, 1] (default 0)",
    ),
    (
        "confusion",
        "'R1;R2;...'",
        "scale: instead of --off-by-one, a judge's confusion, K rows (one per true class) of "
        "K comma-separated shares, each row summing to 1",
    ),
)

#: The options of every K-class plan (preference, scale, classes).
JUDGED_PLAN_OPTIONS = (
    (
        "judges",
        "J",
        "preference, scale: judges rating every item, 1 to 3, at most 27 joint verdicts "
        "(default 1)",
    ),
    (
        "copy_rate",
        "C",
        "preference, scale: how often a later judge repeats judge 1's verdict, [0, 1] (default 0)",
    ),
    (
        "cost_judge",
        "C[,C...]",
        "preference, scale: price of one judge verdict in --cost-human units, one value "
        "(every judge's) or one per judge (0.01,0.02); required",
    ),
)

#: ``sweep plan --ratings arena``'s own options (with --accuracy, --tie-rate,
#: --position-bias, --judges, --copy-rate, --power, --replicates, --seed, --estimator;
#: checked as an arena sweep file's axes, by ``sweep.plan.arena``).
ARENA_PLAN_OPTIONS = (
    ("systems", "S", "arena: the systems, every ordered pair of them in battle, 2 to 30"),
    ("spread", "SD", "arena: SD of the systems' strengths (log-λ), drawn per arena, (0, 5]"),
    ("nu", "NU", "arena: Davidson's tie parameter ν, (0, 10] (default 0.5)"),
    ("battles", "N", "arena: battles of each ordered pair"),
    ("width", "W", "arena: most places a rank interval may span; required"),
    ("level", "L", "arena: the rank intervals' level, in (0, 1) (default 0.95)"),
)

#: The K-class plans' options that are numbers (the rest are read by their specs).
_NUMBER_OPTIONS = (
    "win", "tie", "accuracy", "tie_rate", "position_bias", "copy_rate", "off_by_one",
    "off_by_more",
)  # fmt: skip

#: The scenario fields a K-class plan shares with the binary one.
SHARED_PLAN_FIELDS = ("eps", "budget", "gamma", "power", "cost_human", "n_rho_eta")


def _run(args) -> None:
    from binmetric_sweep.sweep.api import run

    report = run(
        args.sweep_file,
        args.out,
        backend=args.backend,
        address=args.address,
        progress=False if args.no_progress else None,
        max_configurations=args.max_configurations,
        compile_cache=args.compile_cache,
    )
    print(report.line())


def _status(args) -> None:
    from binmetric_sweep.sweep.api import status

    print("\n".join(status(args.dir).lines()))


def _view_surface(directory: str, what: str):
    """The sweep's surface for show or plot; an unfinished sweep says so on standard error
    (``sweep: note: 3 of 5 shards done: …``) instead of as a Python warning."""
    import warnings

    from binmetric_sweep.sweep.api import IncompleteSweepWarning, load_surface, unfinished_note

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompleteSweepWarning)
        surface = load_surface(directory)
    note = unfinished_note(surface, what)
    if note:
        print(f"sweep: note: {note}", file=sys.stderr, flush=True)
    return surface


def _show(args) -> None:
    from binmetric_sweep.sweep.display.tables import (
        coverage_note,
        default_value,
        format_table,
        mark_table,
        parse_where,
        pivot_surface,
        select_cells,
        table_notes,
        value_header,
    )

    where = parse_where(args.where)
    surface = _view_surface(args.dir, "the table shows")
    args.value = args.value or default_value(surface)
    frame = select_cells(surface, {"--rows": args.rows, "--cols": args.cols}, args.value, where)
    table = pivot_surface(frame, args.rows, args.cols, args.value)
    marks = mark_table(frame, args.rows, args.cols, args.value)
    # Above the table, outside the data (standard output stays the table alone).
    print(value_header(frame, args.value, args.rows, args.cols), file=sys.stderr, flush=True)
    print(format_table(table, args.value, args.digits, marks), flush=True)
    notes = [*table_notes(frame, args.value), coverage_note(frame, args.value, "*")]
    for note in filter(None, notes):
        print(f"note: {note}", file=sys.stderr)  # under the table, outside the data


def _plot(args) -> None:
    from binmetric_sweep.sweep.display.plots import plot_surface
    from binmetric_sweep.sweep.display.tables import default_value, parse_where
    from binmetric_sweep.sweep.paths import check_file_path

    check_file_path(args.output, "-o")  # before the surface is read
    surface = _view_surface(args.dir, "the figure shows")
    path = plot_surface(
        surface,
        args.value or default_value(surface),
        where=parse_where(args.where),
        out=args.output,
        rows=args.rows,
        cols=args.cols,
        x=args.x,
        lines=args.lines,
        log_x=args.log_x,
        log_y=args.log_y,
        title=args.title,
        **({"width": args.width} if args.width is not None else {}),
    )
    print(f"wrote {path}")


def _plan(args) -> int:
    if args.ratings == "arena":
        return _plan_arena(args)
    arena = [n for n, _, _ in ARENA_PLAN_OPTIONS if getattr(args, n) is not None]
    if arena:
        raise SweepError(f"--{arena[0]}: an arena's; give --ratings arena")
    if args.ratings != "binary":
        return _plan_campaign(args)
    kinds = (
        ("a preference campaign's", "preference", PREFERENCE_PLAN_OPTIONS),
        ("a scale campaign's", "scale (or classes)", SCALE_PLAN_OPTIONS),
        ("a K-class campaign's", "preference, scale or classes", JUDGED_PLAN_OPTIONS),
    )
    for whose, ratings, options in kinds:
        own = [n for n, _, _ in options if getattr(args, n) is not None]
        if own:
            raise SweepError(f"--{own[0].replace('_', '-')}: {whose}; give --ratings {ratings}")
    if args.no_nuts_check:
        raise SweepError(
            "--no-nuts-check: a K-class campaign's; give --ratings preference, scale or classes"
        )
    if args.replicates is None:
        args.replicates = 400
    from binmetric_sweep.sweep.display.plots import check_image_path
    from binmetric_sweep.sweep.execution.estimates import estimators_of_option
    from binmetric_sweep.sweep.plan import (
        flag_spec,
        load_plan_grid,
        plan_grid,
        plan_table,
        plans_json,
        plot_frontier,
    )

    given = {f: getattr(args, f) for f in PLAN_FIELDS if getattr(args, f) is not None}
    chosen = estimators_of_option(args.estimator)
    posterior_only = len(chosen) == 1 and chosen[0].posterior
    if args.grid is not None:
        if not posterior_only:
            raise SweepError("--estimator: plans one scenario given by flags, not --grid")
        flags = [f"--{f.replace('_', '-')}" for f in given] + ["-o"] * bool(args.output)
        flags += ["--pilot"] * (args.pilot is not None)
        if flags:
            raise SweepError(
                f"--grid: give scenarios in the file or as flags, not both (got {', '.join(flags)})"
            )
        plans = plan_grid(load_plan_grid(args.grid), replicates=args.replicates, seed=args.seed)
        print(plans_json(plans) if args.json else plan_table(plans))
        return _plan_status(plans)
    pilot = None
    if args.pilot is not None:
        from binmetric_sweep.sweep.plan import read_pilot

        pilot = read_pilot(args.pilot, label="--pilot")
        given = pilot.rates() | given  # a rate given as a flag replaces the pilot's
    for required in ("alpha", "rho", "eta", "cost_metric"):
        if required not in given:
            other = "--pilot FILE or --grid PLAN.yaml" if required != "cost_metric" else "--grid"
            raise SweepError(f"--{required.replace('_', '-')}: required (or give {other})")
    if not posterior_only:
        if args.output:
            raise SweepError(
                f"-o: draws the posterior's frontier; not with --estimator {args.estimator}"
            )
        from binmetric_sweep.sweep.plan import plan_estimators
        from binmetric_sweep.sweep.plan.report import estimators_json, estimators_text

        spec = flag_spec(given)
        _pilot_notes(pilot)
        rows = plan_estimators(spec, chosen, replicates=args.replicates, seed=args.seed)
        if args.json:
            print(estimators_json(rows, pilot))
        else:
            head = [] if pilot is None else [pilot.line(spec)]
            print("\n".join([*head, estimators_text(rows, spec)]))
        return 0 if all(r.reachable or r.reason for r in rows) else UNREACHABLE_STATUS
    if args.output:
        if "eps" not in given:
            raise SweepError("-o: the frontier needs a target --eps")
        check_image_path(args.output)
    spec = flag_spec(given)
    _pilot_notes(pilot)
    plans = plan_grid([spec], replicates=args.replicates, seed=args.seed, frontier=True)
    if pilot is not None:
        from dataclasses import replace

        plans = [replace(p, pilot=pilot) for p in plans]
    print(plans_json(plans) if args.json else "\n".join(plans[0].lines()))
    if args.output:
        path = plot_frontier(plans[0], args.output)
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)
    return _plan_status(plans)


def _campaign(ratings: str):
    """``--ratings``' K-class kind (the one place the kinds are told apart): its own options,
    the fields it requires, and the reader of its flags into a scenario."""
    if ratings == "preference":
        from binmetric_sweep.sweep.plan.preference_spec import flag_preference_spec

        return PREFERENCE_PLAN_OPTIONS, ("win", "tie", "accuracy"), flag_preference_spec
    from binmetric_sweep.sweep.plan.scale_spec import flag_scale_spec

    return (
        SCALE_PLAN_OPTIONS,
        ("values", "shares"),
        lambda given: flag_scale_spec({"ratings": ratings} | given),
    )


def _plan_campaign(args) -> int:
    from binmetric_sweep.kernels.nuts import NUTSSettings
    from binmetric_sweep.sweep.execution.estimates import estimators_of_option
    from binmetric_sweep.sweep.plan.categorical import plan_campaign

    ratings = args.ratings
    own, required, read = _campaign(ratings)
    binary = [f for f in ("alpha", "rho", "eta", "cost_metric") if getattr(args, f) is not None]
    refused = [f"--{f.replace('_', '-')}" for f in binary]
    refused += [flag for flag, given in (("--grid", args.grid), ("--pilot", args.pilot)) if given]
    if refused:
        raise SweepError(f"{refused[0]}: a binary campaign's; not with --ratings {ratings}")
    if args.output:
        raise SweepError(f"-o: draws the binary posterior's frontier; not with --ratings {ratings}")
    names = [n for n, _, _ in own]
    other = [
        n
        for n, _, _ in (*PREFERENCE_PLAN_OPTIONS, *SCALE_PLAN_OPTIONS)
        if n not in names and getattr(args, n) is not None
    ]
    if other:
        raise SweepError(f"--{other[0].replace('_', '-')}: not with --ratings {ratings}")
    fields = (*names, *(n for n, _, _ in JUDGED_PLAN_OPTIONS), *SHARED_PLAN_FIELDS)
    given = {f: getattr(args, f) for f in fields if getattr(args, f) is not None}
    for field in (*required, "cost_judge"):
        if field not in given:
            raise SweepError(f"--{field.replace('_', '-')}: required with --ratings {ratings}")
    spec = read(given)
    chosen = estimators_of_option(args.estimator)
    plans = plan_campaign(
        spec,
        chosen,
        replicates=args.replicates,
        seed=args.seed,
        nuts=None if args.no_nuts_check else NUTSSettings(),
    )
    print(plans.json() if args.json else "\n".join(plans.lines()))
    return 0 if plans.reachable else UNREACHABLE_STATUS


def _number_or_text(text: str):
    """``text`` as a number where it writes one, else unchanged (the reader says why)."""
    try:
        return float(text)
    except ValueError:
        return text


def _plan_arena(args) -> int:
    from binmetric_sweep.sweep.plan.arena import SCENARIO, arena_plan_spec, plan_arena, plans_json
    from binmetric_sweep.sweep.spec.arena import ARENA_ESTIMATORS

    others = (*PREFERENCE_PLAN_OPTIONS, *SCALE_PLAN_OPTIONS, *JUDGED_PLAN_OPTIONS)
    refused = [*PLAN_FIELDS, "grid", "pilot", "output", *(n for n, _, _ in others)]
    refused = [f for f in refused if f not in (*SCENARIO, "power") and getattr(args, f)]
    if args.no_nuts_check:
        refused.append("no_nuts_check")
    if refused:
        raise SweepError(f"--{refused[0].replace('_', '-')}: not with --ratings arena")
    if args.width is None:
        raise SweepError("--width: required with --ratings arena")
    given = {n: getattr(args, n) for n in SCENARIO if getattr(args, n) is not None}
    if "judges" in given:  # a K-class plan's option, read as text
        given["judges"] = _number_or_text(given["judges"])
    for name in ("systems", "spread", "battles", "accuracy"):
        if name not in given:
            raise SweepError(f"--{name.replace('_', '-')}: required with --ratings arena")
    priced = [e.name for e in ARENA_ESTIMATORS.values() if e.reads_humans]
    if args.estimator == "all":
        names = priced
    elif args.estimator in priced:
        names = [args.estimator]
    else:
        allowed = ", ".join((*priced, "all"))
        raise SweepError(
            f"--estimator: {args.estimator!r} is not an arena estimator that reads human "
            f"verdicts; allowed: {allowed}"
        )
    specs = [
        arena_plan_spec(
            given,
            replicates=40 if args.replicates is None else args.replicates,
            seed=args.seed,
            level=0.95 if args.level is None else args.level,
            estimator=name,
        )
        for name in names
    ]  # every flag checked before the first simulation
    power = 0.8 if args.power is None else args.power
    plans = [plan_arena(spec, args.width, power) for spec in specs]
    print(plans_json(plans) if args.json else "\n".join(line for p in plans for line in p.lines()))
    return 0 if all(p.reachable for p in plans) else UNREACHABLE_STATUS


def _compare(args) -> None:
    from binmetric_sweep.sweep.compare import CompareOptions, compare
    from binmetric_sweep.sweep.compare.battles import file_columns, is_battles

    # A file with model_a and model_b columns is battles; one that cannot be read is left
    # to the ratings reader, which says why.
    columns = file_columns(args.ratings)
    if columns is not None and is_battles(columns):
        return _compare_battles(args)
    for flag in BATTLES_ONLY if columns is not None else ():
        if getattr(args, flag.lstrip("-")) is not None:
            raise SweepError(
                f"{flag}: reads a battles file (columns model_a, model_b); "
                f"{args.ratings} is not one"
            )
    from binmetric_sweep.sweep.compare.report import (
        comparison_json,
        comparison_text,
        write_tables,
    )

    # Everything that can be refused is refused before the analysis runs.
    from binmetric_sweep.sweep.paths import check_out_dir

    planning = {
        f: getattr(args, f) for f in ("cost_human", "power") if getattr(args, f) is not None
    }
    # The options are parsed once, into one value (a misspelt --estimator is refused
    # before -o is checked); --cost-human and --power are read only with --cost-metric.
    options = CompareOptions.of(
        rates=args.rates,
        gamma=args.gamma,
        level=args.level,
        adjust=args.adjust,
        method=args.method,
        seed=args.seed,
        cost_metric=args.cost_metric,
        annotators=args.annotators,
        judges=args.judges,
        progress=sys.stderr.isatty(),
        estimator=args.estimator,
        classes=args.classes,
        judge_columns=args.judge_columns,
        judge_model=args.judge_model,
        **planning,
    )
    if args.output and options.classes is not None:
        raise SweepError("-o: the figure draws binary α; not with --classes (use --json or --out)")
    if args.output:
        from binmetric_sweep.sweep.display.plots import check_image_path

        check_image_path(args.output)
    if args.out:
        check_out_dir(args.out)
    if planning and args.cost_metric is None:
        first = next(iter(planning)).replace("_", "-")
        raise SweepError(f"--{first}: needs --cost-metric (what to rate next)")
    result = compare(args.ratings, options)
    for line in result.reading.notes():
        print(f"sweep: {line}", file=sys.stderr)
    for line in result.warnings:
        print(f"sweep: warning: {line}", file=sys.stderr)
    print(comparison_json(result) if args.json else comparison_text(result))
    wrote = []
    if args.out:
        wrote += write_tables(result, args.out, os.path.basename(args.ratings))
    if args.output:
        from binmetric_sweep.sweep.compare.figure import plot_comparison

        source = os.path.basename(args.ratings)
        wrote.append(
            plot_comparison(result.systems, result.pairs, result.settings, args.output, source)
        )
    for path in wrote:
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)


def _compare_battles(args) -> None:
    """``sweep compare`` on a battles file: every option checked, then the leaderboard."""
    from binmetric_sweep.sweep.compare.arena import ArenaOptions, compare_battles
    from binmetric_sweep.sweep.compare.arena_report import (
        arena_json,
        arena_text,
        draw_arena,
        write_arena_tables,
    )
    from binmetric_sweep.sweep.paths import check_out_dir

    for flag, default in args.ratings_only.items():
        if getattr(args, flag.lstrip("-").replace("-", "_")) != default:
            raise SweepError(
                f"{flag}: not for a battles file ({args.ratings} has columns model_a, model_b); "
                "battles take --estimator, --model, --judge-columns, --judge-model, "
                "--verdicts, --level, --seed, --nuts, --json, --out and -o"
            )
    options = ArenaOptions.of(
        estimator=args.estimator,
        model=args.model or "bt",
        judge_model=args.judge_model,
        judge_columns=args.judge_columns,
        verdicts=args.verdicts,
        level=args.level,
        seed=args.seed,
        sampler=args.nuts,
    )
    if args.output:
        from binmetric_sweep.sweep.display.plots import check_image_path

        check_image_path(args.output)
    if args.out:
        check_out_dir(args.out)
    result = compare_battles(args.ratings, options)
    for line in result.notes:
        print(f"sweep: note: {line}", file=sys.stderr)
    for line in result.warnings:
        print(f"sweep: warning: {line}", file=sys.stderr)
    print(arena_json(result) if args.json else arena_text(result))
    wrote = []
    if args.out:
        wrote += write_arena_tables(result, args.out, os.path.basename(args.ratings))
    if args.output:
        wrote.append(draw_arena(result, args.output, os.path.basename(args.ratings)))
    for path in wrote:
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)


def _pilot_notes(pilot) -> None:
    """A pilot's notes (what it did not use) on standard error."""
    for note in pilot.notes() if pilot is not None else ():
        print(f"sweep: note: {note}", file=sys.stderr)


def _plan_status(plans) -> int:
    return 0 if all(p.reachable for p in plans) else UNREACHABLE_STATUS


#: ``sweep plan``'s exit status when a scenario's target ε is out of its budget's
#: reach (the plan printed says what the budget reaches instead).
UNREACHABLE_STATUS = 3


def _reader_gone() -> int:
    """Stdout's reader has gone (``| head``): drop what is left unwritten, exit as SIGPIPE would."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush then writes nowhere
    return 128 + signal.SIGPIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status.

    0: done; 2: bad input (nothing written); 3: ``sweep plan`` with a target
    its budget cannot reach (:data:`UNREACHABLE_STATUS`); 130: interrupted;
    141: the reader of the output went away.
    """
    try:
        parser = build_parser()
        if not (sys.argv[1:] if argv is None else list(argv)):
            parser.print_help()  # a bare ``sweep``: the commands, one line each
            return 2
        args = parser.parse_args(argv)
        commands = {
            "run": _run,
            "status": _status,
            "show": _show,
            "plot": _plot,
            "plan": _plan,
            "compare": _compare,
        }
        status = commands[args.command](args) or 0
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        return _reader_gone()
    except SweepError as err:
        print(f"sweep: error: {err}", file=sys.stderr)
        return 2
    except ImportError as err:
        if getattr(err, "name", "") == "ray":
            print(
                "sweep: error: --backend ray needs Ray; install it with "
                "pip install 'binmetric-sweep[ray]'",
                file=sys.stderr,
            )
            return 2
        raise
    except KeyboardInterrupt:
        print(
            "sweep: interrupted; shards written so far are kept, run again to finish",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
