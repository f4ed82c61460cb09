"""What the layers above use of ``kbgraph.retrieval`` beyond its face: kbgraph's own
contract between its layers, not public API (it may change in any release; users import
``kbgraph.retrieval``). ``tests/unit/test_layers.py`` lets another layer import this layer's
private modules only through here, and reads ``_LAZY`` to see the real edges. Each name
loads its module on first use, as the face does, so a light import stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_attributes

if TYPE_CHECKING:
    from ._backends import (
        describe_store as describe_store,
    )
    from ._cache import (
        CACHE_ENV as CACHE_ENV,
    )
    from ._cache import (
        cache_root as cache_root,
    )
    from ._camel import (
        camel as camel,
    )
    from ._camel import (
        snake_keys as snake_keys,
    )
    from ._camel import (
        to_camel_dict as to_camel_dict,
    )
    from ._chunking import (
        sentence_starts as sentence_starts,
    )
    from ._citations import (
        CitationReport as CitationReport,
    )
    from ._citations import (
        Marker as Marker,
    )
    from ._citations import (
        ResolvedCitation as ResolvedCitation,
    )
    from ._citations import (
        UncitedSource as UncitedSource,
    )
    from ._citations import (
        UnresolvedMarker as UnresolvedMarker,
    )
    from ._citations import (
        escape_markers as escape_markers,
    )
    from ._citations import (
        extract_citations as extract_citations,
    )
    from ._citations import (
        find_markers as find_markers,
    )
    from ._config import (
        ChunkConfig as ChunkConfig,
    )
    from ._config import (
        FusionMethod as FusionMethod,
    )
    from ._config import (
        ScanConfig as ScanConfig,
    )
    from ._config import (
        SearchConfig as SearchConfig,
    )
    from ._config import (
        SearchMode as SearchMode,
    )
    from ._config import (
        check_search_mode as check_search_mode,
    )
    from ._context import (
        PREAMBLE as PREAMBLE,
    )
    from ._context import (
        ContextEntry as ContextEntry,
    )
    from ._context import (
        fence_for as fence_for,
    )
    from ._context import (
        line_span as line_span,
    )
    from ._context import (
        longest_backtick_run as longest_backtick_run,
    )
    from ._context import (
        render_context as render_context,
    )
    from ._context import (
        source_block as source_block,
    )
    from ._context import (
        source_header as source_header,
    )
    from ._embeddings import (
        DEFAULT_TIMEOUT as DEFAULT_TIMEOUT,
    )
    from ._embeddings import (
        LocalEmbeddings as LocalEmbeddings,
    )
    from ._embeddings import (
        packaged_model_dir as packaged_model_dir,
    )
    from ._embeddings import (
        parse_spec as parse_spec,
    )
    from ._embeddings import (
        resolve_embeddings as resolve_embeddings,
    )
    from ._embeddings.fake import (
        FakeEmbeddings as FakeEmbeddings,
    )
    from ._filters import (
        SearchFilters as SearchFilters,
    )
    from ._filters import (
        SearchKind as SearchKind,
    )
    from ._filters import (
        path_matches as path_matches,
    )
    from ._filters import (
        search_kinds as search_kinds,
    )
    from ._globs import (
        check_glob as check_glob,
    )
    from ._integrations import (
        init_integration as init_integration,
    )
    from ._kb import (
        KnowledgeBase as KnowledgeBase,
    )
    from ._languages import (
        CodeLanguage as CodeLanguage,
    )
    from ._languages import (
        TestRole as TestRole,
    )
    from ._languages import (
        is_test_path as is_test_path,
    )
    from ._languages import (
        language_of as language_of,
    )
    from ._loaders import (
        SkipFile as SkipFile,
    )
    from ._loaders import (
        file_kinds as file_kinds,
    )
    from ._loaders import (
        load_bytes as load_bytes,
    )
    from ._loaders import (
        open_regular_file as open_regular_file,
    )
    from ._loaders import (
        read_regular_file as read_regular_file,
    )
    from ._progress import (
        ProgressCallback as ProgressCallback,
    )
    from ._progress import (
        ProgressEvent as ProgressEvent,
    )
    from ._ranking import (
        FusedItem as FusedItem,
    )
    from ._ranking import (
        rrf_contribution as rrf_contribution,
    )
    from ._ranking import (
        rrf_fuse as rrf_fuse,
    )
    from ._records import (
        Chunk as Chunk,
    )
    from ._records import (
        FileKind as FileKind,
    )
    from ._records import (
        SearchResult as SearchResult,
    )
    from ._scan import (
        file_kind as file_kind,
    )
    from ._served import (
        read_served as read_served,
    )
    from ._storage import (
        is_database as is_database,
    )
    from ._storage import (
        no_versions as no_versions,
    )
    from ._text import (
        FUNCTION_WORDS as FUNCTION_WORDS,
    )
    from ._text import (
        NEGATIONS as NEGATIONS,
    )
    from ._text import (
        QUESTION_STOP_WORDS as QUESTION_STOP_WORDS,
    )
    from ._text import (
        stem as stem,
    )
    from ._text import (
        stems as stems,
    )
    from ._text import (
        word_set as word_set,
    )
    from ._text import (
        words as words,
    )
    from ._validation import (
        Settings as Settings,
    )
    from ._validation import (
        likely_setting as likely_setting,
    )
    from ._validation import (
        unknown_setting as unknown_setting,
    )
    from ._watch import (
        DEBOUNCE_MS as DEBOUNCE_MS,
    )
    from ._watch import (
        FolderWatcher as FolderWatcher,
    )
    from ._watch import (
        WatchRun as WatchRun,
    )

_LAZY = {
    "CACHE_ENV": "._cache",
    "cache_root": "._cache",
    "camel": "._camel",
    "check_glob": "._globs",
    "read_served": "._served",
    "Chunk": "._records",
    "check_search_mode": "._config",
    "ChunkConfig": "._config",
    "CitationReport": "._citations",
    "CodeLanguage": "._languages",
    "ContextEntry": "._context",
    "DEBOUNCE_MS": "._watch",
    "DEFAULT_TIMEOUT": "._embeddings",
    "describe_store": "._backends",
    "escape_markers": "._citations",
    "extract_citations": "._citations",
    "FakeEmbeddings": "._embeddings.fake",
    "fence_for": "._context",
    "file_kind": "._scan",
    "file_kinds": "._loaders",
    "FileKind": "._records",
    "find_markers": "._citations",
    "FolderWatcher": "._watch",
    "FUNCTION_WORDS": "._text",
    "FusedItem": "._ranking",
    "FusionMethod": "._config",
    "init_integration": "._integrations",
    "is_database": "._storage",
    "is_test_path": "._languages",
    "KnowledgeBase": "._kb",
    "language_of": "._languages",
    "likely_setting": "._validation",
    "line_span": "._context",
    "load_bytes": "._loaders",
    "LocalEmbeddings": "._embeddings",
    "longest_backtick_run": "._context",
    "Marker": "._citations",
    "NEGATIONS": "._text",
    "no_versions": "._storage",
    "open_regular_file": "._loaders",
    "packaged_model_dir": "._embeddings",
    "parse_spec": "._embeddings",
    "path_matches": "._filters",
    "PREAMBLE": "._context",
    "ProgressCallback": "._progress",
    "ProgressEvent": "._progress",
    "QUESTION_STOP_WORDS": "._text",
    "read_regular_file": "._loaders",
    "render_context": "._context",
    "resolve_embeddings": "._embeddings",
    "ResolvedCitation": "._citations",
    "rrf_contribution": "._ranking",
    "rrf_fuse": "._ranking",
    "ScanConfig": "._config",
    "search_kinds": "._filters",
    "SearchConfig": "._config",
    "SearchFilters": "._filters",
    "SearchKind": "._filters",
    "SearchMode": "._config",
    "SearchResult": "._records",
    "sentence_starts": "._chunking",
    "Settings": "._validation",
    "SkipFile": "._loaders",
    "snake_keys": "._camel",
    "source_block": "._context",
    "source_header": "._context",
    "stem": "._text",
    "stems": "._text",
    "TestRole": "._languages",
    "to_camel_dict": "._camel",
    "UncitedSource": "._citations",
    "unknown_setting": "._validation",
    "UnresolvedMarker": "._citations",
    "WatchRun": "._watch",
    "word_set": "._text",
    "words": "._text",
}


__getattr__ = lazy_attributes(globals(), _LAZY)
