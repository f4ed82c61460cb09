"""Text helpers shared by claims, the offline judge and the baseline: sentences, content
words (stemmed), numbers and negations.

Words, stems and stop lists are :mod:`kbgraph.retrieval.text`'s (the ones BM25 and the
subgraph use): content words are its words of two characters or more, Snowball-stemmed,
minus ``FUNCTION_WORDS`` (a wider list than BM25's: BM25's idf discounts common words,
plain overlap has no idf, so function words must go explicitly) and ``NEGATIONS``.
"""

from __future__ import annotations

import itertools
import re

from kbgraph.retrieval.chunking import sentence_starts
from kbgraph.retrieval.text import FUNCTION_WORDS, NEGATIONS, stem, words

_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate((
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen", "twenty",
    ))
}  # fmt: skip
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])|\b\d+(?=[a-zA-Z%])")


def content_words(text: str) -> list[str]:
    """Stemmed content words of ``text`` in order (repeats kept). An identifier such as
    ``max_attempts`` also gives its parts (``max``, ``attempts``), so that prose about a
    setting matches the setting's name. Number words (``five``) are left to
    :func:`numbers`, which maps them to digits."""
    out: list[str] = []
    for word in words(text, min_len=2):
        if word in FUNCTION_WORDS or word in NEGATIONS or word in _NUMBER_WORDS:
            continue
        out.append(stem(word))
        if "_" in word:
            out.extend(
                stem(part)
                for part in word.split("_")
                if len(part) > 1 and part not in FUNCTION_WORDS
            )
    return out


def numbers(text: str) -> set[str]:
    """Numbers in ``text``, normalised: thousands separators dropped (``2,500`` = ``2500``),
    number words mapped to digits."""
    found = {m.group(0).replace(",", "") for m in _NUMBER.finditer(text)}
    found |= {_NUMBER_WORDS[w] for w in words(text, min_len=2) if w in _NUMBER_WORDS}
    return {n.rstrip(".") for n in found if n}


NEGATION_SCOPE = 3
"""A negation cue negates the next few content words of its clause (a fixed window is the
classic NegEx-style scope, Chapman et al. 2001)."""

_CLAUSE_TOKEN = re.compile(r"\w+(?:'t)?|[.,;:!?()\[\]]")
_SCOPE_ENDS = frozenset({
    "but", "as", "because", "since", "which", "who", "whom", "whose", "while", "whereas",
    "although", "though", "however", "except", "when", "after", "before", "until", "if",
})  # fmt: skip
"""Words that open another clause and end a negation's scope (NegEx's termination terms):
"it did not get much better as the Yorkshiremen …" does not negate the Yorkshiremen."""


def negated_terms(text: str, scope: int = NEGATION_SCOPE) -> frozenset[str]:
    """Stemmed content words that a negation cue (``not``, ``never``, ``doesn't`` …) governs:
    up to ``scope`` content words after the cue, within its clause (punctuation or a word of
    ``_SCOPE_ENDS`` ends it). A bare "No" / "No," opening a sentence answers a question and
    negates nothing."""
    out: set[str] = set()
    remaining = 0
    previous = "."
    for token in _CLAUSE_TOKEN.findall(text.lower()):
        if not token[0].isalnum() or token in _SCOPE_ENDS:
            remaining = 0
            previous = token
            continue
        if token.endswith("'t") or token in NEGATIONS:
            opening = token == "no" and previous in ".!?"
            remaining = 0 if opening else scope
        elif remaining and token not in FUNCTION_WORDS and len(token) > 1:
            out.add(stem(token))
            remaining -= 1
        previous = token
    return frozenset(out)


_BLOCK_START = re.compile(r"^\s*(?:[-*+•]\s|\d+[.)]\s|\||#|```|~~~|>)")


def _blocks(text: str) -> list[str]:
    """Paragraphs with hard line wraps joined; list items, table rows, headings, quotes and
    every line of a fenced code block stay lines of their own (Markdown's block structure,
    roughly)."""
    blocks: list[str] = []
    current: list[str] = []
    in_fence = False
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        stripped = line.strip()
        fence = stripped.startswith(("```", "~~~"))
        if not stripped or fence or in_fence or _BLOCK_START.match(line) or _is_line_block(current):
            if current:
                blocks.append(" ".join(current))
            current = []
        if fence:
            in_fence = not in_fence
        if stripped:
            current.append(stripped)
    if current:
        blocks.append(" ".join(current))
    return blocks


def _is_line_block(current: list[str]) -> bool:
    """Table rows, headings and quotes end at the end of their line."""
    return bool(current) and current[0][:1] in "|#>"


_GLUED_END = re.compile(r"(?<=[^\W\d_A-Z]{2}[.!?])(?=[A-Z][^\W\d_A-Z]+\s)")
"""A full stop after a lower-case word and before a capitalised word, without a space."""


def split_blocks(text: str, *, glued: bool = False) -> list[list[str]]:
    """The sentences of ``text`` grouped by block (paragraph, list item, table row …);
    hard-wrapped lines of one paragraph are joined. A sentence ends at ``.!?…`` and
    whitespace, or at CJK ``。！？``, whatever the next letter's case: lower-cased,
    tokenised text ("the vote was 5-2 . the mayor left .") has sentences too. Abbreviations,
    initials (``U.S.``, ``e.g.``), decimals (``1.6 s``) and dotted names (``harbor.yaml``)
    do not end one (the chunker's rules, ``kbgraph.retrieval.chunking``).

    ``glued=True`` also ends a sentence where a full stop joins two without a space
    ("funds.In the"), as text scraped from web pages often does; only for sources, not
    answers, where ``pathlib.Path`` is a name."""
    out: list[list[str]] = []
    for block in _blocks(text):
        cuts = [0, *sentence_starts(block), len(block)]
        pieces = [block[start:end].strip() for start, end in itertools.pairwise(cuts)]
        if glued:
            pieces = [part for piece in pieces for part in _GLUED_END.split(piece)]
        sentences = [piece for piece in pieces if piece]
        if sentences:
            out.append(sentences)
    return out


def split_sentences(text: str, *, glued: bool = False) -> list[str]:
    """Every sentence of :func:`split_blocks`, in order."""
    return [sentence for block in split_blocks(text, glued=glued) for sentence in block]


__all__ = [
    "content_words",
    "negated_terms",
    "numbers",
    "split_blocks",
    "split_sentences",
]
