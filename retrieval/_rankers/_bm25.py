"""The BM25 ranker (Lucene's variant) over each chunk's heading path and text; it lists
only chunks sharing a term with the query (both stores rank it themselves: the folder from
``bm25.json``'s columns, PostgreSQL from its tsvector and BM25 weights)."""

from ._registry import StoreRanker

BM25 = StoreRanker(
    name="bm25",
    description="BM25 over each chunk's heading path and text",
    lexical=True,
    hybrid_weight=1.0,
    probe=True,
)
