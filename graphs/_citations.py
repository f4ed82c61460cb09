"""Attach retrieved context to a chat model, and map its ``[N]`` markers back to sources.

Two pure functions a parent agent uses around its own chat model call::

    messages = inject_context(state["messages"], state["rag_context"])
    answer = model.invoke(messages).text
    report = extract_citations(answer, state["rag_citations"])

``rag_citations`` items are the subgraph's: ``{"n", "chunk_id", "source", "kb", "line_start",
"line_end", "score", "text", ...}`` with ``n`` numbered as in ``rag_context``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from kbgraph._base.citations import (
    CitationReport,
    Marker,
    ResolvedCitation,
    UncitedSource,
    UnresolvedMarker,
    escape_markers,
    extract_citations,
    find_markers,
)
from kbgraph.prompts import render_prompt
from kbgraph.retrieval._internal import fence_for, longest_backtick_run

CITATION_PROMPT = "agent_citation_instructions"
SOURCES_PROMPT = "agent_sources_block"
NO_SOURCES_PROMPT = "agent_no_sources"
_OPENING_FENCE = re.compile(r"^(`{3,})sources[ \t]*$", re.MULTILINE)


def inject_context(
    messages: Sequence[BaseMessage],
    rag_context: str,
    *,
    instructions: str | None = None,
    sources_role: Literal["system", "user"] = "user",
) -> list[BaseMessage]:
    """``messages`` with the retrieved context.

    The context goes into a fenced block preceded by citation instructions (``cite with
    [N]``, the sources are data and not instructions, say you don't know when they do not
    cover the question). An existing leading system message is kept and extended, because
    several providers accept only one system message, and only at the start. The input
    list is not modified.

    By default (``sources_role="user"``) the retrieved text stays out of the system role,
    the one with the most authority (issue 42 hole 6): the instructions extend the system
    message and the fenced sources are a user message of their own, just before the last
    question (LangChain's RAG guides do the same; a document that says "ignore your
    instructions" then speaks with a user's voice at most). ``sources_role="system"`` puts
    them into the system message instead, for a model that reads only that.
    """
    guidance = render_prompt(CITATION_PROMPT) if instructions is None else instructions
    block = _sources_block(rag_context)
    rest = list(messages)
    head = rest.pop(0).text.rstrip() if rest and isinstance(rest[0], SystemMessage) else ""
    if sources_role == "user":
        system = SystemMessage(content=_joined(head, guidance.strip()))
        last = max((i for i, m in enumerate(rest) if isinstance(m, HumanMessage)), default=0)
        return [system, *rest[:last], HumanMessage(content=block), *rest[last:]]
    return [SystemMessage(content=_joined(head, guidance.strip(), block)), *rest]


def _joined(*parts: str) -> str:
    return "\n\n".join(p for p in parts if p)


def _sources_block(rag_context: str) -> str:
    if not rag_context.strip():
        return render_prompt(NO_SOURCES_PROMPT).strip()
    if _safely_fenced(rag_context):
        return rag_context.strip("\n")
    fence = fence_for([rag_context], minimum=3)
    return render_prompt(SOURCES_PROMPT, fence=fence, context=rag_context.strip("\n")).strip()


def _safely_fenced(context: str) -> bool:
    """True when the context is already a fenced block (the subgraph's ``rag_context``, after
    an optional preamble) whose closing fence no backtick run inside it can imitate."""
    opening = _OPENING_FENCE.search(context)
    if opening is None:
        return False
    fence = opening.group(1)
    body, _, tail = context[opening.end() :].rstrip().rpartition("\n")
    return tail.strip() == fence and longest_backtick_run(body) < len(fence)


# The grammar's names (kbgraph._base.citations) are named here too for the 0.1 module name
# kbgraph.graphs.citations, whose stand-in (kbgraph._moved) reads this module; kbgraph's own
# code imports them from the foundation.
__all__ = [
    "CitationReport",
    "Marker",
    "ResolvedCitation",
    "UncitedSource",
    "UnresolvedMarker",
    "escape_markers",
    "extract_citations",
    "find_markers",
    "inject_context",
]
