"""The PostgreSQL store's part for every :class:`FieldRanker` (title, a user's own): BM25
over the field of every row of the live version, built in memory on first use (shared
with the folder store: ``_rankers/fields.py``) and kept by the snapshot for its version."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from psycopg import sql

from .._rankers import FieldRanker
from .._rankers.fields import FieldIndexes
from .._ranking import top_k_of
from .._records import Chunk
from .._storage import IndexMeta
from ._schema import VERSION_KEY, Tables


@dataclass(frozen=True, slots=True)
class FieldRows:
    """A version's rows for the field rankers: rids ascending, their sources, the indexes
    (row i of each index is ``rids[i]``)."""

    version: int
    rids: np.ndarray
    sources: np.ndarray
    indexes: FieldIndexes


Fetch = Callable[[sql.Composed, dict[str, Any]], list[tuple[Any, ...]]]
"""Runs a statement whose third column is the version it saw (``PgRanking._fetch``)."""


class FieldHost(Protocol):
    """What the part needs of its snapshot (``PgSnapshot``): where the rows are, the index's
    tokenizer, its version, and the place that keeps a version's field rows between
    queries."""

    fields: FieldRows | None
    version: int

    @property
    def tables(self) -> Tables: ...

    @property
    def meta(self) -> IndexMeta: ...


class PgFieldPart:
    """The field rankers of one query (its statements through the ranking's ``fetch``)."""

    def __init__(
        self,
        snap: FieldHost,
        fetch: Fetch,
        query: str,
        all_chunks: Callable[[], list[Chunk]],
    ) -> None:
        self._snap, self._fetch, self._query, self._all_chunks = snap, fetch, query, all_chunks

    def _rows(self) -> FieldRows:
        """Every row's rid and source, read once per snapshot version and kept by the
        snapshot (rows a newer version wrote meanwhile make the ranking's version check
        fail, and the search runs again on a new snapshot)."""
        fields = self._snap.fields
        if fields is None or fields.version != self._snap.version:
            rows = self._fetch(
                sql.SQL(
                    "SELECT rid, source, (SELECT " + VERSION_KEY + " FROM kbgraph_kbs "
                    "WHERE id = %(kb)s) FROM {} ORDER BY rid"
                ).format(self._snap.tables.chunks),
                {},
            )
            fields = FieldRows(
                self._snap.version,
                np.asarray([int(r[0]) for r in rows], dtype=np.int64),
                np.asarray([str(r[1]) for r in rows], dtype=object),
                FieldIndexes(self._snap.meta.tokenizer),
            )
            self._snap.fields = fields
        return fields

    def _scores(self, ranker: FieldRanker) -> np.ndarray:
        return self._rows().indexes.scores(ranker, self._query, self._all_chunks)

    def top(
        self, ranker: FieldRanker, limit: int, allowed: list[str] | None
    ) -> tuple[list[int], list[float]]:
        fields, scores = self._rows(), self._scores(ranker)
        keep = scores > 0  # lexical: a row sharing no term is no match
        if allowed is not None:
            keep &= np.isin(fields.sources, allowed)
        best, top = top_k_of(scores, limit, np.flatnonzero(keep))
        return [int(fields.rids[i]) for i in best], [float(x) for x in top]

    def exact(self, ranker: FieldRanker, keys: Sequence[int]) -> np.ndarray:
        fields, scores = self._rows(), self._scores(ranker)
        wanted = np.asarray(keys, dtype=np.int64)
        out = np.zeros(len(wanted), dtype=np.float64)
        if len(fields.rids):
            at = np.clip(np.searchsorted(fields.rids, wanted), 0, len(fields.rids) - 1)
            hit = fields.rids[at] == wanted
            out[hit] = scores[at[hit]]
        return out


__all__ = ["FieldRows", "PgFieldPart"]
