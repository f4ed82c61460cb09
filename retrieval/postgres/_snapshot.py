"""Reading the PostgreSQL store: one query's rankers in one snapshot transaction.

A query runs in a ``REPEATABLE READ READ ONLY`` transaction, so its vector list, BM25 list,
exact scores and chunk texts all come from one committed version even while a writer
replaces files. Filters become ``source = ANY(allowed)`` (the engine's own glob rules decide
which files are allowed) inside each ranker's SQL, before ``ORDER BY ... LIMIT``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from kbgraph.errors import ConfigError, IndexCorruptError

from .._rankers import BM25, VECTOR, FieldRanker, get_ranker
from ..filters import SearchFilters
from ..lexical import DEFAULT_B, DEFAULT_K1
from ..records import Chunk
from ..storage import IndexMeta, QueryEmbedder, RankerName, check_query_vector
from ._features import Layout
from ._fields import FieldRows, PgFieldPart
from ._lexical import GLUED_DISCOUNT_SQL, query_terms, sparse_literal, term_weights, tsquery_literal
from ._schema import Tables
from ._servers import Servers

EXACT_BELOW = 20_000
"""Below this many chunks a vector query scans every row (exact, a few ms); above it the
HNSW index answers. Measured in ``benchmarks/bench_scale.py``."""
MAX_EF_SEARCH = 1000  # pgvector's limit of hnsw.ef_search
EF_SEARCH_MIN = 200
"""hnsw.ef_search for a top-k of up to this many (larger k: k). At 1M synthetic vectors
(``benchmarks/bench_scale.py --section postgres``, 2026-11-25) recall@10 / p50 were
0.79 / 4.6 ms at 40, 0.91 / 5.9 ms at 100, 0.95 / 7.4 ms at 200, 0.96 / 17.8 ms at 400."""

BM25_CANDIDATES = 100
"""Rows whose exact BM25 is computed when the weights column proposes candidates (at
least 4 x the rows asked)."""

_CHUNK_COLUMNS = sql.SQL(
    "rid, chunk_id, text, source, line_start, line_end, byte_start, byte_end, section, page"
)


class PgRanking:
    """The rankers of one query inside one snapshot transaction."""

    def __init__(
        self,
        snap: PgSnapshot,
        conn: psycopg.Connection[Any],
        query: str,
        embed_query: QueryEmbedder | None,
    ) -> None:
        self._snap, self._conn, self._query, self._embed = snap, conn, query, embed_query
        self._t = snap.tables
        self._bm25: tuple[list[str], list[float], float] | None = None
        self._term_ids: dict[str, int] = {}
        self._allowed: dict[SearchFilters | None, tuple[list[str], int] | None] = {}
        self._fields = PgFieldPart(snap, conn, query, self._all_chunks)

    # -- vector ----------------------------------------------------------------------
    def _vector(self) -> str | None:
        if not self._snap.has_vectors or self._embed is None:
            return None
        vector = np.asarray(self._embed(self._query), dtype=np.float32)
        check_query_vector(vector, self._snap.dims, self._snap.meta.embedding)
        return "[" + ",".join(repr(float(x)) for x in vector) + "]"

    def _vector_top(
        self, limit: int, allowed: list[str] | None, rows: int
    ) -> tuple[list[int], list[float]]:
        """The best ``limit`` of the ``rows`` rows of the ``allowed`` files: scanned exactly
        when they are few (as the whole table is below ``exact_below``: a filter keeping 1 %
        of 1M rows), else by the HNSW index."""
        vector = self._vector()
        if vector is None:
            return [], []
        where, params = _allowed_clause(allowed)
        params.update(q=vector, n=limit)
        exact = rows < self._snap.exact_below or limit > MAX_EF_SEARCH
        if not exact:
            ef = max(EF_SEARCH_MIN, limit)
            self._set("hnsw.ef_search", ef)
            if allowed is not None and self._snap.layout.pgvector.iterative_scan:
                # pgvector 0.8: the scan goes on past ef_search until `limit` rows pass the
                # filter (up to hnsw.max_scan_tuples), instead of filtering ef candidates.
                self._set("hnsw.iterative_scan", "relaxed_order")
            found = self._vector_query(where, params, approximate=True)
            if len(found) >= limit or allowed is None:
                return _split(found)
            # Too few of the index's candidates are allowed (pgvector < 0.8 filters the
            # ef_search candidates after the search): the allowed rows are scanned exactly.
        return _split(self._vector_query(where, params, approximate=False))

    def _set(self, setting: str, value: int | str) -> None:
        self._conn.execute(
            sql.SQL("SET LOCAL {} = {}").format(sql.SQL(setting), sql.Literal(value))
        )

    def _vector_query(
        self, where: sql.Composable, params: dict[str, Any], *, approximate: bool
    ) -> list[tuple[Any, ...]]:
        if approximate and self._snap.layout.halfvec_index:
            # The index holds 2-byte floats: it proposes twice the rows asked, which are
            # scored and ordered at full precision (the scores the exact path gives).
            order = sql.SQL("embedding::halfvec({d}) <#> %(q)s::halfvec({d})").format(
                d=sql.Literal(self._snap.dims)
            )
            params = {**params, "c": 2 * int(params["n"])}
            query = sql.SQL(
                "SELECT rid, -(embedding <#> %(q)s::vector) AS score FROM (SELECT rid, "
                "embedding FROM {} WHERE embedding IS NOT NULL{} ORDER BY {} LIMIT %(c)s) c "
                "ORDER BY score DESC, rid LIMIT %(n)s"
            ).format(self._t.chunks, where, order)
            return self._conn.execute(query, params).fetchall()
        # `+ 0` keeps the planner off the HNSW index: the exact path scans the allowed rows.
        # relaxed_order (iterative scans) may return rows slightly out of order: re-sorted.
        inner = sql.SQL(
            "embedding <#> %(q)s::vector"
            if approximate
            else "(embedding <#> %(q)s::vector) + 0, rid"
        )
        query = sql.SQL(
            "SELECT rid, score FROM (SELECT rid, -(embedding <#> %(q)s::vector) AS score FROM {} "
            "WHERE embedding IS NOT NULL{} ORDER BY {} LIMIT %(n)s) c ORDER BY score DESC, rid"
        ).format(self._t.chunks, where, inner)
        return self._conn.execute(query, params).fetchall()

    # -- BM25 ------------------------------------------------------------------------
    def _bm25_terms(self) -> tuple[list[str], list[float], float]:
        if self._bm25 is None:
            counts = query_terms(self._query, self._snap.meta.tokenizer)
            df: dict[str, int] = {}
            if counts:
                ids = sql.SQL(", id" if self._snap.layout.bm25_column else ", NULL")
                rows = self._conn.execute(
                    sql.SQL("SELECT lexeme, df{} FROM {} WHERE lexeme = ANY(%s)").format(
                        ids, self._t.terms
                    ),
                    (list(counts),),
                ).fetchall()
                df = {str(t): int(n) for t, n, _ in rows}
                self._term_ids = {str(t): int(i) for t, _, i in rows if i is not None}
            weights = term_weights(counts, df, self._snap.n_docs)
            self._bm25 = (list(weights), list(weights.values()), self._snap.avgdl)
        return self._bm25

    def _bm25_sql(self, match: sql.Composable, tail: sql.Composable) -> sql.Composed:
        # Each matched chunk's tsvector is cut to the query's lexemes in C (setweight marks
        # them 'A', ts_filter keeps those; stored lexemes carry the default 'D') before it
        # becomes rows: unnesting every lexeme of every match took 124.5 ms p50 on SciFact,
        # this 54.8 (bench_pg_quality.py --section lexical), same scores. The positions
        # labelled 'C' (glued identifier parts) are counted apart, the same way, and weigh
        # GLUED_PART_WEIGHT.
        return sql.SQL(
            "SELECT c.rid, sum(w.weight * t.tf / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * "
            "c.dl / %(avgdl)s))) AS score FROM {} c "
            "CROSS JOIN LATERAL (SELECT u.lexeme, cardinality(u.positions)::float8 - "
            + GLUED_DISCOUNT_SQL
            + " * coalesce((SELECT cardinality(g.positions) FROM unnest(ts_filter(setweight("
            "ts_filter(c.lexemes, '{{c}}'), 'A', %(terms)s::text[]), '{{a}}')) g "
            "WHERE g.lexeme = u.lexeme), 0) AS tf "
            "FROM unnest(ts_filter(setweight(c.lexemes, 'A', %(terms)s::text[]), '{{a}}')) u) t "
            "JOIN unnest(%(terms)s::text[], %(weights)s::float8[]) AS w(lexeme, weight) "
            "ON w.lexeme = t.lexeme WHERE {} GROUP BY c.rid {}"
        ).format(self._t.chunks, match, tail)

    def _bm25_params(self) -> dict[str, Any] | None:
        terms, weights, avgdl = self._bm25_terms()
        if not terms:
            return None
        return {
            "terms": terms,
            "weights": weights,
            "k1": DEFAULT_K1,
            "b": DEFAULT_B,
            "avgdl": avgdl if avgdl > 0 else 1.0,
            "tsq": tsquery_literal(terms),
        }

    def _bm25_top(self, limit: int, allowed: list[str] | None) -> tuple[list[int], list[float]]:
        params = self._bm25_params()
        if params is None:
            return [], []
        where, extra = _allowed_clause(allowed, column="c.source")
        params.update(extra, n=limit)
        match = sql.SQL("c.lexemes @@ %(tsq)s::tsquery{}").format(where)
        if self._snap.layout.bm25_column:
            # Candidates first: the matching rows ranked by the inner product of their BM25
            # weights (a sparsevec, computed in C) with the query's; then the exact BM25 of
            # those only. bench_pg_quality.py --section lexical measures the top 10 against
            # scoring every match.
            terms, weights, _ = self._bm25_terms()
            ids = {self._term_ids[t]: w for t, w in zip(terms, weights, strict=True)}
            params.update(qv=sparse_literal(ids), c=max(BM25_CANDIDATES, 4 * limit))
            match = sql.SQL(
                "c.rid IN (SELECT c.rid FROM {} c WHERE {} "
                "ORDER BY c.bm25 <#> %(qv)s::sparsevec LIMIT %(c)s)"
            ).format(self._t.chunks, match)
        tail = sql.SQL("ORDER BY score DESC, c.rid LIMIT %(n)s")
        return _split(self._conn.execute(self._bm25_sql(match, tail), params).fetchall())

    # -- the QueryRanking interface ----------------------------------------------------
    def top(
        self, ranker: RankerName, limit: int, filters: SearchFilters | None
    ) -> tuple[list[int], list[float]]:
        if filters not in self._allowed:  # both rankers of a query share one file list
            self._allowed[filters] = self._snap.allowed_sources(self._conn, filters)
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

    @staticmethod
    def _part(ranker: RankerName) -> object:
        """This store's part for each registered ranker: SQL of its own for vector and
        BM25, BM25 over the field for any :class:`FieldRanker`."""
        found = get_ranker(ranker)
        if found is VECTOR or found is BM25 or isinstance(found, FieldRanker):
            return found
        raise ConfigError(
            f"the PostgreSQL store has no part for the ranker {ranker!r}: register it as a "
            "FieldRanker, or give the store a part for it (postgres/_snapshot.py)"
        )

    def exact(self, ranker: RankerName, keys: Sequence[int]) -> np.ndarray:
        out = np.zeros(len(keys), dtype=np.float64)
        position = {int(k): i for i, k in enumerate(keys)}
        found = self._part(ranker)
        if isinstance(found, FieldRanker):
            return self._fields.exact(found, keys)
        if found is VECTOR:
            vector = self._vector()
            if vector is None:
                return out
            rows = self._conn.execute(
                sql.SQL(
                    "SELECT rid, -(embedding <#> %s::vector) FROM {} "
                    "WHERE rid = ANY(%s) AND embedding IS NOT NULL"
                ).format(self._t.chunks),
                (vector, list(position)),
            ).fetchall()
        else:
            params = self._bm25_params()
            if params is None:
                return out
            params["keys"] = list(position)
            match = sql.SQL("c.rid = ANY(%(keys)s)")
            rows = self._conn.execute(self._bm25_sql(match, sql.SQL("")), params).fetchall()
        for rid, score in rows:
            out[position[int(rid)]] = float(score)
        return out

    def _all_chunks(self) -> list[Chunk]:
        query = sql.SQL("SELECT {} FROM {} ORDER BY rid").format(_CHUNK_COLUMNS, self._t.chunks)
        return [_chunk(r) for r in self._conn.execute(query).fetchall()]

    def chunks(self, keys: Sequence[int]) -> list[Chunk]:
        if not keys:
            return []
        rows = self._conn.execute(
            sql.SQL("SELECT {} FROM {} WHERE rid = ANY(%s)").format(_CHUNK_COLUMNS, self._t.chunks),
            ([int(k) for k in keys],),
        ).fetchall()
        by_rid = {int(r[0]): _chunk(r) for r in rows}
        missing = [k for k in keys if int(k) not in by_rid]
        if missing:
            raise IndexCorruptError(f"rows {missing[:5]} vanished inside one snapshot; re-index")
        return [by_rid[int(k)] for k in keys]


class PgSnapshot:
    """The live version of one knowledge base, as ``open`` found it: ``counts`` are its
    version number, chunk count and total chunk length (BM25's document lengths)."""

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
        self.version, self.n_docs, total_len = counts
        self.exact_below = exact_below
        self.avgdl = total_len / self.n_docs if self.n_docs else 0.0
        self.dims = meta.embedding.dims if meta.embedding else 0
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self.fields: FieldRows | None = None  # built by the first field ranker's query

    @property
    def meta(self) -> IndexMeta:
        return self._meta

    @property
    def has_vectors(self) -> bool:
        return self._meta.embedding is not None

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = self.servers.reader(autocommit=False)
        return self._conn

    @contextmanager
    def ranking(self, query: str, embed_query: QueryEmbedder | None) -> Iterator[PgRanking]:
        with self._lock, self.db.errors("search the knowledge base"):
            conn = self._connection()
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield PgRanking(self, conn, query, embed_query)
            finally:
                conn.rollback()  # read only: ends the snapshot

    def allowed_sources(
        self, conn: psycopg.Connection[Any], filters: SearchFilters | None
    ) -> tuple[list[str], int] | None:
        """The files ``filters`` allow and their chunk count (None: every file), decided by
        the engine's rules."""
        if filters is None or filters.is_empty():
            return None
        rows = conn.execute(
            sql.SQL("SELECT source, kind, chunk_count FROM {}").format(self.tables.files)
        ).fetchall()
        allowed = [(str(s), int(n)) for s, kind, n in rows if filters.allows(str(s), kind)]
        return [s for s, _ in allowed], sum(n for _, n in allowed)

    def size_bytes(self) -> int:
        with self._lock, self.db.errors("measure the knowledge base"):
            conn = self._connection()
            try:
                total = 0
                for table in self.tables.all():
                    row = conn.execute(
                        "SELECT pg_total_relation_size(%s::regclass)",
                        (table.as_string(conn),),
                    ).fetchone()
                    total += int(row[0]) if row else 0
                return total
            finally:
                conn.rollback()

    def validate(self, documents: Path) -> None:
        """The rows checked by the database (counts, checksums, vectors, the lexical
        columns); they are not compared with the files of ``documents``."""
        from ._validate import validate

        with self._lock, self.db.errors("validate the knowledge base"):
            conn = self._connection()
            try:
                validate(conn, self.tables, self._meta, self.db.location)
            finally:
                conn.rollback()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _allowed_clause(
    allowed: list[str] | None, column: str = "source"
) -> tuple[sql.Composable, dict[str, Any]]:
    if allowed is None:
        return sql.SQL(""), {}
    return sql.SQL(" AND {} = ANY(%(allowed)s)").format(sql.SQL(column)), {"allowed": allowed}


def _split(rows: list[tuple[Any, ...]]) -> tuple[list[int], list[float]]:
    return [int(r[0]) for r in rows], [float(r[1]) for r in rows]


def _chunk(row: tuple[Any, ...]) -> Chunk:
    return Chunk(*row[1:])  # the columns after rid, in Chunk's field order


__all__ = ["EXACT_BELOW", "PgRanking", "PgSnapshot"]
