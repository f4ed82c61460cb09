"""Rows both stores hand back: a file's previous chunks and vectors (for reuse), the
soundness test of a stored vector, and the check that a query vector fits an index."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kbgraph.errors import DimensionMismatchError

from .._records import Chunk
from ._meta import EmbeddingMeta

UNIT_NORM_TOLERANCE = 1e-3  # float32 rounding of a unit vector is far below this


@dataclass
class FileRows:
    """A file's rows in the previous version. A chunk is None where its record is damaged
    (``problem`` says how); a vector is None where its embedding failed or it is damaged
    (``damaged_vectors`` counts the damaged ones)."""

    chunks: list[Chunk | None]
    vectors: list[np.ndarray | None]
    damaged_vectors: int = 0
    problem: str | None = None


def sound_vectors(rows: np.ndarray) -> np.ndarray:
    """Per row: finite with unit length (NaN fails every comparison, so test for a match)."""
    block = np.asarray(rows, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        norms = np.linalg.norm(block, axis=1)
        return np.isfinite(block).all(axis=1) & (np.abs(norms - 1.0) <= UNIT_NORM_TOLERANCE)


def usable_vectors(
    matrix: np.ndarray | None, count: int, failed: set[int]
) -> tuple[list[np.ndarray | None], int]:
    """Per row of a file: its vector when sound (finite, unit length), else None; and the
    count of rows that were damaged rather than failed. ``failed``: positions in the file
    whose embedding failed before (zero rows, to try again)."""
    if matrix is None:
        return [None] * count, 0
    block = np.asarray(matrix, dtype=np.float32)
    sound = sound_vectors(block) if len(block) else np.zeros(0, dtype=bool)
    vectors: list[np.ndarray | None] = []
    damaged = 0
    for pos in range(count):
        if pos in failed:
            vectors.append(None)
        elif sound[pos]:
            vectors.append(np.array(block[pos]))
        else:
            vectors.append(None)
            damaged += 1
    return vectors, damaged


def joined_rows(parts: list[np.ndarray], dims: int) -> np.ndarray:
    """The parts one under the other. Slices lying end to end in one float32 buffer (each
    file's rows of a run's matrix, in order) are read in place, not copied: the vectors
    are held once while a version is written. Anything else is concatenated."""
    rows = [part for part in parts if len(part)]
    if not rows:
        return np.zeros((0, dims), dtype=np.float32)
    base = rows[0].base
    if isinstance(base, np.ndarray) and base.flags.c_contiguous:
        end = rows[0].ctypes.data
        for part in rows:
            if not _view_of(base, part, rows[0].shape[1]) or part.ctypes.data != end:
                break
            end += part.nbytes
        else:
            count = sum(len(part) for part in rows)
            offset = rows[0].ctypes.data - base.ctypes.data
            return np.ndarray((count, rows[0].shape[1]), np.float32, buffer=base, offset=offset)
    return np.concatenate(rows)


def _view_of(base: np.ndarray, part: np.ndarray, width: int) -> bool:
    return (
        part.base is base
        and part.dtype == np.float32
        and part.ndim == 2
        and part.shape[1] == width
        and part.flags.c_contiguous
    )


def check_query_vector(vector: np.ndarray, dims: int, embedding: EmbeddingMeta | None) -> None:
    """The query vector must have the index's size (another model would give noise)."""
    if vector.shape[-1] != dims:
        raise DimensionMismatchError(
            f"the index was built with {dims}-dim vectors "
            f"({embedding.provider if embedding else '?'}:"
            f"{embedding.model if embedding else '?'}) but the query model gives "
            f"{vector.shape[-1]}; search with the same model or re-index with --rebuild"
        )


__all__ = [
    "UNIT_NORM_TOLERANCE",
    "FileRows",
    "check_query_vector",
    "joined_rows",
    "sound_vectors",
    "usable_vectors",
]
