import itertools

import numpy as np
import pandas as pd
import pytest

from binmetric_sweep.sweep.display.tables import (
    AXES,
    REPLICATE_VALUES,
    coverage_note,
    filter_surface,
    format_table,
    format_value,
    mark_table,
    parse_where,
    pivot_surface,
    select_cells,
    surface_interval,
    table_notes,
    undercovered,
    value_columns,
    value_header,
)

from .helpers import refuses

RHOS = (0.51, 0.7)
N_PHI = (0, 100, 250)
N_M = (0, 1000, 10000)


def eps_of(rho: float, n_phi: int, n_m: int) -> float:
    return rho / (1.0 + n_phi / 100.0 + n_m / 5000.0)


def make_surface() -> pd.DataFrame:
    """A product grid over ρ (= η), N_Φ and N_M at one γ, rows shuffled, as the store writes it."""
    records = []
    for i, (rho, n_phi, n_m) in enumerate(itertools.product(RHOS, N_PHI, N_M)):
        records.append(
            {
                "config_id": i,
                "alpha": 0.6,
                "rho": rho,
                "eta": rho,
                "n_phi": n_phi,
                "n_rho_eta": n_phi if n_phi else None,
                "psi": 1.0,
                "n_m": n_m,
                "rho_eta_known": n_phi == 0,
                "shared_paired": True,
                "gamma": 0.05,
                "eps": eps_of(rho, n_phi, n_m),
                "se_mean": eps_of(rho, n_phi, n_m) / 2.77,
                "coverage": np.nan if n_m == 10000 and n_phi == 250 else 0.95,
                "divergences": i % 4,
                "counts": "expected",
                "method": "quadrature",
                "replicates": 1,
                "shard": 0,
            }
        )
    frame = pd.DataFrame(records).astype(
        {"config_id": "int64", "n_phi": "int64", "n_m": "int64", "n_rho_eta": "Int64"}
    )
    return frame.sample(frac=1.0, random_state=3).reset_index(drop=True)


@pytest.fixture
def surface() -> pd.DataFrame:
    return make_surface()


def test_pivot_puts_sorted_axis_values_on_rows_and_columns(surface):
    table = pivot_surface(surface, "n_phi", "n_m", "eps", {"rho": "0.7"})
    assert table.shape == (3, 3)
    assert table.index.tolist() == list(N_PHI) and table.index.name == "n_phi"
    assert table.columns.tolist() == list(N_M) and table.columns.name == "n_m"
    expected = [[eps_of(0.7, p, m) for m in N_M] for p in N_PHI]
    np.testing.assert_allclose(table.to_numpy(), expected, rtol=1e-12)


def test_pivot_leaves_missing_cells_nan_and_keeps_integer_values(surface):
    sampled = surface.assign(counts="sampled", replicates=400)  # coverage needs replicates
    table = pivot_surface(sampled, "n_phi", "n_m", "coverage", {"rho": 0.51})
    assert np.isnan(table.loc[250, 10000]) and table.loc[100, 1000] == 0.95
    partial = surface[~((surface.n_phi == 0) & (surface.n_m == 0))]
    table = pivot_surface(partial, "n_phi", "n_m", "eps", {"rho": 0.7})
    assert np.isnan(table.loc[0, 0]) and table.notna().sum().sum() == 8
    counts = pivot_surface(surface, "n_m", "n_phi", "divergences", {"rho": 0.7})
    assert all(pd.api.types.is_integer_dtype(t) for t in counts.dtypes)


def test_pivot_places_a_null_axis_value_last(surface):
    table = pivot_surface(surface, "n_rho_eta", "n_m", "eps", ["rho=0.7"])
    assert table.index[:2].tolist() == [100, 250] and pd.isna(table.index[2])
    np.testing.assert_allclose(table.iloc[2], [eps_of(0.7, 0, m) for m in N_M])


def test_an_axis_tied_to_the_rows_is_not_ambiguous(surface):
    # n_rho_eta and rho_eta_known vary but follow n_phi, as in the published tables.
    table = pivot_surface(surface, "n_phi", "n_m", "eps", {"rho": 0.7, "eta": 0.7})
    assert table.shape == (3, 3)


@pytest.mark.parametrize("text", ["0.51", "0.5100000000001", "5.1e-1"])
def test_where_matches_floats_within_a_relative_tolerance(surface, text):
    rows = filter_surface(surface, {"rho": text})
    assert len(rows) == 9 and np.allclose(rows.rho, 0.51)


def test_where_reads_each_column_type(surface):
    assert len(filter_surface(surface, {"n_phi": "100"})) == 6
    assert len(filter_surface(surface, {"n_phi": 100.0, "n_m": 1e3})) == 2
    assert len(filter_surface(surface, {"rho_eta_known": "true"})) == 6
    assert len(filter_surface(surface, {"rho_eta_known": "0"})) == 12
    assert len(filter_surface(surface, {"rho_eta_known": False})) == 12
    assert len(filter_surface(surface, {"n_rho_eta": "none"})) == 6
    assert len(filter_surface(surface, {"counts": "expected"})) == 18
    assert len(filter_surface(surface, None)) == len(surface)
    assert len(filter_surface(surface, ["rho=0.7", "n_m=0"])) == 3


def test_parse_where_splits_on_the_first_equals():
    assert parse_where(["alpha=0.6", " rho_eta_known = true "]) == {
        "alpha": "0.6",
        "rho_eta_known": "true",
    }
    assert parse_where([]) == {}
    assert parse_where(["method=a=b"]) == {"method": "a=b"}


@pytest.mark.parametrize("item", ["alpha", "=0.6", "alpha=", "alpha 0.6"])
def test_parse_where_refuses_bad_syntax(item):
    refuses(lambda: parse_where([item]), "--where", repr(item))


def test_parse_where_refuses_a_repeated_name():
    refuses(lambda: parse_where(["rho=0.7", "rho=0.51"]), "--where", "rho")


def test_where_refuses_an_unknown_column_listing_the_axes(surface):
    message = refuses(lambda: filter_surface(surface, {"rhoo": "0.7"}), "--where", "'rhoo'")
    for axis in ("alpha", "rho", "n_phi", "n_rho_eta", "gamma", "rho_eta_known"):
        assert axis in message
    refuses(lambda: filter_surface(surface, {"eps": "0.1"}), "--where", "'eps'")


def test_where_refuses_a_value_that_matches_no_row(surface):
    refuses(lambda: filter_surface(surface, {"rho": "0.55"}), "--where", "rho=0.55", "0.51, 0.7")
    refuses(
        lambda: filter_surface(surface, {"n_rho_eta": "none", "n_phi": "100"}),
        "--where",
        "n_phi=100",
        "n_rho_eta=none",
    )


@pytest.mark.parametrize(
    ("where", "needles"),
    [
        ({"rho": "abc"}, ("--where", "rho", "'abc'", "not a number")),
        ({"rho_eta_known": "maybe"}, ("--where", "rho_eta_known", "'maybe'", "true or false")),
        ({"rho_eta_known": 2}, ("--where", "rho_eta_known", "true or false")),
    ],
)
def test_where_refuses_a_value_of_the_wrong_type(surface, where, needles):
    refuses(lambda: filter_surface(surface, where), *needles)


def test_pivot_names_every_axis_left_varying(surface):
    # η is tied to ρ here (eta: rho): fixing either fixes both, so they are named as one.
    message = refuses(
        lambda: pivot_surface(surface, "n_phi", "n_m", "eps", {}),
        "--where must fix rho (it takes 0.51, 0.7 in these rows; eta is tied to it); "
        "or put it on --rows or --cols",
    )
    assert "n_phi (" not in message and "n_m (" not in message
    assert "and eta (" not in message
    assert len(pivot_surface(surface, "n_phi", "n_m", "eps", {"eta": 0.7})) == 3
    # Varied independently, each is named.
    crossed = pd.concat([surface, surface.assign(eta=0.9)], ignore_index=True)
    refuses(
        lambda: pivot_surface(crossed, "n_phi", "n_m", "eps", {}),
        "--where must fix rho (it takes 0.51, 0.7 in these rows) and eta (it takes 0.51, 0.7, 0.9",
        "or put one on --rows or --cols",
    )
    two_gammas = pd.concat([surface, surface.assign(gamma=0.1)], ignore_index=True)
    refuses(
        lambda: pivot_surface(two_gammas, "n_phi", "n_m", "eps", {"rho": 0.7}),
        "gamma (it takes 0.05, 0.1 in these rows)",
    )


def test_pivot_refuses_a_repeated_configuration(surface):
    twice = pd.concat([surface, surface], ignore_index=True)
    refuses(lambda: pivot_surface(twice, "n_phi", "n_m", "eps", {"rho": 0.7}), "--where")


def test_pivot_refuses_the_same_axis_twice(surface):
    refuses(lambda: pivot_surface(surface, "n_m", "n_m", "eps", {}), "--cols", "'n_m'", "--rows")


@pytest.mark.parametrize(
    ("rows", "cols", "needles"),
    [
        ("n_phx", "n_m", ("--rows", "'n_phx'", "n_phi", "n_m")),
        ("n_phi", "eps", ("--cols", "'eps'", "not an axis")),
    ],
)
def test_pivot_refuses_an_unknown_axis(surface, rows, cols, needles):
    refuses(lambda: pivot_surface(surface, rows, cols, "eps", {"rho": 0.7}), *needles)


@pytest.mark.parametrize(
    ("value", "needles"),
    [
        ("epz", ("--value", "'epz'", "not a surface column", "eps, se_mean")),
        ("alpha", ("--value", "'alpha'", "axis", "eps")),
        ("method", ("--value", "'method'", "eps")),
    ],
)
def test_pivot_refuses_a_bad_value(surface, value, needles):
    refuses(lambda: pivot_surface(surface, "n_phi", "n_m", value, {"rho": 0.7}), *needles)


def test_value_columns_are_numeric_measures_not_axes_or_identifiers(surface):
    values = value_columns(surface)
    assert values == ["eps", "se_mean", "coverage", "divergences", "replicates"]
    assert not set(values) & set(AXES)
    refuses(
        lambda: pivot_surface(surface, "n_phi", "n_m", "config_id", {"rho": 0.7}),
        "--value 'config_id' is an identifier, not a value; choose one of: eps, se_mean",
    )


def test_cells_that_round_to_zero_show_no_sign(surface):
    table = pivot_surface(surface.assign(eps=-1e-5), "n_phi", "n_m", "eps", {"rho": 0.7})
    text = format_table(table, "eps", digits=3)
    assert "-0.000" not in text and "0.000" in text
    negative = pivot_surface(surface.assign(eps=-0.0123), "n_phi", "n_m", "eps", {"rho": 0.7})
    assert "-0.012" in format_table(negative, "eps", digits=3)


def test_notes_explain_the_conventional_eps_of_no_ratings(surface):
    assert table_notes(surface, "eps") == [
        "eps is 1 by convention where n_phi = n_m = 0: no ratings, no evidence about α"
    ]
    assert table_notes(surface, "se_mean") == []
    assert table_notes(surface[surface.n_phi > 0], "eps") == []


def test_select_cells_uses_the_option_names_it_is_given(surface):
    refuses(lambda: select_cells(surface, {"--x": "n_m"}, "eps", {"rho": 0.7}), "--where", "n_phi")
    rows = select_cells(surface, {"--x": "n_m", "--lines": "n_phi"}, "eps", {"rho": 0.7})
    assert len(rows) == 9
    refuses(
        lambda: select_cells(surface, {"--x": "n_m", "--lines": "n_m"}, "eps", {}),
        "--lines",
        "--x",
    )


def test_format_table_lays_out_a_published_table(surface):
    table = pivot_surface(surface, "n_phi", "n_m", "eps", {"rho": 0.7})
    text = format_table(table, "eps")
    lines = text.splitlines()
    assert len(lines) == 4
    assert lines[0].split() == ["n_phi\\n_m", "0", "1000", "10000"]
    assert lines[1].split() == ["0", "0.700", "0.583", "0.233"]
    assert lines[3].split()[0] == "250"
    assert len({len(line) for line in lines}) == 1  # right-aligned to one width
    assert format_table(table, "eps", digits=5).splitlines()[1].split()[1] == "0.70000"


def test_format_table_shows_counts_whole_and_gaps_as_dashes(surface):
    counts = pivot_surface(surface, "n_phi", "n_m", "divergences", {"rho": 0.7})
    body = [line.split()[1:] for line in format_table(counts, "divergences").splitlines()[1:]]
    assert all(cell.isdigit() for row in body for cell in row)
    sampled = surface.assign(counts="sampled", replicates=400)  # coverage needs replicates
    coverage = pivot_surface(sampled, "n_phi", "n_m", "coverage", {"rho": 0.7})
    text = format_table(coverage, "coverage")
    assert "—" in text.splitlines()[3] and "0.950" in text


def test_format_table_refuses_negative_digits(surface):
    table = pivot_surface(surface, "n_phi", "n_m", "eps", {"rho": 0.7})
    refuses(lambda: format_table(table, "eps", digits=-1), "--digits", "-1")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.51, "0.51"),
        (1000.0, "1000"),
        (np.int64(250), "250"),
        (np.bool_(True), "true"),
        (pd.NA, "none"),
        ("sampled", "sampled"),
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


def covering_surface(surface: pd.DataFrame) -> pd.DataFrame:
    """ρ = 0.7 of the surface, sampled with 400 replicates: coverage far below 0.95 (its
    Wilson interval 0.86 to 0.92) where N_M = 10000, near it (0.93 to 0.97) elsewhere."""
    frame = surface[surface.rho == 0.7].assign(counts="sampled", replicates=400)
    far = (frame.n_m == 10000).to_numpy()
    return frame.assign(
        coverage=np.where(far, 0.89, 0.95),
        coverage_low=np.where(far, 0.86, 0.93),
        coverage_high=np.where(far, 0.92, 0.97),
    )


def test_eps_says_the_gamma_and_power_it_is_at_as_numbers(surface):
    frame = select_cells(
        surface.assign(power=0.5), {"--rows": "n_phi", "--cols": "n_m"}, "eps", {"rho": 0.7}
    )
    header = value_header(frame, "eps", "n_phi", "n_m")
    assert header.startswith("eps at γ = 0.05, power 0.5: ε, the smallest difference")
    assert "the row's power" not in header and "published ε" in header and "0.8" in header
    # Power on the columns: said per column; varying and not on the table: --where must fix it.
    both = pd.concat([surface.assign(power=0.5), surface.assign(power=0.8)], ignore_index=True)
    where = {"rho": 0.7, "n_m": 1000}
    frame = select_cells(both, {"--rows": "n_phi", "--cols": "power"}, "eps", where)
    assert value_header(frame, "eps", "n_phi", "power").startswith(
        "eps at γ = 0.05, power of each column:"
    )
    refuses(lambda: pivot_surface(both, "n_phi", "n_m", "eps", {"rho": 0.7}), "must fix power")
    # Other values keep their meaning alone; an interval's width names its level.
    assert value_header(frame, "se_mean").startswith("se_mean: mean SE of α")
    assert value_header(frame, "width_mean", interval=0.9).endswith(
        "(intervals at the nominal level 0.9)"
    )


def test_cells_whose_coverage_is_far_below_nominal_are_marked(surface):
    frame = covering_surface(surface)
    marked = undercovered(frame)
    assert marked.tolist() == (frame.n_m == 10000).tolist()
    assert not undercovered(frame, interval=0.9).any()  # 0.92 is not below a 90 % level
    assert not undercovered(frame.assign(coverage_high=np.nan)).any()  # not applicable
    assert not undercovered(frame.drop(columns=["coverage_low", "coverage_high"])).any()
    table = pivot_surface(frame, "n_phi", "n_m", "eps")
    marks = mark_table(frame, "n_phi", "n_m", "eps")
    assert marks.index.equals(table.index) and marks.columns.equals(table.columns)
    assert marks[10000].all() and not marks[[0, 1000]].any().any()
    lines = format_table(table, "eps", marks=marks).splitlines()
    assert lines[1].split() == ["0", "0.700", "0.583", "0.233*"]
    # The digits stay aligned: every cell's last digit in the same column of text.
    ends = {line.rstrip("*").rstrip().__len__() for line in lines[1:]}
    assert len(ends) == 1 and lines[0].rstrip().__len__() == next(iter(ends))
    note = coverage_note(frame, "eps")
    assert note.startswith("* marks the cells where coverage is far below the nominal 0.95")
    assert "Wilson" in note and note.endswith("an ε of such an interval is not a valid ε")
    for value in ("se_mean", "width_mean", "coverage"):
        assert mark_table(frame, "n_phi", "n_m", value) is not None
        assert coverage_note(frame, value) is not None
    for value in ("bias_mean", "divergences"):  # not read off the interval: nothing marked
        assert mark_table(frame.assign(bias_mean=0.0), "n_phi", "n_m", value) is None
        assert coverage_note(frame, value) is None
    assert mark_table(frame.assign(coverage_high=0.99), "n_phi", "n_m", "eps") is None


def test_expected_counts_mark_an_interval_that_misses_alpha(surface):
    # One replicate: coverage 0 (its Wilson interval 0 to 0.79) where the interval at the
    # expected counts misses α; 1 (0.21 to 1) where it holds it.
    frame = surface[surface.rho == 0.7]
    misses = (frame.n_m == 10000).to_numpy()
    frame = frame.assign(
        coverage=np.where(misses, 0.0, 1.0),
        coverage_low=np.where(misses, 0.0, 0.21),
        coverage_high=np.where(misses, 0.79, 1.0),
    )
    assert undercovered(frame).tolist() == misses.tolist()
    assert undercovered(frame, interval=0.5).tolist() == misses.tolist()  # whatever the level
    note = coverage_note(frame, "eps")
    assert "the interval at the expected counts misses the true α" in note


@pytest.mark.parametrize("value", REPLICATE_VALUES)
def test_expected_counts_refuse_values_that_need_replicates(surface, value):
    frame = surface.assign(**{v: 1.0 for v in REPLICATE_VALUES})
    message = refuses(
        lambda: pivot_surface(frame, "n_phi", "n_m", value, {"rho": 0.7}),
        f"--value {value!r}",
        "counts: expected",
        "one replicate",
        "counts: sampled",
    )
    assert len(message) < 400
    sampled = frame.assign(counts="sampled", replicates=400)
    assert pivot_surface(sampled, "n_phi", "n_m", value, {"rho": 0.7}).shape == (3, 3)
    for other in ("eps", "se_mean", "bias_mean", "rmse", "width_mean"):
        frame = frame.assign(bias_mean=0.0, rmse=0.0, width_mean=0.1)
        assert pivot_surface(frame, "n_phi", "n_m", other, {"rho": 0.7}).shape == (3, 3)


def test_the_nominal_level_is_the_sweep_s(surface):
    assert surface_interval(surface) == 0.95  # a surface that does not say: the default
    frame = covering_surface(surface)
    frame.attrs["interval"] = 0.9  # as sweep.load_surface records it
    assert surface_interval(frame) == 0.9 and not undercovered(frame).any()
    assert surface_interval(frame, 0.99) == 0.99
    refuses(lambda: surface_interval(frame, 1.5), "interval", "(0, 1)")
