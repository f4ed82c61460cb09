"""kbgraph's LangGraph layer: the agentic retrieval subgraph, its state and settings. For
example::

    from kbgraph.graphs import build_rag_graph, RagSettings
    graph = build_rag_graph()
    out = graph.invoke(
        {"messages": [("user", "How do I configure retries?")]},
        context=RagSettings(knowledge_bases=[{"name": "docs", "folder": "examples/docs"}]),
    )
    print(out["rag_context"], out["rag_grounded"])
"""

from __future__ import annotations

from kbgraph._layers import imported_as_kbgraph, lazy_imports

# Loaded as the top-level 'retrieval' & co. (a second copy): refuse, loudly, and before
# any submodule loads, so that a refused import leaves no 'retrieval.*' module behind.
imported_as_kbgraph(__name__)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._chat_models import ChatGGUF, GGUFOptions
    from ._citations import extract_citations, inject_context
    from ._http_app import http_app
    from ._models import resolve_chat_model
    from ._nodes import NodeDeps, Reranker
    from ._rerankers import CallableReranker, CompressorReranker, CrossEncoderReranker, as_reranker
    from ._searcher import Searcher, SearcherRegistry, default_registry, open_knowledge_base
    from ._settings import (
        AnswerCheckSettings,
        AnswerPolicy,
        KnowledgeBaseSpec,
        RagSettings,
        RerankMode,
        settings_from_context,
        settings_from_runtime,
    )
    from ._state import (
        Candidate,
        Citation,
        RagGrounding,
        RagInput,
        RagOutput,
        RagScope,
        RagState,
        RetrievalDebug,
    )
    from ._subgraph import NODE_ORDER, build_rag_graph, rag_graph
    from ._tool import RagSearchArtifact, make_rag_search, rag_search, tool_runtime
    from ._turns import TURN_KEY, TurnMarker, mark_answer, marker_of, turn_marker

# Each name loads its module on first use: importing one module of this package (the
# evaluators import ``kbgraph.graphs._structured``) must not compile the subgraph.
__getattr__ = lazy_imports(globals())


__all__ = [
    "NODE_ORDER",
    "TURN_KEY",
    "AnswerCheckSettings",
    "AnswerPolicy",
    "CallableReranker",
    "Candidate",
    "ChatGGUF",
    "Citation",
    "CompressorReranker",
    "CrossEncoderReranker",
    "GGUFOptions",
    "KnowledgeBaseSpec",
    "NodeDeps",
    "RagGrounding",
    "RagInput",
    "RagOutput",
    "RagScope",
    "RagSearchArtifact",
    "RagSettings",
    "RagState",
    "RerankMode",
    "Reranker",
    "RetrievalDebug",
    "Searcher",
    "SearcherRegistry",
    "TurnMarker",
    "as_reranker",
    "build_rag_graph",
    "default_registry",
    "extract_citations",
    "http_app",
    "inject_context",
    "make_rag_search",
    "mark_answer",
    "marker_of",
    "open_knowledge_base",
    "rag_graph",
    "rag_search",
    "resolve_chat_model",
    "settings_from_context",
    "settings_from_runtime",
    "tool_runtime",
    "turn_marker",
]
