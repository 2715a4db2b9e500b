"""The one error a user of the sweep service sees for bad input.

Every refusal (a bad sweep file, a wrong CLI value, a directory that holds
another sweep) is a :class:`SweepError` whose message is one line naming the
field, the value and what is allowed. The CLI prints it and exits with status 2.
"""

from __future__ import annotations

__all__ = ["SweepError"]


class SweepError(ValueError):
    """Bad input or an unusable output directory, with a one-line message for the user."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
