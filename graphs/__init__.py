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

from kbgraph.layers import imported_as_kbgraph

# Loaded as the top-level 'retrieval' & co. (a second copy): refuse, loudly, and before
# any submodule loads, so that a refused import leaves no 'retrieval.*' module behind.
imported_as_kbgraph(__name__)

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._extractive import extractive_text
    from .models import resolve_chat_model
    from .nodes import NodeDeps, Reranker, fit_sources, question_of, run_outage
    from .searcher import Searcher, SearcherRegistry, default_registry, open_knowledge_base
    from .settings import (
        AnswerCheckSettings,
        KnowledgeBaseSpec,
        RagSettings,
        settings_from_context,
        settings_from_runtime,
    )
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
    from .tool import make_rag_search, rag_search
    from .turns import TURN_KEY, TurnMarker, mark_answer, marker_of, turn_marker

# Each name loads its module on first use: importing one module of this package (the
# evaluators import ``kbgraph.graphs.structured``) must not compile the subgraph.
_LAZY = {
    # What the ready agents (kbgraph.agents, a layer above) build their answers with.
    "extractive_text": "._extractive",
    "fit_sources": ".nodes",
    "question_of": ".nodes",
    "run_outage": ".nodes",
    "resolve_chat_model": ".models",
    "NodeDeps": ".nodes",
    "Reranker": ".nodes",
    "Searcher": ".searcher",
    "SearcherRegistry": ".searcher",
    "default_registry": ".searcher",
    "open_knowledge_base": ".searcher",
    "AnswerCheckSettings": ".settings",
    "KnowledgeBaseSpec": ".settings",
    "RagSettings": ".settings",
    "settings_from_context": ".settings",
    "settings_from_runtime": ".settings",
    "Candidate": ".state",
    "Citation": ".state",
    "RagGrounding": ".state",
    "RagInput": ".state",
    "RagOutput": ".state",
    "RagScope": ".state",
    "RagState": ".state",
    "RetrievalDebug": ".state",
    "NODE_ORDER": ".subgraph",
    "build_rag_graph": ".subgraph",
    "rag_graph": ".subgraph",
    "make_rag_search": ".tool",
    "rag_search": ".tool",
    "TURN_KEY": ".turns",
    "TurnMarker": ".turns",
    "mark_answer": ".turns",
    "marker_of": ".turns",
    "turn_marker": ".turns",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "NODE_ORDER",
    "TURN_KEY",
    "AnswerCheckSettings",
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
    "Searcher",
    "SearcherRegistry",
    "TurnMarker",
    "build_rag_graph",
    "default_registry",
    "extractive_text",
    "fit_sources",
    "make_rag_search",
    "mark_answer",
    "marker_of",
    "open_knowledge_base",
    "question_of",
    "rag_graph",
    "rag_search",
    "resolve_chat_model",
    "run_outage",
    "settings_from_context",
    "settings_from_runtime",
    "turn_marker",
]
