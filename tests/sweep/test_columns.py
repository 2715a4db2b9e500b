"""The column registry (sweep/storage/columns.py): one value per column, from which the tables'
schemas, ``sweep show``'s meanings, the figures' labels and the axis lists come; a computed
column it does not list is an error, and the README's and docs' column tables list it exactly.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from binmetric_sweep.kernels.counts import Counts
from binmetric_sweep.kernels.summaries import EstimateSummary, FitResults, SamplerHealth
from binmetric_sweep.sweep.display import plots, tables
from binmetric_sweep.sweep.execution import shards
from binmetric_sweep.sweep.spec import config, grid
from binmetric_sweep.sweep.storage import columns
from binmetric_sweep.sweep.storage.columns import (
    COLUMNS,
    FITS,
    SURFACE,
    ColumnError,
    check_schema,
    columns_of,
    names,
    ordered,
    registered,
)

ROOT = Path(__file__).resolve().parents[2]
#: The README's word for each dtype in its column tables.
README_TYPES = {"int64": "int64", "int32": "int32", "float64": "float", "bool": "bool"}
README_TYPES["string"] = "string"
README_TYPES["int64 list"] = "list"


def _tables(text: str) -> list[tuple[str, list[list[str]]]]:
    """Each Markdown table in ``text`` as (the paragraph line above it, its body rows' cells)."""
    found, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("| ---"):
            above = next((x for x in reversed(lines[:i]) if x.strip()), "")
            j = i + 2
            rows = []
            while j < len(lines) and lines[j].startswith("|"):
                rows.append([cell.strip() for cell in lines[j].strip().strip("|").split("|")])
                j += 1
            found.append((above, rows))
            i = j
        else:
            i += 1
    return found


def _names(cell: str) -> list[str]:
    """The backticked names of a first cell: "`alpha`, `rho`, `eta`" → alpha, rho, eta."""
    return re.findall(r"`([^`]+)`", cell)


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def _readme_table(caption: str) -> list[list[str]]:
    output = _section((ROOT / "README.md").read_text(), "Output")
    matches = [rows for above, rows in _tables(output) if above.startswith(caption)]
    assert len(matches) == 1, f"README's Output section has {len(matches)} {caption!r} tables"
    return matches[0]


@pytest.mark.parametrize(("caption", "table"), [("Surface", SURFACE), ("Fits", FITS)])
def test_the_readme_tables_list_exactly_the_registry_columns_with_their_types(caption, table):
    listed: list[str] = []
    for row in _readme_table(caption):
        row_names = _names(row[0])
        types = [t.strip() for t in row[1].split(",")]
        assert row_names, f"README {caption} row {row} names no column"
        assert len(types) in (1, len(row_names)), f"README {caption} row {row}: types"
        words = types * len(row_names) if len(types) == 1 else types
        for name, word in zip(row_names, words, strict=True):
            if name in COLUMNS:
                assert word == README_TYPES[COLUMNS[name].dtype], (caption, name, word)
        listed += row_names
    assert len(listed) == len(set(listed)), f"README {caption} lists a column twice"
    registry = set(names(table, columns.ANY_MODEL))  # every rating model's columns
    assert set(listed) == registry, (
        f"README {caption}: not in the registry {sorted(set(listed) - registry)}, "
        f"not in the README {sorted(registry - set(listed))}"
    )


def test_docs_model_lists_exactly_what_a_configuration_reports():
    """docs/model.md's table of a surface row's summaries: the registry's summary and sampler
    columns of the surface, each once."""
    section = (ROOT / "docs" / "model.md").read_text().split("## What a configuration reports")[1]
    (rows,) = [rows for _, rows in _tables(section.split("\n## ")[0])]
    listed = [name for row in rows for name in _names(row[0])]
    expected = {c.name for c in columns_of(SURFACE) if c.source in ("summary", "sampler")}
    assert len(listed) == len(set(listed))
    assert set(listed) == expected, (sorted(set(listed) ^ expected),)


def test_the_registry_names_every_field_the_kernels_compute_and_no_other():
    surface, fits = columns_of(SURFACE), columns_of(FITS)
    assert {c.name for c in surface if c.source == "summary"} == set(EstimateSummary._fields)
    assert {c.name for c in surface if c.source == "sampler"} == set(SamplerHealth._fields)
    estimate = {"post_mean", "post_sd", "ci_low", "ci_high"}  # the posterior's Estimate
    diagnostics = set(FitResults._fields) - estimate
    assert {c.name for c in fits if c.source == "sampler"} == diagnostics
    assert set(columns.COUNT_COLUMNS) <= set(Counts._fields)
    # Each item model's size is a Counts field too: the lane's counts are out of them (an
    # arena's battles per pair are a design's, its counts by cell).
    sizes = {a for a in columns.SIZE_AXES if columns.COLUMNS[a].model != "arena"}
    assert sizes <= set(Counts._fields) | {"n_rho_eta"}


def test_the_schemas_of_finished_sweeps_do_not_change():
    """Shards of a sweep written before must match those written now (resumed sweeps,
    load_surface): these are the Parquet schemas of binmetric-sweep's numbers."""
    assert str(columns.schema(FITS)).split("\n") == [
        f"{n}: {t}"
        for n, t in zip(
            columns.FIT_COLUMNS,
            "int64 int32 string int64 int64 int64 int64 int64 int64 double double double "
            "double bool string double double double int64 double int64 bool bool".split(),
            strict=True,
        )
    ]
    assert columns.FIT_COLUMNS[:3] == ("config_id", "replicate", "estimator")
    assert columns.SURFACE_COLUMNS == (
        *grid.CONFIG_COLUMNS,
        *("counts", "method", "replicates", "estimator", "gamma", "power"),
        *("eps", "se_mean", "se_sd", "se_ratio", "bias_mean", "bias_sd", "bias_mcse", "rmse"),
        *("width_mean", "coverage", "coverage_mcse", "coverage_low", "coverage_high"),
        *("rhat_max", "ess_min", "divergences", "nonfinite", "not_applicable", "shard"),
    )
    # The grid's axes in the order its product varies: config_id hashes them in this order.
    assert config.AXES == ("alpha", "rho", "eta", "n_phi", "n_rho_eta", "psi", "n_m")
    assert grid.CONFIG_COLUMNS == (
        "config_id",
        *("alpha", "rho", "eta", "n_phi", "n_rho_eta", "rho_eta_known", "shared_paired"),
        *("psi", "n_m"),
    )


def test_the_axis_lists_are_the_registrys():
    assert config.SIZE_AXES == plots.SIZE_AXES == ("battles", "n_phi", "n_rho_eta", "n_m")
    assert config._BINARY_SIZES == ("n_phi", "n_rho_eta", "n_m")  # what a binary size ties to
    assert config.PROBABILITY_AXES == ("alpha", "rho", "eta", "psi")
    assert shards.COUNT_COLUMNS == (
        "n_pos",
        "n_tp",
        "n_pos_paired",
        "n_tn",
        "n_neg_paired",
        "m_pos",
    )
    assert set(tables.AXES) | set(tables.CATEGORY_COLUMNS) == {
        c.name for c in columns_of(SURFACE, columns.ANY_MODEL) if c.role == "axis"
    }
    assert tables.CATEGORY_COLUMNS == (
        *("shares", "confusion", "judge_model", "counts", "method", "ratings", "estimator"),
    )
    assert set(tables.REPLICATE_VALUES) >= {"coverage", "bias_sd", "se_ratio"}
    assert tables.INTERVAL_VALUES == {"eps", "se_mean", "width_mean", "coverage"}


def test_show_prints_the_registry_meaning_of_every_value():
    frame = pd.DataFrame({"gamma": [0.05], "power": [0.5]})
    for column in columns_of(SURFACE):
        header = tables.value_header(frame, column.name)
        assert header.endswith(f": {column.meaning}"), header


def test_a_figure_labels_every_axis_and_value_from_the_registry():
    for column in COLUMNS.values():
        assert plots.label(column.name) == (column.label or column.name)
    unlabelled = [c.name for c in columns_of(SURFACE) if c.label is None]
    assert sorted(unlabelled) == ["config_id", "shard"]  # identifiers, never on an axis
    assert plots.SYMBOLS["eps"] == COLUMNS["eps"].symbol == r"$\varepsilon_\gamma$"


def test_integer_columns_are_shown_without_decimals():
    cells = pd.DataFrame([[3.0, 12.0]], index=pd.Index([0], name="a"), columns=[1, 2])
    for column in columns_of(SURFACE):
        if column.role == "value":
            text = tables.format_table(cells, column.name)
            assert ("3.000" in text) != column.integer, (column.name, text)


def test_a_computed_column_not_registered_is_an_error_naming_it():
    computed = dict.fromkeys(names(SURFACE), 0)
    assert list(ordered(SURFACE, computed)) == list(names(SURFACE))
    with pytest.raises(ColumnError, match="'median_bias' not in the column registry"):
        ordered(SURFACE, {**computed, "median_bias": 0})
    del computed["rmse"]
    with pytest.raises(ColumnError, match="registered column\\(s\\) 'rmse' not computed"):
        ordered(SURFACE, computed)
    with pytest.raises(ColumnError, match="'replicate' is not in the column registry's surface"):
        registered(SURFACE, "replicate")
    with pytest.raises(ColumnError, match="'rmse' is computed by sampler"):
        registered(SURFACE, "rmse", "sampler")


def test_a_schema_is_checked_against_the_registry():
    check_schema(FITS, columns.schema(FITS))
    pandas_strings = pa.schema(
        [
            f.with_type(pa.large_string()) if f.type == pa.string() else f
            for f in columns.schema(FITS)
        ]
    )
    check_schema(FITS, pandas_strings)  # pandas makes large_string columns
    wrong = columns.schema(FITS).set(1, pa.field("replicate", pa.int64()))
    with pytest.raises(ColumnError, match="'replicate' is int64, registered as int32"):
        check_schema(FITS, wrong)
    swapped = pa.schema([columns.schema(FITS).field(i) for i in (1, 0, *range(2, 23))])
    with pytest.raises(ColumnError, match="not the registry's"):
        check_schema(FITS, swapped)


def _surface_inputs(summary_type=EstimateSummary):
    spec = config.load_sweep(
        {
            "name": "columns",
            "method": "quadrature",
            "estimators": ["human_only"],
            "gamma": [0.05, 0.1],
            "grid": {"alpha": [0.6], "rho": [0.7, 0.8], "eta": "rho", "n_phi": [10], "n_m": [5]},
        }
    )
    configs = grid.expand_grid(spec)
    c, g = len(configs), 2
    summary = summary_type(
        **{f: np.full((c, g) if f == "eps" else c, 0.5) for f in summary_type._fields}
    )
    gammas, powers = np.array([0.05, 0.1]), np.array([0.5, 0.5])
    return spec, configs, gammas, powers, {"human_only": (summary, None)}


def test_a_shard_surface_is_the_registrys_and_refuses_a_column_it_does_not_list():
    spec, configs, gammas, powers, summaries = _surface_inputs()
    surface = shards._surface_table(spec, 0, configs, gammas, powers, summaries)
    check_schema(SURFACE, surface.schema)
    frame = surface.to_pandas()
    assert frame["eps"].tolist() == [0.5] * 4 and frame["rhat_max"].isna().all()
    assert frame["divergences"].tolist() == [0] * 4 and frame["nonfinite"].dtype == np.int64
    # A configuration column the registry does not know (a new rating model's, say).
    with pytest.raises(ColumnError, match="'n_classes' not in the column registry"):
        shards._surface_table(spec, 0, configs.assign(n_classes=2), gammas, powers, summaries)

    # The kernels' summaries with a field more, or one fewer.
    wider = NamedTuple("Wider", [(f, np.ndarray) for f in (*EstimateSummary._fields, "median")])
    with pytest.raises(ColumnError, match="'median' is not in the column registry"):
        shards._surface_table(spec, 0, configs, gammas, powers, _surface_inputs(wider)[-1])
    fewer = [(f, np.ndarray) for f in EstimateSummary._fields if f != "rmse"]
    narrower = _surface_inputs(NamedTuple("Narrower", fewer))[-1]
    with pytest.raises(ColumnError, match="registered column\\(s\\) 'rmse' not computed"):
        shards._surface_table(spec, 0, configs, gammas, powers, narrower)
