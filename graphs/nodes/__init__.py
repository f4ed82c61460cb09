"""The seven nodes of the retrieval subgraph, one module each (``decide_retrieve``,
``select_scope``, ``rewrite_query``, ``retrieve``, ``rerank``, ``build_context``,
``grounding_check``), each defining a node function of the same name.

Every node takes ``(state, runtime, deps)`` (BuildContext uses none of its ``deps``);
``kbgraph.graphs.subgraph`` binds ``deps`` when it builds the graph. Each has a deterministic
heuristic path and, when a chat model is configured, an LLM path that falls back to the
heuristic on any failure. The node functions are not re-exported here, so that
``kbgraph.graphs.nodes.retrieve`` stays the module rather than the function of that name.
``content_terms`` and ``question_of``, words the heuristic paths share, are here for the
graph's other modules (the extractive answer, the agents).
"""

from __future__ import annotations

from ._base import END, NodeDeps, NodeFn, Reranker, StepRecorder, run_outage
from ._fit_sources import fit_sources
from ._text import content_terms, question_of

__all__ = [
    "END",
    "NodeDeps",
    "NodeFn",
    "Reranker",
    "StepRecorder",
    "content_terms",
    "fit_sources",
    "question_of",
    "run_outage",
]
