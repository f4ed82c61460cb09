"""What the Retrieve node needs from a knowledge base, and a cache of open ones.

:class:`Searcher` is the slice of ``kbgraph.retrieval._kb.KnowledgeBase`` the subgraph uses, so any
object with these methods (a test fake, an adapter over a LangChain ``VectorStore``) can
stand in for it. :func:`open_knowledge_base` keeps one open ``KnowledgeBase`` per
(folder, embedding spec, chunking, store) for the life of the process, so repeated runs
neither reload the embedding model nor reopen the index; each cached searcher is guarded by
a lock because graph runs may share it from several threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from langchain_core.embeddings import Embeddings

from kbgraph._base.faces import shown_as
from kbgraph.retrieval import ProgressCallback, SearchFilters, SearchResult

from ._served import check_model, check_stores

if TYPE_CHECKING:
    from kbgraph.retrieval import ChunkConfig, RankerName, SearchConfig


@runtime_checkable
@shown_as("kbgraph.graphs")
class Searcher(Protocol):
    def ensure_fresh(
        self, *, progress: ProgressCallback | None = None, allow_model_change: bool = False
    ) -> Any:
        """Index when missing or stale; return a report (with ``to_dict``) or ``None``. An
        index of another embedding model is a ``ModelMismatchError`` unless
        ``allow_model_change``."""

    def rank(
        self,
        query: str,
        ranker: RankerName,
        *,
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[SearchResult]:
        """One ranker's best ``limit`` results among the chunks ``filters`` allow."""

    def search(
        self,
        query: str,
        *,
        config: SearchConfig | None = None,
        filters: SearchFilters | None = None,
    ) -> list[SearchResult]:
        """The engine's own search (hybrid fusion included) as ``config`` says."""

    def close(self) -> None: ...


@runtime_checkable
class Watchable(Protocol):
    """A searcher that can keep itself fresh with a file watcher (``RagSettings.live``)."""

    def start_watching(self) -> None:
        """Start (idempotent) indexing changes as they happen."""


class SearcherFactory(Protocol):
    """Opens the searcher of a folder with an embedding spec; ``chunking`` is passed only
    when the settings give one (else the index's own chunking applies)."""

    def __call__(self, folder: str, embedding: str | None, /, **options: Any) -> Searcher: ...


def _open_real(folder: str, embedding: str | None, /, **options: Any) -> Searcher:
    from kbgraph.retrieval import KnowledgeBase

    return KnowledgeBase(
        folder,
        embedding=embedding,
        chunking=options.get("chunking"),
        store=options.get("store"),
        read_store=options.get("read_store"),
        index_dir=options.get("index_dir"),
    )


Key = tuple[str, str | None, str | None, str | None, str | None, str | None]


@shown_as("kbgraph.graphs")
class SearcherRegistry:
    """Open searchers by (absolute folder, embedding spec, chunking, store: None for the
    folder index, else a PostgreSQL URL, read_store: a standby's URL or None, index_dir:
    where the folder index lives, None for ``<folder>/.kbgraph``); ``factory``
    opens a missing one (default:
    ``KnowledgeBase``; in a process that serves requests, only a store the server was
    started with, :func:`~kbgraph.graphs._served.check_stores`). :meth:`lock` serialises
    use of a searcher that is not safe for concurrent searches."""

    def __init__(self, factory: SearcherFactory | None = None) -> None:
        self._factory = factory or _open_real
        self._open: dict[Key, Searcher] = {}
        self._locks: dict[Key, threading.RLock] = {}
        self._guard = threading.Lock()
        self._embeddings: dict[str, Embeddings] = {}
        self._imported: dict[str, object] = {}

    def imported(self, ref: str, load: Callable[[str], object]) -> object:
        """The object an import path names (a LangChain store of a JSON context), loaded by
        ``load`` once: a function that builds a store is called once per registry."""
        with self._guard:
            found = self._imported.get(ref)
        if found is None:
            found = load(ref)
            with self._guard:
                found = self._imported.setdefault(ref, found)
        return found

    def embeddings(self, spec: str | None) -> Embeddings | None:
        """The embedding model of ``spec`` (``auto``: the local model; ``None``: none),
        loaded once: it scores the documents of LangChain stores that give no similarity
        of their own (see ``kbgraph.graphs._langchain_kb.LangChainSearcher``)."""
        if spec is None:
            return None
        check_model("embedding", spec)
        key = "local" if spec.strip().lower() == "auto" else spec.strip()
        with self._guard:
            model = self._embeddings.get(key)
        if model is None:
            from kbgraph.retrieval._internal import resolve_embeddings

            model = resolve_embeddings(key)
            with self._guard:
                model = self._embeddings.setdefault(key, model)
        return model

    @staticmethod
    def key(
        folder: str | Path,
        embedding: str | None,
        chunking: ChunkConfig | None = None,
        store: str | None = None,
        read_store: str | None = None,
        index_dir: str | None = None,
    ) -> Key:
        chunks = chunking.model_dump_json() if chunking is not None else None
        folder_key = str(Path(folder).expanduser().resolve())
        return (folder_key, embedding, chunks, store, read_store, index_dir)

    def open(
        self,
        folder: str | Path,
        embedding: str | None,
        chunking: ChunkConfig | None = None,
        store: str | None = None,
        read_store: str | None = None,
        index_dir: str | None = None,
    ) -> Searcher:
        # Before anything is opened: a store is a connection to wherever its URL says, and
        # an embedding spec may name a server or a model file.
        check_stores(store, read_store)
        check_model("embedding", embedding)
        key = self.key(folder, embedding, chunking, store, read_store, index_dir)
        with self._guard:
            lock = self._locks.setdefault(key, threading.RLock())
        # Opening loads the embedding model: hold only this key's lock meanwhile.
        with lock:
            searcher = self._open.get(key)
            if searcher is None:
                given = {
                    "chunking": chunking,
                    "store": store,
                    "read_store": read_store,
                    "index_dir": index_dir,
                }
                options = {name: value for name, value in given.items() if value is not None}
                searcher = self._factory(key[0], key[1], **options)
                self._open[key] = searcher
            return searcher

    @contextmanager
    def lock(
        self,
        folder: str | Path,
        embedding: str | None,
        chunking: ChunkConfig | None = None,
        store: str | None = None,
        read_store: str | None = None,
        index_dir: str | None = None,
    ) -> Iterator[Searcher]:
        """The searcher, held exclusively for the ``with`` block unless it says its
        searches may run at once (``concurrent_searches``: a ``KnowledgeBase``, whose
        PostgreSQL searches each take a pooled connection). Before, every graph run of
        ``langgraph dev`` on one knowledge base waited for the others' searches."""
        searcher = self.open(folder, embedding, chunking, store, read_store, index_dir)
        if getattr(searcher, "concurrent_searches", False) is True:
            yield searcher
            return
        with self._locks[self.key(folder, embedding, chunking, store, read_store, index_dir)]:
            yield searcher

    def register(
        self,
        folder: str | Path,
        embedding: str | None,
        searcher: Searcher,
        store: str | None = None,
    ) -> None:
        """Use ``searcher`` for this folder, embedding and store (tests, custom backends)."""
        key = self.key(folder, embedding, store=store)
        with self._guard:
            self._locks.setdefault(key, threading.RLock())
            self._open[key] = searcher

    def close_all(self) -> None:
        with self._guard:
            searchers, self._open = list(self._open.values()), {}
        for searcher in searchers:
            searcher.close()


default_registry = SearcherRegistry()


def open_knowledge_base(
    folder: str | Path,
    embedding: str | None = "auto",
    store: str | None = None,
    *,
    index_dir: str | Path | None = None,
) -> Searcher:
    """The process-wide cached searcher of ``folder`` with ``embedding`` (``auto``: the
    model the index was built with, the local model for a new index) in ``store``;
    ``index_dir``: where its folder index lives (None: ``<folder>/.kbgraph``)."""
    where = None if index_dir is None else str(Path(index_dir).expanduser().resolve())
    return default_registry.open(folder, embedding, store=store, index_dir=where)


__all__ = [
    "Searcher",
    "SearcherFactory",
    "SearcherRegistry",
    "Watchable",
    "default_registry",
    "open_knowledge_base",
]
