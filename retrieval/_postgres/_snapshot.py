"""Reading the PostgreSQL store: the live version's meta, and its searches on the
process's pooled connections (:mod:`._pool`), ranked by :mod:`._ranking`.

A snapshot is the meta a version was opened with (settings, table layout, counts). Its
searches do not ask first whether a newer version exists (that was two statements before
every search): each statement reports the version it saw, and a ranking that saw a newer
one raises ``SnapshotMoved`` so that the reader reopens and searches again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from .._storage import IndexMeta, QueryEmbedder, SnapshotMoved
from ._features import Layout
from ._fields import FieldRows
from ._pool import READERS
from ._ranking import EF_SEARCH_MIN, MAX_EF_SEARCH, PgRanking
from ._schema import Tables
from ._servers import Servers

EXACT_BELOW = 20_000
"""Below this many chunks a vector query scans every row (exact, a few ms); above it the
HNSW index answers. Measured in ``benchmarks/bench_scale.py``."""
_REPLACED = (pg_errors.UndefinedTable, pg_errors.UndefinedColumn)
"""A rebuild or a delete dropped the tables a snapshot was opened on."""


class PgSnapshot:
    """The live version of one knowledge base, as ``open`` found it: ``counts`` are its
    version number, chunk count and total chunk length (BM25's document lengths)."""

    checks_version = True  # its rankings raise SnapshotMoved: no check before a search

    def __init__(
        self,
        servers: Servers,
        tables: Tables,
        meta: IndexMeta,
        counts: tuple[int, int, int],
        layout: Layout,
        exact_below: int,
    ) -> None:
        self.servers, self.tables, self._meta, self.layout = servers, tables, meta, layout
        self.db = servers.read or servers.write  # for messages
        # The total length is BM25's, which each statement reads with the rows.
        self.version, self.n_docs, _ = counts
        self.exact_below = exact_below
        self.dims = meta.embedding.dims if meta.embedding else 0
        self.fields: FieldRows | None = None  # built by the first field ranker's query
        self.outdated = False  # a search saw a newer version: reopen before the next

    @property
    def meta(self) -> IndexMeta:
        return self._meta

    @property
    def has_vectors(self) -> bool:
        return self._meta.embedding is not None

    @contextmanager
    def ranking(self, query: str, embed_query: QueryEmbedder | None) -> Iterator[PgRanking]:
        with self.db.errors("search the knowledge base"), READERS.connection(self.servers) as c:
            ranking = PgRanking(self, c, query, embed_query)
            try:
                yield ranking
            except _REPLACED:
                raise SnapshotMoved("the tables were replaced") from None
            ranking.check_version()

    @contextmanager
    def _reading(self, doing: str) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in a read-only snapshot transaction."""
        with self.db.errors(doing), READERS.connection(self.servers) as pooled:
            conn = pooled.conn
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield conn

    def size_bytes(self) -> int:
        with self._reading("measure the knowledge base") as conn:
            total = 0
            for table in self.tables.all():
                row = conn.execute(
                    "SELECT coalesce(pg_total_relation_size(to_regclass(%s)), 0)",
                    (table.as_string(conn),),
                ).fetchone()
                total += int(row[0]) if row else 0
            return total

    def validate(self, documents: Path) -> None:
        """The rows checked by the database (counts, checksums, vectors, the lexical
        columns); they are not compared with the files of ``documents``."""
        from ._validate import validate

        with self._reading("validate the knowledge base") as conn:
            validate(conn, self.tables, self._meta, self.db.location)

    def close(self) -> None:
        """Nothing to close: the connections belong to the process's pool."""


__all__ = ["EF_SEARCH_MIN", "EXACT_BELOW", "MAX_EF_SEARCH", "PgRanking", "PgSnapshot"]
