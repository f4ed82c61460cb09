"""The PostgreSQL store's part for every :class:`FieldRanker` (title, a user's own): BM25
over the field of every row of the live version, built in memory on first use (shared
with the folder store: ``_rankers/fields.py``) and kept by the snapshot for its version."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import psycopg
from psycopg import sql

from .._rankers import FieldRanker
from .._rankers.fields import FieldIndexes
from ..ranking import top_k_of
from ..records import Chunk
from ..storage import IndexMeta
from ._schema import Tables


@dataclass(frozen=True, slots=True)
class FieldRows:
    """A version's rows for the field rankers: rids ascending, their sources, the indexes
    (row i of each index is ``rids[i]``)."""

    version: int
    rids: np.ndarray
    sources: np.ndarray
    indexes: FieldIndexes


class FieldHost(Protocol):
    """What the part needs of its snapshot (``PgSnapshot``): where the rows are, the index's
    tokenizer, and the place that keeps a version's field rows between queries."""

    fields: FieldRows | None

    @property
    def tables(self) -> Tables: ...

    @property
    def meta(self) -> IndexMeta: ...


class PgFieldPart:
    """The field rankers of one query, inside its snapshot transaction."""

    def __init__(
        self,
        snap: FieldHost,
        conn: psycopg.Connection[Any],
        query: str,
        all_chunks: Callable[[], list[Chunk]],
    ) -> None:
        self._snap, self._conn, self._query, self._all_chunks = snap, conn, query, all_chunks
        self._checked: FieldRows | None = None

    def _rows(self) -> FieldRows:
        """Every row's rid and source, read once per version: the snapshot keeps them, and
        reads them again when a writer has replaced the rows since (this transaction sees
        the new version: the rids of the old one would be gone)."""
        if self._checked is None:
            row = self._conn.execute(
                "SELECT version FROM kbgraph_kbs WHERE id = %s", (self._snap.tables.kb_id,)
            ).fetchone()
            version = int(row[0]) if row else -1
            fields = self._snap.fields
            if fields is None or fields.version != version:
                rows = self._conn.execute(
                    sql.SQL("SELECT rid, source FROM {} ORDER BY rid").format(
                        self._snap.tables.chunks
                    )
                ).fetchall()
                fields = FieldRows(
                    version,
                    np.asarray([int(r[0]) for r in rows], dtype=np.int64),
                    np.asarray([str(r[1]) for r in rows], dtype=object),
                    FieldIndexes(self._snap.meta.tokenizer),
                )
                self._snap.fields = fields
            self._checked = fields
        return self._checked

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
