"""A sweep's progress bar: fits finished of all, a compiling phase, and a time left from fits alone.

One unit throughout: fits (configurations × replicates), so the count, the
percentage and the time left agree and never pass the total. While a program
is being traced or compiled (:func:`sweep.execution.compile_cache.add_compile_listener`)
no fits finish: the bar says ``compiling`` and shows no time left. The time
left is the fits still to do at the rate of this run's fits over the time
spent fitting, compilation excluded, so a long first compile does not make
it up.
"""

from __future__ import annotations

import threading
import time

from binmetric_sweep.sweep.execution.compile_cache import (
    add_compile_listener,
    remove_compile_listener,
)

__all__ = ["ProgressBar"]


class ProgressBar:
    """A terminal progress bar of a sweep's fits (tqdm), as a context manager.

    Args:
        name: the sweep's name, shown first.
        total: fits in the whole sweep.
        done: fits already on disk when this run began.
        file: where to draw (default: standard error).
    """

    def __init__(self, name: str, total: int, done: int = 0, file=None):
        from tqdm.auto import tqdm

        self._bar = tqdm(
            total=total,
            initial=done,
            desc=name,
            unit="fit",
            file=file,
            dynamic_ncols=True,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n}/{total} fits [{elapsed}{postfix}]",
        )
        self._lock = threading.Lock()
        self._compiling = 0
        self._fitted = 0  # fits finished in this run
        self._fitting_s = 0.0  # seconds of this run with nothing compiling
        self._since = time.monotonic()
        self._shards = ""
        add_compile_listener(self._on_compile)
        self._show()

    def add(self, fits: int) -> None:
        """``fits`` more fits are finished."""
        with self._lock:
            self._clock()
            self._fitted += fits
            self._bar.n += fits  # drawn by _show, with the time left for the new count
            self._show()

    def shards(self, done: int, total: int) -> None:
        """Shards on disk, of all."""
        with self._lock:
            self._shards = f"shards {done}/{total}"
            self._show()

    def close(self) -> None:
        """Stop listening for compilations and leave the bar as it stands."""
        remove_compile_listener(self._on_compile)
        with self._lock:
            self._compiling = 0
            self._show()
            self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def n(self) -> int:
        """Fits counted so far (those on disk before this run included)."""
        return int(self._bar.n)

    def _on_compile(self, name: str, begun: bool) -> None:
        with self._lock:
            self._clock()
            self._compiling = max(0, self._compiling + (1 if begun else -1))
            self._show()

    def _clock(self) -> None:
        """Add the time since the last event to the fitting time, unless something compiled."""
        now = time.monotonic()
        if not self._compiling:
            self._fitting_s += now - self._since
        self._since = now

    def _show(self) -> None:
        from tqdm import tqdm

        parts = []
        if self._compiling:
            parts.append("compiling")
        elif self._fitted and self._bar.n < self._bar.total:
            left = (self._bar.total - self._bar.n) * self._fitting_s / self._fitted
            parts.append(f"{tqdm.format_interval(left)} left")
        if self._shards:
            parts.append(self._shards)
        self._bar.set_postfix_str(", ".join(parts), refresh=True)
