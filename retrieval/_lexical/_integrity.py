"""Checksums of the BM25 score columns, so that a query sums only columns it verified.

A query reads a few columns of memory-mapped arrays; a flipped byte there would rank a
document with a score of 3e38. Every column ``t`` (its slice of ``data`` and ``indices``)
has a 64-bit checksum in ``bm25.sums.npy``; ``bm25.json`` carries the checksums of the
column starts (``indptr``), of the sums and of its own fields. Loading checks the small
parts; a query checks each column the first time it reads it (then remembers it), and
``verify_all`` checks every column at once (``kbgraph stats --validate``).

The checksum of a column is the sum (mod 2**64) of a mixed hash of each element's score
bits, document id and position in the column: one changed, moved or swapped element
changes it, and all columns are computed in one vectorised pass (``np.add.reduceat``).
"""

from __future__ import annotations

import hashlib

import numpy as np

_K_SCORE = np.uint64(0x9E3779B97F4A7C15)  # odd constants (golden ratio, splitmix64)
_K_DOC = np.uint64(0xBF58476D1CE4E5B9)
_K_POS = np.uint64(0x94D049BB133111EB)
_SHIFT_A = np.uint64(31)
_SHIFT_B = np.uint64(29)


def _element_hashes(data: np.ndarray, indices: np.ndarray, positions: np.ndarray) -> np.ndarray:
    bits = np.asarray(data, dtype=np.float32).view(np.uint32).astype(np.uint64)
    docs = np.asarray(indices, dtype=np.int32).view(np.uint32).astype(np.uint64)
    mixed = bits * _K_SCORE ^ docs * _K_DOC ^ positions.astype(np.uint64) * _K_POS
    mixed ^= mixed >> _SHIFT_A
    mixed *= _K_DOC
    mixed ^= mixed >> _SHIFT_B
    return mixed


def column_sums(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """The checksum of every column (uint64, one per term); 0 for an empty column."""
    bounds: np.ndarray = np.asarray(indptr, dtype=np.int64)
    starts: np.ndarray = bounds[:-1]
    lengths: np.ndarray = bounds[1:] - bounds[:-1]
    sums = np.zeros(len(lengths), dtype=np.uint64)
    if not len(data):
        return sums
    positions = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)
    hashes = _element_hashes(data, indices, positions)
    filled = lengths > 0
    sums[filled] = np.add.reduceat(hashes, starts[filled])
    return sums


def column_sum(data: np.ndarray, indices: np.ndarray) -> np.uint64:
    """The checksum of one column, as :func:`column_sums` gives it."""
    if not len(data):
        return np.uint64(0)
    positions = np.arange(len(data), dtype=np.int64)
    return np.uint64(_element_hashes(data, indices, positions).sum(dtype=np.uint64))


def array_digest(array: np.ndarray) -> str:
    """sha256 of an array's bytes, 16 hex digits (``bm25.json`` records those of the small
    arrays)."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


__all__ = ["array_digest", "column_sum", "column_sums"]
