"""Retrieve: every query × every ranker of every knowledge base in scope, fused by
Reciprocal Rank Fusion, deduplicated by chunk id. With ``fusion="convex"`` each query's
vector and BM25 lists are first combined by the engine (normalised scores), and RRF fuses
those per-query lists. When RewriteQuery completed a follow-up ("Is it retryable?") into a
standalone question, the raw question's lists count half (:data:`UNDERSPECIFIED_WEIGHT`).

The node is synchronous on purpose: disk and model work blocks, and LangGraph runs a sync
node in a worker thread (``run_in_executor``) when the graph runs async (``ainvoke`` /
``astream``), so the event loop never waits on it. Stale or missing indexes are brought up to
date first (``auto_index``; a knowledge base walks its folder for that at most every few
seconds, or never with ``live``, where a file watcher indexes changes as they happen), and
progress goes out as custom stream events:
``knowledge.index.progress`` / ``knowledge.index.done`` / ``knowledge.search.started`` /
``knowledge.search.done``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.runtime import Runtime

from kbgraph.errors import (
    ErrorRecord,
    GlobLimitError,
    KbgraphError,
    ModelMismatchError,
    error_record,
)
from kbgraph.retrieval import (
    ProgressEvent,
    RankerName,
    SearchConfig,
    SearchFilters,
    SearchResult,
    get_ranker,
    hybrid_rankers,
)

from .._langchain_kb import LangChainSearcher, resolve_source
from .._searcher import Searcher, Watchable
from .._served import index_refused
from .._settings import RagSettings, ResolvedKnowledgeBase
from .._state import RagScope, RagState
from ._base import NodeDeps, StepRecorder
from ._fusion import ListKey, fuse
from ._paths import scope_kinds
from .rewrite_query import query_key

NODE = "retrieve"
Writer = Callable[[Any], None]


def rankers_for(settings: RagSettings, *, vectors: bool = True) -> list[RankerName]:
    """The rankers of a run: ``search.mode``'s one ranker, or hybrid's (the registered
    rankers with a hybrid weight, and any other ``search.weights`` names). Without vectors
    (``embedding="none"``, or a lexical-only index opened with ``auto``: ``vectors=False``)
    hybrid's rankers that need none (BM25 by default), for a vector mode too."""
    lexical_only = not vectors or settings.embedding.strip().lower() == "none"
    mode = settings.search.mode
    if mode not in (None, "hybrid") and not (lexical_only and get_ranker(mode).needs_vectors):
        return [mode]
    names = list(hybrid_rankers(settings.search.weights))
    return [n for n in names if not (lexical_only and get_ranker(n).needs_vectors)]


def _has_vectors(searcher: Searcher) -> bool:
    """Whether the searcher's index has vectors (a fake without the property: assume so;
    an index that cannot be opened: the search reports that itself)."""
    try:
        return bool(getattr(searcher, "has_vectors", True))
    except (KbgraphError, OSError):
        return True


def lists_for(settings: RagSettings, *, vectors: bool = True) -> list[str]:
    """The lists searched per query: one per ranker, or with convex fusion and both rankers
    the engine's own ``hybrid`` list (convex fusion needs both rankers' exact scores of each
    candidate, which only the engine has); RRF then fuses across queries and bases."""
    rankers: list[str] = list(rankers_for(settings, vectors=vectors))
    return ["hybrid"] if settings.search.fusion == "convex" and len(rankers) > 1 else rankers


def one_list(
    searcher: Searcher,
    query: str,
    name: str,
    settings: RagSettings,
    filters: SearchFilters | None,
    limit: int | None = None,
) -> list[SearchResult]:
    """One list of a query, as Retrieve ranks it (``name``: a ranker, or ``hybrid`` for
    convex fusion), ``limit`` deep (default: the settings' candidates per list)."""
    limit = limit or candidate_limit(settings)
    if name != "hybrid":
        return searcher.rank(query, name, limit=limit, filters=filters)
    config = SearchConfig(
        mode="hybrid",
        fusion="convex",
        top_k=limit,
        candidates_per_ranker=limit,
        weights=dict(settings.search.weights),
    )
    return searcher.search(query, config=config, filters=filters)


def embedding_spec(settings: RagSettings) -> str | None:
    spec = settings.embedding.strip()
    return None if spec.lower() == "none" else spec


def candidate_limit(settings: RagSettings) -> int:
    """Depth of each ranker's list: fusion needs lists deeper than top-k
    (``SearchConfig.candidates``: 4·top_k, at least 20)."""
    return settings.search.candidates()


def scope_filters(scope: RagScope | None) -> SearchFilters | None:
    if not scope:
        return None
    kinds = tuple(k for k in scope_kinds() if k in scope.get("kinds", []))
    try:
        filters = SearchFilters(paths=tuple(scope.get("paths", [])), kinds=kinds)
    except GlobLimitError:
        # A question that names more paths than one filter may hold (every file it
        # mentions): the whole folder is searched rather than the turn failed. The
        # search's started event and debug record show the filter it ran with.
        filters = SearchFilters(kinds=kinds)
    return None if filters.is_empty() else filters


@dataclass
class KbRun:
    """What searching one knowledge base produced."""

    lists: dict[ListKey, list[SearchResult]] = field(default_factory=dict)
    timings: dict[ListKey, float] = field(default_factory=dict)
    index: dict[str, Any] | None = None
    errors: list[ErrorRecord] = field(default_factory=list)
    empty: bool = False  # searched, and its index holds no document at all


def _progress(kb: str, writer: Writer) -> Callable[[ProgressEvent], None]:
    def report(event: ProgressEvent) -> None:
        writer(
            {
                "event": "knowledge.index.progress",
                "kb": kb,
                "stage": event.stage,
                "done": event.done,
                "total": event.total,
                "message": event.message,
            }
        )

    return report


def _index(searcher: Searcher, kb: str, run: KbRun, writer: Writer, settings: RagSettings) -> None:
    """Bring the index up to date; a failure is recorded and the old index still searched
    (a stale answer beats none when, say, the embedding server is down) — except an index
    of another embedding model, which must not be searched at all (see :func:`search_kb`)."""
    start = time.perf_counter()
    try:
        report = searcher.ensure_fresh(
            progress=_progress(kb, writer), allow_model_change=settings.rebuild_on_model_change
        )
    except Exception as exc:  # any searcher, a custom one too (see search_kb)
        # Embedding "none" asks for BM25 alone: the index is searched as it is, not updated.
        if isinstance(exc, ModelMismatchError) and embedding_spec(settings) is not None:
            raise
        run.errors.append(error_record(exc, "index"))
        return
    run.index = {
        "indexed": report is not None,
        "ms": round((time.perf_counter() - start) * 1000, 3),
        **(_index_summary(report.to_dict()) if report is not None else {}),
    }
    writer({"event": "knowledge.index.done", "kb": kb, **run.index})


LISTED_FILES = 20


def _index_summary(report: dict[str, Any]) -> dict[str, Any]:
    """The index report with its file lists cut to :data:`LISTED_FILES` entries and their
    lengths beside them: a repository full of images lists thousands of not-included
    files, and this record travels in the state, the debug trace and every stream event."""
    summary = dict(report)
    for key in ("skipped", "warnings"):
        entries = report.get(key) or []
        summary[key] = entries[:LISTED_FILES]
        summary[f"{key}Count"] = len(entries)
    return summary


# A searcher may be anyone's (``SearcherRegistry(factory=...)``: a PostgreSQL driver's
# OperationalError, a RuntimeError of a custom backend): like a LangChain store's failure,
# any exception it raises is recorded as that knowledge base's error and the turn goes on.


def search_kb(
    kb: ResolvedKnowledgeBase,
    queries: Sequence[str],
    settings: RagSettings,
    filters: SearchFilters | None,
    deps: NodeDeps,
    writer: Writer,
) -> KbRun:
    """Every query × ranker on one knowledge base, each list timed; failures recorded. An
    index built with another embedding model than the run's is not searched at all: BM25
    alone would answer as if nothing were wrong, and the vector scores would be noise; the
    knowledge base is then reported unsearched, with both models and what to pass."""
    run = KbRun()
    if kb.retriever is not None:
        try:
            embeddings = deps.registry.embeddings(embedding_spec(settings))
        except KbgraphError:  # no local model installed: the store's own order then
            embeddings = None
        return _search_langchain(kb, queries, settings, filters, run, embeddings, deps)
    spec = embedding_spec(settings)
    try:
        searcher = deps.registry.open(
            kb.folder, spec, settings.chunking, kb.store, kb.read_store, kb.index_dir
        )
        # A watcher indexes: its first run catches up with the folder, so ``live`` is an
        # index write like ``auto_index``, and a served process started without
        # KBGRAPH_ALLOW_INDEX ignores both.
        if settings.live and not index_refused() and isinstance(searcher, Watchable):
            searcher.start_watching()
        # Not under the searcher's lock: a freshness check may walk the folder, and other
        # runs must go on searching the index as it is meanwhile.
        if settings.auto_index and not index_refused():
            _index(searcher, kb.name, run, writer, settings)
        with deps.registry.lock(
            kb.folder, spec, settings.chunking, kb.store, kb.read_store, kb.index_dir
        ) as searcher:
            lists = lists_for(settings, vectors=_has_vectors(searcher))
            for i, query in enumerate(queries):
                for ranker in lists:
                    key = ListKey(kb.name, i, ranker)
                    start = time.perf_counter()
                    try:
                        run.lists[key] = one_list(searcher, query, ranker, settings, filters)
                    except Exception as exc:  # a custom searcher raises anything
                        if isinstance(exc, ModelMismatchError):
                            raise
                        run.errors.append(error_record(exc, key.name))
                    run.timings[key] = round((time.perf_counter() - start) * 1000, 3)
            run.empty = not any(run.lists.values()) and _holds_nothing(searcher)
    except Exception as exc:  # opening failed, or another model's index
        if isinstance(exc, ModelMismatchError):
            run.lists.clear()
        run.errors.append(error_record(exc))
    return run


def _holds_nothing(searcher: Searcher) -> bool:
    """Whether the searcher's index holds no file (a searcher that cannot say: no)."""
    files = getattr(searcher, "indexed_files", None)
    try:
        return callable(files) and len(files()) == 0
    except (KbgraphError, OSError):
        return False


def _search_langchain(
    kb: ResolvedKnowledgeBase,
    queries: Sequence[str],
    settings: RagSettings,
    filters: SearchFilters | None,
    run: KbRun,
    embeddings: Embeddings | None,
    deps: NodeDeps,
) -> KbRun:
    """A LangChain VectorStore or BaseRetriever: its one list per query (nothing to index),
    named by what its scores are (``vector``: similarities; ``retriever``: ranks)."""
    try:
        source = resolve_source(str(kb.retriever), deps.sources, deps.registry)
        searcher = LangChainSearcher(source, kb.name, embeddings)
    except Exception as exc:  # as a folder's searcher failing to open (see search_kb)
        run.errors.append(error_record(exc))
        return run
    limit = candidate_limit(settings)
    for i, query in enumerate(queries):
        for ranker in searcher.lists:
            key = ListKey(kb.name, i, ranker)
            start = time.perf_counter()
            try:
                found = searcher.rank(query, ranker, limit=limit, filters=filters)
                kind = next(iter(found[0].scores), ranker) if found else ranker
                key = ListKey(kb.name, i, kind)
                run.lists[key] = found
            except Exception as exc:  # a third-party store: any failure is this list's
                run.errors.append(error_record(exc, key.name))
            run.timings[key] = round((time.perf_counter() - start) * 1000, 3)
    return run


UNDERSPECIFIED_WEIGHT = 0.5
"""The share of its ranker's weight a list of the raw question keeps when RewriteQuery
completed it into another standalone question ("Is it retryable?" names nothing; its lists
rank whatever is retryable as high as the completed question's lists rank the error the
conversation was about). Not 0: a question taken for a follow-up by mistake still counts."""


def list_weights(
    settings: RagSettings,
    keys: Collection[ListKey],
    queries: Sequence[str],
    standalone: str,
) -> dict[ListKey, float]:
    """Each list's weight: its ranker's weight in the settings (1 for a ranker they do not
    weigh), times :data:`UNDERSPECIFIED_WEIGHT` for a list of query 0 when query 0 is a
    follow-up that RewriteQuery completed (``standalone`` differs from it and is searched
    too)."""
    ranker_weights = settings.search.weights
    underspecified = bool(queries and standalone.strip()) and (
        query_key(standalone) != query_key(queries[0])
        and any(query_key(q) == query_key(standalone) for q in queries[1:])
    )
    return {
        key: ranker_weights.get(key.ranker, 1.0)
        * (UNDERSPECIFIED_WEIGHT if underspecified and key.query == 0 else 1.0)
        for key in keys
    }


def list_record(key: ListKey, found: Sequence[SearchResult], run: KbRun) -> dict[str, Any]:
    """What the debug trace keeps of one ranked list: where, which query and ranker, how
    many results and how long it took."""
    return {
        "kb": key.kb, "query": key.query, "ranker": key.ranker, "name": key.name,
        "results": len(found), "ms": run.timings.get(key),
    }  # fmt: skip


def retrieve(state: RagState, runtime: Runtime[RagSettings], deps: NodeDeps) -> dict[str, Any]:
    """Search, fuse and deduplicate; the candidates replace those of an earlier attempt."""
    rec = StepRecorder(NODE, state, runtime)
    settings = rec.settings
    writer: Writer = runtime.stream_writer if runtime is not None else (lambda _: None)
    scope = state.get("rag_scope")
    chosen = set(scope["knowledge_bases"]) if scope else set()
    kbs = [k for k in settings.resolved_knowledge_bases() if not chosen or k.name in chosen]
    queries = list(state.get("rag_queries") or [])
    filters = scope_filters(scope)
    writer({
        "event": "knowledge.search.started", "kbs": [k.name for k in kbs], "queries": queries,
        "rankers": rankers_for(settings), "attempt": rec.attempt,
        "filters": filters.model_dump(mode="json") if filters else None,
    })  # fmt: skip
    runs = {kb.name: search_kb(kb, queries, settings, filters, deps, writer) for kb in kbs}
    lists = {key: found for run in runs.values() for key, found in run.lists.items()}
    weights = list_weights(settings, list(lists), queries, state.get("rag_standalone") or "")
    written = set(state.get("rag_rewrites") or [])
    rewrites = [i for i, query in enumerate(queries) if query in written]
    candidates = fuse(lists, weights, k=settings.search.rrf_k, rewrites=rewrites)[
        : max(candidate_limit(settings), 4 * settings.search.top_k)
    ]
    rec.data = {
        "kbs": [k.name for k in kbs],
        "queries": queries,
        "rewrites": rewrites,
        "weights": {key.name: weight for key, weight in weights.items()},
        "filters": filters.model_dump(mode="json") if filters else None,
        "lists": [list_record(key, found, runs[key.kb]) for key, found in lists.items()],
        "index": {kb: run.index for kb, run in runs.items()},
        "errors": {kb: run.errors for kb, run in runs.items() if run.errors},
        "empty": [kb for kb, run in runs.items() if run.empty],
        "candidates": len(candidates),
        "ranks": {c["chunk_id"]: c["ranks"] for c in candidates},
    }
    writer({
        "event": "knowledge.search.done", "kbs": [k.name for k in kbs], "attempt": rec.attempt,
        "candidates": len(candidates), "lists": rec.data["lists"],
        "errors": rec.data["errors"], "ms": rec.step()["ms"],
    })  # fmt: skip
    return {"rag_candidates": candidates, "rag_retrieval_debug": rec.update()}


__all__ = [
    "UNDERSPECIFIED_WEIGHT",
    "candidate_limit",
    "list_weights",
    "one_list",
    "rankers_for",
    "retrieve",
    "scope_filters",
    "search_kb",
]
