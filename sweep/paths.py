"""Where a command may write: checked before any work, so that nothing fails after it."""

from __future__ import annotations

import os
from pathlib import Path

from binmetric_sweep.sweep.errors import SweepError

__all__ = ["check_out_dir", "check_parents"]


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


def check_out_dir(out: str | os.PathLike) -> Path:
    """``out`` as a Path, if it can be an output directory (``--out``): a directory, or
    absent where one can be made (missing directories between are created)."""
    directory = Path(out)
    if directory.exists() and not directory.is_dir():
        raise SweepError(f"--out: {str(directory)!r} is a file, not a directory")
    check_parents(directory, "--out")
    return directory
