"""The offline judge's checks of one claim clause against the whole context: are its numbers
the context's numbers for the same thing, does the context say it the other way round, did
two names trade places?

Numbers (``_numbers`` says what a number counts): a claim's number is *supported* by a
sentence that holds the same number, with no other unit, and is about what the clause is
about — its idf-weighted share of the clause's words is at least ``SAME_THING`` of the best
sentence's, anywhere in the context (not only the top aligned sentences). It is *derived*
when its aligned sentences state the parts it sums or divides (``_numbers.derivable``). It
*clashes* when a sentence the clause is aligned with — at least ``SAME_THING`` of the best,
holding at least ``CLASH_COVERAGE`` of the clause's words (the same subject) — has another
number of the same unit and not the claim's: "The Team plan costs 49 euros" against "The
Team plan costs 29 euros per month and includes 20 projects" (29 + 20 = 49, but projects
are no euros). A number found only in a sentence about something else, or nowhere, is
*unsupported*: a made-up number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ._alignment import Alignment
from ._conflicts import RoleSwap, role_swaps
from ._context import ContextText
from ._numbers import NumberSlot, derivable, number_slots

SAME_THING = 0.8
"""A sentence is about what a clause is about when it holds this share of the best aligned
sentence's weight of the clause's words: the Pro plan's sentence is not about the Team
plan's price when "Team" is what it lacks."""

WEAK_SUPPORT = 0.5
"""Below ``SAME_THING`` but at least this, a sentence with the claim's number still supports
it when no aligned sentence has another number for it (a summary's clause may be worded
far from its source sentence)."""

CLASH_COVERAGE = 0.7
"""A number clashes only with a sentence holding this share of the clause's words (of those
the context has): "A 17-year-old boy was stabbed at a party in north-west London" does not
clash with "A 16-year-old boy was also stabbed and taken to a north London hospital"."""

NumberStatus = Literal["supported", "derived", "clash", "unsupported"]


@dataclass(frozen=True, slots=True)
class NumberFinding:
    slot: NumberSlot
    status: NumberStatus
    other: NumberSlot | None = None  # the clashing number
    sentence: int | None = None  # the sentence that supports or clashes

    def describe(self) -> str:
        if self.status == "clash" and self.other is not None:
            return f"number mismatch: {self.slot.describe()} ≠ {self.other.describe()}"
        if self.status == "unsupported":
            return f"number not in the source for this: {self.slot.describe()}"
        return f"number {self.status}: {self.slot.describe()}"


def number_findings(
    text: str, words: list[str], alignment: Alignment, context: ContextText
) -> list[NumberFinding]:
    """What the context says of each number of the clause ``text`` (content ``words``,
    aligned as ``alignment``)."""
    slots = number_slots(text)
    if not slots:
        return []
    # What the clause is about, in words the context has (a paraphrase's own words are in
    # no sentence, and would only lower every sentence's share alike).
    about = [w for w in words if not w[:1].isdigit() and w in context.words]
    shares = {i: context.coverage(about, i) for w in about for i in context.index.get(w, ())}
    best = max(shares.values(), default=0.0)
    # Sentences about the same thing, most aligned first: where another number clashes.
    nearby = sorted(
        (i for i, share in shares.items() if share >= WEAK_SUPPORT * best),
        key=lambda i: (-shares[i], i),
    )
    pool = [
        t for i in sorted({*alignment.top, *alignment.pair_indices}) for t in context.slots_of(i)
    ]
    mine = frozenset(s.number for s in slots)
    return [_finding(slot, about, best, nearby, pool, context, mine) for slot in slots]


def _finding(
    slot: NumberSlot,
    about: list[str],
    best: float,
    nearby: list[int],
    pool: list[NumberSlot],
    context: ContextText,
    mine: frozenset[str] = frozenset(),
) -> NumberFinding:
    """What the context says of ``slot``. When the context writes the number somewhere, a
    number the claim writes itself (``mine``) is no clash: "the web UI on port 3000 and the
    API on port 8000" joins two sentences, and the one about the web UI holds no other port
    for the API. When it writes it nowhere, it is ("12 survivors and 8 bodies" against "8
    survivors and 12 bodies")."""
    support, where = 0.0, None
    for i in context.number_index.get(slot.number, ()):
        if any(t.number == slot.number and slot.may_equal(t) for t in context.slots_of(i)):
            share = context.coverage(about, i) / best if about and best else 1.0
            if share > support:
                support, where = share, i
    if support >= SAME_THING or (support > 0 and not about):
        return NumberFinding(slot, "supported", sentence=where)
    if derivable(slot, pool):
        return NumberFinding(slot, "derived")
    for i in nearby if best >= CLASH_COVERAGE else ():
        numbers = context.slots_of(i)
        if any(t.number == slot.number and slot.may_equal(t) for t in numbers):
            continue
        close = context.coverage(about, i) >= SAME_THING * best
        # A number of the same unit clashes in a sentence about the same thing; two bare
        # numbers beside the same words are the same thing wherever they are.
        other = next(
            (
                t
                for t in numbers
                if slot.clashes(t)
                and (close or slot.unit is None)
                and not (support > 0 and t.number in mine)
            ),
            None,
        )
        if other is not None:
            return NumberFinding(slot, "clash", other, i)
    if support >= WEAK_SUPPORT:
        return NumberFinding(slot, "supported", sentence=where)
    return NumberFinding(slot, "unsupported")


def role_swap(
    words: list[str], alignment: Alignment, text: str, context: ContextText
) -> RoleSwap | None:
    """A role swap (``_conflicts.role_swaps``) between the clause and its best sentence, when
    that sentence holds every word of the clause."""
    if not alignment.top or len(words) < 3:
        return None
    best = alignment.top[0]
    if not set(words) <= context.sentence_words[best]:
        return None
    return role_swaps(text, context.sentences[best])


__all__ = [
    "CLASH_COVERAGE",
    "SAME_THING",
    "WEAK_SUPPORT",
    "NumberFinding",
    "NumberStatus",
    "number_findings",
    "role_swap",
]
