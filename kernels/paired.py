"""The paired design: how ρ and η are learnt, one value for every layer.

Three kinds (docs/model.md): the human-rated items are the paired ones
(:data:`SHARED`, N_ρη = N_Φ, P = n₊); a separate paired set of N_ρη items, a
share ψ of them adequate (:func:`separate`); or ρ and η are known numbers and
nothing is paired (:data:`KNOWN`).

Each edge has its own spelling and one parse function, here or at the edge:
a sweep file's ``n_rho_eta: n_phi | known | [sizes]`` (``sweep.spec.config``),
``sweep plan``'s ``--n-rho-eta shared | known | N`` (``sweep.plan.spec``), and the
configurations table's two bools ``shared_paired``, ``rho_eta_known``
(:func:`from_flags`, :func:`kinds_of_flags`). The layers then ask the value
(:attr:`PairedDesign.shared`, :attr:`~PairedDesign.known`,
:attr:`~PairedDesign.separate`), and the config_id text is
:meth:`PairedDesign.id_text`. Pure Python: no numerics here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

__all__ = [
    "KNOWN",
    "SHARED",
    "PairedDesign",
    "PairedKind",
    "flags_of_kinds",
    "from_flags",
    "kinds_of_flags",
    "separate",
]


class PairedKind(enum.Enum):
    """The kind of a paired design; its value is the config_id word."""

    SHARED = "shared"
    SEPARATE = "separate"
    KNOWN = "known"

    @property
    def shared(self) -> bool:
        """The human-rated items are the paired ones (N_ρη = N_Φ, ψ = α)."""
        return self is PairedKind.SHARED

    @property
    def known(self) -> bool:
        """ρ and η are known numbers: no paired set (N_ρη = 0)."""
        return self is PairedKind.KNOWN

    @property
    def separate(self) -> bool:
        """A separate paired set of N_ρη items, a share ψ of them adequate."""
        return self is PairedKind.SEPARATE


@dataclass(frozen=True)
class PairedDesign:
    """One paired design.

    Attributes:
        kind: shared, separate or known.
        n_rho_eta: the size N_ρη of a separate paired set (None for the others).
        psi: the share ψ of adequate items of a separate set; None means α
            (the only value for shared and known).
    """

    kind: PairedKind
    n_rho_eta: int | None = None
    psi: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, PairedKind):
            raise TypeError(f"PairedDesign: kind {self.kind!r} is not a PairedKind")
        if self.kind.separate:
            n = self.n_rho_eta
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
                raise ValueError(f"PairedDesign: a separate set needs n_rho_eta >= 0, not {n!r}")
            if self.psi is not None and not 0.0 <= self.psi <= 1.0:
                raise ValueError(f"PairedDesign: psi {self.psi!r} is not in [0, 1]")
        elif self.n_rho_eta is not None or self.psi is not None:
            raise ValueError(
                f"PairedDesign: a {self.kind.value} paired design has no n_rho_eta or psi"
            )

    @property
    def shared(self) -> bool:
        """The human-rated items are the paired ones (N_ρη = N_Φ, ψ = α)."""
        return self.kind.shared

    @property
    def known(self) -> bool:
        """ρ and η are known numbers: no paired set."""
        return self.kind.known

    @property
    def separate(self) -> bool:
        """A separate paired set of :attr:`n_rho_eta` items."""
        return self.kind.separate

    @property
    def n_pair(self) -> int:
        """N_ρη of a separate paired set, else 0 (what the paired set adds to the cost)."""
        return int(self.n_rho_eta) if self.kind.separate else 0

    def id_text(self, psi: float | None = None) -> str:
        """The paired design's part of the config_id text: ``shared``, ``known`` or
        ``separate|N|ψ`` (ψ's repr; ``psi`` gives it where :attr:`psi` is None, i.e. α)."""
        if not self.kind.separate:
            return self.kind.value
        value = self.psi if self.psi is not None else psi
        if value is None:
            raise ValueError("PairedDesign.id_text: a separate set's psi is needed")
        return f"separate|{int(self.n_rho_eta)}|{value!r}"


#: The human-rated items are the paired ones.
SHARED = PairedDesign(PairedKind.SHARED)
#: ρ and η are known numbers.
KNOWN = PairedDesign(PairedKind.KNOWN)


def separate(n_rho_eta: int, psi: float | None = None) -> PairedDesign:
    """A separate paired set of ``n_rho_eta`` items, a share ``psi`` adequate (None: α)."""
    return PairedDesign(PairedKind.SEPARATE, int(n_rho_eta), None if psi is None else float(psi))


def from_flags(shared_paired: bool, rho_eta_known: bool, n_rho_eta=None, psi=None) -> PairedDesign:
    """The design a configurations row's two bools (and N_ρη, ψ) spell.

    Raises:
        ValueError: both bools set.
    """
    kind = kinds_of_flags(shared_paired, rho_eta_known).item()
    return separate(n_rho_eta, psi) if kind.separate else PairedDesign(kind)


def kinds_of_flags(shared_paired, rho_eta_known) -> np.ndarray:
    """Object array of :class:`PairedKind` from the tables' ``shared_paired`` and
    ``rho_eta_known`` bools (scalars or arrays, broadcast).

    Raises:
        ValueError: a lane both shared and known.
    """
    shared, known = np.broadcast_arrays(
        np.asarray(shared_paired, bool), np.asarray(rho_eta_known, bool)
    )
    if np.any(shared & known):
        raise ValueError("a lane's paired set cannot be both shared and known")
    kinds = np.full(shared.shape, PairedKind.SEPARATE, object)
    kinds[shared] = PairedKind.SHARED
    kinds[known] = PairedKind.KNOWN
    return kinds


def flags_of_kinds(kinds) -> tuple[np.ndarray, np.ndarray]:
    """``(shared_paired, rho_eta_known)`` bool arrays of :class:`PairedKind` s (or designs)."""
    kinds = np.asarray(kinds, object)
    shared = np.fromiter((k.shared for k in kinds.ravel()), bool, kinds.size)
    known = np.fromiter((k.known for k in kinds.ravel()), bool, kinds.size)
    return shared.reshape(kinds.shape), known.reshape(kinds.shape)
