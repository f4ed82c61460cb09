"""Okapi BM25 as small pure functions, in the Lucene variant.

BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
Foundations and Trends in IR 3(4), 2009) scores a document ``d`` for a query ``q`` as

    score(d, q) = Σ_{t ∈ q} idf(t) · tf(t, d) / (tf(t, d) + k1 · (1 - b + b · |d| / avgdl))

with the idf and the tf-part of Lucene (≥ 8, no ``(k1 + 1)`` factor, which does not change a
ranking) as implemented in bm25s, method ``lucene`` (Lù 2024, arXiv:2407.03618):

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

Because neither factor depends on the query, every (term, document) score is computed once at
indexing time ("eager" scoring, as bm25s does) and stored column by column (one column per
term, CSC-like); a query is then the sum of a few columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_K1 = 1.5
DEFAULT_B = 0.75


def idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """Lucene's BM25 idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))``, always > 0 for
    ``0 < df ≤ N`` (Robertson & Zaragoza 2009, eq. 3.3, with Lucene's ``1 +`` that keeps it
    positive; bm25s ``_calculate_idf_lucene``)."""
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def tf_part(
    tf: np.ndarray, doc_len: np.ndarray, avgdl: float, k1: float = DEFAULT_K1, b: float = DEFAULT_B
) -> np.ndarray:
    """The saturating term-frequency factor ``tf / (tf + k1 · (1 - b + b · dl / avgdl))``
    (Robertson & Zaragoza 2009, eq. 3.15 without the ``k1 + 1`` numerator, as in Lucene and
    bm25s ``_score_tfc_lucene``). ``avgdl`` of 0 (every document empty) leaves length
    normalisation out, since no term occurs anyway."""
    tf = np.asarray(tf, dtype=np.float64)
    rel_len = np.asarray(doc_len, dtype=np.float64) / avgdl if avgdl > 0 else 1.0
    return tf / (tf + k1 * (1.0 - b + b * rel_len))


def avg_doc_len(doc_lengths: np.ndarray) -> float:
    """``avgdl``: mean number of terms per document (stop words excluded), 0 when empty."""
    return float(np.mean(doc_lengths)) if len(doc_lengths) else 0.0


@dataclass(frozen=True, slots=True)
class ScoreColumns:
    """Precomputed BM25 scores, one column per term: the documents containing term ``t`` are
    ``indices[indptr[t]:indptr[t+1]]`` (ascending) and their scores for ``t`` the same slice of
    ``data``. The layout of a CSC matrix of shape (documents, terms), without scipy."""

    data: np.ndarray  # float32
    indices: np.ndarray  # int32, document ids
    indptr: np.ndarray  # int64, n_terms + 1


def score_columns(
    term_ids: np.ndarray,
    doc_lengths: np.ndarray,
    n_terms: int,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
    norm_lengths: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> ScoreColumns:
    """Eager BM25 scores of every (term, document) pair of a tokenized corpus.

    ``term_ids`` holds every document's terms back to back, ``doc_lengths`` how many belong to
    each document; ``norm_lengths`` the lengths BM25 normalises by when they differ (terms
    at overlapping positions counted once; default ``doc_lengths``); ``weights`` what each
    term occurrence adds to its term frequency (default 1 each). One sort of
    ``term · N + doc`` keys yields the term frequencies already in column order (term,
    then document), so no per-document Python loop is needed.
    """
    n_docs = len(doc_lengths)
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), doc_lengths)
    keys = np.asarray(term_ids, dtype=np.int64) * max(n_docs, 1) + doc_of
    if weights is None:
        pairs, tf = np.unique(keys, return_counts=True)
    else:
        pairs, inverse = np.unique(keys, return_inverse=True)
        tf = np.bincount(inverse.ravel(), weights=weights, minlength=len(pairs))
    term = pairs // max(n_docs, 1)
    doc = pairs - term * max(n_docs, 1)
    df = np.bincount(term, minlength=n_terms)
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    lengths = doc_lengths if norm_lengths is None else norm_lengths
    avgdl = avg_doc_len(lengths)
    scores = idf(df, n_docs)[term] * tf_part(tf, lengths[doc], avgdl, k1, b)
    return ScoreColumns(
        data=scores.astype(np.float32),
        indices=doc.astype(np.int32),
        indptr=indptr,
    )


def query_scores(
    columns: ScoreColumns,
    query_terms: Sequence[int],
    n_docs: int,
    term_weights: Sequence[float] | None = None,
) -> np.ndarray:
    """BM25 of every document for a query given as term ids: the sum of the query terms'
    columns (a term repeated in the query counts once per occurrence), each times its
    ``term_weights`` entry when given. Float32, length N."""
    if not len(query_terms):
        return np.zeros(n_docs, dtype=np.float32)
    indptr = columns.indptr
    spans = [(int(indptr[t]), int(indptr[t + 1])) for t in query_terms]
    docs = np.concatenate([columns.indices[s:e] for s, e in spans])
    weights = np.concatenate([columns.data[s:e] for s, e in spans])
    if term_weights is not None and any(w != 1.0 for w in term_weights):
        factors = [
            np.full(e - s, w, np.float32) for (s, e), w in zip(spans, term_weights, strict=True)
        ]
        weights = weights * np.concatenate(factors)
    return np.bincount(docs, weights=weights, minlength=n_docs).astype(np.float32)


__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "ScoreColumns",
    "avg_doc_len",
    "idf",
    "query_scores",
    "score_columns",
    "tf_part",
]
