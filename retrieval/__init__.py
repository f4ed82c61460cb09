"""kbgraph's folder-index engine: scan a folder safely, chunk with exact line numbers,
embed, keep a zero-server index beside the folder, search it by vector, BM25 and hybrid
fusion, and format citation-tagged context. Usable without LangGraph."""

from __future__ import annotations

from kbgraph.layers import imported_as_kbgraph

# Loaded as the top-level 'retrieval' & co. (a second copy): refuse, loudly, and before
# any submodule loads, so that a refused import leaves no 'retrieval.*' module behind.
imported_as_kbgraph(__name__)

import importlib
from typing import TYPE_CHECKING, Any

from kbgraph._version import __version__
from kbgraph.errors import (
    ConfigError,
    DimensionMismatchError,
    EmbeddingError,
    IndexCorruptError,
    IndexLockedError,
    IndexNotFoundError,
    KbgraphError,
    ModelMismatchError,
)

from ._fs import write_file_atomic
from .config import ChunkConfig, ChunkStrategy, ScanConfig, SearchConfig, SearchMode
from .context import ContextEntry, format_context, render_context
from .filters import SearchFilters

if TYPE_CHECKING:
    from .kb import KnowledgeBase
    from .reports import IndexChanges, IndexReport, IndexStats
    from .retriever import KnowledgeBaseRetriever

# The facade pulls in embeddings, loaders and LangChain; load it on first use so that
# importing a light module (``kbgraph.retrieval.segments``) stays light.
_LAZY = {
    "IndexChanges": ".reports",
    "IndexReport": ".reports",
    "IndexStats": ".reports",
    "KnowledgeBase": ".kb",
    "KnowledgeBaseRetriever": ".retriever",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from ._rankers import (
    HYBRID,
    FieldRanker,
    Ranker,
    RankerName,
    StoreRanker,
    get_ranker,
    hybrid_rankers,
    rankers,
    register_ranker,
    search_modes,
    unregister_ranker,
)
from .progress import ProgressCallback, ProgressEvent
from .records import Chunk, SearchResult, SkippedFile

__all__ = [
    "HYBRID",
    "Chunk",
    "ChunkConfig",
    "ChunkStrategy",
    "ConfigError",
    "ContextEntry",
    "DimensionMismatchError",
    "EmbeddingError",
    "FieldRanker",
    "IndexChanges",
    "IndexCorruptError",
    "IndexLockedError",
    "IndexNotFoundError",
    "IndexReport",
    "IndexStats",
    "KbgraphError",
    "KnowledgeBase",
    "KnowledgeBaseRetriever",
    "ModelMismatchError",
    "ProgressCallback",
    "ProgressEvent",
    "Ranker",
    "RankerName",
    "ScanConfig",
    "SearchConfig",
    "SearchFilters",
    "SearchMode",
    "SearchResult",
    "SkippedFile",
    "StoreRanker",
    "__version__",
    "format_context",
    "get_ranker",
    "hybrid_rankers",
    "rankers",
    "register_ranker",
    "render_context",
    "search_modes",
    "unregister_ranker",
    "write_file_atomic",
]
