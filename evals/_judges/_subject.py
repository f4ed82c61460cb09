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
thing ("the rebuilt app" for the mobile app) is no other subject. A sentence that replaces
no word may still say the number of another clause's subject, or of another numbered thing
(``_moved``: "Set API_PORT=8080 for the API and ADMIN_PORT=8443 for the admin UI").
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from .._text import content_words, normalise
from ._conflicts import names
from ._context import ContextText
from ._moved import TOKENS, WORD, clause_moved, label_moved, token_clause, written_word
from ._numbers import number_slots


def other_subject(
    token: str, found: list[int], about: list[str], ctx: ContextText, claim: str
) -> tuple[str, str] | None:
    """``None`` when a sentence of ``found`` (those holding ``token``) is about the claim
    clause (``about``: its content words the context has); else the reason, naming the
    token, and the sentence that says it of something else (see the module docstring)."""
    slots = number_slots(claim)
    return (
        label_moved(token, found, about, ctx, claim, slots)
        or _word_replaced(token, found, about, ctx, claim)
        or clause_moved(token, found, about, ctx, claim, slots)
    )


def _word_replaced(
    token: str, found: list[int], about: list[str], ctx: ContextText, claim: str
) -> tuple[str, str] | None:
    """The reason and the sentence when no sentence of ``found`` is about the claim clause
    and one replaces a word of it (``_replaced``)."""
    replaced: dict[int, tuple[str, str]] = {}
    for i in found:
        swap = next((s for s in (_replaced(w, claim, i, ctx, token) for w in about) if s), None)
        if swap is None and _holds_half(about, i, ctx):
            return None  # about the clause: unless another clause of it is (``_moved``)
        if swap is not None:
            replaced[i] = swap
    if not replaced:
        return None  # about nothing the clause says: the graded score weighs that
    best = min(replaced)
    sentence = ctx.sentences[best]
    mine, theirs = replaced[best]
    said = _clause_with(sentence, token)
    reason = (
        f"{token} is said of {written_word(theirs, sentence)!r}, not "
        f"{written_word(mine, claim)!r}: the source says {said!r}"
    )
    return reason, sentence


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
    clause = token_clause(ctx.sentences[i], claim, token)
    if word in set(content_words(clause)):
        return None
    said, stated = _sequence(claim), _sequence(clause)
    reach_said, reach_stated = _reach(claim, token), _reach(clause, token)
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
                and _said_of_another(max(far, there), claim, (word, after), ctx, i)
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
    far: int, claim: str, subject: tuple[str, str], ctx: ContextText, i: int
) -> bool:
    """Whether the other word, ``far`` words from the fact, names another subject than the
    claim's (its word and the one after): within ``CLOSE`` words it does; further, the
    sentence must name the claim's subject too ("the day shift starts at 9 pm; the night
    shift at 11 pm"), so that another name for the same thing is not another subject ("the
    rebuilt app supports 12 languages" for the mobile app). For a name, the sentence or a
    neighbour must ("The Windows build runs on the shared runner. The nightly build takes
    12 minutes."; not "the flanker returned" for Haskell, a false flag on FRANK). Whether
    the claim's word is a name is asked here, of a candidate only: ``_a_name`` reads every
    context sentence's names."""
    if _a_name(subject[0], claim, ctx):
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


def _side_by_side(first: str, second: str, ctx: ContextText, i: int) -> bool:
    """The context writes ``first`` and ``second`` on one line, a space apart (a sentence
    of code is its lines joined: "raise" ends one, "delay = …" starts the next)."""
    a = written_word(first, ctx.sentences[i])
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
