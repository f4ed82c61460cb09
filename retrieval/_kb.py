"""The public face of the engine: one folder, one index beside it (or in PostgreSQL).

kb = KnowledgeBase("docs/", embedding="local")   # store="postgresql://..." for a database
kb.index()                       # incremental; embeds only text it never embedded
results = kb.search("how do I retry?", top_k=5)
print(format_context(results))   # citation-tagged context for a chat model
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from kbgraph._base.faces import shown_as
from kbgraph.errors import ConfigError, IndexCorruptError

from . import _kb_search, _kb_stats
from ._arguments import (
    flag,
    path_argument,
    seconds,
    settings_argument,
    store_url,
    version_argument,
    whole_number,
)
from ._backends import IndexLayout, folder_layout, open_store
from ._config import ChunkConfig, ScanConfig, SearchConfig, SearchMode
from ._embeddings import DEFAULT_TIMEOUT
from ._filters import SearchFilters
from ._freshness import DEFAULT_TTL_S
from ._kb_live import LiveMode
from ._kb_model import EmbeddingModel, EmbeddingSpec
from ._kb_reader import LiveReader
from ._records import SearchResult, SkippedFile
from ._search import check_index_model
from ._storage import (
    DEFAULT_KEEP_VERSIONS,
    FileRecord,
    IndexStore,
    RankerName,
    Snapshot,
    VersionInfo,
    auto_spec,
    check_keep,
    recorded_or_default,
)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ._embeddings import BatchEmbedder
    from ._indexer import IndexPlan
    from ._progress import ProgressCallback
    from ._reports import IndexChanges, IndexReport, IndexStats
    from ._retriever import KnowledgeBaseRetriever


@shown_as("kbgraph.retrieval")
class KnowledgeBase:
    """Index and search one folder. ``embedding`` is a spec (``local``, ``local:<path>``,
    ``openai:<model>``, ``azure_openai:<deployment>``, ``openai_compatible:<model>@<url>``,
    ``fake``) or any LangChain ``Embeddings``; ``None`` gives a lexical-only index (BM25);
    ``store`` is where the index lives: ``None`` (the folder index, in ``index_dir``,
    default ``<folder>/.kbgraph``) or a PostgreSQL URL (``postgresql://user@host/db``: the
    same scan, chunking, embedding cache and results, in tables of that database; several
    hosts, ``postgresql://user@primary,standby/db``, send searches to a standby and writes
    to the primary); ``read_store`` is a standby's URL that searches go to first;
    ``auto`` (the default) reuses the model the existing index was built with, else
    ``local`` (an index built from an ``Embeddings`` object records no spec: then pass that
    object again). ``chunking`` and ``scan`` work alike: ``None`` reuses what the existing
    index was built with, else the defaults; passing them explicitly and differently from
    the index means a rebuild on the next ``index()``.
    ``keep_versions`` published generations are kept for ``restore()`` (``None``: as the
    index recorded, else 3).
    ``ensure_fresh()`` walks the folder at most once per ``freshness_ttl`` seconds; with
    ``live=True`` a file watcher indexes changes as they happen (on a background thread,
    see :mod:`kbgraph.retrieval._watch`) and ``ensure_fresh()`` walks nothing.
    Thread-safe for concurrent searches; one process may index while others search."""

    concurrent_searches: ClassVar[bool] = True
    """Searches may run at once from several threads (a registry need not serialise them)."""

    def __init__(
        self,
        folder: str | Path,
        *,
        embedding: str | Embeddings | None = "auto",
        index_dir: str | Path | None = None,
        scan: ScanConfig | None = None,
        chunking: ChunkConfig | None = None,
        lock_timeout: float = 60.0,
        live: bool = False,
        freshness_ttl: float = DEFAULT_TTL_S,
        embedding_timeout: float = DEFAULT_TIMEOUT,
        keep_versions: int | None = None,
        store: str | None = None,
        read_store: str | None = None,
    ) -> None:
        self.folder = path_argument(folder, "folder", "KnowledgeBase('docs/')").resolve()
        if not self.folder.is_dir():
            raise ConfigError(f"{folder} is not a folder; pass the folder to index")
        self.lock_timeout = seconds(lock_timeout, "lock_timeout", 60.0, zero=True)
        index_path = (
            path_argument(index_dir, "index_dir", "index_dir='docs-index/'")
            if index_dir not in (None, "")
            else None
        )
        self.store: IndexStore = open_store(
            self.folder,
            store_url(store),
            index_path,
            self.lock_timeout,
            store_url(read_store),
        )
        recorded = self.store.recorded()
        scan = settings_argument(ScanConfig, scan, "scan")
        chunking = settings_argument(ChunkConfig, chunking, "chunking")
        self.scan_config = scan or recorded_or_default(ScanConfig, recorded.scan)
        self.chunk_config = chunking or recorded_or_default(ChunkConfig, recorded.chunking)
        keep = whole_number(keep_versions, "keep_versions")
        if keep is None:
            keep = recorded.keep_versions or DEFAULT_KEEP_VERSIONS
        self.keep_versions = check_keep(keep)
        spec: EmbeddingSpec = auto_spec(recorded) if embedding == "auto" else embedding
        timeout = seconds(embedding_timeout, "embedding_timeout", 30.0)
        self._model = EmbeddingModel(spec, timeout)
        self._live = LiveReader(self.store)
        ttl = seconds(freshness_ttl, "freshness_ttl", DEFAULT_TTL_S, zero=True)
        self._mode = LiveMode(self, self._live, ttl, self.lock_timeout)
        if flag(live, "live"):
            self.start_watching()

    @property
    def embedding_timeout(self) -> float:
        return self._model.timeout

    @property
    def layout(self) -> IndexLayout:
        """The folder index's files (a knowledge base in a database has none)."""
        return folder_layout(self.folder, self.store)

    def embedder(self) -> BatchEmbedder:
        """The batching, retrying embedder (the model loads on first use)."""
        return self._model.embedder()

    def _plan(self, rebuild: bool = False) -> IndexPlan:
        """What an indexing run of this knowledge base works with."""
        # Imported here, as _kb_index below: a BM25 search never indexes, and the indexer
        # brings the chunkers, the loaders and the embedding batches.
        from ._indexer import IndexPlan

        return IndexPlan(
            folder=self.folder,
            store=self.store,
            scan=self.scan_config,
            chunking=self.chunk_config,
            embedding=self._model.meta,
            embedder=self.embedder if self._model.meta else None,
            lock_timeout=self.lock_timeout,
            rebuild=rebuild,
            keep_versions=self.keep_versions,
        )

    # -- indexing -----------------------------------------------------------------------
    def index(
        self,
        *,
        progress: ProgressCallback | None = None,
        rebuild: bool = False,
        allow_model_change: bool = True,
    ) -> IndexReport:
        """Bring the index up to date with the folder (incrementally), repairing any
        damage from the documents (``IndexReport.repaired`` lists what was found). An
        index built with another embedding model (or none) is rebuilt with this knowledge
        base's, unless ``allow_model_change`` is False: then only ``rebuild`` does, and
        otherwise a ``ModelMismatchError`` names both models (``kbgraph index`` and the
        file watcher never re-embed a whole index unasked)."""
        plan = self._plan(rebuild)
        from . import _kb_index

        return _kb_index.index(plan, self._model, self._live, progress, allow_model_change)

    async def aindex(
        self,
        *,
        progress: ProgressCallback | None = None,
        rebuild: bool = False,
        allow_model_change: bool = True,
    ) -> IndexReport:
        """:meth:`index` in a worker thread: the event loop keeps running while files are
        read and embedded (``progress`` is then called from that thread)."""
        import asyncio  # here: a running loop has it loaded; a CLI search never needs it

        return await asyncio.to_thread(
            self.index,
            progress=progress,
            rebuild=rebuild,
            allow_model_change=allow_model_change,
        )

    def stale_files(self) -> int | None:
        """New + modified + deleted files, from file metadata only; None without an index
        or when the settings changed (everything is stale). Scan-level skips (secrets,
        excluded ...) are not files of the index and never count."""
        from . import _kb_index

        return _kb_index.stale_files(self._plan(), self._live)

    def changes(self) -> IndexChanges:
        """What changed in the folder since the live index was built (file metadata only;
        ``rebuild`` when the settings changed). ``IndexNotFoundError`` without an index."""
        from . import _kb_index

        return _kb_index.changes(self._plan(), self._live)

    def skipped_files(self) -> list[SkippedFile]:
        """The files left out of the index with their reasons: those the scan leaves out
        now (secrets, excluded, too large ...) and those the live index could not load
        (binary, empty, unreadable, extraction failed)."""
        from . import _kb_index

        return _kb_index.skipped_files(self._plan(), self._live)

    # -- freshness and live mode --------------------------------------------------------
    def is_fresh(self) -> bool:
        """True when the folder matches the index; reads file metadata only. A damaged
        index is not fresh: the next ``ensure_fresh`` repairs it."""
        try:
            return self.stale_files() == 0
        except IndexCorruptError:
            return False

    def ensure_fresh(
        self, *, progress: ProgressCallback | None = None, allow_model_change: bool = False
    ) -> IndexReport | None:
        """Index when missing or stale; return the report, or None when already fresh. The
        folder is walked at most once per ``freshness_ttl`` and by one thread at a time
        (another caller meanwhile searches the index as it is); in live mode it is never
        walked here: this waits for the watcher's run of changes it has already seen.
        An index built with another embedding model than this knowledge base's is never
        rebuilt here unless ``allow_model_change``: a ``ModelMismatchError`` says which two
        models and what to pass (only an explicit ``index()`` changes an index's model)."""
        if not allow_model_change and self._live.has_index():
            # The open reader's meta: no file is read again for a warm query.
            check_index_model(self.folder, self._open().meta.embedding, self._model.meta)
        return self._mode.freshness.ensure(progress)

    def start_watching(self) -> None:
        """Keep the index fresh with a file watcher on a background thread (idempotent):
        the first run catches up with the folder, then every burst of changes is one
        incremental run; a failed run is retried later while the last good index serves."""
        self._mode.start()

    def stop_watching(self) -> None:
        """Stop the watcher (after the run in progress); freshness checks walk again."""
        self._mode.stop()

    @property
    def live(self) -> bool:
        """True while a file watcher keeps this knowledge base fresh."""
        return self._mode.running

    # -- search -------------------------------------------------------------------------
    def _open(self) -> Snapshot:
        """The live version, reopened when a writer published a new one."""
        return self._live.open()

    def _embed_query(self, query: str) -> np.ndarray:
        return self.embedder().embed_query(query)

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: SearchMode | None = None,
        filters: SearchFilters | None = None,
        config: SearchConfig | None = None,
    ) -> list[SearchResult]:
        """Ranked results; ``mode`` defaults to hybrid when vectors exist, else bm25.
        ``top_k`` (1-1000, default 5) and ``mode`` may be given here or in ``config``, not
        both with different values; an empty query is refused (``ConfigError``)."""
        return _kb_search.search(
            self._live,
            self._model,
            self._embed_query,
            query,
            top_k=top_k,
            mode=mode,
            filters=filters,
            config=config,
        )

    async def asearch(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: SearchMode | None = None,
        filters: SearchFilters | None = None,
        config: SearchConfig | None = None,
    ) -> list[SearchResult]:
        """:meth:`search` in a worker thread (the memory-mapped index is read and the
        query embedded there), so a warm query never stalls the event loop."""
        import asyncio  # see aindex

        return await asyncio.to_thread(
            self.search, query, top_k=top_k, mode=mode, filters=filters, config=config
        )

    def as_retriever(
        self,
        *,
        top_k: int | None = None,
        k: int | None = None,
        mode: SearchMode | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        search_type: str = "similarity",
        search_kwargs: Mapping[str, Any] | None = None,
    ) -> KnowledgeBaseRetriever:
        """This knowledge base as a LangChain ``BaseRetriever`` (sync and async) returning
        ``top_k`` documents (default 5); LangChain's spellings work too: ``k=4``,
        ``search_type="similarity"``, ``search_kwargs={"k": 4, "filter": {...}}``. See
        :mod:`kbgraph.retrieval._retriever` for the documents' metadata."""
        from ._retriever import KnowledgeBaseRetriever, retriever_settings

        settings = retriever_settings(
            top_k=top_k,
            k=k,
            mode=mode,
            filters=filters,
            search_type=search_type,
            search_kwargs=search_kwargs,
        )
        return KnowledgeBaseRetriever(knowledge_base=self, **settings)

    def rank(
        self,
        query: str,
        ranker: RankerName,
        *,
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[SearchResult]:
        """One ranker's list (for callers that fuse several queries themselves)."""
        return _kb_search.rank(
            self._live, self._model, self._embed_query, query, ranker, limit=limit, filters=filters
        )

    def indexed_files(self) -> dict[str, FileRecord]:
        """The files of the live generation with their size, mtime, sha256 and chunk span."""
        return dict(self._open().meta.files)

    @property
    def has_vectors(self) -> bool:
        return self._open().has_vectors

    # -- housekeeping -------------------------------------------------------------------
    def stats(self) -> IndexStats:
        reader = self._open()
        return _kb_stats.stats(self.store, reader, self.stale_files())

    def versions(self) -> list[VersionInfo]:
        """The kept generations, newest first (``kbgraph versions``)."""
        return self.store.versions()

    def restore(self, version: str | int) -> VersionInfo:
        """Make a kept generation current again, atomically: ``version`` is its name, a
        unique prefix of it, or its row in :meth:`versions` (1 = newest)."""
        info = self.store.restore(version_argument(version), self.lock_timeout)
        self._mode.freshness.forget()
        return info

    def validate(self) -> None:
        """Open the live generation and check every file of it, then the chunks of every
        file still as indexed against the file's bytes, and the BM25 index against the
        chunks (raises IndexCorruptError)."""
        self._open().validate(self.folder)

    def delete(self) -> None:
        """Remove the index folder (the embedding cache goes with it). Refuses any folder
        that is not recognisably a kbgraph index, and waits for a running writer."""
        self.close()
        self.store.delete(self.folder, self.lock_timeout)

    def close(self) -> None:
        self.stop_watching()
        self._live.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["KnowledgeBase"]
