"""kbgraph's folder-index engine: scan a folder safely, chunk with exact line numbers,
embed, keep a zero-server index beside the folder, search it by vector, BM25 and hybrid
fusion, and format citation-tagged context. Usable without LangGraph."""

from __future__ import annotations

from kbgraph._layers import imported_as_kbgraph, lazy_imports

# Loaded as the top-level 'retrieval' & co. (a second copy): refuse, loudly, and before
# any submodule loads, so that a refused import leaves no 'retrieval.*' module behind.
imported_as_kbgraph(__name__)

from typing import TYPE_CHECKING

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

from ._config import ChunkConfig, ChunkStrategy, ScanConfig, SearchConfig, SearchMode
from ._filters import SearchFilters
from ._fs import write_file_atomic

if TYPE_CHECKING:
    from ._backends import describe_store, open_store
    from ._context import ContextEntry, format_context, render_context
    from ._kb import KnowledgeBase
    from ._loaders import (
        LoadedFile,
        Loader,
        file_kinds,
        load_text,
        register_loader,
        unregister_loader,
    )
    from ._progress import ProgressCallback, ProgressEvent
    from ._reports import IndexChanges, IndexReport, IndexStats
    from ._retriever import KnowledgeBaseRetriever
    from ._storage import (
        EmbeddingMeta,
        FileRecord,
        IndexMeta,
        IndexStore,
        IndexWriter,
        Previous,
        QueryRanking,
        Snapshot,
        VersionInfo,
    )

# The facade pulls in embeddings, loaders and LangChain; load it on first use so that
# importing a light module (``kbgraph.retrieval._segments``) stays light.
__getattr__ = lazy_imports(globals())


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
from ._records import Chunk, SearchResult, SkippedFile

__all__ = [
    "HYBRID",
    "Chunk",
    "ChunkConfig",
    "ChunkStrategy",
    "ConfigError",
    "ContextEntry",
    "DimensionMismatchError",
    "EmbeddingError",
    "EmbeddingMeta",
    "FieldRanker",
    "FileRecord",
    "IndexChanges",
    "IndexCorruptError",
    "IndexLockedError",
    "IndexMeta",
    "IndexNotFoundError",
    "IndexReport",
    "IndexStats",
    "IndexStore",
    "IndexWriter",
    "KbgraphError",
    "KnowledgeBase",
    "KnowledgeBaseRetriever",
    "LoadedFile",
    "Loader",
    "ModelMismatchError",
    "Previous",
    "ProgressCallback",
    "ProgressEvent",
    "QueryRanking",
    "Ranker",
    "RankerName",
    "ScanConfig",
    "SearchConfig",
    "SearchFilters",
    "SearchMode",
    "SearchResult",
    "SkippedFile",
    "Snapshot",
    "StoreRanker",
    "VersionInfo",
    "__version__",
    "describe_store",
    "file_kinds",
    "format_context",
    "get_ranker",
    "hybrid_rankers",
    "load_text",
    "open_store",
    "rankers",
    "register_loader",
    "register_ranker",
    "render_context",
    "search_modes",
    "unregister_loader",
    "unregister_ranker",
    "write_file_atomic",
]
