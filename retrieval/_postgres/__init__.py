"""The PostgreSQL store: a knowledge base's chunks, vectors (pgvector, HNSW) and lexical
index (full-text search, GIN) in a database, with the folder index's scan, chunking,
embedding cache, results and citations (``KnowledgeBase(folder, store="postgresql://...")``).

Needs the ``postgres`` extra (``pip install "kbgraph[postgres]"``: psycopg)."""

from ._connect import Database
from ._snapshot import EXACT_BELOW, PgSnapshot
from ._store import PostgresStore

__all__ = ["EXACT_BELOW", "Database", "PgSnapshot", "PostgresStore"]
