"""The lexical side in PostgreSQL: full-text search over the engine's own terms.

Each chunk's ``lexemes`` column is a ``tsvector`` of the terms the folder index's BM25 uses
(``kbgraph.retrieval._lexical.analyse``: identifiers and their parts, Lucene's English stop
words, the Snowball English stemmer; the analyser the knowledge base's meta names), so a GIN
index finds the chunks sharing a term with the query and both stores rank by the same
BM25 (Lucene variant, ``lexical._bm25``): ``idf`` comes from a per-knowledge-base table of
document frequencies kept in the same transaction as the rows, the term frequency from the
positions a lexeme has in the ``tsvector``: each counts 1, or ``GLUED_PART_WEIGHT`` when
labelled ``C``, the label of an identifier's glued part (``RetryableError``'s retryable) in
the current analyser; the older analysers' rows carry no labels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .._lexical import GLUED_PART_WEIGHT, TOKENIZER_ID, analyse_weighted

MAX_POSITIONS = 256
"""PostgreSQL keeps at most 256 positions per lexeme: a term's frequency in one chunk is
counted up to 256 (BM25's term-frequency factor is then within 0.5 % of its limit)."""
MAX_LEXEME_BYTES = 2046  # tsvector refuses longer words; such "words" are binary noise


def _usable(term: str) -> bool:
    return len(term.encode("utf-8")) <= MAX_LEXEME_BYTES


def _quoted(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(text: str, tokenizer: str = TOKENIZER_ID) -> tuple[str, int]:
    """The ``tsvector`` of ``text``'s terms (term frequency as the count of positions) and
    the document length BM25 divides by (every term, stop words excluded; an identifier's
    whole forms stand at its parts' positions and are not counted again)."""
    terms, weights, length = analyse_weighted(text, tokenizer)
    whole: Counter[str] = Counter()
    glued: Counter[str] = Counter()
    for term, weight in zip(terms, weights, strict=True):
        if _usable(term):
            (whole if weight == 1.0 else glued)[term] += 1
    parts = []
    for term in sorted(whole.keys() | glued.keys()):
        full = min(whole[term], MAX_POSITIONS)
        labelled = min(glued[term], MAX_POSITIONS - full)
        positions = [str(p) for p in range(1, full + 1)]
        positions += [f"{p}C" for p in range(full + 1, full + labelled + 1)]
        parts.append(f"{_quoted(term)}:{','.join(positions)}")
    return " ".join(parts), length


def query_terms(query: str, tokenizer: str = TOKENIZER_ID) -> dict[str, float]:
    """The query's terms with how much each counts (a repeated term counts each time, as
    in the folder index's BM25; a glued identifier part ``GLUED_PART_WEIGHT``), by the
    analyser the knowledge base was built with."""
    counts: dict[str, float] = {}
    terms, weights, _ = analyse_weighted(query, tokenizer)
    for term, weight in zip(terms, weights, strict=True):
        if _usable(term):
            counts[term] = counts.get(term, 0.0) + weight
    return counts


def tsquery_literal(terms: Sequence[str]) -> str:
    """Any of ``terms`` (OR): BM25 scores a chunk that shares one term with the query."""
    return " | ".join(_quoted(t) for t in terms)


GLUED_DISCOUNT_SQL = repr(1 - GLUED_PART_WEIGHT)
"""What a position labelled ``C`` counts less than 1, as an SQL literal."""
TERM_FREQUENCY_SQL = (
    f"(cardinality(u.positions) - {GLUED_DISCOUNT_SQL} * "
    "(cardinality(u.weights) - cardinality(array_remove(u.weights, 'C'))))::float8"
)
"""A lexeme's term frequency in a row of ``unnest(lexemes) u``: its positions, a ``C``
(glued identifier part) counting ``GLUED_PART_WEIGHT``."""

__all__ = [
    "GLUED_DISCOUNT_SQL",
    "MAX_POSITIONS",
    "TERM_FREQUENCY_SQL",
    "query_terms",
    "tsquery_literal",
    "tsvector_literal",
]
