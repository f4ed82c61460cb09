"""Numbers, dates and quantities: what each number of a text counts, and whether the context
states a claim's number for the same thing.

A number's *unit* says what it counts: the content word after it ("5 *attempts*", "12 other
*cities*", a range's "4-6 *weeks*"), a currency sign before it ("€29" counts euros), a
percent sign, or a kind: ``<day>`` beside a month name ("28 February", "January 28"),
``<year>`` for a four-digit number from 1800 to 2100 written without a separator ("the 2020
Olympics"; a count is written "2,020"), ``<rank>`` after "No" or "#",
``<age>`` ("aged 66", "at the age of 66", "a 66-year-old", both ends of "aged 10-24" and
"10-24 year old"). A number with no unit ("the boy, 14,") is a bare number; no unit
follows "and" ("on June 28 and features" is a day). An elliptical "4 more" counts what
the number before it in the sentence counts ("8 survivors on Monday and 4 more").

Two numbers *may be the same quantity* unless both have a unit and the units differ: "20
projects" never supports "20 euros", and a year never supports a count. Two numbers *clash*
only when they share a unit: "29 euros" against "49 euros", "2013" against "2010"; never a
year against a count, nor a number with a unit against a bare one. Two bare numbers clash
only beside the same words ("max_attempts is 7" against "| max_attempts | 5 |").

Arithmetic (``derivable``): a claim's number may be the sum or difference of two numbers
of its aligned sentences that count the same thing as it ("12 survivors" from "8
survivors" and "4 more"; "beat them by 3 goals" from "4 goals" and "1 goal"), or a
percentage share or change of two numbers that count the same thing as each other. Years,
days and ranks are never derived: "2013 - 2005" is no date.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .._text import MONTH_OF, PASSAGE_MARKER, content_words, normalise, numbers
from ._labels import LABELS, label_before, label_word
from ._units import dimension_of

NUMBER_SCOPE = 2
"""Words on each side of a number whose content words say what it is about (a wider scope
reaches the names a whole news story repeats, and every number then "is about" them)."""

BARE_CLASH_WORDS = 2
"""Neighbouring words two bare numbers must share to count the same thing."""

MAX_DERIVATION_NUMBERS = 12
"""Numbers tried in pairs to derive a claim's number (pairs grow with the square, and so do
chance derivations)."""

YEAR, DAY, RANK, PERCENT, AGE = "<year>", "<day>", "<rank>", "<percent>", "<age>"
_NOT_DERIVED = frozenset({YEAR, DAY, RANK, AGE})
YEARS = (1800, 2100)

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*[a-z]{0,3}(?![\w])|[^\W\d_][\w'-]*|[^\w\s]")
_ORDINAL = re.compile(r"^(\d+)(st|nd|rd|th)$")
_GLUED = re.compile(r"^(\d+(?:[.,]\d+)*)([a-z]{1,3})$")
_ORDINAL_DAY = re.compile(r"\d{1,2}(?:st|nd|rd|th)")
_MONTHS = frozenset(
    content_words(" ".join(m for m in MONTH_OF if m not in {"may", "march", "mar"}))
)
"""Month names and abbreviations, stemmed; "may" and "march" are left out: more often a verb
than a month."""
_TIMES = frozenset(
    content_words(
        "monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow "
        "lundi mardi mercredi jeudi vendredi samedi dimanche"
    )
)  # "4 more on Tuesday", "4 autres mardi": when, not what
_CURRENCY = {"$": "dollar", "€": "euro", "£": "pound", "¥": "yen"}
_ELLIPSIS = frozenset(
    [
        "more",
        "other",
        "others",
        "additional",
        "further",
        "extra",
        "fewer",
        "autres",
        "autre",
        "otros",
        "otras",
        "otro",
        "más",
        "weitere",
        "andere",
        "altri",
        "altre",
    ]
)  # "4 more", "4 autres": the thing counted before
_RANGE = frozenset({"-", "–", "to", "and", "or"})
_AGE_RANGE = frozenset({"-", "–", "to"})  # "aged 40 and 2 children" is no range of ages
_RANK_BEFORE = frozenset({"no", "#", "number"})
_UNIT_REACH = 2  # "12 other cities": the unit may follow a function word
_JOINING = frozenset({"and", "but"})  # ... but not a conjunction ("4 and 6 weeks" is a range)


@dataclass(frozen=True, slots=True)
class NumberSlot:
    """A number of a text (normalised as :func:`kbgraph.evals._text.numbers` does), its
    unit (see the module docstring; ``None``: a bare number) and the content words within
    ``NUMBER_SCOPE`` words around it."""

    number: str
    unit: str | None
    near: frozenset[str]

    def may_equal(self, other: NumberSlot) -> bool:
        """Both could be the same quantity: no two different units; a label and a word
        read as a unit ("port 8000" and "served on 8000 behind the proxy")."""
        if self.unit is None or other.unit is None or self.unit == other.unit:
            return True
        return (self.unit in LABELS) != (other.unit in LABELS) and _plain(self) and _plain(other)

    def clashes(self, other: NumberSlot) -> bool:
        """Another number of the same unit; for two bare numbers, another number beside at
        least ``BARE_CLASH_WORDS`` of the same words ("max_attempts is 7" against "|
        max_attempts | 5 |")."""
        if self.number == other.number:
            return False
        if self.unit is None and other.unit is None:
            return len(self.near & other.near) >= BARE_CLASH_WORDS
        return self.unit == other.unit

    @property
    def value(self) -> float | None:
        try:
            return float(self.number.replace(",", ""))
        except ValueError:
            return None

    def describe(self) -> str:
        if self.unit in LABELS:
            return f"{label_word(self.unit)} {self.number}"  # "port 8443", as written
        unit = "" if self.unit is None else f" {self.unit.strip('<>')}"
        return f"{self.number}{unit}"


def _plain(slot: NumberSlot) -> bool:
    """A unit that is a word: no kind ("<year>"), no measure ("ms")."""
    unit = slot.unit or ""
    return not unit.startswith("<") and not dimension_of(unit)


def number_slots(text: str) -> list[NumberSlot]:
    """Every number of ``text`` with its unit and neighbouring words (punctuation between
    words is skipped for the neighbours: "| `max_attempts` | `5` |" is a table row, but it
    ends a unit's search: "the boy, 14, was hurt" has a bare 14)."""
    tokens = _TOKEN.findall(PASSAGE_MARKER.sub(" ", normalise(text)).lower())
    word_positions = [i for i, token in enumerate(tokens) if token[0].isalnum()]
    out: list[NumberSlot] = []
    for k, i in enumerate(word_positions):
        token = tokens[i]
        number, glued = _split_number(token)
        if number is None:
            continue
        before = tokens[i - 1] if i else ""
        unit = glued or _unit(tokens, i)
        previous = (out[-1].number, out[-1].unit) if out else None
        label = label_before(tokens, i, previous) if number.isdigit() else None
        if label and not glued and unit != PERCENT and (unit is None or not dimension_of(unit)):
            unit = label
        if unit == _ELLIPSIS_UNIT:
            unit = out[-1].unit if out else None
        around = word_positions[max(0, k - NUMBER_SCOPE) : k]
        around += word_positions[k + 1 : k + 1 + NUMBER_SCOPE]
        near = frozenset(
            w for w in content_words(" ".join(tokens[j] for j in around)) if not w[:1].isdigit()
        )
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if unit not in LABELS:  # "port number 5432" is a port, not a rank
            unit = _kind(token, number, unit, before, near, after)
        out.append(NumberSlot(number, unit, near))
    return out


_ELLIPSIS_UNIT = "<more>"


def _split_number(token: str) -> tuple[str | None, str | None]:
    """The number of a token and a unit glued to it ("10ft"), or ``(None, None)``."""
    if token in _WORD_NUMBERS:
        return numbers(token).pop(), None
    if not token[0].isdigit():
        return None, None
    ordinal = _ORDINAL.match(token)
    if ordinal:
        return ordinal.group(1), None
    glued = _GLUED.match(token)
    if glued:
        stems = content_words(glued.group(2))
        return numbers(glued.group(1)).pop(), stems[0] if stems else None
    found = numbers(token)
    return (found.pop(), None) if len(found) == 1 else (None, None)


_WORD_NUMBERS = frozenset(
    [
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "zero",
    ]
)
"""Number words that count ("one" rarely does: "one of them", "no one")."""


def _unit(tokens: Sequence[str], i: int) -> str | None:
    """What the number at ``tokens[i]`` counts, from the tokens around it."""
    before = tokens[i - 1] if i else ""
    if before in _CURRENCY:
        return _CURRENCY[before]
    following = list(tokens[i + 1 : i + 1 + _UNIT_REACH + 2])
    if _is_age(tokens[max(0, i - 2) : i], following) or _ends_an_age_range(tokens, i):
        return AGE
    if following[:1] == ["%"]:
        return PERCENT
    if len(following) >= 2 and following[0] in _RANGE and _is_number(following[1]):
        # "4-6 weeks", "between 4 and 6 weeks": both ends count what the second does.
        dash = following[0] in _AGE_RANGE
        following = following[2:]
        if dash and _is_age((), following):
            return AGE  # "10-24 year old" (WiCE), as "aged 10-24"
    for token in following[:_UNIT_REACH]:
        if not token[0].isalnum() or _is_number(token) or token in _JOINING:
            return None  # "on June 28 and features": no unit after "and"
        if token in _ELLIPSIS:
            rest = [t for t in following[1:_UNIT_REACH] if t[0].isalnum()]
            stems = [s for s in content_words(rest[0]) if s not in _TIMES] if rest else []
            return stems[0] if stems else _ELLIPSIS_UNIT
        if token in {"percent", "per"}:
            return PERCENT
        stems = content_words(token)
        if stems:
            return stems[0]
    return None


def _is_age(before: Sequence[str], after: Sequence[str]) -> bool:
    """ "aged 66", "at the age of 66", "a 66-year-old", "66 years old"."""
    if before[-1:] == ["aged"] or list(before[-2:]) == ["age", "of"]:
        return True
    rest = [t for t in after[:3] if t != "-"]
    return (bool(rest) and rest[0].startswith(("year-old", "years-old"))) or rest[:2] in (
        ["years", "old"],
        ["year", "old"],
    )


def _ends_an_age_range(tokens: Sequence[str], i: int) -> bool:
    """The number at ``tokens[i]`` ends a range that starts with an age: "aged 10-24"."""
    return (
        i >= 2
        and tokens[i - 1] in _AGE_RANGE
        and _is_number(tokens[i - 2])
        and _is_age(tokens[max(0, i - 4) : i - 2], ())
    )


def _is_number(token: str) -> bool:
    return token[:1].isdigit() or token in _WORD_NUMBERS


def _kind(
    token: str, number: str, unit: str | None, before: str, near: frozenset[str], after: str = ""
) -> str | None:
    """Dates and ranks: a day beside a month, a year, "No 1"."""
    if before in _RANK_BEFORE:
        return RANK
    integer = number.isdigit()
    beside_month = unit in _MONTHS or bool(near & _MONTHS)
    if token.isdigit() and len(token) == 4 and YEARS[0] <= int(token) <= YEARS[1]:
        # "the 2020 Olympics", "in 1998": a year; a count of that size is mostly written
        # "2,020", but "won 1905 titles" (a verb, then the number and a plural noun) counts.
        return unit if _counts(before, unit, after) else YEAR
    if integer and beside_month and 1 <= int(number) <= 31 and (unit is None or unit in _MONTHS):
        return DAY
    if integer and _ORDINAL_DAY.fullmatch(token) and set(content_words(before)) & _MONTHS:
        # "on June 26th departing at 1:34 PM": an ordinal after its month is the day, what
        # word follows it (a SummEdits summary's "26th departing" read as 26 departures).
        return DAY
    return unit


_YEAR_BEFORE = frozenset(
    [
        "in",
        "on",
        "of",
        "since",
        "by",
        "for",
        "from",
        "until",
        "till",
        "to",
        "during",
        "before",
        "after",
        "and",
        "or",
        "between",
        "the",
        "a",
        "an",
        "its",
        "their",
        "his",
        "her",
        "our",
        "this",
        "that",
        "last",
        "next",
        "early",
        "late",
        "mid",
        "the's",
    ]
)
"""Words before a year: "in 1998", "the 2015 election", "between 2010 and 2015", "the
forecast for 2021 remains" (a SummEdits source read "2021 remains" as a count of remains
and its faithful summary's "for 2021" as unstated)."""


def _counts(before: str, unit: str | None, after: str) -> bool:
    """A four-digit number in the years' range counts ``unit`` rather than naming a year:
    a plural noun follows it ("1905 titles", "2000 workers") and a word precedes it that
    stands before no year ("won", not "in" or "the")."""
    return (
        unit is not None
        and not unit.startswith("<")
        and unit not in _MONTHS
        and before not in _YEAR_BEFORE
        and not before[:1].isdigit()
        and bool(before[:1].isalpha())
        and len(after) > 3
        and after.endswith("s")
        and not after.endswith(("ss", "us", "is"))
        and content_words(after)[:1] == [unit]
    )


def derivable(slot: NumberSlot, pool: Sequence[NumberSlot]) -> bool:
    """``slot``'s number is the sum or difference of two numbers of ``pool`` that count what
    it counts, or a percentage share or change of two that count the same thing, to the
    precision it is written with (see the module docstring)."""
    target = slot.value
    if target is None or slot.unit in _NOT_DERIVED or slot.unit in LABELS:
        return False  # a port or a step is named by its number, never summed
    decimals = len(slot.number.split(".")[1]) if "." in slot.number else 0
    parts = [p for p in pool if slot.unit is not None and p.unit == slot.unit]
    for a, b in itertools.permutations(_values(parts), 2):
        if any(round(c, decimals) == target for c in (a + b, a - b)):
            return True
    if slot.unit != PERCENT:
        return False
    counted = [p for p in pool if p.unit is not None and p.unit not in _NOT_DERIVED]
    for x, y in itertools.permutations(counted[:MAX_DERIVATION_NUMBERS], 2):
        part, whole = x.value, y.value
        if x.unit != y.unit or not part or not whole:
            continue
        shares = (100 * part / whole, 100 * (part - whole) / whole)
        if any(round(c, decimals) == target for c in shares):
            return True
    return False


def _values(slots: Sequence[NumberSlot]) -> list[float]:
    return [v for v in (s.value for s in slots[:MAX_DERIVATION_NUMBERS]) if v]


__all__ = [
    "AGE",
    "BARE_CLASH_WORDS",
    "DAY",
    "MAX_DERIVATION_NUMBERS",
    "NUMBER_SCOPE",
    "PERCENT",
    "RANK",
    "YEAR",
    "NumberSlot",
    "derivable",
    "number_slots",
]
