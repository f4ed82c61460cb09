"""LangChain ``VectorStore`` and ``BaseRetriever`` objects as knowledge bases of the subgraph
and the ``rag_search`` tool, next to folder indexes.

In-process objects are passed to :func:`~kbgraph.graphs._subgraph.build_rag_graph`
(``knowledge_bases={"docs": vectorstore}``), which hands them to its nodes in their
dependencies (``NodeDeps.sources``: nothing global, released with the graph); a JSON context
(``langgraph dev``, Studio) names one by import path, ``{"name": "docs", "retriever":
"my_pkg.kb:vectorstore"}``, where the attribute is the object or a function of no arguments
that returns it (imported once per searcher registry). kbgraph then fuses
their rankings with the others, reranks, budgets and numbers the context as for a folder.

A store knows only what its documents' metadata says: the citation's source is
``metadata["source"]`` (else ``file_path``, ``path`` or ``url``), its lines
``line_start``/``line_end`` (or ``start_line``/``end_line``) when present; the camelCase
``lineStart``/``lineEnd``/``chunkId`` of kbgraph before 0.2 are read with a
``DeprecationWarning``. Line numbers that
are unknown are 0 in the chunk (lines are 1-based), ``None`` in its candidate and citation
(Retrieve's ``candidate_of``), and rendered "lines unknown", never invented.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from kbgraph._base.camel import snake_keys
from kbgraph.errors import ConfigError, KbgraphError
from kbgraph.retrieval import Chunk, SearchConfig, SearchFilters, SearchResult
from kbgraph.retrieval._internal import file_kind

from ._served import check_retriever

OBJECT_PREFIX = "object:"
ATTACHED = "kbgraph_knowledge_bases"
"""The metadata key under which a compiled graph names its own knowledge base objects (the
tool reads the names; the objects themselves reach the nodes in ``NodeDeps.sources``)."""
LINES_UNKNOWN = 0
SOURCE_KEYS = ("source", "file_path", "path", "url")
START_KEYS = ("line_start", "start_line")
END_KEYS = ("line_end", "end_line")
FILTERED_OVERFETCH = 4  # a store filters nothing of ours: fetch more, keep the allowed
LangChainSource = VectorStore | BaseRetriever


def check_source(value: object, name: str) -> LangChainSource:
    """``value`` when it is a LangChain ``VectorStore`` or ``BaseRetriever``, else a
    ``ConfigError`` saying what a knowledge base object may be."""
    if isinstance(value, VectorStore | BaseRetriever):
        return value
    raise ConfigError(
        f"knowledge base {name!r} is a {type(value).__name__}; a knowledge base object must "
        "be a LangChain VectorStore or BaseRetriever (a folder goes into "
        "RagSettings.knowledge_bases as a path)"
    )


def attached_spec(name: str) -> dict[str, str]:
    """The knowledge base spec of an object given to ``build_rag_graph`` under ``name``: the
    run's settings name it, and the nodes find the object in their dependencies."""
    return {"name": name, "retriever": f"{OBJECT_PREFIX}{name}"}


def resolve_source(
    ref: str, attached: Mapping[str, LangChainSource], registry: SourceCache
) -> LangChainSource:
    """The object a spec's ``retriever`` names: one the graph was built with
    (``object:<name>``), or an import path ``package.module:attribute`` (an object, or a
    function of no arguments returning one; imported once per registry). In a process that
    serves requests, only an import path the server was started with
    (:func:`~kbgraph.graphs._served.check_retriever`)."""
    if ref.startswith(OBJECT_PREFIX):
        found = attached.get(ref.removeprefix(OBJECT_PREFIX))
        if found is None:
            raise ConfigError(
                f"knowledge base object {ref!r} belongs to another graph; pass it to "
                "build_rag_graph(knowledge_bases=...) of this one, or name it by import path "
                "('package.module:attribute')"
            )
        return found
    # Before the import: importing a module runs it, and the attribute may be called.
    check_retriever(ref)
    loaded = registry.imported(ref, lambda path: check_source(_import(path), path))
    return check_source(loaded, ref)


class SourceCache(Protocol):
    def imported(self, ref: str, load: Callable[[str], object]) -> object: ...


def _import(ref: str) -> object:
    """The object ``ref`` names, or ``ConfigError`` saying why not. The module and the
    function that makes the store are anyone's code, and may raise anything: that is a
    failure of this knowledge base (recorded by the run, which goes on), never of the turn."""
    module_name, sep, attribute = ref.partition(":")
    if not sep or not module_name.strip() or not attribute.strip():
        raise ConfigError(
            f"retriever {ref!r} is not an import path; write 'package.module:attribute' "
            "(the attribute is a VectorStore, a BaseRetriever or a function returning one)"
        )
    try:
        value: object = importlib.import_module(module_name.strip())
        for part in attribute.strip().split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"retriever {ref!r} cannot be imported: {exc}") from exc
    except Exception as exc:  # the module's own code failed while it was imported
        raise ConfigError(
            f"retriever {ref!r} cannot be imported: importing {module_name.strip()} raised "
            f"{_failure(exc)}; fix the module, or name a store that imports"
        ) from exc
    if callable(value) and not isinstance(value, VectorStore | BaseRetriever):
        try:
            value = value()
        except KbgraphError:  # says what is wrong already
            raise
        except Exception as exc:  # the factory's own failure (a database down, a bug)
            raise ConfigError(
                f"retriever {ref!r} made no store: {attribute.strip()}() raised "
                f"{_failure(exc)}; fix the function, or name the store object itself"
            ) from exc
    return value


def _failure(exc: BaseException) -> str:
    """``Type: message`` of a third party's exception, on one line (a driver's message
    spreads over lines; a recorded error is one line)."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def document_chunk(doc: Document, name: str) -> Chunk:
    """A retrieved document as a chunk: what its metadata offers, lines 0 when unknown."""
    meta = snake_keys(doc.metadata or {}, f"a document of the LangChain knowledge base {name!r}")
    source = next((str(meta[k]) for k in SOURCE_KEYS if meta.get(k)), name)
    start, end = _line(meta, START_KEYS), _line(meta, END_KEYS)
    if start is None or end is None or end < start:
        start = end = LINES_UNKNOWN
    return Chunk(
        id=_chunk_id(doc, meta, source),
        text=doc.page_content,
        source=source,
        line_start=start,
        line_end=end,
        byte_start=0,
        byte_end=0,
        section=str(meta["section"]) if meta.get("section") else None,
        page=meta["page"] if isinstance(meta.get("page"), int) else None,
    )


def _line(meta: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return None


def _chunk_id(doc: Document, meta: Mapping[str, Any], source: str) -> str:
    """The store's own id (``Document.id`` or ``metadata["chunk_id"]``), else a hash of the
    source and the text: stable across runs, so fusion deduplicates it."""
    given = doc.id or meta.get("chunk_id")
    if given:
        return str(given)
    digest = hashlib.sha256(f"{source}\0{doc.page_content}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


class LangChainSearcher:
    """A :class:`~kbgraph.graphs._searcher.Searcher` over a VectorStore or a BaseRetriever.

    A store's list is ``vector`` when its scores are similarities: the store's own relevance
    scores (``similarity_search_with_relevance_scores``, 0..1), or, for a store without them
    (``InMemoryVectorStore`` and others answer ``NotImplementedError``; the raw scores of
    ``similarity_search_with_score`` are distances for some stores and similarities for
    others), the cosine of the query and each document under ``embeddings``, the subgraph's
    own embedding model. Without either, and for a retriever, the list is ``retriever``:
    ordered as the store answered, scored by rank, and never read as a similarity (the
    grounding check's vector floor does not count it)."""

    def __init__(
        self, source: LangChainSource, name: str, embeddings: Embeddings | None = None
    ) -> None:
        self.source, self.name, self.embeddings = source, name, embeddings
        self.lists: tuple[str, ...] = (
            ("vector",) if isinstance(source, VectorStore) else ("retriever",)
        )

    def ensure_fresh(self, **_: Any) -> None:
        """The store is kept by its owner: nothing to index here."""
        return None

    def rank(
        self, query: str, ranker: str, *, limit: int, filters: SearchFilters | None = None
    ) -> list[SearchResult]:
        if ranker not in self.lists:
            return []
        wanted = limit * (FILTERED_OVERFETCH if filters and not filters.is_empty() else 1)
        pairs, name = self._fetch(query, wanted)
        results: list[SearchResult] = []
        for doc, score in pairs:
            chunk = document_chunk(doc, self.name)
            if filters is not None and not filters.allows(chunk.source, file_kind(chunk.source)):
                continue
            rank = len(results) + 1
            results.append(SearchResult(chunk, score, {name: rank}, {name: score}))
        return results[:limit]

    def _fetch(self, query: str, k: int) -> tuple[list[tuple[Document, float]], str]:
        """The documents with their scores, best first, and the name of that list."""
        if not isinstance(self.source, VectorStore):
            docs = self.source.invoke(query)[:k]
            return [(doc, _doc_score(doc, i)) for i, doc in enumerate(docs, 1)], "retriever"
        try:
            scored = self.source.similarity_search_with_relevance_scores(query, k=k)
            return [(doc, float(score)) for doc, score in scored], "vector"
        except NotImplementedError:
            docs = self.source.similarity_search(query, k=k)
        if self.embeddings is None or not docs:
            return [(doc, _doc_score(doc, i)) for i, doc in enumerate(docs, 1)], "retriever"
        similar = cosines(self.embeddings, query, [doc.page_content for doc in docs])
        order = sorted(range(len(docs)), key=lambda i: -similar[i])
        return [(docs[i], similar[i]) for i in order], "vector"

    def search(
        self,
        query: str,
        *,
        config: SearchConfig | None = None,
        filters: SearchFilters | None = None,
    ) -> list[SearchResult]:
        top_k = (config or SearchConfig()).top_k
        return self.rank(query, self.lists[0], limit=top_k, filters=filters)

    def close(self) -> None:
        """The store is its owner's to close."""


def cosines(embeddings: Embeddings, query: str, texts: list[str]) -> list[float]:
    """The cosine similarity of the query and each text under ``embeddings``."""
    q = np.asarray(embeddings.embed_query(query), dtype=np.float32)
    m = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
    norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
    return [float(v) for v in (m @ q) / np.where(norms > 0, norms, 1.0)]


def _doc_score(doc: Document, rank: int) -> float:
    """A retriever's own score when its metadata has one, else the reciprocal rank."""
    meta = doc.metadata or {}
    for key in ("relevance_score", "score"):
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return 1.0 / rank


__all__ = [
    "ATTACHED",
    "LINES_UNKNOWN",
    "LangChainSearcher",
    "LangChainSource",
    "SourceCache",
    "attached_spec",
    "check_source",
    "cosines",
    "document_chunk",
    "resolve_source",
]
