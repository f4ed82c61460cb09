"""Reading and writing one index generation as a set of files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kbgraph.errors import IndexCorruptError, IndexNotFoundError

from ..filters import SearchFilters
from ..lexical import BM25Index
from ..records import Chunk, index_text
from ._chunks import ChunkReader, write_chunks
from ._layout import IndexLayout, secure_tree
from ._lock import file_lock
from ._meta import FORMAT_VERSION, IndexMeta
from ._vectors import open_vectors, write_vectors


def write_generation(
    target: Path, meta: IndexMeta, chunks: Sequence[Chunk], vectors: np.ndarray | None
) -> None:
    """Fill a fresh generation folder; it becomes visible only when published."""
    write_chunks(target / "chunks.jsonl", target / "offsets.bin", chunks)
    if vectors is not None:
        write_vectors(target / "vectors.bin", vectors)
    BM25Index.build([index_text(c) for c in chunks]).save(target / "bm25")
    data = meta.model_dump_json(indent=1).encode("utf-8")
    fd = os.open(target / "meta.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    secure_tree(target)


class IndexReader:
    """An open generation: chunks, vectors (memory-mapped) and the BM25 index. Files stay
    open, so a writer may publish and delete this generation while it is being read."""

    def __init__(self, layout: IndexLayout, *, lock_timeout: float) -> None:
        with file_lock(layout.lock, "shared", lock_timeout, "open index"):
            name = layout.current_name()
            if name is None:
                raise IndexNotFoundError(
                    f"no index in {layout.root}; run `kbgraph index {layout.root.parent}` first"
                )
            self.name = name
            self.path = layout.generation(name)
            self.meta = _read_meta(self.path / "meta.json")
            self.chunks = ChunkReader(self.path / "chunks.jsonl", self.path / "offsets.bin")
            self.vectors = open_vectors(self.path / "vectors.bin") if self.meta.embedding else None
            self.bm25 = BM25Index.load(self.path / "bm25")
        self._check_counts()
        self.sources = sorted(self.meta.files, key=lambda s: self.meta.files[s].chunk_start)
        self.chunk_file = np.zeros(self.meta.chunk_count, dtype=np.int32)
        for i, source in enumerate(self.sources):
            record = self.meta.files[source]
            self.chunk_file[record.chunk_start : record.chunk_end] = i

    def _check_counts(self) -> None:
        counts = {"chunks.jsonl/offsets.bin": len(self.chunks), "bm25": len(self.bm25)}
        if self.vectors is not None:
            counts["vectors.bin"] = int(self.vectors.shape[0])
        bad = {k: v for k, v in counts.items() if v != self.meta.chunk_count}
        if bad:
            raise IndexCorruptError(
                f"{self.path}: meta.json says {self.meta.chunk_count} chunks but {bad}; re-index"
            )

    def mask(self, filters: SearchFilters | None) -> np.ndarray | None:
        """Allowed chunks, or None when every chunk is allowed."""
        if filters is None or filters.is_empty():
            return None
        allowed = np.array(
            [filters.allows(s, self.meta.files[s].kind) for s in self.sources], dtype=bool
        )
        if not len(allowed):
            return np.zeros(0, dtype=bool)
        return allowed[self.chunk_file]

    def validate(self) -> None:
        """Full check: counts agree (meta, chunks, offsets, vectors, BM25), offsets.bin
        points at line starts, every chunk parses and lies inside its file's chunk span,
        and every vector has unit length (zero only for a chunk whose embedding failed)."""
        self._check_counts()
        problem = self.chunks.check_offsets()
        if problem is not None:
            raise IndexCorruptError(f"{self.path}/offsets.bin: {problem}; re-index")
        spans = sum(r.chunk_end - r.chunk_start for r in self.meta.files.values())
        if spans != self.meta.chunk_count:
            raise IndexCorruptError(
                f"{self.path}: file spans cover {spans} chunks, meta.json says "
                f"{self.meta.chunk_count}; re-index"
            )
        for i, chunk in enumerate(self.chunks):
            record = self.meta.files.get(chunk.source)
            if record is None or not record.chunk_start <= i < record.chunk_end:
                raise IndexCorruptError(f"{self.path}: chunk {i} ({chunk.source}) is misplaced")
        if self.vectors is not None:
            self._check_norms(self.vectors)

    def _check_norms(self, vectors: np.ndarray) -> None:
        failed = set(self.meta.failed_embeddings)
        for start in range(0, len(vectors), _NORM_BLOCK):  # bounded memory on big indexes
            norms = np.linalg.norm(np.asarray(vectors[start : start + _NORM_BLOCK]), axis=1)
            zero = norms == 0.0
            bad = ~zero & (np.abs(norms - 1.0) > _NORM_TOLERANCE)
            bad |= zero & ~np.isin(np.arange(start, start + len(norms)), list(failed))
            if bad.any():
                row = start + int(np.flatnonzero(bad)[0])
                raise IndexCorruptError(
                    f"{self.path}: vector {row} has length {norms[row - start]:.4f}, not 1 "
                    f"({int(bad.sum())} such in rows {start}-{start + len(norms) - 1}); re-index"
                )

    def size_bytes(self) -> int:
        return sum(
            os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(self.path) for f in fs
        )

    def close(self) -> None:
        self.chunks.close()


_NORM_BLOCK = 65536
_NORM_TOLERANCE = 1e-3  # float32 rounding of a unit vector is far below this


def _read_meta(path: Path) -> IndexMeta:
    try:
        meta = IndexMeta.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise IndexCorruptError(f"{path} is missing; re-index the folder") from None
    except ValueError as exc:
        raise IndexCorruptError(f"{path} is not valid index metadata ({exc}); re-index") from exc
    if meta.format_version != FORMAT_VERSION:
        raise IndexCorruptError(
            f"{path}: index format {meta.format_version}, this kbgraph reads {FORMAT_VERSION}; "
            "re-index with `kbgraph index --rebuild`"
        )
    return meta
