"""Configurations: expand a sweep's grid into one row per configuration.

The table is the union of the grid's blocks in a fixed order (blocks in file
order, each block's Cartesian product with its last axis varying fastest),
without duplicates. Each configuration carries a 63-bit ``config_id``, a hash of
its parameter values alone, so its random numbers (and therefore its results)
do not depend on where it sits in the grid, in a shard or in a batch.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from binmetric_sweep.kernels.paired import PairedKind
from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.spec.config import AXES, SweepSpec
from binmetric_sweep.sweep.spec.lanes import id_words
from binmetric_sweep.sweep.spec.rating_model import BINARY, RatingModel
from binmetric_sweep.sweep.storage.columns import CONFIG_COLUMNS

__all__ = [
    "CONFIG_COLUMNS",
    "DEFAULT_MAX_CONFIGURATIONS",
    "config_id",
    "expand_binary_grid",
    "expand_grid",
    "id_words",
]

# CONFIG_COLUMNS, the configurations table's columns in order, is the column registry's
# (sweep.storage.columns), exported from here as before.
#: Refuse sweeps with more fits (configurations × replicates) than this unless raised.
DEFAULT_MAX_CONFIGURATIONS = 5_000_000


def config_id(
    alpha, rho, eta, n_phi, n_rho_eta, psi, n_m, paired: PairedKind, model: RatingModel = BINARY
) -> int:
    """The 63-bit identifier of one configuration: a hash of the rating model's text of
    its values (:attr:`sweep.spec.rating_model.RatingModel.id_text`; binary: ``n_rho_eta`` and
    ``psi`` enter only for a separate paired set, where they mean something).
    """
    text = model.id_text(alpha, rho, eta, n_phi, n_rho_eta, psi, n_m, paired)
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


def _block_table(block) -> pd.DataFrame:
    free = block.free_axes()
    grids = np.meshgrid(*(np.asarray(getattr(block, a)) for a in free), indexing="ij")
    columns = {a: g.ravel() for a, g in zip(free, grids, strict=True)}
    n = len(next(iter(columns.values())))
    paired = block.paired
    for axis in AXES:
        if axis in columns:
            continue
        if axis == "n_rho_eta" and paired.known:  # no axis is tied to it (config's _check_ties)
            columns[axis] = np.zeros(n)
            continue
        target = getattr(block, axis)
        while target not in columns:
            target = getattr(block, target)
        columns[axis] = columns[target]
    table = pd.DataFrame({a: columns[a] for a in AXES})
    if paired.shared:
        table["n_rho_eta"] = table["n_phi"]
        table["psi"] = table["alpha"]
    table["rho_eta_known"] = paired.known
    table["shared_paired"] = paired.shared
    table["paired"] = paired
    return table


def expand_grid(
    spec: SweepSpec, max_configurations: int = DEFAULT_MAX_CONFIGURATIONS
) -> pd.DataFrame:
    """The configurations of a sweep, one row each (columns :data:`CONFIG_COLUMNS`).

    Sizes are int64; ``n_rho_eta`` is a nullable Int64, null when ρ and η are
    known. Raises :class:`SweepError` when the sweep would make more than
    ``max_configurations`` fits (configurations × replicates).
    """
    bound = spec.configurations_upper_bound()
    if bound * spec.replicates > max_configurations:
        raise SweepError(
            f"grid: the sweep makes up to {bound:,} configurations x {spec.replicates:,} "
            f"replicates = {bound * spec.replicates:,} fits, above the limit of "
            f"{max_configurations:,}; raise it with --max-configurations (or "
            "max_configurations= in Python) if you mean it"
        )
    expand = spec.rating_model.expand or expand_binary_grid
    return expand(spec.grid)


def expand_binary_grid(blocks, model: RatingModel = BINARY) -> pd.DataFrame:
    """The configurations of binary grid blocks (:data:`CONFIG_COLUMNS`), in block order,
    duplicates removed (what :func:`expand_grid` gives for a binary sweep)."""
    table = pd.concat([_block_table(b) for b in blocks], ignore_index=True)
    rows = zip(*(table[a].to_numpy().tolist() for a in AXES), table["paired"], strict=True)
    ids = (config_id(*row, model=model) for row in rows)
    table["config_id"] = np.fromiter(ids, np.int64, len(table))
    table = table.drop_duplicates("config_id", ignore_index=True)
    for size in ("n_phi", "n_m"):
        table[size] = table[size].astype(np.int64)
    n_rho_eta = table["n_rho_eta"].astype(np.int64).astype("Int64")
    table["n_rho_eta"] = n_rho_eta.mask(table["rho_eta_known"])
    return table[list(CONFIG_COLUMNS)]
