"""Text to BM25 terms: lowercase, ``(?u)\\b\\w\\w+\\b`` words, English stop words dropped,
Snowball English stems (PyStemmer).

The pipeline is the one of bm25s (Lù 2024, arXiv:2407.03618) with ``stopwords="en"`` and a
PyStemmer English stemmer, so that scores and rankings are comparable with it: stop words are
matched on the lowercased word *before* stemming, and single-character words never become
terms. ``\\w`` is Unicode-aware, so accented words (``café``) and CJK runs are terms too.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import Stemmer

TOKEN_PATTERN = r"(?u)\b\w\w+\b"

# Lucene's English stop set (StopAnalyzer.ENGLISH_STOP_WORDS_SET), which is also bm25s'
# STOPWORDS_EN ("en"). Kept short on purpose: BM25's idf already discounts common words.
STOPWORDS_EN: frozenset[str] = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into",
        "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then",
        "there", "these", "they", "this", "to", "was", "will", "with",
    }
)  # fmt: skip

TOKENIZER_ID = "regex-w2+|stop-en-lucene33|snowball-english"
"""Names the pipeline; stored with an index so that a changed tokenizer means a rebuild."""

_find_words = re.compile(TOKEN_PATTERN).findall
# Every ASCII byte that ``\w`` does not match becomes a space; bytes >= 0x80 stay as they are.
_ASCII_SEPARATORS = bytes(
    0x20 if i < 0x80 and not re.match(r"\w", chr(i)) else i for i in range(256)
)
# PyStemmer's Stemmer objects keep a cache and are not safe to share between threads.
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = Stemmer.Stemmer("english")
        _local.stemmer = stemmer
    return stemmer


def words(lowered: str) -> list[str]:
    """``re.findall(TOKEN_PATTERN, lowered)``, about twice as fast.

    Matches of the pattern are the maximal runs of word characters of length >= 2, and runs
    never span a non-word character; so splitting first on ASCII non-word characters and
    whitespace (both non-word) changes nothing. The split runs in C (bytes.translate,
    str.split); only pieces holding non-ASCII characters, which may hide non-word ones such
    as "–" or "±", go through the regex.
    """
    raw = lowered.encode("utf-8", "surrogatepass").translate(_ASCII_SEPARATORS)
    pieces = raw.decode("utf-8", "surrogatepass").split()
    out: list[str] = []
    for piece in pieces:
        if piece.isascii():
            if len(piece) > 1:
                out.append(piece)
        else:
            out.extend(_find_words(piece))
    return out


def tokenize(text: str) -> list[str]:
    """The terms of ``text``, in order, repeats kept (a query term repeated counts twice, as
    in Lucene's BooleanQuery and bm25s)."""
    content = [w for w in words(text.lower()) if w not in STOPWORDS_EN]
    if not content:
        return []
    stems: list[str] = _stemmer().stemWords(content)
    return stems


@dataclass(frozen=True, slots=True)
class TokenizedCorpus:
    """Many texts as term ids: ``term_ids`` is the concatenation of every document's terms,
    ``doc_lengths[i]`` the number of terms of document ``i`` (so document ``i`` is the slice
    that starts at ``doc_lengths[:i].sum()``), ``vocab[t]`` the term of id ``t``."""

    term_ids: np.ndarray  # int32, flat
    doc_lengths: np.ndarray  # int64, one per document
    vocab: list[str]

    def doc_terms(self, doc: int) -> list[str]:
        start = int(self.doc_lengths[:doc].sum())
        ids = self.term_ids[start : start + int(self.doc_lengths[doc])]
        return [self.vocab[int(t)] for t in ids]


def tokenize_corpus(texts: Iterable[str]) -> TokenizedCorpus:
    """The fast path for indexing: the same terms as :func:`tokenize` for every text, but each
    distinct word is looked up in the stop list and stemmed once for the whole corpus."""
    word_ids: dict[str, int] = {}
    flat: list[int] = []
    lengths: list[int] = []
    for text in texts:
        found = words(text.lower())
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
    content = [w for w in distinct if w not in STOPWORDS_EN]
    # No word holds a lone surrogate (``\w`` never matches one), so UTF-8 encoding inside
    # the stemmer cannot fail.
    stems: list[str] = _stemmer().stemWords(content) if content else []
    stem_of = dict(zip(content, stems, strict=True))
    term_ids: dict[str, int] = {}
    mapping = np.full(len(distinct), -1, dtype=np.int32)
    for i, word in enumerate(distinct):
        stem = stem_of.get(word)
        if stem is not None:
            mapping[i] = term_ids.setdefault(stem, len(term_ids))
    return mapping, list(term_ids)


__all__ = [
    "STOPWORDS_EN",
    "TOKENIZER_ID",
    "TOKEN_PATTERN",
    "TokenizedCorpus",
    "tokenize",
    "tokenize_corpus",
    "words",
]
