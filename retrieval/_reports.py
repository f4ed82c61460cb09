"""What the engine reports about an index: its stats, and what one indexing run did."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbgraph._base.camel import camel, to_camel_dict

from ._records import SkippedFile


@camel
@dataclass(frozen=True, slots=True)
class IndexStats:
    """The Knowledge Base spec's stats."""

    file_count: int
    chunk_count: int
    index_size: int  # bytes on disk of the current generation
    last_indexed: str | None  # ISO 8601, UTC
    stale_files: int  # new + modified + deleted files since last_indexed
    embedding: dict[str, Any] = field(default_factory=dict)
    versions: int = 1  # generations kept on disk for restore, the current one included
    keep_versions: int = 3  # how many a writer keeps
    # Chunks whose vector holds only the beginning of their text (longer than the model's
    # input; their whole text is still searched by keyword)
    truncated: int = 0
    # A database store: the server that answered (address, standby, replay lag, versions)
    server: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return to_camel_dict(self)


@camel
@dataclass(frozen=True, slots=True)
class IndexReport:
    """What one indexing run did, plus the stats after it. ``skipped``: files left out of
    the index, with the reason; ``warnings``: files indexed with a caveat (decoded with a
    fallback encoding, a PDF page that could not be extracted)."""

    stats: IndexStats
    embedded: int
    reused: int
    skipped: list[SkippedFile]
    failed_embeddings: int = 0
    # Chunks of the index longer than the model's input, whether embedded in this run or
    # reused (previous version, embedding cache): only their beginning is in the vector
    # (said, never cut quietly; a smaller --chunk-size avoids it). = ``stats.truncated``.
    truncated: int = 0
    rebuilt: bool = False  # model or chunking parameters changed
    warnings: list[SkippedFile] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)  # damage found (and repaired)

    def to_dict(self) -> dict[str, Any]:
        """The stats' keys, then what the run did (``kbgraph index --json``)."""
        run = to_camel_dict(self, exclude={"stats", "skipped", "warnings"})
        skips = {
            "skipped": [s.to_dict() for s in self.skipped],
            "warnings": [w.to_dict() for w in self.warnings],
        }
        return {**self.stats.to_dict(), **run, **skips}


@camel
@dataclass(frozen=True, slots=True)
class IndexChanges:
    """What changed in the folder since the index was built, from file metadata only:
    files that appeared, changed (size or modification time) or vanished. ``rebuild``:
    the index was built with other settings (model, chunking, scan), so the next run
    rebuilds it whatever the files."""

    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    rebuild: bool = False

    @property
    def count(self) -> int:
        return len(self.added) + len(self.modified) + len(self.deleted)

    def to_dict(self) -> dict[str, Any]:
        return to_camel_dict(self)


__all__ = ["IndexChanges", "IndexReport", "IndexStats"]
