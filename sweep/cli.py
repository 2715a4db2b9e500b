"""``sweep``: the command line. It parses arguments, calls the Python API and formats errors.

Bad input exits with status 2 after one line ``sweep: error: …`` naming the
field, the value and what is allowed; nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from binmetric_sweep.sweep.compile_cache import DEFAULT as DEFAULT_COMPILE_CACHE
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.grid import DEFAULT_MAX_CONFIGURATIONS

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (and a SweepError, exit status 2)."""

    def error(self, message: str):  # noqa: D102 - argparse hook
        raise SweepError(f"{self.prog}: {message}")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``sweep`` parser with its subcommands run, status, show, plot and plan."""
    parser = _Parser(prog="sweep", description="Simulation sweeps of human + metric evaluation.")
    from binmetric_sweep.sweep import __version__

    parser.add_argument("--version", action="version", version=f"binmetric-sweep {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="run (or finish) a sweep into a directory")
    run.add_argument("sweep_file", metavar="SWEEP.yaml")
    run.add_argument("--out", required=True, metavar="DIR")
    run.add_argument("--backend", choices=("local", "ray"), default="local")
    run.add_argument("--address", default=None, help="Ray cluster address (else RAY_ADDRESS)")
    run.add_argument(
        "--max-configurations",
        type=_positive_int,
        default=DEFAULT_MAX_CONFIGURATIONS,
        help=f"refuse sweeps with more fits than this (default {DEFAULT_MAX_CONFIGURATIONS:,})",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
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
    status.add_argument("dir", metavar="DIR")

    def view(name: str, help_text: str):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("dir", metavar="DIR")
        sub.add_argument("--value", default="eps", help="surface column to show (default eps)")
        sub.add_argument("--where", nargs="+", default=[], metavar="AXIS=VALUE")
        return sub

    show = view("show", "a 2-D table of one surface column")
    show.add_argument("--rows", required=True)
    show.add_argument("--cols", required=True)
    show.add_argument("--digits", type=int, default=3)

    plot = view("plot", "a heatmap (--rows, --cols) or lines (--x [--lines]) of one column")
    plot.add_argument("-o", "--output", required=True, metavar="FILE.png")
    plot.add_argument("--rows")
    plot.add_argument("--cols")
    plot.add_argument("--x")
    plot.add_argument("--lines")
    plot.add_argument("--log-x", action=argparse.BooleanOptionalAction, default=None)
    plot.add_argument("--title")

    plan = commands.add_parser(
        "plan",
        help="the cheapest human + metric ratings for a target ε (--eps) or budget (--budget)",
    )
    for name in ("alpha", "rho", "eta", "eps", "budget", "gamma", "power"):
        plan.add_argument(f"--{name}", type=float)
    plan.add_argument("--cost-human", type=float, help="price of a human rating (default 1)")
    plan.add_argument("--cost-metric", type=float, help="price of a metric rating")
    plan.add_argument("--n-rho-eta", metavar="shared|known|N", help="default shared")
    plan.add_argument("--grid", metavar="PLAN.yaml", help="a YAML list of scenarios")
    plan.add_argument("--replicates", type=_count, default=400, help="simulated campaigns (400)")
    plan.add_argument("--seed", type=_count, default=0)
    plan.add_argument("--json", action="store_true", help="one JSON object per scenario")
    plan.add_argument("-o", "--output", metavar="FILE.png", help="draw the frontier")
    return parser


#: ``sweep plan`` flags that describe a scenario (the fields of ``sweep.plan.PlanSpec``).
PLAN_FIELDS = (
    "alpha",
    "rho",
    "eta",
    "eps",
    "budget",
    "gamma",
    "power",
    "cost_human",
    "cost_metric",
    "n_rho_eta",
)


def _run(args) -> None:
    from binmetric_sweep.sweep.api import run

    report = run(
        args.sweep_file,
        args.out,
        backend=args.backend,
        address=args.address,
        progress=not args.no_progress,
        max_configurations=args.max_configurations,
        compile_cache=args.compile_cache,
    )
    print(report.line())


def _status(args) -> None:
    from binmetric_sweep.sweep.api import status

    print("\n".join(status(args.dir).lines()))


def _show(args) -> None:
    from binmetric_sweep.sweep.api import load_surface
    from binmetric_sweep.sweep.tables import format_table, parse_where, pivot_surface

    where = parse_where(args.where)
    table = pivot_surface(load_surface(args.dir), args.rows, args.cols, args.value, where)
    print(format_table(table, args.value, args.digits))


def _plot(args) -> None:
    from binmetric_sweep.sweep.api import load_surface
    from binmetric_sweep.sweep.plots import plot_surface
    from binmetric_sweep.sweep.tables import parse_where

    path = plot_surface(
        load_surface(args.dir),
        args.value,
        where=parse_where(args.where),
        out=args.output,
        rows=args.rows,
        cols=args.cols,
        x=args.x,
        lines=args.lines,
        log_x=args.log_x,
        title=args.title,
    )
    print(f"wrote {path}")


def _plan(args) -> None:
    from binmetric_sweep.sweep.plan import (
        check_image_path,
        load_plan_grid,
        plan_grid,
        plan_table,
        plans_json,
        plot_frontier,
    )

    given = {f: getattr(args, f) for f in PLAN_FIELDS if getattr(args, f) is not None}
    if args.grid is not None:
        flags = [f"--{f.replace('_', '-')}" for f in given] + ["-o"] * bool(args.output)
        if flags:
            raise SweepError(
                f"--grid: give scenarios in the file or as flags, not both (got {', '.join(flags)})"
            )
        plans = plan_grid(load_plan_grid(args.grid), replicates=args.replicates, seed=args.seed)
        print(plans_json(plans) if args.json else plan_table(plans))
        return
    for required in ("alpha", "rho", "eta", "cost_metric"):
        if required not in given:
            raise SweepError(f"--{required.replace('_', '-')}: required (or give --grid PLAN.yaml)")
    if args.output:
        if "eps" not in given:
            raise SweepError("-o: the frontier needs a target --eps")
        check_image_path(args.output)
    plans = plan_grid([given], replicates=args.replicates, seed=args.seed, frontier=True)
    print(plans_json(plans) if args.json else "\n".join(plans[0].lines()))
    if args.output:
        path = plot_frontier(plans[0], args.output)
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0, 2 for bad input, 130 when interrupted)."""
    try:
        args = build_parser().parse_args(argv)
        commands = {"run": _run, "status": _status, "show": _show, "plot": _plot, "plan": _plan}
        commands[args.command](args)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
