"""Run the fault-injection tests and print what was injected and what survived.

Runs ``tests/sweep/test_faults.py`` and ``tests/sweep/test_ray_faults.py`` (the
latter when Ray is installed) under pytest with ``SWEEP_FAULT_LOG`` set, so
every injection appends one JSON line (see ``tests/sweep/faults.py``), then
prints a table: fault, times injected, times survived, rows lost, rows
duplicated. A survived injection is one whose finished sweep equals an
undisturbed run of the same sweep and seed bit for bit (or, for bad input and
non-finite kernel output, one that was refused or flagged as promised).

Writes the table as JSON under ``benchmarks/results/`` and exits non-zero when
any test failed or any injection did not survive.

Usage: python scripts/fault_report.py [--out DIR] [-- extra pytest arguments]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from binmetric_sweep.sweep.storage.records import write_record

REPO = Path(__file__).resolve().parents[1]
MODULES = ["tests/sweep/test_faults.py", "tests/sweep/test_ray_faults.py"]


def tally(lines: list[dict]) -> list[dict]:
    """Injections grouped by fault, in first-seen order."""
    rows: dict[str, collections.Counter] = {}
    for line in lines:
        row = rows.setdefault(line["fault"], collections.Counter())
        row["injected"] += 1
        row["survived"] += int(line["survived"])
        row["lost"] += line["lost"]
        row["duplicated"] += line["duplicated"]
    return [{"fault": fault, **counts} for fault, counts in rows.items()]


def table(rows: list[dict]) -> str:
    """A Markdown table (it reads as plain text too)."""
    head = "| fault | injected | survived | rows lost | rows duplicated |"
    out = [head, "|---|---:|---:|---:|---:|"]
    for r in rows:
        out.append(
            f"| {r['fault']} | {r['injected']} | {r['survived']} | {r['lost']} "
            f"| {r['duplicated']} |"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    modules = [m for m in MODULES if "ray" not in m or importlib.util.find_spec("ray")]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "faults.jsonl"
        env = {**os.environ, "SWEEP_FAULT_LOG": str(log)}
        started = time.perf_counter()
        tests = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *modules]
            + args.pytest_args,
            cwd=REPO,
            env=env,
        )
        seconds = time.perf_counter() - started
        lines = [json.loads(s) for s in log.read_text().splitlines()] if log.exists() else []
    rows = tally(lines)
    print()
    print(table(rows))
    healthy = tests.returncode == 0 and all(r["survived"] == r["injected"] for r in rows)
    print(f"\npytest exit {tests.returncode} in {seconds:.0f} s; modules: {', '.join(modules)}")
    result = {"modules": modules, "pytest_exit": tests.returncode, "seconds": seconds, "rows": rows}
    write_record(result, args.out, "faults")
    return 0 if healthy and rows else 1


if __name__ == "__main__":
    sys.exit(main())
