"""Reading and writing one index generation as a set of files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from kbgraph.errors import IndexCorruptError, IndexNotFoundError

from ..filters import SearchFilters
from ..lexical import BM25Index
from ..records import Chunk, chunk_id, index_text
from ..storage import (
    FORMAT_VERSION,
    REPAIR,
    IndexMeta,
    check_files,
    first_error,
    sound_vectors,
)
from ._ann import AnnIndex
from ._chunks import ChunkReader, write_chunks
from ._layout import IndexLayout, secure_tree
from ._lock import file_lock
from ._vectors import open_vectors, write_vectors


def write_generation(
    target: Path, meta: IndexMeta, chunks: Sequence[Chunk], vectors: np.ndarray | None
) -> None:
    """Fill a fresh generation folder; it becomes visible only when published."""
    write_chunks(target / "chunks.jsonl", target / "offsets.bin", chunks)
    if vectors is not None:
        write_vectors(target / "vectors.bin", vectors)
    BM25Index.build([index_text(c) for c in chunks], tokenizer=meta.tokenizer).save(target / "bm25")
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

    def __init__(
        self, layout: IndexLayout, *, lock_timeout: float, name: str | None = None
    ) -> None:
        """The live generation, or the one called ``name`` (to recover from a damaged
        CURRENT)."""
        with file_lock(layout.lock, "shared", lock_timeout, "open index"):
            name = name or layout.current_name()
            if name is None:
                raise IndexNotFoundError(
                    f"no index in {layout.root}; run `kbgraph index {layout.root.parent}` first"
                )
            self.name = name
            self.path = layout.generation(name)
            self.meta = read_meta(self.path / "meta.json")
            self.chunks = ChunkReader(self.path / "chunks.jsonl", self.path / "offsets.bin")
            try:
                self.vectors = (
                    open_vectors(self.path / "vectors.bin") if self.meta.embedding else None
                )
                self.bm25 = _load_bm25(self.path / "bm25")
                self.ann = (
                    AnnIndex.open(self.path, self.meta.chunk_count)
                    if self.vectors is not None
                    else None
                )
            except BaseException:
                self.chunks.close()
                raise
        try:
            self._check_counts()
            self.sources = check_files(self.meta, self.path / "meta.json")
        except BaseException:
            self.chunks.close()
            raise
        self.chunk_file = np.zeros(self.meta.chunk_count, dtype=np.int32)
        for i, source in enumerate(self.sources):
            record = self.meta.files[source]
            self.chunk_file[record.chunk_start : record.chunk_end] = i

    def chunk(self, row: int) -> Chunk:
        """Chunk ``row``, checked: its id must be the checksum of its source, span and
        text (bit rot), and it must name the file whose span holds it in meta.json (a path
        outside the folder, say). Anything else is damage (IndexCorruptError)."""
        chunk = self.chunks.get(row)
        expected = self.sources[int(self.chunk_file[row])]
        problem = chunk_problem(chunk)
        if problem is None and chunk.source != expected:
            problem = f"names {chunk.source!r}, but meta.json places that row in {expected!r}"
        if problem is not None:
            raise IndexCorruptError(
                f"{self.chunks.path}: line {row + 1} ({expected}) {problem}; {REPAIR}"
            )
        return chunk

    def _check_counts(self) -> None:
        counts = {"chunks.jsonl/offsets.bin": len(self.chunks), "bm25": len(self.bm25)}
        if self.vectors is not None:
            counts["vectors.bin"] = int(self.vectors.shape[0])
        bad = {k: v for k, v in counts.items() if v != self.meta.chunk_count}
        if bad:
            files = " and ".join(bad)
            raise IndexCorruptError(
                f"{self.path}: meta.json says {self.meta.chunk_count} chunks but {files} hold "
                f"{', '.join(str(v) for v in bad.values())}; {REPAIR}"
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
        points at line starts, every chunk parses, carries its own id (a checksum of its
        source, span and text), names the file whose span holds it, and every vector is
        finite with unit length (zero only for a chunk whose embedding failed)."""
        self._check_counts()
        problem = self.chunks.check_offsets()
        if problem is not None:
            raise IndexCorruptError(f"{self.path}/offsets.bin: {problem}; {REPAIR}")
        for row in range(len(self.chunks)):
            self.chunk(row)
        if self.vectors is not None:
            self._check_norms(self.vectors)

    def _check_norms(self, vectors: np.ndarray) -> None:
        failed = np.asarray(self.meta.failed_embeddings, dtype=np.int64)
        for start in range(0, len(vectors), _NORM_BLOCK):  # bounded memory on big indexes
            rows = np.arange(start, min(start + _NORM_BLOCK, len(vectors)))
            bad = ~sound_vectors(np.asarray(vectors[start : start + _NORM_BLOCK]))
            bad &= ~np.isin(rows, failed) | ~zero_rows(vectors[start : start + _NORM_BLOCK])
            if bad.any():
                row = int(rows[np.flatnonzero(bad)[0]])
                with np.errstate(invalid="ignore", over="ignore"):
                    norm = float(np.linalg.norm(np.asarray(vectors[row], dtype=np.float64)))
                raise IndexCorruptError(
                    f"{self.path}/vectors.bin: vector {row} has length {norm:.4f}, not 1 "
                    f"({int(bad.sum())} such in rows {rows[0]}-{rows[-1]}); {REPAIR}"
                )

    def size_bytes(self) -> int:
        return sum(
            os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(self.path) for f in fs
        )

    def close(self) -> None:
        self.chunks.close()


_NORM_BLOCK = 65536


def zero_rows(rows: np.ndarray) -> np.ndarray:
    return np.logical_not(np.asarray(rows).any(axis=1))


def chunk_problem(chunk: Chunk) -> str | None:
    """What is wrong with one chunk record on its own, or None: its id must be the
    checksum of its source, span and text (``chunk_id``), its spans ordered."""
    identity = chunk.source if chunk.page is None else f"{chunk.source}#page={chunk.page}"
    if chunk.id != chunk_id(identity, chunk.byte_start, chunk.byte_end, chunk.text):
        return "does not match its checksum (the chunk id)"
    if not 0 <= chunk.byte_start <= chunk.byte_end or not 1 <= chunk.line_start <= chunk.line_end:
        return "has an impossible line or byte span"
    return None


def _load_bm25(directory: Path) -> BM25Index:
    try:
        return BM25Index.load(directory)
    except IndexNotFoundError as exc:  # inside a generation, a missing part is damage
        raise IndexCorruptError(f"{exc} ({REPAIR})") from None


def read_meta(path: Path) -> IndexMeta:
    """meta.json of a generation; every problem is one line naming the file."""
    try:
        meta = IndexMeta.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise IndexCorruptError(f"{path} is missing; {REPAIR}") from None
    except OSError as exc:
        raise IndexCorruptError(f"{path} cannot be read ({exc.strerror}); {REPAIR}") from None
    except ValidationError as exc:
        raise IndexCorruptError(
            f"{path} is not valid index metadata ({first_error(exc)}); {REPAIR}"
        ) from None
    if meta.format_version != FORMAT_VERSION:
        raise IndexCorruptError(
            f"{path}: index format {meta.format_version}, this kbgraph reads {FORMAT_VERSION}; "
            "re-index with `kbgraph index --rebuild`"
        )
    return meta
