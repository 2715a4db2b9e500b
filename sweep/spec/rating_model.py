"""What is rated and how: one value the layers take, :data:`BINARY` its first instance.

A rating model says what a campaign observes and what the estimators
estimate. :data:`BINARY` is MODEL.md's model: one human label and one binary
judge label per item, parameters (α, ρ, η), estimand α, the counts of
:class:`kernels.counts.Counts`. The layers ask the value, not the model's
functions by name: the grid hashes :attr:`RatingModel.id_text` into each
configuration's ``config_id``, a shard builds its lanes' designs with
:attr:`~RatingModel.lane_designs` and their counts with
:attr:`~RatingModel.expected_counts` or :attr:`~RatingModel.draw_counts` (in
:func:`sweep.spec.lanes.lane_counts`), stores :attr:`~RatingModel.count_fields`
in each fits row, and summarises each estimator against the configuration's
:attr:`~RatingModel.truth` column.

The log density and the exact quadrature rules are the binary model's in
:mod:`sweep.execution.fits` (through :mod:`sweep.execution.cascade` and the NUTS programs); a
second model brings its own there (docs/design.md, "Where a second rating
model plugs in").
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np
import pandas as pd

from binmetric_sweep.kernels import counts as binary_counts
from binmetric_sweep.kernels.arena.simulate import draw_arena
from binmetric_sweep.kernels.categorical import counts as categorical_counts
from binmetric_sweep.kernels.categorical.counts import Layout
from binmetric_sweep.kernels.counts import Counts, Design
from binmetric_sweep.kernels.paired import PairedKind, kinds_of_flags, separate
from binmetric_sweep.sweep.spec import arena, categorical, scale
from binmetric_sweep.sweep.spec.lanes import lane_designs

__all__ = [
    "ARENA",
    "BINARY",
    "PREFERENCE",
    "RatingModel",
    "binary_id_text",
    "binary_lane_designs",
    "scale_model",
]


class RatingModel(NamedTuple):
    """One rating model: what every layer needs of what is rated and how.

    Attributes:
        name: the model's name.
        parameters: the configuration columns that are its rates (binary: alpha,
            rho, eta).
        truth: the configuration column its estimators estimate (binary: alpha); ``""``
            where each replicate draws its own truth (an arena's strengths).
        count_fields: the fields of its counts a fits row stores, in order.
        lane_designs: ``(configurations, replicates) -> design``: the ``(C·R,)`` lane
            designs of a configurations table, each row repeated for its R replicates.
        expected_counts: ``design -> counts`` of one lane (scalars): each count at its
            rounded expected value (``counts: expected``); None for a model whose sweeps
            sample every replicate (an arena).
        draw_counts: ``(key, design) -> counts`` of one lane: one replicate's draw
            (``counts: sampled``).
        id_text: the text of one configuration hashed into its ``config_id``: binary
            ``(alpha, rho, eta, n_phi, n_rho_eta, psi, n_m, paired) -> str`` (values as the
            configurations table has them; ``paired`` a :class:`kernels.paired.PairedKind`);
            categorical ``(row: dict) -> str``.
        columns: the column registry's model whose columns its tables have
            (:data:`sweep.storage.columns.MODELS`).
        expand: ``blocks -> configurations``: the configurations table of a sweep's grid
            blocks (with ``config_id``, duplicates removed); None for the binary model's,
            :func:`sweep.spec.grid.expand_binary_grid`.
        layout: ``configurations -> Layout``: the categorical layout (classes' values,
            judges) of configurations that share one; None for the binary model, whose
            counts have one layout.
        layout_columns: the configuration columns that set a lane's layout or model (a
            shard never spans a change of them, :func:`sweep.execution.shards.make_shards`).
        independent_judges: ``configurations -> bool``: whether the posterior of
            configurations that share their layout columns takes the judges as independent
            given the truth; None for the binary model (one judge).
    """

    name: str
    parameters: tuple[str, ...]
    truth: str
    count_fields: tuple[str, ...]
    lane_designs: Callable[[pd.DataFrame, int], Design]
    expected_counts: Callable[[Design], Counts] | None
    draw_counts: Callable[..., Counts]
    id_text: Callable[..., str]
    columns: str = "binary"
    expand: Callable[..., pd.DataFrame] | None = None
    layout: Callable[[pd.DataFrame], Layout] | None = None
    layout_columns: tuple[str, ...] = ()
    independent_judges: Callable[[pd.DataFrame], bool] | None = None


def binary_id_text(alpha, rho, eta, n_phi, n_rho_eta, psi, n_m, paired: PairedKind) -> str:
    """``α|ρ|η|N_Φ|N_M|paired`` (reprs and integers); ``n_rho_eta`` and ``psi`` enter only for a
    separate paired set, where they mean something
    (:meth:`kernels.paired.PairedDesign.id_text`)."""
    tail = separate(n_rho_eta, psi).id_text() if paired.separate else paired.value
    return f"{alpha!r}|{rho!r}|{eta!r}|{int(n_phi)}|{int(n_m)}|{tail}"


def binary_lane_designs(configurations: pd.DataFrame, replicates: int) -> Design:
    """``(C·R,)`` binary lane designs (:func:`sweep.spec.lanes.lane_designs`) of a configurations
    table, each configuration repeated for its R replicates."""

    def column(name, dtype=float):
        return np.repeat(configurations[name].to_numpy(dtype=dtype, na_value=0), replicates)

    return lane_designs(
        *(column(name) for name in ("alpha", "rho", "eta", "n_phi", "n_m")),
        paired=kinds_of_flags(column("shared_paired", bool), column("rho_eta_known", bool)),
        n_rho_eta=column("n_rho_eta"),
        psi=column("psi"),
    )


#: One human label and one binary judge label per item (MODEL.md).
BINARY = RatingModel(
    name="binary",
    parameters=("alpha", "rho", "eta"),
    truth="alpha",
    count_fields=("n_pos", "n_tp", "n_pos_paired", "n_tn", "n_neg_paired", "m_pos"),
    lane_designs=binary_lane_designs,
    expected_counts=binary_counts.expected_counts,
    draw_counts=binary_counts.draw_counts,
    id_text=binary_id_text,
)


#: Preferences between two outputs with ties, by a human and J judges (MODEL.md, "Ratings
#: with more than two classes, and several judges"; :mod:`sweep.spec.categorical`).
PREFERENCE = RatingModel(
    name="preference",
    parameters=categorical.PREFERENCE_PARAMETERS,
    truth="theta",
    count_fields=("human", "paired", "judged"),
    lane_designs=categorical.preference_lane_designs,
    expected_counts=categorical_counts.expected_counts,
    draw_counts=categorical_counts.draw_counts,
    id_text=categorical.preference_id_text,
    columns="preference",
    expand=categorical.expand_preference_grid,
    layout=categorical.preference_layout,
    layout_columns=("judges", "confusion_known", "judge_model"),
    independent_judges=categorical.independent_judges,
)


def scale_model(settings: scale.ScaleSettings) -> RatingModel:
    """An ordered scale or explicit classes with the values, share vectors and confusion
    matrices of ``settings`` (a sweep file's ``ratings: scale`` or ``classes``;
    :mod:`sweep.spec.scale`)."""
    return RatingModel(
        name="scale",
        parameters=scale.SCALE_PARAMETERS,
        truth="theta",
        count_fields=PREFERENCE.count_fields,
        lane_designs=partial(scale.scale_lane_designs, settings),
        expected_counts=categorical_counts.expected_counts,
        draw_counts=categorical_counts.draw_counts,
        id_text=partial(scale.scale_id_text, settings),
        columns="scale",
        expand=partial(scale.expand_scale_grid, settings),
        layout=partial(scale.scale_layout, settings),
        layout_columns=PREFERENCE.layout_columns,
        independent_judges=categorical.independent_judges,
    )


#: Leaderboards of many systems from battles with ties, a human verdict on some and J
#: judges' on all (MODEL.md, "Battles"; :mod:`sweep.spec.arena`). A lane's "design" is its
#: :class:`kernels.arena.simulate.ArenaSetting` and its counts are its true strengths and
#: battles by cell (:func:`kernels.arena.simulate.draw_arena`).
ARENA = RatingModel(
    name="arena",
    parameters=arena.ARENA_PARAMETERS,
    truth="",
    count_fields=("human_verdicts",),
    lane_designs=arena.arena_lane_settings,
    expected_counts=None,
    draw_counts=draw_arena,
    id_text=arena.arena_id_text,
    columns="arena",
    expand=arena.expand_arena_grid,
    layout_columns=("systems", "judges", "judge_model"),
)
