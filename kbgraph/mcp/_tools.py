"""What each tool does, as plain functions of the server's knowledge bases and a
validated argument model; the server (:mod:`kbgraph.mcp._server`) runs them in a worker
thread and turns a ``KbgraphError`` into an MCP tool error of one line."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kbgraph.retrieval import SearchConfig, SearchFilters, SearchResult

from ._bases import OpenBases
from ._paths import read_lines
from ._schemas import (
    AskArgs,
    AskCitation,
    AskOutput,
    IndexedKb,
    IndexOutput,
    KbArgs,
    KbStats,
    KnowledgeBaseInfo,
    KnowledgeBasesOutput,
    NoArgs,
    ReadArgs,
    Reply,
    SearchArgs,
    SearchHit,
    SearchOutput,
    StatsOutput,
)
from ._settings import McpSettings


def _hit(settings: McpSettings, kb: str, result: SearchResult) -> SearchHit:
    chunk = result.chunk
    symbol = chunk.section if chunk.section and _is_code(chunk.source) else None
    return SearchHit(
        kb=kb,
        source=chunk.source,
        line_start=chunk.line_start,
        line_end=chunk.line_end,
        page=chunk.page,
        section=chunk.section,
        symbol=symbol,
        score=result.score,
        citation=settings.cite(kb, chunk.source, chunk.line_start, chunk.line_end),
        text=chunk.text,
    )


def _is_code(source: str) -> bool:
    from kbgraph.retrieval._internal import file_kind

    return file_kind(source) == "code"


def search(bases: OpenBases, args: SearchArgs) -> SearchOutput:
    """Each chosen knowledge base's best ``top_k``, merged by score (every knowledge base
    ranks with the same fusion and weights, so scores of one mode compare)."""
    config = SearchConfig(mode=args.mode, top_k=args.top_k)
    filters = SearchFilters(paths=tuple(args.paths), kinds=(*args.kinds, *args.languages))
    hits: list[SearchHit] = []
    freshness = []
    for base in bases.settings.chosen(args.kb):
        kb = bases.prepare(base)
        found = kb.search(args.query, config=config, filters=filters)
        hits += [_hit(bases.settings, base.name, r) for r in found]
        freshness.append(bases.freshness(base))
    hits.sort(key=lambda hit: -hit.score)
    notes = [f.note for f in freshness if f.note]
    return SearchOutput(
        results=hits[: args.top_k], freshness=freshness, note="; ".join(notes) or None
    )


def read(bases: OpenBases, args: ReadArgs) -> Reply:
    return read_lines(bases, args)


def list_knowledge_bases(bases: OpenBases, _: NoArgs) -> KnowledgeBasesOutput:
    infos = [
        KnowledgeBaseInfo(
            name=base.name,
            folder=str(base.folder),
            store=base.store_kind,  # type: ignore[arg-type]
            indexed=bases.get(base).store.current_key() is not None,
        )
        for base in bases.settings.knowledge_bases
    ]
    return KnowledgeBasesOutput(knowledge_bases=infos, read_only=not bases.settings.allow_write)


def stats(bases: OpenBases, args: KbArgs) -> StatsOutput:
    out = []
    for base in bases.settings.chosen(args.kb):
        data = bases.get(base).stats().to_dict()
        out.append(
            KbStats(
                kb=base.name,
                file_count=data["fileCount"],
                chunk_count=data["chunkCount"],
                index_size=data["indexSize"],
                last_indexed=data["lastIndexed"],
                embedding=data["embedding"],
                truncated=data["truncated"],
                freshness=bases.freshness(base, fresh=True),
            )
        )
    return StatsOutput(stats=out)


def ask(bases: OpenBases, args: AskArgs) -> AskOutput:
    """``kbgraph ask``'s path: the chat agent (the retrieval subgraph, the configured chat
    model, the answer check) over the chosen knowledge bases."""
    from kbgraph.agents import run_ask
    from kbgraph.graphs import default_registry

    settings = bases.settings
    chosen = settings.chosen(args.kb)
    spec = None if settings.embedding.strip().lower() == "none" else settings.embedding.strip()
    for base in chosen:  # the agent searches the server's open ones: one model load, one watcher
        default_registry.register(base.folder, spec, bases.get(base), store=base.store)
    specs = [
        {"name": b.name, "folder": str(b.folder), **({"store": b.store} if b.store else {})}
        for b in chosen
    ]
    state = run_ask(
        chosen[0].folder,
        args.question,
        embedding=settings.embedding,
        chat_model=settings.chat_model,
        top_k=args.top_k,
        knowledge_bases=specs,
        auto_index=settings.auto_index or settings.watch,
    )
    return AskOutput(
        answer=str(state.get("answer") or ""),
        answer_mode=state.get("answer_mode"),
        citations=[_ask_citation(settings, c) for c in state.get("rag_citations") or []],
        grounded=state.get("rag_grounded"),
        answer_check=_plain(state.get("answer_check")),
        freshness=[bases.freshness(b) for b in chosen],
    )


def _ask_citation(settings: McpSettings, c: Mapping[str, Any]) -> AskCitation:
    kb, source = str(c.get("kb") or ""), str(c.get("source") or "")
    start, end = c.get("line_start"), c.get("line_end")
    return AskCitation(
        n=int(c["n"]),
        kb=kb or None,
        source=source,
        line_start=start,
        line_end=end,
        score=c.get("score"),
        citation=settings.cite(kb, source, start, end),
    )


def _plain(value: Any) -> dict[str, Any] | None:
    """A JSON object of a state value (a TypedDict, or a model with ``to_dict``)."""
    if value is None:
        return None
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    import json

    return dict(json.loads(json.dumps(value, default=str)))


def index(bases: OpenBases, args: KbArgs) -> IndexOutput:
    """Bring the chosen indexes up to date (only served with ``--allow-write``)."""
    out = []
    for base in bases.settings.chosen(args.kb):
        data = bases.get(base).index().to_dict()
        bases.forget_freshness(base.name)
        out.append(
            IndexedKb(
                kb=base.name,
                file_count=data["fileCount"],
                chunk_count=data["chunkCount"],
                embedded=data["embedded"],
                reused=data["reused"],
                skipped=len(data["skipped"]),
                truncated=data["truncated"],
            )
        )
    return IndexOutput(indexed=out)


ToolFunction = Callable[[OpenBases, Any], Any]

__all__ = [
    "ToolFunction",
    "ask",
    "index",
    "list_knowledge_bases",
    "read",
    "search",
    "stats",
]
