"""Quantities written in other units: "30,000 ms" is "30 s", "2 GB" is "two gigabytes".

A quantity is a number (read as :func:`kbgraph.evals._text.numbers` reads it: "30,000" is
30000, "two" is 2) followed by a unit of time or of data size, in any of its spellings. Two
quantities are the same when they measure the same dimension and their values agree to
``TOLERANCE`` once converted: so that "2 GB" and "2 GiB" agree (people write one for the
other), while "2 GB" and "20 GB" do not. Other units (euros, people, attempts) are compared
as words by :mod:`._numbers`; this module only knows the units one converts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._text import normalise, numbers

TOLERANCE = 0.08
"""Relative difference under which two converted values are the same quantity (GiB against
GB differ by 7.4%)."""

_SCALES: dict[str, tuple[str, float]] = {}
for _names, _dimension, _scale in (
    ("ms msec msecs millisecond milliseconds", "time", 0.001),
    ("s sec secs second seconds", "time", 1.0),
    ("min mins minute minutes", "time", 60.0),
    ("h hr hrs hour hours", "time", 3600.0),
    ("day days", "time", 86400.0),
    ("week weeks", "time", 604800.0),
    ("b byte bytes", "data", 1.0),
    ("kb kib kilobyte kilobytes kibibyte kibibytes", "data", 1e3),
    ("mb mib megabyte megabytes mebibyte mebibytes", "data", 1e6),
    ("gb gib gigabyte gigabytes gibibyte gibibytes", "data", 1e9),
    ("tb tib terabyte terabytes tebibyte tebibytes", "data", 1e12),
):
    for _name in _names.split():
        _SCALES[_name] = (_dimension, _scale)

_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_QUANTITY = re.compile(
    r"(?<![\w.,])(\d+(?:,\d{3})*(?:\.\d+)?|(?:" + "|".join(_WORDS.split()) + r"))"
    r"[\s-]?(" + "|".join(sorted(_SCALES, key=len, reverse=True)) + r")(?![\w])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number with a unit this module converts: the number as ``numbers`` normalises it,
    its dimension (``time``, ``data``) and its value in the dimension's base unit."""

    number: str
    dimension: str
    value: float

    def same(self, other: Quantity) -> bool:
        if self.dimension != other.dimension:
            return False
        larger = max(abs(self.value), abs(other.value))
        return larger == 0 or abs(self.value - other.value) <= TOLERANCE * larger


def quantities(text: str) -> list[Quantity]:
    """The quantities of ``text`` in units of time or data size, in order."""
    out: list[Quantity] = []
    for match in _QUANTITY.finditer(normalise(text)):
        found = numbers(match.group(1))
        if len(found) != 1:
            continue
        number = found.pop()
        try:
            amount = float(number)
        except ValueError:
            continue
        dimension, scale = _SCALES[match.group(2).lower()]
        out.append(Quantity(number, dimension, amount * scale))
    return out


def dimension_of(unit: str | None) -> str | None:
    """The dimension a unit word (as written or stemmed: "gigabyt") measures, if known."""
    if unit is None:
        return None
    found = _SCALES.get(unit) or _SCALES.get(unit + "s") or _SCALES.get(unit + "es")
    return found[0] if found else None


__all__ = ["TOLERANCE", "Quantity", "dimension_of", "quantities"]
