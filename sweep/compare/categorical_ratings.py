"""Ratings files with K-class labels for ``sweep compare --classes``: labels of rated outputs,
or published counts, by system, read into the categorical model's counts.

Two layouts, in the formats :mod:`~.ratings` reads (CSV, TSV, Parquet, JSON Lines):

- a **ratings table**: ``system``, ``human`` (a class name or empty), one or more judge
  columns (class names or empty) and, optionally, ``item``. The judges are the columns
  ``--judge-columns`` names, in its order; without it, every column called ``metric`` or
  whose name starts with ``judge``, in the file's order (a file with both a ``metric`` and
  a ``judge…`` column is refused as ambiguous: name them). An *output* is a row, or with
  ``item`` a (system, item), its labels gathered from all its rows. An output with a human
  label and every judge's is paired (a calibration rating, and a human one); a human label
  only, human-only; every judge's label and no human one, judge-only. An output that some
  judges rated and others did not is refused (the model's judges rate the same items;
  blank the others' labels, or drop it). Rows without a label are skipped and counted.
  Several labels of one kind on one item (two annotators; one judge twice) are combined by
  the label policies of :mod:`~.ratings` (``--annotators``, ``--judges``: ``refuse``, or
  ``majority``, the class most of them give, a tie refused).
- a **counts table**, one row per system: ``system``; ``h_<class>`` for each class (every
  human rating, the paired ones included, as the model's h: T's rows are part of h);
  ``t_<class>_<verdict>`` (paired ratings by human class and joint verdict) and
  ``m_<verdict>`` (judge-only ratings), a verdict named as :class:`~.classes.Classes`
  names it (its classes joined by ``+`` for several judges: ``t_tie_worse+tie``). The
  number of judges follows the ``m_`` columns present.

Labels are read as text and matched to the class names exactly once stripped of
surrounding whitespace; with numeric class names (``1,2,3,4,5``) also by number (``1.0``
is ``1``, and a typed column's numbers). Empty is a null or blank cell; anything else is
refused naming the file, the row, the column and the names allowed. System and item names
are read as binary compare reads them (:func:`~.ratings.names_column`).

Both come out as :class:`ClassCounts`: the systems, their
:class:`~binmetric_sweep.kernels.categorical.counts.CategoricalCounts` ``(S, ...)`` (NumPy
float64), the :class:`~binmetric_sweep.kernels.categorical.counts.Layout` and what was read
(:class:`ClassReading`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from binmetric_sweep.kernels.categorical.counts import CategoricalCounts, Layout
from binmetric_sweep.sweep.compare.classes import Classes
from binmetric_sweep.sweep.compare.ratings import (
    REFUSE,
    LabelPolicy,
    Reading,
    count_values,
    listed,
    names_column,
    read_frame,
    require_columns,
)
from binmetric_sweep.sweep.errors import SweepError, shown

__all__ = [
    "MAX_JUDGES",
    "ClassCounts",
    "ClassReading",
    "class_columns",
    "counts_table_columns",
    "read_classes",
]

#: The most judges a counts table's ``m_`` columns are looked for (L = K^J columns each).
MAX_JUDGES = 4
#: A label's code: empty, or not a class name (class codes are 0..K−1).
_EMPTY, _BAD = -1, -2
#: How many column names an error line lists.


@dataclass(frozen=True)
class ClassReading(Reading):
    """What a K-class ratings file held (:class:`~.ratings.Reading`'s fields, its
    ``metric_labels`` the judges' labels, ``several_metric``/``split_metric`` theirs), and:

    Attributes:
        classes: the class names, in order.
        values: their values v.
        judge_columns: the judges' columns, in judge order (a counts table: none).
        judges_rated: J, the judges of the layout.
    """

    classes: tuple[str, ...] = ()
    values: tuple[float, ...] = ()
    judge_columns: tuple[str, ...] = ()
    judges_rated: int = 1

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """One line for a report's header: what was read."""
        classes = ", ".join(f"{n} = {v:g}" for n, v in zip(self.classes, self.values, strict=True))
        if self.layout == "counts":
            return (
                f"read {self.source}: counts of {self.systems:,} systems; classes {classes}; "
                f"{self.judges_rated} judge{'s' if self.judges_rated > 1 else ''}"
            )
        unit = "(system, item) outputs" if self.by_item else "outputs (one per row)"
        line = (
            f"read {self.source}: {self.rows:,} rows, {self.outputs:,} {unit} of "
            f"{self.systems:,} systems; classes {classes}; {self.human_labels:,} human and "
            f"{self.metric_labels:,} judge labels (judges {', '.join(self.judge_columns)})"
        )
        if self.unlabelled:
            rows = "1 row" if self.unlabelled == 1 else f"{self.unlabelled:,} rows"
            line += f"; {rows} with no label skipped"
        return line

    def notes(self) -> list[str]:
        """Lines for standard error: columns not read, systems not compared, labels combined."""
        out = []
        if self.ignored:
            used = (
                ", ".join(
                    ("system", *(("item",) if self.by_item else ()), "human", *self.judge_columns)
                )
                if self.layout == "ratings"
                else "its counts"
            )
            out.append(f"ignored columns: {listed(list(self.ignored))} (read: {used})")
        if self.unrated_systems:
            out.append(f"not compared: {listed(list(self.unrated_systems))} (no row with a label)")
        for flag, kind, several, split in (
            ("--annotators", "human", self.several_human, self.split_human),
            ("--judges", "judge", self.several_metric, self.split_metric),
        ):
            if several:
                out.append(
                    f"{flag} majority: {several:,} items with several {kind} labels took "
                    f"their majority ({split:,} of them disagreeing)"
                )
        return out


class ClassCounts(NamedTuple):
    """A K-class ratings or counts file read.

    Attributes:
        systems: the S systems' names, in order of first appearance.
        counts: their counts, NumPy float64 with leading ``(S,)`` (``human`` ``(S, K)``,
            ``paired`` ``(S, K, L)``, ``judged`` ``(S, L)``; ``confusion`` zeros and
            ``known`` False: a comparison learns C from its paired ratings).
        layout: the classes' values and the judges.
        n_outputs: ``(S,)`` int64 rated outputs (a counts table: N_Φ + N_M).
        reading: what was read.
    """

    systems: tuple[str, ...]
    counts: CategoricalCounts
    layout: Layout
    n_outputs: np.ndarray
    reading: ClassReading


def read_classes(
    ratings: str | os.PathLike | pd.DataFrame,
    classes: str | Classes,
    judge_columns: Sequence[str] | None = None,
    *,
    annotators: str | LabelPolicy = REFUSE,
    judges: str | LabelPolicy = REFUSE,
) -> ClassCounts:
    """Read a K-class ratings or counts table (a file, or a DataFrame as a file of its
    columns), the layout following the columns (module docstring).

    ``classes``: the classes (or ``--classes``' text); ``judge_columns``: the judges'
    columns of a ratings table (None: the default rule); ``annotators``, ``judges``: label
    policies (or names) for several labels of one item.

    Raises:
        SweepError: bad input, one line naming the file, row and column, or the option.
    """
    classes = Classes.of(classes)
    annotators = LabelPolicy.of(annotators, "--annotators")
    judges = LabelPolicy.of(judges, "--judges")
    select = lambda columns, source: class_columns(columns, source, classes, judge_columns)  # noqa: E731
    if isinstance(ratings, pd.DataFrame):
        source = "ratings" if "human" in ratings.columns else "counts"
        frame = ratings[list(select(list(ratings.columns), source))]
        names = list(ratings.columns)
    else:
        source = os.fspath(ratings)
        frame, names = read_frame(ratings, select)
    ignored = tuple(str(n) for n in names if n not in frame.columns)
    if "human" in frame.columns:
        return _from_ratings(frame, source, classes, annotators, judges, ignored)
    if judge_columns:
        raise SweepError(
            "--judge-columns: a counts table has no judge columns (its m_ columns say)"
        )
    return _from_counts(frame, source, classes, ignored)


def class_columns(
    columns: Sequence[str], source: str, classes: Classes, judge_columns: Sequence[str] | None
) -> tuple[str, ...]:
    """The columns to read of a K-class file: ``system``, ``human``, the judges and ``item``
    (a ratings table), or ``system`` and the counts (a counts table); raise otherwise."""
    columns = [str(c) for c in columns]
    require_columns(columns, ("system",), source)
    if "human" in columns:
        judged = _judges(columns, source, judge_columns)
        needed = ("system", "human", *judged, *(("item",) if "item" in columns else ()))
        require_columns(columns, needed, source)
        return needed
    if any(c.startswith(("h_", "t_", "m_")) for c in columns):
        return ("system", *counts_table_columns(columns, source, classes)[0])
    raise SweepError(
        f"{source}: neither a K-class ratings nor a counts table; columns found: "
        f"{listed(columns)}; {_RATINGS_LAYOUT}; {_counts_layout(classes)}"
    )


def counts_table_columns(
    columns: Sequence[str], source: str, classes: Classes
) -> tuple[tuple[str, ...], int]:
    """A K-class counts table's count columns (h, then T row by row, then m) and its number
    of judges J, the first J whose ``m_`` columns are all present; raise where none is, or
    where a column of that J is missing or repeated."""
    for j in range(1, MAX_JUDGES + 1):
        verdicts = classes.verdict_names(j)
        if all(f"m_{v}" in columns for v in verdicts):
            break
    else:
        raise SweepError(
            f"{source}: no judge-only columns m_<verdict> of {', '.join(classes.names)} for "
            f"1 to {MAX_JUDGES} judges; {_counts_layout(classes)}; columns found: "
            f"{listed(list(columns))}"
        )
    needed = (
        *(f"h_{k}" for k in classes.names),
        *(f"t_{k}_{v}" for k in classes.names for v in verdicts),
        *(f"m_{v}" for v in verdicts),
    )
    if len(set(needed)) < len(needed):
        raise SweepError(
            f"--classes: the names {', '.join(classes.names)} make two count columns alike"
        )
    require_columns(list(columns), needed, source, _counts_layout(classes))
    return needed, j


_RATINGS_LAYOUT = (
    "a K-class ratings table has columns system, human, judge columns (--judge-columns, or "
    "metric, or names starting with judge) and optionally item"
)


def _counts_layout(classes: Classes) -> str:
    k, v = classes.names[0], classes.names[-1]
    return (
        f"a K-class counts table has columns system, h_<class>, t_<class>_<verdict>, "
        f"m_<verdict> (e.g. h_{k}, t_{k}_{v}, m_{v}; several judges' verdict joined by +: "
        f"m_{k}+{v})"
    )


def _judges(columns: list[str], source: str, judge_columns: Sequence[str] | None) -> tuple:
    """The judge columns of a ratings table: those named, or the default rule's."""
    if judge_columns:
        named = tuple(str(c).strip() for c in judge_columns)
        for name in named:
            if name in ("system", "human", "item", ""):
                raise SweepError(f"--judge-columns: {shown(name)} cannot be a judge column")
            if named.count(name) > 1:
                raise SweepError(f"--judge-columns: {shown(name)} is named twice")
            if name not in columns:
                raise SweepError(
                    f"--judge-columns: {source} has no column {shown(name)}; columns found: "
                    f"{listed(columns)}"
                )
        return named
    found = tuple(c for c in columns if c == "metric" or c.startswith("judge"))
    if not found:
        raise SweepError(
            f"{source}: no judge column (metric, or a name starting with judge); name them "
            f"with --judge-columns; columns found: {listed(columns)}"
        )
    if "metric" in found and len(found) > 1:
        raise SweepError(
            f"{source}: both a metric column and judge columns ({listed(list(found))}): which "
            "are the judges is ambiguous; name them with --judge-columns"
        )
    return found


# --- labels ----------------------------------------------------------------------------


def _class_code(value: object, classes: Classes) -> int:
    """One distinct cell's class (0..K−1), ``_EMPTY`` or ``_BAD``."""
    if isinstance(value, (bool, np.bool_)):
        return _BAD
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return _EMPTY
        if text in classes.names:
            return classes.names.index(text)
        if not classes.numeric:
            return _BAD
        try:
            number = float(text)
        except ValueError:
            return _BAD
    elif isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
        if np.isnan(number):
            return _EMPTY
        if not classes.numeric:
            text = str(int(number)) if number.is_integer() else repr(number)
            return classes.names.index(text) if text in classes.names else _BAD
    else:
        return _BAD
    return classes.values.index(number) if number in classes.values else _BAD


def _class_labels(values: pd.Series, column: str, source: str, classes: Classes) -> np.ndarray:
    """A label column as class codes (``_EMPTY`` for empty); raise at the first non-class."""
    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    except TypeError:  # a list or dict (nested JSON or Parquet): never a label
        row = next(i for i, v in enumerate(values) if not _hashable(v))
        raise SweepError(
            f"{source}: row {row + 1}, column {column}: {shown(values.iloc[row])} is not a "
            f"class; allowed: {', '.join(classes.names)} or empty"
        ) from None
    table = np.array([_class_code(u, classes) for u in uniques] + [_EMPTY], dtype=np.int64)
    labels = table[codes]
    bad = np.flatnonzero(labels == _BAD)
    if bad.size:
        row = int(bad[0])
        value = values.iloc[row]
        value = value.item() if isinstance(value, np.generic) else value
        raise SweepError(
            f"{source}: row {row + 1}, column {column}: {shown(value)} is not a class; "
            f"allowed: {', '.join(classes.names)} or empty"
        )
    return labels


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


# --- a ratings table --------------------------------------------------------------------


class _Outputs(NamedTuple):
    """The labelled rows grouped into outputs, and how to name one in an error line."""

    code: np.ndarray  # (R,) each labelled row's output
    first: np.ndarray  # (O,) each output's first labelled row (an index into ``rows``)
    rows: np.ndarray  # (R,) each labelled row's position in the file
    system: np.ndarray  # (R,) each labelled row's system code
    item: np.ndarray | None  # (R,) its item code
    system_names: list[str]
    item_names: list[str] | None
    source: str

    def at(self, row: int, column: str) -> str:
        """``F: row r, column c: system s[, item i]`` for labelled row ``row``."""
        name = f"system {shown(self.system_names[self.system[row]])}"
        if self.item is not None:
            name += f", item {shown(self.item_names[self.item[row]])}"
        return f"{self.source}: row {self.rows[row] + 1}, column {column}: {name}"


def _combined(
    labels: np.ndarray,
    outputs: _Outputs,
    k: int,
    policy: LabelPolicy,
    column: str,
    flag: str,
    classes: Classes,
) -> tuple[np.ndarray, int, int]:
    """Per output its class under ``policy`` (``_EMPTY`` where it has none), the outputs
    with several labels of ``column`` and those whose labels disagree."""
    n_out = len(outputs.first)
    has = labels >= 0
    per_class = np.bincount(outputs.code[has] * k + labels[has], minlength=n_out * k).reshape(
        n_out, k
    )
    n = per_class.sum(axis=1)
    several = n > 1
    best = np.where(n > 0, np.argmax(per_class, axis=1), _EMPTY)
    if not several.any():
        return best, 0, 0
    said = lambda o: ", ".join(  # noqa: E731
        f"{per_class[o, c]} × {classes.names[c]}" for c in range(k) if per_class[o, c]
    )
    labelled = np.flatnonzero(has)
    if not policy.combines:
        row = int(labelled[pd.Series(outputs.code[labelled]).duplicated().to_numpy()][0])
        o = outputs.code[row]
        raise SweepError(
            f"{outputs.at(row, column)} has {n[o]} labels ({said(o)}); say how to combine "
            f"several labels of one item: {flag} majority"
        )
    top = per_class.max(axis=1)
    tie = np.flatnonzero(several & ((per_class == top[:, None]).sum(axis=1) > 1))
    if tie.size:
        o = int(tie[0])
        row = int(labelled[outputs.code[labelled] == o][0])
        raise SweepError(
            f"{outputs.at(row, column)} has {n[o]} labels that tie ({said(o)}): no majority; "
            "add a label, or remove the item"
        )
    split = several & (top < n)
    return best, int(several.sum()), int(split.sum())


def _from_ratings(frame, source, classes, annotators, judges, ignored) -> ClassCounts:
    if len(frame) == 0:
        raise SweepError(f"{source}: empty (no rows)")
    judge_columns = tuple(c for c in frame.columns if c not in ("system", "human", "item"))
    k, j = classes.k, len(judge_columns)
    layout = classes.layout(j)
    every_system, system_names = names_column(frame["system"], "system", source)
    human = _class_labels(frame["human"], "human", source, classes)
    judged = np.stack([_class_labels(frame[c], c, source, classes) for c in judge_columns], axis=1)
    by_item = "item" in frame.columns
    if by_item:
        every_item, item_names = names_column(frame["item"], "item", source)
    rows = np.flatnonzero((human >= 0) | (judged >= 0).any(axis=1))
    if not rows.size:
        raise SweepError(f"{source}: no row has a human or a judge label ({len(frame):,} rows)")
    system, kept = pd.factorize(every_system[rows])
    names = [system_names[s] for s in kept]
    item = every_item[rows] if by_item else None
    if by_item:
        code, _ = pd.factorize(system.astype(np.int64) * len(item_names) + item)
        first = np.flatnonzero(~pd.Series(code).duplicated().to_numpy())
        every_output = every_system.astype(np.int64) * len(item_names) + every_item
        unlabelled_items = len(pd.unique(every_output)) - len(first)
    else:
        code, first, unlabelled_items = np.arange(len(rows)), np.arange(len(rows)), 0
    outputs = _Outputs(
        code, first, rows, system, item, names, item_names if by_item else None, source
    )
    h, several_h, split_h = _combined(
        human[rows], outputs, k, annotators, "human", "--annotators", classes
    )
    verdicts, several_m, split_m = [], 0, 0
    for i, column in enumerate(judge_columns):
        v, s, d = _combined(judged[rows, i], outputs, k, judges, column, "--judges", classes)
        verdicts.append(v)
        several_m, split_m = several_m + s, split_m + d
    verdicts = np.stack(verdicts, axis=1)  # (O, J)
    rated = verdicts >= 0
    partial = rated.any(axis=1) & ~rated.all(axis=1)
    if partial.any():
        o = int(np.flatnonzero(partial)[0])
        missing = judge_columns[int(np.flatnonzero(~rated[o])[0])]
        given = judge_columns[int(np.flatnonzero(rated[o])[0])]
        raise SweepError(
            f"{outputs.at(int(first[o]), missing)} has no {missing} label but a {given} one: "
            "every judge must rate the outputs any judge rates (blank the other judges' "
            "labels, or drop the output)"
        )
    joint = np.zeros(len(first), np.int64)
    for i in range(j):
        joint = joint * k + np.maximum(verdicts[:, i], 0)
    of = system[first]
    s_count, n_out = len(names), layout.outcomes
    has_h, has_m = h >= 0, rated.all(axis=1)
    paired, only = has_h & has_m, ~has_h & has_m
    human_counts = np.bincount(of[has_h] * k + h[has_h], minlength=s_count * k)
    paired_counts = np.bincount(
        (of[paired] * k + h[paired]) * n_out + joint[paired], minlength=s_count * k * n_out
    )
    judged_counts = np.bincount(of[only] * n_out + joint[only], minlength=s_count * n_out)
    counts = CategoricalCounts(
        human=human_counts.reshape(s_count, k).astype(np.float64),
        paired=paired_counts.reshape(s_count, k, n_out).astype(np.float64),
        judged=judged_counts.reshape(s_count, n_out).astype(np.float64),
        confusion=np.zeros((s_count, k, n_out)),
        known=np.zeros(s_count, bool),
    )
    rated_systems = np.zeros(len(system_names), bool)
    rated_systems[kept] = True
    reading = ClassReading(
        source,
        "ratings",
        rows=len(frame),
        systems=s_count,
        outputs=len(first),
        by_item=by_item,
        human_labels=int((human >= 0).sum()),
        metric_labels=int((judged >= 0).sum()),
        annotators=annotators.name,
        judges=judges.name,
        several_human=several_h,
        several_metric=several_m,
        split_human=split_h,
        split_metric=split_m,
        ignored=ignored,
        unlabelled=len(frame) - len(rows),
        unlabelled_items=unlabelled_items,
        unrated_systems=tuple(system_names[i] for i in np.flatnonzero(~rated_systems)),
        classes=classes.names,
        values=classes.values,
        judge_columns=judge_columns,
        judges_rated=j,
    )
    n_outputs = np.bincount(of, minlength=s_count).astype(np.int64)
    return ClassCounts(tuple(names), counts, layout, n_outputs, reading)


# --- a counts table ---------------------------------------------------------------------


def _from_counts(frame, source, classes, ignored) -> ClassCounts:
    if len(frame) == 0:
        raise SweepError(f"{source}: empty (no rows)")
    columns, j = counts_table_columns(list(frame.columns), source, classes)
    layout = classes.layout(j)
    k, n_out = classes.k, layout.outcomes
    codes, names = names_column(frame["system"], "system", source)
    repeat = np.flatnonzero(pd.Series(codes).duplicated().to_numpy())
    if repeat.size:
        row = int(repeat[0])
        earlier = int(np.flatnonzero(codes == codes[row])[0])
        raise SweepError(
            f"{source}: row {row + 1}, column system: {shown(names[codes[row]])} repeats "
            f"row {earlier + 1}"
        )
    values = np.stack([count_values(frame[c], c, source) for c in columns], axis=1)
    h = values[:, :k]
    t = values[:, k : k + k * n_out].reshape(-1, k, n_out)
    m = values[:, k + k * n_out :]
    over = t.sum(axis=2) > h
    if over.any():
        row, c = (int(x[0]) for x in np.nonzero(over))
        name = classes.names[c]
        raise SweepError(
            f"{source}: row {row + 1}, column h_{name}: the paired ratings of class {name} "
            f"(t_{name}_*, {int(t[row, c].sum())}) exceed h_{name} ({int(h[row, c])}): "
            "paired ratings are human ratings, counted in h"
        )
    empty = np.flatnonzero((h.sum(axis=1) == 0) & (m.sum(axis=1) == 0))
    if empty.size:
        row = int(empty[0])
        raise SweepError(
            f"{source}: row {row + 1}: system {shown(names[codes[row]])} has no ratings "
            "(every h_ and m_ count is 0)"
        )
    order = np.argsort(codes, kind="stable")  # unique: rows in order of first appearance
    s = len(names)
    counts = CategoricalCounts(
        human=h[order].astype(np.float64),
        paired=t[order].astype(np.float64),
        judged=m[order].astype(np.float64),
        confusion=np.zeros((s, k, n_out)),
        known=np.zeros(s, bool),
    )
    n_outputs = (h.sum(axis=1) + m.sum(axis=1))[order].astype(np.int64)
    reading = ClassReading(
        source,
        "counts",
        rows=len(frame),
        systems=s,
        outputs=int(n_outputs.sum()),
        ignored=ignored,
        classes=classes.names,
        values=classes.values,
        judges_rated=j,
    )
    return ClassCounts(tuple(names), counts, layout, n_outputs, reading)
