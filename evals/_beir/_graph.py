"""The ``graph`` mode of a BEIR run: the whole retrieval subgraph (``build_rag_graph``) in
its heuristic mode (no chat model), one invocation per query, so that what RewriteQuery and
Rerank do to the ranking is measured rather than assumed."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from langchain_core.messages import HumanMessage

from kbgraph.graphs import RagInput
from kbgraph.retrieval import KnowledgeBase, SearchConfig

Rank = Callable[[str, Sequence[tuple[str, float]]], list[str]]
"""``(query id, (source, score) hits best first) -> document ranking``."""


def _question(text: str) -> RagInput:
    """The subgraph's input: the query as the user's message (``("user", text)``)."""
    return {"messages": [HumanMessage(text)]}


def graph_rankings(
    kb: KnowledgeBase,
    data_name: str,
    queries: Mapping[str, str],
    *,
    embedding: str | None,
    search: SearchConfig,
    top_k: int,
    rank: Rank,
    progress: Callable[[str, int, int], None],
) -> tuple[dict[str, list[str]], list[float]]:
    """Document rankings and per-query latencies (ms). The subgraph searches ``kb`` itself
    (registered for its folder), not a default-configured copy of it; one invocation runs
    before the timed ones, so loading the model is not counted."""
    from kbgraph.graphs import RagSettings, SearcherRegistry, build_rag_graph

    spec = embedding or "none"
    registry = SearcherRegistry()
    registry.register(kb.folder, None if spec == "none" else spec, kb)
    context = RagSettings(
        knowledge_bases=[{"folder": str(kb.folder), "name": data_name}],
        embedding=spec,
        chat_model=None,
        search=search.model_copy(
            # None: hybrid's rankers, those needing no vectors without an embedding model.
            update={"top_k": top_k, "mode": None}
        ),
        auto_index=False,  # indexed by the run, with its chunking
    )
    graph = build_rag_graph(registry=registry)
    graph.invoke(_question("warm up"), context=context)
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    for done, (qid, query) in enumerate(queries.items(), 1):
        start = time.perf_counter()
        out = graph.invoke(_question(query), context=context)
        hits = [(c["source"], float(c["score"])) for c in out.get("rag_candidates") or []]
        rankings[qid] = rank(qid, hits)
        latencies.append((time.perf_counter() - start) * 1000)
        progress("graph", done, len(queries))
    return rankings, latencies


__all__ = ["Rank", "graph_rankings"]
