"""``rag_search``: the retrieval subgraph as a LangChain tool for tool-calling agents.

    from kbgraph.graphs._tool import rag_search
    agent = create_react_agent(model, [rag_search], context_schema=RagSettings)
    agent.invoke({"messages": [...]}, context=RagSettings(knowledge_bases=[...]))

The tool's content is the citation-tagged context (what the model reads) or a clear
"nothing relevant found" message; its artifact (``ToolMessage.artifact``, never sent to the
model) holds the structured citations. Knowledge bases and settings come from the run's
context (``ToolRuntime.context``), so one tool instance serves every configuration.

Sources are numbered across the conversation, so that ``[N]`` in the final answer names
one source after several searches: a source shown by an earlier ``rag_search`` result in
the state's messages keeps its number, and a new one continues after the highest. Calls the
model makes in parallel (several tool calls in one AI message) run from the same state and
cannot see each other's results, so each call numbers its new sources in a block of its
own: the ``i``-th ``rag_search`` call of the message (from 0) starts at
``highest earlier number + i · top_k + 1``. A call returns at most ``top_k`` sources, so the
blocks never overlap; a lone call numbers exactly as before, parallel calls leave gaps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolRuntime
from pydantic import Field
from typing_extensions import TypedDict

from kbgraph._base.camel import snake_keys
from kbgraph.errors import ConfigError, KbgraphError
from kbgraph.prompts import load_prompt, render_prompt
from kbgraph.retrieval import ContextEntry
from kbgraph.retrieval._internal import PREAMBLE, fence_for, source_block

from ._langchain_kb import ATTACHED, attached_spec
from ._settings import RagSettings, settings_from_context, spec_of, with_knowledge_bases
from ._state import Citation, RagGrounding, empty_knowledge_bases, unsearched_knowledge_bases

TOOL_NAME = "rag_search"
CompiledGraph = CompiledStateGraph[Any, Any, Any, Any]


class RagSearchArtifact(TypedDict):
    """What one call found, for the program (the model sees the content only)."""

    query: str
    knowledge_bases: list[str]
    citations: list[Citation]
    grounded: bool
    grounding: RagGrounding
    error: NotRequired[str]
    unsearched: NotRequired[dict[str, str]]  # knowledge bases that could not be searched


def make_rag_search(graph: CompiledGraph | None = None, *, name: str = TOOL_NAME) -> BaseTool:
    """A ``rag_search`` tool running ``graph`` (default: the package's compiled subgraph;
    pass one built with ``build_rag_graph(registry=..., chat_model=...)`` to change how it
    searches). It has a sync and an async implementation: ``ainvoke`` (async agents,
    ``langgraph dev``) runs the graph with ``ainvoke``, whose nodes do their disk and model
    work in worker threads, so the event loop is never blocked."""

    def rag_search(
        query: Annotated[str, Field(description=load_prompt("agent_tool_arg_query").strip())],
        # Not `ToolRuntime | None`: LangChain only injects an argument annotated exactly
        # ToolRuntime; the default lets rag_search.invoke({...}) run outside a tool node.
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
        knowledge_bases: Annotated[
            list[str] | None,
            Field(description=load_prompt("agent_tool_arg_knowledge_bases").strip()),
        ] = None,
    ) -> tuple[str, RagSearchArtifact]:
        return _or_raise(run_rag_search(graph, query, runtime, knowledge_bases, tool_name=name))

    async def arag_search(
        query: str,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
        knowledge_bases: list[str] | None = None,
    ) -> tuple[str, RagSearchArtifact]:
        found = await arun_rag_search(graph, query, runtime, knowledge_bases, tool_name=name)
        return _or_raise(found)

    return StructuredTool.from_function(
        func=rag_search,
        coroutine=arag_search,
        name=name,
        description=load_prompt("agent_tool_description").strip(),
        response_format="content_and_artifact",
        # A search that could not run is a ToolMessage with status "error" (the model
        # reads why), never an empty success a model would answer from memory after.
        handle_tool_error=True,
    )


def _or_raise(found: tuple[str, RagSearchArtifact]) -> tuple[str, RagSearchArtifact]:
    if "error" in found[1]:
        raise ToolException(found[0])
    return found


def tool_runtime(
    context: Any = None, messages: Sequence[Any] = (), *, tool_call_id: str | None = None
) -> ToolRuntime[Any, Any]:
    """A ``ToolRuntime`` for calling ``rag_search`` outside an agent, where no tool node
    injects one: ``rag_search.invoke({"query": ..., "runtime": tool_runtime(settings)})``.
    ``context`` is a ``RagSettings``, a dict of its fields, or ``None`` (``KBGRAPH_FOLDER``);
    ``messages`` the conversation, whose earlier ``rag_search`` results keep their numbers."""
    return ToolRuntime(
        state={"messages": list(messages)}, context=context, config={},
        stream_writer=lambda _: None, tool_call_id=tool_call_id, store=None,
    )  # fmt: skip


@dataclass(frozen=True)
class _Call:
    """One search, ready to run: the graph, the query and the settings of the run."""

    graph: CompiledGraph
    query: str
    names: list[str]
    settings: RagSettings


def _prepare(
    graph: CompiledGraph | None,
    query: str,
    runtime: ToolRuntime | None,
    knowledge_bases: Sequence[str] | None,
    tool_name: str,
) -> _Call | tuple[str, RagSearchArtifact]:
    """The call to make, or the failure to report (bad settings, an empty query)."""
    if graph is None:
        from ._subgraph import rag_graph

        graph = rag_graph
    query = query.strip()
    names: list[str] = []
    try:
        metadata = (graph.config or {}).get("metadata") or {}
        settings = with_knowledge_bases(
            settings_from_context(getattr(runtime, "context", None)),
            [attached_spec(kb) for kb in metadata.get(ATTACHED) or []],
        )
        settings = restrict(settings, knowledge_bases)
        names = [kb.name for kb in settings.resolved_knowledge_bases()]
        if not names:
            raise ConfigError(
                "no knowledge base is configured, so nothing can be searched: pass "
                "knowledge_bases in the run's context (RagSettings(knowledge_bases=...)) or set "
                "KBGRAPH_FOLDER; do not answer from memory."
            )
        if not query:
            raise ConfigError("rag_search needs a non-empty query: say what to look up.")
    except KbgraphError as exc:
        return _failed(tool_name, query, names, exc)
    return _Call(graph, query, names, settings)


def _failed(
    tool_name: str, query: str, names: list[str], exc: KbgraphError
) -> tuple[str, RagSearchArtifact]:
    return f"{tool_name} failed: {exc}", _artifact(query, names, [], False, None, error=str(exc))


def run_rag_search(
    graph: CompiledGraph | None,
    query: str,
    runtime: ToolRuntime | None,
    knowledge_bases: Sequence[str] | None = None,
    *,
    tool_name: str = TOOL_NAME,
) -> tuple[str, RagSearchArtifact]:
    """One search: the tool's (content, artifact). Errors become content the model can
    read (and an ``error`` in the artifact) rather than exceptions that end the run."""
    call = _prepare(graph, query, runtime, knowledge_bases, tool_name)
    if not isinstance(call, _Call):
        return call
    try:
        out = call.graph.invoke(_graph_input(call.query), context=call.settings)
    except KbgraphError as exc:
        return _failed(tool_name, call.query, call.names, exc)
    return _finish(call, out, runtime, tool_name)


async def arun_rag_search(
    graph: CompiledGraph | None,
    query: str,
    runtime: ToolRuntime | None,
    knowledge_bases: Sequence[str] | None = None,
    *,
    tool_name: str = TOOL_NAME,
) -> tuple[str, RagSearchArtifact]:
    """:func:`run_rag_search` for async callers: the graph runs with ``ainvoke``."""
    call = _prepare(graph, query, runtime, knowledge_bases, tool_name)
    if not isinstance(call, _Call):
        return call
    try:
        out = await call.graph.ainvoke(_graph_input(call.query), context=call.settings)
    except KbgraphError as exc:
        return _failed(tool_name, call.query, call.names, exc)
    return _finish(call, out, runtime, tool_name)


def _graph_input(query: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(query)], "rag_query": query}


def _finish(
    call: _Call,
    out: Mapping[str, Any],
    runtime: ToolRuntime | None,
    tool_name: str,
) -> tuple[str, RagSearchArtifact]:
    """Number the sources after those the conversation has shown already."""
    messages = _messages(runtime)
    position, siblings = call_position(messages, getattr(runtime, "tool_call_id", None), tool_name)
    earlier = previous_citations(
        [m for m in messages if getattr(m, "tool_call_id", None) not in siblings], tool_name
    )
    citations = number_after(
        earlier, out.get("rag_citations") or [], position=position, block=call.settings.search.top_k
    )
    grounded = bool(out.get("rag_grounded"))
    unsearched = unsearched_knowledge_bases(out)
    empty = empty_knowledge_bases(out)
    if not citations and empty and set(empty) | set(unsearched) >= set(call.names):
        # Not "nothing found, try other words": there is nothing to find.
        reason = "; ".join(out.get("rag_grounding", {}).get("guidance") or [])
        return f"{tool_name} failed: {reason}", _artifact(
            call.query, call.names, [], False, out.get("rag_grounding"), error=reason
        )
    if unsearched and not citations:
        # Not "nothing found": nothing could be searched, and the model must not answer
        # from memory as if the documents were silent.
        reason = "; ".join(f"searching {kb} failed: {error}" for kb, error in unsearched.items())
        return f"{tool_name} failed: {reason}", _artifact(
            call.query, call.names, [], False, out.get("rag_grounding"), error=reason
        )
    artifact = _artifact(call.query, call.names, citations, grounded, out.get("rag_grounding"))
    content = content_for(call.query, call.names, citations, artifact["grounding"], grounded)
    if unsearched:
        artifact["unsearched"] = unsearched
        skipped = "; ".join(f"{kb} ({error})" for kb, error in unsearched.items())
        content += f"\n\nNot searched, because searching failed: {skipped}."
    return content, artifact


def content_for(
    query: str,
    names: Sequence[str],
    citations: Sequence[Citation],
    grounding: RagGrounding,
    grounded: bool,
) -> str:
    """What the model reads: the sources, a note when they may not answer the question, or
    the nothing-found message with the grounding guidance."""
    kbs = ", ".join(names) or "(no knowledge base configured)"
    guidance = "; ".join(grounding.get("guidance") or [])
    if not citations:
        found = render_prompt("agent_nothing_found", knowledge_bases=kbs, query=query).strip()
        return f"{found}\n{guidance}".strip()
    sources = render_sources(citations)
    if grounded:
        return sources
    note = render_prompt(
        "agent_tool_not_grounded",
        reasons="; ".join(grounding.get("reasons") or []) or "no reason given",
        guidance=guidance or load_prompt("agent_default_guidance").strip(),
    ).strip()
    return f"{sources}\n\n{note}"


def render_sources(citations: Sequence[Citation]) -> str:
    """The context format of ``kbgraph.retrieval._context.render_context``, numbered by each
    citation's ``n`` rather than from 1, with a fence no backtick run inside can close."""
    if not citations:
        return ""
    labels = _labels(citations)
    blocks = [
        source_block(
            c["n"],
            ContextEntry(
                label,
                c["line_start"],
                c["line_end"],
                c["score"],
                c["text"],
                c["page"],
                c.get("section"),
            ),
        )
        for label, c in zip(labels, citations, strict=True)
    ]
    body = "\n\n".join(blocks)
    fence = fence_for([body])
    return f"{PREAMBLE}\n{fence}sources\n{body}\n{fence}"


def restrict(settings: RagSettings, names: Sequence[str] | None) -> RagSettings:
    """``settings`` searching only the knowledge bases ``names`` (all when empty)."""
    if not names:
        return settings
    available = {kb.name: kb for kb in settings.resolved_knowledge_bases()}
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ConfigError(
            f"unknown knowledge base {', '.join(map(repr, unknown))}; available: "
            f"{', '.join(available) or 'none'}. Call rag_search without knowledge_bases to "
            "search them all."
        )
    specs = [spec_of(available[n]) for n in dict.fromkeys(names)]
    return settings.model_copy(update={"knowledge_bases": specs})


def number_after(
    earlier: Sequence[Citation],
    found: Sequence[Citation],
    *,
    position: int = 0,
    block: int | None = None,
) -> list[Citation]:
    """``found`` numbered for a conversation that already holds ``earlier``: a source that
    was shown before (same knowledge base, file and lines) keeps its number, a new one gets
    the next number of this call's block (``position``-th block of ``block`` numbers after
    the highest earlier one), so one ``[N]`` never names two different sources. New sources
    beyond ``block`` are left out: they would take numbers of the next call's block."""
    known = {_place(c): c["n"] for c in earlier}
    first = max(known.values(), default=0) + position * (block or 0)
    next_n = first
    out: list[Citation] = []
    for citation in found:
        n = known.get(_place(citation))
        if n is None:
            if block is not None and next_n - first >= block:
                continue
            next_n += 1
            n = known[_place(citation)] = next_n
        out.append({**citation, "n": n})
    return out


def call_position(
    messages: Sequence[Any], tool_call_id: str | None, tool_name: str = TOOL_NAME
) -> tuple[int, set[str]]:
    """Where this call stands among the ``tool_name`` calls of the AI message that made it
    (0 when it is not found, as for a direct call), and the ids of those calls."""
    if not tool_call_id:
        return 0, set()
    for message in reversed(messages):
        if not isinstance(message, AIMessage):
            continue
        ids = [c.get("id") for c in message.tool_calls if c.get("name") == tool_name]
        if tool_call_id in ids:
            return ids.index(tool_call_id), {i for i in ids if i}
    return 0, set()


def previous_citations(messages: Sequence[Any], tool_name: str = TOOL_NAME) -> list[Citation]:
    """Every citation of every ``rag_search`` result in ``messages``, in order."""
    out: list[Citation] = []
    for message in messages:
        if isinstance(message, ToolMessage) and message.name == tool_name:
            artifact = message.artifact
            if isinstance(artifact, Mapping):
                out.extend(artifact.get("citations") or [])
    # A conversation checkpointed before 0.2 holds camelCase artifacts.
    return snake_keys(out, f"the citations of an earlier {tool_name} result", stacklevel=2)


def _messages(runtime: ToolRuntime | None) -> list[Any]:
    state = getattr(runtime, "state", None)
    if isinstance(state, Mapping):
        return list(state.get("messages") or [])
    return list(getattr(state, "messages", None) or [])


def _place(citation: Citation) -> tuple[str, str, int | None, int | None]:
    return (citation["kb"], citation["source"], citation["line_start"], citation["line_end"])


def _labels(citations: Sequence[Citation]) -> list[str]:
    """Sources, prefixed ``kb:`` where the same path occurs in several knowledge bases
    (as BuildContext labels them)."""
    kbs_of: dict[str, set[str]] = {}
    for c in citations:
        kbs_of.setdefault(c["source"], set()).add(c["kb"])
    return [
        f"{c['kb']}:{c['source']}" if len(kbs_of[c["source"]]) > 1 else c["source"]
        for c in citations
    ]


def _artifact(
    query: str,
    names: list[str],
    citations: list[Citation],
    grounded: bool,
    grounding: RagGrounding | None,
    *,
    error: str | None = None,
) -> RagSearchArtifact:
    artifact = RagSearchArtifact(
        query=query,
        knowledge_bases=names,
        citations=citations,
        grounded=grounded,
        grounding=grounding or {"grounded": False, "reasons": [], "guidance": []},
    )
    if error is not None:
        artifact["error"] = error
    return artifact


rag_search = make_rag_search()

__all__ = [
    "TOOL_NAME",
    "RagSearchArtifact",
    "arun_rag_search",
    "call_position",
    "content_for",
    "make_rag_search",
    "number_after",
    "previous_citations",
    "rag_search",
    "render_sources",
    "restrict",
    "run_rag_search",
    "tool_runtime",
]
