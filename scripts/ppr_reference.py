"""The released prediction-powered ranking code's output on one split of the shipped
battles: the reference ``tests/kernels/test_ppr.py`` checks ``kernels/arena/ppr.py``
against.

Runs OUTSIDE the package: it imports ``src.estimate`` and ``src.ranksets`` from a checkout
of Networks-Learning/prediction-powered-ranking (MIT), e.g. made by

    git --git-dir=<mirror>/repo archive HEAD src | tar -x -C /tmp/ppr-checkout

The split: ``--human`` battles keep their human verdict, drawn at random
(``numpy.random.default_rng(--seed)``, without replacement); the rest are judged only.
Per judge, the released code's ``lhat_opt``, ``estimate`` (θ̂, Σ) and ``find_ranksets``,
on datasets built by its own ``summarize_dataset``; and the human verdicts alone by its
``sample_avg(..., key='human')``. Systems are in sorted order of their names.

    python scripts/ppr_reference.py --checkout /tmp/ppr-checkout
        [--battles examples/arena_battles.csv] [--human 1000] [--seed 67] [--alpha 0.1]
        [--out tests/data/ppr_reference.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

JUDGES = ("gpt-4-0125-preview", "gpt-3.5-turbo")


def default_battles() -> Path:
    """examples/arena_battles.csv, or the shared reference copy where a clone has none."""
    here = Path(__file__).resolve().parents[1]
    for path in (
        here / "examples/arena_battles.csv",
        here / "../shared/reference/arena_battles.csv",
    ):
        if path.exists():
            return path
    return here / "examples/arena_battles.csv"


def rows(frame: pd.DataFrame, column: str) -> list[dict]:
    """The released code's per-battle records (its ``input_json`` layout)."""
    return [
        {"model_a": a, "model_b": b, "winner": w}
        for a, b, w in zip(frame["model_a"], frame["model_b"], frame[column], strict=True)
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, required=True, help="the released code's root")
    parser.add_argument("--battles", type=Path, default=default_battles())
    parser.add_argument("--human", type=int, default=1000, help="battles keeping the human verdict")
    parser.add_argument("--seed", type=int, default=67)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--out", type=Path, default=Path("tests/data/ppr_reference.json"))
    args = parser.parse_args(argv)

    sys.path.insert(0, str(args.checkout.resolve()))
    from src import data_process, estimate, ranksets  # the released code

    frame = pd.read_csv(args.battles, keep_default_na=False)
    models = sorted(set(frame["model_a"]) | set(frame["model_b"]))
    k = len(models)
    rng = np.random.default_rng(args.seed)
    kept = np.sort(rng.choice(len(frame), size=args.human, replace=False))
    seen = np.zeros(len(frame), bool)
    seen[kept] = True
    small, big = frame[seen], frame[~seen]

    record = {
        "command": "python " + " ".join(["scripts/ppr_reference.py", *(argv or sys.argv[1:])]),
        "released_code": {
            "repository": "Networks-Learning/prediction-powered-ranking",
            "commit": _commit(args.checkout),
        },
        "battles_file": args.battles.name,
        "battles_sha256": hashlib.sha256(args.battles.read_bytes()).hexdigest(),
        "seed": args.seed,
        "human": int(seen.sum()),
        "judge_only": int((~seen).sum()),
        "alpha": args.alpha,
        "systems": models,
        "kept_battles": frame["battle"][seen].astype(int).tolist(),
    }
    human_dn = data_process.summarize_dataset(models, rows(small, "human"), rows(small, "human"))
    theta, sigma = estimate.sample_avg(k, human_dn, key="human")
    record["human_only"] = _case(theta, sigma, ranksets.find_ranksets(k, theta, sigma, args.alpha))
    record["judges"] = {}
    for judge in JUDGES:
        dn = data_process.summarize_dataset(models, rows(small, judge), rows(small, "human"))
        big_n = data_process.summarize_dataset(models, rows(big, judge))
        lam = estimate.lhat_opt(k, dn, big_n)
        theta, sigma = estimate.estimate(k, dn, big_n, lhat=lam)
        case = _case(theta, sigma, ranksets.find_ranksets(k, theta, sigma, args.alpha))
        record["judges"][judge] = {"lam": float(lam), **case}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")


def _case(theta, sigma, sets) -> dict:
    return {
        "theta": np.asarray(theta, float).reshape(-1).tolist(),
        "cov": np.asarray(sigma, float).tolist(),
        "rank_sets": [[int(low), int(high)] for low, high in sets],
    }


def _commit(checkout: Path) -> str | None:
    marker = checkout / "COMMIT"
    if marker.exists():
        return marker.read_text().strip()
    try:
        out = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True)
    except OSError:
        return None
    return out.stdout.decode().strip() or None


if __name__ == "__main__":
    main()
