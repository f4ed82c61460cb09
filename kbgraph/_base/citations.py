"""Citations in an answer: the grammar of ``[N]`` markers, and the records that map each
marker back to the numbered source it names (a file and a line range).

The grammar lives in this one small place, for the agents and the evaluators alike:
``[1]``, ``[1, 2]``, ``[1][3]`` (two markers), ``[1-3]`` / ``[1–3]`` (a range), and mixes
such as ``[1, 3-4]``. Markers inside Markdown code (fenced blocks and inline backticks) are
not citations — ``items[1]`` in a code sample must not resolve to source 1 — and neither
is the text of a Markdown link (``[1](https://…)``) or an escaped bracket (``\\[1]``, how
quoted text that itself contains ``[1]`` is written). Pure Python: no LangChain, no
LangGraph.

    report = extract_citations(answer, rag_citations)
    report.citations   # [{"marker": "[1]", "n": 1, "start": 41, "end": 44, "source": ...}]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import TypedDict

from .camel import snake_keys

# A range wider than this is treated as a typo, not as a citation of every source in it.
MAX_RANGE = 50

_PART = r"\d{1,6}(?:\s*[-–—]\s*\d{1,6})?"
_MARKER = re.compile(rf"(?<!\\)\[\s*({_PART}(?:\s*[,;]\s*{_PART})*)\s*\](?!\()")
_RANGE = re.compile(r"(\d+)\s*[-–—]\s*(\d+)")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})", re.MULTILINE)
_INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)


def line_span(start: int | None, end: int | None, word: str = "lines") -> str:
    """How a source's line range is written (``lines 3-9``; ``lines unknown`` for a chunk
    whose store gave no line numbers: ``None``, or 0 in a chunk, lines being 1-based): in a
    context's source headers, the rerank prompt and a run's trace alike."""
    if start is None or end is None or start < 1:
        return f"{word} unknown"
    return f"{word} {start}-{end}"


@dataclass(frozen=True, slots=True)
class Marker:
    """One bracketed marker: its text, its character span in the answer, and the numbers
    it names (``numbers`` is empty when a range is reversed or too wide)."""

    text: str
    start: int
    end: int
    numbers: tuple[int, ...]
    problem: str | None = None


def find_markers(answer: str) -> list[Marker]:
    """Every citation marker of ``answer`` in order; offsets are ``str`` indices (code
    points), so ``answer[m.start:m.end] == m.text``."""
    code = _code_spans(answer)
    return [_parse(match) for match in _MARKER.finditer(answer) if not _inside(match.start(), code)]


def _parse(match: re.Match[str]) -> Marker:
    numbers: list[int] = []
    for part in re.split(r"\s*[,;]\s*", match.group(1).strip()):
        ranged = _RANGE.fullmatch(part)
        if ranged is None:
            numbers.append(int(part))
            continue
        low, high = int(ranged.group(1)), int(ranged.group(2))
        if low > high or high - low >= MAX_RANGE:
            return Marker(match.group(0), match.start(), match.end(), (), f"bad range {part}")
        numbers.extend(range(low, high + 1))
    unique = tuple(dict.fromkeys(numbers))
    return Marker(match.group(0), match.start(), match.end(), unique)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of fenced code blocks (CommonMark: a closing fence of the same
    character, at least as long; an unclosed fence runs to the end) and inline code."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (opening := _FENCE.search(text, pos)) is not None:
        fence = opening.group(1)
        closing = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        body_start = text.find("\n", opening.end())
        found = closing.search(text, body_start) if body_start != -1 else None
        end = found.end() if found else len(text)
        spans.append((opening.start(), end))
        pos = end
    spans.extend(
        (m.start(), m.end()) for m in _INLINE_CODE.finditer(text) if not _inside(m.start(), spans)
    )
    return spans


def _inside(index: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= index < end for start, end in spans)


def escape_markers(text: str) -> str:
    """``text`` with every ``[N]``-like bracket escaped (``\\[N]``), so that quoted source
    text is never read as a citation."""
    return _MARKER.sub(lambda m: "\\" + m.group(0), text)


class ResolvedCitation(TypedDict):
    """One number of one marker, resolved. ``start``/``end`` are the marker's character
    offsets in the answer (``answer[start:end] == marker``); a marker naming several
    sources (``[1, 2]``) gives one item per source, all with the marker's span."""

    marker: str
    n: int
    start: int
    end: int
    source: str
    line_start: int | None
    line_end: int | None
    chunk_id: str
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
    line_start: int | None
    line_end: int | None


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
    citations = snake_keys(citations, "extract_citations: a citation", stacklevel=2)
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
            line_start=_line_of(c.get("line_start")),
            line_end=_line_of(c.get("line_end")),
        )
        for n, c in sorted(by_number.items())
        if n not in cited_numbers
    ]
    return CitationReport(resolved, unresolved, uncited)


def _line_of(value: Any) -> int | None:
    """A citation's line number; ``None`` when unknown (a LangChain store's document
    without line metadata)."""
    return int(value) if value is not None else None


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
        line_start=_line_of(cited.get("line_start")),
        line_end=_line_of(cited.get("line_end")),
        chunk_id=str(cited.get("chunk_id", "")),
        kb=cited.get("kb"),
    )


def _unresolved(marker: Marker, n: int | None, reason: str) -> UnresolvedMarker:
    return UnresolvedMarker(
        marker=marker.text, n=n, start=marker.start, end=marker.end, reason=reason
    )


__all__ = [
    "MAX_RANGE",
    "CitationReport",
    "Marker",
    "ResolvedCitation",
    "UncitedSource",
    "UnresolvedMarker",
    "escape_markers",
    "extract_citations",
    "find_markers",
    "line_span",
]
