"""Surface → the 2-D tables that published papers show.

A *surface* is a DataFrame with one row per (configuration, estimator, γ,
power): axis columns that identify the configuration (:data:`AXES`), the
estimator and other settings (:data:`CATEGORY_COLUMNS`), and value columns
(``eps``, ``se_mean``, ``coverage``, ...). A table fixes every axis but two with
``--where`` filters and lays one value out with one axis down the rows and
another across the columns::

    where = parse_where(["alpha=0.6", "rho=0.7", "eta=0.7", "gamma=0.05"])
    table = pivot_surface(surface, "n_phi", "n_m", "eps", where)
    print(format_table(table, "eps"))

Everything here is pure: nothing reads or writes files. Bad input raises
:class:`~sweep.errors.SweepError` with a one-line message that names the CLI
option (``--rows``, ``--cols``, ``--value``, ``--where``, ``--x``, ``--lines``),
the offending value and what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.storage.columns import (
    CATEGORY_COLUMNS,
    IDENTIFIERS,
    INTEGER_COLUMNS,
    INTERVAL_VALUES,
    MEANINGS,
    REPLICATE_VALUES,
    SURFACE_AXES,
)

__all__ = [
    "AXES",
    "CATEGORY_COLUMNS",
    "axis_columns",
    "value_columns",
    "parse_where",
    "filter_surface",
    "select_cells",
    "pivot_surface",
    "format_table",
    "format_value",
    "table_notes",
    "value_header",
    "undercovered",
    "mark_table",
    "check_replicated",
    "coverage_note",
    "default_value",
    "surface_interval",
    "MEANINGS",
    "INTERVAL_VALUES",
    "REPLICATE_VALUES",
    "DEFAULT_INTERVAL",
]

#: The surface's axes that are numbers or flags. This and the axes that are words
#: (:data:`CATEGORY_COLUMNS`), the identifiers, the meanings, the columns of whole numbers,
#: the values read off an interval (:data:`INTERVAL_VALUES`, marked where coverage is far
#: below the nominal level) and those of the spread over replicates (:data:`REPLICATE_VALUES`,
#: refused with expected counts) come from the column registry, :mod:`sweep.storage.columns`.
AXES = SURFACE_AXES

#: The interval level of a sweep file that names none (``interval``), assumed for a
#: surface that does not say (see :func:`surface_interval`).
DEFAULT_INTERVAL = 0.95

#: What each consequence of too narrow an interval means for a value (:func:`coverage_note`).
_UNDERCOVERED = {
    "eps": "an ε of such an interval is not a valid ε",
    "se_mean": "such an SE understates the estimate's error",
    "width_mean": "the width of such an interval is no measure of precision",
    "coverage": "the intervals are too narrow",
}

RELATIVE_TOLERANCE = 1e-9
_NULL_WORDS = frozenset({"none", "null", "na", "nan", "<na>"})
_TRUE_WORDS = frozenset({"true", "1", "yes", "y", "t"})
_FALSE_WORDS = frozenset({"false", "0", "no", "n", "f"})
_SHOWN_VALUES = 10


#: The value shown where none is asked for: the first of these a surface has (an item
#: model's ε; an arena's rank coverage).
DEFAULT_VALUES = ("eps", "rank_coverage")


def default_value(surface: pd.DataFrame) -> str:
    """The column ``sweep show`` and ``sweep plot`` show without ``--value``."""
    return next((v for v in DEFAULT_VALUES if v in surface.columns), DEFAULT_VALUES[0])


def axis_columns(surface: pd.DataFrame) -> list[str]:
    """The surface's axis columns (:data:`AXES` then :data:`CATEGORY_COLUMNS`), in that order."""
    return [c for c in (*AXES, *CATEGORY_COLUMNS) if c in surface.columns]


def value_columns(surface: pd.DataFrame) -> list[str]:
    """The surface's numeric, non-axis columns that measure something: what ``--value`` may name.

    In frame order; identifiers (:data:`IDENTIFIERS`: ``config_id``, ``shard``) are not values.
    """
    keys = set(axis_columns(surface)) | IDENTIFIERS
    return [
        c
        for c in surface.columns
        if c not in keys
        and ptypes.is_numeric_dtype(surface[c])
        and not ptypes.is_bool_dtype(surface[c])
    ]


def format_value(value: object) -> str:
    """One axis or cell value as a short string: ``0.51``, ``1000``, ``true``, ``none``."""
    if value is None or value is pd.NA:
        return "none"
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        if math.isnan(value):
            return "none"
        return f"{float(value):.10g}"
    return str(value)


def _short_list(values: Sequence[object]) -> str:
    shown = [format_value(v) for v in values]
    if len(shown) > _SHOWN_VALUES:
        shown = [*shown[: _SHOWN_VALUES - 2], "…", shown[-1], f"({len(values)} values)"]
    return ", ".join(shown)


def _sorted_unique(column: pd.Series) -> list[object]:
    """Distinct values, sorted, with a null (``None``) last when the column has one."""
    present = column.dropna().unique()
    values: list[object] = sorted(present.tolist() if hasattr(present, "tolist") else present)
    if column.isna().any():
        values.append(None)
    return values


def parse_where(items: Sequence[str]) -> dict[str, str]:
    """``["alpha=0.6", "rho_eta_known=true"]`` → ``{"alpha": "0.6", "rho_eta_known": "true"}``.

    Values stay strings; :func:`filter_surface` reads them as each column's type.
    Raises SweepError naming ``--where`` for an item without ``name=value`` or
    a name given twice.
    """
    if isinstance(items, str):
        items = [items]
    where: dict[str, str] = {}
    for item in items:
        name, sep, value = str(item).partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise SweepError(
                f"--where {shown(item)} is not NAME=VALUE; write e.g. --where alpha=0.6 "
                "--where rho_eta_known=true"
            )
        if name in where:
            raise SweepError(
                f"--where {shown(item)} fixes {name} a second time (already {name}={where[name]}); "
                "give each axis once"
            )
        where[name] = value
    return where


def _as_where(where: Mapping[str, object] | Sequence[str] | None) -> dict[str, object]:
    if where is None:
        return {}
    if isinstance(where, Mapping):
        return dict(where)
    return dict(parse_where(where))


def _coerce(column: pd.Series, name: str, value: object, option: str = "--where ") -> object:
    """A ``--where`` value read as the column's type; ``None`` stands for null.

    ``option`` starts an error message: ``"--where "`` on the command line, ``""`` in the API.
    """
    text = value.strip().lower() if isinstance(value, str) else None
    if value is None or value is pd.NA or text in _NULL_WORDS:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if ptypes.is_bool_dtype(column):
        if text is not None:
            if text in _TRUE_WORDS:
                return True
            if text in _FALSE_WORDS:
                return False
        elif isinstance(value, bool | np.bool_ | int | np.integer) and value in (0, 1):
            return bool(value)
        raise SweepError(
            f"{option}{name}={shown(value)} is not a boolean; write {name}=true or false"
        )
    if ptypes.is_numeric_dtype(column):
        if isinstance(value, bool | np.bool_):
            return float(value)
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise SweepError(
                f"{option}{name}={shown(value)} is not a number; {name} takes "
                f"{_short_list(_sorted_unique(column))}"
            ) from None
    return str(value).strip() if isinstance(value, str) else str(value)


def _matches(column: pd.Series, target: object) -> np.ndarray:
    if target is None:
        return column.isna().to_numpy()
    if ptypes.is_bool_dtype(column):
        return (column == target).fillna(False).to_numpy(dtype=bool)
    if ptypes.is_numeric_dtype(column):
        values = column.to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            return np.isclose(values, float(target), rtol=RELATIVE_TOLERANCE, atol=0.0)
    return (column.astype(str) == target).to_numpy(dtype=bool)


def filter_surface(
    surface: pd.DataFrame,
    where: Mapping[str, object] | Sequence[str] | None,
    *,
    option: str | None = "--where",
) -> pd.DataFrame:
    """The rows of ``surface`` whose axes equal every ``where`` value.

    ``where`` maps an axis name to a value, or is a list of ``NAME=VALUE``
    strings. Strings are read as the column's type (booleans accept
    true/false/1/0; ``none`` matches a null such as ``n_rho_eta`` when ρ, η are
    known); numbers match within a relative tolerance of 1e-9. Returns a new
    DataFrame (the original index kept). Raises SweepError for an unknown
    column or a value that matches no row (listing the values present),
    naming ``option`` (None: in the Python API's terms, keyword filters).
    """
    where = _as_where(where)
    keys = axis_columns(surface)
    frame = surface
    applied: list[str] = []
    prefix = f"{option} " if option else ""
    for name, raw in where.items():
        if name not in keys:
            raise SweepError(
                f"{prefix}{name!r} is not an axis column; choose one of: {', '.join(keys)}"
            )
        column = frame[name]
        target = _coerce(column, name, raw, prefix)
        mask = _matches(column, target)
        if not mask.any():
            context = f" among rows with {', '.join(applied)}" if applied else ""
            what = (
                f"{prefix}{name}={format_value(raw)} matches no row{context}"
                if option
                else f"no row with {name} = {format_value(raw)}{context}"
            )
            raise SweepError(f"{what}; {name} takes {_short_list(_sorted_unique(column))}")
        frame = frame.loc[mask]
        applied.append(f"{name}={format_value(raw)}")
    return frame.copy()


def _check_axis(surface: pd.DataFrame, field: str, name: str) -> None:
    keys = axis_columns(surface)
    if not isinstance(name, str) or name not in keys:
        raise SweepError(
            f"{field} {name!r} is not an axis column; choose one of: {', '.join(keys)}"
        )


def _check_value(surface: pd.DataFrame, value: str) -> None:
    allowed = value_columns(surface)
    if value in allowed:
        return
    choose = f"choose one of: {', '.join(allowed)}"
    if value in axis_columns(surface):
        raise SweepError(f"--value {value!r} is an axis, not a value; {choose}")
    if value in IDENTIFIERS and value in surface.columns:
        raise SweepError(f"--value {value!r} is an identifier, not a value; {choose}")
    if isinstance(value, str) and value in surface.columns:
        raise SweepError(f"--value {value!r} is not numeric; {choose}")
    raise SweepError(f"--value {value!r} is not a surface column; {choose}")


def select_cells(
    surface: pd.DataFrame,
    axes: Mapping[str, str],
    value: str,
    where: Mapping[str, object] | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Filter ``surface`` by ``where`` and check each combination of ``axes`` names one row.

    ``axes`` maps a CLI option to the axis it names, e.g.
    ``{"--rows": "n_phi", "--cols": "n_m"}`` or ``{"--x": "n_m"}``; error
    messages use those option names. Returns the filtered DataFrame, one row
    per distinct combination of the ``axes`` columns. Raises SweepError when an
    axis or the value is not a surface column, two options name the same axis,
    the value needs replicates and the rows have expected counts
    (:func:`check_replicated`), or another axis still varies within a
    combination (``--where must fix rho (it takes 0.51, 0.7 in these rows)``,
    naming every such axis).
    """
    if len(surface) == 0:
        raise SweepError("the surface has no rows; nothing to tabulate or plot")
    fields = list(axes.items())
    for field, name in fields:
        _check_axis(surface, field, name)
    for i, (field, name) in enumerate(fields):
        for other_field, other in fields[:i]:
            if name == other:
                raise SweepError(
                    f"{field} {name!r} is also {other_field}; choose two different axes"
                )
    _check_value(surface, value)
    frame = filter_surface(surface, where)
    check_replicated(frame, value)
    names = [name for _, name in fields]
    groups = frame.groupby(names, dropna=False, sort=False)
    if int(groups.size().max()) <= 1:
        return frame
    varying = [
        key
        for key in axis_columns(frame)
        if key not in names and int(groups[key].nunique(dropna=False).max()) > 1
    ]
    if varying:
        tied = _tied_groups(frame, varying)
        parts = [
            f"{key} (it takes {_short_list(_sorted_unique(frame[key]))} in these rows"
            + (
                f"; {' and '.join(rest)} {'is' if len(rest) == 1 else 'are'} tied to it"
                if rest
                else ""
            )
            + ")"
            for key, *rest in tied
        ]
        raise SweepError(
            f"--where must fix {' and '.join(parts)}; "
            f"or put {'it' if len(tied) == 1 else 'one'} on {' or '.join(axes)}"
        )
    sizes = groups.size()
    cell = sizes.index[int(np.argmax(sizes.to_numpy()))]
    cell = cell if isinstance(cell, tuple) else (cell,)
    at = ", ".join(f"{n}={format_value(v)}" for n, v in zip(names, cell, strict=True))
    raise SweepError(
        f"--where cannot single out one row at {at}: {int(sizes.max())} rows share every axis "
        "there; the surface repeats a configuration"
    )


def _tied_groups(frame: pd.DataFrame, names: list[str]) -> list[list[str]]:
    """``names`` grouped into axes that move together in ``frame`` (one-to-one values).

    A tied pair (``eta: rho``, or ψ, which is α with a shared paired set) is
    fixed by fixing either, so an error names the group once, first name first.
    """
    groups: list[list[str]] = []
    for name in names:
        for group in groups:
            head = group[0]
            if _one_to_one(frame, head, name):
                group.append(name)
                break
        else:
            groups.append([name])
    return groups


def _one_to_one(frame: pd.DataFrame, a: str, b: str) -> bool:
    pairs = frame[[a, b]].drop_duplicates()
    return len(pairs) == frame[a].nunique(dropna=False) == frame[b].nunique(dropna=False)


def _positions(column: pd.Series, keys: list[object]) -> np.ndarray:
    """Each row's position in ``keys`` (sorted distinct values, a null last)."""
    categories = [k for k in keys if k is not None]
    codes = pd.Categorical(column, categories=categories).codes.astype(np.int64)
    return np.where(codes < 0, len(keys) - 1, codes)


def _key_index(column: pd.Series, keys: list[object], name: str) -> pd.Index:
    if ptypes.is_bool_dtype(column) or not ptypes.is_numeric_dtype(column):
        return pd.Index(keys, name=name, dtype=object if None in keys else None)
    return pd.Index(pd.array(keys, dtype=column.dtype), name=name)


def pivot_surface(
    surface: pd.DataFrame,
    rows: str,
    cols: str,
    value: str,
    where: Mapping[str, object] | Sequence[str] | None = None,
) -> pd.DataFrame:
    """One value of the surface as a table: ``rows`` axis down, ``cols`` axis across.

    Filters by ``where`` (see :func:`filter_surface`), then returns a DataFrame
    whose index holds the ``rows`` values and whose columns hold the ``cols``
    values, both sorted ascending (a null last), with ``value`` in the cells
    and NaN where the surface has no such row. The index and columns are named
    after their axes. Cells are float, or int64 for an integer value column
    with no empty cell. Raises SweepError (see :func:`select_cells`) when
    another axis still varies so that a cell would hold more than one row.
    """
    frame = select_cells(surface, {"--rows": rows, "--cols": cols}, value, where)
    row_keys = _sorted_unique(frame[rows])
    col_keys = _sorted_unique(frame[cols])
    cells = np.full((len(row_keys), len(col_keys)), np.nan)
    cells[_positions(frame[rows], row_keys), _positions(frame[cols], col_keys)] = frame[
        value
    ].to_numpy(dtype=float, na_value=np.nan)
    table = pd.DataFrame(
        cells,
        index=_key_index(frame[rows], row_keys, rows),
        columns=_key_index(frame[cols], col_keys, cols),
    )
    column = surface[value]
    if ptypes.is_integer_dtype(column) and not np.isnan(cells).any():
        table = table.astype(np.int64)
    return table


def format_table(
    table: pd.DataFrame,
    value: str,
    digits: int = 3,
    marks: pd.DataFrame | None = None,
    marker: str = "*",
) -> str:
    """A table from :func:`pivot_surface` as aligned plain text, as printed in papers.

    The first line is the header: ``rows\\cols`` (the two axis names) then the
    column values; each further line is a row value then its cells. Cells show
    ``digits`` decimals, or none for a count (an integer table, or a ``value``
    such as ``divergences`` whose cells are whole numbers); an empty cell shows
    ``—``. ``marks`` (a boolean table of the same shape, e.g. from
    :func:`mark_table`) puts ``marker`` after each marked cell's number
    (``0.013*``), the other cells padded so that the digits stay aligned.
    Columns are right-aligned, the row labels left-aligned. Returns the text
    without a trailing newline.
    """
    if isinstance(digits, bool) or not isinstance(digits, int | np.integer) or digits < 0:
        raise SweepError(f"--digits {digits!r} is not a whole number ≥ 0; use e.g. --digits 3")
    cells = table.to_numpy(dtype=float, na_value=np.nan)
    finite = cells[np.isfinite(cells)]
    whole = bool(np.all(finite == np.round(finite)))
    integer = all(ptypes.is_integer_dtype(t) for t in table.dtypes) or (
        value in INTEGER_COLUMNS and whole
    )

    def cell(x: float) -> str:
        if math.isnan(x):
            return "—"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        text = f"{x:.0f}" if integer else f"{x:.{int(digits)}f}"
        # A value that rounds to zero is shown unsigned: "-0.000" reads as a negative bias.
        return text.lstrip("-") if float(text) == 0 else text

    flags = np.zeros(cells.shape, dtype=bool)
    if marks is not None:
        flags = np.asarray(marks, dtype=bool)
        if flags.shape != cells.shape:
            raise SweepError(f"marks: shape {flags.shape} is not the table's {cells.shape}")
    pad = " " * len(marker) if flags.any() else ""

    def marked(x: float, flag: bool) -> str:
        return cell(x) + (marker if flag else pad)

    corner = f"{table.index.name or 'rows'}\\{table.columns.name or 'cols'}"
    header = [corner, *(format_value(c) + pad for c in table.columns)]
    body = [
        [format_value(r), *(marked(x, f) for x, f in zip(row, flag_row, strict=True))]
        for r, row, flag_row in zip(table.index, cells, flags, strict=True)
    ]
    lines = [header, *body]
    widths = [max(len(line[j]) for line in lines) for j in range(len(header))]
    return "\n".join(
        "  ".join(
            text.ljust(widths[j]) if j == 0 else text.rjust(widths[j])
            for j, text in enumerate(line)
        ).rstrip()
        for line in lines
    )


def table_notes(frame: pd.DataFrame, value: str) -> list[str]:
    """Footnotes for a table of ``value`` over the rows ``frame``: cells a reader would query.

    ``eps`` where N_Φ = N_M = 0 is 1 by convention (no ratings: no evidence about α).
    """
    notes = []
    if value == "eps" and {"n_phi", "n_m"} <= set(frame.columns):
        if ((frame["n_phi"] == 0) & (frame["n_m"] == 0)).any():
            notes.append(
                "eps is 1 by convention where n_phi = n_m = 0: no ratings, no evidence about α"
            )
    return notes


def check_replicated(frame: pd.DataFrame, value: str) -> None:
    """Refuse a value of :data:`REPLICATE_VALUES` where ``frame`` has expected counts.

    Expected counts make one "replicate" per configuration, every count its
    expected value: coverage is then 1 or 0 (whether that one interval holds
    α), its Monte Carlo SE 0 and its Wilson interval one replicate's, and an
    SD over replicates (``bias_sd``, ``se_sd``, ``bias_mcse``, ``se_ratio``) is
    undefined. A table of them would look like a result and say nothing.
    """
    if value not in REPLICATE_VALUES or "counts" not in frame.columns:
        return
    if not (frame["counts"].astype(str) == "expected").any():
        return
    if value == "coverage":
        why = "coverage is 1 or 0 (whether the one interval holds α), not a share of replicates"
    elif value.startswith("coverage_"):
        why = f"{value} is that of one replicate's coverage of 1 or 0"
    else:
        why = f"{value} needs the spread over replicates and is undefined"
    raise SweepError(
        f"--value {value!r}: these rows have counts: expected, one replicate per "
        f"configuration with every count its expected value, so {why}; "
        f"{', '.join(REPLICATE_VALUES)} need a sweep with counts: sampled and many replicates "
        "(e.g. configs/sampled-coverage.yaml)"
    )


def surface_interval(surface: pd.DataFrame, interval: float | None = None) -> float:
    """The nominal level of the surface's intervals: ``interval``, else the sweep's.

    :func:`sweep.load_surface` records the sweep's ``interval`` in
    ``surface.attrs["interval"]``; a surface read another way is taken to be
    at the sweep file's default, :data:`DEFAULT_INTERVAL`.
    """
    if interval is None:
        interval = surface.attrs.get("interval", DEFAULT_INTERVAL)
    level = float(interval)
    if not 0.0 < level < 1.0:
        raise SweepError(f"interval {interval!r} is not a level in (0, 1); e.g. 0.95")
    return level


def undercovered(frame: pd.DataFrame, interval: float | None = None) -> np.ndarray:
    """``(len(frame),)`` True where the row's estimator covers α far less often than promised.

    With sampled counts: the 95 % Wilson interval of its coverage
    (``coverage_high``) lies wholly below the nominal level ``interval``
    (:func:`surface_interval`). With expected counts, where coverage is one
    replicate's: that one interval, at the expected counts, misses the true α
    (coverage 0). Rows without a coverage (the estimator does not apply) are
    not marked; nor is any row of a surface without coverage columns.
    """
    marked = np.zeros(len(frame), dtype=bool)
    if "coverage_high" not in frame.columns:
        return marked
    level = surface_interval(frame, interval)
    high = frame["coverage_high"].to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        marked |= high < level
        if "counts" in frame.columns and "coverage" in frame.columns:
            expected = (frame["counts"].astype(str) == "expected").to_numpy(dtype=bool)
            coverage = frame["coverage"].to_numpy(dtype=float, na_value=np.nan)
            marked |= expected & (coverage == 0.0)
    return marked


def mark_table(
    frame: pd.DataFrame, rows: str, cols: str, value: str, interval: float | None = None
) -> pd.DataFrame | None:
    """Which cells of ``pivot_surface(frame, rows, cols, value)`` to mark, or None for none.

    A cell is marked where ``value`` rests on the estimator's interval or SE
    (:data:`INTERVAL_VALUES`) and the row is :func:`undercovered`. ``frame``
    is the rows :func:`select_cells` chose. Returns a boolean table with the
    pivot's index and columns, or None when no cell is marked.
    """
    if value not in INTERVAL_VALUES:
        return None
    marked = undercovered(frame, interval)
    if not marked.any():
        return None
    flags = frame[[rows, cols]].assign(marked=marked.astype(float))
    table = pivot_surface(flags, rows, cols, "marked")
    return table.fillna(0.0).astype(bool)


def coverage_note(
    frame: pd.DataFrame, value: str, marker: str = "*", interval: float | None = None
) -> str | None:
    """The line under a table saying which cells ``marker`` marks and why; None if none.

    The cells of :func:`mark_table`: with sampled counts, coverage far below
    the nominal level (its Wilson interval below it); with expected counts,
    an interval that misses α.
    """
    if value not in INTERVAL_VALUES:
        return None
    marked = undercovered(frame, interval)
    if not marked.any():
        return None
    level = surface_interval(frame, interval)
    expected = (
        "counts" in frame.columns and (frame.loc[marked, "counts"].astype(str) == "expected").all()
    )
    if expected:
        where = "the interval at the expected counts misses the true α"
    else:
        where = (
            f"coverage is far below the nominal {level:g} (its 95 % Wilson interval lies "
            f"below {level:g})"
        )
    return f"{marker} marks the cells where {where}: {_UNDERCOVERED[value]}"


def _level_phrase(frame: pd.DataFrame, name: str, rows: str | None, cols: str | None) -> str:
    """``γ = 0.05`` or ``power 0.5`` from the rows, or where it varies, that it does."""
    words = {"gamma": "γ = {}", "power": "power {}"}[name]
    values = _sorted_unique(frame[name])
    if len(values) == 1:
        return words.format(format_value(values[0]))
    if name in (rows, cols):
        return words.format(f"of each {'row' if name == rows else 'column'}")
    return words.format(_short_list(values)) + " (across the table)"


def value_header(
    frame: pd.DataFrame,
    value: str,
    rows: str | None = None,
    cols: str | None = None,
    interval: float | None = None,
) -> str:
    """The line ``sweep show`` prints above a table of ``value`` over the rows ``frame``.

    The value and its meaning (:data:`MEANINGS`); for ``eps`` the γ and power
    it is at, as numbers read from the rows (``eps at γ = 0.05, power 0.5:
    …``), or ``of each row`` where ``rows`` or ``cols`` is that axis; for
    ``coverage`` and ``width_mean`` the intervals' nominal level. On a categorical
    sweep's rows (a ``theta`` column) the estimand is θ, and the meaning says so.
    """
    meaning = MEANINGS.get(value)
    if meaning and "theta" in frame.columns:
        meaning = meaning.replace("α", "θ")
    name = value
    if value == "eps":
        levels = [_level_phrase(frame, n, rows, cols) for n in ("gamma", "power") if n in frame]
        if levels:
            name = f"{value} at {', '.join(levels)}"
    if value in ("coverage", "width_mean") and (interval is not None or "interval" in frame.attrs):
        meaning = (
            f"{meaning} (intervals at the nominal level {surface_interval(frame, interval):g})"
        )
    return f"{name}: {meaning}" if meaning else name
