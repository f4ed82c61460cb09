"""What an existing index was built with (model, chunking, scan settings), read back so
that later runs reuse it, and recovered as far as possible from a damaged index.

The model matters most: an index must never be updated or searched with another model
than its own, and a damaged ``meta.json`` must not make ``auto`` fall back to the local
model. What still parses of the live ``meta.json`` is used, else the newest other
generation's; when no copy names the model, it is *lost*, and anything that must embed
asks for ``--embedding`` instead of guessing.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kbgraph.errors import ConfigError, IndexCorruptError

from .store import EmbeddingMeta, IndexLayout, IndexMeta


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
    "recorded_settings",
]
