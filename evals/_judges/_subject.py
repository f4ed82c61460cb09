"""Whether the source sentence that states a claim's fact states it about the claim's
subject (``_facts``): "The day shift has 8 people" holds the 8 of "The night shift has 8
people", about another shift.

A sentence holding the fact is about the claim clause unless it *replaces* one of the
clause's words: it lacks the word and has another one, not a name, right before the word
that right follows it in the claim ("day shift" for "night shift"); and it, or it with a
neighbour (a pronoun's antecedent), holds at least half of the clause's words that the
context has. Only words written side by side count as neighbours (a reworded verb, "keys
work during" / "keys are accepted during", replaces nothing), an inflection is no other
word ("failed" / "failure"), and a name in the other word's place names what the claim
says in common words ("Northwind Analytics was founded" for "the company was founded").
A clause the sentence merely shares few words with is left to the judge's graded score.
The replaced word stands within ``NEAR`` words of the fact, in its clause, on both sides;
beyond ``CLOSE`` words, or for a name, the sentence must name the claim's subject too ("the
day shift starts at 9 pm; the night shift at 11 pm"), so that another name for the same
thing ("the rebuilt app" for the mobile app) is no other subject.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from .._text import content_words, normalise, numbers
from ._conflicts import names
from ._context import ContextText
from ._labels import LABELS, label_word
from ._numbers import NumberSlot, number_slots

WORD = re.compile(r"[A-Za-z][\w'\u2019-]*")
"""A word as written: a letter, then letters, digits, apostrophes and hyphens."""


def other_subject(
    token: str, found: list[int], about: list[str], ctx: ContextText, claim: str
) -> tuple[str, str] | None:
    """``None`` when a sentence of ``found`` (those holding ``token``) is about the claim
    clause (``about``: its content words the context has); else the reason, naming the
    token, and the sentence that says it of something else (see the module docstring)."""
    moved = _label_moved(token, found, about, ctx, claim)
    if moved is not None:
        return moved
    replaced: dict[int, tuple[str, str]] = {}
    for i in found:
        swap = next((s for s in (_replaced(w, claim, i, ctx, token) for w in about) if s), None)
        if swap is None and _holds_half(about, i, ctx):
            return None
        if swap is not None:
            replaced[i] = swap
    if not replaced:
        return None  # about nothing the clause says: the graded score weighs that
    best = min(replaced)
    sentence = ctx.sentences[best]
    mine, theirs = replaced[best]
    said = _clause_with(sentence, token)
    reason = (
        f"{token} is said of {_written_word(theirs, sentence)!r}, not "
        f"{_written_word(mine, claim)!r}: the source says {said!r}"
    )
    return reason, sentence


def _label_moved(
    token: str, found: list[int], about: list[str], ctx: ContextText, claim: str
) -> tuple[str, str] | None:
    """The reason and the sentence when the claim's numbered thing ("Step 5 deletes the old
    index") is one the source says something else of, in a sentence whose other clause
    says the claim's verb and words of another number of that label ("Step 4 deletes the
    old index and step 5 rebuilds it"): the label took the place of the verb that was the
    number's unit before, and the sentence holds every word of the claim."""
    slot = next((t for t in number_slots(claim) if t.number == token and t.unit in LABELS), None)
    said = _after_number(claim, slot) if slot is not None else None
    if slot is None or not said or not about:
        return None
    verb = said[0]
    for i in found:
        parts = _clauses(ctx.sentences[i])
        mine = [p for p in parts if any(_same(t, slot) for t in number_slots(p))]
        if len(parts) < 2 or len(mine) != 1 or _after_number(mine[0], slot) is None:
            continue
        if verb in content_words(mine[0]):
            continue
        for part in parts:
            other = [t.number for t in number_slots(part) if t.unit == slot.unit]
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


def _holds_half(about: list[str], i: int, ctx: ContextText) -> bool:
    """Sentence ``i``, or it and a neighbour (a pronoun's antecedent), holds at least half
    of the clause's words."""
    if not about:
        return True
    for j in (i, i - 1, i + 1):
        if 0 <= j < len(ctx.sentences):
            held = ctx.sentence_words[i] | ctx.sentence_words[j]
            if 2 * sum(w in held for w in about) >= len(about):
                return True
    return False


def _replaced(
    word: str, claim: str, i: int, ctx: ContextText, token: str = ""
) -> tuple[str, str] | None:
    """``(word, other)`` when the clause of sentence ``i`` that holds the fact lacks the
    claim's ``word`` and has ``other`` right before the word that right follows it in the
    claim: "day shift" for "night shift", also when another clause of the sentence has the
    claim's word ("the night shift has 5 people; the day shift has 8 people"). Not a
    reworded verb ("keys work during" / "keys are accepted during": words between), not an
    inflection ("failed" / "failure"), not a name ("Northwind Analytics was founded" names
    what the claim calls "the company"). Both words stand within ``NEAR`` words of the fact
    (``token``), in its clause, in the claim and in the source: the word a fact is said of
    is next to it ("the night shift has 8"), not a clause away ("the first three months,
    where the Platinum plan ...": a false flag on SummEdits). Further than ``CLOSE``, or
    for a claim word written with a capital, a sentence must name the claim's subject
    too (``_said_of_another``)."""
    clause = _token_clause(ctx.sentences[i], claim, token)
    if word in set(content_words(clause)):
        return None
    said, stated = _sequence(claim), _sequence(clause)
    reach_said, reach_stated = _reach(claim, token), _reach(clause, token)
    capital = _a_name(word, claim, ctx)
    for k, far in ((k, reach_said(k)) for k, w in enumerate(said[:-1]) if w == word):
        after = said[k + 1]
        if far is None or after is None or after[:1].isdigit():
            continue
        for j in (j for j, w in enumerate(stated) if w == after and j > 0):
            other, there = stated[j - 1], reach_stated(j - 1)
            if (
                other is not None
                and there is not None
                and not other[:1].isdigit()
                and other not in said
                and other[:4] != word[:4]
                and other not in names(ctx.sentences[i])
                and _side_by_side(other, after, ctx, i)
                and _said_of_another(max(far, there), capital, (word, after), ctx, i)
            ):
                return word, other
    return None


def _a_name(word: str, claim: str, ctx: ContextText) -> bool:
    """The claim writes ``word`` as a name: with a capital inside the sentence, or first
    and the context writes it with a capital inside one of its sentences ("Reliance
    expects ..."; "Staging servers keep ..." is no name)."""
    if word in names(_first_lowered(claim)):
        return True
    return word in names(claim) and any(word in names(_first_lowered(s)) for s in ctx.sentences)


def _first_lowered(text: str) -> str:
    stripped = text.lstrip()
    return stripped[:1].lower() + stripped[1:]


def _said_of_another(
    far: int, capital: bool, subject: tuple[str, str], ctx: ContextText, i: int
) -> bool:
    """Whether the other word, ``far`` words from the fact, names another subject than the
    claim's (its word and the one after): within ``CLOSE`` words it does; further, the
    sentence must name the claim's subject too ("the day shift starts at 9 pm; the night
    shift at 11 pm"), so that another name for the same thing is not another subject ("the
    rebuilt app supports 12 languages" for the mobile app). For a name, the sentence or a
    neighbour must ("The Windows build runs on the shared runner. The nightly build takes
    12 minutes."; not "the flanker returned" for Haskell, a false flag on FRANK)."""
    if capital:
        return any(_names_both(*subject, ctx, j) for j in (i - 1, i, i + 1))
    return far <= CLOSE or _names_both(*subject, ctx, i)


def _names_both(word: str, after: str, ctx: ContextText, i: int) -> bool:
    """Sentence ``i`` writes the claim's ``word`` right before ``after``."""
    if not 0 <= i < len(ctx.sentences):
        return False
    seq = _sequence(ctx.sentences[i])
    return any(a == word and b == after for a, b in itertools.pairwise(seq))


NEAR = 6
"""Words between a fact and the word it is said of, at most, counting function words
("the staging server listens on port 8080": 5), within one clause (``_BREAKS``)."""

CLOSE = 3
"""Words between a fact and the word it is said of within which the sentence need not name
the claim's subject too ("the day shift has 8 people": 3)."""

_BREAKS = frozenset(",;:[]\n") | {
    "where", "which", "who", "whom", "whose", "while", "whereas",
    "and", "or", "but", "because", "although", "though",
}  # fmt: skip
"""Tokens that end a clause: the word a fact is said of stands on its side of them ("the
first three months, where the Platinum plan costs $630": the months cost nothing, a false
flag on SummEdits). Not a parenthesis: "the day shift (8 people)"."""


def _reach(text: str, token: str) -> Callable[[int], int | None]:
    """The words between a position of ``text``'s word sequence (``_sequence``) and where
    ``token`` starts, in its clause; ``None`` when more than ``NEAR`` or in another clause;
    0 when the token is not found as written."""
    first = token.split()[0].lower() if token.strip() else ""
    tokens = [t.lower() for t in TOKENS.findall(normalise(text))]
    at = [k for k, t in enumerate(tokens) if first and _starts(t, first)]
    if not at:
        return lambda _k: 0

    def reach(k: int) -> int | None:
        found = [
            abs(k - a)
            for a in at
            if abs(k - a) <= NEAR and not _BREAKS.intersection(tokens[min(k, a) + 1 : max(k, a)])
        ]
        return min(found, default=None)

    return reach


def _starts(written: str, first: str) -> bool:
    """``written`` is the token, or the token glued to letters ("3d" for a 3 read from
    "3D")."""
    return written == first or (written.startswith(first) and written[len(first) :].isalpha())


_CLAUSE_BREAK = re.compile(r"[;,]\s+(?:and\s+|but\s+)?|\s+(?:while|whereas|and|but)\s+", re.I)
"""Where a sentence's clauses part: "X; Y", "X, Y", "X while Y", "X and Y"."""


_A_YEAR = re.compile(r"(?:1[5-9]|20)\d\d")


def _token_clause(sentence: str, claim: str, token: str = "") -> str:
    """The clause of ``sentence`` that writes ``token``, or else shares the claim's
    numbers (the fact being checked); the whole sentence when no one clause does, or the
    sentence is one clause ("21:00" and "23:00" share the number 00)."""
    parts = _clauses(sentence)
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


def _clauses(sentence: str) -> list[str]:
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


def _side_by_side(first: str, second: str, ctx: ContextText, i: int) -> bool:
    """The context writes ``first`` and ``second`` on one line, a space apart (a sentence
    of code is its lines joined: "raise" ends one, "delay = …" starts the next)."""
    a = _written_word(first, ctx.sentences[i])
    # The second word by its stem: the sentence may write it otherwise before ("two
    # shifts: ... the day shift").
    follows = re.finditer(rf"{re.escape(a)}[ \t]+([A-Za-z][\w'-]*)", ctx.body, re.IGNORECASE)
    return any(content_words(m.group(1))[:1] == [second] for m in follows)


def _sequence(text: str) -> list[str | None]:
    """The text's words in order, each its first stem, ``None`` for a function word, a
    punctuation mark or a line end: so that only words written side by side are
    neighbours."""
    stems = (content_words(t) for t in TOKENS.findall(normalise(text)))
    return [found[0] if found else None for found in stems]


TOKENS = re.compile(r"\w[\w'-]*|[^\w\s]|\n")
"""Words, punctuation and line ends: the last two part neighbours ("X, Y" in a list, a line
of code and the next)."""


def _written_word(stem: str, claim: str) -> str:
    """A claim word as the claim writes it, from its stem."""
    return next((w for w in WORD.findall(claim) if content_words(w)[:1] == [stem]), stem)


_CLAUSE_END = re.compile(r"[,;:()]|\s(?:and|but|while|whereas|which|because|so)\s", re.IGNORECASE)


def _clause_with(sentence: str, token: str) -> str:
    """The stretch of ``sentence`` between clause boundaries that holds ``token`` (the whole
    sentence when it is not found as written)."""
    text = sentence.strip().rstrip(".")
    at = text.lower().find(token.lower())
    if at < 0:
        return text[:200]
    cuts = [m for m in _CLAUSE_END.finditer(text)]
    start = max((m.end() for m in cuts if m.end() <= at), default=0)
    end = min((m.start() for m in cuts if m.start() >= at + len(token)), default=len(text))
    clause = text[start:end].strip()
    return clause[:1].lower() + clause[1:] if clause[:2].istitle() else clause


__all__ = ["TOKENS", "WORD", "other_subject"]
