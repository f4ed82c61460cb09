"""``meta.json``: what an index generation was built from and with."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..records import FileKind, SkipReason

FORMAT_VERSION = 1


class EmbeddingMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str
    model: str
    dims: int
    spec: str | None = None  # how to load it again (``local``, ``openai:…``), when known


class FileRecord(BaseModel):
    """One indexed file; its chunks are rows ``[chunk_start, chunk_end)`` of the index."""

    model_config = ConfigDict(extra="forbid")

    size: int
    mtime_ns: int
    sha256: str
    kind: FileKind
    chunk_start: int
    chunk_end: int
    notes: list[dict[str, str]] = Field(default_factory=list)


class SkipRecord(BaseModel):
    """A skipped file, remembered so that an unchanged one is not read again."""

    model_config = ConfigDict(extra="forbid")

    size: int
    mtime_ns: int
    reason: SkipReason
    detail: str = ""


class IndexMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format_version: int = FORMAT_VERSION
    engine_version: str
    embedding: EmbeddingMeta | None
    chunking: dict[str, Any]
    scan: dict[str, Any]
    files: dict[str, FileRecord]
    skipped: dict[str, SkipRecord] = Field(default_factory=dict)
    file_count: int
    chunk_count: int
    indexed_at: str
    failed_embeddings: list[int] = Field(default_factory=list)
