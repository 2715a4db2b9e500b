"""The rating model as a value (issue 65, item 2): the layers take what they need of it."""

from __future__ import annotations

import jax
import numpy as np

from binmetric_sweep.kernels.paired import KNOWN, SHARED, kinds_of_flags, separate
from binmetric_sweep.sweep.spec.config import load_sweep
from binmetric_sweep.sweep.spec.grid import config_id, expand_grid
from binmetric_sweep.sweep.spec.lanes import lane_counts, lane_keys
from binmetric_sweep.sweep.spec.rating_model import BINARY
from binmetric_sweep.sweep.storage.columns import CONFIG_COLUMNS, COUNT_COLUMNS

from .helpers import tiny


def test_the_binary_model_names_the_registry_s_columns():
    assert BINARY.count_fields == COUNT_COLUMNS
    assert set(BINARY.parameters) <= set(CONFIG_COLUMNS) and BINARY.truth in BINARY.parameters


def test_config_ids_are_the_binary_text_s_as_before():
    """The ids 0.38.0 gave (computed by it): finished sweeps resume, numbers stay."""
    assert config_id(0.6, 0.7, 0.7, 100, 100, 0.6, 1000, SHARED.kind) == 1973320012861787678
    design = separate(60, 0.5)
    assert config_id(0.3, 0.8, 0.7, 40, 60, 0.5, 400, design.kind) == 4608172870904518685
    assert config_id(0.5, 0.7, 0.7, 10, 0, 0.5, 1000, KNOWN.kind) == 279995709370039235


def test_another_model_s_text_and_counts_are_what_the_layers_use():
    spec = load_sweep(tiny(counts="expected", replicates=1))
    configs = expand_grid(spec)
    other = BINARY._replace(
        name="half-metric",
        id_text=lambda *values: "half|" + BINARY.id_text(*values),
        expected_counts=lambda d: BINARY.expected_counts(d._replace(n_m=0.5 * d.n_m)),
    )
    row = configs.iloc[-1]
    values = [row[a].item() for a in ("alpha", "rho", "eta", "n_phi", "n_rho_eta", "psi", "n_m")]
    kind = kinds_of_flags(row["shared_paired"], row["rho_eta_known"]).item()
    ours = config_id(*values, kind, model=BINARY)
    theirs = config_id(*values, kind, model=other)
    assert ours == row["config_id"] and theirs != ours
    designs = BINARY.lane_designs(configs, 1)
    keys = lane_keys(0, np.zeros((len(configs), 2), np.uint32), np.zeros(len(configs)))
    base = lane_counts(designs, keys, "expected", BINARY)
    half = lane_counts(designs, keys, "expected", other)
    assert np.array_equal(half.n_m, 0.5 * base.n_m) and not np.array_equal(half.m_pos, base.m_pos)
    assert np.all(np.abs(half.m_pos - 0.5 * base.m_pos) <= 1)  # rounded p·N_M/2
    # The same layout; every other count the binary model's.
    assert jax.tree.structure(base) == jax.tree.structure(half)
    for name in BINARY.count_fields[:-1]:
        assert np.array_equal(getattr(half, name), getattr(base, name)), name
