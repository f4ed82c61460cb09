"""The public face of the engine: one folder, one index beside it (or in PostgreSQL).

kb = KnowledgeBase("docs/", embedding="local")   # store="postgresql://..." for a database
kb.index()                       # incremental; embeds only text it never embedded
results = kb.search("how do I retry?", top_k=5)
print(format_context(results))   # citation-tagged context for a chat model
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from kbgraph.errors import (
    ConfigError,
    DatabaseUnavailableError,
    IndexCorruptError,
    IndexNotFoundError,
    ReadOnlyStoreError,
)

from . import __version__
from ._arguments import (
    flag,
    path_argument,
    seconds,
    settings_argument,
    store_url,
    whole_number,
)
from ._freshness import DEFAULT_TTL_S, Freshness, changed_files, count_stale
from ._indexer import IndexPlan, run_index, settings_match
from ._reuse import check_against_documents
from ._search import (
    REBUILD_WITH_FLAG,
    check_index_model,
    check_query_model,
    check_rank_arguments,
    no_query_model,
    once,
    rank_one,
    resolve_mode,
    search_config,
)
from ._search import search as _search
from .backends import open_store
from .chunking import code_chunker_id
from .config import ChunkConfig, ScanConfig, SearchConfig, SearchMode
from .embeddings import (
    DEFAULT_TIMEOUT,
    BatchEmbedder,
    call_timeout_for,
    describe_embeddings,
    resolve_embeddings,
)
from .filters import SearchFilters
from .folder import (
    FolderSnapshot,
    FolderStore,
    IndexLayout,
    VersionInfo,
    check_keep,
    list_versions,
    no_index,
    restore_version,
)
from .progress import ProgressCallback, ignore_progress
from .records import SearchResult, SkippedFile
from .reports import IndexChanges, IndexReport, IndexStats
from .scan import scan_folder
from .storage import (
    DEFAULT_KEEP_VERSIONS,
    EmbeddingMeta,
    FileRecord,
    IndexMeta,
    IndexStore,
    ModelLost,
    ObjectOnly,
    QueryEmbedder,
    RankerName,
    ServedStore,
    Snapshot,
    auto_spec,
    no_versions,
)
from .watch import FolderWatcher

if TYPE_CHECKING:
    from .retriever import KnowledgeBaseRetriever

logger = logging.getLogger("kbgraph.retrieval")
_Settings = TypeVar("_Settings", ChunkConfig, ScanConfig)
_T = TypeVar("_T")


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
    see :mod:`kbgraph.retrieval.watch`) and ``ensure_fresh()`` walks nothing.
    Thread-safe for concurrent searches; one process may index while others search."""

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
        self.scan_config = scan or _recorded(ScanConfig, recorded.scan)
        self.chunk_config = chunking or _recorded(ChunkConfig, recorded.chunking)
        keep = whole_number(keep_versions, "keep_versions")
        if keep is None:
            keep = recorded.keep_versions or DEFAULT_KEEP_VERSIONS
        self.keep_versions = check_keep(keep)
        spec: str | Embeddings | ObjectOnly | ModelLost | None = embedding
        if embedding == "auto":
            spec = auto_spec(recorded)
        self.embedding_timeout = seconds(embedding_timeout, "embedding_timeout", 30.0)
        self._embedding_spec = spec
        self._embedding_meta = self._describe(spec)
        self._embedder: BatchEmbedder | None = None
        self._reader: Snapshot | None = None
        self._reader_key: str | None = None
        self._lock = threading.RLock()
        self._freshness = Freshness(
            ttl=seconds(freshness_ttl, "freshness_ttl", DEFAULT_TTL_S, zero=True),
            is_fresh=self.is_fresh,
            index=self._index_unless_read_only,
            has_index=self._has_index,
            wait_s=self.lock_timeout,
        )
        self._watcher: FolderWatcher | None = None
        if flag(live, "live"):
            self.start_watching()

    @property
    def layout(self) -> IndexLayout:
        """The folder index's files (a knowledge base in a database has none)."""
        if not isinstance(self.store, FolderStore):
            raise ConfigError(
                f"the index of {self.folder} lives in {self.store.location}, not in a folder"
            )
        return self.store.layout

    @staticmethod
    def _describe(
        embedding: str | Embeddings | ObjectOnly | ModelLost | None,
    ) -> EmbeddingMeta | None:
        if embedding is None or isinstance(embedding, ModelLost):
            return None
        if isinstance(embedding, ObjectOnly):
            return embedding.meta.model_copy(update={"dims": 0})
        info = describe_embeddings(embedding)
        spec = embedding if isinstance(embedding, str) else None
        return EmbeddingMeta(provider=info.provider, model=info.model, dims=0, spec=spec)

    def embedder(self) -> BatchEmbedder:
        """The batching, retrying embedder (the model loads on first use)."""
        with self._lock:
            if self._embedder is None:
                spec = self._embedding_spec
                if spec is None:
                    raise ConfigError("this knowledge base has no embedding model (lexical only)")
                if isinstance(spec, ObjectOnly | ModelLost):
                    raise spec.error()
                model = (
                    resolve_embeddings(spec, timeout=self.embedding_timeout)
                    if isinstance(spec, str)
                    else spec
                )
                bound = call_timeout_for(spec, self.embedding_timeout)
                self._embedder = BatchEmbedder(model, call_timeout=bound)
            return self._embedder

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
        if isinstance(self._embedding_spec, ModelLost):
            raise self._embedding_spec.error()
        if not (rebuild or allow_model_change):
            recorded = self.store.recorded()
            if recorded.found and recorded.lost is None:
                check_index_model(
                    self.folder, recorded.embedding, self._embedding_meta, REBUILD_WITH_FLAG
                )
        plan = IndexPlan(
            folder=self.folder,
            store=self.store,
            scan=self.scan_config,
            chunking=self.chunk_config,
            embedding=self._embedding_meta,
            embedder=self.embedder if self._embedding_meta else None,
            lock_timeout=self.lock_timeout,
            rebuild=rebuild,
            keep_versions=self.keep_versions,
        )
        result = run_index(plan, progress or ignore_progress)
        # Files that changed while the run read the folder: the generation holds what was
        # read, so they are stale already (a rescan reads metadata only).
        stale = self.stale_files()
        stats = self._stats_from(result.meta, self._open().size_bytes(), stale=stale or 0)
        return IndexReport(
            stats=stats,
            embedded=result.embedded,
            reused=result.reused,
            skipped=result.skipped,
            failed_embeddings=len(result.meta.failed_embeddings),
            rebuilt=result.rebuilt,
            warnings=result.warnings,
            repaired=result.repaired,
        )

    async def aindex(
        self,
        *,
        progress: ProgressCallback | None = None,
        rebuild: bool = False,
        allow_model_change: bool = True,
    ) -> IndexReport:
        """:meth:`index` in a worker thread: the event loop keeps running while files are
        read and embedded (``progress`` is then called from that thread)."""
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
        try:
            reader = self._open()
        except IndexNotFoundError:
            return None
        if not self._settings_match(reader.meta):
            return None
        scanned = scan_folder(self.folder, self.scan_config, index_dir=self.store.index_dir)
        return count_stale(reader.meta, scanned)

    def _settings_match(self, meta: IndexMeta) -> bool:
        plan = IndexPlan(
            self.folder,
            self.store,
            self.scan_config,
            self.chunk_config,
            self._embedding_meta,
            None,
            self.lock_timeout,
        )
        return settings_match(meta, plan)

    def changes(self) -> IndexChanges:
        """What changed in the folder since the live index was built (file metadata only;
        ``rebuild`` when the settings changed). ``IndexNotFoundError`` without an index."""
        reader = self._open()
        if not self._settings_match(reader.meta):
            return IndexChanges(rebuild=True)
        scanned = scan_folder(self.folder, self.scan_config, index_dir=self.store.index_dir)
        return changed_files(reader.meta, scanned)

    def skipped_files(self) -> list[SkippedFile]:
        """The files left out of the index with their reasons: those the scan leaves out
        now (secrets, excluded, too large ...) and those the live index could not load
        (binary, empty, unreadable, extraction failed)."""
        reader = self._open()
        scanned = scan_folder(self.folder, self.scan_config, index_dir=self.store.index_dir)
        loaded = [
            SkippedFile(rel, record.reason, record.detail)
            for rel, record in sorted(reader.meta.skipped.items())
        ]
        return [*scanned.skipped, *loaded]

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
        if not allow_model_change and self._has_index():
            # The open reader's meta: no file is read again for a warm query.
            check_index_model(self.folder, self._open().meta.embedding, self._embedding_meta)
        return self._freshness.ensure(progress)

    def _index_unless_read_only(self, progress: ProgressCallback | None) -> IndexReport | None:
        """``ensure_fresh``'s run: an index nobody may write (a read-only mount, a
        snapshot) is searched as it is, stale or not, with a warning, instead of failing
        every search of the subgraph."""
        if isinstance(self.store, FolderStore):
            root = self.store.layout.root
            if self.store.layout.has_pointer() and not os.access(root, os.W_OK):
                logger.warning("%s is stale but read-only; searching it as it is", root)
                return None
        try:
            return self.index(progress=progress)
        except ReadOnlyStoreError as exc:  # a standby: refused before anything was written
            if not self._has_index():
                raise
            logger.warning("%s is stale; searching it as it is: %s", self.folder, exc)
            return None

    def _has_index(self) -> bool:
        try:
            return self.store.current_key() is not None
        except IndexCorruptError:
            return False

    # -- live mode ----------------------------------------------------------------------
    def start_watching(self) -> None:
        """Keep the index fresh with a file watcher on a background thread (idempotent):
        the first run catches up with the folder, then every burst of changes is one
        incremental run; a failed run is retried later while the last good index serves."""
        with self._lock:
            if self._watcher is None:
                self._watcher = FolderWatcher(self, ignore=self.store.index_dir)
            self._watcher.start()
            self._freshness.watcher = self._watcher

    def stop_watching(self) -> None:
        """Stop the watcher (after the run in progress); freshness checks walk again."""
        with self._lock:
            watcher, self._watcher = self._watcher, None
            self._freshness.watcher = None
            self._freshness.forget()
        if watcher is not None:
            watcher.stop()

    @property
    def live(self) -> bool:
        """True while a file watcher keeps this knowledge base fresh."""
        watcher = self._watcher
        return watcher is not None and watcher.running

    # -- search -------------------------------------------------------------------------
    def _reading(self, use: Callable[[Snapshot], _T]) -> _T:
        """``use`` the live version. A database connection lost on the way (a standby that
        went away mid-search) is retried once on a new connection, which goes to a server
        that answers (the primary when no standby does): the caller sees no error."""
        try:
            return use(self._open())
        except DatabaseUnavailableError as exc:
            logger.warning("a search lost its server; trying another: %s", exc)
            with self._lock:  # every connection of the lost server goes
                if self._reader is not None:
                    self._reader.close()
                self._reader, self._reader_key = None, None
                self.store.close()
            return use(self._open())

    def _open(self) -> Snapshot:
        """The live version, reopened when a writer published a new one."""
        with self._lock:
            key = self.store.current_key()
            # No index: the store's open() raises IndexNotFoundError saying what to run
            # (a database store's command needs its --store).
            if self._reader is None or key is None or key != self._reader_key:
                reader = self.store.open()
                if self._reader is not None:
                    self._reader.close()
                self._reader, self._reader_key = reader, key
            return self._reader

    def _embed_query(self, query: str) -> np.ndarray:
        return self.embedder().embed_query(query)

    def _query_embedder(self, reader: Snapshot) -> QueryEmbedder | None:
        """Embeds queries for the vector ranker, after checking that this knowledge base's
        model is the one the index was built with (checked only when a query is embedded,
        so BM25 searches work whatever the model)."""
        if not reader.has_vectors:
            return None

        def embed(query: str) -> np.ndarray:
            check_query_model(reader.meta.embedding, self._embedding_meta)
            if self._embedding_spec is None:  # lexical only by choice, not a lost model
                raise no_query_model(reader.meta.embedding)
            return self._embed_query(query)

        return embed

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
        cfg = search_config(query, top_k=top_k, mode=mode, filters=filters, config=config)
        return self._reading(
            lambda reader: _search(reader, query, cfg, filters, self._query_embedder(reader))
        )

    async def asearch(
        self,
        query: str,
        *,
        top_k: int = 5,
        mode: SearchMode | None = None,
        filters: SearchFilters | None = None,
        config: SearchConfig | None = None,
    ) -> list[SearchResult]:
        """:meth:`search` in a worker thread (the memory-mapped index is read and the
        query embedded there), so a warm query never stalls the event loop."""
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
        :mod:`kbgraph.retrieval.retriever` for the documents' metadata."""
        from .retriever import KnowledgeBaseRetriever, retriever_settings

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
        check_rank_arguments(query, ranker, limit, filters)

        def rank(reader: Snapshot) -> list[SearchResult]:
            if ranker == "vector":
                resolve_mode(reader.has_vectors, "vector")
            with reader.ranking(query, once(self._query_embedder(reader))) as ranking:
                return rank_one(ranking, ranker, limit, filters)

        return self._reading(rank)

    def indexed_files(self) -> dict[str, FileRecord]:
        """The files of the live generation with their size, mtime, sha256 and chunk span."""
        return dict(self._open().meta.files)

    @property
    def has_vectors(self) -> bool:
        return self._open().has_vectors

    # -- housekeeping -------------------------------------------------------------------
    def stats(self) -> IndexStats:
        reader = self._open()
        stale = self.stale_files()
        return self._stats_from(
            reader.meta,
            reader.size_bytes(),
            stale=reader.meta.file_count if stale is None else stale,
        )

    def versions(self) -> list[VersionInfo]:
        """The kept generations, newest first (``kbgraph versions``)."""
        return list_versions(self._published_layout())

    def restore(self, version: str | int) -> VersionInfo:
        """Make a kept generation current again, atomically: ``version`` is its name, a
        unique prefix of it, or its row in :meth:`versions` (1 = newest)."""
        if isinstance(version, bool) or not isinstance(version, str | int):
            raise ConfigError(
                f"version must be a row number of versions() (1 = newest), a generation name "
                f"or a unique prefix of one, got {type(version).__name__} {version!r}; e.g. "
                "kb.restore(1) or kb.restore('gen-18a7')"
            )
        wanted = str(version)
        info = restore_version(self._published_layout(), wanted, lock_timeout=self.lock_timeout)
        self._freshness.forget()
        return info

    def _published_layout(self) -> IndexLayout:
        """The folder index's files, once an index was published there (a damaged one too:
        restoring repairs it); IndexNotFoundError for a folder never indexed, ConfigError
        for a knowledge base in a database (it keeps the live version only)."""
        if not isinstance(self.store, FolderStore):
            raise no_versions(self.folder, self.store.location)
        layout = self.layout
        if not layout.has_pointer() and not layout.published():
            raise no_index(self.folder)
        return layout

    def validate(self) -> None:
        """Open the live generation and check every file of it, then the chunks of every
        file still as indexed against the file's bytes, and the BM25 index against the
        chunks (raises IndexCorruptError)."""
        reader = self._open()
        reader.validate()
        if not isinstance(reader, FolderSnapshot):
            return  # a database's rows are checked by it
        # Another engine version (or code chunker) chunks otherwise.
        if (
            reader.meta.engine_version == __version__
            and reader.meta.code_chunker == code_chunker_id()
        ):
            chunking = _recorded(ChunkConfig, reader.meta.chunking)
            scan = _recorded(ScanConfig, reader.meta.scan)
            check_against_documents(reader, self.folder, chunking, scan)
        reader.check_lexical()

    def _version_count(self) -> int:
        """Versions kept for ``restore``: the folder index keeps generations; a database
        keeps the live version only."""
        if isinstance(self.store, FolderStore):
            return len(self.store.layout.published())
        return 1

    def _stats_from(self, meta: IndexMeta, size: int, *, stale: int) -> IndexStats:
        return IndexStats(
            server=self.store.server() if isinstance(self.store, ServedStore) else {},
            versions=self._version_count(),
            keep_versions=meta.keep_versions,
            file_count=meta.file_count,
            chunk_count=meta.chunk_count,
            index_size=size,
            last_indexed=meta.indexed_at,
            stale_files=stale,
            embedding=meta.embedding.model_dump() if meta.embedding else {},
        )

    def delete(self) -> None:
        """Remove the index folder (the embedding cache goes with it). Refuses any folder
        that is not recognisably a kbgraph index, and waits for a running writer."""
        self.close()
        self.store.delete(self.folder, self.lock_timeout)

    def close(self) -> None:
        self.stop_watching()
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader, self._reader_key = None, None
            self.store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _recorded(cls: type[_Settings], recorded: dict[str, Any] | None) -> _Settings:
    """The settings an index recorded, or the defaults when there are none (or they no
    longer validate, after an upgrade: then the index is rebuilt with the defaults)."""
    if recorded is not None:
        try:
            return cls.model_validate(recorded)
        except ConfigError:
            pass
    return cls()


__all__ = ["KnowledgeBase"]
