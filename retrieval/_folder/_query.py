"""The folder index's rankers: every ranker scores every row of an open generation once
(numpy over memory-mapped files, or the HNSW graph's candidates scored exactly)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from kbgraph.errors import ConfigError, IndexCorruptError

from .._filters import SearchFilters
from .._rankers import BM25, VECTOR, FieldRanker, get_ranker
from .._ranking import check_mask, dot_scores, top_k_of
from .._records import Chunk
from .._storage import REPAIR, UNIT_NORM_TOLERANCE, QueryEmbedder, RankerName, check_query_vector
from . import _ann
from ._generation import IndexReader


def select(
    scores: np.ndarray, ranker: str, limit: int, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``limit`` best allowed rows of one ranker, best first, ties by row. A lexical
    ranker returns only rows with a score > 0: a chunk sharing no term with the query is
    not a match."""
    mask = check_mask(mask, len(scores))
    allowed = None if mask is None else np.flatnonzero(mask)
    if get_ranker(ranker).lexical:
        positive = np.flatnonzero(scores > 0)
        allowed = positive if allowed is None else np.intersect1d(allowed, positive)
    return top_k_of(scores, limit, allowed)


class FolderRanking:
    """One query over an open folder generation: every ranker scores every row once (a BLAS
    product over the memory-mapped vectors, or a sum of BM25 columns); filters become a
    mask applied before selection."""

    def __init__(self, reader: IndexReader, query: str, embed_query: QueryEmbedder | None):
        self._reader, self._query, self._embed = reader, query, embed_query
        self._scores: dict[str, np.ndarray | None] = {}

    def scores(self, ranker: str) -> np.ndarray | None:
        """The ranker's score of every row (None: the index has no vectors)."""
        if ranker not in self._scores:
            self._scores[ranker] = self._score_all(ranker)
        return self._scores[ranker]

    def _score_all(self, ranker: str) -> np.ndarray | None:
        """This store's part for each registered ranker: its own for vector and BM25,
        BM25 over the field (built once per generation) for any :class:`FieldRanker`."""
        reader, found = self._reader, get_ranker(ranker)
        if found is BM25:
            return _finite(reader.bm25.scores(self._query), reader, BM25.name)
        if isinstance(found, FieldRanker):
            return _finite(
                reader.fields.scores(found, self._query, reader.all_chunks), reader, "chunks.jsonl"
            )
        if found is not VECTOR:
            raise ConfigError(
                f"the folder index has no part for the ranker {ranker!r}: register it as a "
                "FieldRanker, or give the folder store a part for it (folder/_query.py)"
            )
        vector = self._query_vector()
        if vector is None or reader.vectors is None:
            return None
        return _cosines(dot_scores(reader.vectors, vector), reader)

    def _query_vector(self) -> np.ndarray | None:
        reader = self._reader
        if reader.vectors is None or self._embed is None:
            return None
        vector = self._embed(self._query)
        check_query_vector(vector, int(reader.vectors.shape[1]), reader.meta.embedding)
        return np.ascontiguousarray(vector, dtype=np.float32)

    def _scored(
        self, rows: np.ndarray, vector: np.ndarray, limit: int
    ) -> tuple[list[int], list[float]]:
        """The ``limit`` best of ``rows`` (ascending), scored exactly from vectors.bin."""
        assert self._reader.vectors is not None
        self._reader.check_vector_rows(rows, bind=False)  # the digests: of the rows returned
        scores = dot_scores(np.asarray(self._reader.vectors[rows]), vector)
        best, top = top_k_of(scores, limit)
        found = [int(rows[i]) for i in best]
        self._reader.check_vector_rows(found)
        return found, [float(s) for s in top]

    def _ann_top(self, limit: int, mask: np.ndarray | None) -> tuple[list[int], list[float]] | None:
        """The vector list from the generation's HNSW graph (None: no graph, or the exact
        product is the cheaper way). Filters: the graph is asked for more candidates than
        ``limit`` (the allowed share's inverse, doubled until ``limit`` allowed ones come
        back); few allowed rows are scored exactly instead. Candidates are scored exactly."""
        ann = getattr(self._reader, "ann", None)
        vector = self._query_vector()
        if ann is None or vector is None:
            return None
        total = len(ann.keys)
        allowed = total if mask is None else int(np.count_nonzero(mask))
        if mask is not None and allowed <= _ann.ANN_MIN_ROWS:
            return self._scored(np.flatnonzero(mask), vector, limit)
        want = _ann.overfetch(limit, total, allowed)
        while want <= total // 4:
            rows = ann.candidates(vector, want)
            if mask is not None:
                rows = rows[mask[rows]]
            if len(rows) >= min(limit, allowed):
                return self._scored(np.sort(rows), vector, limit)
            want *= 2
        return None  # too few allowed among the nearest: the exact product over all rows

    def top(
        self, ranker: RankerName, limit: int, filters: SearchFilters | None
    ) -> tuple[list[int], list[float]]:
        if ranker == VECTOR.name and getattr(self._reader, "ann", None) is not None:
            found = self._ann_top(limit, self._reader.mask(filters))
            if found is not None:
                return found
        scores = self.scores(ranker)
        if scores is None:
            return [], []
        rows, best = select(scores, ranker, limit, self._reader.mask(filters))
        if ranker == VECTOR.name:  # every row the list ranks by is checked, not only in open
            self._reader.check_vector_rows(rows)
        return [int(i) for i in rows], [float(s) for s in best]

    def exact(self, ranker: RankerName, keys: Sequence[int]) -> np.ndarray:
        vector = self._query_vector() if ranker == VECTOR.name else None
        if vector is not None:
            self._reader.check_vector_rows(keys)
        if vector is not None and VECTOR.name not in self._scores:  # a few rows, not all
            rows = np.asarray(keys, dtype=np.int64)
            assert self._reader.vectors is not None
            return dot_scores(np.asarray(self._reader.vectors[rows]), vector).astype(np.float64)
        scores = self.scores(ranker)
        if scores is None:
            return np.zeros(len(keys), dtype=np.float64)
        return scores[np.asarray(keys, dtype=np.int64)].astype(np.float64)

    def chunks(self, keys: Sequence[int]) -> list[Chunk]:
        return [self._reader.chunk(int(i)) for i in keys]


# Unit vectors: |cosine| <= 1, up to the float32 rounding a sound vector is allowed.
_COSINE_BOUND = 1.0 + UNIT_NORM_TOLERANCE


def _cosines(scores: np.ndarray, reader: IndexReader) -> np.ndarray:
    """Cosines of unit vectors lie in [-1, 1]: a score outside (or NaN) comes from a
    damaged row, which would rank first for every query. Two reductions, no copy."""
    if len(scores) and not (
        float(scores.min()) >= -_COSINE_BOUND and float(scores.max()) <= _COSINE_BOUND
    ):
        bad = ~(np.abs(scores) <= _COSINE_BOUND)
        row = int(np.flatnonzero(bad)[0])
        raise IndexCorruptError(
            f"{reader.path / 'vectors.bin'}: row {row} gives the score {float(scores[row]):.4g}, "
            f"which no unit vector gives (damaged); {REPAIR}"
        )
    return scores


def _finite(scores: np.ndarray, reader: IndexReader, name: str) -> np.ndarray:
    """A NaN or infinite score comes from a damaged row: it would sort anywhere and push
    real matches out of the list, so it is reported, not ranked."""
    if not np.isfinite(scores).all():
        row = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise IndexCorruptError(
            f"{reader.path / name}: row {row} gives a score that is not a number "
            f"(damaged); {REPAIR}"
        )
    return scores


@contextmanager
def folder_ranking(
    reader: IndexReader, query: str, embed_query: QueryEmbedder | None
) -> Iterator[FolderRanking]:
    with reader.reading():  # a file shrunk, changed or leased away under a long-running reader
        yield FolderRanking(reader, query, embed_query)


__all__ = ["FolderRanking", "folder_ranking", "select"]
