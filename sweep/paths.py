"""Where a command may write: checked before any work, so that nothing fails after it."""

from __future__ import annotations

import os
from pathlib import Path

from binmetric_sweep.sweep.errors import SweepError

__all__ = ["check_parents"]


def check_parents(path: str | os.PathLike, option: str) -> None:
    """Refuse ``path`` (one line naming ``option``) where the nearest of its ancestors that
    exists is not a directory: nothing could be made there. Missing ones may be created."""
    path = Path(path)
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise SweepError(
                    f"{option}: {str(path)!r} cannot be made: {str(parent)!r} is a file"
                )
            return
