"""Whether a claim says the opposite of its context: a polarity flip, judged on meaning.

A text is cut into clauses (at punctuation and at words that open another clause: "but",
"because", "which" …, NegEx's termination terms, Chapman et al. 2001), and a clause is
negative when it holds a negation cue (``kbgraph.evals._text.is_negation_cue``: "not",
"never", "no", "doesn't" …; not "won", not "No 1", not "not only"). Two clauses say the same
thing with the same polarity when both are negative or both are not, wherever the cue
sits: "Projects cannot be moved to another region." and "Moving a project to another
region is not supported." are both negative, so the first paraphrases the second.

A claim clause contradicts the context when the context has a clause *about the same
thing* — holding the claim clause's words (those the context has at all; one may be
missing from a clause of five or more) and made mostly of them — with the other polarity,
and no clause of the whole context about the same thing has the claim's polarity. A clause
of fewer than two such words says too little to be judged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from .._text import content_words, is_negation_cue, negating_spans, normalise

_TOKEN = re.compile(r"\w+(?:'t)?|[.,;:!?()\[\]{}|\"]|--|[–—]")
_CLAUSE_ENDS = frozenset({
    "and", "or", "but", "as", "because", "since", "which", "who", "whom", "whose", "while",
    "whereas", "although", "though", "however", "except", "when", "where", "after", "before",
    "until", "if", "unless", "that", "than",
})  # fmt: skip
"""Words that open another clause or join two: "it was not retried because the request
could not succeed" holds two negative clauses, each about its own words; "tokens expire
after 15 minutes and cannot be refreshed" a positive one and a negative one."""

MIN_WORDS = 2
"""A clause needs this many content words the context has to be compared."""

SAME_SHARE = 0.6
"""A context clause is about a claim clause when it holds this share of the claim clause's
words that the context has (at least ``MIN_WORDS``)."""

SCOPE = 3
"""Content words after a cue that it governs (NegEx's window)."""

REACH = 3
"""Content words of the subject before an auxiliary's cue that it governs too: "Moving a
project to another region is not supported" denies the move, as "Projects cannot be moved"
does. A clause is negative about a claim only when a cue governs some of the claim's words:
a run-on, unpunctuated source sentence ("… is relishing the chance … on sunday gullit
decided not to start …") negates only what its cue governs."""


@dataclass(frozen=True, slots=True)
class Clause:
    words: frozenset[str]
    negative: bool
    text: str
    governed: frozenset[str] = frozenset()  # the words near a cue (``REACH``, ``SCOPE``)
    denied: frozenset[str] = frozenset()  # the words after a cue (``SCOPE``)

    def denies(self, words: Collection[str]) -> bool:
        """The clause is negative about ``words``: a cue of it is near one of them."""
        return self.negative and not self.governed.isdisjoint(words)


@dataclass(frozen=True, slots=True)
class Flip:
    """A claim clause and the context clause that says the opposite."""

    claim: Clause
    source: Clause
    sentence: int

    def describe(self) -> str:
        if self.source.negative and not self.claim.negative:
            return f"negation: the source denies what the claim affirms ({self.source.text!r})"
        return f"negation: the claim denies what the source affirms ({self.source.text!r})"


def clauses(text: str) -> list[Clause]:
    """The clauses of ``text`` with their content words and polarity. A parenthesis is a
    clause of its own inside the one around it: "Other 4xx responses (400, 404) are never
    retried" is one negative clause about 4xx responses and retries."""
    tokens = _TOKEN.findall(negating_spans(normalise(text)).lower())
    out: list[Clause] = []
    stack: list[_Open] = []
    current = _Open()
    previous = ""
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token == "(":
            stack.append(current)
            current, previous = _Open(), token
            continue
        if token == ")" and stack:
            current.close(out)
            current, previous = stack.pop(), token
            continue
        ends = token in _CLAUSE_ENDS and not (token == "as" and previous == "such")
        if not token[0].isalnum() or ends:
            current.close(out)
            current = _Open()
            previous = token if not token[0].isalnum() else ""
            continue
        current.add(token, is_negation_cue(token, previous, following))
        previous = token
    for open_clause in [current, *reversed(stack)]:
        open_clause.close(out)
    return out


_AUXILIARIES = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
    ]
)
_SUBJECT_STOPS = frozenset(
    [
        "i",
        "you",
        "he",
        "she",
        "it",
        "we",
        "they",
        "there",
        "this",
        "these",
        "those",
        "who",
        "which",
        "that",
        "in",
        "on",
        "at",
        "of",
        "for",
        "from",
        "with",
        "by",
        "to",
        "into",
        "about",
        "against",
        "between",
        "during",
    ]
)
"""Where a cue's reach back to its subject ends: a pronoun is the subject itself ("… on their
home turf i don't think …"), a preposition ends the subject's phrase ("the contracts for his
fight in just 10 days have yet to be signed" reaches "days", not the fight)."""


class _Open:
    """A clause being read: its tokens, and the content words each cue governs — up to
    ``SCOPE`` after it, and, when it follows an auxiliary or is a contraction of one ("is
    not", "cannot", "doesn't"), its subject's last ``REACH`` content words before it."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.stems: list[str] = []
        self.governed: set[str] = set()
        self.denied: set[str] = set()
        self.negative = False
        self.scope = 0

    def add(self, token: str, cue: bool) -> None:
        if cue:
            # Two cues cancel ("will not be unable to recruit" recruits).
            self.negative, self.scope = not self.negative, SCOPE
            auxiliary = self.tokens[-1:] and self.tokens[-1] in _AUXILIARIES
            if auxiliary or token.endswith("n't") or token == "cannot":
                self.governed.update(self._subject())
            self.tokens.append(token)
            return
        self.tokens.append(token)
        stems = [w for w in content_words(token) if not w[:1].isdigit()]
        self.stems.extend(stems)
        if self.scope and stems:
            self.governed.update(stems)
            self.denied.update(stems)
            self.scope -= 1

    def _subject(self) -> list[str]:
        found: list[str] = []
        for token in reversed(self.tokens):
            if token in _SUBJECT_STOPS or len(found) >= REACH:
                break
            found.extend(w for w in content_words(token) if not w[:1].isdigit())
        return found

    def close(self, out: list[Clause]) -> None:
        # Numbers are checked as numbers (``_numbers``), not as what a clause is about.
        words = frozenset(self.stems)
        if words:
            text = " ".join(self.tokens)
            governed, denied = frozenset(self.governed), frozenset(self.denied)
            out.append(Clause(words, self.negative, text, governed, denied))


def _opposed(
    claim: Clause, source: Clause, present: frozenset[str], sentence: frozenset[str]
) -> bool:
    """What the claim denies, the source clause states (half the words after the claim's cue
    or more, and the claim's subject in the source sentence): "the video maker said the
    chihuahua never tries to hurt the dragon" is not opposed by "the chihuahua stalks the
    dragon … the video maker said"; "Djokovic did not reach the final" is, by "Djokovic, the
    world No 1, reached the final"."""
    if not claim.denies(present):
        return True
    denied = claim.denied & present
    stated = len(denied & source.words)
    return stated > 0 and 2 * stated >= len(denied) and claim.governed & present <= sentence


def polarity_flip(
    claim: str,
    clauses_of: Callable[[int], Sequence[Clause]],
    index: Mapping[str, Collection[int]],
    context_words: Collection[str],
    sentence_words: Callable[[int], frozenset[str]],
) -> Flip | None:
    """The first clause of ``claim`` that the context says the other way round (see the
    module docstring); ``clauses_of(i)`` gives the clauses of context sentence ``i`` and
    ``sentence_words(i)`` its content words, ``index`` maps a word to the sentences holding
    it."""
    for clause in clauses(claim):
        present = clause.words & frozenset(context_words)
        if len(present) < MIN_WORDS:
            continue
        denied = clause.denies(present)
        if denied and not clause.denied & present:
            continue  # what the claim denies, the context never mentions: no evidence
        need = max(MIN_WORDS, math.ceil(SAME_SHARE * len(present)))
        counts: dict[int, int] = {}
        for word in present:
            for i in index.get(word, ()):
                counts[i] = counts.get(i, 0) + 1
        same, other = False, None
        for i in sorted((i for i, n in counts.items() if n >= need), key=lambda i: -counts[i]):
            for candidate in clauses_of(i):
                if len(candidate.words & present) < need:
                    continue
                if candidate.denies(present) == denied:
                    same = True
                    break
                if other is None and _opposed(clause, candidate, present, sentence_words(i)):
                    other = Flip(clause, candidate, i)
            if same:
                break
        if not same and other is not None:
            return other
    return None


__all__ = [
    "MIN_WORDS",
    "REACH",
    "SAME_SHARE",
    "SCOPE",
    "Clause",
    "Flip",
    "clauses",
    "polarity_flip",
]
