"""Where a command may write: checked before any work, so that nothing fails after it.

A path is checked by doing what the write will do, once, where it will do it:
a file created and removed in an output directory that exists, or a directory
created and removed in the nearest ancestor that exists when the output's
directory is still to be made. Permission bits (``os.access``) would not do: a
read-only mount, a directory under ``/proc`` or ``/sys``, or a process running
as root all answer them wrongly. A write that fails anyway (the disk fills, the
mount changes) ends in one line too (:func:`writing`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from binmetric_sweep.sweep.errors import SweepError

__all__ = ["check_file_path", "check_out_dir", "check_parents", "os_reason", "writing"]

#: Prefix of the entries :func:`check_out_dir` and :func:`check_file_path` create and remove.
PROBE_PREFIX = ".binmetric-sweep-probe-"


def os_reason(err: OSError) -> str:
    """The operating system's words for ``err`` (``No such file or directory``)."""
    return err.strerror or str(err)


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


def _nearest_existing(path: Path) -> Path:
    """The nearest of ``path``'s ancestors that exists (``.`` for a relative path)."""
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(".")


def _probe(directory: Path, make: str) -> OSError | None:
    """Create and remove an entry (``make``: "file" or "directory") in ``directory``;
    the error that stopped it, or None."""
    try:
        if make == "directory":
            os.rmdir(tempfile.mkdtemp(prefix=PROBE_PREFIX, dir=directory))
        else:
            handle, name = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=directory)
            os.close(handle)
            os.unlink(name)
    except OSError as err:
        return err
    return None


def _check_can_make(path: Path, directory: Path, option: str) -> None:
    """``directory`` (``path`` or its parent) can be made: its nearest existing ancestor takes
    a new directory (else one line naming ``option``, ``path``, that ancestor and why not)."""
    base = _nearest_existing(directory)
    err = _probe(base, "directory")
    if err is not None:
        raise SweepError(
            f"{option}: {str(path)!r} cannot be made: cannot create a directory in "
            f"{str(base)!r}: {os_reason(err)}"
        )


def check_out_dir(out: str | os.PathLike, option: str = "--out") -> Path:
    """``out`` as a Path, if it can be an output directory (``--out``): a directory a file
    can be created in, or absent where one can be made (missing directories between are
    created when it is written). Else :class:`SweepError`, one line naming ``option``."""
    directory = Path(out)
    try:
        if directory.exists() and not directory.is_dir():
            raise SweepError(f"{option}: {str(directory)!r} is a file, not a directory")
        check_parents(directory, option)
        if not directory.is_dir():
            _check_can_make(directory, directory, option)
            return directory
        failed = _probe(directory, "file")
    except OSError as err:  # the path itself cannot be looked at (too long, a loop, ...)
        raise SweepError(f"{option}: {str(directory)!r}: {os_reason(err)}") from None
    if failed is not None:
        raise SweepError(
            f"{option}: {str(directory)!r} cannot be written: cannot create a file in it: "
            f"{os_reason(failed)}"
        )
    return directory


def check_file_path(path: str | os.PathLike, option: str) -> Path:
    """``path`` as a Path, if a file can be written there (``-o``): not a directory, and its
    directory takes a new file, or can be made. Else :class:`SweepError` naming ``option``."""
    path = Path(path)
    try:
        if path.is_dir():
            raise SweepError(f"{option}: {str(path)!r} is a directory, not a file")
        check_parents(path, option)
        if not path.parent.is_dir():
            _check_can_make(path, path.parent, option)
            return path
        failed = _probe(path.parent, "file")
    except OSError as err:
        raise SweepError(f"{option}: {str(path)!r}: {os_reason(err)}") from None
    if failed is not None:
        raise SweepError(
            f"{option}: {str(path)!r} cannot be written: cannot create a file in "
            f"{str(path.parent)!r}: {os_reason(failed)}"
        )
    return path


@contextlib.contextmanager
def writing(option: str, path: str | os.PathLike) -> Iterator[None]:
    """Turn an :class:`OSError` raised while writing ``path`` into one line naming ``option``,
    the path and the system's reason (and the file it concerned, where that is another)."""
    try:
        yield
    except OSError as err:
        concerned = err.filename
        also = f" ({str(concerned)!r})" if concerned and str(concerned) != str(path) else ""
        raise SweepError(
            f"{option}: {str(path)!r} cannot be written: {os_reason(err)}{also}"
        ) from None
