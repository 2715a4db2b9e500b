"""Battles files for ``sweep compare``: pairwise verdicts among many systems, read into
:class:`~binmetric_sweep.kernels.arena.cells.BattleCells`.

A battles table has one row per battle, in the formats :mod:`~.ratings` reads (CSV, TSV,
Parquet, JSON Lines; :func:`~.ratings.read_frame`):

- ``model_a``, ``model_b``: the systems on sides A (shown first) and B, read as system
  names are (:func:`~.ratings.names_column`: text, stripped); a battle of a system against
  itself is refused.
- ``human``: the human verdict, or empty (null or blank): no human verdict.
- one column per judge: the columns named (``judges``), in that order, or else every other
  column that has a value and whose values are all verdict words or empty, in the file's
  order. A judge's empty cell is no verdict (:data:`~.cells.NONE`); a judge column with no
  verdict at all is refused where it is named (and not a judge where it is not).
- ``item``, optionally: accepted and not used (the cells do not need it).

Every other column is read past and listed in :attr:`Battles.ignored`, with ``item``.

**Verdict words** (:class:`VerdictWords`) are matched exactly, case included, once
stripped of surrounding whitespace: by default ``model_a`` (A better), ``model_b`` (B
better), ``tie`` and ``tie (bothbad)`` (a tie). ``verdicts`` replaces that mapping (a
dict word → ``model_a``/``model_b``/``tie``, or ``--verdicts``' text
``win=model_a,loss=model_b,draw=tie``) for every verdict column, the human's included.

A leaderboard needs every system joined to every other through battles: where they fall
into groups with no battle between them the ranking is not identified, and
:func:`require_connected` names each group's systems (the comparison calls it on the battles
each method reads: all of them, those with a human verdict, those a judge gave a verdict
on).

Rows are numbered from 1, the header not counted, as :mod:`~.ratings` numbers them. Every
refusal is one line (:class:`SweepError`) naming the file (``battles`` for a DataFrame),
the row and the column where one applies. Python runs once per distinct value of a
column, never once per row.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from binmetric_sweep.kernels.arena.cells import (
    A_BETTER,
    B_BETTER,
    NONE,
    TIE,
    BattleCells,
    count_cells,
)
from binmetric_sweep.sweep.compare.ratings import (
    listed,
    names_column,
    read_frame,
    require_columns,
)
from binmetric_sweep.sweep.errors import SweepError, shown

__all__ = [
    "BATTLE_COLUMNS",
    "DEFAULT_VERDICTS",
    "VERDICT_CLASSES",
    "Battles",
    "VerdictWords",
    "battles_from_frame",
    "components",
    "file_columns",
    "is_battles",
    "read_battles",
    "require_connected",
]

#: The columns every battles table has; ``item`` may be there too.
BATTLE_COLUMNS = ("model_a", "model_b", "human")
#: The columns that are never a judge.
_NOT_JUDGES = (*BATTLE_COLUMNS, "item")
#: What a verdict word may stand for (the right side of ``--verdicts``), and its class.
VERDICT_CLASSES = {"model_a": A_BETTER, "model_b": B_BETTER, "tie": TIE}

_LAYOUT = (
    "a battles table has columns model_a, model_b, human (a verdict or empty), one column "
    "per judge and optionally item"
)
_VERDICTS_FORM = "WORD=VERDICT,... with VERDICT one of model_a, model_b, tie"
_BAD = -2  # a distinct cell that is not a verdict word (NONE, -1, is an empty one)


class VerdictWords(NamedTuple):
    """The words a verdict column may hold and the class each stands for.

    Attributes:
        words: the words, as matched (exactly, once stripped).
        classes: each word's class (:data:`~.cells.A_BETTER`, :data:`~.cells.TIE`,
            :data:`~.cells.B_BETTER`).
    """

    words: tuple[str, ...]
    classes: tuple[int, ...]

    @staticmethod
    def of(given: VerdictWords | Mapping[str, str] | str | None) -> VerdictWords:
        """The mapping ``given``: None (the default), a dict word → verdict name, or
        ``--verdicts``' text ``win=model_a,loss=model_b,draw=tie``; raise on a bad one."""
        if given is None:
            return DEFAULT_VERDICTS
        if isinstance(given, VerdictWords):
            return given
        if isinstance(given, str):
            pairs = [_word_and_verdict(part) for part in given.split(",")]
        elif isinstance(given, Mapping):
            pairs = [(str(word).strip(), verdict) for word, verdict in given.items()]
        else:
            raise SweepError(f"--verdicts: {shown(given)} is not {_VERDICTS_FORM}")
        words = [word for word, _ in pairs]
        for word, verdict in pairs:
            if not word:
                raise SweepError(f"--verdicts: an empty word; {_VERDICTS_FORM}")
            if words.count(word) > 1:
                raise SweepError(f"--verdicts: {shown(word)} is mapped twice")
            if verdict not in VERDICT_CLASSES:
                raise SweepError(
                    f"--verdicts: {shown(word)} maps to {shown(verdict)}; a verdict is one of "
                    f"{', '.join(VERDICT_CLASSES)}"
                )
        if not pairs:
            raise SweepError(f"--verdicts: no words; {_VERDICTS_FORM}")
        return VerdictWords(tuple(words), tuple(VERDICT_CLASSES[v] for _, v in pairs))

    def allowed(self) -> str:
        """The words, for an error line."""
        return ", ".join(self.words) + " or empty"

    def code(self, value: object) -> int:
        """One distinct cell's class, :data:`~.cells.NONE` (empty) or ``_BAD``."""
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return NONE
            return self.classes[self.words.index(text)] if text in self.words else _BAD
        if value is None or (isinstance(value, (float, np.floating)) and np.isnan(value)):
            return NONE
        return _BAD


def _word_and_verdict(part: str) -> tuple[str, str]:
    word, equals, verdict = part.rpartition("=")
    if not equals:
        raise SweepError(f"--verdicts: {shown(part.strip())} is not WORD=VERDICT; {_VERDICTS_FORM}")
    return word.strip(), verdict.strip()


#: The default verdict words: Chatbot Arena's.
DEFAULT_VERDICTS = VerdictWords(
    words=("model_a", "model_b", "tie", "tie (bothbad)"), classes=(A_BETTER, B_BETTER, TIE, TIE)
)


class Battles(NamedTuple):
    """A battles table read into cells.

    Attributes:
        systems: the systems' names, sorted; the cells' ``a`` and ``b`` index them.
        judges: the judge columns, in order; ``cells.judged``'s columns.
        cells: the battles by (a, b, human verdict, judges' verdicts) cell.
        ignored: the columns not used, in the file's order (``item`` among them).
        source: the file as given (``battles`` for a DataFrame), for error lines.
    """

    systems: tuple[str, ...]
    judges: tuple[str, ...]
    cells: BattleCells
    ignored: tuple[str, ...]
    source: str = "battles"

    @property
    def human_verdicts(self) -> int:
        """The battles with a human verdict."""
        return int(self.cells.count[self.cells.human != NONE].sum())

    def reading(self) -> str:
        """One line: what was read."""
        line = (
            f"{self.cells.battles:,} battles among {len(self.systems)} systems; human verdicts "
            f"on {self.human_verdicts:,}; judge{'s' if len(self.judges) > 1 else ''} "
            f"{', '.join(self.judges)}"
        )
        if self.ignored:
            line += f"; columns not read: {', '.join(self.ignored)}"
        return line


def is_battles(columns: Sequence[object]) -> bool:
    """Whether a table of these columns is a battles table (it has model_a and model_b)."""
    names = {str(c) for c in columns}
    return "model_a" in names and "model_b" in names


class _Found(Exception):
    """Carries a file's column names out of :func:`~.ratings.read_frame`'s selection."""


def file_columns(source: str | os.PathLike) -> list[str] | None:
    """The column names of a ratings or battles file, or None where it cannot be read (the
    reader that follows then says why). CSV and Parquet are read no further than their
    header; JSON Lines has none, so it is read whole."""

    def stop(columns, _source):
        raise _Found([str(c) for c in columns])

    try:
        read_frame(source, stop)
    except _Found as found:
        return found.args[0]
    except SweepError:
        return None
    return None  # pragma: no cover - read_frame always calls the selection


def components(cells: BattleCells, systems: int) -> list[list[int]]:
    """The systems' connected components in the graph whose edges are the cells' battles
    (a system with no battle is a component alone), each sorted, ordered by their first
    system."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    edges = np.ones(len(cells.a))
    graph = coo_matrix((edges, (cells.a, cells.b)), shape=(systems, systems))
    _, label = connected_components(graph, directed=False)
    groups: dict[int, list[int]] = {}
    for system, group in enumerate(label):
        groups.setdefault(int(group), []).append(system)
    return sorted(groups.values(), key=lambda g: g[0])


def require_connected(battles: Battles, cells: BattleCells | None = None, what: str = "") -> None:
    """Return if every system is joined to every other through ``cells``' battles (default:
    all of them); else raise naming the systems of each component: strengths in different
    components are not compared by any battle, so their ranking is not identified.
    ``what`` says which battles these are (e.g. " with a human verdict")."""
    groups = components(battles.cells if cells is None else cells, len(battles.systems))
    if len(groups) <= 1:
        return
    named = "; ".join("{" + ", ".join(battles.systems[i] for i in group) + "}" for group in groups)
    raise SweepError(
        f"{battles.source}: the systems are not all connected through the battles{what} "
        f"({len(groups)} groups with no battle between them: {named}); the ranking is not "
        "identified: add battles between the groups or compare each group alone"
    )


def read_battles(
    source: str | os.PathLike,
    judges: Sequence[str] | None = None,
    verdicts: VerdictWords | Mapping[str, str] | str | None = None,
) -> Battles:
    """Read a battles file (module docstring); the format follows the suffix.

    ``judges``: the judge columns, in order (None: every column of verdicts); ``verdicts``:
    the verdict words (None: Arena's; :meth:`VerdictWords.of`). The options are checked
    before the file is read.

    Raises:
        SweepError: bad input, one line naming the file, row and column, or the option.
    """
    words = VerdictWords.of(verdicts)
    named = _named_judges(judges)
    frame, names = read_frame(source, lambda columns, src: _columns(columns, src, named))
    return _battles(frame, [str(n) for n in names], os.fspath(source), named, words)


def battles_from_frame(
    frame: pd.DataFrame,
    judges: Sequence[str] | None = None,
    verdicts: VerdictWords | Mapping[str, str] | str | None = None,
) -> Battles:
    """A DataFrame read as a file of the same columns is (:func:`read_battles`), named
    ``battles`` in errors."""
    words = VerdictWords.of(verdicts)
    named = _named_judges(judges)
    names = [str(c) for c in frame.columns]
    needed = _columns(names, "battles", named)
    frame = frame.set_axis(names, axis=1)[list(needed)]
    return _battles(frame, names, "battles", named, words)


# --- columns ---------------------------------------------------------------------------


def _named_judges(judges: Sequence[str] | None) -> tuple[str, ...] | None:
    """The judge columns named, checked against each other; None where none are."""
    if judges is None:
        return None
    named = tuple(str(j).strip() for j in ([judges] if isinstance(judges, str) else judges))
    if not named:
        raise SweepError("--judge-columns: no column named")
    for name in named:
        if not name or name in _NOT_JUDGES:
            raise SweepError(
                f"--judge-columns: {shown(name)} cannot be a judge column (not "
                f"{', '.join(_NOT_JUDGES)})"
            )
        if named.count(name) > 1:
            raise SweepError(f"--judge-columns: {shown(name)} is named twice")
    return named


def _columns(columns: Sequence[object], source: str, named: tuple[str, ...] | None) -> tuple:
    """The columns to read: the battle columns, the judges named and ``item``, or every
    column where no judge is named (which are verdicts is found from their values)."""
    columns = [str(c) for c in columns]
    require_columns(columns, BATTLE_COLUMNS, source, _LAYOUT)
    if named is None:
        require_columns(columns, [c for c in columns if c not in BATTLE_COLUMNS], source)
        return tuple(columns)
    for name in named:
        if name not in columns:
            raise SweepError(
                f"--judge-columns: {source} has no column {shown(name)}; columns found: "
                f"{listed(columns)}"
            )
    needed = (*BATTLE_COLUMNS, *named, *(("item",) if "item" in columns else ()))
    require_columns(columns, needed, source)
    return needed


# --- values ----------------------------------------------------------------------------


def _verdicts(values: pd.Series, words: VerdictWords) -> np.ndarray:
    """Each row's class, :data:`~.cells.NONE` (empty) or ``_BAD`` (not a verdict word)."""
    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    except TypeError:  # a list or dict (nested JSON or Parquet): never a verdict
        codes, uniques = pd.factorize(values.map(_hashable_or_marker), use_na_sentinel=True)
    table = np.array([words.code(u) for u in uniques] + [NONE], dtype=np.int32)
    return table[codes]  # a null's code is -1: the last entry, NONE


def _hashable_or_marker(value: object) -> object:
    """``value``, or a marker no verdict word matches where it cannot be hashed."""
    try:
        hash(value)
    except TypeError:
        return _Unhashable()
    return value


class _Unhashable:
    """Stands for a list or dict cell, which no verdict word matches."""


def _checked(classes: np.ndarray, values: pd.Series, column: str, source: str, words) -> None:
    """Return if every row of ``column`` is a verdict or empty; raise at the first that is not."""
    bad = np.flatnonzero(classes == _BAD)
    if bad.size:
        row = int(bad[0])
        value = values.iloc[row]
        value = value.item() if isinstance(value, np.generic) else value
        raise SweepError(
            f"{source}: row {row + 1}, column {column}: {shown(value)} is not a verdict; "
            f"allowed: {words.allowed()} (--verdicts WORD=VERDICT,... maps others)"
        )


def _judge_columns(frame, names, source, named, words) -> tuple[tuple, list[np.ndarray]]:
    """The judges and their classes: those named (each checked), or every column of
    verdicts among the others."""
    if named is not None:
        judged = []
        for name in named:
            classes = _verdicts(frame[name], words)
            _checked(classes, frame[name], name, source, words)
            if (classes == NONE).all():
                raise SweepError(
                    f"{source}: column {name}: no verdict in any row (a judge column needs "
                    f"verdicts: {words.allowed()})"
                )
            judged.append(classes)
        return named, judged
    found, judged = [], []
    for name in names:
        if name in _NOT_JUDGES:
            continue
        classes = _verdicts(frame[name], words)
        if (classes != _BAD).all() and (classes != NONE).any():
            found.append(name)
            judged.append(classes)
    if not found:
        raise SweepError(
            f"{source}: no judge column (a column whose values are all verdicts: "
            f"{words.allowed()}); name them with --judge-columns; columns found: {listed(names)}"
        )
    return tuple(found), judged


def _battles(frame, names, source, named, words) -> Battles:
    if len(frame) == 0:
        raise SweepError(f"{source}: empty (no rows)")
    a_codes, a_names = names_column(frame["model_a"], "model_a", source)
    b_codes, b_names = names_column(frame["model_b"], "model_b", source)
    systems = tuple(sorted(set(a_names) | set(b_names)))
    index = {name: i for i, name in enumerate(systems)}
    a = np.array([index[n] for n in a_names], dtype=np.int32)[a_codes]
    b = np.array([index[n] for n in b_names], dtype=np.int32)[b_codes]
    itself = np.flatnonzero(a == b)
    if itself.size:
        row = int(itself[0])
        raise SweepError(
            f"{source}: row {row + 1}: model_a and model_b are both {shown(systems[a[row]])}; "
            "a battle is between two different systems"
        )
    human = _verdicts(frame["human"], words)
    _checked(human, frame["human"], "human", source, words)
    judges, judged = _judge_columns(frame, names, source, named, words)
    cells = count_cells(a, b, human, np.column_stack(judged))
    ignored = tuple(n for n in names if n not in (*BATTLE_COLUMNS, *judges))
    return Battles(systems=systems, judges=judges, cells=cells, ignored=ignored, source=source)
