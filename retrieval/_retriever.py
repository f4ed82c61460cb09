"""A knowledge base as a LangChain ``BaseRetriever``, for LCEL chains and any code that
takes a retriever:

    retriever = KnowledgeBase("docs/").as_retriever(top_k=4, mode="hybrid")
    docs = retriever.invoke("how do retries back off?")       # or await .ainvoke(...)
    docs[0].metadata  # {"source", "line_start", "line_end", "chunk_id", "score", "section",
                      #  "page", "ranks"}

``k`` is LangChain's name for the number of documents: ``as_retriever(top_k=4)``,
``as_retriever(k=4)`` and LangChain's ``as_retriever(search_kwargs={"k": 4})`` all set it
(``search_kwargs`` also takes ``mode`` and ``filters``, or ``filter``: a ``SearchFilters``
or a dict of its fields; ``search_type`` may be ``"similarity"``, the only one there is);
``invoke(query, k=..., mode=..., filters=...)`` overrides the retriever's own values for
one call, as LangChain's standard retriever tests expect. The async path runs the search
in a worker thread (:meth:`KnowledgeBase.asearch`), so the event loop never waits on disk
or on the embedding model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from kbgraph.errors import ConfigError

from ._config import SearchMode
from ._filters import SearchFilters
from ._records import SearchResult

_OPTIONS = ("k", "mode", "filters")
# LangChain's VectorStore.as_retriever(search_kwargs=...) keys that mean something here.
_SEARCH_KWARGS = ("k", "mode", "filters", "filter")
MAX_K = 1000  # SearchConfig.top_k's bound


class Searchable(Protocol):
    """What the retriever needs of a knowledge base: its searches (``KnowledgeBase`` has
    them; so may any object that answers the same way)."""

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: SearchMode | None = None,
        filters: SearchFilters | None = None,
    ) -> list[SearchResult]: ...

    async def asearch(
        self,
        query: str,
        *,
        top_k: int = 5,
        mode: SearchMode | None = None,
        filters: SearchFilters | None = None,
    ) -> list[SearchResult]: ...


def document_of(result: SearchResult) -> Document:
    """One search result as a LangChain ``Document``: the chunk's exact text, and where it
    came from in the metadata (camelCase keys, as in ``kbgraph search --json``)."""
    return Document(
        id=result.chunk.id,
        page_content=result.chunk.text,
        metadata={k: v for k, v in result.to_dict().items() if k != "text"},
    )


class KnowledgeBaseRetriever(BaseRetriever):
    """Searches one :class:`~kbgraph.retrieval.KnowledgeBase` (indexed beforehand: the
    retriever never indexes). ``k`` results, ``mode`` (``None``: hybrid when the index has
    vectors, else bm25) and ``filters`` as in ``KnowledgeBase.search``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    knowledge_base: Any = Field(description="the KnowledgeBase searched")
    k: int = Field(default=5, ge=1, le=MAX_K, strict=True)
    mode: SearchMode | None = None
    filters: SearchFilters | None = None

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(kwargs) - set(_OPTIONS))
        if unknown:
            raise ConfigError(
                f"KnowledgeBaseRetriever got unknown search options {unknown}; allowed: "
                f"{', '.join(_OPTIONS)}"
            )
        return {
            "top_k": check_k(kwargs.get("k", self.k)),
            "mode": kwargs.get("mode", self.mode),
            "filters": kwargs.get("filters", self.filters),
        }

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        kb: Searchable = self.knowledge_base
        return [document_of(r) for r in kb.search(query, **self._options(kwargs))]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        kb: Searchable = self.knowledge_base
        results = await kb.asearch(query, **self._options(kwargs))
        return [document_of(r) for r in results]


def check_k(k: object) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise ConfigError(f"k is {k!r}; it must be a whole number from 1 to {MAX_K}, e.g. 5")
    return k


def retriever_settings(
    *,
    top_k: int | None,
    k: int | None,
    mode: SearchMode | None,
    filters: SearchFilters | Mapping[str, Any] | None,
    search_type: str,
    search_kwargs: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """``k``, ``mode`` and ``filters`` of a retriever from ``as_retriever``'s arguments in
    kbgraph's words or in LangChain's (``VectorStore.as_retriever``). A value given twice
    must agree; a key this retriever does not have is a ``ConfigError`` naming those it has
    (``fetch_k`` and ``lambda_mult`` are MMR's, ``score_threshold`` a relevance score's)."""
    if search_type != "similarity":
        raise ConfigError(
            f"search_type {search_type!r} is not supported by a KnowledgeBase retriever: it "
            "ranks by mode (vector, bm25 or hybrid); leave search_type out (or pass "
            "'similarity') and choose mode= instead"
        )
    if not isinstance(search_kwargs, Mapping | None):
        raise ConfigError(f"search_kwargs must be a dict, got {type(search_kwargs).__name__}")
    extra = dict(search_kwargs or {})
    unknown = sorted(set(extra) - set(_SEARCH_KWARGS), key=str)
    if unknown:
        raise ConfigError(
            f"search_kwargs has keys a KnowledgeBase retriever does not know: {unknown}; "
            f"allowed: {', '.join(_SEARCH_KWARGS)} (filter: a SearchFilters or a dict of "
            "paths and kinds)"
        )
    if "filter" in extra and "filters" in extra:
        raise ConfigError("search_kwargs has both filter and filters; pass one of them")
    if "filter" in extra:
        extra["filters"] = extra.pop("filter")
    given = {
        "k": _agreeing("k", [("top_k", top_k), ("k", k), ("search_kwargs['k']", extra.get("k"))]),
        "mode": _agreeing("mode", [("mode", mode), ("search_kwargs['mode']", extra.get("mode"))]),
        "filters": _agreeing(
            "filters", [("filters", filters), ("search_kwargs['filters']", extra.get("filters"))]
        ),
    }
    out: dict[str, Any] = {"k": check_k(given["k"]) if given["k"] is not None else 5}
    out["mode"] = given["mode"]
    out["filters"] = _filters(given["filters"])
    return out


def _agreeing(name: str, sources: list[tuple[str, Any]]) -> Any:
    """The one value set among ``sources`` (None when none is); two different values are
    a ``ConfigError`` naming where each came from."""
    set_ = [(where, value) for where, value in sources if value is not None]
    values = {repr(value) for _where, value in set_}
    if len(values) > 1:
        listed = ", ".join(f"{where}={value!r}" for where, value in set_)
        raise ConfigError(
            f"{name} is given more than once with different values ({listed}); pass it once"
        )
    return set_[0][1] if set_ else None


def _filters(value: object) -> SearchFilters | None:
    if value is None or isinstance(value, SearchFilters):
        return value
    if isinstance(value, Mapping):
        try:
            return SearchFilters.model_validate(dict(value))
        except ConfigError as exc:  # a vector store's metadata filter, {"source": ...}
            raise ConfigError(
                f"{exc}; a document's source is matched by paths (globs or folder "
                "prefixes, e.g. {'paths': ['docs/*.md']}), its kind by kinds"
            ) from None
    raise ConfigError(
        f"filters must be a SearchFilters or a dict of its fields (paths, kinds), got "
        f"{type(value).__name__}"
    )


__all__ = ["KnowledgeBaseRetriever", "document_of", "retriever_settings"]
