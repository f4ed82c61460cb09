"""kbgraph's LangGraph layer: the agentic retrieval subgraph, its state and settings.

from kbgraph.graphs import build_rag_graph, RagSettings
graph = build_rag_graph()
out = graph.invoke(
    {"messages": [("user", "How do I configure retries?")]},
    context=RagSettings(knowledge_bases=[{"name": "docs", "folder": "examples/docs"}]),
)
print(out["rag_context"], out["rag_grounded"])
"""

from __future__ import annotations

from .models import resolve_chat_model
from .nodes import NodeDeps, Reranker
from .searcher import Searcher, SearcherRegistry, default_registry, open_knowledge_base
from .settings import KnowledgeBaseSpec, RagSettings, settings_from_context, settings_from_runtime
from .state import (
    Candidate,
    Citation,
    RagGrounding,
    RagInput,
    RagOutput,
    RagScope,
    RagState,
    RetrievalDebug,
)
from .subgraph import NODE_ORDER, build_rag_graph, rag_graph
from .testing import ScriptedChatModel
from .tool import make_rag_search, rag_search
from .turns import TURN_KEY, TurnMarker, mark_answer, marker_of, turn_marker

__all__ = [
    "NODE_ORDER",
    "TURN_KEY",
    "Candidate",
    "Citation",
    "KnowledgeBaseSpec",
    "NodeDeps",
    "RagGrounding",
    "RagInput",
    "RagOutput",
    "RagScope",
    "RagSettings",
    "RagState",
    "Reranker",
    "RetrievalDebug",
    "ScriptedChatModel",
    "Searcher",
    "SearcherRegistry",
    "TurnMarker",
    "build_rag_graph",
    "default_registry",
    "make_rag_search",
    "mark_answer",
    "marker_of",
    "open_knowledge_base",
    "rag_graph",
    "rag_search",
    "resolve_chat_model",
    "settings_from_context",
    "settings_from_runtime",
    "turn_marker",
]
