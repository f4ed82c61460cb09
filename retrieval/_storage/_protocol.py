"""The storage seam: where a knowledge base's index lives.

A :class:`~kbgraph.retrieval._kb.KnowledgeBase` scans, loads, chunks and embeds the same way
whatever holds its index; an :class:`IndexStore` only keeps what an indexing run produced
and ranks it. Two stores implement it and pass one contract suite
(``tests/contract/test_store_contract.py``); ``kbgraph.retrieval._backends``
opens the one a location names:

- the folder index beside the documents (``<folder>/.kbgraph/``, the default;
  ``kbgraph.retrieval._folder``);
- PostgreSQL with pgvector and full-text search (``store="postgresql://..."``;
  ``kbgraph.retrieval._postgres``).

Reading: :meth:`IndexStore.open` gives a :class:`Snapshot`, one published version of the
index; a query runs inside :meth:`Snapshot.ranking`, which sees that one version whatever a
writer does meanwhile. Writing: :meth:`IndexStore.writing` holds the writer's lock (one
writer per knowledge base, across processes) and gives an :class:`IndexWriter`, which hands
the previous version to the indexer and publishes the new one atomically
(:meth:`IndexWriter.commit`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kbgraph._base.faces import shown_as
from kbgraph.errors import ConfigError, KbgraphError

from .._filters import SearchFilters
from .._rankers import RankerName
from .._records import Chunk
from ._meta import FileRecord, IndexMeta
from ._recorded import Recorded
from ._rows import FileRows
from ._versions import VersionInfo

if TYPE_CHECKING:  # a search opens no embedding cache
    from .._embeddings import VectorCache

QueryEmbedder = Callable[[str], np.ndarray]
DATABASE_SCHEMES = ("postgresql://", "postgres://")


@shown_as("kbgraph.retrieval")
class QueryRanking(Protocol):
    """One query's rankers over one version of the index. Keys are opaque row ids, valid
    inside this ranking only."""

    def top(
        self, ranker: RankerName, limit: int, filters: SearchFilters | None
    ) -> tuple[list[int], list[float]]:
        """The ``limit`` best rows the filters allow (applied before selection), best
        first, ties by row; a lexical ranker (BM25) returns only rows sharing a term with
        the query. A store ranks every registered ranker: its own part for each
        ``StoreRanker``, BM25 over the field for each ``FieldRanker``."""

    def exact(self, ranker: RankerName, keys: Sequence[int]) -> np.ndarray:
        """The ranker's exact score of each of ``keys`` (float64, aligned with them)."""

    def chunks(self, keys: Sequence[int]) -> list[Chunk]:
        """The chunks of ``keys``, in their order."""


class SnapshotMoved(KbgraphError):
    """Raised by a ranking of a snapshot whose ``checks_version`` is true when what it read
    belongs to a newer version than the snapshot's (a writer published meanwhile): the
    reader reopens the live version and runs the search again. Never reaches a caller."""


@shown_as("kbgraph.retrieval")
class Snapshot(Protocol):
    """One published version of an index, open for reading. A snapshot whose class sets
    ``checks_version = True`` checks the version inside every ranking (raising
    :class:`SnapshotMoved` when it must run again, setting ``outdated`` when a newer
    version exists that its results stay valid for), so the reader need not ask the
    store before each search."""

    @property
    def meta(self) -> IndexMeta: ...

    @property
    def has_vectors(self) -> bool: ...

    def ranking(
        self, query: str, embed_query: QueryEmbedder | None
    ) -> AbstractContextManager[QueryRanking]:
        """Rank ``query`` against this version; ``embed_query`` is called at most once,
        and only when a vector ranker runs."""

    def size_bytes(self) -> int: ...

    def validate(self, documents: Path) -> None:
        """Check every part of the version, and its rows against the files of
        ``documents`` they came from as far as the store can (raises
        ``IndexCorruptError``)."""

    def close(self) -> None: ...


@shown_as("kbgraph.retrieval")
class Previous(Protocol):
    """The live version as a source of chunks and vectors for one indexing run."""

    @property
    def meta(self) -> IndexMeta: ...

    @property
    def upgrading(self) -> bool:
        """True when the version is of an older format whose records may not be reused as
        they are (every file is read again; vectors are still reused by chunk id)."""
        ...

    def rows_of(self, rel: str, record: FileRecord) -> FileRows:
        """File ``rel``'s chunks and vectors in this version (damaged parts as None)."""


@dataclass
class FileEntry:
    """One file of the version being written: its chunks and their ``vectors`` (None for
    a lexical-only index), the positions whose embedding failed (zero rows). ``kept``: the
    rows are those the file has in the previous version (``previous``, its record there),
    so a store that keeps rows per file need not write them again."""

    rel: str
    record: FileRecord  # chunk_start/chunk_end: the file's rows in the new version
    chunks: list[Chunk]
    vectors: np.ndarray | None = None
    failed: list[int] = field(default_factory=list)
    previous: FileRecord | None = None
    kept: bool = False


@dataclass
class IndexUpdate:
    """A new version: its meta and every file of it, in row order. ``fresh``: nothing of
    the previous version is kept (none, or settings that changed: a rebuild)."""

    meta: IndexMeta
    entries: list[FileEntry]
    fresh: bool = False


@shown_as("kbgraph.retrieval")
class IndexWriter(Protocol):
    """What one indexing run sees while it holds the writer's lock."""

    had_previous: bool  # a version existed (even one that no longer opens)
    # Damage to the store's own bookkeeping repaired where it lay (a rebuilt list of
    # kept versions, a lock file made again): reported, but no reason for a new version.
    repaired_in_place: list[str]

    def open_previous(self) -> tuple[Previous | None, list[str]]:
        """The version to reuse and the damage found on the way (a store that can repair
        falls back to an older intact version); None when there is none to reuse."""

    def cache(self, model: str) -> AbstractContextManager[VectorCache]: ...

    def commit(self, update: IndexUpdate) -> None:
        """Publish ``update`` atomically: readers see the old version or the new one."""

    def tidy(self) -> None:
        """Nothing to publish: clear what a crashed writer left behind."""


@shown_as("kbgraph.retrieval")
class IndexStore(Protocol):
    """Where one knowledge base's index lives."""

    @property
    def location(self) -> str:
        """For messages: the index folder, or the database without its password."""

    @property
    def index_dir(self) -> Path | None:
        """The folder holding the store's files (the folder index's root), which the scan
        must skip when it lies inside the documents; None for a store without files."""

    def recorded(self) -> Recorded:
        """The settings the index recorded (model, chunking, scan, versions kept), read
        leniently: a damaged index still names its model where any copy says it."""

    def open(self) -> Snapshot:
        """The live version (raises ``IndexNotFoundError`` when there is none)."""

    def current_key(self) -> str | None:
        """Names the live version cheaply, so a reader knows when to reopen."""

    def writing(self, lock_timeout: float) -> AbstractContextManager[IndexWriter]: ...

    def read_only(self) -> bool:
        """True when a live version exists that this process may not replace (a read-only
        mount): it is searched as it is. A store that learns it only when it writes (a
        standby) says False and raises ``ReadOnlyStoreError`` before writing anything."""

    def versions(self) -> list[VersionInfo]:
        """The kept versions, newest first; a store that keeps the live version only
        raises ``ConfigError`` saying so and how to keep earlier states."""

    def version_count(self) -> int:
        """How many versions are kept for :meth:`restore` (1: the live one only)."""

    def restore(self, wanted: str, lock_timeout: float) -> VersionInfo:
        """Make the kept version ``wanted`` (a name, a unique prefix of one, or its row in
        :meth:`versions`, 1 = newest) live again, atomically; ``ConfigError`` as in
        :meth:`versions` for a store that keeps the live version only."""

    def server(self) -> dict[str, Any]:
        """The server that answers searches (address, whether it is a standby, replay lag,
        versions); empty for a store without one."""

    def delete(self, documents: Path, lock_timeout: float) -> None: ...

    def close(self) -> None: ...


def is_database(store: str | None) -> bool:
    return bool(store) and str(store).strip().lower().startswith(DATABASE_SCHEMES)


def no_versions(folder: Path, location: str) -> ConfigError:
    """``versions`` / ``restore`` of a knowledge base in a database, which keeps the live
    version only (its rows are replaced in place, in one transaction per run)."""
    return ConfigError(
        f"the index of {folder} is in PostgreSQL ({location}), which keeps only the live "
        "version: there are no earlier versions to list or restore; back the database up to "
        "keep earlier states (pg_dump, or your provider's snapshots), or keep the index in "
        "the folder (no --store) for `kbgraph versions` and `restore`"
    )


__all__ = [
    "DATABASE_SCHEMES",
    "FileEntry",
    "IndexStore",
    "IndexUpdate",
    "IndexWriter",
    "Previous",
    "QueryEmbedder",
    "QueryRanking",
    "RankerName",
    "Snapshot",
    "SnapshotMoved",
    "is_database",
    "no_versions",
]
