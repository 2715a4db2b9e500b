"""What a K-class comparison rates: its classes and their values (``--classes``), and how its
judges are modelled (``--judge-model``), each parsed once into a value.

::

    classes = Classes.of("worse,tie,better")      # values 0, ½, 1 (names not numbers)
    classes = Classes.of("1,2,3,4,5")             # values 1..5 (numeric names)
    classes = Classes.of("B=0,tie=0.5,A=1")       # explicit values
    classes.layout(judges=2)                      # kernels.categorical.counts.Layout

A joint verdict of J judges is named by their classes joined by ``+`` in judge order
(``tie+better``: judge 1 said tie, judge 2 better), numbered as
:class:`~binmetric_sweep.kernels.categorical.counts.Layout` numbers them (row-major, judge 1
the most significant digit); with one judge a verdict's name is its class's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from binmetric_sweep.kernels.categorical.counts import Layout
from binmetric_sweep.sweep.errors import SweepError, shown

__all__ = ["Classes"]

#: Characters a class name may not hold: the separators of ``--classes`` and of a joint
#: verdict's name.
_RESERVED = (",", "=", "+")


@dataclass(frozen=True)
class Classes:
    """K ordered classes: their names (as the ratings' labels spell them) and values v.

    Attributes:
        names: the K names, in class order.
        values: v, strictly increasing, finite.
        numeric: every name is a number equal to its value (``1,2,3,4,5``): a label
            matches a name by number too (``1.0`` is ``1``, as pandas writes integers
            of a column with gaps).
    """

    names: tuple[str, ...]
    values: tuple[float, ...]
    numeric: bool = False

    @classmethod
    def of(cls, given: str | Classes) -> Classes:
        """The classes ``given`` names: ``a,b,c`` (numeric names: the values are the numbers;
        others: evenly spaced 0..1, the preference convention v = (0, ½, 1)) or
        ``a=0,b=0.5,c=1`` (explicit values; every class given one).

        Raises:
            SweepError: fewer than two classes, an empty, repeated or reserved name, a value
                not a finite number, values not increasing (one line naming ``--classes``).
        """
        if isinstance(given, Classes):
            return given
        if not isinstance(given, str):
            raise SweepError(f"--classes: {shown(given)} is not allowed; {_CLASSES_HELP}")
        parts = [p.strip() for p in given.split(",")]
        explicit = ["=" in p for p in parts]
        if any(explicit) and not all(explicit):
            raise SweepError(
                f"--classes: {shown(given)} gives values to some classes only; "
                "give every class one (B=0,tie=0.5,A=1) or none"
            )
        split = [p.split("=", 1) if "=" in p else [p, ""] for p in parts]
        names = tuple(name.strip() for name, _ in split)
        if len(names) < 2:
            raise SweepError(f"--classes: {shown(given)} has one class; {_CLASSES_HELP}")
        for name in names:
            if not name or any(c in name for c in _RESERVED):
                raise SweepError(
                    f"--classes: {shown(name)} is not a class name (empty, or holding one of "
                    f"{' '.join(_RESERVED)}); {_CLASSES_HELP}"
                )
        repeated = next((n for n in names if names.count(n) > 1), None)
        if repeated is not None:
            raise SweepError(f"--classes: class {shown(repeated)} is named twice")
        numbers = [_number(name) for name in names]
        numeric = not any(explicit) and all(n is not None for n in numbers)
        if any(explicit):
            values = tuple(_value(text.strip(), name) for name, text in split)
        elif numeric:
            values = tuple(numbers)
        else:
            values = tuple(i / (len(names) - 1) for i in range(len(names)))
        for a, b, name in zip(values, values[1:], names[1:], strict=False):
            if not b > a:
                raise SweepError(
                    f"--classes: the values must increase in class order; {shown(name)} has "
                    f"{b:g} after {a:g}"
                )
        return cls(names, values, numeric)

    @property
    def k(self) -> int:
        """K."""
        return len(self.names)

    def layout(self, judges: int) -> Layout:
        """The kernels' layout of these classes rated by ``judges`` judges."""
        return Layout(tuple(float(v) for v in self.values), judges)

    def verdict_names(self, judges: int) -> tuple[str, ...]:
        """The L = K^J joint verdicts' names, in the layout's order (``tie+better``)."""
        verdicts = self.layout(judges).verdicts()
        return tuple("+".join(self.names[c] for c in row) for row in verdicts)

    def as_settings(self) -> dict:
        """The classes as a comparison's settings carry them: names and values."""
        return {"classes": list(self.names), "values": list(self.values)}


_CLASSES_HELP = (
    "give two or more class names in order (worse,tie,better or 1,2,3,4,5), "
    "or names with values (B=0,tie=0.5,A=1)"
)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _value(text: str, name: str) -> float:
    value = _number(text)
    if value is None:
        raise SweepError(
            f"--classes: class {shown(name)} has value {shown(text)}; give a finite number"
        )
    return value
