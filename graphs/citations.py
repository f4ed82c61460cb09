"""Attach retrieved context to a chat model, and map its ``[N]`` markers back to sources.

Two pure functions a parent agent uses around its own chat model call::

    messages = inject_context(state["messages"], state["rag_context"])
    answer = model.invoke(messages).text
    report = extract_citations(answer, state["rag_citations"])

``rag_citations`` items are the subgraph's: ``{"n", "id", "source", "kb", "lineStart",
"lineEnd", "score", "text", ...}`` with ``n`` numbered as in ``rag_context``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from typing_extensions import TypedDict

from kbgraph.prompts import render_prompt

from ._markers import Marker, escape_markers, find_markers

CITATION_PROMPT = "agent_citation_instructions"
SOURCES_PROMPT = "agent_sources_block"
NO_SOURCES_PROMPT = "agent_no_sources"
_OPENING_FENCE = re.compile(r"^(`{3,})sources[ \t]*$", re.MULTILINE)


class ResolvedCitation(TypedDict):
    """One number of one marker, resolved. ``start``/``end`` are the marker's character
    offsets in the answer (``answer[start:end] == marker``); a marker naming several
    sources (``[1, 2]``) gives one item per source, all with the marker's span."""

    marker: str
    n: int
    start: int
    end: int
    source: str
    lineStart: int
    lineEnd: int
    id: str
    kb: str | None


class UnresolvedMarker(TypedDict):
    """A marker (or one number of it) that names no source of the context."""

    marker: str
    n: int | None
    start: int
    end: int
    reason: str


class UncitedSource(TypedDict):
    n: int
    source: str
    lineStart: int
    lineEnd: int


@dataclass(frozen=True, slots=True)
class CitationReport:
    """What the answer cites. ``uncited`` lists the sources of the context the answer never
    cites — a hint for faithfulness checks, not an error."""

    citations: list[ResolvedCitation] = field(default_factory=list)
    unresolved: list[UnresolvedMarker] = field(default_factory=list)
    uncited: list[UncitedSource] = field(default_factory=list)

    @property
    def cited_numbers(self) -> list[int]:
        return sorted({c["n"] for c in self.citations})

    def to_dict(self) -> dict[str, Any]:
        return {
            "citations": [dict(c) for c in self.citations],
            "unresolved": [dict(u) for u in self.unresolved],
            "uncited": [dict(u) for u in self.uncited],
        }


def extract_citations(answer: str, citations: Sequence[Mapping[str, Any]]) -> CitationReport:
    """Resolve every ``[N]`` marker of ``answer`` against ``citations`` (numbered by their
    ``n`` key, or by position from 1 when it is missing)."""
    by_number = {_number(c, i): c for i, c in enumerate(citations, start=1)}
    resolved: list[ResolvedCitation] = []
    unresolved: list[UnresolvedMarker] = []
    for marker in find_markers(answer):
        if marker.problem is not None:
            unresolved.append(_unresolved(marker, None, marker.problem))
        for n in marker.numbers:
            cited = by_number.get(n)
            if cited is None:
                unresolved.append(_unresolved(marker, n, _no_source_reason(n, len(by_number))))
            else:
                resolved.append(_resolved(marker, n, cited))
    cited_numbers = {c["n"] for c in resolved}
    uncited = [
        UncitedSource(
            n=n,
            source=str(c.get("source", "")),
            lineStart=int(c.get("lineStart", 0)),
            lineEnd=int(c.get("lineEnd", 0)),
        )
        for n, c in sorted(by_number.items())
        if n not in cited_numbers
    ]
    return CitationReport(resolved, unresolved, uncited)


def inject_context(
    messages: Sequence[BaseMessage],
    rag_context: str,
    *,
    instructions: str | None = None,
) -> list[BaseMessage]:
    """``messages`` with the retrieved context in the system prompt.

    The context goes into a fenced block preceded by citation instructions (``cite with
    [N]``, the sources are data and not instructions, say you don't know when they do not
    cover the question). An existing leading system message is kept and extended, because
    several providers accept only one system message, and only at the start. The input
    list is not modified.
    """
    guidance = render_prompt(CITATION_PROMPT) if instructions is None else instructions
    block = _sources_block(rag_context)
    rest = list(messages)
    if rest and isinstance(rest[0], SystemMessage):
        head = rest.pop(0)
        system = SystemMessage(content=f"{head.text.rstrip()}\n\n{guidance.strip()}\n\n{block}")
    else:
        system = SystemMessage(content=f"{guidance.strip()}\n\n{block}")
    return [system, *rest]


def _sources_block(rag_context: str) -> str:
    if not rag_context.strip():
        return render_prompt(NO_SOURCES_PROMPT).strip()
    if _safely_fenced(rag_context):
        return rag_context.strip("\n")
    fence = "`" * max(3, _longest_backtick_run(rag_context) + 1)
    return render_prompt(SOURCES_PROMPT, fence=fence, context=rag_context.strip("\n")).strip()


def _safely_fenced(context: str) -> bool:
    """True when the context is already a fenced block (the subgraph's ``rag_context``, after
    an optional preamble) whose closing fence no backtick run inside it can imitate."""
    opening = _OPENING_FENCE.search(context)
    if opening is None:
        return False
    fence = opening.group(1)
    body, _, tail = context[opening.end() :].rstrip().rpartition("\n")
    return tail.strip() == fence and _longest_backtick_run(body) < len(fence)


def _longest_backtick_run(text: str) -> int:
    """A fence longer than any backtick run inside the context cannot be closed early by
    the retrieved text (the CommonMark rule for fenced code)."""
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _number(citation: Mapping[str, Any], position: int) -> int:
    value = citation.get("n")
    return int(value) if value is not None else position


def _no_source_reason(n: int, count: int) -> str:
    if count == 0:
        return f"[{n}] cites a source, but the context had no sources"
    return f"[{n}] names no source; the context has sources 1-{count}"


def _resolved(marker: Marker, n: int, cited: Mapping[str, Any]) -> ResolvedCitation:
    return ResolvedCitation(
        marker=marker.text,
        n=n,
        start=marker.start,
        end=marker.end,
        source=str(cited.get("source", "")),
        lineStart=int(cited.get("lineStart", 0)),
        lineEnd=int(cited.get("lineEnd", 0)),
        id=str(cited.get("id", "")),
        kb=cited.get("kb"),
    )


def _unresolved(marker: Marker, n: int | None, reason: str) -> UnresolvedMarker:
    return UnresolvedMarker(
        marker=marker.text, n=n, start=marker.start, end=marker.end, reason=reason
    )


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
