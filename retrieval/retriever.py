"""A knowledge base as a LangChain ``BaseRetriever``, for LCEL chains and any code that
takes a retriever:

    retriever = KnowledgeBase("docs/").as_retriever(top_k=4, mode="hybrid")
    docs = retriever.invoke("how do retries back off?")       # or await .ainvoke(...)
    docs[0].metadata  # {"source", "lineStart", "lineEnd", "chunkId", "score", "section",
                      #  "page", "ranks"}

``k`` is LangChain's name for the number of documents (``as_retriever(top_k=...)`` sets
it); ``invoke(query, k=..., mode=..., filters=...)`` overrides the retriever's own values for
one call, as LangChain's standard retriever tests expect. The async path runs the search
in a worker thread (:meth:`KnowledgeBase.asearch`), so the event loop never waits on disk
or on the embedding model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from kbgraph.errors import ConfigError

from .config import SearchMode
from .filters import SearchFilters
from .records import SearchResult

if TYPE_CHECKING:
    from .kb import KnowledgeBase

_OPTIONS = ("k", "mode", "filters")


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
    k: int = Field(default=5, ge=1)
    mode: SearchMode | None = None
    filters: SearchFilters | None = None

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(kwargs) - set(_OPTIONS))
        if unknown:
            raise ConfigError(
                f"KnowledgeBaseRetriever got unknown search options {unknown}; allowed: "
                f"{', '.join(_OPTIONS)}"
            )
        k = kwargs.get("k", self.k)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigError(f"k is {k!r}; it must be a whole number of 1 or more")
        return {
            "top_k": k,
            "mode": kwargs.get("mode", self.mode),
            "filters": kwargs.get("filters", self.filters),
        }

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        kb: KnowledgeBase = self.knowledge_base
        return [document_of(r) for r in kb.search(query, **self._options(kwargs))]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        kb: KnowledgeBase = self.knowledge_base
        results = await kb.asearch(query, **self._options(kwargs))
        return [document_of(r) for r in results]


__all__ = ["KnowledgeBaseRetriever", "document_of"]
