"""Preference sweeps: their grid blocks, configurations and lane designs.

``ratings: preference`` in a sweep file (MODEL.md, "Ratings with more than two
classes, and several judges"): a human and J judges see outputs A (shown first) and
B and say which is better or that they tie; classes (B better, tie, A better) with
values (0, ½, 1), so θ is A's win rate with ties counted half. A block's axes set
the class shares (``win``, ``tie``), each judge's confusion by the family of
:func:`kernels.categorical.families.preference_confusion` (``accuracy``,
``tie_rate``, ``position_bias``), the number of judges and how often a later judge
copies the first (``judges``, ``copy_rate``: :func:`kernels.categorical.families.copying_judges`),
the posterior's model of them (``judge_model``), and the sizes (``n_phi``,
``n_rho_eta``, ``n_m``) as a binary block does. Every judge of a configuration has the
same confusion; a separate paired set has the configuration's class shares (ψ = π).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from binmetric_sweep.kernels.categorical.counts import CategoricalDesign, Layout
from binmetric_sweep.kernels.categorical.families import (
    PREFERENCE_VALUES,
    copying_judges,
    preference_confusion,
    preference_shares,
)
from binmetric_sweep.kernels.paired import PairedKind
from binmetric_sweep.sweep.errors import SweepError, shown
from binmetric_sweep.sweep.spec.values import canonical_number
from binmetric_sweep.sweep.storage.columns import SURFACE, columns_of

__all__ = [
    "INDEPENDENT",
    "JOINT",
    "JUDGE_MODELS",
    "JudgeModel",
    "PREFERENCE_COLUMNS",
    "preference_block_table",
    "expand_preference_grid",
    "preference_layout",
    "independent_judges",
    "preference_lane_designs",
    "preference_id_text",
    "with_config_ids",
]

#: The rates that set a preference configuration (the judges' number too).
PREFERENCE_PARAMETERS = (
    "win",
    "tie",
    "accuracy",
    "tie_rate",
    "position_bias",
    "judges",
    "copy_rate",
)


@dataclass(frozen=True)
class JudgeModel:
    """How the posterior models several judges (a preference grid's ``judge_model`` axis,
    ``sweep compare --judge-model``): one value per model, :data:`JUDGE_MODELS` by name.

    Attributes:
        name: as the sweep file's axis, the flag and the settings spell it.
        description: the model in words, for ``--help``.
        independent: the judges err independently given the true class (each judge its
            own K × K confusion); otherwise their joint verdict has a free distribution
            per true class (any correlation). One model for one judge.
    """

    name: str
    description: str
    independent: bool

    @staticmethod
    def of(given: str | JudgeModel, field: str = "--judge-model") -> JudgeModel:
        """The model of :data:`JUDGE_MODELS` that ``given`` names (or is).

        Raises:
            SweepError: not a registered model (one line naming ``field``).
        """
        if isinstance(given, JudgeModel) and JUDGE_MODELS.get(given.name) == given:
            return given
        if isinstance(given, str) and given in JUDGE_MODELS:
            return JUDGE_MODELS[given]
        allowed = ", ".join(JUDGE_MODELS)
        raise SweepError(f"{field}: {shown(given)} is not allowed; allowed: {allowed}")


#: The judges' joint verdict has its own distribution per true class: any correlation
#: between them (L − 1 free rates per class).
JOINT = JudgeModel(
    "joint", "the judges' joint verdict, any correlation between them", independent=False
)
#: Each judge its own confusion, independent of the others given the truth.
INDEPENDENT = JudgeModel(
    "independent", "each judge's own confusion, independent given the truth", independent=True
)
#: The judge models by name, the default first.
JUDGE_MODELS = {m.name: m for m in (JOINT, INDEPENDENT)}

#: The configurations table of a preference sweep: the registry's categorical columns.
PREFERENCE_COLUMNS = tuple(
    c.name for c in columns_of(SURFACE, "preference") if c.source == "configuration"
)


def preference_block_table(block) -> pd.DataFrame:
    """A preference block's configurations (a :class:`sweep.spec.config.PreferenceBlock`:
    its Cartesian product, the last axis fastest), without ``config_id``: columns
    :data:`PREFERENCE_COLUMNS` but that one."""
    table = block_product(block)
    table["theta"] = [
        canonical_number(w + 0.5 * t) for w, t in zip(table["win"], table["tie"], strict=True)
    ]
    return table


def block_product(block) -> pd.DataFrame:
    """A categorical block's Cartesian product over its free axes (the last fastest), with
    the paired design's and the judges' columns settled: ``n_rho_eta`` (N_Φ for a shared
    paired set, 0 where the confusion is known), ``copy_rate`` and ``judge_model``
    (one judge copies no one and its joint verdict is its own, and no model of the judges
    estimates a known confusion), ``confusion_known``, ``shared_paired`` and ``paired``
    (the :class:`kernels.paired.PairedKind`)."""
    free = block.free_axes()
    grids = np.meshgrid(*(np.asarray(getattr(block, a)) for a in free), indexing="ij")
    table = pd.DataFrame({a: g.ravel() for a, g in zip(free, grids, strict=True)})
    paired = block.paired
    if paired.shared:
        table["n_rho_eta"] = table["n_phi"]
    elif paired.known:
        table["n_rho_eta"] = 0.0
    table.loc[table["judges"] == 1, "copy_rate"] = 0.0
    table["judge_model"] = table["judge_model"].astype(object)
    table.loc[(table["judges"] == 1) | paired.known, "judge_model"] = JOINT.name
    table["confusion_known"] = paired.known
    table["shared_paired"] = paired.shared
    table["paired"] = paired
    return table


def paired_text(row: dict) -> str:
    """``N_Φ|N_M|paired`` and the judge model's ``|independent`` (nothing for joint): the
    tail of a categorical configuration's id text."""
    kind: PairedKind = row["paired"]
    tail = f"separate|{int(row['n_rho_eta'])}" if kind.separate else kind.value
    model = "" if row["judge_model"] == JOINT.name else f"|{row['judge_model']}"
    return f"{int(row['n_phi'])}|{int(row['n_m'])}|{tail}{model}"


def preference_id_text(row: dict) -> str:
    """``preference|win|tie|accuracy|tie_rate|position_bias|judges|copy|N_Φ|N_M|paired``, and
    ``|independent`` for judges modelled as independent: the text of one preference
    configuration hashed into its ``config_id`` (the joint model's ids are the ones of files
    written before the ``judge_model`` axis)."""
    rates = "|".join(
        repr(float(row[a])) for a in ("win", "tie", "accuracy", "tie_rate", "position_bias")
    )
    return f"preference|{rates}|{int(row['judges'])}|{float(row['copy_rate'])!r}|{paired_text(row)}"


def _id(text: str) -> int:
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


def expand_preference_grid(blocks) -> pd.DataFrame:
    """The configurations of a preference sweep's blocks, one row each (columns
    :data:`PREFERENCE_COLUMNS`), duplicates removed, in block order. Sizes and
    ``judges`` are int64; ``n_rho_eta`` a nullable Int64, null where the confusion is
    known."""
    table = pd.concat([preference_block_table(b) for b in blocks], ignore_index=True)
    return configurations(table, preference_id_text, PREFERENCE_COLUMNS)


def configurations(table: pd.DataFrame, id_text, columns: tuple[str, ...]) -> pd.DataFrame:
    """The configurations table of a categorical sweep's blocks' products (concatenated, in
    block order): each row's ``config_id`` hashed from ``id_text(row)``, duplicates removed,
    sizes and ``judges`` int64, ``n_rho_eta`` a nullable Int64 (null where the confusion
    is known), the ``columns`` in order."""
    table = with_config_ids(table, id_text)
    for name in ("n_phi", "n_m", "judges"):
        table[name] = table[name].astype(np.int64)
    n_rho_eta = table["n_rho_eta"].astype(np.int64).astype("Int64")
    table["n_rho_eta"] = n_rho_eta.mask(table["confusion_known"])
    return table[list(columns)]


def with_config_ids(table: pd.DataFrame, id_text) -> pd.DataFrame:
    """``table`` with each row's ``config_id`` hashed from ``id_text(row)`` (63 bits), rows
    whose id an earlier row has removed."""
    table["config_id"] = np.fromiter(
        (_id(id_text(row)) for row in table.to_dict("records")), np.int64, len(table)
    )
    return table.drop_duplicates("config_id", ignore_index=True)


def preference_layout(configurations: pd.DataFrame) -> Layout:
    """The :class:`Layout` of configurations that share their number of judges."""
    judges = np.unique(configurations["judges"].to_numpy())
    if len(judges) != 1:
        raise ValueError(f"preference configurations with {len(judges)} numbers of judges")
    return Layout(PREFERENCE_VALUES, int(judges[0]))


def independent_judges(configurations: pd.DataFrame) -> bool:
    """Whether the posterior of configurations that share their ``judge_model`` takes the
    judges as independent given the truth."""
    models = pd.unique(configurations["judge_model"])
    if len(models) != 1:
        raise ValueError(f"preference configurations with {len(models)} judge models")
    return JudgeModel.of(models[0], "judge_model").independent


def preference_lane_designs(configurations: pd.DataFrame, replicates: int) -> CategoricalDesign:
    """``(C·R,)`` lane designs of preference configurations that share their number of
    judges, each configuration repeated for its R replicates."""

    def column(name, dtype=float):
        return np.repeat(configurations[name].to_numpy(dtype=dtype, na_value=0), replicates)

    shares = np.asarray(preference_shares(column("win"), column("tie")))
    single = preference_confusion(column("accuracy"), column("tie_rate"), column("position_bias"))
    return lane_designs(configurations, replicates, shares, single)


def lane_designs(
    configurations: pd.DataFrame, replicates: int, shares: np.ndarray, single: np.ndarray
) -> CategoricalDesign:
    """``(C·R,)`` lane designs of categorical configurations that share their number of
    judges (repeated for R replicates each), from their lanes' ``(C·R, K)`` class shares
    and ``(C·R, K, K)`` confusion of one judge: the judges copy the first at the
    configuration's ``copy_rate`` (:func:`kernels.categorical.families.copying_judges`), and
    a separate paired set has the configuration's class shares (ψ = π)."""

    def column(name, dtype=float):
        return np.repeat(configurations[name].to_numpy(dtype=dtype, na_value=0), replicates)

    judges = np.unique(configurations["judges"].to_numpy())
    if len(judges) != 1:
        raise ValueError(f"categorical configurations with {len(judges)} numbers of judges")
    confusion = np.asarray(copying_judges(single, int(judges[0]), column("copy_rate")))
    known = column("confusion_known", bool)
    shared = column("shared_paired", bool)
    n_phi = column("n_phi")
    return CategoricalDesign(
        shares=shares,
        confusion=confusion,
        n_phi=n_phi,
        n_rho_eta=np.where(shared, n_phi, np.where(known, 0.0, column("n_rho_eta"))),
        paired_shares=shares,
        n_m=column("n_m"),
        shared_paired=shared,
        known=known,
    )
