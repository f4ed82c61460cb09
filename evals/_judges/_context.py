"""A context prepared once for the many claims judged against it: its sentences, their
content words and where each word occurs, the claim-to-sentence alignment, and the short
texts the embedding model compares a claim with.

Sentences come from ``kbgraph.evals._text.split_sentences`` with ``glued=True``: sources
scraped from web pages join sentences without a space ("funds.In the"), and lower-cased,
tokenised sources end sentences before lower-case words. A passage header line ("[2]" or
"[2] docs/faq.txt", as the evaluators number passages) is not part of the text: its number
is no number of the context.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from .._framing import SOURCE_NOUNS
from .._text import ACCENTED, content_words, numbers, split_sentences, unaccented
from ._alignment import Alignment, absent_weight, align, sentence_idf
from ._clock import ContextTimes, context_times
from ._identifiers import code_names
from ._numbers import NumberSlot, number_slots
from ._polarity import Clause, clauses

_HEADER = re.compile(r"^\[\d+\](?:[ \t]+\S+)?[ \t]*$", re.MULTILINE)
_MARKUP = re.compile(r"\*\*|__|`")
_BOUNDARY_BEFORE = frozenset(".!?:;,|(>-*\u2022\"'[{")
_BOUNDARY_AFTER = frozenset(".!?:;,|)\"']}")
QUOTE_WORDS = 4
"""A claim of at least this many words that the context holds word for word, between
clause boundaries, is a quote; a shorter one only when it is a whole line or sentence."""

CONTEXT_CACHE = 256
"""Prepared contexts kept (``context_text``): a row's metrics and the prefetch share one."""

EMBED_SENTENCES = 1
"""Aligned sentences the embedding model compares a claim with, besides the best pair
joined (each text costs a model call; a second sentence measured no gain)."""

SPAN_WORDS = 40
"""Longest part of a sentence embedded for a claim: the model's cost grows with the length
of what it reads, and a short claim's cosine with a long sentence is diluted anyway."""

SPAN_MARGIN = 12
"""Words kept on each side of the stretch of a sentence that holds the claim's words. A
long sentence's other clauses (a list of names, a birth date) diluted a paraphrase's
cosine: "He held this position until his resignation on February 28, 2013" scored 0.31
against the 40 words ending in "until his resignation on 28 February 2013", 0.60 against
that clause. 12 kept the news proxies (``judge_dev_sets.py``) where they were; 4 and 8
cost FRANK XSum 0.003."""

WINDOW_WORDS = 60
"""For passage relevance, context sentences are packed into windows of up to this many
words: a whole passage would exceed the model's input and dilute a one-sentence match."""

VERIFIER_WORDS = 90
"""Words of evidence the verifier reads with a claim: within its 128 tokens."""

META_WORDS: frozenset[str] = frozenset(
    content_words(" ".join(SOURCE_NOUNS))
    + content_words("summary summarise summarize discusses describes mentions highlights")
    + content_words("says said told states stated adds added notes noted explains reports")
    + content_words("emphasised emphasized stressed expressed")
)
"""Stems of words about the source itself, and of neutral reporting verbs ("says",
"told", "stressed": summaries rephrase who said what); not counted as missing."""


@dataclass(frozen=True)
class ContextText:
    """A context prepared once for many claims."""

    text: str

    @cached_property
    def body(self) -> str:
        """The text without passage header lines."""
        return _HEADER.sub("", self.text) if "[" in self.text else self.text

    @cached_property
    def sentences(self) -> list[str]:
        body = self.body
        return split_sentences(body, glued=True) or ([body] if body.strip() else [])

    @cached_property
    def sentence_lists(self) -> list[list[str]]:
        return [with_units(content_words(s)) for s in self.sentences]

    @cached_property
    def sentence_words(self) -> list[frozenset[str]]:
        return [frozenset(ws) for ws in self.sentence_lists]

    @cached_property
    def index(self) -> dict[str, list[int]]:
        """Content word → the sentences holding it."""
        out: dict[str, list[int]] = {}
        for i, words in enumerate(self.sentence_words):
            for word in words:
                out.setdefault(word, []).append(i)
        return out

    @cached_property
    def idf(self) -> dict[str, float]:
        return sentence_idf(self.sentence_words)

    @cached_property
    def words(self) -> frozenset[str]:
        return frozenset(self.index)

    @cached_property
    def bigrams(self) -> frozenset[tuple[str, str]]:
        return frozenset(p for ws in self.sentence_lists for p in itertools.pairwise(ws))

    @cached_property
    def code_names(self) -> frozenset[str]:
        """The snake_case names in code the sentences write, case folded."""
        return code_names(self.sentences)

    @cached_property
    def unaccented_words(self) -> list[frozenset[str]]:
        """``sentence_words`` of the sentences with their letters' marks left out."""
        return [
            frozenset(content_words(unaccented(s))) if ACCENTED.search(s) else words
            for s, words in zip(self.sentences, self.sentence_words, strict=True)
        ]

    @cached_property
    def clock_times(self) -> ContextTimes:
        """The clock times of each sentence (``_clock``)."""
        return context_times(self.sentences)

    @cached_property
    def numbers(self) -> frozenset[str]:
        return frozenset(numbers(self.body))

    @cached_property
    def number_index(self) -> dict[str, list[int]]:
        """Number → the sentences holding it."""
        out: dict[str, list[int]] = {}
        for i, sentence in enumerate(self.sentences):
            for number in numbers(sentence):
                out.setdefault(number, []).append(i)
        return out

    @cached_property
    def _slots(self) -> dict[int, list[NumberSlot]]:
        return {}

    def slots_of(self, i: int) -> list[NumberSlot]:
        """The numbers of sentence ``i`` with their units (``_numbers``), cached."""
        found = self._slots.get(i)
        if found is None:
            found = self._slots[i] = number_slots(self.sentences[i])
        return found

    @cached_property
    def _clauses(self) -> dict[int, list[Clause]]:
        return {}

    def clauses_of(self, i: int) -> list[Clause]:
        """The clauses of sentence ``i`` with their polarity (``_polarity``), cached."""
        found = self._clauses.get(i)
        if found is None:
            found = self._clauses[i] = clauses(self.sentences[i])
        return found

    def coverage(self, words: Iterable[str], i: int) -> float:
        """The idf-weighted share of ``words`` that sentence ``i`` holds (``_alignment``'s
        weights)."""
        wanted = set(words)
        if not wanted:
            return 0.0
        absent = absent_weight(len(self.sentences))
        weight = {w: self.idf.get(w, absent) for w in wanted}
        held = self.sentence_words[i]
        return sum(v for w, v in weight.items() if w in held) / sum(weight.values())

    @cached_property
    def quotable(self) -> frozenset[str]:
        """Every line and sentence, normalised as :func:`quote_key` does."""
        units = [*self.body.splitlines(), *self.sentences]
        return frozenset(key for key in map(quote_key, units) if key)

    @cached_property
    def marked(self) -> str:
        """The text as :func:`quote_key` normalises a claim, its lines joined by ``"\\n"``
        (a clause boundary)."""
        lines = (" ".join(_MARKUP.sub("", line).split()).lower() for line in self.body.splitlines())
        return "\n".join(line for line in lines if line)

    @cached_property
    def flat(self) -> str:
        return self.marked.replace("\n", " ")

    def is_quote(self, claim: str) -> bool:
        """``claim`` is a whole line or sentence of the context, or at least
        ``QUOTE_WORDS`` words of it word for word (across lines) that start and end at a
        clause boundary: "Other 4xx responses are never retried" quotes "Other 4xx
        responses are never retried, because …", but "the plan passed" does not quote
        "the plan passed without opposition", nor "the cache is enabled" "it is false that
        the cache is enabled"."""
        key = quote_key(claim)
        if not key:
            return False
        if key in self.quotable:
            return True
        if len(key.split()) < QUOTE_WORDS:
            return False
        marked, flat = self.marked, self.flat
        start = flat.find(key)
        while start >= 0:
            end = start + len(key)
            if _bounded(marked, flat, start, end):
                return True
            start = flat.find(key, start + 1)
        return False

    @cached_property
    def _alignments(self) -> dict[tuple[str, ...], Alignment]:
        return {}

    def align(self, words: Sequence[str]) -> Alignment:
        """The claim's alignment with the sentences (``_alignment.align``), cached."""
        key = tuple(sorted(set(words)))
        found = self._alignments.get(key)
        if found is None:
            found = align(key, self.sentence_words, self.index, self.idf)
            self._alignments[key] = found
        return found

    def candidates(self, claim: str) -> list[str]:
        """The texts the embedding model compares ``claim`` with: the part of each of its
        best ``EMBED_SENTENCES`` aligned sentences that holds the claim's words
        (:func:`span`), and those of the best pair joined; the first sentence when none
        shares a word."""
        words = claim_words(claim, self)
        alignment = self.align(words)
        if not alignment.top:
            return [span(s, frozenset(), SPAN_WORDS) for s in self.sentences[:1]]
        wanted = frozenset(words)
        texts = [span(self.sentences[i], wanted, SPAN_WORDS) for i in alignment.top]
        texts = texts[:EMBED_SENTENCES]
        pair = alignment.pair_indices
        if len(pair) > 1:
            texts.append(" ".join(span(self.sentences[i], wanted, SPAN_WORDS // 2) for i in pair))
        return texts

    def verifier_evidence(self, claim: str) -> list[str]:
        """What the trained verifier reads ``claim`` against: its best aligned sentence with
        one neighbour on each side (``VERIFIER_WORDS`` at most), and the best pair of
        sentences when its second one lies outside that window; the first window when no
        sentence shares a word. One or two pairs per claim: each costs a model run."""
        alignment = self.align(claim_words(claim, self))
        if not alignment.top:
            return self.windows[:1]
        best = alignment.top[0]
        around = range(max(0, best - 1), min(len(self.sentences), best + 2))
        texts = [_cut(" ".join(self.sentences[i] for i in around), VERIFIER_WORDS)]
        pair = alignment.pair_indices
        if len(pair) > 1 and any(i not in around for i in pair):
            texts.append(_cut(" ".join(self.sentences[i] for i in pair), VERIFIER_WORDS))
        return texts

    @cached_property
    def windows(self) -> list[str]:
        """Consecutive sentences packed up to ``WINDOW_WORDS`` words."""
        out: list[str] = []
        current: list[str] = []
        size = 0
        for sentence in self.sentences:
            n = len(sentence.split())
            if current and size + n > WINDOW_WORDS:
                out.append(" ".join(current))
                current, size = [], 0
            current.append(sentence)
            size += n
        if current:
            out.append(" ".join(current))
        return out


def _cut(text: str, limit: int) -> str:
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit])


def _bounded(marked: str, flat: str, start: int, end: int) -> bool:
    """``flat[start:end]`` starts and ends at a clause boundary: punctuation, a line's end
    (``marked`` is ``flat`` with the line ends kept as ``"\\n"``) or the text's."""
    if start > 0 and marked[start - 1] != "\n":
        before = flat[start - 1]
        if before == " ":
            before = flat[start - 2] if start > 1 else "."
        if before not in _BOUNDARY_BEFORE:
            return False
    return (
        end >= len(flat)
        or marked[end] == "\n"
        or flat[end] in _BOUNDARY_AFTER
        or flat[end - 1] in ".!?|)"
    )


def span(sentence: str, wanted: frozenset[str], limit: int) -> str:
    """At most ``limit`` words of ``sentence``: the stretch from the first to the last word
    whose stem is in ``wanted``, widened evenly by up to ``SPAN_MARGIN`` words on each side
    within ``limit`` (or cut from its start when longer)."""
    tokens = sentence.split()
    if len(tokens) <= limit:
        return sentence
    hits = [i for i, t in enumerate(tokens) if wanted.intersection(content_words(t))]
    first, last = (hits[0], hits[-1]) if hits else (0, 0)
    if hits:
        limit = min(limit, last - first + 1 + 2 * SPAN_MARGIN)
    if last - first + 1 >= limit:
        start = first
    else:
        start = max(0, min(first - (limit - (last - first + 1)) // 2, len(tokens) - limit))
    return " ".join(tokens[start : start + limit])


@lru_cache(maxsize=CONTEXT_CACHE)
def context_text(text: str) -> ContextText:
    """The prepared context for ``text``, shared by every call that judges claims against
    it: the prefetch, each metric of a row and the citation check split it once."""
    return ContextText(text)


def quote_key(text: str) -> str:
    """Case, spacing, code quotes, bold and final punctuation left out: the claim splitter
    capitalises a claim's first letter, drops ``inline code`` quotes and ``**bold**`` marks
    and ends it with a full stop."""
    return " ".join(_MARKUP.sub("", text).split()).lower().rstrip(".:;, ")


def claim_words(claim: str, context: ContextText) -> list[str]:
    """The claim's distinct content words, without words about the source that the
    context lacks ("the article"); a number glued to its unit ("3pm") stands for the unit,
    as the number is checked as a number."""
    stems = (_unit_of(w) or w for w in content_words(claim))
    return [w for w in dict.fromkeys(stems) if w not in META_WORDS or w in context.words]


_GLUED_UNIT = re.compile(r"^\d+(?:[.,]\d+)?([^\W\d_]{1,4})$")


def _unit_of(word: str) -> str | None:
    match = _GLUED_UNIT.match(word)
    return match.group(1) if match else None


def with_units(words: list[str]) -> list[str]:
    """``words`` plus the unit of each number glued to one ("3pm" also gives "pm", "10ft"
    "ft"): the source's "3pm" supports a claim's "3 pm"."""
    units = [unit for unit in map(_unit_of, words) if unit]
    return [*words, *units] if units else words


__all__ = [
    "CONTEXT_CACHE",
    "EMBED_SENTENCES",
    "META_WORDS",
    "QUOTE_WORDS",
    "SPAN_MARGIN",
    "SPAN_WORDS",
    "WINDOW_WORDS",
    "ContextText",
    "claim_words",
    "context_text",
    "quote_key",
    "span",
    "with_units",
]
