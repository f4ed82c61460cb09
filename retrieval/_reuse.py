"""What an indexing run may take from the previous generation, and what it must not.

The documents are the truth; the previous generation is a cache of work done on them. A
chunk record is reused only when it carries its own checksum (the chunk id hashes its
source, span and text) and names the file whose span holds it; a vector only when it is
finite with unit length. Anything else is damage: the file is read again and chunked, and
its vectors come from the embedding cache (or the model, for a damaged vector the cache
never held), so repairing costs the damaged part, not the index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kbgraph.errors import IndexCorruptError

from . import __version__
from .chunking import chunk_file
from .config import ChunkConfig
from .loaders import SkipFile, load_file
from .records import Chunk
from .scan import ScannedFile
from .store import FileRecord, IndexReader, sound_vectors


@dataclass
class Previous:
    """The previous generation as a source of chunks and vectors for one run."""

    reader: IndexReader
    failed: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, reader: IndexReader) -> Previous:
        return cls(reader, set(reader.meta.failed_embeddings))

    def rows(self, record: FileRecord) -> range:
        return range(record.chunk_start, record.chunk_end)

    def vector(self, row: int) -> np.ndarray | None:
        """The row's vector when it is sound; None when it failed or is damaged."""
        vectors = self.reader.vectors
        if vectors is None or row in self.failed:
            return None
        vector = np.array(vectors[row], dtype=np.float32)
        return vector if sound_vectors(vector[None, :])[0] else None


@dataclass
class Reused:
    chunks: list[Chunk]
    vectors: list[np.ndarray | None]
    damaged_vectors: int = 0


def reuse_unchanged(previous: Previous, record: FileRecord, rel: str) -> Reused | str:
    """The chunks and vectors of a file that did not change (same size and mtime), or why
    they cannot be trusted (then the caller reads the file again)."""
    chunks: list[Chunk] = []
    vectors: list[np.ndarray | None] = []
    damaged = 0
    for row in previous.rows(record):
        try:
            chunk = previous.reader.chunk(row)
        except IndexCorruptError as exc:
            return str(exc).rsplit("; ", 1)[0]
        vector = previous.vector(row)
        damaged += (
            vector is None and previous.reader.vectors is not None and (row not in previous.failed)
        )
        chunks.append(chunk)
        vectors.append(vector)
    return Reused(chunks, vectors, damaged)


def vectors_by_id(previous: Previous | None, record: FileRecord | None) -> dict[str, np.ndarray]:
    """Sound vectors of the file's previous chunks, by chunk id: a chunk with the same id
    has the same text at the same place, so its vector still holds after an edit
    elsewhere in the file. Damaged records are simply not offered."""
    if previous is None or record is None:
        return {}
    found: dict[str, np.ndarray] = {}
    for row in previous.rows(record):
        try:
            chunk = previous.reader.chunk(row)
        except IndexCorruptError:
            continue
        vector = previous.vector(row)
        if vector is not None:
            found[chunk.id] = vector
    return found


def same_chunks(previous: Previous, record: FileRecord, chunks: list[Chunk]) -> bool:
    """Whether the previous generation held exactly ``chunks`` for a file whose bytes did
    not change (a mismatch is damage or planted text). Chunks of another engine version
    may differ legitimately, so they count as the same."""
    if previous.reader.meta.engine_version != __version__:
        return True
    try:
        held = [previous.reader.chunk(row).id for row in previous.rows(record)]
    except IndexCorruptError:
        return False
    return held == [c.id for c in chunks]


def check_against_documents(reader: IndexReader, folder: Path, chunking: ChunkConfig) -> None:
    """For every file whose bytes are still those the index recorded (same sha256), chunk
    it again and compare with the index's records: text the file does not hold (planted
    by a crafted index, whose ids are right) is damage even where the checksums agree."""
    for rel in reader.sources:
        record = reader.meta.files[rel]
        path = folder / rel
        try:
            stat = path.stat()
        except OSError:
            continue  # gone since: stale, not damaged
        scanned = ScannedFile(path, rel, stat.st_size, stat.st_mtime_ns, record.kind)
        try:
            loaded = load_file(scanned)
        except SkipFile:
            continue
        if loaded.sha256 != record.sha256:
            continue
        expected = [c.id for c in chunk_file(loaded.segments, chunking, loaded.kind, rel)]
        held = [reader.chunk(row).id for row in range(record.chunk_start, record.chunk_end)]
        if expected != held:
            raise IndexCorruptError(
                f"{reader.chunks.path}: the chunks of {rel} do not match the file's bytes "
                "(text the file does not hold); run `kbgraph index --rebuild` to index it "
                "again from the documents"
            )


__all__ = [
    "Previous",
    "Reused",
    "check_against_documents",
    "reuse_unchanged",
    "same_chunks",
    "vectors_by_id",
]
