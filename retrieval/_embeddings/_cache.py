"""The embedding cache: vectors keyed by (model identity, sha256 of the text), in SQLite.

It lives beside the index generations and outlives rebuilds, so re-indexing only embeds text
never embedded before. Every ``put_many`` is its own committed transaction: an indexing run
killed half-way keeps what it embedded. WAL mode and a busy timeout let several processes
read and write at once. The cache is derived data: a file that is not a database is
replaced, with a warning, rather than failing the run.

Each vector keeps whether the model's input cut its text (``cut``): a vector reused from
here is as cut as when it was made, and re-deriving that needs the model's tokenizer (the
model loaded, which a run that embeds nothing never does), so the flag is remembered, not
re-derived. Rows written before the column existed read as not cut."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import numpy as np

from kbgraph.errors import EmbeddingError

from .._records import text_hash
from ._batching import BatchEmbedder, check_dims

logger = logging.getLogger("kbgraph.retrieval._embeddings")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    dims INTEGER NOT NULL,
    vector BLOB NOT NULL,
    cut INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (model, hash)
) WITHOUT ROWID
"""
_ADD_CUT = "ALTER TABLE embeddings ADD COLUMN cut INTEGER NOT NULL DEFAULT 0"
# Well under SQLite's limit on bound parameters (999 in builds older than 3.32).
_QUERY_CHUNK = 500
_BUSY_TIMEOUT_S = 60.0


def _create_private(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    # The file may predate us or the umask may have widened it. SQLite creates -wal and
    # -shm with the database file's permissions, so they follow.
    os.chmod(path, 0o600)


class VectorCache(Protocol):
    """An embedding cache: vectors by sha256 of the text, for one model identity. The
    SQLite one below serves the folder index; a database store keeps its own."""

    model: str

    @property
    def location(self) -> str:
        """Where the cache lives, for messages."""

    def get_many(self, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, items: Mapping[str, np.ndarray], cut: Collection[str] = ()) -> None:
        """Store vectors; ``cut``: the hashes among them whose text the model's input cut."""

    def cut_among(self, hashes: Sequence[str]) -> set[str]:
        """Those of ``hashes`` stored with their text cut."""


class EmbeddingCache:
    """``EmbeddingCache(path, model)``; ``model`` is the identity string
    (``describe_embeddings(...).key``). Thread-safe; one instance per process is enough."""

    def __init__(self, path: Path, model: str, *, timeout: float = _BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.model = model
        self._timeout = timeout
        self._lock = threading.Lock()
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise  # locked or unwritable: not ours to delete
            logger.warning("embedding cache %s is unreadable (%s); starting a new one", path, exc)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        _create_private(self.path)
        conn = sqlite3.connect(
            self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL survives a killed process (not a power cut), which is the
            # durability a re-computable cache needs, at a fraction of FULL's fsyncs.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_SCHEMA)
            _add_cut_column(conn)
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    @property
    def location(self) -> str:
        return str(self.path)

    def get_many(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors of those ``hashes`` that are present (float32, 1-D)."""
        found: dict[str, np.ndarray] = {}
        for digest, dims, blob in self._rows("hash, dims, vector", "", hashes):
            vector = np.frombuffer(blob, dtype="<f4")
            if vector.shape[0] == dims:  # a torn row is a miss, not an error
                found[digest] = vector.astype(np.float32)
        return found

    def cut_among(self, hashes: Sequence[str]) -> set[str]:
        """Those of ``hashes`` stored with their text cut."""
        return {digest for (digest,) in self._rows("hash", "AND cut != 0", hashes)}

    def _rows(self, columns: str, condition: str, hashes: Sequence[str]) -> list[tuple[Any, ...]]:
        """``columns`` of this model's rows among ``hashes`` (each asked once) that meet
        ``condition``, queried :data:`_QUERY_CHUNK` hashes at a time."""
        wanted = list(dict.fromkeys(hashes))
        out: list[tuple[Any, ...]] = []
        with self._lock:
            for start in range(0, len(wanted), _QUERY_CHUNK):
                part = wanted[start : start + _QUERY_CHUNK]
                marks = ",".join("?" * len(part))
                out += self._conn.execute(
                    f"SELECT {columns} FROM embeddings "
                    f"WHERE model = ? {condition} AND hash IN ({marks})",
                    [self.model, *part],
                )
        return out

    def put_many(self, items: Mapping[str, np.ndarray], cut: Collection[str] = ()) -> None:
        """Store vectors (one committed transaction); ``cut``: hashes whose text was cut."""
        rows = []
        for digest, vector in items.items():
            flat = np.asarray(vector, dtype="<f4").reshape(-1)
            rows.append((self.model, digest, int(flat.shape[0]), flat.tobytes(), digest in cut))
        if not rows:
            return
        with self._lock:
            # IMMEDIATE takes the write lock up front, so a concurrent writer waits on the
            # busy timeout instead of failing on a read-to-write upgrade.
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (model, hash, dims, vector, cut) "
                    "VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def __len__(self) -> int:
        """Vectors cached for this model."""
        with self._lock:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM embeddings WHERE model = ?", (self.model,)
            ).fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _add_cut_column(conn: sqlite3.Connection) -> None:
    """A cache made before vectors kept their ``cut`` flag gets the column (its rows: 0)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(embeddings)")}
    if "cut" in columns:
        return
    try:
        conn.execute(_ADD_CUT)
    except sqlite3.OperationalError as exc:
        if "duplicate column" not in str(exc):
            raise  # another process adding it at the same moment is the only race


@dataclass(frozen=True, slots=True)
class CachedEmbedOutcome:
    """``embedded``: distinct texts embedded now; ``reused``: positions served from the cache
    or by an identical text embedded in this run; ``failed``: positions that could not be
    embedded (zero rows). ``embedded + reused + len(failed) == len(texts)``. ``cut``: the
    positions whose text was longer than the model's input (only its beginning is in the
    vector), embedded now or reused from the cache; ``truncated``: how many."""

    vectors: np.ndarray
    embedded: int
    reused: int
    failed: list[int] = field(default_factory=list)
    cut: list[int] = field(default_factory=list)

    @property
    def truncated(self) -> int:
        return len(self.cut)


def embed_with_cache(
    embedder: BatchEmbedder,
    cache: VectorCache,
    texts: Sequence[str],
    on_progress: Callable[[int, int], None] | None = None,
    *,
    expected_dims: int | None = None,
    index_model: str | None = None,
) -> CachedEmbedOutcome:
    """Vectors for ``texts``, embedding only texts whose hash is not cached, each distinct
    text once. Each batch is committed to the cache as soon as it is embedded.
    ``on_progress(done, total)`` counts positions of ``texts``, starting with the cached.
    ``expected_dims`` (the index's vector size) refuses vectors of another size with
    ``DimensionMismatchError`` before they reach the cache, which keeps them out of it."""
    hashes = [text_hash(text) for text in texts]
    positions: dict[str, list[int]] = {}
    for i, digest in enumerate(hashes):
        positions.setdefault(digest, []).append(i)
    known = cache.get_many(list(positions))
    cut_hashes = cache.cut_among(list(known)) if known else set()
    missing = [digest for digest in positions if digest not in known]
    done = sum(len(positions[d]) for d in known)
    if on_progress is not None:
        on_progress(done, len(texts))
    failed_hashes: set[str] = set()
    embedded = 0
    for batch in embedder.iter_batches([texts[positions[d][0]] for d in missing]):
        width = int(batch.vectors.shape[1])
        if expected_dims and width:
            check_dims(expected_dims, width, index_model=index_model, current_model=cache.model)
        batch_hashes = [missing[i] for i in batch.indices]
        failed_here = {missing[i] for i in batch.failed}
        fresh = {d: batch.vectors[k] for k, d in enumerate(batch_hashes) if d not in failed_here}
        cut_here = {missing[i] for i in batch.cut} - failed_here
        cache.put_many(fresh, cut_here)
        known.update(fresh)
        cut_hashes |= cut_here
        failed_hashes |= failed_here
        embedded += len(fresh)
        done += sum(len(positions[d]) for d in batch_hashes)
        if on_progress is not None:
            on_progress(done, len(texts))
    vectors = _assemble(known, hashes, embedder.dims, cache)
    failed = sorted(i for d in failed_hashes for i in positions[d])
    reused = len(texts) - embedded - len(failed)
    cut = sorted(i for d in cut_hashes for i in positions[d])
    return CachedEmbedOutcome(vectors, embedded, reused, failed, cut)


def _assemble(
    known: Mapping[str, np.ndarray], hashes: Sequence[str], dims: int | None, cache: VectorCache
) -> np.ndarray:
    widths = {int(v.shape[0]) for v in known.values()}
    if dims is not None:
        widths.add(dims)
    if len(widths) > 1:
        raise EmbeddingError(
            f"the embedding cache {cache.location} holds vectors of sizes {sorted(widths)} for "
            f"model {cache.model!r}; the model changed under the same name: delete the cache "
            "file and index again"
        )
    width = widths.pop() if widths else 0
    out = np.zeros((len(hashes), width), dtype=np.float32)
    for i, digest in enumerate(hashes):
        vector = known.get(digest)
        if vector is not None:
            out[i] = vector
    return out


__all__ = ["CachedEmbedOutcome", "EmbeddingCache", "VectorCache", "embed_with_cache"]
