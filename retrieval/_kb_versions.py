"""A knowledge base's versions: the kept ones listed, one made current again, and the
live one validated against its own files and the documents."""

from __future__ import annotations

from pathlib import Path

from kbgraph.errors import ConfigError

from . import __version__
from ._arguments import recorded_or_default
from ._reuse import check_against_documents
from .chunking import code_chunker_id
from .config import ChunkConfig, ScanConfig
from .folder import (
    FolderSnapshot,
    FolderStore,
    IndexLayout,
    VersionInfo,
    list_versions,
    no_index,
    restore_version,
)
from .storage import IndexStore, Snapshot, no_versions


def layout(folder: Path, store: IndexStore) -> IndexLayout:
    """``KnowledgeBase.layout``: the folder index's files."""
    if not isinstance(store, FolderStore):
        raise ConfigError(f"the index of {folder} lives in {store.location}, not in a folder")
    return store.layout


def published_layout(folder: Path, store: IndexStore) -> IndexLayout:
    """The folder index's files, once an index was published there (a damaged one too:
    restoring repairs it); IndexNotFoundError for a folder never indexed, ConfigError
    for a knowledge base in a database (it keeps the live version only)."""
    if not isinstance(store, FolderStore):
        raise no_versions(folder, store.location)
    found = layout(folder, store)
    if not found.has_pointer() and not found.published():
        raise no_index(folder)
    return found


def versions(folder: Path, store: IndexStore) -> list[VersionInfo]:
    return list_versions(published_layout(folder, store))


def restore(folder: Path, store: IndexStore, version: object, lock_timeout: float) -> VersionInfo:
    """``KnowledgeBase.restore`` (the caller forgets its last freshness check)."""
    if isinstance(version, bool) or not isinstance(version, str | int):
        raise ConfigError(
            f"version must be a row number of versions() (1 = newest), a generation name "
            f"or a unique prefix of one, got {type(version).__name__} {version!r}; e.g. "
            "kb.restore(1) or kb.restore('gen-18a7')"
        )
    wanted = str(version)
    return restore_version(published_layout(folder, store), wanted, lock_timeout=lock_timeout)


def validate(folder: Path, reader: Snapshot) -> None:
    """``KnowledgeBase.validate``: every part of ``reader``, then its chunks against the
    documents and its BM25 index against its chunks."""
    reader.validate()
    if not isinstance(reader, FolderSnapshot):
        return  # a database's rows are checked by it
    # Another engine version (or code chunker) chunks otherwise.
    if reader.meta.engine_version == __version__ and reader.meta.code_chunker == code_chunker_id():
        chunking = recorded_or_default(ChunkConfig, reader.meta.chunking)
        scan = recorded_or_default(ScanConfig, reader.meta.scan)
        check_against_documents(reader, folder, chunking, scan)
    reader.check_lexical()


__all__ = ["layout", "published_layout", "restore", "validate", "versions"]
