"""Publishing a new version of a knowledge base in one transaction, touching only the rows
of files that changed (and the document frequencies of their terms)."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from .._lexical import DEFAULT_B, DEFAULT_K1
from .._records import Chunk, index_text
from .._storage import FileEntry, IndexMeta, IndexUpdate
from ._features import PgVector, layout_of
from ._lexical import SPARSE_DIMS, TERM_FREQUENCY_SQL, tsvector_literal
from ._schema import Tables

BM25_DRIFT = 0.1
"""The BM25 weights column is computed with one average chunk length for every row; when
the knowledge base's average moves further than this (a share of it), every row is
weighed again (the exact BM25 that ranks the candidates always uses the current one)."""

_COLUMNS = (
    "source, ord, kind, chunk_id, text, line_start, line_end, byte_start, byte_end, "
    "section, page, dl, lexemes"
)


def _settings(meta: IndexMeta) -> dict[str, Any]:
    """What decides the tables' shape and every row: a change means new tables."""
    return meta.model_dump(
        mode="json",
        include={"embedding", "chunking", "format_version", "tokenizer", "code_chunker"},
    )


def _changed_entries(update: IndexUpdate) -> list[FileEntry]:
    return [e for e in update.entries if not e.kept]


def needs_write(previous: IndexMeta | None, update: IndexUpdate) -> bool:
    """False when the new version equals the live one (same files, same stats, same skips,
    same settings): then nothing is written, not even the time of indexing."""
    if previous is None or update.fresh or _settings(previous) != _settings(update.meta):
        return True
    if previous.scan != update.meta.scan or previous.skipped != update.meta.skipped:
        return True
    if _changed_entries(update) or set(previous.files) != set(update.meta.files):
        return True
    return any(
        (e.previous.size, e.previous.mtime_ns, e.previous.sha256)
        != (e.record.size, e.record.mtime_ns, e.record.sha256)
        for e in update.entries
        if e.previous is not None
    )


def apply_update(
    conn: psycopg.Connection[Any],
    kb_id: int,
    previous: IndexMeta | None,
    update: IndexUpdate,
    pgvector: PgVector,
) -> None:
    """Publish ``update``, with what the server's ``pgvector`` offers when the tables are
    made (an existing table set keeps its shape until a rebuild)."""
    if not needs_write(previous, update):
        return
    tables = Tables(kb_id)
    meta = update.meta
    fresh = previous is None or update.fresh
    changed = _changed_entries(update)
    dims = meta.embedding.dims if meta.embedding else None
    with conn.transaction():
        if fresh:
            for ddl in [*tables.drop(), *tables.create(dims, sparse=pgvector.sparsevec)]:
                conn.execute(ddl)
            conn.execute("UPDATE kbgraph_kbs SET bm25_avgdl = NULL WHERE id = %s", (kb_id,))
        else:
            assert previous is not None
            gone = sorted(set(previous.files) - set(meta.files))
            _delete_rows(conn, tables, gone + [e.rel for e in changed])
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE source = ANY(%s)").format(tables.files), (gone,)
            )
        _insert_rows(
            conn, tables, changed, with_vectors=meta.embedding is not None, tokenizer=meta.tokenizer
        )
        _add_terms(conn, tables, [e.rel for e in changed])
        if layout_of(conn, tables).bm25_column:
            _weigh(conn, tables, kb_id, [e.rel for e in changed])
        _upsert_files(conn, tables, update.entries)
        if fresh and dims:
            conn.execute(tables.vector_index(dims, halfvec=pgvector.halfvec))
        _publish(conn, tables, kb_id, meta)


def _delete_rows(conn: psycopg.Connection[Any], tables: Tables, sources: list[str]) -> None:
    """Delete those files' chunks and take their terms out of the document frequencies."""
    if not sources:
        return
    conn.execute(
        sql.SQL(
            "WITH gone AS (DELETE FROM {c} WHERE source = ANY(%s) RETURNING lexemes), "
            "lex AS (SELECT u.lexeme, count(*) AS n FROM gone, unnest(gone.lexemes) u "
            "GROUP BY u.lexeme) "
            "UPDATE {t} t SET df = t.df - lex.n FROM lex WHERE t.lexeme = lex.lexeme"
        ).format(c=tables.chunks, t=tables.terms),
        (sources,),
    )
    conn.execute(sql.SQL("DELETE FROM {} WHERE df <= 0").format(tables.terms))


def _insert_rows(
    conn: psycopg.Connection[Any],
    tables: Tables,
    entries: list[FileEntry],
    *,
    with_vectors: bool,
    tokenizer: str,
) -> None:
    columns = _COLUMNS + (", embedding" if with_vectors else "")
    copy = sql.SQL("COPY {} ({}) FROM STDIN").format(tables.chunks, sql.SQL(columns))
    with conn.cursor() as cur, cur.copy(copy) as out:
        for entry in entries:
            failed = set(entry.failed)
            for ord_, chunk in enumerate(entry.chunks):
                row = _row(entry, ord_, chunk, tokenizer)
                if with_vectors:
                    vector = (
                        None if ord_ in failed or entry.vectors is None else entry.vectors[ord_]
                    )
                    row.append(None if vector is None else _vector_text(vector))
                out.write_row(row)


def _row(entry: FileEntry, ord_: int, chunk: Chunk, tokenizer: str) -> list[Any]:
    lexemes, length = tsvector_literal(index_text(chunk), tokenizer)
    return [
        entry.rel,
        ord_,
        entry.record.kind,
        chunk.id,
        chunk.text,
        chunk.line_start,
        chunk.line_end,
        chunk.byte_start,
        chunk.byte_end,
        chunk.section,
        chunk.page,
        length,
        lexemes,
    ]


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def _add_terms(conn: psycopg.Connection[Any], tables: Tables, sources: list[str]) -> None:
    if not sources:
        return
    conn.execute(
        sql.SQL(
            "INSERT INTO {t} (lexeme, df) SELECT u.lexeme, count(*) FROM {c} c, "
            "unnest(c.lexemes) u WHERE c.source = ANY(%s) GROUP BY u.lexeme "
            "ON CONFLICT (lexeme) DO UPDATE SET df = {t}.df + excluded.df"
        ).format(t=tables.terms, c=tables.chunks),
        (sources,),
    )


_WEIGHTS = (
    """
UPDATE {c} c SET bm25 = w.v FROM (
    SELECT x.rid, ('{{' || string_agg(t.id || ':' || (x.tf / (x.tf + %(k1)s * (1 - %(b)s
        + %(b)s * x.dl / %(avgdl)s))), ',' ORDER BY t.id) || '}}/' || %(dims)s)::sparsevec AS v
    FROM (SELECT c2.rid, c2.dl, u.lexeme, """
    + TERM_FREQUENCY_SQL
    + """ AS tf
          FROM {c} c2, unnest(c2.lexemes) u WHERE {which}) x
    JOIN {t} t ON t.lexeme = x.lexeme GROUP BY x.rid
) w WHERE c.rid = w.rid
"""
)


def _weigh(conn: psycopg.Connection[Any], tables: Tables, kb_id: int, sources: list[str]) -> None:
    """Each new row's BM25 document weights, ``tf / (tf + k1 (1 - b + b dl / avgdl))`` per
    term id (the query side holds idf), with the knowledge base's reference ``avgdl``;
    every row's when the average moved more than :data:`BM25_DRIFT` from it."""
    counts = conn.execute(
        sql.SQL("SELECT count(*), coalesce(sum(dl), 0) FROM {}").format(tables.chunks)
    ).fetchone()
    ref_row = conn.execute("SELECT bm25_avgdl FROM kbgraph_kbs WHERE id = %s", (kb_id,)).fetchone()
    n, total = (int(v) for v in counts) if counts else (0, 0)
    avgdl = total / n if n and total else 1.0
    ref = float(ref_row[0]) if ref_row and ref_row[0] else None
    which = sql.SQL("c2.source = ANY(%(sources)s)")
    if ref is None or abs(avgdl / ref - 1) > BM25_DRIFT:
        ref, which = avgdl, sql.SQL("TRUE")
        conn.execute("UPDATE kbgraph_kbs SET bm25_avgdl = %s WHERE id = %s", (ref, kb_id))
    elif not sources:
        return
    params = {"k1": DEFAULT_K1, "b": DEFAULT_B, "avgdl": ref, "dims": SPARSE_DIMS}
    conn.execute(
        sql.SQL(_WEIGHTS).format(c=tables.chunks, t=tables.terms, which=which),
        {**params, "sources": sources},
    )


def _upsert_files(conn: psycopg.Connection[Any], tables: Tables, entries: list[FileEntry]) -> None:
    rows = []
    for e in entries:
        if (
            e.kept
            and e.previous is not None
            and (
                (e.previous.size, e.previous.mtime_ns, e.previous.sha256)
                == (e.record.size, e.record.mtime_ns, e.record.sha256)
            )
        ):
            continue  # untouched: no write
        r = e.record
        # A kept file has no failed chunk: one that had is re-embedded and comes with chunks.
        rows.append(
            (
                e.rel,
                r.size,
                r.mtime_ns,
                r.sha256,
                r.kind,
                Jsonb(r.notes),
                r.chunk_end - r.chunk_start,
                e.failed,
            )
        )
    if not rows:
        return
    with conn.cursor() as cur:
        cur.executemany(
            sql.SQL(
                "INSERT INTO {} (source, size, mtime_ns, sha256, kind, notes, chunk_count, failed) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (source) DO UPDATE SET "
                "size = excluded.size, mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256, "
                "kind = excluded.kind, notes = excluded.notes, chunk_count = excluded.chunk_count, "
                "failed = excluded.failed"
            ).format(tables.files),
            rows,
        )


def _publish(conn: psycopg.Connection[Any], tables: Tables, kb_id: int, meta: IndexMeta) -> None:
    counts = conn.execute(
        sql.SQL("SELECT count(*), coalesce(sum(dl), 0) FROM {}").format(tables.chunks)
    ).fetchone()
    n_docs, total_len = (int(v) for v in counts) if counts else (0, 0)
    record = meta.model_dump(mode="json", exclude={"files", "failed_embeddings"})
    conn.execute(
        "UPDATE kbgraph_kbs SET meta = %s, version = version + 1, n_docs = %s, total_len = %s "
        "WHERE id = %s",
        (Jsonb(record), n_docs, total_len, kb_id),
    )


__all__ = ["apply_update", "needs_write"]
