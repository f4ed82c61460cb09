"""What both stores share to rank a :class:`FieldRanker`: BM25 over its text of every row
of one version, built in memory the first time a query asks for it and kept with that
version (a store opens a version once and reads it many times)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from ..lexical import BM25Index
from ..records import Chunk
from ._registry import FieldRanker, RankerName


class FieldIndexes:
    """The field indexes of one version, one per field ranker, built on first use from
    ``load_rows`` (every row's chunk, in row order) with the version's tokenizer."""

    def __init__(self, tokenizer: str) -> None:
        self._tokenizer = tokenizer
        self._built: dict[RankerName, BM25Index] = {}
        self._lock = threading.Lock()  # two threads searching one version build it once

    def scores(
        self, ranker: FieldRanker, query: str, load_rows: Callable[[], Sequence[Chunk]]
    ) -> np.ndarray:
        """BM25 of every row's field (float32, 0 where no term matches); ``load_rows``
        (every row's chunk, in row order) is called when ``ranker``'s index is built."""
        return self._index(ranker, load_rows).scores(query)

    def _index(self, ranker: FieldRanker, load: Callable[[], Sequence[Chunk]]) -> BM25Index:
        with self._lock:
            if ranker.name not in self._built:
                # The rows are read again per field ranker, not kept: a version's texts
                # would double what an open version holds in memory.
                texts = [ranker.text(chunk) for chunk in load()]
                self._built[ranker.name] = BM25Index.build(texts, tokenizer=self._tokenizer)
            return self._built[ranker.name]


__all__ = ["FieldIndexes"]
