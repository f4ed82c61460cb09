"""A LangChain vector store named by import path in a JSON context (``langgraph dev``):
``{"name": "wiki", "retriever": "tests.support.lc_store:wiki"}``."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from kbgraph.testing import FakeEmbeddings


def wiki() -> InMemoryVectorStore:
    store = InMemoryVectorStore(FakeEmbeddings())
    store.add_documents(
        [
            Document(
                "The proxy is configured with the HTTPS_PROXY variable.",
                metadata={"source": "wiki/proxy.md", "line_start": 3, "line_end": 4},
            ),
            Document("Zeppelins are not supported.", metadata={"source": "wiki/faq.md"}),
        ]
    )
    return store
