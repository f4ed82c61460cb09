"""What an existing index was built with (model, chunking, scan settings), read back so
that later runs reuse it, and recovered as far as possible from a damaged index.

The model matters most: an index must never be updated or searched with another model
than its own, and a damaged ``meta.json`` must not make ``auto`` fall back to the local
model. What still parses of the live ``meta.json`` is used, else the newest other
generation's; when no copy names the model, it is *lost*, and anything that must embed
asks for ``--embedding`` instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from kbgraph.errors import ConfigError, IndexCorruptError

from ..config import ChunkConfig, ScanConfig
from ._meta import EmbeddingMeta, IndexMeta

_Settings = TypeVar("_Settings", ChunkConfig, ScanConfig)


@dataclass(frozen=True, slots=True)
class Recorded:
    """Settings an index recorded. ``found`` is False without an index; ``lost`` says why
    the model cannot be known (an index whose every meta.json is unreadable)."""

    embedding: EmbeddingMeta | None = None
    chunking: dict[str, Any] | None = None
    scan: dict[str, Any] | None = None
    keep_versions: int | None = None
    found: bool = False
    lost: str | None = None


def recorded_or_default(cls: type[_Settings], recorded: dict[str, Any] | None) -> _Settings:
    """The settings an index recorded, or the defaults when there are none (or they no
    longer validate, after an upgrade: then the index is rebuilt with the defaults)."""
    if recorded is not None:
        try:
            return cls.model_validate(recorded)
        except ConfigError:
            pass
    return cls()


@dataclass(frozen=True, slots=True)
class ObjectOnly:
    """The index was built from an ``Embeddings`` object: no spec to load it again."""

    meta: EmbeddingMeta

    def error(self) -> ConfigError:
        return ConfigError(
            f"the index was built with an Embeddings object ({self.meta.provider}:"
            f"{self.meta.model}), which kbgraph cannot load from a spec; pass the same "
            "Embeddings object (KnowledgeBase(folder, embedding=...)) or the spec of that "
            "model, or re-index with a spec such as `local`"
        )


@dataclass(frozen=True, slots=True)
class ModelLost:
    """``auto`` on an index whose recorded model cannot be read back."""

    why: str

    def error(self) -> IndexCorruptError:
        return IndexCorruptError(
            f"{self.why}, and no copy of meta.json says which embedding model built the "
            "index; pass --embedding SPEC (KnowledgeBase(embedding=...)) with that model to "
            "repair it (the embedding cache keeps what was embedded), or another model to "
            "rebuild with it"
        )


def recorded_of(meta: IndexMeta | None) -> Recorded:
    """The settings of a version whose meta read back whole (a database's)."""
    if meta is None:
        return Recorded()
    return Recorded(meta.embedding, meta.chunking, meta.scan, meta.keep_versions, found=True)


def auto_spec(recorded: Recorded) -> str | ObjectOnly | ModelLost | None:
    """``auto``: the model the existing index was built with, else the local model."""
    if recorded.lost is not None:
        return ModelLost(recorded.lost)
    if not recorded.found:
        return "local"
    if recorded.embedding is None:
        return None
    if recorded.embedding.spec:
        return recorded.embedding.spec
    return ObjectOnly(recorded.embedding)


__all__ = [
    "ModelLost",
    "ObjectOnly",
    "Recorded",
    "auto_spec",
    "recorded_of",
    "recorded_or_default",
]
