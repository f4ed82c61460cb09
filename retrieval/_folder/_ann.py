"""Approximate nearest neighbours for big folder indexes: an HNSW graph (usearch) saved in
the generation beside ``vectors.bin``.

Up to :data:`ANN_MIN_ROWS` chunks the exact product over the memory-mapped vectors is
fast enough: top-10 of 384-dim vectors on one thread took 2.1 ms at 25K rows, 5.1 ms at
50K, 12.3 ms at 100K and 24 ms at 200K here (``benchmarks/bench_scale.py --section exact``,
2026-11-24), so past 50K it misses a 5 ms budget. Above it a generation also holds

- ``ann.usearch``  the HNSW graph, keyed by the chunk id read as a 64-bit number (chunk ids
  are 16 hex digits), so a key survives generations: a new generation loads the previous
  graph, removes the chunks that went and adds the new ones (incremental), and
- ``ann.keys.npy`` the keys sorted, with ``ann.rows.npy`` the row of each in this
  generation, to turn the graph's answers into rows.

The graph keeps half-precision vectors (it only proposes candidates); every candidate is
then scored exactly against ``vectors.bin``, so scores are the exact path's. usearch was
chosen over faiss-cpu (the other HNSW that installs as a wheel here; hnswlib has none)
because its HNSW removes entries, which incremental rebuilds need (faiss' IndexHNSWFlat
cannot remove), its wheel is 2 MB instead of 18, and it opens a saved graph as a memory
map; ``benchmarks/bench_scale.py`` measures latency and recall.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kbgraph._base.logs import warn
from kbgraph.errors import IndexCorruptError

from .._fs import Read, load_npy

_LOGGER = "kbgraph.retrieval._folder"

ANN_MIN_ROWS = 50_000
ANN_FILES = ("ann.usearch", "ann.keys.npy", "ann.rows.npy")
CONNECTIVITY = 16  # HNSW M
EXPANSION_ADD = 128  # efConstruction
EXPANSION_SEARCH = 64  # ef at query time (raised to the number of results asked)
_ADD_BLOCK = 50_000
# Fewer new rows than this join the graph on one thread. Threads inserting at once into a
# small graph can leave a node that no search reaches: a 125-row graph built on 2 threads
# from shuffled rows lost one in 65 of 1,000 builds, on one thread in none; at 20K rows the
# two are alike (self-recall@1 0.9994 vs 0.9998), and a few rows added serially cost little.
PARALLEL_MIN_ROWS = 10_000


def chunk_keys(chunk_ids: list[str]) -> np.ndarray:
    """The graph key of each chunk: its 16-hex-digit id as an unsigned 64-bit number."""
    return np.array([int(cid, 16) for cid in chunk_ids], dtype=np.uint64)


def _new_index(dims: int) -> Any:
    from usearch.index import Index

    return Index(
        ndim=dims,
        metric="ip",
        dtype="f16",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def write_ann(
    target: Path, chunk_ids: list[str], vectors: np.ndarray, previous: Path | None
) -> bool:
    """Write the graph files into generation ``target`` when it is big enough; reuse the
    graph of the ``previous`` generation folder when it has one. False: none written."""
    if len(chunk_ids) < ANN_MIN_ROWS:
        return False
    keys = chunk_keys(chunk_ids)
    order = np.argsort(keys, kind="stable")
    if np.any(keys[order][1:] == keys[order][:-1]):
        warn(_LOGGER, "two chunks share an id; the exact search serves this index")
        return False
    index = _load_previous(previous, int(vectors.shape[1]))
    if index is None:
        index = _new_index(int(vectors.shape[1]))
        todo = np.arange(len(keys))
    else:
        old_keys = np.asarray(index.keys, dtype=np.uint64)
        gone = np.setdiff1d(old_keys, keys, assume_unique=True)
        if len(gone):
            index.remove(gone)
        todo = np.flatnonzero(~np.isin(keys, old_keys, assume_unique=True))
    threads = (os.cpu_count() or 1) if len(todo) >= PARALLEL_MIN_ROWS else 1
    for start in range(0, len(todo), _ADD_BLOCK):
        rows = todo[start : start + _ADD_BLOCK]
        index.add(keys[rows], np.asarray(vectors[rows], dtype=np.float32), threads=threads)
    index.save(str(target / ANN_FILES[0]))
    for name, array in ((ANN_FILES[1], keys[order]), (ANN_FILES[2], order.astype(np.int64))):
        with open(target / name, "wb") as fh:
            np.save(fh, array, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
    return True


def _load_previous(previous: Path | None, dims: int) -> Any:
    if previous is None or not (previous / ANN_FILES[0]).is_file():
        return None
    try:
        index = _new_index(dims)
        index.load(str(previous / ANN_FILES[0]))
    except Exception as exc:  # an unreadable graph is rebuilt, never trusted
        warn(_LOGGER, "the previous ANN graph does not load (%s); building a new one", exc)
        return None
    return index if index.ndim == dims else None


@dataclass
class AnnIndex:
    """The graph of one generation, opened as a memory map."""

    index: Any
    keys: np.ndarray  # sorted
    rows: np.ndarray  # rows[i]: the row of keys[i]

    @classmethod
    def open(cls, generation: Path, count: int, *, read: Read | None = None) -> AnnIndex | None:
        """The graph of ``generation`` (None where it has none), memory-mapped, or loaded
        from the bytes ``read`` returns (a generation held in memory)."""
        if not (generation / ANN_FILES[0]).is_file():
            return None
        from usearch.index import Index

        try:
            graph = generation / ANN_FILES[0]
            if read is None:
                index = Index.restore(str(graph), view=True)
            else:
                index = Index.restore(read(graph), view=False)
            keys = load_npy(generation / ANN_FILES[1], read)
            rows = load_npy(generation / ANN_FILES[2], read)
        except (OSError, ValueError, RuntimeError) as exc:
            raise IndexCorruptError(
                f"{generation}: the ANN graph does not open ({exc}); re-index"
            ) from exc
        if index is None or len(keys) != count or len(rows) != count or len(index) != count:
            raise IndexCorruptError(
                f"{generation}: the ANN graph does not match the chunks; re-index"
            )
        return cls(index, np.asarray(keys), np.asarray(rows))

    def candidates(self, query: np.ndarray, count: int) -> np.ndarray:
        """Rows of about the ``count`` nearest chunks (approximate), nearest first."""
        count = min(count, len(self.keys))
        self.index.expansion_search = max(EXPANSION_SEARCH, count)
        matches = self.index.search(np.asarray(query, dtype=np.float32), count, threads=1)
        found = np.asarray(matches.keys, dtype=np.uint64)
        at = np.searchsorted(self.keys, found)
        return self.rows[np.clip(at, 0, len(self.keys) - 1)]


def overfetch(limit: int, total: int, allowed: int) -> int:
    """How many candidates to ask for so that ``limit`` of them are likely allowed when
    ``allowed`` of ``total`` rows are: the share's inverse, twice, at least ``limit``."""
    if allowed <= 0:
        return 0
    return min(total, max(limit, math.ceil(2 * limit * total / allowed)))


__all__ = ["ANN_FILES", "ANN_MIN_ROWS", "AnnIndex", "chunk_keys", "overfetch", "write_ann"]
