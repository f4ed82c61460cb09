"""kbgraph's folder-index engine: scan a folder safely, chunk with exact line numbers,
embed, keep a zero-server index beside the folder, search it by vector, BM25 and hybrid
fusion, and format citation-tagged context. Usable without LangGraph."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from .config import ChunkConfig, ChunkStrategy, ScanConfig, SearchConfig, SearchMode  # noqa: E402
from .context import ContextEntry, format_context, render_context  # noqa: E402
from .errors import (  # noqa: E402
    ConfigError,
    DimensionMismatchError,
    EmbeddingError,
    IndexCorruptError,
    IndexLockedError,
    IndexNotFoundError,
    KbgraphError,
)
from .filters import SearchFilters  # noqa: E402

if TYPE_CHECKING:
    from .kb import IndexReport, IndexStats, KnowledgeBase, Ranker

# The facade pulls in embeddings, loaders and LangChain; load it on first use so that
# importing a light module (``retrieval.segments``) stays light.
_LAZY = {"IndexReport": ".kb", "IndexStats": ".kb", "KnowledgeBase": ".kb", "Ranker": ".kb"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

from .progress import ProgressCallback, ProgressEvent  # noqa: E402
from .records import Chunk, SearchResult, SkippedFile  # noqa: E402

__all__ = [
    "Chunk",
    "ChunkConfig",
    "ChunkStrategy",
    "ConfigError",
    "ContextEntry",
    "DimensionMismatchError",
    "EmbeddingError",
    "IndexCorruptError",
    "IndexLockedError",
    "IndexNotFoundError",
    "IndexReport",
    "IndexStats",
    "KbgraphError",
    "KnowledgeBase",
    "ProgressCallback",
    "ProgressEvent",
    "Ranker",
    "ScanConfig",
    "SearchConfig",
    "SearchFilters",
    "SearchMode",
    "SearchResult",
    "SkippedFile",
    "__version__",
]
