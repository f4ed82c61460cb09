"""A whole corpus to BM25 term ids at once, for building an index: the same terms as
:func:`._tokenize.tokenize` gives each text, but each distinct token is analysed, looked up
in the stop list and stemmed once per corpus.

Apart from :mod:`._tokenize` because a search analyses one query and never a corpus: a
cold ``kbgraph search`` does not build these records (issue 44)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kbgraph._base.text import BM25_STOP_WORDS, stems, words

from ._identifiers import compounds
from ._tokenize import (
    LEGACY_TOKENIZER_ID,
    MIN_TERM_CHARS,
    TOKENIZER_ID,
    check_tokenizer,
    compound_weights,
    compound_words,
)


@dataclass(frozen=True, slots=True)
class TokenizedCorpus:
    """Many texts as term ids: ``term_ids`` is the concatenation of every document's terms,
    ``doc_lengths[i]`` the number of terms of document ``i`` (so document ``i`` is the slice
    that starts at ``doc_lengths[:i].sum()``), ``vocab[t]`` the term of id ``t``, and
    ``norm_lengths[i]`` the length BM25 normalises by (whole forms not counted), and
    ``weights`` what each term occurrence counts (None: every one counts 1)."""

    term_ids: np.ndarray  # int32, flat
    doc_lengths: np.ndarray  # int64, one per document
    vocab: list[str]
    norm_lengths: np.ndarray  # int64, one per document
    weights: np.ndarray | None = None  # float32, like term_ids


def tokenize_corpus(texts: Iterable[str], tokenizer: str = TOKENIZER_ID) -> TokenizedCorpus:
    """The fast path for indexing: the same terms as :func:`tokenize` for every text, but each
    distinct token is analysed, looked up in the stop list and stemmed once per corpus."""
    legacy = check_tokenizer(tokenizer) == LEGACY_TOKENIZER_ID
    token_ids: dict[str, int] = {}
    flat: list[int] = []
    lengths: list[int] = []
    for text in texts:
        found = words(text, min_len=MIN_TERM_CHARS) if legacy else compounds(text)
        # setdefault evaluates len() before inserting: new tokens get consecutive ids.
        flat.extend([token_ids.setdefault(w, len(token_ids)) for w in found])
        lengths.append(len(found))
    distinct = list(token_ids)
    if legacy:
        expansion = _legacy_terms(distinct)
    else:
        expansion = _compound_terms(distinct, weighted=tokenizer == TOKENIZER_ID)
    return _expand(np.asarray(flat, dtype=np.int64), np.asarray(lengths, np.int64), expansion)


@dataclass(frozen=True, slots=True)
class _Expansion:
    """Per distinct token: its term ids ``values[offsets[i]:offsets[i + 1]]`` and the
    positions it takes."""

    offsets: np.ndarray
    values: np.ndarray
    positions: np.ndarray
    vocab: list[str]
    weights: np.ndarray | None = None  # like values; None: every term counts 1


def _expand(raw: np.ndarray, lengths: np.ndarray, ex: _Expansion) -> TokenizedCorpus:
    counts = np.diff(ex.offsets)[raw] if len(raw) else np.zeros(0, np.int64)
    total = int(counts.sum())
    firsts = np.cumsum(counts) - counts
    index = np.repeat(ex.offsets[:-1][raw] - firsts, counts) + np.arange(total, dtype=np.int64)
    doc_of_token = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    n_docs = len(lengths)
    doc_terms = np.bincount(doc_of_token, weights=counts, minlength=n_docs)
    norm = np.bincount(doc_of_token, weights=ex.positions[raw], minlength=n_docs)
    return TokenizedCorpus(
        term_ids=np.ascontiguousarray(ex.values[index], dtype=np.int32),
        doc_lengths=doc_terms.astype(np.int64),
        vocab=ex.vocab,
        norm_lengths=norm.astype(np.int64),
        weights=None if ex.weights is None else ex.weights[index].astype(np.float32),
    )


def _terms_of(unstemmed: Sequence[Sequence[str]]) -> _Expansion:
    """Stem every distinct word once; terms are numbered in order of first appearance, so
    the vocabulary is deterministic for a given corpus."""
    distinct = list(dict.fromkeys(w for group in unstemmed for w in group))
    # No word holds a lone surrogate (``\w`` never matches one), so UTF-8 encoding inside
    # the stemmer cannot fail.
    stem_of = dict(zip(distinct, stems(distinct), strict=True))
    term_ids: dict[str, int] = {}
    offsets = np.zeros(len(unstemmed) + 1, dtype=np.int64)
    values: list[int] = []
    for i, group in enumerate(unstemmed):
        values.extend(term_ids.setdefault(stem_of[w], len(term_ids)) for w in group)
        offsets[i + 1] = len(values)
    return _Expansion(offsets, np.asarray(values, np.int64), np.zeros(0, np.int64), list(term_ids))


def _legacy_terms(distinct: Sequence[str]) -> _Expansion:
    groups = [() if w in BM25_STOP_WORDS else (w,) for w in distinct]
    ex = _terms_of(groups)
    positions = np.asarray([len(g) for g in groups], dtype=np.int64)
    return _Expansion(ex.offsets, ex.values, positions, ex.vocab)


def _compound_terms(distinct: Sequence[str], *, weighted: bool) -> _Expansion:
    analysed = [compound_words(c) for c in distinct]
    ex = _terms_of([terms for terms, _ in analysed])
    positions = np.asarray([p for _, p in analysed], dtype=np.int64)
    weights = None
    if weighted:
        flat = [w for c in distinct for w in compound_weights(c)]
        weights = np.asarray(flat, dtype=np.float64)
    return _Expansion(ex.offsets, ex.values, positions, ex.vocab, weights)


__all__ = ["TokenizedCorpus", "tokenize_corpus"]
