"""The lexical side in PostgreSQL: full-text search over the engine's own terms.

Each chunk's ``lexemes`` column is a ``tsvector`` of the terms the folder index's BM25 uses
(``kbgraph.retrieval.lexical.tokenize``: Unicode words, Lucene's English stop words, the
Snowball English stemmer that PostgreSQL's ``english`` configuration also uses), so a GIN
index finds the chunks sharing a term with the query and both stores rank by the same
BM25 (Lucene variant, ``lexical._bm25``): ``idf`` comes from a per-knowledge-base table of
document frequencies kept in the same transaction as the rows, the term frequency from the
number of positions a lexeme has in the ``tsvector``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..lexical import idf, tokenize

MAX_POSITIONS = 256
"""PostgreSQL keeps at most 256 positions per lexeme: a term's frequency in one chunk is
counted up to 256 (BM25's term-frequency factor is then within 0.5 % of its limit)."""
MAX_LEXEME_BYTES = 2046  # tsvector refuses longer words; such "words" are binary noise
SPARSE_DIMS = 1_000_000_000
"""The size of every BM25 weights ``sparsevec`` (pgvector's largest): term ids index it."""


def _usable(term: str) -> bool:
    return len(term.encode("utf-8")) <= MAX_LEXEME_BYTES


def _quoted(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(text: str) -> tuple[str, int]:
    """The ``tsvector`` of ``text``'s terms (term frequency as the count of positions) and
    the document length BM25 divides by (every term, stop words excluded)."""
    terms = tokenize(text)
    counts = Counter(t for t in terms if _usable(t))
    parts = []
    for term, tf in sorted(counts.items()):
        positions = ",".join(str(p) for p in range(1, min(tf, MAX_POSITIONS) + 1))
        parts.append(f"{_quoted(term)}:{positions}")
    return " ".join(parts), len(terms)


def query_terms(query: str) -> dict[str, int]:
    """The query's terms with how often each occurs (a repeated term counts each time, as
    in the folder index's BM25)."""
    return dict(Counter(t for t in tokenize(query) if _usable(t)))


def tsquery_literal(terms: Sequence[str]) -> str:
    """Any of ``terms`` (OR): BM25 scores a chunk that shares one term with the query."""
    return " | ".join(_quoted(t) for t in terms)


def sparse_literal(weights: dict[int, float]) -> str:
    """A ``sparsevec`` of term id (1-based) -> weight."""
    body = ",".join(f"{i}:{w!r}" for i, w in sorted(weights.items()))
    return f"{{{body}}}/{SPARSE_DIMS}"


def term_weights(counts: dict[str, int], df: dict[str, int], n_docs: int) -> dict[str, float]:
    """``idf(t) × count of t in the query`` for the terms the index holds."""
    present = [t for t in counts if df.get(t, 0) > 0]
    if not present:
        return {}
    idfs = idf(np.array([df[t] for t in present]), n_docs)
    return {t: float(w) * counts[t] for t, w in zip(present, idfs, strict=True)}


__all__ = [
    "MAX_POSITIONS",
    "SPARSE_DIMS",
    "query_terms",
    "sparse_literal",
    "term_weights",
    "tsquery_literal",
    "tsvector_literal",
]
