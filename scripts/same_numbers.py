"""Does this working tree give an earlier commit's numbers? Sweeps compared field by field.

A refactor must change no fit's bits. This runs each sweep file with the code
of ``--base`` (its ``sweep/`` and ``kernels/`` from ``git archive``, imported
ahead of the installed package) and with the installed working tree, on this
machine, and compares every shard's ``fits`` and ``surface`` tables: schema,
then every column's values (NaN equal to NaN). It also compares each sweep's
digest, so that finished sweeps still resume. Prints one line per sweep and
``ALL SAME`` or ``DIFFERENT``; exits 1 on a difference. Tables whose columns differ
only in order are compared by name, and the order is reported as a difference.

Usage: python scripts/same_numbers.py --base COMMIT configs/quickstart.yaml [more.yaml ...]
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Run a sweep, then print the digest its manifest records.
RUN = (
    "import json, pathlib, sys; from binmetric_sweep import sweep; "
    "sweep.run(sys.argv[1], sys.argv[2], progress=False); "
    "print(json.loads((pathlib.Path(sys.argv[2]) / 'sweep.json').read_text())['digest'])"
)


def run(sweep_file: str, out: Path, pythonpath: str | None) -> str:
    """The sweep run into ``out`` by the code on ``pythonpath`` (None: installed); its digest."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [sys.executable, "-c", RUN, sweep_file, str(out)],
        env=env, cwd=out.parent, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip().splitlines()[-1]


def differences(before: Path, after: Path) -> list[str]:
    import pyarrow.parquet as pq

    def values(column):
        return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in column.to_pylist()]

    found = []
    for part in ("fits", "surface"):
        a = sorted(glob.glob(str(before / part / "*.parquet")))
        b = sorted(glob.glob(str(after / part / "*.parquet")))
        if [Path(f).name for f in a] != [Path(f).name for f in b]:
            found.append(f"{part}: other shard files")
            continue
        for x, y in zip(a, b, strict=True):
            ta, tb = pq.read_table(x), pq.read_table(y)
            if not ta.schema.equals(tb.schema):
                fields = {f.name: f.type for f in ta.schema}
                if fields != {f.name: f.type for f in tb.schema}:
                    found.append(f"{Path(x).name}: schema")
                    continue
                found.append(f"{Path(x).name}: column order")  # the values by name below
                tb = tb.select(ta.column_names)
            found += [
                f"{Path(x).name}: {c}"
                for c in ta.column_names
                if values(ta.column(c)) != values(tb.column(c))
            ]
    return found


def main() -> int:
    import pyarrow.parquet as pq

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare against")
    parser.add_argument("sweep_files", nargs="+")
    args = parser.parse_args()
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site" / "binmetric_sweep"
        site.mkdir(parents=True)
        (site / "__init__.py").write_text("")
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.base, "sweep", "kernels"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(site)], input=archive, check=True)
        for sweep_file in args.sweep_files:
            path = str(Path(sweep_file).resolve())
            name = Path(sweep_file).stem
            before, after = Path(tmp) / f"before-{name}", Path(tmp) / f"after-{name}"
            digests = run(path, before, str(site.parent)), run(path, after, None)
            found = differences(before, after)
            if digests[0] != digests[1]:
                found.append(f"digest {digests[0]} against {digests[1]}")
            rows = sum(
                pq.read_metadata(f).num_rows for f in glob.glob(str(after / "fits" / "*.parquet"))
            )
            print(f"{name}: {rows} fit rows, " + ("same" if not found else "; ".join(found)))
            same &= not found
    print("ALL SAME" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
