"""The one error a user of the sweep service sees for bad input.

Every refusal (a bad sweep file, a wrong CLI value, a directory that holds
another sweep) is a :class:`SweepError` whose message is one line naming the
field, the value and what is allowed. The CLI prints it and exits with status 2.
"""

from __future__ import annotations

import reprlib

__all__ = ["SHOWN_MAX", "SweepError", "shown"]

_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict = 2, 3, 3
_SHOWN.maxstring = _SHOWN.maxother = 60
_SHOWN.maxlong = 30
_SHOWN.fillvalue = "…"
#: The most characters of a value an error line echoes.
SHOWN_MAX = 80


def shown(value: object) -> str:
    """``repr(value)`` shortened for an error line: a value from a file may be megabytes.

    At most :data:`SHOWN_MAX` characters: containers show their first items
    to two levels, strings their ends, and a nested list says what it is:
    ``[[0.5, 0.5, 0.5, …], [0.5, 0.5, 0.5, …], …] (nested list)``.
    """
    text = _SHOWN.repr(value)
    if len(text) > SHOWN_MAX:
        text = text[: SHOWN_MAX - 1] + "…"
    if isinstance(value, (list, tuple)) and any(isinstance(v, (list, tuple, dict)) for v in value):
        text += f" (nested {type(value).__name__})"
    return text


class SweepError(ValueError):
    """Bad input or an unusable output directory, with a one-line message for the user."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
