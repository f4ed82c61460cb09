"""Text to BM25 terms: the words of :mod:`kbgraph.retrieval.text` at least two characters
long (bm25s' ``(?u)\\b\\w\\w+\\b``), Lucene's English stop words dropped, Snowball English
stems.

The pipeline is the one of bm25s (Lù 2024, arXiv:2407.03618) with ``stopwords="en"`` and a
PyStemmer English stemmer, so that scores and rankings are comparable with it: stop words are
matched on the lowercased word *before* stemming, and single-character words never become
terms. ``\\w`` is Unicode-aware, so accented words (``café``) and CJK runs are terms too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..text import BM25_STOP_WORDS, stems, words

TOKENIZER_ID = "regex-w2+|stop-en-lucene33|snowball-english"
"""Names the pipeline; stored with an index so that a changed tokenizer means a rebuild."""

MIN_TERM_CHARS = 2


def tokenize(text: str) -> list[str]:
    """The terms of ``text``, in order, repeats kept (a query term repeated counts twice, as
    in Lucene's BooleanQuery and bm25s)."""
    return stems([w for w in words(text, min_len=MIN_TERM_CHARS) if w not in BM25_STOP_WORDS])


@dataclass(frozen=True, slots=True)
class TokenizedCorpus:
    """Many texts as term ids: ``term_ids`` is the concatenation of every document's terms,
    ``doc_lengths[i]`` the number of terms of document ``i`` (so document ``i`` is the slice
    that starts at ``doc_lengths[:i].sum()``), ``vocab[t]`` the term of id ``t``."""

    term_ids: np.ndarray  # int32, flat
    doc_lengths: np.ndarray  # int64, one per document
    vocab: list[str]


def tokenize_corpus(texts: Iterable[str]) -> TokenizedCorpus:
    """The fast path for indexing: the same terms as :func:`tokenize` for every text, but each
    distinct word is looked up in the stop list and stemmed once for the whole corpus."""
    word_ids: dict[str, int] = {}
    flat: list[int] = []
    lengths: list[int] = []
    for text in texts:
        found = words(text, min_len=MIN_TERM_CHARS)
        # setdefault evaluates len() before inserting: new words get consecutive ids.
        flat.extend([word_ids.setdefault(w, len(word_ids)) for w in found])
        lengths.append(len(found))
    word_to_term, vocab = _word_terms(list(word_ids))
    raw = np.asarray(flat, dtype=np.int64)
    mapped = word_to_term[raw]
    kept = mapped >= 0
    doc_of_word = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    doc_lengths = np.bincount(doc_of_word[kept], minlength=len(lengths)).astype(np.int64)
    return TokenizedCorpus(
        term_ids=np.ascontiguousarray(mapped[kept], dtype=np.int32),
        doc_lengths=doc_lengths,
        vocab=vocab,
    )


def _word_terms(distinct: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Map each distinct word to a term id (``-1`` for stop words); terms are numbered in
    order of first appearance, so the vocabulary is deterministic for a given corpus."""
    content = [w for w in distinct if w not in BM25_STOP_WORDS]
    # No word holds a lone surrogate (``\w`` never matches one), so UTF-8 encoding inside
    # the stemmer cannot fail.
    stem_of = dict(zip(content, stems(content), strict=True))
    term_ids: dict[str, int] = {}
    mapping = np.full(len(distinct), -1, dtype=np.int32)
    for i, word in enumerate(distinct):
        stem = stem_of.get(word)
        if stem is not None:
            mapping[i] = term_ids.setdefault(stem, len(term_ids))
    return mapping, list(term_ids)


__all__ = [
    "MIN_TERM_CHARS",
    "TOKENIZER_ID",
    "TokenizedCorpus",
    "tokenize",
    "tokenize_corpus",
]
