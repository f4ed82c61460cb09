"""Tables of the PostgreSQL store.

Shared by every knowledge base of a database:

- ``kbgraph_kbs``: one row per knowledge base (keyed by its documents folder): the meta of
  its live version (settings, embedding model, skipped files) and a version number that
  every commit bumps;
- ``kbgraph_embedding_cache``: vectors by (model, sha256 of the text), so a text is embedded
  once for every knowledge base and every machine using the database.

A table set per knowledge base (``kbgraph_kb<id>_files``, ``_chunks``, ``_terms``,
``_postings``), so that each has its own HNSW and GIN indexes (a filter on the knowledge
base would make every approximate search a filtered one) and its own vector size.

``_postings`` is BM25's inverted index: one row per (term, chunk) with the term's frequency
in the chunk and the chunk's length, under a btree on (lexeme, rid) that carries both, so a
query reads its terms' postings from the index alone (an index-only scan) and sums BM25 in
one aggregation (the way a search engine's postings lists are read; Manning, Raghavan &
Schütze 2008, ch. 2 and 6). Before it, each matching chunk's row (its whole ``tsvector``)
was read to score it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

ADVISORY_CLASS = 0x6B62  # "kb": the first key of kbgraph's advisory locks
SCHEMA_LOCK = 0  # second key of the lock that serialises creating the shared tables

SHARED_DDL = (
    """CREATE TABLE IF NOT EXISTS kbgraph_kbs (
        id bigserial PRIMARY KEY,
        folder text NOT NULL UNIQUE,
        meta jsonb,
        version bigint NOT NULL DEFAULT 0,
        n_docs bigint NOT NULL DEFAULT 0,
        total_len bigint NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS kbgraph_embedding_cache (
        model text NOT NULL,
        hash text NOT NULL,
        vector bytea NOT NULL,
        cut boolean NOT NULL DEFAULT false,
        PRIMARY KEY (model, hash)
    )""",
    # The average chunk length of a BM25 weights column that tables of kbgraph 0.1 had.
    "ALTER TABLE kbgraph_kbs ADD COLUMN IF NOT EXISTS bm25_avgdl float8",
    # Whether the model's input cut a vector's text (see _embeddings/_cache.py); rows of
    # a cache made before it read as not cut. Added only when missing: ALTER TABLE locks
    # the table (ACCESS EXCLUSIVE) even with IF NOT EXISTS, and every writer runs this.
    """DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_attribute
                       WHERE attrelid = to_regclass('kbgraph_embedding_cache')
                       AND attname = 'cut' AND NOT attisdropped) THEN
            ALTER TABLE kbgraph_embedding_cache ADD COLUMN cut boolean NOT NULL DEFAULT false;
        END IF;
    END $$""",
)

VERSION_KEY = "ARRAY[version, to_regclass(%(chunks)s)::oid::bigint]"
"""A search statement's report of what it saw, a column of ``kbgraph_kbs``' row: the
version and the chunks table's identity (a rebuild or a migration makes new tables;
``%(chunks)s`` is the table's name)."""


def version_params(tables: Tables, conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """The parameters :data:`VERSION_KEY` needs (every search statement holds it): the
    knowledge base's id and its chunks table's name, rendered for ``conn``."""
    return {"kb": tables.kb_id, "chunks": tables.chunks.as_string(conn)}


INLINE_MAX_DIMS = 1024
"""Vectors of up to this many dimensions (4 KB) are kept in the row (``STORAGE PLAIN``).
pgvector's default lets PostgreSQL move a vector out of a row wider than 2 KB (a chunk's
text and lexemes make most rows so), and an exact scan then fetched every vector from the
TOAST table: 35 ms against 5.4 ms for 6,000 rows of 384 dimensions with 300-word texts
(same machine and load). Larger vectors could not share an 8 KB page with the rest."""
HNSW_M = 16  # pgvector's default
HNSW_EF_CONSTRUCTION = 128
"""Twice pgvector's default (64): a better graph lets a small hnsw.ef_search reach the
recall. At 1M synthetic vectors (``benchmarks/bench_scale.py --section postgres``,
pgvector 0.8 halfvec, 2026-11-27) recall@10 at ef_search 40 was 0.9785 (64: 0.7760),
and 0.95 needs ef_search 40 instead of 400. Costs index build time: about 1.3 x at 100K
rows (775 s against 581 s on a loaded machine)."""


@dataclass(frozen=True)
class Tables:
    """The table set of knowledge base ``kb_id``."""

    kb_id: int

    def _name(self, part: str) -> sql.Identifier:
        return sql.Identifier(f"kbgraph_kb{self.kb_id}_{part}")

    @property
    def files(self) -> sql.Identifier:
        return self._name("files")

    @property
    def chunks(self) -> sql.Identifier:
        return self._name("chunks")

    @property
    def terms(self) -> sql.Identifier:
        return self._name("terms")

    @property
    def postings(self) -> sql.Identifier:
        return self._name("postings")

    def all(self) -> tuple[sql.Identifier, ...]:
        return (self.files, self.chunks, self.terms, self.postings)

    def create_postings(self) -> list[sql.Composed]:
        """BM25's postings table (also added to the table set of an older kbgraph)."""
        return [
            sql.SQL(
                "CREATE TABLE {} (lexeme text NOT NULL, rid bigint NOT NULL, "
                "tf float8 NOT NULL, dl integer NOT NULL)"
            ).format(self.postings),
            sql.SQL("CREATE UNIQUE INDEX {} ON {} (lexeme, rid) INCLUDE (tf, dl)").format(
                sql.Identifier(f"kbgraph_kb{self.kb_id}_postings_key"), self.postings
            ),
        ]

    def create(self, dims: int | None) -> list[sql.Composed]:
        """The table set for vectors of ``dims`` (None: lexical only). The HNSW index is
        created by :meth:`vector_index`, after a bulk load."""
        embedding = (
            sql.SQL(", embedding vector({})").format(sql.Literal(dims)) if dims else sql.SQL("")
        )
        return [
            sql.SQL(
                "CREATE TABLE {} (source text PRIMARY KEY, size bigint NOT NULL, "
                "mtime_ns bigint NOT NULL, sha256 text NOT NULL, kind text NOT NULL, "
                "notes jsonb NOT NULL, chunk_count integer NOT NULL, "
                "failed integer[] NOT NULL DEFAULT '{{}}')"
            ).format(self.files),
            sql.SQL(
                "CREATE TABLE {} (rid bigserial PRIMARY KEY, source text NOT NULL, "
                "ord integer NOT NULL, kind text NOT NULL, chunk_id text NOT NULL, "
                "text text NOT NULL, line_start integer NOT NULL, line_end integer NOT NULL, "
                "byte_start bigint NOT NULL, byte_end bigint NOT NULL, section text, "
                "page integer, dl integer NOT NULL, lexemes tsvector NOT NULL{})"
            ).format(self.chunks, embedding),
            *self.inline_vectors(dims),
            sql.SQL("CREATE INDEX ON {} (source, ord)").format(self.chunks),
            sql.SQL("CREATE INDEX ON {} USING gin (lexemes)").format(self.chunks),
            sql.SQL("CREATE TABLE {} (lexeme text PRIMARY KEY, df bigint NOT NULL)").format(
                self.terms
            ),
            *self.create_postings(),
        ]

    def inline_vectors(self, dims: int | None) -> list[sql.Composed]:
        """Keep vectors in their rows (:data:`INLINE_MAX_DIMS`); rows written before this
        runs keep where they are."""
        if not dims or dims > INLINE_MAX_DIMS:
            return []
        return [
            sql.SQL("ALTER TABLE {} ALTER COLUMN embedding SET STORAGE PLAIN").format(self.chunks)
        ]

    def vector_index(self, dims: int, *, halfvec: bool = False) -> sql.Composed:
        """HNSW over inner product: the vectors are L2-normalised, so it ranks by cosine.
        ``halfvec`` (pgvector >= 0.7): over the vectors as 2-byte floats, an index half the
        size; the rows keep 4-byte floats, which score the candidates it proposes."""
        column = (
            sql.SQL("(embedding::halfvec({})) halfvec_ip_ops").format(sql.Literal(dims))
            if halfvec
            else sql.SQL("embedding vector_ip_ops")
        )
        return sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw ({}) "
            "WITH (m = {}, ef_construction = {})"
        ).format(
            sql.Identifier(f"kbgraph_kb{self.kb_id}_hnsw"),
            self.chunks,
            column,
            sql.Literal(HNSW_M),
            sql.Literal(HNSW_EF_CONSTRUCTION),
        )

    def drop(self) -> list[sql.Composed]:
        return [sql.SQL("DROP TABLE IF EXISTS {}").format(t) for t in self.all()]


__all__ = [
    "ADVISORY_CLASS",
    "INLINE_MAX_DIMS",
    "SCHEMA_LOCK",
    "SHARED_DDL",
    "VERSION_KEY",
    "Tables",
]
