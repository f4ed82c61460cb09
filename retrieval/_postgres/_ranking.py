"""One query's rankers on PostgreSQL: one statement per ranker list, each reporting the
version it saw.

A search runs without a transaction (no ``BEGIN``, ``SET TRANSACTION`` or ``ROLLBACK``
round trips): each statement sees one committed version, and every statement returns the
knowledge base's version number beside its rows. The rows a list names come back with
their chunks, and each ranker's exact scores of its own list are kept, so a one-ranker
search is one round trip and a hybrid one a round trip per ranker. Consistency is checked
instead of locked: statements of one ranking that saw different versions, or a version
newer than the snapshot's meta, raise :class:`SnapshotMoved` at the end of the ranking
and the reader runs the search again on the new version. Rows are never updated in place
(a changed file's rows are deleted and inserted with new rids), so rows read by rid are
those of the version that ranked them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from psycopg import sql

from kbgraph.errors import ConfigError, IndexCorruptError

from .._filters import SearchFilters
from .._rankers import BM25, VECTOR, FieldRanker, get_ranker
from .._records import Chunk
from .._storage import QueryEmbedder, RankerName, SnapshotMoved, check_query_vector
from . import _bm25
from ._features import Layout
from ._fields import FieldHost, PgFieldPart
from ._lexical import query_terms
from ._pool import PooledConnection
from ._schema import VERSION_KEY, version_params

MAX_EF_SEARCH = 1000  # pgvector's limit of hnsw.ef_search
EF_SEARCH_MIN = 40
"""hnsw.ef_search for the rows asked of the index up to this many (more rows: that many).
With the graph built at ef_construction 128 (``_schema.HNSW_EF_CONSTRUCTION``), at 1M
synthetic vectors (``benchmarks/bench_scale.py --section postgres``, pgvector 0.8 halfvec,
2026-11-27) recall@10 was 0.92 at 30, 0.9785 at 40, 0.9945 at 100; the graph of
ef_construction 64 needed 400 for 0.96."""

CHUNK_COLUMNS = sql.SQL(
    "c.chunk_id, c.text, c.source, c.line_start, c.line_end, c.byte_start, c.byte_end, "
    "c.section, c.page"
)
"""A chunk's columns (alias ``c``), in :class:`Chunk`'s field order."""
_VERSION = sql.SQL("(SELECT " + VERSION_KEY + " FROM kbgraph_kbs WHERE id = %(kb)s)")
"""What every statement reports beside its rows (a version alone may be an incremental
update, whose rows rank as they are; new tables are a rebuild)."""


class Opened(FieldHost, Protocol):
    """What a ranking needs of its snapshot (``PgSnapshot``), beyond what its field
    rankers need."""

    layout: Layout
    n_docs: int
    dims: int
    exact_below: int
    outdated: bool

    @property
    def has_vectors(self) -> bool: ...


class PgRanking:
    """The rankers of one query on one pooled connection."""

    def __init__(
        self,
        snap: Opened,
        pooled: PooledConnection,
        query: str,
        embed_query: QueryEmbedder | None,
    ) -> None:
        self._snap, self._pooled, self._query, self._embed = snap, pooled, query, embed_query
        self._t = snap.tables
        self._names = version_params(self._t, pooled.conn)
        self._seen: set[tuple[int, int]] = set()
        self._chunks: dict[int, Chunk] = {}
        self._scores: dict[str, dict[int, float]] = {}  # each ranker's exact scores so far
        self._allowed: dict[SearchFilters | None, tuple[list[str], int] | None] = {}
        self._vector_literal: str | None = None
        self._fields = PgFieldPart(snap, self._fetch, query, self._all_chunks)

    # -- statements -------------------------------------------------------------------
    def _fetch(self, query: sql.Composed, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Rows of ``query``, whose third column is :data:`_VERSION` (dropped here)."""
        rows = self._pooled.conn.execute(query, {**self._names, **params}).fetchall()
        self._seen.update((int(r[2][0]), int(r[2][1] or 0)) for r in rows)
        return [r[:2] + r[3:] for r in rows]

    def check_version(self) -> None:
        """:class:`SnapshotMoved` when the statements saw different versions, or tables
        other than the snapshot's (a rebuild: other settings, another analyser or model).
        A newer version of the same tables (files changed) ranked as it is: the snapshot
        is marked ``outdated`` and reopened before the next search, whose counts and
        file list it reads; searching again would double the work of every search that
        follows a write."""
        versions = {v for v, _ in self._seen}
        if len(versions) > 1 or {t for _, t in self._seen} - {self._snap.layout.table}:
            raise SnapshotMoved(f"version {self._snap.version} -> {sorted(self._seen)}")
        if versions and max(versions) > self._snap.version:
            self._snap.outdated = True

    def _keep(self, ranker: str, rows: list[tuple[Any, ...]]) -> tuple[list[int], list[float]]:
        """A ranked list of ``rid, score, chunk columns...`` rows: chunks and scores kept."""
        keys, scores = [int(r[0]) for r in rows], [float(r[1]) for r in rows]
        self._scores.setdefault(ranker, {}).update(zip(keys, scores, strict=True))
        self._chunks.update((int(r[0]), Chunk(*r[2:])) for r in rows)
        return keys, scores

    # -- vector ----------------------------------------------------------------------
    def _vector(self) -> str | None:
        if self._vector_literal is None:
            if not self._snap.has_vectors or self._embed is None:
                return None
            vector = np.asarray(self._embed(self._query), dtype=np.float32)
            check_query_vector(vector, self._snap.dims, self._snap.meta.embedding)
            self._vector_literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
        return self._vector_literal

    def _vector_top(
        self, limit: int, allowed: list[str] | None, rows: int
    ) -> tuple[list[int], list[float]]:
        """The best ``limit`` of the ``rows`` rows of the ``allowed`` files: scanned exactly
        when they are few (as the whole table is below ``exact_below``: a filter keeping 1 %
        of 1M rows), else by the HNSW index."""
        vector = self._vector()
        if vector is None:
            return [], []
        params: dict[str, Any] = {"q": vector, "n": limit, "allowed": allowed}
        exact = rows < self._snap.exact_below or limit > MAX_EF_SEARCH
        if not exact:
            # The halfvec index proposes twice the rows asked: ef_search covers them all.
            proposed = 2 * limit if self._snap.layout.halfvec_index else limit
            self._pooled.set("hnsw.ef_search", min(MAX_EF_SEARCH, max(EF_SEARCH_MIN, proposed)))
            if self._snap.layout.pgvector.iterative_scan:
                # pgvector 0.8: with a filter, the scan goes on past ef_search until `limit`
                # rows pass it (up to hnsw.max_scan_tuples), instead of filtering ef
                # candidates. A session setting: sent only when it changes.
                self._pooled.set("hnsw.iterative_scan", "relaxed_order" if allowed else "off")
            found = self._fetch(self._vector_sql(allowed is not None, approximate=True), params)
            if len(found) >= limit or allowed is None:
                return self._keep(VECTOR.name, found)
            # Too few of the index's candidates are allowed (pgvector < 0.8 filters the
            # ef_search candidates after the search): the allowed rows are scanned exactly.
        found = self._fetch(self._vector_sql(allowed is not None, approximate=False), params)
        return self._keep(VECTOR.name, found)

    def _vector_sql(self, filtered: bool, *, approximate: bool) -> sql.Composed:
        where = sql.SQL(" AND source = ANY(%(allowed)s)" if filtered else "")
        if approximate and self._snap.layout.halfvec_index:
            # The index holds 2-byte floats: it proposes twice the rows asked, which are
            # scored and ordered at full precision (the scores the exact path gives).
            order = sql.SQL("embedding::halfvec({d}) <#> %(q)s::halfvec({d})").format(
                d=sql.Literal(self._snap.dims)
            )
            inner = sql.SQL(
                "SELECT rid, -(embedding <#> %(q)s::vector) AS score FROM (SELECT rid, "
                "embedding FROM {} WHERE embedding IS NOT NULL{} ORDER BY {} "
                "LIMIT 2 * %(n)s) h ORDER BY score DESC, rid LIMIT %(n)s"
            ).format(self._t.chunks, where, order)
        else:
            # `+ 0` keeps the planner off the HNSW index: the exact path scans the allowed
            # rows. relaxed_order (iterative scans) may return rows slightly out of order.
            exact = sql.SQL(
                "embedding <#> %(q)s::vector"
                if approximate
                else "(embedding <#> %(q)s::vector) + 0, rid"
            )
            inner = sql.SQL(
                "SELECT rid, -(embedding <#> %(q)s::vector) AS score FROM {} "
                "WHERE embedding IS NOT NULL{} ORDER BY {} LIMIT %(n)s"
            ).format(self._t.chunks, where, exact)
        return sql.SQL(
            "SELECT v.rid, v.score, {version}, {columns} FROM ({inner}) v "
            "JOIN {c} c ON c.rid = v.rid ORDER BY v.score DESC, v.rid"
        ).format(version=_VERSION, columns=CHUNK_COLUMNS, inner=inner, c=self._t.chunks)

    # -- BM25 ------------------------------------------------------------------------
    def _bm25_params(self) -> dict[str, Any] | None:
        counts = query_terms(self._query, self._snap.meta.tokenizer)
        return _bm25.params(self._t.kb_id, counts) if counts else None

    def _bm25_top(self, limit: int, allowed: list[str] | None) -> tuple[list[int], list[float]]:
        params = self._bm25_params()
        if params is None:
            return [], []
        query = _bm25.top_sql(
            self._t, self._snap.layout.postings, allowed is not None, CHUNK_COLUMNS
        )
        return self._keep(BM25.name, self._fetch(query, {**params, "n": limit, "allowed": allowed}))

    # -- the QueryRanking interface ----------------------------------------------------
    def top(
        self, ranker: RankerName, limit: int, filters: SearchFilters | None
    ) -> tuple[list[int], list[float]]:
        if filters not in self._allowed:  # both rankers of a query share one file list
            self._allowed[filters] = self._allowed_sources(filters)
        allowed, rows = self._allowed[filters] or (None, self._snap.n_docs)
        if allowed is not None and not allowed:
            return [], []
        found = self._part(ranker)
        if found is VECTOR:
            return self._vector_top(limit, allowed, rows)
        if found is BM25:
            return self._bm25_top(limit, allowed)
        assert isinstance(found, FieldRanker)
        return self._fields.top(found, limit, allowed)

    def _allowed_sources(self, filters: SearchFilters | None) -> tuple[list[str], int] | None:
        """The files ``filters`` allow and their chunk count (None: every file), decided by
        the engine's rules."""
        if filters is None or filters.is_empty():
            return None
        query = sql.SQL("SELECT source, kind, {}, chunk_count FROM {}").format(
            _VERSION, self._t.files
        )
        rows = self._fetch(query, {})
        allowed = [(str(s), int(n)) for s, kind, n in rows if filters.allows(str(s), kind)]
        return [s for s, _ in allowed], sum(n for _, n in allowed)

    @staticmethod
    def _part(ranker: RankerName) -> object:
        """This store's part for each registered ranker: SQL of its own for vector and
        BM25, BM25 over the field for any :class:`FieldRanker`."""
        found = get_ranker(ranker)
        if found is VECTOR or found is BM25 or isinstance(found, FieldRanker):
            return found
        raise ConfigError(
            f"the PostgreSQL store has no part for the ranker {ranker!r}: register it as a "
            "FieldRanker, or give the store a part for it (postgres/_ranking.py)"
        )

    def exact(self, ranker: RankerName, keys: Sequence[int]) -> np.ndarray:
        found = self._part(ranker)
        if isinstance(found, FieldRanker):
            return self._fields.exact(found, keys)
        name = BM25.name if found is BM25 else VECTOR.name
        known = self._scores.setdefault(name, {})
        missing = [int(k) for k in keys if int(k) not in known]
        if missing:
            known.update(dict.fromkeys(missing, 0.0))  # no term shared / no vector: 0
            known.update(self._exact_rows(found is VECTOR, missing))
        return np.asarray([known[int(k)] for k in keys], dtype=np.float64)

    def _exact_rows(self, vector: bool, keys: list[int]) -> dict[int, float]:
        if vector:
            literal = self._vector()
            if literal is None:
                return {}
            query = sql.SQL(
                "SELECT rid, -(embedding <#> %(q)s::vector), {} FROM {} "
                "WHERE rid = ANY(%(keys)s) AND embedding IS NOT NULL"
            ).format(_VERSION, self._t.chunks)
            rows = self._fetch(query, {"q": literal, "keys": keys})
        else:
            params = self._bm25_params()
            if params is None:
                return {}
            query = _bm25.exact_sql(self._t, self._snap.layout.postings)
            rows = self._fetch(query, {**params, "keys": keys})
        return {int(r[0]): float(r[1]) for r in rows}

    def _all_chunks(self) -> list[Chunk]:
        query = sql.SQL("SELECT c.rid, NULL, {}, {} FROM {} c ORDER BY c.rid").format(
            _VERSION, CHUNK_COLUMNS, self._t.chunks
        )
        return [Chunk(*r[2:]) for r in self._fetch(query, {})]

    def chunks(self, keys: Sequence[int]) -> list[Chunk]:
        missing = sorted({int(k) for k in keys} - self._chunks.keys())
        if missing:
            query = sql.SQL("SELECT c.rid, NULL, {}, {} FROM {} c WHERE c.rid = ANY(%(keys)s)")
            rows = self._fetch(
                query.format(_VERSION, CHUNK_COLUMNS, self._t.chunks), {"keys": missing}
            )
            self._chunks.update((int(r[0]), Chunk(*r[2:])) for r in rows)
        gone = [k for k in keys if int(k) not in self._chunks]
        if gone:
            self._fetch(sql.SQL("SELECT NULL, NULL, {}").format(_VERSION), {})
            if len({v for v, _ in self._seen}) > 1:  # a writer replaced them since
                raise SnapshotMoved(f"rows {gone[:5]} replaced by a newer version")
            raise IndexCorruptError(f"rows {gone[:5]} are missing from the index; re-index")
        return [self._chunks[int(k)] for k in keys]


__all__ = ["CHUNK_COLUMNS", "EF_SEARCH_MIN", "MAX_EF_SEARCH", "PgRanking"]
