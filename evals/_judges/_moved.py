"""A claim's number that a source sentence says of something else in another of its
clauses (``_subject`` asks first whether a word of the claim was replaced): the numbered
thing ("Step 5 deletes the old index" against "Step 4 deletes the old index and step 5
rebuilds it"), or the subject ("The admin UI listens on port 8080" against "Set
API_PORT=8080 for the API and ADMIN_PORT=8443 for the admin UI"); and the clauses of a
sentence, as both checks read them."""

from __future__ import annotations

import re

from .._text import content_words, normalise, numbers
from ._context import ContextText
from ._labels import LABELS, label_word
from ._numbers import YEAR, NumberSlot, number_slots


def label_moved(
    token: str,
    found: list[int],
    about: list[str],
    ctx: ContextText,
    claim: str,
    slots: list[NumberSlot],
) -> tuple[str, str] | None:
    """The reason and the sentence when the claim's numbered thing ("Step 5 deletes the old
    index") is one the source says something else of, in a sentence whose other clause
    says the claim's verb and words of another number of that label ("Step 4 deletes the
    old index and step 5 rebuilds it"): the label took the place of the verb that was the
    number's unit before, and the sentence holds every word of the claim."""
    slot = next((t for t in slots if t.number == token and t.unit in LABELS), None)
    said = _after_number(claim, slot) if slot is not None else None
    if slot is None or not said or not about:
        return None
    verb = said[0]
    for i in found:
        parts = clauses(ctx.sentences[i])
        read = [(p, number_slots(p)) for p in parts]
        mine = [p for p, held in read if any(_same(t, slot) for t in held)]
        if len(parts) < 2 or len(mine) != 1 or _after_number(mine[0], slot) is None:
            continue
        if verb in content_words(mine[0]):
            continue
        for part, held in read:
            other = [t.number for t in held if t.unit == slot.unit]
            if (
                other
                and slot.number not in other
                and verb in content_words(part)
                and 2 * _held(about, part) >= len(about)
            ):
                label = label_word(slot.unit or "")
                reason = (
                    f"{label} {token} is said of something else: the source says "
                    f"{part.strip()!r}, of {label} {other[0]}"
                )
                return reason, ctx.sentences[i]
    return None


def clause_moved(
    token: str,
    found: list[int],
    about: list[str],
    ctx: ContextText,
    claim: str,
    slots: list[NumberSlot],
) -> tuple[str, str] | None:
    """The reason and a sentence when in every source sentence that writes the claim's
    number, the clause writing it names less of the claim's subject than another clause,
    with another number of the same unit ("Set API_PORT=8080 for the API and ADMIN_PORT=8443
    for the admin UI" for "The admin UI listens on port 8080"; "The app runs on
    localhost:8000 and the docs server on localhost:8001" for "The docs server runs on port
    8000"). The other clause must write the first of the claim's words in the claim's
    clause of the number (its subject: "docs", "admin"), and the number's clause not: "the
    morning train to Leeds leaves from platform 2 and the evening train from platform 6"
    says platform 6 of the evening train, though the first clause holds more words of
    "The evening train to Leeds leaves from platform 6". Of the rest, only the words one
    clause holds and the other does not count: the verb the second clause leaves out
    ("runs") weighs less than the subject it names."""
    slot = next((t for t in slots if t.number == token.split()[0]), None)
    # A year frames its sentence, and is said of every clause (two false flags on FRANK).
    if slot is None or slot.unit in (None, YEAR) or not about or not found:
        return None
    wanted = set(about)
    lead = next((w for w in content_words(token_clause(claim, claim, token)) if w in wanted), "")
    moved = [_moved_in(slot, ctx.sentences[i], wanted, lead) for i in found]
    if not all(moved):
        return None
    mine, other = moved[0] or ("", "")
    what = slot.describe() if slot.unit in LABELS else token
    reason = (
        f"{what} is said of something else: the source says {mine!r}, not of "
        f"{written_word(lead, claim)!r} ({other!r})"
    )
    return reason, ctx.sentences[found[0]]


def _moved_in(
    slot: NumberSlot, sentence: str, about: set[str], lead: str
) -> tuple[str, str] | None:
    """``(the clause writing the number, the clause the claim's subject is in)`` of
    ``sentence`` (see ``clause_moved``), or ``None``. A later clause that leaves out the
    subject it shares with an earlier one keeps its number when it writes a word of the
    claim the earlier one lacks: "The API listens on port 8080 in development and port 80
    in production" says port 80 of the API in production (eight false flags a review
    found: "Builds take 4 minutes on Linux and 9 minutes on macOS")."""
    parts = clauses(sentence)
    slots = [number_slots(p) for p in parts]
    mine = [k for k, found in enumerate(slots) if any(_same(t, slot) for t in found)]
    if len(parts) < 2 or len(mine) != 1:
        return None
    at = mine[0]
    held = about & set(content_words(parts[at]))
    if not lead or lead in held:
        return None
    for k, part in enumerate(parts):
        other = [t.number for t in slots[k] if t.unit == slot.unit]
        if not other or slot.number in other:
            continue
        theirs = about & set(content_words(part))
        own = held - theirs
        if lead in theirs and len(theirs - held) > len(own) and not (own and at > k):
            return parts[at].strip().rstrip("."), part.strip().rstrip(".")
    return None


def _after_number(text: str, slot: NumberSlot) -> list[str] | None:
    """The content words after the labelled number when ``text`` starts with it, or a
    preposition and it ("Step 5 deletes", "In step 3 you install"): the numbered thing is
    what the clause is about, not where its subject goes ("The evening train leaves from
    platform 6": ``None``)."""
    words = [w.lower() for w in TOKENS.findall(normalise(text)) if w[:1].isalnum()]
    if words[:1] and words[0] in _LEADING:
        words = words[1:]
    if len(words) < 2 or words[1] != slot.number or content_words(words[0])[:1] != [slot.unit]:
        return None
    return content_words(" ".join(words[2:]))


_LEADING = frozenset({"in", "at", "on", "during", "for", "after", "before", "from"})


def _same(a: NumberSlot, b: NumberSlot) -> bool:
    return (a.number, a.unit) == (b.number, b.unit)


def _held(about: list[str], text: str) -> int:
    """How many of the claim clause's words ``text`` holds."""
    words = set(content_words(text))
    return sum(w in words for w in about)


_CLAUSE_BREAK = re.compile(r"[;,]\s+(?:and\s+|but\s+)?|\s+(?:while|whereas|and|but)\s+", re.I)
"""Where a sentence's clauses part: "X; Y", "X, Y", "X while Y", "X and Y"."""


_A_YEAR = re.compile(r"(?:1[5-9]|20)\d\d")


def token_clause(sentence: str, claim: str, token: str = "") -> str:
    """The clause of ``sentence`` that writes ``token``, or else shares the claim's
    numbers (the fact being checked); the whole sentence when no one clause does, or the
    sentence is one clause ("21:00" and "23:00" share the number 00)."""
    parts = clauses(sentence)
    if len(parts) < 2:
        return sentence
    # A year frames a sentence: "the third quarter's $0.21, up from $0.18 in the second
    # quarter of 2020" dates both quarters (a false flag on SummEdits).
    by_token = token and not _A_YEAR.fullmatch(token)
    written = [p for p in parts if by_token and token.lower() in p.lower()]
    if len(written) == 1:
        return written[0]
    wanted = numbers(claim)
    held = [p for p in parts if wanted and wanted & numbers(p)]
    return held[0] if len(held) == 1 else sentence


def clauses(sentence: str) -> list[str]:
    """The sentence's clauses (``_CLAUSE_BREAK``); a short one without a number is the
    first of two subjects that share the next one's predicate, and goes with it ("The
    staging server and the production server both listen on port 8080")."""
    parts = [p for p in _CLAUSE_BREAK.split(sentence) if p.strip()]
    out: list[str] = []
    for part in parts:
        if out and not numbers(out[-1]) and len(out[-1].split()) <= _SUBJECT_WORDS:
            part = f"{out.pop()} and {part}"
        out.append(part)
    return out


_SUBJECT_WORDS = 4


WORD = re.compile(r"[A-Za-z][\w'\u2019-]*")
"""A word as written: a letter, then letters, digits, apostrophes and hyphens."""


def written_word(stem: str, text: str) -> str:
    """A word of ``text`` as written, from its stem."""
    return next((w for w in WORD.findall(text) if content_words(w)[:1] == [stem]), stem)


TOKENS = re.compile(r"\w[\w'-]*|[^\w\s]|\n")
"""Words, punctuation and line ends: the last two part neighbours ("X, Y" in a list, a line
of code and the next)."""


__all__ = [
    "TOKENS",
    "WORD",
    "clause_moved",
    "clauses",
    "label_moved",
    "token_clause",
    "written_word",
]
