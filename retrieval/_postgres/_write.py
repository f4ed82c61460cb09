"""Publishing a new version of a knowledge base in one transaction, touching only the rows
of files that changed (and the document frequencies of their terms)."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from .._records import Chunk, index_text
from .._storage import FileEntry, IndexMeta, IndexUpdate
from ._features import PgVector, layout_of
from ._lexical import TERM_FREQUENCY_SQL, tsvector_literal
from ._schema import Tables

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
            for ddl in [*tables.drop(), *tables.create(dims)]:
                conn.execute(ddl)
        else:
            assert previous is not None
            gone = sorted(set(previous.files) - set(meta.files))
            _delete_rows(conn, tables, gone + [e.rel for e in changed])
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE source = ANY(%s)").format(tables.files), (gone,)
            )
        sources = [e.rel for e in changed]
        _insert_rows(
            conn, tables, changed, with_vectors=meta.embedding is not None, tokenizer=meta.tokenizer
        )
        _add_terms(conn, tables, sources)
        _add_postings(conn, tables, sources)
        _upsert_files(conn, tables, update.entries)
        if fresh and dims:
            conn.execute(tables.vector_index(dims, halfvec=pgvector.halfvec))
        _publish(conn, tables, kb_id, meta)
    if fresh:
        _vacuum_postings(conn, tables)


def _vacuum_postings(conn: psycopg.Connection[Any], tables: Tables) -> None:
    """Index-only scans of the postings skip the table only on pages the visibility map
    marks all-visible: a bulk load has none until a VACUUM (autovacuum comes later)."""
    conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(tables.postings))


def migrate(conn: psycopg.Connection[Any], kb_id: int) -> bool:
    """Tables of kbgraph 0.1 get BM25's postings table (filled from every row's lexemes)
    and lose the BM25 weights column it replaces, in one transaction, before a writer's
    run; True when they did. Searches meanwhile read the older tables' way."""
    tables = Tables(kb_id)
    with conn.transaction():
        exists = conn.execute("SELECT to_regclass(%s)", (tables.chunks.as_string(conn),))
        row = exists.fetchone()
        if not row or row[0] is None:
            return False
        layout = layout_of(conn, tables)
        if layout.postings and not layout.bm25_column:
            return False
        if layout.bm25_column:
            conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN bm25").format(tables.chunks))
        if not layout.postings:
            for ddl in tables.create_postings():
                conn.execute(ddl)
            _add_postings(conn, tables, None)
        # A new version number: open snapshots see it and reopen with the new layout.
        conn.execute("UPDATE kbgraph_kbs SET version = version + 1 WHERE id = %s", (kb_id,))
    _vacuum_postings(conn, tables)
    return True


def _delete_rows(conn: psycopg.Connection[Any], tables: Tables, sources: list[str]) -> None:
    """Delete those files' chunks and take their terms out of the document frequencies."""
    if not sources:
        return
    conn.execute(
        sql.SQL(
            "WITH gone AS (DELETE FROM {c} WHERE source = ANY(%s) RETURNING rid, lexemes), "
            "posted AS (SELECT u.lexeme, gone.rid FROM gone, unnest(gone.lexemes) u), "
            "unposted AS (DELETE FROM {p} p USING posted "
            "WHERE p.lexeme = posted.lexeme AND p.rid = posted.rid), "
            "lex AS (SELECT lexeme, count(*) AS n FROM posted GROUP BY lexeme) "
            "UPDATE {t} t SET df = t.df - lex.n FROM lex WHERE t.lexeme = lex.lexeme"
        ).format(c=tables.chunks, t=tables.terms, p=tables.postings),
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


def _add_postings(conn: psycopg.Connection[Any], tables: Tables, sources: list[str] | None) -> None:
    """The postings of those files' rows (every row's when ``sources`` is None): each
    lexeme's term frequency in the row (glued identifier parts counting less) and the
    row's length, what BM25 needs besides the document frequencies."""
    if sources is not None and not sources:
        return
    which = sql.SQL("TRUE" if sources is None else "c.source = ANY(%(sources)s)")
    conn.execute(
        sql.SQL(
            "INSERT INTO {p} (lexeme, rid, tf, dl) SELECT u.lexeme, c.rid, "
            + TERM_FREQUENCY_SQL
            + ", c.dl FROM {c} c, unnest(c.lexemes) u WHERE {which}"
        ).format(p=tables.postings, c=tables.chunks, which=which),
        {"sources": sources},
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


__all__ = ["apply_update", "migrate", "needs_write"]
