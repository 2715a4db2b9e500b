"""Ratings files for ``sweep compare``: labels of rated outputs, or published counts, by system.

Two layouts are accepted, as CSV (``.csv``; ``.tsv`` with tabs), Parquet
(``.parquet``, ``.pq``) or JSON Lines (``.jsonl``, ``.ndjson``):

- a **ratings table**, with the columns ``system``, ``human`` and ``metric``
  and, optionally, ``item``. A label is 1, 0 or empty. An *output* is a row,
  or with ``item`` a (system, item): its labels are gathered from all its
  rows, wherever they are in the file, so that a human label and a metric
  label of the same item on two rows make one paired rating. An output with
  both labels is a paired (calibration) rating, one with ``human`` only a
  human rating, one with ``metric`` only a metric-only rating. Every human
  label counts toward α, paired ones included (the paired outputs are
  human-rated ones).
- a **counts table**, one row per system, with ``system`` and every column of
  :data:`COUNT_COLUMNS`, for analyses where only counts were published.

Both come out as one row per system: ``system``, :data:`COUNT_COLUMNS` and
``n_outputs``, with a :class:`Reading` that says what was read and combined.

**Several labels of one output** (annotators; several judges or judge runs):
an item with more than one human label is combined by the label policy ``annotators``
(a :class:`LabelPolicy`):

- ``refuse`` (the default): an error naming the first such item and its labels;
- ``majority``: the label most of them give; a tie is refused the same way.

Several metric labels are combined by ``judges`` in the same way. There is
no policy that counts each label as a rating of its own: the labels of one item
share one truth, so they are not independent ratings, and counting them as
such would make every interval too narrow (an item's one human label would
count once per judge label). Several judges need a model of their own (a
later version's categorical multi-judge model); until then, ``majority``.

**Rows without a label** (a judge that returned no pick, an item nobody
rated) are not outputs: they are skipped and counted (:attr:`Reading.unlabelled`,
said in the header), as is an item none of whose rows has a label. A system
whose rows are all unlabelled is not compared, and a note names it. A file
in which no row has a label is refused.

Decisions, for a reader who wants to know exactly what was counted:

- **Both label columns are required**, even where one is empty throughout
  (a human-only campaign has an empty ``metric`` column). Other columns
  (annotator, timestamps: real exports carry many) are ignored.
  Ignoring them is safe only because nothing is optional: a misspelt
  ``metrc`` column is refused as a missing ``metric``, never dropped
  silently. A required column that appears twice is refused.
- **Labels**: 1 and 0 as integers, floats (1.0, 0.0) or text (``"1"``,
  ``" 0 "``, ``"1.0"``: what pandas writes for an integer column with gaps);
  ``true``/``false`` (any case, or a boolean column) count as 1/0, because a
  boolean is the natural typed encoding of a binary label in Parquet and
  JSON and cannot mean anything else. Empty is a null or blank cell. Nothing
  else is a label: not ``"yes"``, not ``0.5``, and not ``"NA"`` (a text
  cell must be blank to be empty; R users write ``na = ""``).
- **System names** (and items) are text and are read as text: ``"007"``
  stays ``"007"``. Surrounding whitespace is not part of a name (CSV exports
  pad cells), so ``" sys-A"`` and ``"sys-A"`` are one system. A whole number
  in a typed column (Parquet, JSON) becomes its digits: 7 and 7.0 are
  ``"7"``. An empty or blank name is an error, and so is an empty item in a
  file with an ``item`` column. Items are per system: item ``q1`` of two
  systems is two outputs.
- **Rows** are numbered from 1 and the header is not counted: row n is the
  n-th record (in a CSV without line breaks inside quoted fields and without
  blank lines, row n is line n + 1; blank lines are not records).
- A system appears in a ratings table only through rows that carry a label,
  so it always has ratings; in a counts table a system with N_Φ = N_M = 0
  (hence no paired ratings either) is refused. Names are checked on every
  row, labelled or not: a blank system is an error wherever it is.
- **The layout** follows the columns, for a file and a DataFrame alike
  (:func:`ratings_from_frame`): ``human`` or ``metric`` make a ratings table
  (and then both are required), a count column a counts table; a table with
  neither is refused naming both layouts.

Every refusal is a one-line :class:`SweepError` naming the file and, where it
applies, the row and the column; the first bad row is reported. A file that
does not parse is refused with the parser's reason (for JSON Lines, the
first line that is not a JSON object, counting every line).

Reading is vectorised throughout (pyarrow parsers, ``pandas.factorize`` and
``numpy.bincount``): Python runs once per distinct value of a column, never
once per row.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from binmetric_sweep.sweep.errors import SweepError, shown

__all__ = [
    "COUNT_COLUMNS",
    "LABEL_COLUMNS",
    "LABEL_POLICIES",
    "MAJORITY",
    "REFUSE",
    "LabelPolicy",
    "Ratings",
    "Reading",
    "check_counts",
    "counts_from_ratings",
    "counts_table",
    "ratings_from_frame",
    "count_values",
    "listed",
    "names_column",
    "read_frame",
    "read_ratings",
    "require_columns",
]

#: Per system: N_Φ and n₊ (every human label, paired ones included); N_ρη and P
#: (paired ratings, those with human label 1); n_ρ (human 1, metric 1); n_η
#: (human 0, metric 0); N_M and m₊ (metric-only ratings, those that say 1).
COUNT_COLUMNS = ("n_phi", "n_pos", "n_rho_eta", "n_pos_paired", "n_tp", "n_tn", "n_m", "m_pos")
#: The label columns of a ratings table.
LABEL_COLUMNS = ("human", "metric")


class LabelPolicy(NamedTuple):
    """How several labels of one output are combined (``--annotators``, ``--judges``): one
    value per policy, :data:`LABEL_POLICIES` by name (the flags' list is built from it).
    A policy for repeated labels, not a quadrature rule (docs/design.md, the glossary).

    Attributes:
        name: as the flags, the API and :class:`Reading` spell it.
        description: what it does, for ``--help``.
        combines: whether it makes one label of several (``majority``: the label most of
            them give, a tie refused); ``refuse`` does not, and refuses an output that has
            several.
    """

    name: str
    description: str
    combines: bool

    @staticmethod
    def of(given: str | LabelPolicy, flag: str) -> LabelPolicy:
        """The policy of :data:`LABEL_POLICIES` that ``given`` names (or is), for ``flag``
        (``--annotators`` or ``--judges``).

        Raises:
            SweepError: ``all`` (with why no policy counts each label), or not a registered
            policy or its name (one line naming ``flag`` and what is allowed).
        """
        if isinstance(given, LabelPolicy):
            if LABEL_POLICIES.get(given.name) == given:
                return LABEL_POLICIES[given.name]
            allowed = ", ".join(LABEL_POLICIES)
            raise SweepError(f"{flag}: {given.name!r} is not in LABEL_POLICIES; allowed: {allowed}")
        if given == "all":
            later = "; a later version will model several judges" if flag == "--judges" else ""
            raise SweepError(
                f"{flag}: 'all' is not allowed: {_NOT_INDEPENDENT}; use {flag} majority{later}"
            )
        if not isinstance(given, str) or given not in LABEL_POLICIES:
            raise SweepError(
                f"{flag}: {given!r} is not allowed; allowed: {', '.join(LABEL_POLICIES)}"
            )
        return LABEL_POLICIES[given]


#: The default: an output with several labels of a kind is refused, naming it.
REFUSE = LabelPolicy("refuse", "an error naming the item", combines=False)
#: The label most of them give; a tie is refused as :data:`REFUSE` refuses.
MAJORITY = LabelPolicy("majority", "the label most of them give; a tie is refused", True)
#: How several labels of one output are combined (``--annotators``, ``--judges``), by
#: name, the default first. No policy counts each label as a rating (``_NOT_INDEPENDENT``).
LABEL_POLICIES = {policy.name: policy for policy in (REFUSE, MAJORITY)}
#: Why no policy counts each of several labels of one item as a rating of its own.
_NOT_INDEPENDENT = (
    "the labels of one item share one truth, so counting each as its own output makes the "
    "intervals too narrow"
)

_RATINGS_LAYOUT = (
    "a ratings table has columns system, human, metric and optionally item (others are ignored)"
)
_COUNTS_LAYOUT = "a counts table has columns system, " + ", ".join(COUNT_COLUMNS)
_LABELS_ALLOWED = "allowed: 1, 0 or empty (true/false count as 1/0)"
_COUNTS_ALLOWED = "allowed: a whole number ≥ 0"
_FORMATS = {
    ".csv": "CSV",
    ".tsv": "TSV",
    ".parquet": "Parquet",
    ".pq": "Parquet",
    ".jsonl": "JSON Lines",
    ".ndjson": "JSON Lines",
}
_TEXT_LABELS = {"1": 1.0, "0": 0.0, "1.0": 1.0, "0.0": 0.0, "true": 1.0, "false": 0.0, "": np.nan}
_TEXT_COUNT = re.compile(r"[0-9]+(?:\.0*)?")
#: Counts above this are refused: a float64 (what the fits compute in) holds every
#: whole number only up to 2**53.
_COUNT_MAX = 2**53
#: Sentinel for an entry that is not a label (labels are 0, 1 or NaN).
_BAD_LABEL = -1.0
#: Sentinel for an entry that is not a count (counts are ≥ 0).
_BAD_COUNT = -1
#: Stands for a list or dict in a label, count or name column: never valid there.
_UNHASHABLE = object()
#: Files up to this size are checked for holding nothing but whitespace (larger: parsers refuse).
_BLANK_MAX = 4096
#: How much of a parser's message an error line keeps.
_WHY_MAX = 160
#: How many column names an error line lists.
_NAMES_MAX = 12

# (column blamed, left side, right side, why): each row must have left ≤ right.
_BOUNDS = (
    ("n_pos", "n_pos", "n_phi", ""),
    ("n_rho_eta", "n_rho_eta", "n_phi", ""),
    ("n_pos_paired", "n_pos_paired", "n_rho_eta", ""),
    ("n_tp", "n_tp", "n_pos_paired", ""),
    ("n_tn", "n_tn", "n_rho_eta − n_pos_paired", ""),
    ("m_pos", "m_pos", "n_m", ""),
    ("n_pos_paired", "n_pos_paired", "n_pos", "paired ratings are human ratings"),
    (
        "n_rho_eta",
        "n_rho_eta − n_pos_paired",
        "n_phi − n_pos",
        "paired ratings are human ratings",
    ),
)


@dataclass(frozen=True)
class Reading:
    """What a ratings file held and how its labels became counts.

    Attributes:
        source: the file as named, or "ratings" / "counts" for a DataFrame.
        layout: "ratings" (one row per label set) or "counts" (one row per system).
        rows: records read, unlabelled ones included.
        systems: systems found (those with a label).
        outputs: rated outputs: labelled rows, or (system, item) pairs with a label with
            ``by_item``; for a counts table, N_Φ + N_M summed over systems.
        by_item: whether an output is a (system, item) (the file has ``item``).
        human_labels, metric_labels: labels read.
        annotators, judges: the names of the label policies (:class:`LabelPolicy`) that
            combined several labels of one output.
        several_human, several_metric: outputs with more than one label of that kind.
        split_human, split_metric: those of them whose labels disagree.
        ignored: the file's other columns, not read.
        unlabelled: rows with neither a human nor a metric label, skipped.
        unlabelled_items: with ``by_item``, (system, item) pairs none of whose rows has a
            label: not outputs.
        unrated_systems: systems all of whose rows are unlabelled: not compared.
    """

    source: str
    layout: str
    rows: int
    systems: int
    outputs: int
    by_item: bool = False
    human_labels: int = 0
    metric_labels: int = 0
    annotators: str = "refuse"
    judges: str = "refuse"
    several_human: int = 0
    several_metric: int = 0
    split_human: int = 0
    split_metric: int = 0
    ignored: tuple[str, ...] = ()
    unlabelled: int = 0
    unlabelled_items: int = 0
    unrated_systems: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """One line for a report's header: what was read."""
        if self.layout == "counts":
            return f"read {self.source}: counts of {self.systems:,} systems"
        unit = "(system, item) outputs" if self.by_item else "outputs (one per row)"
        line = (
            f"read {self.source}: {self.rows:,} rows, {self.outputs:,} {unit} of "
            f"{self.systems:,} systems; {self.human_labels:,} human and "
            f"{self.metric_labels:,} metric labels"
        )
        if self.unlabelled:
            rows = "1 row" if self.unlabelled == 1 else f"{self.unlabelled:,} rows"
            were = "was" if self.unlabelled == 1 else "were"
            line += f"; {rows} had no label and {were} skipped"
            if self.unlabelled_items:
                items = (
                    "1 item" if self.unlabelled_items == 1 else f"{self.unlabelled_items:,} items"
                )
                line += f" ({items} with no label at all)"
        return line

    def notes(self) -> list[str]:
        """Lines for standard error: columns not read, how several labels of one output were
        combined."""
        out = []
        if self.ignored:
            used = "system, item, human, metric" if self.layout == "ratings" else "its counts"
            out.append(f"ignored columns: {listed(list(self.ignored))} (read: {used})")
        if self.unrated_systems:
            one = len(self.unrated_systems) == 1
            out.append(
                f"not compared: {'system' if one else 'systems'} "
                f"{listed(list(self.unrated_systems))} (none of {'its' if one else 'their'} "
                "rows has a label)"
            )
        for flag, kind, policy, several, split in (
            ("--annotators", "human", self.annotators, self.several_human, self.split_human),
            ("--judges", "metric", self.judges, self.several_metric, self.split_metric),
        ):
            combines = LABEL_POLICIES[policy].combines
            if self.layout == "ratings" and not self.by_item and combines:
                out.append(
                    f"{flag} {policy}: the file has no item column, so each row is one "
                    "output and there is nothing to combine"
                )
            elif several and combines:
                out.append(
                    f"{flag} majority: {several:,} items with several {kind} labels took "
                    f"their majority ({split:,} of them disagreeing)"
                )
        return out


class Ratings(NamedTuple):
    """A ratings or counts file read: the counts and what was read.

    Attributes:
        counts: one row per system, in order of first appearance: ``system`` (text),
            :data:`COUNT_COLUMNS` and ``n_outputs`` (int64).
        reading: what the file held and how it was combined.
    """

    counts: pd.DataFrame
    reading: Reading


def read_ratings(
    path: str | os.PathLike,
    *,
    annotators: str | LabelPolicy = "refuse",
    judges: str | LabelPolicy = "refuse",
) -> Ratings:
    """Read a ratings or counts table; return its counts, one row per system, and what was read.

    The format follows the suffix; the layout follows the columns (see the
    module docstring). ``annotators`` and ``judges`` (label policies or their names,
    :data:`LABEL_POLICIES`) say how several human or metric labels of one item are
    combined. Raises :class:`SweepError` on any bad input, naming the file as given in
    ``path``; the policies are checked before the file is read.
    """
    annotators, judges = _policies(annotators, judges)
    source = os.fspath(path)
    frame, names = read_frame(path, _select)
    if "human" in frame.columns:
        ratings = counts_from_ratings(frame, source, annotators=annotators, judges=judges)
    else:
        ratings = counts_table(frame, source, annotators=annotators, judges=judges)
    ignored = tuple(str(n) for n in names if n not in frame.columns)
    return ratings._replace(reading=replace(ratings.reading, ignored=ignored))


def read_frame(
    path: str | os.PathLike, select: Callable[[Sequence[str], str], Sequence[str]]
) -> tuple[pd.DataFrame, list]:
    """The columns ``select`` picks of a ratings file, and the names of all its columns.

    ``select(columns, source)`` returns the columns to read (or raises a SweepError naming
    the file, ``source``, as given in ``path``). The format follows the suffix: CSV and TSV
    columns are read as text (dictionary-encoded where ``human`` is among them), Parquet's
    and JSON Lines' with their types. Raises :class:`SweepError` on a file that is missing,
    empty, of an unknown format or unreadable (one line naming it).
    """
    source = os.fspath(path)
    file = Path(path)
    _check_file(file, source)
    fmt = _FORMATS.get(file.suffix.lower())
    if fmt is None:
        allowed = ", ".join(_FORMATS)
        raise SweepError(f"{source}: unknown format {file.suffix!r}; allowed: {allowed}")
    if fmt == "Parquet":
        return _read_parquet(file, source, select)
    if fmt == "JSON Lines":
        return _read_json_lines(file, source, select)
    return _read_csv(file, source, "\t" if fmt == "TSV" else ",", select)


def names_column(values: pd.Series, column: str, source: str) -> tuple[np.ndarray, list[str]]:
    """Each row's code and the distinct names of a ``system`` or ``item`` column, as a
    ratings table reads them (module docstring: names are text, stripped; a whole number
    in a typed column its digits); raises at the first row empty or not a name."""
    return _names_column(values, column, source)


def count_values(values: pd.Series, column: str, source: str) -> np.ndarray:
    """A counts column as int64, as a counts table reads it (a whole number ≥ 0, as an
    integer, a whole float or its text); raises at the first entry that is not one, naming
    its row and ``column``."""
    return _count_values(values, column, source)


def ratings_from_frame(
    frame: pd.DataFrame,
    *,
    annotators: str | LabelPolicy = "refuse",
    judges: str | LabelPolicy = "refuse",
) -> Ratings:
    """A DataFrame read as a file of the same columns would be (:func:`read_ratings`).

    The layout follows the columns, as a file's does: ``human`` or
    ``metric`` make a ratings table (:func:`counts_from_ratings`, named
    "ratings" in errors), a count column alone a counts table
    (:func:`counts_table`, "counts"); a frame with neither, or a layout missing
    a column, is refused with the file's message.
    """
    policies = dict(zip(("annotators", "judges"), _policies(annotators, judges), strict=True))
    columns = set(frame.columns)
    counts = columns.intersection(COUNT_COLUMNS) and not columns.intersection(LABEL_COLUMNS)
    source = "counts" if counts else "ratings"
    needed = _select(frame.columns, source)
    if "human" in needed:
        return counts_from_ratings(frame, source, **policies)
    return counts_table(frame, source, **policies)


def counts_table(
    frame: pd.DataFrame,
    source: str,
    *,
    annotators: str | LabelPolicy = "refuse",
    judges: str | LabelPolicy = "refuse",
) -> Ratings:
    """A counts table (one row per system) checked by :func:`check_counts`, as :class:`Ratings`.

    ``annotators`` and ``judges`` are checked, and have nothing to combine.
    """
    _policies(annotators, judges)
    counts = check_counts(frame, source)
    outputs = counts["n_phi"] + counts["n_m"]
    counts["n_outputs"] = outputs
    ignored = tuple(str(c) for c in frame.columns if c not in ("system", *COUNT_COLUMNS))
    reading = Reading(
        source, "counts", len(frame), len(counts), int(outputs.sum()), ignored=ignored
    )
    return Ratings(counts, reading)


def counts_from_ratings(
    frame: pd.DataFrame,
    source: str,
    *,
    annotators: str | LabelPolicy = "refuse",
    judges: str | LabelPolicy = "refuse",
) -> Ratings:
    """Count a ratings table; return one row of counts per system, and what was read.

    ``frame`` needs the columns ``system``, ``human`` and ``metric``, and may
    have ``item``; others are ignored. Without ``item`` each row is one output;
    with it, each (system, item), its labels gathered from all its rows and
    several labels of one kind combined by ``annotators`` (human) or
    ``judges`` (metric), each a label policy of :data:`LABEL_POLICIES` or its name
    (module docstring).
    Rows are numbered by position from 1 in errors (the index is not used);
    ``source`` names the table in them.
    """
    annotators, judges = _policies(annotators, judges)
    require_columns(frame.columns, ("system", *LABEL_COLUMNS), source, _RATINGS_LAYOUT)
    _check_rows(frame, source)
    # Names and labels are checked on every row; the rows without a label are then dropped.
    every_system, names = _systems(frame["system"], source)
    human = _labels(frame["human"], "human", source)
    metric = _labels(frame["metric"], "metric", source)
    by_item = "item" in frame.columns
    if by_item:
        require_columns(frame.columns, ("item",), source, _RATINGS_LAYOUT)
        every_item, item_names = _names_column(frame["item"], "item", source)
    rows = np.flatnonzero(~(np.isnan(human) & np.isnan(metric)))  # the labelled rows
    if not rows.size:
        raise SweepError(f"{source}: no row has a human or a metric label ({len(frame):,} rows)")
    codes, kept = pd.factorize(every_system[rows])  # systems in order of their first label
    systems = [names[k] for k in kept]
    rated = np.zeros(len(names), dtype=bool)
    rated[kept] = True
    human, metric = human[rows], metric[rows]
    items = every_item[rows] if by_item else None
    if by_item:
        output, first_row = _output_codes(codes, items, len(item_names))
        every_output = every_system.astype(np.int64) * len(item_names) + every_item
        unlabelled_items = len(pd.unique(every_output)) - len(first_row)
    else:
        output, first_row = np.arange(len(rows)), np.arange(len(rows))
        unlabelled_items = 0
    labels = _OutputLabels.of(output, len(first_row), human, metric)
    where = _Where(source, systems, codes, first_row, item_names if by_item else None, items, rows)
    h, h_pos = _combined(
        labels.h, labels.h_pos, annotators, "human", "--annotators", where, output, human
    )
    m, m_pos = _combined(
        labels.m, labels.m_pos, judges, "metric", "--judges", where, output, metric
    )
    system_of = codes[first_row]
    counts = _tally(system_of, len(systems), h, h_pos, m, m_pos)
    read = ("system", "item", *LABEL_COLUMNS)
    counts["n_outputs"] = np.bincount(system_of, minlength=len(systems)).astype(np.int64)
    reading = Reading(
        source,
        "ratings",
        rows=len(frame),
        systems=len(systems),
        outputs=len(first_row),
        by_item=by_item,
        human_labels=int(labels.h.sum()),
        metric_labels=int(labels.m.sum()),
        annotators=annotators.name,
        judges=judges.name,
        several_human=int((labels.h > 1).sum()),
        several_metric=int((labels.m > 1).sum()),
        split_human=int(((labels.h_pos > 0) & (labels.h_pos < labels.h)).sum()),
        split_metric=int(((labels.m_pos > 0) & (labels.m_pos < labels.m)).sum()),
        ignored=tuple(str(c) for c in frame.columns if c not in read),
        unlabelled=len(frame) - len(rows),
        unlabelled_items=unlabelled_items,
        unrated_systems=tuple(names[i] for i in np.flatnonzero(~rated)),
    )
    return Ratings(_counts_frame(systems, counts), reading)


def check_counts(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """Validate a counts table (one row per system); return it as ``system`` then int64 counts.

    Every count must be a whole number ≥ 0 and consistent with the others
    (n₊ ≤ N_Φ, P ≤ N_ρη ≤ N_Φ, n_ρ ≤ P, n_η ≤ N_ρη − P, m₊ ≤ N_M, and the
    paired ratings are human ratings: P ≤ n₊ and N_ρη − P ≤ N_Φ − n₊); each
    system appears once and has some rating. Extra columns are ignored.
    """
    require_columns(frame.columns, ("system", *COUNT_COLUMNS), source, _COUNTS_LAYOUT)
    _check_rows(frame, source)
    codes, systems = _systems(frame["system"], source)
    counts = {name: _count_values(frame[name], name, source) for name in COUNT_COLUMNS}
    _check_unique(codes, systems, source)
    _check_bounds(counts, source)
    row = _first((counts["n_phi"] == 0) & (counts["n_m"] == 0))
    if row is not None:
        name = shown(systems[codes[row]])
        raise SweepError(f"{source}: row {row + 1}: system {name} has no ratings (n_phi = n_m = 0)")
    return _counts_frame(systems, counts)  # unique, so already one row per system in order


# --- files ---------------------------------------------------------------------------


def _check_file(file: Path, source: str) -> None:
    """Return if ``file`` is a file with more than whitespace in it; raise otherwise."""
    if not file.exists():
        raise SweepError(f"{source}: no such file")
    if not file.is_file():
        raise SweepError(f"{source}: not a file")
    size = file.stat().st_size
    if size == 0 or (size <= _BLANK_MAX and not file.read_bytes().strip()):
        raise SweepError(f"{source}: empty (no rows)")


def _read_csv(file: Path, source: str, delimiter: str, select) -> tuple[pd.DataFrame, list]:
    """Return the needed columns of a CSV file, as text (labels and names as categoricals),
    and the names of all its columns."""
    # Free-text columns (annotator comments) may hold quoted line breaks; without
    # this option pyarrow's parallel reader loses track of them in large files.
    parse = pa_csv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
    kind = "TSV" if delimiter == "\t" else "CSV"
    try:
        with pa_csv.open_csv(file, parse_options=parse) as reader:
            names = reader.schema.names
    except UnicodeDecodeError as exc:  # a binary file: say so, echo none of its bytes
        raise SweepError(f"{source}: unreadable as {kind} (its header is not UTF-8 text)") from exc
    except (pa.ArrowException, OSError) as exc:
        raise SweepError(f"{source}: unreadable as {kind} ({_why(exc)})") from exc
    columns = select(names, source)
    # Dictionary-encoded text: labels and names repeat, and pandas gets categoricals,
    # which it builds and factorizes without making a Python string per row.
    text = pa.dictionary(pa.int32(), pa.string()) if "human" in columns else pa.string()
    convert = pa_csv.ConvertOptions(
        column_types=dict.fromkeys(columns, text), include_columns=list(columns)
    )
    try:
        table = pa_csv.read_csv(file, parse_options=parse, convert_options=convert)
        table.validate(full=True)  # text that is not UTF-8
    except (pa.ArrowException, OSError) as exc:
        raise SweepError(f"{source}: unreadable as {kind} ({_why(exc)})") from exc
    return table.to_pandas(), names


def _read_parquet(file: Path, source: str, select) -> tuple[pd.DataFrame, list]:
    """Return the needed columns of a Parquet file, with their stored types, and the names of
    all its columns."""
    try:
        names = pq.read_schema(file).names
        columns = select(names, source)
        table = pq.read_table(file, columns=list(columns))
        table.validate(full=True)  # text that is not UTF-8, from a careless writer
    except (pa.ArrowException, OSError) as exc:
        raise SweepError(f"{source}: unreadable as Parquet ({_why(exc)})") from exc
    return table.to_pandas(ignore_metadata=True), names


def _read_json_lines(file: Path, source: str, select) -> tuple[pd.DataFrame, list]:
    """Return the needed columns of a JSON Lines file (one object per line; blank lines
    skipped), and the names of all its columns.

    pyarrow's reader is fast but wants one type per column; a column that
    mixes types (``1`` and ``""``) is read again by pandas, and a file
    neither can read is scanned for its first bad line.
    """
    try:
        table = pa_json.read_json(file)
        table.validate(full=True)  # the JSON reader leaves bad UTF-8 in its strings
        frame = table.to_pandas()
    except (pa.ArrowException, OSError):
        try:
            frame = pd.read_json(file, lines=True, dtype=False)
        except (ValueError, TypeError, OSError) as exc:
            why = _bad_json_line(file) or f"unreadable as JSON Lines ({_why(exc)})"
            raise SweepError(f"{source}: {why}") from exc
    return frame[list(select(frame.columns, source))], list(frame.columns)


def _bad_json_line(file: Path) -> str | None:
    """Return where and why a JSON Lines file first fails to hold one object per line, or None.

    Runs only once both parsers have refused the file.
    """
    with file.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError:
                return f"line {number}: not UTF-8 text"
            except ValueError as exc:
                return f"line {number}: not JSON ({exc})"
            if not isinstance(record, dict):
                return f"line {number}: not a JSON object"
    return None


def _why(exc: BaseException) -> str:
    """Return the first line of a parser's message, shortened for an error line, with any
    character that is not printable escaped (a parser may quote the file's bytes)."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in lines[0])
    return text if len(text) <= _WHY_MAX else text[: _WHY_MAX - 1] + "…"


# --- layouts ---------------------------------------------------------------------------


def _select(columns: Sequence[str], source: str) -> tuple[str, ...]:
    """Return the columns to read: ``system`` and the labels or the counts; raise otherwise."""
    columns = list(columns)
    if "system" not in columns:
        raise SweepError(f"{source}: no column 'system'; columns found: {listed(columns)}")
    labels = [c for c in LABEL_COLUMNS if c in columns]
    counts = [c for c in COUNT_COLUMNS if c in columns]
    if labels and counts:
        raise SweepError(
            f"{source}: both label and count columns ({listed(labels + counts)}); "
            f"{_RATINGS_LAYOUT}; {_COUNTS_LAYOUT}"
        )
    if labels:
        needed, layout = ("system", *LABEL_COLUMNS), _RATINGS_LAYOUT
        if "item" in columns:
            needed = (*needed, "item")
        require_columns(columns, needed, source, layout)
        return needed
    elif counts:
        needed, layout = ("system", *COUNT_COLUMNS), _COUNTS_LAYOUT
    else:
        raise SweepError(
            f"{source}: neither a ratings nor a counts table; columns found: "
            f"{listed(columns)}; {_RATINGS_LAYOUT}; {_COUNTS_LAYOUT}"
        )
    require_columns(columns, needed, source, layout)
    return needed


def require_columns(
    columns: Sequence[str], needed: Sequence[str], source: str, layout: str = ""
) -> None:
    """Return if each of ``needed`` is among ``columns`` exactly once; raise otherwise (the
    message names the ``layout`` the columns are needed for, where one is given)."""
    columns = list(columns)
    for name in needed:
        if name not in columns:
            why = f"; {layout}" if layout else ""
            raise SweepError(f"{source}: no column {name!r}{why}; columns found: {listed(columns)}")
        if columns.count(name) > 1:
            raise SweepError(f"{source}: column {name!r} appears {columns.count(name)} times")


def listed(columns: Sequence[object]) -> str:
    """Names (of columns, systems) for an error line: the first few, and how many in all."""
    names = ", ".join(shown(c) for c in columns[:_NAMES_MAX])
    if len(columns) > _NAMES_MAX:
        names += f", … ({len(columns)} in all)"
    return names or "none"


def _check_rows(frame: pd.DataFrame, source: str) -> None:
    """Return if ``frame`` has a row; raise otherwise."""
    if len(frame) == 0:
        raise SweepError(f"{source}: empty (no rows)")


# --- values ----------------------------------------------------------------------------


def _decoded(values: pd.Series, decode: Callable[[object], object], missing, dtype) -> np.ndarray:
    """Return ``decode`` of every entry, calling it once per distinct value (nulls: ``missing``).

    ``pandas.factorize`` finds the distinct values in C; only they pass
    through Python, so a column of a million 0/1 labels costs three calls.
    """
    codes, uniques = _factorize(values)
    table = np.array([decode(u) for u in uniques] + [missing], dtype=dtype)
    return table[codes]  # a null's code is -1: the last entry, ``missing``


def _factorize(values: pd.Series) -> tuple[np.ndarray, Sequence[object]]:
    """Return each entry's code (-1 for a null) and the distinct values, in order of appearance.

    Lists and dicts (nested JSON or Parquet) cannot be hashed; they all become
    one value that no decoder accepts, found by a loop that runs only then.
    """
    try:
        return pd.factorize(values, use_na_sentinel=True)
    except TypeError:
        return pd.factorize(values.map(_hashable), use_na_sentinel=True)


def _hashable(value: object) -> object:
    """Return ``value``, or ``_UNHASHABLE`` where it cannot be hashed."""
    try:
        hash(value)
    except TypeError:
        return _UNHASHABLE
    return value


def _first(mask: np.ndarray) -> int | None:
    """Return the position of the first True in ``mask``, or None."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _echo(value: object) -> str:
    """Return a cell's value for an error line; numpy values as Python ones (0.5, [1])."""
    return shown(value.tolist() if isinstance(value, (np.generic, np.ndarray)) else value)


def _is_blank(value: object) -> bool:
    """Return whether a cell is empty: null, or text of whitespace only."""
    if isinstance(value, str):
        return not value.strip()
    return pd.api.types.is_scalar(value) and bool(pd.isna(value))


def _label(value: object) -> float:
    """Return 1.0, 0.0 or NaN (empty) for one distinct label value, or ``_BAD_LABEL``."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value) if value in (0, 1) else _BAD_LABEL
    if isinstance(value, str):
        return _TEXT_LABELS.get(value.strip().lower(), _BAD_LABEL)
    return _BAD_LABEL


def _labels(values: pd.Series, column: str, source: str) -> np.ndarray:
    """Return a label column as floats: 1.0, 0.0 or NaN (empty); raise at the first non-label."""
    labels = _decoded(values, _label, np.nan, float)
    row = _first(labels == _BAD_LABEL)
    if row is not None:
        value = _echo(values.iloc[row])
        raise SweepError(
            f"{source}: row {row + 1}, column {column}: {value} is not a label; {_LABELS_ALLOWED}"
        )
    return labels


def _count(value: object) -> int:
    """Return one distinct count value as an int, or ``_BAD_COUNT``."""
    if isinstance(value, (bool, np.bool_)):
        return _BAD_COUNT
    if isinstance(value, (int, np.integer)):
        number = int(value)
    elif isinstance(value, (float, np.floating)) and float(value).is_integer():
        number = int(value)
    elif isinstance(value, str) and _TEXT_COUNT.fullmatch(value.strip()):
        number = int(value.strip().split(".")[0])
    else:
        return _BAD_COUNT
    return number if 0 <= number <= _COUNT_MAX else _BAD_COUNT


def _count_values(values: pd.Series, column: str, source: str) -> np.ndarray:
    """Return a count column as int64; raise at the first entry that is not a whole number ≥ 0."""
    counts = _decoded(values, _count, _BAD_COUNT, np.int64)
    row = _first(counts == _BAD_COUNT)
    if row is not None:
        value = values.iloc[row]
        what = "empty" if _is_blank(value) else f"{_echo(value)} is not a count"
        raise SweepError(f"{source}: row {row + 1}, column {column}: {what}; {_COUNTS_ALLOWED}")
    return counts


def _name(value: object) -> str | None:
    """Return one distinct ``system`` value as a name ("" when blank), or None if not a name."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return None


def _systems(values: pd.Series, source: str) -> tuple[np.ndarray, list[str]]:
    """Return each row's system code and the names, in order of first appearance."""
    return _names_column(values, "system", source)


def _names_column(values: pd.Series, column: str, source: str) -> tuple[np.ndarray, list[str]]:
    """Return each row's code and the distinct names of a ``system`` or ``item`` column.

    Names equal once stripped share a code; codes follow first appearance.
    Raises at the first row whose value is empty or not a name.
    """
    codes, uniques = _factorize(values)
    names = [_name(u) for u in uniques]
    bad = np.array([not name for name in names] + [True])  # the last entry: a null (code -1)
    row = _first(bad[codes])
    if row is not None:
        value = values.iloc[row]
        what = "empty" if _is_blank(value) else f"{_echo(value)} is not a {column} name"
        raise SweepError(f"{source}: row {row + 1}, column {column}: {what}")
    merged, distinct = pd.factorize(pd.Index(names, dtype=object))
    return merged[codes], [str(s) for s in distinct]


# --- counts ----------------------------------------------------------------------------


def _policies(
    annotators: str | LabelPolicy, judges: str | LabelPolicy
) -> tuple[LabelPolicy, LabelPolicy]:
    """The label policies ``annotators`` and ``judges`` name (or are), annotators' first
    (:meth:`LabelPolicy.of`: ``all`` refused saying why not)."""
    return LabelPolicy.of(annotators, "--annotators"), LabelPolicy.of(judges, "--judges")


def _output_codes(systems: np.ndarray, items: np.ndarray, n_items: int):
    """Each row's output (system, item) code, in order of first appearance, and each output's
    first row."""
    output, _ = pd.factorize(systems.astype(np.int64) * n_items + items)
    first_row = np.flatnonzero(~pd.Series(output).duplicated().to_numpy())
    return output, first_row


class _OutputLabels(NamedTuple):
    """Per output ``(O,)``: how many human labels and how many say 1; the same for metric."""

    h: np.ndarray
    h_pos: np.ndarray
    m: np.ndarray
    m_pos: np.ndarray

    @classmethod
    def of(cls, output: np.ndarray, n: int, human: np.ndarray, metric: np.ndarray):
        count = lambda mask: np.bincount(output[mask], minlength=n).astype(np.int64)  # noqa: E731
        return cls(
            count(~np.isnan(human)), count(human == 1), count(~np.isnan(metric)), count(metric == 1)
        )


class _Where(NamedTuple):
    """Names an output in an error line: its first row, its system and item.

    ``codes``, ``first_row`` and ``items`` are over the labelled rows; ``rows`` gives each
    labelled row's position in the file, from which an error line numbers it.
    """

    source: str
    systems: list[str]
    codes: np.ndarray
    first_row: np.ndarray
    item_names: list[str] | None
    items: np.ndarray | None
    rows: np.ndarray

    def at(self, output: int, column: str, row: int | None = None) -> str:
        row = self.first_row[output] if row is None else row
        name = f"system {shown(self.systems[self.codes[row]])}"
        if self.item_names is not None:
            name += f", item {shown(self.item_names[self.items[row]])}"
        return f"{self.source}: row {self.rows[row] + 1}, column {column}: {name}"


def _combined(n, pos, policy: LabelPolicy, kind, flag, where: _Where, output, labels):
    """Per output: labels of one kind after ``policy`` (count, how many say 1); raise where
    ``policy`` refuses an output (several labels under refuse, a tie under majority)."""
    several = n > 1
    if not several.any():
        return n, pos
    said = lambda o: f"{pos[o]} × 1, {n[o] - pos[o]} × 0"  # noqa: E731
    labelled = np.flatnonzero(~np.isnan(labels))  # rows with a label of this kind
    if not policy.combines:  # the first row that gives an output its second label
        row = int(labelled[pd.Series(output[labelled]).duplicated().to_numpy()][0])
        o = output[row]
        raise SweepError(
            f"{where.at(o, kind, row)} has {n[o]} {kind} labels ({said(o)}); say how to "
            f"combine several {kind} labels of one item: {flag} majority"
        )
    tie = _first(several & (2 * pos == n))
    if tie is not None:
        row = int(labelled[output[labelled] == tie][0])
        raise SweepError(
            f"{where.at(tie, kind, row)} has {n[tie]} {kind} labels that tie ({said(tie)}): "
            "no majority; add a label, or remove the item"
        )
    return np.minimum(n, 1), (2 * pos > n).astype(np.int64)


def _tally(system: np.ndarray, k: int, h, h_pos, m, m_pos) -> dict:
    """Return :data:`COUNT_COLUMNS` → int64 array (k,): the counts of k systems' outputs.

    ``system`` (O,) gives each output's system; ``h``, ``h_pos`` (O,) whether
    it has a human label (0 or 1, several combined) and whether it says 1,
    ``m``, ``m_pos`` the same for its metric label. An output with both is a
    paired rating (and a human one); with one only, a human or a metric-only
    rating.
    """
    per_output = {
        "n_phi": h,
        "n_pos": h_pos,
        "n_rho_eta": h * m,
        "n_pos_paired": h_pos * m,
        "n_tp": h_pos * m_pos,
        "n_tn": (h - h_pos) * (m - m_pos),
        "n_m": np.where(h > 0, 0, m),
        "m_pos": np.where(h > 0, 0, m_pos),
    }
    return {
        name: np.bincount(system, weights=v, minlength=k).astype(np.int64)
        for name, v in per_output.items()
    }


def _counts_frame(systems: Sequence[str], counts: dict) -> pd.DataFrame:
    """Return the result table: ``system`` (text) then the int64 columns of ``counts``
    (:data:`COUNT_COLUMNS`, and ``n_outputs`` where given)."""
    columns = {"system": pd.Series(list(systems), dtype="str")}
    columns.update({name: pd.Series(v, dtype=np.int64) for name, v in counts.items()})
    return pd.DataFrame(columns)


def _check_unique(codes: np.ndarray, systems: list[str], source: str) -> None:
    """Return if each system has one row of counts; raise at the first repeat."""
    row = _first(pd.Series(codes).duplicated().to_numpy())
    if row is not None:
        earlier = _first(codes == codes[row])
        raise SweepError(
            f"{source}: row {row + 1}, column system: {shown(systems[codes[row]])} "
            f"repeats row {earlier + 1}"
        )


def _check_bounds(counts: dict, source: str) -> None:
    """Return if every row keeps the relations in ``_BOUNDS``; raise at the first break."""
    sides = dict(counts)
    sides["n_rho_eta − n_pos_paired"] = counts["n_rho_eta"] - counts["n_pos_paired"]
    sides["n_phi − n_pos"] = counts["n_phi"] - counts["n_pos"]
    for column, left, right, why in _BOUNDS:
        row = _first(sides[left] > sides[right])
        if row is None:
            continue
        value = sides[left][row]
        said = str(value) if left == column else f"{left} = {value}"
        reason = f": {why}" if why else ""
        raise SweepError(
            f"{source}: row {row + 1}, column {column}: {said} exceeds "
            f"{right} ({sides[right][row]}){reason}"
        )
