"""``vectors.bin``: a 16-byte header (magic ``RAGV``, version, dims, count; u32 little
endian) then ``count × dims`` float32 little-endian, L2-normalised, row-major."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from kbgraph.errors import IndexCorruptError

from ..storage import REPAIR

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
        fh.write(array.tobytes())
        fh.flush()
        os.fsync(fh.fileno())


def open_vectors(path: Path) -> np.ndarray:
    """Validate the header and exact length, then memory-map the matrix read-only."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise IndexCorruptError(f"{path} cannot be read ({exc.strerror}); {REPAIR}") from None
    if size < HEADER.size:
        raise IndexCorruptError(f"{path}: {size} bytes is shorter than the header; {REPAIR}")
    with open(path, "rb") as fh:
        magic, version, dims, count = HEADER.unpack(fh.read(HEADER.size))
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
    return np.memmap(path, dtype="<f4", mode="r", offset=HEADER.size, shape=(count, dims))
