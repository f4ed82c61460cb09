"""The retrieval subgraph, wired:

    START → decide_retrieve ─(skip)→ END
                 └→ select_scope → rewrite_query → retrieve → rerank → build_context
                                       ↑                                     ↓
                                       └──(not grounded, attempts left)── grounding_check → END

``build_rag_graph()`` compiles it without a checkpointer (a parent agent, or the LangGraph
server, brings its own); ``rag_graph`` is the default instance that ``langgraph.json``
exports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from ._langchain_kb import ATTACHED, attached_spec, check_source
from ._nodes import NodeDeps, NodeFn
from ._nodes.build_context import build_context
from ._nodes.decide_retrieve import decide_retrieve, route_after_decide
from ._nodes.grounding_check import grounding_check, route_after_grounding
from ._nodes.rerank import rerank
from ._nodes.retrieve import retrieve
from ._nodes.rewrite_query import rewrite_query
from ._nodes.select_scope import select_scope
from ._recording import recording
from ._rerankers import as_reranker
from ._searcher import SearcherRegistry, default_registry
from ._settings import RagSettings, settings_from_runtime, with_knowledge_bases
from ._state import RagInput, RagOutput, RagState

NODE_ORDER = (
    "decide_retrieve",
    "select_scope",
    "rewrite_query",
    "retrieve",
    "rerank",
    "build_context",
    "grounding_check",
)


def _bind(fn: NodeFn, deps: NodeDeps, attached: list[dict[str, Any]]) -> Any:
    """A ``(state, runtime)`` node calling ``fn`` with ``deps``; the graph's own knowledge
    base objects (``attached``: their specs) join the run's settings."""

    def node(state: RagState, runtime: Runtime[RagSettings]) -> dict[str, Any]:
        if attached and runtime is not None:
            settings = with_knowledge_bases(settings_from_runtime(runtime), attached)
            runtime = runtime.override(context=settings)
        return fn(state, runtime, deps)

    node.__name__ = fn.__name__
    node.__doc__ = fn.__doc__
    return node


_ENDS_RUN: dict[Any, Any] = {
    decide_retrieve: route_after_decide,
    grounding_check: route_after_grounding,
}


def _recorded(fn: Any, node: Any, graph: str) -> Any:
    """The nodes after which a run may end record it (``RagSettings.record_runs``)."""
    route = _ENDS_RUN.get(fn)
    if route is None:
        return node
    return recording(node, graph, ends=lambda state: route(state) == END)


def build_rag_graph(
    *,
    chat_model: BaseChatModel | None = None,
    registry: SearcherRegistry | None = None,
    reranker: object = None,
    checkpointer: Checkpointer = None,
    name: str = "kbgraph_rag",
    knowledge_bases: Mapping[str, object] | None = None,
) -> CompiledStateGraph[RagState, RagSettings, RagInput, RagOutput]:
    """The compiled subgraph. ``chat_model`` overrides ``RagSettings.chat_model`` (tests pass
    a :class:`kbgraph.testing.ScriptedChatModel`); ``registry`` supplies the searchers
    (default: the process-wide cache of ``KnowledgeBase`` objects); ``reranker`` serves
    ``rerank="cross_encoder"``: a cross-encoder (``.predict(pairs)``), a LangChain
    ``BaseDocumentCompressor``, a function ``(query, texts) -> scores``, a
    ``"cross_encoder:<folder>"`` spec or a :class:`Reranker` (see
    :mod:`kbgraph.graphs._rerankers`; anything else is a ``ConfigError`` here);
    ``checkpointer`` keeps its state between runs of a thread when it runs on its own
    (attached to a parent, it uses the parent's). ``knowledge_bases`` maps names to LangChain
    ``VectorStore`` / ``BaseRetriever`` objects searched next to the run's configured
    knowledge bases (anything else is a ``ConfigError`` here; see
    :mod:`kbgraph.graphs._langchain_kb`)."""
    sources = {kb: check_source(value, kb) for kb, value in (knowledge_bases or {}).items()}
    attached = [attached_spec(kb) for kb in sources]
    deps = NodeDeps(
        chat_model=chat_model,
        registry=registry or default_registry,
        reranker=as_reranker(reranker),
        sources=sources,
    )
    graph = StateGraph(
        RagState, context_schema=RagSettings, input_schema=RagInput, output_schema=RagOutput
    )
    for fn in (decide_retrieve, select_scope, rewrite_query, retrieve, rerank, build_context,
               grounding_check):  # fmt: skip
        graph.add_node(fn.__name__, _recorded(fn, _bind(fn, deps, attached), name))
    graph.add_edge(START, "decide_retrieve")
    graph.add_conditional_edges("decide_retrieve", route_after_decide, ["select_scope", END])
    graph.add_edge("select_scope", "rewrite_query")
    graph.add_edge("rewrite_query", "retrieve")
    graph.add_edge("retrieve", "rerank")
    graph.add_edge("rerank", "build_context")
    graph.add_edge("build_context", "grounding_check")
    graph.add_conditional_edges("grounding_check", route_after_grounding, ["rewrite_query", END])
    compiled = graph.compile(checkpointer=checkpointer, name=name)
    if not sources:
        return compiled
    # Names only (the objects are in the nodes' deps): rag_search lists and narrows them.
    return compiled.with_config(metadata={ATTACHED: list(sources)})


rag_graph = build_rag_graph()

__all__ = ["NODE_ORDER", "build_rag_graph", "rag_graph"]
