"""Scale sweeps and explicit classes: their grid blocks, configurations and lane designs.

``ratings: scale`` in a sweep file rates each item on an ordered scale whose classes
are its ``values`` (a 1–5 score: ``values: [1, 2, 3, 4, 5]``); ``ratings: classes``
names its classes (``classes: [bad, fair, good]``) and gives each a value. θ = vᵀπ,
the mean value (MODEL.md, "Ratings with more than two classes, and several judges").

The sweep file names its class-share vectors (``shares:``, a mapping of names to K
shares) and any explicit confusion matrices (``confusions:``, names to K rows of K);
a block's axes pick them by name (``shares``, ``confusion``) or set each judge's
confusion by the family of :func:`kernels.categorical.families.scale_confusion`
(``off_by_one``, ``off_by_more``: distance in the order the classes are listed). The
judges' number, copying and model (``judges``, ``copy_rate``, ``judge_model``) and the
sizes are a preference block's (:mod:`sweep.spec.categorical`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from binmetric_sweep.kernels.categorical.counts import CategoricalDesign, Layout
from binmetric_sweep.kernels.categorical.families import scale_confusion
from binmetric_sweep.sweep.spec.categorical import (
    block_product,
    configurations,
    lane_designs,
    paired_text,
)
from binmetric_sweep.sweep.spec.values import canonical_number
from binmetric_sweep.sweep.storage.columns import SURFACE, columns_of

__all__ = [
    "SCALE_COLUMNS",
    "SCALE_PARAMETERS",
    "ScaleSettings",
    "expand_scale_grid",
    "scale_block_table",
    "scale_id_text",
    "scale_lane_designs",
    "scale_layout",
]

#: The configurations table of a scale (or classes) sweep: the registry's scale columns.
SCALE_COLUMNS = tuple(c.name for c in columns_of(SURFACE, "scale") if c.source == "configuration")
#: The settings that set a scale configuration's rates (the judges' number too).
SCALE_PARAMETERS = ("shares", "off_by_one", "off_by_more", "confusion", "judges", "copy_rate")


class ScaleSettings(NamedTuple):
    """What a scale sweep's configurations refer to by name (hashable: the sweep file's).

    Attributes:
        values: v, the K classes' values in the order listed.
        shares: ``(name, (π_1, …, π_K))`` for each named class-share vector.
        confusions: ``(name, K rows of K)`` for each named confusion matrix of one judge.
    """

    values: tuple[float, ...]
    shares: tuple[tuple[str, tuple[float, ...]], ...]
    confusions: tuple[tuple[str, tuple[tuple[float, ...], ...]], ...] = ()

    def share_vector(self, name: str) -> tuple[float, ...]:
        """π of the vector named ``name``."""
        return dict(self.shares)[name]

    def confusion_matrix(self, name: str) -> tuple[tuple[float, ...], ...]:
        """C of the matrix named ``name``."""
        return dict(self.confusions)[name]


def scale_block_table(settings: ScaleSettings, block) -> pd.DataFrame:
    """A scale block's configurations (a :class:`sweep.spec.config.ScaleBlock`: its Cartesian
    product, the last axis fastest), without ``config_id``: columns :data:`SCALE_COLUMNS`
    but that one. A block with named confusions has null ``off_by_one``/``off_by_more``; one
    with the family a null ``confusion``."""
    table = block_product(block)
    for name in ("off_by_one", "off_by_more"):
        if name not in table:
            table[name] = np.nan
    if "confusion" not in table:
        table["confusion"] = None
    table["shares"] = table["shares"].astype(object)
    table["confusion"] = table["confusion"].astype(object)
    values = np.asarray(settings.values)
    table["theta"] = [
        canonical_number(float(values @ np.asarray(settings.share_vector(name))))
        for name in table["shares"]
    ]
    return table


def scale_id_text(settings: ScaleSettings, row: dict) -> str:
    """``scale|values|π|confusion|judges|copy|N_Φ|N_M|paired`` (and ``|independent``): the
    text of one configuration hashed into its ``config_id``. The vectors and matrices enter
    by their numbers, not their names; the confusion as ``off|a|b`` for the family."""

    def numbers(xs) -> str:
        return ",".join(repr(float(x)) for x in xs)

    name = row["confusion"]
    if pd.isna(name):
        confusion = f"off|{float(row['off_by_one'])!r}|{float(row['off_by_more'])!r}"
    else:
        confusion = ";".join(numbers(r) for r in settings.confusion_matrix(name))
    return (
        f"scale|{numbers(settings.values)}|{numbers(settings.share_vector(row['shares']))}|"
        f"{confusion}|{int(row['judges'])}|{float(row['copy_rate'])!r}|{paired_text(row)}"
    )


def expand_scale_grid(settings: ScaleSettings, blocks) -> pd.DataFrame:
    """The configurations of a scale sweep's blocks, one row each (columns
    :data:`SCALE_COLUMNS`), duplicates removed, in block order."""
    table = pd.concat([scale_block_table(settings, b) for b in blocks], ignore_index=True)
    return configurations(table, lambda row: scale_id_text(settings, row), SCALE_COLUMNS)


def scale_layout(settings: ScaleSettings, configurations: pd.DataFrame) -> Layout:
    """The :class:`Layout` of configurations that share their number of judges."""
    judges = np.unique(configurations["judges"].to_numpy())
    if len(judges) != 1:
        raise ValueError(f"scale configurations with {len(judges)} numbers of judges")
    return Layout(settings.values, int(judges[0]))


def scale_lane_designs(
    settings: ScaleSettings, configurations: pd.DataFrame, replicates: int
) -> CategoricalDesign:
    """``(C·R,)`` lane designs of scale configurations that share their number of judges,
    each configuration repeated for its R replicates."""
    k = len(settings.values)
    shares = np.array([settings.share_vector(name) for name in configurations["shares"]])
    single = np.empty((len(configurations), k, k))
    named = configurations["confusion"].notna().to_numpy()
    for i in np.flatnonzero(named):
        single[i] = settings.confusion_matrix(configurations["confusion"].iloc[i])
    if (~named).any():
        family = configurations.loc[~named, ["off_by_one", "off_by_more"]].to_numpy(float)
        single[~named] = np.asarray(scale_confusion(family[:, 0], family[:, 1], k))
    return lane_designs(
        configurations,
        replicates,
        np.repeat(shares, replicates, axis=0),
        np.repeat(single, replicates, axis=0),
    )
