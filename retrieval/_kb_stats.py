"""A knowledge base's figures: files, chunks, size, versions kept, staleness, server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._storage import IndexMeta, IndexStore, Snapshot

if TYPE_CHECKING:
    from ._reports import IndexStats


def stats_from(store: IndexStore, meta: IndexMeta, size: int, *, stale: int) -> IndexStats:
    from ._reports import IndexStats  # a search loads the reports only if it asks for stats

    return IndexStats(
        server=store.server(),
        versions=store.version_count(),
        keep_versions=meta.keep_versions,
        file_count=meta.file_count,
        chunk_count=meta.chunk_count,
        index_size=size,
        last_indexed=meta.indexed_at,
        stale_files=stale,
        embedding=meta.embedding.model_dump() if meta.embedding else {},
        truncated=len(meta.truncated_chunks),
    )


def stats(store: IndexStore, reader: Snapshot, stale: int | None) -> IndexStats:
    """``KnowledgeBase.stats``: ``stale`` None (other settings) counts every file."""
    meta = reader.meta
    return stats_from(
        store, meta, reader.size_bytes(), stale=meta.file_count if stale is None else stale
    )


__all__ = ["stats", "stats_from"]
