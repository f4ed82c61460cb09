""" "Why not this file?": where a named file's best chunk ranked in each list of a lab run,
and the first stage that left it out.

The stages, in the order the subgraph applies them: the index (a file the scan skipped or
that was added since the last run), DecideRetrieve (no search at all), the scope
(SelectScope's knowledge bases, paths and kinds), each ranked list (its depth is the
settings' candidates per list; BM25 only returns chunks sharing a word with the query),
fusion (the pool Retrieve keeps), Rerank and top-k, the score threshold and BuildContext's
token budget. Each list is asked again for the file alone (its best chunk) and for the
scope's whole list down to :data:`RANK_LIMIT`, so a rank below the list's depth is shown
too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kbgraph.graphs import RagSettings
from kbgraph.graphs._internal import ResolvedKnowledgeBase, one_list, scope_filters
from kbgraph.retrieval import SearchFilters, rankers

from ._lab import last_attempt, list_columns, result_rows

RANK_LIMIT = 1000
OpenKb = Callable[[ResolvedKnowledgeBase], Any]


def list_position(
    kb: Any,
    column: Mapping[str, Any],
    path: str,
    filters: SearchFilters | None,
    settings: RagSettings,
) -> dict[str, Any]:
    """The file's best chunk in one list and its rank there (``None``: below
    :data:`RANK_LIMIT`, or not returned at all)."""
    query, ranker = str(column["query"]), str(column["ranker"])
    own = one_list(kb, query, ranker, settings, SearchFilters(paths=(path,)), limit=1)
    out: dict[str, Any] = {"list": column["name"], "query": query, "ranker": ranker}
    if not own:
        lexical = any(r.name == ranker and r.lexical for r in rankers())  # not hybrid
        why = "shares no word with the query" if lexical else "no chunk returned"
        return {**out, "rank": None, "note": why}
    best = own[0]
    whole = one_list(kb, query, ranker, settings, filters, limit=RANK_LIMIT)
    rank = next((i for i, r in enumerate(whole, 1) if r.chunk.id == best.chunk.id), None)
    return {
        **out,
        "chunk_id": best.chunk.id,
        "line_start": best.chunk.line_start,
        "line_end": best.chunk.line_end,
        "page": best.chunk.page,
        "score": best.score,
        "rank": rank,
        "note": "" if rank is not None else f"below rank {RANK_LIMIT}",
    }


def _not_indexed(kb: Any, path: str) -> str:
    for skipped in kb.skipped_files():
        folder = skipped.path.rstrip("/")
        if skipped.path == path or (skipped.path.endswith("/") and path.startswith(folder + "/")):
            detail = f" ({skipped.detail})" if skipped.detail else ""
            return f"the index left it out: {skipped.reason}{detail}"
    if path in kb.changes().added:
        return "it was added after the last index run (the next search indexes it first)"
    if (kb.folder / path).exists():
        return "it is not a file the scan indexes (a folder, or a kind it does not read)"
    return "there is no such file in the knowledge base"


def _pick_kb(kbs: list[ResolvedKnowledgeBase], open_kb: OpenKb, path: str) -> tuple[Any, Any]:
    opened = [(kb, open_kb(kb)) for kb in kbs if kb.folder]
    for kb, searcher in opened:
        if path in searcher.indexed_files():
            return kb, searcher
    return opened[0] if opened else (None, None)


def _stage(stage: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"stage": stage, "verdict": text, **extra}


def why_not(
    path: str, state: Mapping[str, Any], settings: RagSettings, open_kb: OpenKb
) -> dict[str, Any]:
    """Why ``path`` (relative to a knowledge base folder) is not in the run's context."""
    path = path.strip().lstrip("/")
    base: dict[str, Any] = {"path": path}
    kb, searcher = _pick_kb(settings.resolved_knowledge_bases(), open_kb, path)
    if kb is None:
        return {**base, **_stage("index", "no folder knowledge base was searched")}
    base["kb"] = kb.name
    record = searcher.indexed_files().get(path)
    if record is None:
        return {**base, **_stage("index", _not_indexed(searcher, path))}
    base["chunks"] = record.chunk_end - record.chunk_start
    if not state.get("rag_should_retrieve"):
        return {**base, **_stage("decide", "DecideRetrieve skipped retrieval for this question")}
    scope = state.get("rag_scope") or {}
    if scope.get("knowledge_bases") and kb.name not in scope["knowledge_bases"]:
        why = f"SelectScope did not search {kb.name}: {scope.get('reason', '')}"
        return {**base, **_stage("scope", why)}
    filters = scope_filters(scope)  # type: ignore[arg-type]
    if filters is not None and not filters.allows(path, record.kind):
        named = ", ".join([*filters.paths, *filters.kinds])
        return {**base, **_stage("scope", f"the scope's filters ({named}) leave it out")}
    columns = [c for c in list_columns(state) if kb.name in c["kbs"]]
    lists = [list_position(searcher, c, path, filters, settings) for c in columns]
    return {**base, "lists": lists, **_verdict(state, settings, kb.name, path, lists)}


def _verdict(
    state: Mapping[str, Any], settings: RagSettings, kb: str, path: str, lists: list[dict[str, Any]]
) -> dict[str, Any]:
    depth = settings.search.candidates()
    rows = [r for r in result_rows(state, settings) if r["kb"] == kb and r["source"] == path]
    if rows:
        row = rows[0]
        fate = row["fate"]
        text = fate["text"]
        if fate["status"] == "top_k" and row["move"] is not None and row["move"] < 0:
            text = f"Rerank moved it from {row['fused_rank']} down to {row['position']}; {text}"
        stage = "context" if fate["status"] == "context" else fate["status"]
        return {**_stage(stage, text), "candidate": row}
    ranked = [item for item in lists if item.get("rank") is not None]
    if not ranked:
        return _stage(
            "lists",
            "no list returned any of its chunks (BM25 needs a shared word; "
            f"the vector list is cut at rank {RANK_LIMIT} here)",
        )
    best = min(ranked, key=lambda item: item["rank"])
    if best["rank"] > depth:
        return _stage(
            "lists",
            f"its best chunk ranked {best['rank']} at best ({best['list']}), "
            f"below the depth of every list ({depth} candidates per list)",
        )
    kept = (last_attempt(state).get("retrieve") or {}).get("candidates")
    return _stage(
        "fusion",
        f"ranked {best['rank']} in {best['list']}, but fusion across the lists put it below "
        f"the {kept} candidates Retrieve kept",
    )


__all__ = ["RANK_LIMIT", "list_position", "why_not"]
