"""``vectors.bin``: a 16-byte header (magic ``RAGV``, version, dims, count; u32 little
endian) then ``count × dims`` float32 little-endian, L2-normalised, row-major.

``vectors.sums`` binds each row to its chunk: per row, a u64 little-endian digest of the
chunk's id and the row's bytes. A unit vector moved to another row (two rows swapped) or
with one bit changed (a sign) is still a unit vector, so only this tells; a reader checks
the rows it ranks by, ``stats --validate`` all of them, and an indexing run does not reuse
a row that fails it. Generations written before it have no such file (bound on the next
``kbgraph index``).
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kbgraph.errors import IndexCorruptError

from .._fs import Read
from .._storage import REPAIR

MAGIC = 0x52414756  # "RAGV"
VERSION = 1
HEADER = struct.Struct("<IIII")


def write_vectors(path: Path, vectors: np.ndarray) -> None:
    """Write and fsync; the caller makes the file visible atomically (new generation)."""
    array = np.ascontiguousarray(vectors, dtype="<f4")
    if array.ndim != 2:
        raise ValueError(f"vectors must be 2-D (count, dims), got shape {array.shape}")
    count, dims = array.shape
    with open(path, "wb") as fh:
        fh.write(HEADER.pack(MAGIC, VERSION, dims, count))
        fh.write(array.data)  # the buffer itself: tobytes() would copy the matrix
        fh.flush()
        os.fsync(fh.fileno())


def open_vectors(path: Path, *, read: Read | None = None) -> np.ndarray:
    """Validate the header and exact length, then memory-map the matrix read-only (or
    view the bytes ``read`` returns: a generation held in memory, see :mod:`._mapped`)."""
    data, size, head = _head(path, read)
    magic, version, dims, count = HEADER.unpack(head)
    if magic != MAGIC:
        raise IndexCorruptError(f"{path}: bad magic {magic:#x} (expected RAGV); {REPAIR}")
    if version != VERSION:
        raise IndexCorruptError(
            f"{path}: vectors format version {version}, this kbgraph reads {VERSION}; "
            "re-index with `kbgraph index --rebuild`"
        )
    expected = HEADER.size + 4 * dims * count
    if size != expected:
        raise IndexCorruptError(
            f"{path}: {size} bytes, header says {count}×{dims} ({expected} bytes); {REPAIR}"
        )
    if count == 0:
        return np.zeros((0, dims), dtype=np.float32)
    if data is not None:  # read-only: a view of bytes
        return np.frombuffer(data, dtype="<f4", offset=HEADER.size).reshape(count, dims)
    return np.memmap(path, dtype="<f4", mode="r", offset=HEADER.size, shape=(count, dims))


def _head(path: Path, read: Read | None) -> tuple[bytes | None, int, bytes]:
    """The file's bytes (when ``read``), its size and its header."""
    try:
        if read is not None:
            data = read(path)
            size, head = len(data), data[: HEADER.size]
        else:
            data, size = None, path.stat().st_size
            with open(path, "rb") as fh:
                head = fh.read(HEADER.size)
    except OSError as exc:
        raise IndexCorruptError(f"{path} cannot be read ({exc.strerror}); {REPAIR}") from None
    if size < HEADER.size or len(head) < HEADER.size:
        raise IndexCorruptError(f"{path}: {size} bytes is shorter than the header; {REPAIR}")
    return data, size, head


SUMS = "vectors.sums"


def row_sum(chunk_id: str, row: np.ndarray) -> int:
    """The digest binding one vector row to its chunk (see the module docstring)."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(chunk_id.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(np.ascontiguousarray(row, dtype="<f4").tobytes())
    return int.from_bytes(digest.digest(), "little")


def write_sums(path: Path, ids: Sequence[str], vectors: np.ndarray) -> None:
    """``vectors.sums`` for the rows written to ``vectors.bin`` (fsynced, like it)."""
    sums = np.fromiter((row_sum(i, vectors[k]) for k, i in enumerate(ids)), dtype="<u8")
    with open(path, "wb") as fh:
        fh.write(sums.tobytes())
        fh.flush()
        os.fsync(fh.fileno())


def open_sums(path: Path, count: int, read: Read | None = None) -> np.ndarray | None:
    """The row digests of a generation (None: written before ``vectors.sums`` existed)."""
    try:
        raw = (read or Path.read_bytes)(path)
    except FileNotFoundError:
        return None
    if len(raw) != 8 * count:
        raise IndexCorruptError(
            f"{path}: {len(raw)} bytes, but {count} vectors need {8 * count}; {REPAIR}"
        )
    return np.frombuffer(raw, dtype="<u8")
