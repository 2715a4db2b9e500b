"""``examples/preferences.csv``: Chatbot Arena battles as a preference campaign with two judges.

Source: ``/work/shared/reference/arena_battles.csv`` (shipped beside the project as
``../shared/reference/``): 26,919 Chatbot Arena battles among 20 chatbots, each with the
human verdict (``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``) and the verdicts of
two LLM judges on the same battle, GPT-4 (``gpt-4-0125-preview``) and GPT-3.5 Turbo
(``gpt-3.5-turbo``) (``model_a``, ``model_b``, ``tie``). From ``data/*.json`` of the
MIT-licensed repository Networks-Learning/prediction-powered-ranking (Chatzi et al.,
*Prediction-Powered Ranking of Large Language Models*, NeurIPS 2024); the human votes are
Chatbot Arena's.

What the file is, deterministically:

1. Five systems, each against the field: :data:`SYSTEMS`. A battle counts for a system
   when the system is on one side and the other side is none of the five (battles between
   two of them are left out, so that no battle is an output of two systems and the
   systems' posteriors are independent).
2. Every verdict is from the system's point of view: ``better`` (it won), ``tie`` (a tie,
   ``tie (bothbad)`` merged into it) or ``worse``; ``side`` says where the system was
   shown (``A`` first, ``B`` second; ``sweep compare`` ignores the column).
3. Per system, the :data:`PER_SYSTEM` battles whose SHA-256 of ``"{seed}:{battle}"`` (hex)
   sorts first are kept (the file stays small), and of those the first :data:`HUMAN_SHARE`
   keep their human verdict: the paired set. ``judge_gpt4`` and ``judge_gpt35`` hold both
   judges' verdicts on every row, so the other rows are judge-only ratings.
4. Every battle of the source has its human verdict, so the truth is known: ``--truth``
   prints each system's full-data human θ (the win rate, ties counted half) over its kept
   battles and over all its battles against the field, against which ``sweep compare``'s
   intervals can be checked.

The hash makes the draw the same on any machine and any library version. Defaults:
seed 66, 1,000 battles per system, 20 % with a human verdict.

    python scripts/make_preference_example.py [--truth]
    sweep compare examples/preferences.csv --classes worse,tie,better
"""

from __future__ import annotations

import argparse
import csv
import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "reference" / "arena_battles.csv"
TARGET = ROOT / "examples" / "preferences.csv"
#: The systems compared, each against the other 15 chatbots of the source.
SYSTEMS = ("gpt-4", "claude-v1", "gpt-3.5-turbo", "vicuna-13b", "koala-13b")
PER_SYSTEM, HUMAN_SHARE, SEED = 1000, 0.2, 66
#: A verdict of the source (who won: side A, side B or a tie) from side A's point of view.
_FROM_A = {"model_a": "better", "model_b": "worse", "tie": "tie", "tie (bothbad)": "tie"}
_SWAP = {"better": "worse", "worse": "better", "tie": "tie"}
_JUDGES = {"judge_gpt4": "gpt-4-0125-preview", "judge_gpt35": "gpt-3.5-turbo"}
COLUMNS = ("system", "item", "side", "human", *_JUDGES)


def rank(seed: int, battle: str) -> str:
    """A battle's place in the draw: the hex SHA-256 of ``"{seed}:{battle}"``."""
    return hashlib.sha256(f"{seed}:{battle}".encode()).hexdigest()


def verdict(source: str, side: str) -> str:
    """The source's verdict as the system on ``side`` (A or B) sees it."""
    said = _FROM_A[source]
    return said if side == "A" else _SWAP[said]


def battles_of(rows: list[dict], system: str) -> list[dict]:
    """The system's battles against the field, each as an output of the file (every
    verdict its own; ``human`` the full-data human verdict)."""
    out = []
    for row in rows:
        if system not in (row["model_a"], row["model_b"]):
            continue
        other = row["model_b"] if row["model_a"] == system else row["model_a"]
        if other in SYSTEMS:
            continue
        side = "A" if row["model_a"] == system else "B"
        out.append(
            {
                "system": system,
                "item": row["battle"],
                "side": side,
                "human": verdict(row["human"], side),
                **{column: verdict(row[name], side) for column, name in _JUDGES.items()},
            }
        )
    return out


def theta(verdicts: list[str]) -> float:
    """The win rate with ties counted half: θ = vᵀπ for v = (0, ½, 1)."""
    value = {"worse": 0.0, "tie": 0.5, "better": 1.0}
    return sum(value[v] for v in verdicts) / len(verdicts)


def example(rows: list[dict], per_system=PER_SYSTEM, share=HUMAN_SHARE, seed=SEED):
    """The example's rows (human verdict kept on the paired set, blank elsewhere) and per
    system the full-data human θ of its kept battles and of all its battles."""
    out, truth = [], {}
    for system in SYSTEMS:
        battles = battles_of(rows, system)
        kept = sorted(battles, key=lambda b: rank(seed, b["item"]))[:per_system]
        paired = round(share * len(kept))
        truth[system] = (
            theta([b["human"] for b in kept]),
            theta([b["human"] for b in battles]),
            len(battles),
        )
        chosen = {b["item"] for b in kept[:paired]}
        for b in sorted(kept, key=lambda b: int(b["item"])):  # the file in battle order
            out.append({**b, "human": b["human"] if b["item"] in chosen else ""})
    return out, truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--truth", action="store_true", help="print the full-data human θ")
    args = parser.parse_args()
    with SOURCE.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    out, truth = example(rows)
    with TARGET.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(out)
    print(f"wrote {TARGET.relative_to(ROOT)}: {len(out):,} rows")
    if args.truth:
        print("system  theta(kept battles, every human verdict)  theta(all vs the field)  n")
        for system, (kept, full, n) in truth.items():
            print(f"{system}  {kept:.3f}  {full:.3f}  {n:,}")


if __name__ == "__main__":
    main()
