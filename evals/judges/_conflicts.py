"""Evidence that a context says the opposite of a claim: a negation flip, another number for
the same thing, or another word in the same place.

All are checked against the sentences the claim is aligned with (``_alignment``), and all
give the claim the benefit of the doubt where a summary legitimately departs from any one
sentence:

- a claim that negates what its best sentence affirms (or the reverse) is a flip only when
  no other aligned sentence states it the claim's way: "the council did not approve the
  plan in May, but the mayor approved a revised one" fuses two sentences, one of which
  says "not approved". Only the first ``FLIP_SCOPE`` content words after a cue count as
  negated here: "could do nothing to stop Klaassen scoring" does not negate Klaassen;
- a claim's number conflicts only with a different number *of the same thing* in an aligned
  sentence — the same unit ("7 attempts" against "5 attempts"; not "12 cities" against "250
  people"), or for a number without one, a shared neighbour ("the boy, 14,") — when no
  aligned sentence has the claim's number for it, and it cannot be derived from their
  numbers (a sum, difference, ratio or percentage: "12 survivors" from "8" and "4 more");
  a number beside a month name counts a date, so years and days of other dates clash;
- a swapped name or word: a claim word its best sentence lacks, found elsewhere in the
  context, between two claim words the best sentence has (``substitutions``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from .._text import content_words, negated_terms, numbers

FLIP_SCOPE = 2
"""Content words after a negation cue that a flip may concern (the verb and its object)."""

NUMBER_SCOPE = 2
"""Words on each side of a number whose content words say what it counts (a wider scope
reaches the names a whole news story repeats, and every number then "counts" them)."""

MAX_DERIVATION_NUMBERS = 12
"""Numbers of the aligned sentences tried in pairs to derive a claim's number (bounded:
pairs grow with the square, and so do chance derivations)."""

SMALL_NUMBER = 10
"""Below this, almost any number is a sum or difference of two others by chance: a small
number counts as derived only from numbers of the same thing."""

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_][\w'-]*|[^\w\s]")
_MONTHS = frozenset(
    content_words(
        "january february april june july august september october november december "
        "jan feb apr jun jul aug sep sept oct nov dec"
    )
)  # "may" and "march" are left out: more often a verb than a month
# What a number beside a month counts: "28 February 2013" against "January 28, 2010".
_DATE = "<date>"
_UNIT_REACH = 2  # "12 other cities": the unit may follow a function word
_NOT_COUNTS = frozenset({"one"})  # "one of them", "no one": rarely a count


def negation_flip(claim: str, words: Iterable[str], aligned: Sequence[str]) -> bool:
    """The claim negates what its best-aligned sentence affirms, or the reverse, and for a
    word negated in one and not the other, no other aligned sentence has it the claim's
    way. A statement is negated when a cue governs one of the words it shares with the
    claim: "the opposition did not back the plan" and "the plan was not supported by the
    opposition" are both negated, whichever words the cues govern."""
    if not aligned:
        return False
    wanted = set(words)
    claim_negated = negated_terms(claim, FLIP_SCOPE)
    views = [(negated_terms(s, FLIP_SCOPE), wanted & set(content_words(s))) for s in aligned]

    best_negated, best_shared = views[0]
    if bool(claim_negated & best_shared) == bool(best_negated & best_shared):
        return False
    flipped = (claim_negated ^ best_negated) & best_shared
    # Another sentence counts when it is about the claim too, not a heading that names it.
    others = [(n, shared) for n, shared in views[1:] if 2 * len(shared) >= len(best_shared) > 1]
    return any(
        not any(
            term in shared and (term in negated) == (term in claim_negated)
            for negated, shared in others
        )
        for term in flipped
    )


@dataclass(frozen=True, slots=True)
class NumberSlot:
    """A number in a text, normalised as :func:`numbers` does; ``unit``: the content word
    right after it ("5 *attempts*", "12 other *cities*"), if any; ``near``: the content
    words within ``NUMBER_SCOPE`` tokens around it."""

    number: str
    unit: str | None
    near: frozenset[str]

    def matches(self, other: NumberSlot) -> bool:
        """Both numbers say how many of the same thing."""
        if self.unit is not None and other.unit is not None:
            return self.unit == other.unit
        if self.unit is not None:
            return self.unit in other.near
        return bool(self.near & other.near)


def number_slots(text: str) -> list[NumberSlot]:
    """Every number of ``text`` with its unit and neighbouring words (punctuation skipped:
    "| `max_attempts` | `5` |" is a table row); punctuation ends a unit's search ("the
    boy, 14, was hurt": 14 has no unit)."""
    tokens = _TOKEN.findall(text.lower())
    word_tokens = [i for i, token in enumerate(tokens) if token[0].isalnum()]
    out: list[NumberSlot] = []
    for k, i in enumerate(word_tokens):
        token = tokens[i]
        found = numbers(token) if token not in _NOT_COUNTS else set()
        if len(found) != 1:
            continue
        unit = None
        for following in tokens[i + 1 : i + 1 + _UNIT_REACH]:
            if not following[0].isalnum() or numbers(following):
                break
            stems = content_words(following)
            if stems:
                unit = stems[0]
                break
        around = (
            word_tokens[max(0, k - NUMBER_SCOPE) : k] + word_tokens[k + 1 : k + 1 + NUMBER_SCOPE]
        )
        near = {w for w in content_words(" ".join(tokens[j] for j in around)) if not w.isdigit()}
        if near & _MONTHS:
            near.add(_DATE)
        out.append(NumberSlot(found.pop(), unit, frozenset(near)))
    return out


def number_conflict(claim: Sequence[NumberSlot], aligned: Sequence[Sequence[NumberSlot]]) -> bool:
    """A number of the claim has another number of the same thing in an aligned sentence
    (``aligned``: the number slots of each), which does not hold the claim's number at all
    ("17 counts" against "17 of the 30 counts" is a parse, not a conflict), and the number
    cannot be derived from the aligned sentences' numbers (see the module docstring)."""
    pool = [slot for sentence in aligned for slot in sentence]
    for slot in claim:
        if any(slot.matches(other) and other.number == slot.number for other in pool):
            continue
        clash = any(
            slot.number not in {other.number for other in sentence}
            and any(slot.matches(other) for other in sentence)
            for sentence in aligned
        )
        if clash and not derivable(slot, pool):
            return True
    return False


def derivable(slot: NumberSlot, pool: Sequence[NumberSlot]) -> bool:
    """The slot's number is a sum, difference, ratio or percentage (share or change) of two
    numbers of ``pool`` (the aligned sentences' numbers, not the whole context's: from many
    numbers almost any number can be derived by chance), to the precision it is written
    with. A small number must come from numbers of the same thing."""
    target = _value(slot.number)
    if target is None:
        return False
    small = abs(target) < SMALL_NUMBER
    operands = [p for p in pool if not small or slot.matches(p)][:MAX_DERIVATION_NUMBERS]
    values = [v for v in (_value(p.number) for p in operands) if v]
    decimals = len(slot.number.split(".")[1]) if "." in slot.number else 0
    for a, b in itertools.permutations(values, 2):
        candidates = (a + b, a - b, a / b, 100 * a / b, 100 * (a - b) / b)
        if any(round(c, decimals) == target for c in candidates):
            return True
    return False


def substitutions(words: Sequence[str], best: Collection[str], elsewhere: Collection[str]) -> int:
    """Claim words that the best-aligned sentence lacks but the context has elsewhere, each
    between two claim words the best sentence has: a name or word swapped in from another
    sentence ("Smith was arrested in Leeds" where the sentence says "Jones was arrested in
    Leeds" and Smith appears further on)."""
    count = 0
    for i, word in enumerate(words):
        if word in best or word not in elsewhere:
            continue
        neighbours = [*words[max(0, i - 1) : i], *words[i + 1 : i + 2]]
        if neighbours and all(n in best for n in neighbours):
            count += 1
    return count


def _value(number: str) -> float | None:
    try:
        return float(number.replace(",", ""))
    except ValueError:
        return None


__all__ = [
    "FLIP_SCOPE",
    "MAX_DERIVATION_NUMBERS",
    "NUMBER_SCOPE",
    "SMALL_NUMBER",
    "NumberSlot",
    "derivable",
    "negation_flip",
    "number_conflict",
    "number_slots",
    "substitutions",
]
