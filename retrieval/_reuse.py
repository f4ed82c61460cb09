"""What an indexing run may take from the previous version, and what it must not.

The documents are the truth; the previous generation is a cache of work done on them. A
chunk record is reused only when it carries its own checksum (the chunk id hashes its
source, span and text) and names the file whose span holds it; a vector only when it is
finite with unit length. Anything else is damage: the file is read again and chunked, and
its vectors come from the embedding cache (or the model, for a damaged vector the cache
never held), so repairing costs the damaged part, not the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kbgraph._version import __version__

from .records import Chunk
from .storage import FileRecord, FileRows, usable_vectors

if TYPE_CHECKING:
    from .storage import Previous


@dataclass
class Reused:
    chunks: list[Chunk]
    vectors: list[np.ndarray | None]
    damaged_vectors: int = 0


def reuse_unchanged(previous: Previous, record: FileRecord, rel: str) -> Reused | str:
    """The chunks and vectors of a file that did not change (same size and mtime), or why
    they cannot be trusted (then the caller reads the file again)."""
    rows = previous.rows_of(rel, record)
    if rows.problem is not None or any(c is None for c in rows.chunks):
        return rows.problem or f"a chunk record of {rel} is damaged"
    chunks = [c for c in rows.chunks if c is not None]
    return Reused(chunks, rows.vectors, rows.damaged_vectors)


def vectors_by_id(
    previous: Previous | None, record: FileRecord | None, rel: str
) -> dict[str, np.ndarray]:
    """Sound vectors of the file's previous chunks, by chunk id: a chunk with the same id
    has the same text at the same place, so its vector still holds after an edit
    elsewhere in the file. Damaged records are simply not offered."""
    if previous is None or record is None:
        return {}
    rows = previous.rows_of(rel, record)
    return {
        chunk.id: vector
        for chunk, vector in zip(rows.chunks, rows.vectors, strict=True)
        if chunk is not None and vector is not None
    }


def same_chunks(previous: Previous, record: FileRecord, rel: str, chunks: list[Chunk]) -> bool:
    """Whether the previous version held exactly ``chunks`` for a file whose bytes did
    not change (a mismatch is damage or planted text). Chunks of another engine version
    may differ legitimately, so they count as the same."""
    if previous.meta.engine_version != __version__:
        return True
    held = previous.rows_of(rel, record).chunks
    return [c.id if c else None for c in held] == [c.id for c in chunks]


__all__ = [
    "FileRows",
    "Reused",
    "reuse_unchanged",
    "same_chunks",
    "usable_vectors",
    "vectors_by_id",
]
