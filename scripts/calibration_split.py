"""The shipped calibration split of the Arena example: a judge at work beside a few humans.

``examples/arena_judge_gpt-4o-mini.csv`` gives every battle both labels, so
``sweep compare --estimator all`` on it has no metric-only ratings: judge-only
and Rogan–Gladen do not apply, and every other estimator is the human labels'
mean. A campaign that uses a judge looks different: a human rates a small
calibration set, the judge rates everything. This script makes such a file
from the original, deterministically:

1. per system, the ⌈share · n⌉ battles (of its n) whose SHA-256 of
   ``"{seed}:{system}:{item}"`` (hex) sorts first keep their human label: the
   calibration set, paired ratings;
2. every other battle has its human label removed and keeps the judge's only
   (metric-only ratings);
3. a battle left with no label (the judge returned no pick and its human label
   was removed) is dropped.

Every other field is copied as it is (``claude_position`` too). The hash
makes the draw the same on any machine and any version of any library, and
lets anyone redo it by hand. Defaults: share 0.1, seed 64.

    python scripts/calibration_split.py [--share 0.1] [--seed 64]
        [--source examples/arena_judge_gpt-4o-mini.csv]
        [--out examples/arena_judge_gpt-4o-mini_calibration.csv]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "examples" / "arena_judge_gpt-4o-mini.csv"
TARGET = ROOT / "examples" / "arena_judge_gpt-4o-mini_calibration.csv"
SHARE, SEED = 0.1, 64


def rank(seed: int, system: str, item: str) -> str:
    """A battle's place in the draw: the hex SHA-256 of ``"{seed}:{system}:{item}"``."""
    return hashlib.sha256(f"{seed}:{system}:{item}".encode()).hexdigest()


def calibration_split(rows: list[dict], share: float = SHARE, seed: int = SEED) -> list[dict]:
    """``rows`` (dicts of strings, one per battle, in file order) with the human label kept
    on the first ⌈share · n⌉ battles of each system by :func:`rank` and removed ("") on the
    rest; battles left with no label are dropped. The order of the rows is kept."""
    if not 0.0 < share <= 1.0:
        raise ValueError(f"--share: {share!r} is not allowed; give a number in (0, 1]")
    by_system: dict[str, list[str]] = {}
    for row in rows:
        by_system.setdefault(row["system"], []).append(row["item"])
    kept = set()
    for system, items in by_system.items():
        if len(set(items)) != len(items):
            raise ValueError(f"system {system!r}: an item appears twice; one row per battle")
        first = sorted(items, key=lambda item, s=system: rank(seed, s, item))
        kept |= {(system, item) for item in first[: math.ceil(share * len(items))]}
    out = []
    for row in rows:
        if (row["system"], row["item"]) not in kept:
            row = {**row, "human": ""}
        if row["human"] or row["metric"]:
            out.append(row)
    return out


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or ()), list(reader)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--share", type=float, default=SHARE)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--out", type=Path, default=TARGET)
    args = parser.parse_args(argv)
    fields, rows = read_rows(args.source)
    split = calibration_split(rows, args.share, args.seed)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)  # the source's CRLF rows
        writer.writeheader()
        writer.writerows(split)
    human = sum(1 for row in split if row["human"])
    print(f"wrote {args.out}: {len(split)} rows, {human} with a human label")


if __name__ == "__main__":
    main()
