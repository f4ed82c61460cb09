"""The PostgreSQL store: a knowledge base's index in tables of a database.

One writer per knowledge base at a time: a session advisory lock held for the whole run
(the server drops it when the writer's connection ends, killed or not). The run publishes
in one transaction that replaces the rows of changed files only, so a reader sees the old
version of every file or the new one, never a mix; a run that changed nothing writes
nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from kbgraph.errors import IndexLockedError, IndexNotFoundError

from .._records import Chunk
from .._storage import (
    FileRecord,
    FileRows,
    IndexMeta,
    Recorded,
    VersionInfo,
    no_versions,
    recorded_of,
    usable_vectors,
)
from ._connect import Database, ensure_vector_extension
from ._features import layout_of, pgvector_of
from ._pool import fails_back, start_session
from ._schema import ADVISORY_CLASS, SCHEMA_LOCK, SHARED_DDL, Tables
from ._servers import Servers, address, in_recovery, server_info, wait_for_replay
from ._snapshot import EXACT_BELOW, PgSnapshot
from ._write import apply_update, migrate

_LOCK_POLL_S = 0.2
READ_YOUR_WRITES_S = 10.0
"""After this store wrote, its next read on a standby waits (up to this long) until the
standby has replayed the write: an index run's report and the searches after it see it."""


class PgEmbeddingCache:
    """The embedding cache in ``kbgraph_embedding_cache``, each batch its own transaction
    (an interrupted run keeps what it embedded)."""

    def __init__(self, db: Database, conn: psycopg.Connection[Any], model: str) -> None:
        self.db, self._conn, self.model = db, conn, model

    @property
    def location(self) -> str:
        return f"{self.db.location} (kbgraph_embedding_cache)"

    def get_many(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        return {
            str(digest): np.frombuffer(bytes(blob), dtype="<f4").astype(np.float32)
            for digest, blob in self._rows("hash, vector", "", hashes)
        }

    def cut_among(self, hashes: Sequence[str]) -> set[str]:
        return {str(digest) for (digest,) in self._rows("hash", "AND cut", hashes)}

    def _rows(self, columns: str, condition: str, hashes: Sequence[str]) -> list[tuple[Any, ...]]:
        """``columns`` of this model's rows among ``hashes`` (each asked once) that meet
        ``condition``, 5,000 hashes a query. Both are this module's literals, never input."""
        wanted = list(dict.fromkeys(hashes))
        out: list[tuple[Any, ...]] = []
        for start in range(0, len(wanted), 5000):
            with self.db.errors("read the embedding cache"):
                out += self._conn.execute(
                    f"SELECT {columns} FROM kbgraph_embedding_cache "
                    f"WHERE model = %s {condition} AND hash = ANY(%s)",
                    (self.model, wanted[start : start + 5000]),
                ).fetchall()
        return out

    def put_many(self, items: Mapping[str, np.ndarray], cut: Collection[str] = ()) -> None:
        rows = [
            (self.model, d, np.asarray(v, dtype="<f4").tobytes(), d in cut)
            for d, v in items.items()
        ]
        if not rows:
            return
        with (
            self.db.errors("write the embedding cache"),
            self._conn.transaction(),
            self._conn.cursor() as cur,
        ):
            cur.executemany(
                "INSERT INTO kbgraph_embedding_cache (model, hash, vector, cut) "
                "VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (model, hash) DO NOTHING",
                rows,
            )

    def __enter__(self) -> PgEmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class PgPrevious:
    """The live version of a knowledge base as the source of a run's reused rows."""

    def __init__(self, writer: PgWriter) -> None:
        assert writer._meta is not None
        self._writer, self.meta = writer, writer._meta
        self._failed = set(self.meta.failed_embeddings)
        self.upgrading = False  # a database's rows have no older format

    def rows_of(self, rel: str, record: FileRecord) -> FileRows:
        chunks, matrix = self._writer.rows_of(rel)
        failed = {row - record.chunk_start for row in self._failed}
        vectors, damaged = usable_vectors(matrix, len(chunks), failed)
        return FileRows(list(chunks), vectors, damaged)


class PgWriter:
    """One indexing run's view of a knowledge base, under its advisory lock."""

    def __init__(self, store: PostgresStore, conn: psycopg.Connection[Any], kb_id: int) -> None:
        self.store, self._conn, self.kb_id = store, conn, kb_id
        self.tables = Tables(kb_id)
        self._meta = store.load_meta(conn, kb_id)
        self.had_previous = self._meta is not None
        self.repaired_in_place: list[str] = []

    def open_previous(self) -> tuple[PgPrevious | None, list[str]]:
        return (PgPrevious(self) if self._meta is not None else None), []

    def tidy(self) -> None:
        """A transaction leaves nothing behind when its writer dies."""

    def rows_of(self, rel: str) -> tuple[list[Chunk], np.ndarray | None]:
        """File ``rel``'s chunks and vectors in the live version (NULL vectors as zeros)."""
        with self.store.db.errors("read the previous version"):
            vectors = "embedding::real[]" if self._has_vectors() else "NULL"
            rows = self._conn.execute(
                sql.SQL(
                    "SELECT chunk_id, text, source, line_start, line_end, byte_start, byte_end, "
                    "section, page, {} FROM {} WHERE source = %s ORDER BY ord"
                ).format(sql.SQL(vectors), self.tables.chunks),
                (rel,),
            ).fetchall()
        chunks = [Chunk(*row[:9]) for row in rows]
        if not self._has_vectors():
            return chunks, None
        dims = self._meta.embedding.dims if self._meta and self._meta.embedding else 0
        matrix = np.zeros((len(rows), dims), dtype=np.float32)
        for i, row in enumerate(rows):
            if row[9] is not None:
                matrix[i] = row[9]
        return chunks, matrix

    def _has_vectors(self) -> bool:
        return self._meta is not None and self._meta.embedding is not None

    def cache(self, model: str) -> PgEmbeddingCache:
        return PgEmbeddingCache(self.store.db, self._conn, model)

    def commit(self, update: Any) -> None:
        with self.store.db.errors("write the index"):
            apply_update(self._conn, self.kb_id, self._meta, update, pgvector_of(self._conn))


class PostgresStore:
    """The index of the documents folder ``folder`` in the database at ``url`` (the
    primary, or several hosts), searched at ``read_url`` when given (a standby)."""

    def __init__(
        self,
        url: str,
        folder: Path,
        *,
        read_url: str | None = None,
        exact_below: int = EXACT_BELOW,
    ) -> None:
        self.servers = Servers(url, read_url)
        self.db = self.servers.write
        self.folder = str(folder)
        self.exact_below = exact_below
        # One connection for the cheap reads every search starts with (is there a newer
        # version?), kept open: a connection costs a round trip and an authentication.
        self._conn: psycopg.Connection[Any] | None = None
        self._conn_lock = threading.Lock()
        self._on_standby = False
        self._connected_at = 0.0
        self._written: str | None = None  # the WAL position of this store's last write

    @property
    def location(self) -> str:
        return self.servers.location

    @property
    def _read_db(self) -> Database:
        return self.servers.read or self.servers.write

    @property
    def index_dir(self) -> Path | None:
        return None

    # -- reading ------------------------------------------------------------------------
    @contextmanager
    def _reading(self, doing: str) -> Iterator[psycopg.Connection[Any]]:
        with self._conn_lock:
            if self._back_to_standby():
                self._close_reader()
            try:
                with self._read_db.errors(doing):
                    if self._conn is None or self._conn.closed or self._conn.broken:
                        self._conn = self.servers.reader()
                        self._connected_at = time.monotonic()
                        self._on_standby = in_recovery(self._conn)
                        start_session(self._conn)  # a lock on kbgraph_kbs: a timeout
                    if self._written is not None and self._on_standby:
                        wait_for_replay(self._conn, self._written, READ_YOUR_WRITES_S)
                    self._written = None
                    yield self._conn
            except BaseException:
                self._close_reader()  # a connection that failed is not reused
                raise

    def _back_to_standby(self) -> bool:
        """On the primary while searches prefer a standby, for long enough to try again."""
        return self._conn is not None and fails_back(
            self.servers, self._on_standby, self._connected_at
        )

    def _kb_row(self, conn: psycopg.Connection[Any]) -> tuple[Any, ...] | None:
        exists = conn.execute("SELECT to_regclass('kbgraph_kbs')").fetchone()
        if not exists or exists[0] is None:
            return None
        return conn.execute(
            "SELECT id, version, n_docs, total_len FROM kbgraph_kbs "
            "WHERE folder = %s AND meta IS NOT NULL",
            (self.folder,),
        ).fetchone()

    def current_key(self) -> str | None:
        """The live version and the server that answered: a search that moves to another
        server (a standby lost, or back) reopens its snapshot there."""
        with self._reading("read the knowledge base") as conn:
            row = self._kb_row(conn)
            return None if row is None else f"{row[0]}:{row[1]}@{address(conn)}"

    def recorded(self) -> Recorded:
        with self._reading("read the knowledge base") as conn:
            row = self._kb_row(conn)
            return recorded_of(None if row is None else self.load_meta(conn, int(row[0])))

    def open(self) -> PgSnapshot:
        with self._reading("open the knowledge base") as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            row = self._kb_row(conn)
            meta = None if row is None else self.load_meta(conn, int(row[0]))
            layout = None if row is None else layout_of(conn, Tables(int(row[0])))
        if row is None or meta is None or layout is None:
            raise IndexNotFoundError(
                f"{self.folder} has no index in {self.location} yet; run "
                f"`kbgraph index {self.folder} --store <url>`"
            )
        kb_id, version, n_docs, total_len = (int(v) for v in row)
        return PgSnapshot(
            self.servers,
            Tables(kb_id),
            meta,
            (version, n_docs, total_len),
            layout,
            self.exact_below,
        )

    def server(self) -> dict[str, Any]:
        """The server searches go to (``kbgraph stats``): see ``server_info``."""
        with self._reading("describe the server") as conn:
            return server_info(conn)

    def load_meta(self, conn: psycopg.Connection[Any], kb_id: int) -> IndexMeta | None:
        """The live version's meta: the recorded settings plus the files table (rows are
        numbered in path order, as one list of every chunk of every file)."""
        row = conn.execute("SELECT meta FROM kbgraph_kbs WHERE id = %s", (kb_id,)).fetchone()
        if row is None or row[0] is None:
            return None
        files: dict[str, FileRecord] = {}
        failed: list[int] = []
        start = 0
        for source, size, mtime, sha, kind, notes, count, bad in conn.execute(
            sql.SQL(
                "SELECT source, size, mtime_ns, sha256, kind, notes, chunk_count, failed "
                'FROM {} ORDER BY source COLLATE "C"'
            ).format(Tables(kb_id).files)
        ):
            files[source] = FileRecord(
                size=size,
                mtime_ns=mtime,
                sha256=sha,
                kind=kind,
                chunk_start=start,
                chunk_end=start + count,
                notes=notes,
            )
            failed.extend(start + i for i in bad)
            start += count
        data = dict(row[0])
        data.update(files=files, file_count=len(files), chunk_count=start, failed_embeddings=failed)
        return IndexMeta.model_validate(data)

    # -- writing ------------------------------------------------------------------------
    def _ensure_schema(self, conn: psycopg.Connection[Any]) -> int:
        with self.db.errors("create kbgraph's tables"):
            ensure_vector_extension(self.db, conn)
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (ADVISORY_CLASS, SCHEMA_LOCK))
                for ddl in SHARED_DDL:
                    conn.execute(ddl)
                conn.execute(
                    "INSERT INTO kbgraph_kbs (folder) VALUES (%s) ON CONFLICT (folder) DO NOTHING",
                    (self.folder,),
                )
            row = conn.execute(
                "SELECT id FROM kbgraph_kbs WHERE folder = %s", (self.folder,)
            ).fetchone()
        assert row is not None
        return int(row[0])

    def _lock(self, conn: psycopg.Connection[Any], kb_id: int, timeout: float, doing: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with self.db.errors(f"lock the knowledge base to {doing}"):
                got = conn.execute(
                    "SELECT pg_try_advisory_lock(%s, %s)", (ADVISORY_CLASS, kb_id)
                ).fetchone()
            if got and got[0]:
                return
            if time.monotonic() >= deadline:
                raise IndexLockedError(
                    f"another process is writing the index of {self.folder} in {self.location} "
                    f"(waited {timeout:g} s to {doing}); wait for it or pass a longer "
                    "--lock-timeout"
                )
            time.sleep(_LOCK_POLL_S)

    @contextmanager
    def writing(self, lock_timeout: float) -> Iterator[PgWriter]:
        conn = self.servers.writer()
        try:
            kb_id = self._ensure_schema(conn)
            self._lock(conn, kb_id, lock_timeout, "index")
            with self.db.errors("upgrade the knowledge base's tables"):
                if migrate(conn, kb_id):
                    self._wrote(conn)
            with self.db.errors("read the previous version"):
                writer = PgWriter(self, conn, kb_id)
            yield writer
            self._wrote(conn)
        finally:
            conn.close()  # ends the session: the advisory lock goes with it

    def _wrote(self, conn: psycopg.Connection[Any]) -> None:
        if self.servers.prefers_standby:
            with self.db.errors("read the primary's WAL position"):
                row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
            self._written = str(row[0]) if row else None

    # -- versions: the live one only (rows are replaced in place, one transaction a run) --
    def read_only(self) -> bool:
        return False  # a standby says so when written to: ReadOnlyStoreError, before any write

    def versions(self) -> list[VersionInfo]:
        raise no_versions(Path(self.folder), self.location)

    def version_count(self) -> int:
        return 1

    def restore(self, wanted: str, lock_timeout: float) -> VersionInfo:
        raise no_versions(Path(self.folder), self.location)

    def delete(self, documents: Path, lock_timeout: float) -> None:
        conn = self.servers.writer()
        try:
            with self.db.errors("delete the knowledge base"):
                row = self._kb_row(conn)
                if row is None:
                    raise IndexNotFoundError(
                        f"{documents} has no index to delete in {self.location}"
                    )
                kb_id = int(row[0])
                self._lock(conn, kb_id, lock_timeout, "delete")
                with conn.transaction():
                    for ddl in Tables(kb_id).drop():
                        conn.execute(ddl)
                    conn.execute("DELETE FROM kbgraph_kbs WHERE id = %s", (kb_id,))
            self._wrote(conn)
        finally:
            conn.close()

    def _close_reader(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Close the reading connection (a snapshot closes its own)."""
        with self._conn_lock:
            self._close_reader()

    def __repr__(self) -> str:
        return f"PostgresStore({self.location!r}, folder={self.folder!r})"


__all__ = ["PgEmbeddingCache", "PgWriter", "PostgresStore"]
