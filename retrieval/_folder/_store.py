"""The folder index as an :class:`~kbgraph.retrieval._storage.IndexStore`: generations of
files beside the documents (the package's other modules hold the format; this one adapts it).

A version is a ``gen-*`` folder; a writer holds ``.write.lock`` for its whole run, writes a
new generation (the rows of unchanged files copied from the previous one) and publishes it
by replacing ``CURRENT`` under the exclusive ``.lock``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from kbgraph.errors import IndexCorruptError, IndexNotFoundError

from .._records import Chunk
from .._storage import (
    EmbeddingMeta,
    FileRecord,
    FileRows,
    IndexMeta,
    IndexUpdate,
    QueryEmbedder,
    Recorded,
    VersionInfo,
    joined_rows,
    usable_vectors,
)
from ._ann import write_ann
from ._generation import IndexReader, write_generation
from ._layout import INDEX_DIR_NAME, IndexLayout, secure_tree
from ._lock import file_lock
from ._query import FolderRanking, folder_ranking
from ._versions import list_versions, restore_version

if TYPE_CHECKING:  # a search opens no embedding cache
    from .._embeddings import VectorCache


def recorded_settings(layout: IndexLayout) -> Recorded:
    """The settings of the index in ``layout`` (see the module docstring)."""
    layout.check_folder()
    kept = layout.kept_without_pointer()
    try:
        if not layout.has_pointer() and not kept:
            return Recorded()  # never published (or a first run killed): a new index
        live = layout.current_name()
        why = f"{layout.generation(live) / 'meta.json'} is damaged" if live else ""
    except (IndexCorruptError, OSError):
        live, why = None, f"{layout.current} is damaged"
    # CURRENT lost: the newest version HISTORY keeps names the model, never the default.
    candidates = [layout.generation(live)] if live else [layout.generation(n) for n in kept]
    with contextlib.suppress(OSError):
        candidates += [g for g in layout.generations() if g.name != live]
    for generation in candidates:
        recorded = _lenient(generation / "meta.json")
        if recorded is not None:
            return recorded
    return Recorded(found=True, lost=why or f"{layout.root} is damaged")


def _lenient(path: Path) -> Recorded | None:
    """The settings in one meta.json, as long as its ``embedding`` entry still reads,
    whatever else in it is damaged."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or "embedding" not in data:
        return None
    try:
        raw = data["embedding"]
        embedding = None if raw is None else EmbeddingMeta.model_validate(raw)
    except ValidationError:
        return None
    chunking, scan, keep = data.get("chunking"), data.get("scan"), data.get("keep_versions")
    return Recorded(
        embedding,
        chunking if isinstance(chunking, dict) else None,
        scan if isinstance(scan, dict) else None,
        keep if isinstance(keep, int) and not isinstance(keep, bool) and keep >= 1 else None,
        found=True,
    )


class FolderSnapshot(IndexReader):
    """An open generation (an :class:`IndexReader`) with the snapshot interface."""

    @property
    def has_vectors(self) -> bool:
        return self.vectors is not None

    def ranking(
        self, query: str, embed_query: QueryEmbedder | None
    ) -> AbstractContextManager[FolderRanking]:
        return folder_ranking(self, query, embed_query)

    def validate(self, documents: Path | None = None) -> None:
        """Every file of the generation, then the chunks of every file still as indexed
        against the file's bytes in ``documents``, and the BM25 index against the chunks."""
        with self.reading():  # every file read: no lease let go meanwhile
            super().validate()
            if documents is not None:
                # Imported here: checking against the documents chunks them again, and a
                # search never validates (the chunkers and the scan stay unloaded).
                from ._documents import check_documents

                check_documents(self, documents)
            self.check_lexical()


class FolderPrevious:
    """An open generation as the source of a run's reused chunks and vectors."""

    def __init__(self, reader: IndexReader) -> None:
        self.reader = reader
        self._failed = set(reader.meta.failed_embeddings)

    @property
    def meta(self) -> IndexMeta:
        return self.reader.meta

    @property
    def upgrading(self) -> bool:
        return self.reader.legacy

    def rows_of(self, rel: str, record: FileRecord) -> FileRows:
        with self.reader.mapped.reading():  # the maps are read: no lease let go meanwhile
            return self._rows_of(rel, record)

    def _rows_of(self, rel: str, record: FileRecord) -> FileRows:
        chunks: list[Chunk | None] = []
        problem = None
        for row in range(record.chunk_start, record.chunk_end):
            try:
                chunks.append(self.reader.chunk(row))
            except IndexCorruptError as exc:
                chunks.append(None)
                problem = problem or str(exc).rsplit("; ", 1)[0]
        matrix = None
        if self.reader.vectors is not None:
            matrix = np.array(self.reader.vectors[record.chunk_start : record.chunk_end])
        failed = {row - record.chunk_start for row in self._failed}
        vectors, damaged = usable_vectors(matrix, len(chunks), failed)
        for pos, vector in enumerate(vectors):
            if vector is not None and not self._bound(record.chunk_start + pos, vector):
                # A sound vector written for another chunk, or a record crafted since its
                # vector was written: neither is trusted, so the file is read again.
                vectors[pos] = None
                damaged += 1
                problem = problem or (
                    f"{self.reader.path}/vectors.bin: vector {record.chunk_start + pos} is "
                    f"not the one written for its chunk ({rel})"
                )
        return FileRows(chunks, vectors, damaged, problem)

    def _bound(self, row: int, vector: np.ndarray) -> bool:
        try:
            return self.reader.bound(row, vector)
        except IndexCorruptError:
            return False  # its record is damaged: the file is read again anyway


class FolderWriter:
    """One run's view of the folder index, under the writer's lock: it reuses the live
    generation, or repairs from the newest one that still opens."""

    def __init__(
        self, layout: IndexLayout, lock_timeout: float, repairs: list[str] | None = None
    ) -> None:
        """``repairs``: damage of the index folder already repaired (``ensure``, HISTORY):
        reported, but no reason to publish a new version (which would prune a kept one)."""
        self.layout = layout
        self.lock_timeout = lock_timeout
        self.had_previous = layout.has_pointer() or bool(layout.kept_without_pointer())
        self._old: IndexReader | None = None
        self.repaired_in_place = list(repairs or [])

    def open_previous(self) -> tuple[FolderPrevious | None, list[str]]:
        """A live generation that does not open (a damaged CURRENT, a missing or damaged
        file) is damage to repair: the newest generation folder that does open is reused
        instead, else nothing (the documents and the embedding cache rebuild it)."""
        repaired: list[str] = []
        try:
            self._old = self._open(None)
        except IndexNotFoundError:
            if not self.layout.kept_without_pointer():
                return None, repaired
            # CURRENT is gone but published generations are kept: damage, not a new index.
            repaired.append(f"{self.layout.current} was missing")
            self._old = self._newest_intact()
        except (IndexCorruptError, OSError, ValueError) as exc:  # damage, whatever its form
            repaired.append(str(exc) if isinstance(exc, IndexCorruptError) else repr(exc))
            self._old = self._newest_intact()
        if self._old is not None and not self._old.legacy:
            try:  # a run that changes no file writes nothing: damage here must be seen
                with self._old.mapped.reading():
                    self._old.bm25.verify_all()
            except IndexCorruptError as exc:
                repaired.append(f"{exc}".split("; ", 1)[0] + "; built again from the chunks")
        old = self._old
        if old is not None and not old.legacy and old.vectors is not None and old.row_sums is None:
            repaired.append(
                f"{old.path}: vectors not yet bound to their chunks (written before "
                "vectors.sums); bound now, nothing embedded"
            )
        if self._old is not None and self._old.legacy:
            repaired.append(
                f"{self._old.path}: index format 1 (no checksums) upgraded: every file read "
                "and chunked again, vectors reused by chunk id"
            )
        return (FolderPrevious(self._old) if self._old else None), repaired

    def _open(self, name: str | None) -> IndexReader:
        return IndexReader(self.layout, lock_timeout=self.lock_timeout, name=name, for_writer=True)

    def _newest_intact(self) -> IndexReader | None:
        for generation in self.layout.generations():
            try:
                return self._open(generation.name)
            except (IndexCorruptError, OSError, ValueError):
                continue
        return None

    def cache(self, model: str) -> AbstractContextManager[VectorCache]:
        from .._embeddings import EmbeddingCache  # imported here: only indexing embeds

        return EmbeddingCache(self.layout.cache, model)

    def commit(self, update: IndexUpdate) -> None:
        chunks = [chunk for entry in update.entries for chunk in entry.chunks]
        vectors = None
        if update.meta.embedding is not None:
            dims = update.meta.embedding.dims
            parts = [e.vectors for e in update.entries if e.vectors is not None]
            vectors = joined_rows(parts, dims)
        target = self.layout.new_generation()
        write_generation(target, update.meta, chunks, vectors)
        if vectors is not None:
            # The previous graph is reused only for the same vectors (no rebuild).
            previous = None if update.fresh or self._old is None else self._old.path
            if write_ann(target, [c.id for c in chunks], vectors, previous):
                secure_tree(target)
        with file_lock(self.layout.lock, "exclusive", self.lock_timeout, "publish index"):
            self.layout.publish(target)
        self.layout.prune(update.meta.keep_versions)

    def tidy(self) -> None:
        if self._old is not None:
            self.layout.prune(self._old.meta.keep_versions)

    def close(self) -> None:
        if self._old is not None:
            self._old.close()


def pointer_lost(folder: Path, layout: IndexLayout, kept: list[str]) -> IndexCorruptError:
    """What a search says when CURRENT is gone but published generations are kept: the
    index is damaged, not missing, and one command makes the newest current again."""
    return IndexCorruptError(
        f"{layout.current} is missing, but {len(kept)} published version(s) of the index are "
        f"kept (newest {kept[0]}); run `kbgraph restore {folder} 1` to make the newest current "
        f"again (`kbgraph versions {folder}` lists them), or `kbgraph index {folder}` to "
        "repair it from the documents"
    )


def no_index(folder: Path) -> IndexNotFoundError:
    """What a read of a folder that was never indexed (or whose index was deleted) says."""
    return IndexNotFoundError(f"{folder} has no index yet; run `kbgraph index {folder}`")


class FolderStore:
    """The folder index of ``folder`` (in ``index_dir``, default ``<folder>/.kbgraph``)."""

    def __init__(self, folder: Path, index_dir: Path | None, lock_timeout: float) -> None:
        root = Path(index_dir).expanduser().resolve() if index_dir else folder / INDEX_DIR_NAME
        self.layout = IndexLayout(root)
        self.folder = folder
        self.lock_timeout = lock_timeout

    @property
    def location(self) -> str:
        return str(self.layout.root)

    @property
    def index_dir(self) -> Path | None:
        return self.layout.root

    def recorded(self) -> Recorded:
        return recorded_settings(self.layout)

    def current_key(self) -> str | None:
        return self.layout.current_name()  # raises IndexCorruptError for a dangling CURRENT

    def open(self) -> FolderSnapshot:
        if self.current_key() is None:
            kept = self.layout.kept_without_pointer()
            if kept:
                raise pointer_lost(self.folder, self.layout, kept)
            raise no_index(self.folder)
        return FolderSnapshot(self.layout, lock_timeout=self.lock_timeout)

    @contextmanager
    def writing(self, lock_timeout: float) -> Iterator[FolderWriter]:
        repairs = self.layout.ensure()
        with file_lock(self.layout.write_lock, "exclusive", lock_timeout, "index"):
            repairs += self.layout.repair_history()
            writer = FolderWriter(self.layout, lock_timeout, repairs)
            try:
                yield writer
            finally:
                writer.close()

    def read_only(self) -> bool:
        return self.layout.has_pointer() and not os.access(self.layout.root, os.W_OK)

    def _published(self) -> IndexLayout:
        """The layout once an index was published there (a damaged one too: restoring
        repairs it); IndexNotFoundError for a folder never indexed."""
        if not self.layout.has_pointer() and not self.layout.published():
            raise no_index(self.folder)
        return self.layout

    def versions(self) -> list[VersionInfo]:
        return list_versions(self._published())

    def version_count(self) -> int:
        return len(self.layout.published())

    def restore(self, wanted: str, lock_timeout: float) -> VersionInfo:
        return restore_version(self._published(), wanted, lock_timeout=lock_timeout)

    def server(self) -> dict[str, Any]:
        return {}  # files beside the documents: no server answers

    def delete(self, documents: Path, lock_timeout: float) -> None:
        self.layout.delete(documents=documents, lock_timeout=lock_timeout)

    def close(self) -> None:
        """Nothing stays open between calls: readers are the knowledge base's."""


__all__ = [
    "FolderPrevious",
    "FolderSnapshot",
    "FolderStore",
    "FolderWriter",
    "no_index",
    "recorded_settings",
]
