"""Text to BM25 terms, by one of three recorded analysers.

- :data:`TOKENIZER_ID` (the current one): identifier-aware, as :data:`IDENTIFIERS_1_ID`
  below, and a part glued into a word of code (``RetryableError``'s retryable and error,
  ``DEFAULT_STATUS_CODES``' codes) counts :data:`GLUED_PART_WEIGHT` of a whole word's
  occurrence in the term frequency (documents and queries alike), so that "Is it
  retryable?" ranks the passage that says "retryable" above code that only names things
  with it. Plain pieces of hyphenated words and dotted paths (``IL-6``, ``HB-601``,
  ``os.environ``) are words and count in full (:func:`._identifiers.glued_parts`).
- :data:`IDENTIFIERS_1_ID`: identifier-aware, every term counted in full. Every
  compound (``\\w+`` runs joined by ``.``, ``::`` or ``-``) gives its parts and its whole forms
  (:mod:`._identifiers`): ``DEFAULT_TIMEOUT_CONFIG`` gives default, timeout, config and
  defaulttimeoutconfig. Parts shorter than two characters and Lucene's English stop words
  are dropped, as bm25s does for words; every term is Snowball-stemmed. A plain word is
  one part, so prose gets the terms of bm25s (Lù 2024, arXiv:2407.03618).
- :data:`LEGACY_TOKENIZER_ID`: ``\\w\\w+`` words as they are (bm25s'
  ``(?u)\\b\\w\\w+\\b``), the analyser of indexes built before identifiers were split. An
  index records its analyser, and its queries are analysed by the same one.

A compound's whole forms stand at the positions of its parts, so they do not lengthen the
document: BM25's document length counts a compound's kept parts (one position when only a
whole is kept), as Lucene's ``BM25Similarity`` discounts overlapping tokens
(``discountOverlaps``, the default).
"""

from __future__ import annotations

from functools import lru_cache

from kbgraph._base.text import BM25_STOP_WORDS, stems, words
from kbgraph.errors import IndexCorruptError

from ._identifiers import compounds, glued_parts, split_compound

TOKENIZER_ID = "identifiers-2|stop-en-lucene33|snowball-english"
"""Names the pipeline; stored with an index so that a changed analyser means a rebuild."""
IDENTIFIERS_1_ID = "identifiers-1|stop-en-lucene33|snowball-english"
"""Identifier-aware without weights (issue 22); indexes built with it are still searched."""
LEGACY_TOKENIZER_ID = "regex-w2+|stop-en-lucene33|snowball-english"
"""The analyser before identifiers were split; indexes built with it are still searched."""
TOKENIZERS: tuple[str, ...] = (TOKENIZER_ID, IDENTIFIERS_1_ID, LEGACY_TOKENIZER_ID)
GLUED_PART_WEIGHT = 0.5
"""What one occurrence of a part glued into an identifier counts in the term frequency,
against 1 for a word (and for the whole identifier)."""

MIN_TERM_CHARS = 2


def check_tokenizer(tokenizer: str) -> str:
    if tokenizer not in TOKENIZERS:
        raise IndexCorruptError(
            f"the index was analysed by {tokenizer!r}; this version reads "
            f"{' or '.join(map(repr, TOKENIZERS))}; rebuild the index (kbgraph index "
            "--rebuild <folder>)"
        )
    return tokenizer


@lru_cache(maxsize=1 << 18)
def compound_words(compound: str) -> tuple[tuple[str, ...], int]:
    """The unstemmed terms of one compound (kept parts, then wholes) and the positions it
    takes in a document."""
    parts, wholes = split_compound(compound)
    kept = [p for p in parts if _kept(p)]
    positions = len(kept) or (1 if wholes else 0)
    return (*kept, *wholes), positions


def _kept(part: str) -> bool:
    return len(part) >= MIN_TERM_CHARS and part not in BM25_STOP_WORDS


@lru_cache(maxsize=1 << 18)
def compound_weights(compound: str) -> tuple[float, ...]:
    """What each term of :func:`compound_words` counts in the current analyser."""
    parts, wholes = split_compound(compound)
    glued = glued_parts(compound)
    kept = [GLUED_PART_WEIGHT if g else 1.0 for p, g in zip(parts, glued, strict=True) if _kept(p)]
    return (*kept, *(1.0 for _ in wholes))


def analyse(text: str, tokenizer: str = TOKENIZER_ID) -> tuple[list[str], int]:
    """The terms of ``text`` in order, repeats kept (a query term repeated counts twice, as
    in Lucene's BooleanQuery and bm25s), and the document length BM25 divides by."""
    terms, _, length = analyse_weighted(text, tokenizer)
    return terms, length


def analyse_weighted(
    text: str, tokenizer: str = TOKENIZER_ID
) -> tuple[list[str], list[float], int]:
    """:func:`analyse` with what each term occurrence counts (1.0 for every term but the
    glued parts of identifiers, and for every term of the older analysers)."""
    if check_tokenizer(tokenizer) == LEGACY_TOKENIZER_ID:
        terms = stems([w for w in words(text, min_len=MIN_TERM_CHARS) if w not in BM25_STOP_WORDS])
        return terms, [1.0] * len(terms), len(terms)
    weighted = tokenizer == TOKENIZER_ID
    found: list[str] = []
    weights: list[float] = []
    length = 0
    for compound in compounds(text):
        unstemmed, positions = compound_words(compound)
        found.extend(unstemmed)
        weights.extend(compound_weights(compound) if weighted else [1.0] * len(unstemmed))
        length += positions
    return stems(found), weights, length


def tokenize(text: str, tokenizer: str = TOKENIZER_ID) -> list[str]:
    """The terms of ``text`` (see :func:`analyse`)."""
    return analyse(text, tokenizer)[0]


__all__ = [
    "GLUED_PART_WEIGHT",
    "IDENTIFIERS_1_ID",
    "LEGACY_TOKENIZER_ID",
    "MIN_TERM_CHARS",
    "TOKENIZERS",
    "TOKENIZER_ID",
    "analyse",
    "analyse_weighted",
    "check_tokenizer",
    "compound_weights",
    "tokenize",
]
