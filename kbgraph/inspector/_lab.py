"""The Search lab's data: a query run through the real retrieval subgraph, and each
result as the subgraph saw it.

Without filters the subgraph runs as an agent would run it (DecideRetrieve first). Filters
set in the lab are a scope the user chose: the run starts after SelectScope with that scope
(``update_state(..., as_node="select_scope")`` on a throw-away in-memory checkpointer), so
the filters reach the engine before ranking, as SelectScope's own would.

A search is a GET, so it never writes: the subgraph runs without ``auto_index`` (any page
could otherwise make a browser index a folder and prune its oldest kept version with an
``<img src>``). A stale index is searched as it is, and :func:`freshness` says so.

Every figure comes from the run's final state (its ``rag_candidates`` and the debug steps
of its last attempt): each list's rank and raw score, the list's Reciprocal Rank Fusion
term (``weight / (rrf_k + rank)``, :func:`kbgraph.retrieval._ranking.rrf_contribution`), the
fused rank against the rank after Rerank, and what BuildContext did with the chunk.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import HumanMessage

from kbgraph.errors import ConfigError, IndexNotFoundError, KbgraphError
from kbgraph.graphs import RagSettings
from kbgraph.retrieval import SearchConfig, SearchFilters, SearchMode, file_kinds, search_modes
from kbgraph.retrieval._internal import rrf_contribution

from ._config import InspectedBase, InspectorConfig

MAX_TOP_K = 50
Fate = Literal["context", "budget", "threshold", "top_k"]


@dataclass(frozen=True, slots=True)
class LabQuery:
    """What the lab's form asks: the query, the knowledge bases (empty: all), the ranker
    mode (``None``: hybrid when the index has vectors), top-k, path globs / kinds, and a
    file to explain ("why not this file?")."""

    text: str = ""
    kbs: tuple[str, ...] = ()
    mode: SearchMode | None = None
    top_k: int = 5
    paths: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    why: str = ""

    @classmethod
    def from_params(cls, params: Mapping[str, Sequence[str]]) -> LabQuery:
        """From query-string values (lists); ``ConfigError`` naming a bad one."""

        def one(key: str) -> str:
            values = params.get(key) or [""]
            return str(values[-1]).strip()

        mode = one("mode") or None
        if mode is not None and mode not in search_modes():
            raise ConfigError(f"mode {mode!r} is not one of {', '.join(search_modes())}")
        try:
            top_k = int(one("top_k") or 5)
        except ValueError:
            raise ConfigError(f"top_k {one('top_k')!r} is not a number") from None
        if not 1 <= top_k <= MAX_TOP_K:
            raise ConfigError(f"top_k must be from 1 to {MAX_TOP_K}, got {top_k}")
        kinds = tuple(k for k in params.get("kind") or [] if k)
        if bad := [k for k in kinds if k not in file_kinds()]:
            raise ConfigError(f"kind {bad[0]!r} is not one of {', '.join(file_kinds())}")
        paths = tuple(p.strip() for raw in params.get("path") or [] for p in raw.split(","))
        # Every search filter's limits, before any file is matched: a GET from any page
        # must not stall the server.
        SearchFilters(paths=tuple(p for p in paths if p))
        return cls(
            text=one("q"),
            kbs=tuple(k for k in params.get("kb") or [] if k),
            mode=mode,
            top_k=top_k,
            paths=tuple(p for p in paths if p),
            kinds=kinds,
            why=one("why").lstrip("/"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "q": self.text,
            "kb": list(self.kbs),
            "mode": self.mode,
            "top_k": self.top_k,
            "path": list(self.paths),
            "kind": list(self.kinds),
            "why": self.why,
        }


def chosen_bases(config: InspectorConfig, query: LabQuery) -> list[InspectedBase]:
    """The knowledge bases a query searches; ``ConfigError`` when none."""
    if not config.knowledge_bases:
        raise ConfigError(
            "the inspector shows no knowledge base: pass folders to `kbgraph inspect`, or set "
            "KBGRAPH_INSPECT_FOLDERS for the app mounted in langgraph dev"
        )
    chosen = [kb for kb in config.knowledge_bases if not query.kbs or kb.name in query.kbs]
    if not chosen:
        raise ConfigError(f"none of {', '.join(query.kbs)} is a knowledge base here")
    return chosen


def lab_settings(config: InspectorConfig, query: LabQuery) -> RagSettings:
    """The subgraph's settings for ``query``: never ``auto_index`` (see the module)."""
    chosen = chosen_bases(config, query)
    return RagSettings(
        knowledge_bases=[kb.spec() for kb in chosen],  # type: ignore[misc]
        embedding=config.embedding,
        search=SearchConfig(top_k=query.top_k, mode=query.mode),
        auto_index=False,
    )


def freshness(
    bases: Sequence[InspectedBase], open_kb: Callable[[InspectedBase], Any]
) -> list[dict[str, Any]]:
    """Whether each index matches its folder (file metadata only, nothing written):
    ``{kb, indexed, stale, rebuild, text}``; ``stale`` counts the files added, modified or
    deleted since the last run."""
    out: list[dict[str, Any]] = []
    for base in bases:
        item: dict[str, Any] = {"kb": base.name, "indexed": True, "stale": 0, "rebuild": False}
        try:
            changes = open_kb(base).changes()
        except IndexNotFoundError:
            item.update(indexed=False, stale=None)
        except (KbgraphError, OSError) as exc:
            item.update(stale=None, problem=str(exc))
        else:
            item.update(stale=changes.count, rebuild=bool(changes.rebuild))
        item["text"] = _freshness_text(base, item)
        out.append(item)
    return out


def _freshness_text(base: InspectedBase, item: Mapping[str, Any]) -> str:
    run = f"run `kbgraph index {base.folder}` to update it"
    if not item["indexed"]:
        return f"{base.name} has no index yet: nothing to search; {run}"
    if item.get("problem"):
        return f"{base.name}: freshness unknown ({item['problem']})"
    if item["rebuild"]:
        return f"{base.name} is stale: built with other settings; searched as it is; {run}"
    if item["stale"]:
        return (
            f"{base.name} is stale: {item['stale']} file(s) changed since the last run; "
            f"searched as it is; {run}"
        )
    return f"{base.name} is up to date"


_graph_lock = threading.Lock()
_graph: Any = None


def _lab_graph() -> Any:
    """One subgraph with an in-memory checkpointer for the process (threads are deleted
    after each query)."""
    global _graph
    with _graph_lock:
        if _graph is None:
            from langgraph.checkpoint.memory import InMemorySaver

            from kbgraph.graphs import build_rag_graph

            _graph = build_rag_graph(checkpointer=InMemorySaver(), name="kbgraph_inspect_lab")
        return _graph


def run_subgraph(settings: RagSettings, query: LabQuery) -> dict[str, Any]:
    """The final state of the subgraph on ``query`` (see the module for filters)."""
    graph = _lab_graph()
    thread = {"configurable": {"thread_id": f"lab-{uuid.uuid4().hex}"}}
    message = HumanMessage(query.text)
    try:
        if query.paths or query.kinds:
            scope = {
                "knowledge_bases": [kb.name for kb in settings.resolved_knowledge_bases()],
                "paths": list(query.paths),
                "kinds": list(query.kinds),
                "widened": False,
                "reason": "filters set in the search lab",
            }
            update = {"messages": [message], "rag_should_retrieve": True, "rag_scope": scope}
            graph.update_state(thread, update, as_node="select_scope")
            state = graph.invoke(None, thread, context=settings)
        else:
            state = graph.invoke({"messages": [message]}, thread, context=settings)
    finally:
        graph.checkpointer.delete_thread(thread["configurable"]["thread_id"])
    return dict(state)


def last_attempt(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The debug step of each node in the run's last attempt (a node's data by name)."""
    steps = list((state.get("rag_retrieval_debug") or {}).get("steps") or [])
    attempt = max((int(s.get("attempt") or 0) for s in steps), default=0)
    return {
        str(s.get("node")): dict(s.get("data") or {})
        for s in steps
        if int(s.get("attempt") or 0) == attempt or s.get("node") == "decide_retrieve"
    }


def fate_of(
    chunk_id: str, score: float, position: int, build: Mapping[str, Any], settings: RagSettings
) -> dict[str, Any]:
    """What BuildContext did with a candidate: in the context as source ``n``, cut for the
    token budget, under the score threshold, or below top-k."""
    for n, ids in enumerate(build.get("sources") or [], 1):
        if chunk_id in ids:
            return {"status": "context", "n": n, "text": f"in the context as [{n}]"}
    if chunk_id in (build.get("dropped_for_budget") or []):
        budget = build.get("budget")
        return {"status": "budget", "text": f"cut for the token budget ({budget} tokens)"}
    threshold = settings.search.score_threshold
    if threshold is not None and score < threshold:
        return {"status": "threshold", "text": f"score {score:.3f} under the threshold {threshold}"}
    return {"status": "top_k", "text": f"rank {position}, below top-k ({settings.search.top_k})"}


def result_rows(state: Mapping[str, Any], settings: RagSettings) -> list[dict[str, Any]]:
    """Each final candidate with its per-list ranks, scores and fusion terms, its fused
    rank, its move in Rerank (positive: up) and its fate in BuildContext."""
    steps = last_attempt(state)
    retrieve = steps.get("retrieve") or {}
    # Retrieve records the weight of every list it fused, by the list's name.
    weights = retrieve.get("weights") or {}
    fused_order = {cid: i for i, cid in enumerate(retrieve.get("ranks") or {}, 1)}
    build = steps.get("build_context") or {}
    rows = []
    for position, c in enumerate(state.get("rag_candidates") or [], 1):
        ranks = dict(c.get("ranks") or {})
        scores = dict(c.get("scores") or {})
        terms = {
            name: rrf_contribution(rank, settings.search.rrf_k, float(weights.get(name, 1.0)))
            for name, rank in ranks.items()
        }
        fused = fused_order.get(c["chunk_id"])
        rows.append(
            {
                "position": position,
                "chunk_id": c["chunk_id"],
                "kb": c.get("kb"),
                "source": c["source"],
                "line_start": c.get("line_start"),
                "line_end": c.get("line_end"),
                "page": c.get("page"),
                "section": c.get("section"),
                "text": c.get("text", ""),
                "score": c.get("score"),
                "fused": scores.get("fused"),
                "rrf": scores.get("rrf"),
                "ranks": ranks,
                "scores": {k: v for k, v in scores.items() if k in ranks},
                "rerank": {k: v for k, v in scores.items() if k not in ranks and k != "rrf"},
                "contributions": terms,
                "fused_rank": fused,
                "move": None if fused is None else fused - position,
                "fate": fate_of(
                    c["chunk_id"], float(c.get("score") or 0), position, build, settings
                ),
            }
        )
    return rows


def list_columns(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ranked lists of the last attempt, ``{name, query, ranker, kbs}``, in query
    order (``q0`` is the question as asked)."""
    retrieve = last_attempt(state).get("retrieve") or {}
    queries = list(retrieve.get("queries") or [])
    columns: dict[str, dict[str, Any]] = {}
    for item in retrieve.get("lists") or []:
        i = int(item["query"])
        column = columns.setdefault(item["name"], {
            "name": item["name"], "ranker": item["ranker"], "kbs": [],
            "query": queries[i] if 0 <= i < len(queries) else "",
        })  # fmt: skip
        column["kbs"].append(item["kb"])
    return list(columns.values())


def lab_report(state: Mapping[str, Any], settings: RagSettings, query: LabQuery) -> dict[str, Any]:
    """The JSON twin of a lab page (also what the page renders)."""
    steps = last_attempt(state)
    debug = state.get("rag_retrieval_debug") or {}
    search = settings.search
    return {
        "query": query.to_dict(),
        "settings": {
            "top_k": search.top_k,
            "mode": search.mode,
            "fusion": search.fusion,
            "rrf_k": search.rrf_k,
            "weights": (steps.get("retrieve") or {}).get("weights") or dict(search.weights),
            "candidates_per_list": search.candidates(),
            "score_threshold": search.score_threshold,
            "rerank": settings.rerank,
            "context_budget_tokens": settings.context_budget_tokens,
        },
        "retrieved": bool(state.get("rag_should_retrieve")),
        "attempts": 1
        + max((int(s.get("attempt") or 0) for s in debug.get("steps") or []), default=0),
        "scope": state.get("rag_scope"),
        "queries": (steps.get("retrieve") or {}).get("queries") or state.get("rag_queries") or [],
        "lists": list_columns(state),
        "results": result_rows(state, settings),
        "citations": state.get("rag_citations") or [],
        "context": state.get("rag_context") or "",
        "grounding": {
            **(state.get("rag_grounding") or {}),
            **{
                k: v
                for k, v in (steps.get("grounding_check") or {}).items()
                if k in ("missing", "vector", "retry_reason")
            },
        },
        "errors": (steps.get("retrieve") or {}).get("errors") or {},
        "steps": debug.get("steps") or [],
        "fallbacks": debug.get("fallbacks") or [],
        "overrulings": debug.get("overrulings") or [],
    }


__all__ = [
    "MAX_TOP_K",
    "LabQuery",
    "chosen_bases",
    "fate_of",
    "freshness",
    "lab_report",
    "lab_settings",
    "last_attempt",
    "list_columns",
    "result_rows",
    "run_subgraph",
]
