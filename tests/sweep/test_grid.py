"""Grid expansion: Cartesian products, ties, unions without duplicates, stable ids."""

from __future__ import annotations

import numpy as np
import pytest

from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.spec.config import load_sweep
from binmetric_sweep.sweep.spec.grid import expand_grid, id_words

from .helpers import CONFIGS, tiny


def test_product_ties_and_shared_paired_set():
    table = expand_grid(load_sweep(tiny()))
    assert len(table) == 2 * 2 * 2 * 2
    assert (table["eta"] == table["rho"]).all()
    assert (table["n_rho_eta"] == table["n_phi"]).all() and table["shared_paired"].all()
    assert (table["psi"] == table["alpha"]).all()
    assert table["config_id"].is_unique
    assert list(table["n_m"][:2]) == [0, 1000]  # the last axis varies fastest


def test_known_and_separate_paired_sets():
    grid = {**tiny()["grid"], "n_rho_eta": "known"}
    table = expand_grid(load_sweep(tiny(grid=grid)))
    assert table["rho_eta_known"].all() and table["n_rho_eta"].isna().all()
    grid = {**tiny()["grid"], "n_rho_eta": [50, 200], "psi": [0.5]}
    table = expand_grid(load_sweep(tiny(grid=grid)))
    assert len(table) == 32 and not table["shared_paired"].any()
    assert set(table["n_rho_eta"]) == {50, 200} and (table["psi"] == 0.5).all()


def test_union_of_blocks_drops_duplicates_and_ids_do_not_depend_on_position():
    one = tiny()["grid"]
    other = {**one, "alpha": [0.6, 0.9]}
    both = expand_grid(load_sweep(tiny(grid=[one, other])))
    assert len(both) == 16 + 8  # alpha = 0.6 appears in both blocks
    alone = expand_grid(load_sweep(tiny(grid=other)))
    merged = both.set_index("config_id").loc[alone["config_id"]].reset_index()
    assert merged.equals(alone)


def test_legacy_grid_has_the_documented_size():
    table = expand_grid(load_sweep(CONFIGS / "legacy-grid.yaml"))
    assert len(table) == 158_400 and table["config_id"].is_unique


def test_too_large_a_grid_is_refused_with_its_size():
    grid = {**tiny()["grid"], "n_m": {"range": [0, 1_000_000, 1]}}
    with pytest.raises(SweepError, match=r"grid: .*8,000,000 configurations.*--max-configurations"):
        expand_grid(load_sweep(tiny(grid=grid, replicates=1)))
    assert len(expand_grid(load_sweep(tiny()), max_configurations=48)) == 16


def test_id_words_split_63_bit_ids():
    ids = np.array([0, 1, 2**32, 2**63 - 1], np.int64)
    words = id_words(ids)
    assert words.dtype == np.uint32
    back = words[:, 0].astype(np.uint64) | (words[:, 1].astype(np.uint64) << np.uint64(32))
    assert (back.astype(np.int64) == ids).all()


def test_sizes_in_scientific_notation_are_the_same_configurations():
    """``n_m: 1e3`` (a string to YAML) is the configuration ``n_m: 1000`` is: same ids."""
    text = "name: s\ngrid: {{alpha: [0.3, 0.6], rho: 0.8, eta: rho, n_phi: {}, n_m: {}}}\n"
    written = expand_grid(load_sweep(text.format("[0, 1e2]", "[1e3, 2.5e3]")))
    plain = expand_grid(load_sweep(text.format("[0, 100]", "[1000, 2500]")))
    assert written.equals(plain) and len(written) == 8
