"""The vector ranker: cosine of the query's embedding with each chunk's (both stores rank
it themselves: the folder by a BLAS product or its HNSW graph, PostgreSQL by pgvector)."""

from ._registry import StoreRanker

VECTOR = StoreRanker(
    name="vector",
    description="cosine of the query's embedding with each chunk's",
    needs_vectors=True,
    lexical=False,
    hybrid_weight=1.0,
)
