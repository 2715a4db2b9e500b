"""How a sweep file's numbers are kept: to 12 significant digits, so that 0.1 + 0.2 is 0.3
and a configuration's values (and so its ``config_id``) do not depend on how they were
written or computed."""

from __future__ import annotations

__all__ = ["SIGNIFICANT", "canonical_number"]

#: Significant digits a sweep file's values keep.
SIGNIFICANT = 12


def canonical_number(value: float) -> float:
    """``value`` to :data:`SIGNIFICANT` significant digits (0.1 + 0.2 is 0.3; −0.0 is 0.0)."""
    return float(f"{value:.{SIGNIFICANT}g}") + 0.0
