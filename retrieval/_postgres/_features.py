"""What the server's pgvector can do, and what this store's tables of a knowledge base use.

The store works with pgvector 0.5 and later and uses what a newer one adds: ``halfvec``
(0.7) and iterative index scans (0.8). A knowledge base's tables are made
with what the primary had when they were created; a search uses what those tables hold and
what the server that answers has (:class:`Layout`, read once per opened version).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from ._schema import Tables


@dataclass(frozen=True)
class PgVector:
    """The server's pgvector, and what this store uses of each version."""

    version: str  # '' when the extension is not installed

    @property
    def _parts(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.version.split(".") if p.isdigit())

    @property
    def halfvec(self) -> bool:
        """0.7: 2-byte floats, for an HNSW index half the size (and faster to search)."""
        return self._parts >= (0, 7)

    @property
    def iterative_scan(self) -> bool:
        """0.8: an HNSW scan that goes on until enough rows pass the filters."""
        return self._parts >= (0, 8)

    def lacks(self) -> list[str]:
        """What this version lacks that the store would use, for ``stats`` and logs."""
        missing = []
        if not self.iterative_scan:
            missing.append(
                "iterative index scans (0.8): a filtered vector search that the HNSW index "
                "answers with too few allowed rows scans the allowed rows exactly"
            )
        if not self.halfvec:
            missing.append("halfvec (0.7): the HNSW index holds 4-byte floats, twice the size")
        return missing


def pgvector_of(conn: psycopg.Connection[Any]) -> PgVector:
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return PgVector(str(row[0]) if row and row[0] else "")


@dataclass(frozen=True)
class Layout:
    """How one knowledge base's tables were made, and the answering server's pgvector."""

    pgvector: PgVector
    halfvec_index: bool = False  # the HNSW index is over embedding::halfvec(dims)
    postings: bool = True  # BM25's postings table (tables of kbgraph 0.1 have none)
    bm25_column: bool = False  # kbgraph 0.1's BM25 weights column (dropped when migrated)
    table: int = 0  # the chunks table's oid: a rebuild makes another


_LAYOUT_SQL = sql.SQL(
    "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
    "EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = {t}::regclass AND attname = 'bm25' "
    "AND NOT attisdropped), "
    "EXISTS (SELECT 1 FROM pg_index i JOIN pg_opclass o ON o.oid = ANY(i.indclass) "
    "WHERE i.indrelid = {t}::regclass AND o.opcname = 'halfvec_ip_ops'), "
    "to_regclass({p}) IS NOT NULL, {t}::regclass::oid::bigint"
)


def layout_of(conn: psycopg.Connection[Any], tables: Tables) -> Layout:
    name = sql.Literal(tables.chunks.as_string(conn))
    postings = sql.Literal(tables.postings.as_string(conn))
    row = conn.execute(_LAYOUT_SQL.format(t=name, p=postings)).fetchone()
    assert row is not None
    return Layout(
        PgVector(str(row[0] or "")),
        halfvec_index=bool(row[2]),
        postings=bool(row[3]),
        bm25_column=bool(row[1]),
        table=int(row[4]),
    )


__all__ = ["Layout", "PgVector", "layout_of", "pgvector_of"]
