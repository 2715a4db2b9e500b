"""Battles counted by cell: what the arena's posterior and its estimators read.

A battle shows systems a (on side A, shown first) and b (side B) one input and records a
human verdict (or none) and each judge's verdict. Verdicts are the preference classes of
:data:`kernels.categorical.families.PREFERENCE_VALUES`, in that order: 0 B better, 1 tie,
2 A better (:data:`B_BETTER`, :data:`TIE`, :data:`A_BETTER`); :data:`NONE` where a verdict is
missing. Battles alike in every one of these are one cell with a count, so that a
likelihood's cost grows with the cells, not with the battles.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "A_BETTER",
    "B_BETTER",
    "NONE",
    "TIE",
    "BattleCells",
    "count_cells",
    "pair_index",
    "with_human_verdict",
]

#: The verdict classes (as the preference classes) and a missing verdict.
B_BETTER, TIE, A_BETTER, NONE = 0, 1, 2, -1


class BattleCells(NamedTuple):
    """Battles by distinct (a, b, human verdict, judges' verdicts), one row each.

    Attributes:
        a: ``(n,)`` int32, the system on side A (an index into the systems).
        b: ``(n,)`` int32, the system on side B (≠ a).
        human: ``(n,)`` int32, the human verdict's class, or :data:`NONE`.
        judged: ``(n, J)`` int32, each judge's verdict's class, or :data:`NONE`.
        count: ``(n,)`` int64 ≥ 1, the battles in the cell.
    """

    a: np.ndarray
    b: np.ndarray
    human: np.ndarray
    judged: np.ndarray
    count: np.ndarray

    @property
    def judges(self) -> int:
        """J."""
        return self.judged.shape[1]

    @property
    def battles(self) -> int:
        """Σ count."""
        return int(self.count.sum())


def count_cells(a, b, human, judged) -> BattleCells:
    """The cells of per-battle arrays (``(B,)`` a, b, human and ``(B, J)`` judged, classes or
    :data:`NONE`), in lexicographic order of (a, b, human, judged…): the same battles in any
    order give the same cells."""
    a, b, human = (np.asarray(x, np.int32).reshape(-1) for x in (a, b, human))
    judged = np.asarray(judged, np.int32).reshape(len(a), -1)
    rows = np.column_stack([a, b, human, judged])
    unique, count = np.unique(rows, axis=0, return_counts=True)
    return BattleCells(
        a=unique[:, 0].copy(),
        b=unique[:, 1].copy(),
        human=unique[:, 2].copy(),
        judged=unique[:, 3:].copy(),
        count=count.astype(np.int64),
    )


def pair_index(a, b, systems: int) -> np.ndarray:
    """Each battle's unordered pair {a, b} as its index among the S(S − 1)/2 pairs i < j,
    row-major (the order of ``np.triu_indices(S, 1)``), elementwise over NumPy arrays."""
    low, high = np.minimum(a, b), np.maximum(a, b)
    return low * systems - low * (low + 1) // 2 + (high - low - 1)


def with_human_verdict(cells: BattleCells) -> BattleCells:
    """The cells with a human verdict."""
    keep = cells.human != NONE
    return BattleCells(*(np.asarray(x)[keep] for x in cells))
