"""The answer given when no chat model is configured: the best passages of the cited
sources, quoted with their ``[N]`` markers and exact line numbers, under a header that
says the answer is extractive.

A passage is a run of whole lines: the best-scoring lines of a source, each carried on to
the end of its sentence (documents hard-wrap sentences across lines), neighbours merged."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbgraph.prompts import render_prompt
from kbgraph.retrieval.citations import escape_markers
from kbgraph.retrieval.text import stems

from .nodes._text import content_terms, question_of

MAX_QUOTE_CHARS = 400
# How many lines a passage may grow by to finish its sentence.
MAX_CONTINUATION_LINES = 2
_HEADING = re.compile(r"\s{0,3}#{1,6}\s")
_SENTENCE_END = re.compile(r"""[.!?:;。！？]["')\]*_`]*\s*$""")


@dataclass(frozen=True, slots=True)
class Quote:
    """Quoted text of source ``n``; ``first``/``last`` are file line numbers, ``None`` when
    the chunk text does not map line for line onto the file (PDF, HTML)."""

    n: int
    text: str
    source: str
    first: int | None
    last: int | None


def terms(text: str) -> set[str]:
    """The stems of the topic words of ``text`` (the heuristic nodes' notion of a term, so
    that the quoted lines match the question the way GroundingCheck judged it)."""
    return set(stems(content_terms(text)))


def line_scores(question: str, lines: Sequence[str]) -> list[float]:
    """Query-biased line scoring: the sum of the IDF of the question terms a line contains,
    IDF taken over the candidate lines (Tombros & Sanderson, "Advantages of query biased
    summaries in information retrieval", SIGIR 1998; IDF as in Sparck Jones 1972)."""
    wanted = terms(question)
    line_terms = [terms(line) for line in lines]
    count = len(lines)
    df = {t: sum(1 for ts in line_terms if t in ts) for t in wanted}
    idf = {t: math.log(1 + count / df[t]) for t in wanted if df[t]}
    return [sum(idf.get(t, 0.0) for t in ts & wanted) for ts in line_terms]


def best_quotes(
    question: str,
    citations: Sequence[Mapping[str, Any]],
    *,
    max_sources: int = 3,
    lines_per_source: int = 2,
) -> list[Quote]:
    """Passages around the best ``lines_per_source`` lines of each of the first
    ``max_sources`` citations (they arrive ranked), in file order within a source. A source
    none of whose lines shares a term with the question is left out when another does."""
    chosen = list(citations)[:max_sources]
    candidates = [(pos, i) for pos, c in enumerate(chosen) for i in _quotable(_lines(c))]
    scores = line_scores(question, [_lines(chosen[pos])[i] for pos, i in candidates])
    per_source: dict[int, list[tuple[float, int]]] = {}
    for score, (pos, index) in zip(scores, candidates, strict=True):
        per_source.setdefault(pos, []).append((score, index))
    matched = any(score > 0 for score in scores)
    quotes: list[Quote] = []
    for pos, citation in enumerate(chosen):
        mine = per_source.get(pos, [])
        if matched and not any(score > 0 for score, _ in mine):
            continue
        ranked = sorted(mine, key=lambda item: (-item[0], item[1]))
        # Lines that share no term with the question only stand in when nothing matched.
        best = [item for item in ranked if item[0] > 0][:lines_per_source] or ranked[:1]
        lines = _lines(citation)
        for start, end in passages(lines, sorted(index for _, index in best)):
            quotes.append(_quote(citation, pos + 1, lines, start, end))
    return quotes


def passages(lines: Sequence[str], picked: Sequence[int]) -> list[tuple[int, int]]:
    """Inclusive line spans: each picked line carried on until a line ends a sentence (at
    most ``MAX_CONTINUATION_LINES`` more, never into a blank line or a heading), then spans
    that overlap or touch merged."""
    spans: list[tuple[int, int]] = []
    for index in picked:
        end = index
        while (
            end - index < MAX_CONTINUATION_LINES
            and not _SENTENCE_END.search(lines[end])
            and end + 1 < len(lines)
            and lines[end + 1].strip()
            and not _HEADING.match(lines[end + 1])
        ):
            end += 1
        if spans and index <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((index, end))
    return spans


def render(header: str, quotes: Sequence[Quote]) -> str:
    out = [header.strip(), ""]
    for q in quotes:
        if q.first is None or q.last is None:
            where = q.source
        elif q.first == q.last:
            where = f"{q.source}:{q.first}"
        else:
            where = f"{q.source}:{q.first}-{q.last}"
        out.append(f"- {q.text} [{q.n}] ({where})")
    return "\n".join(out)


def _lines(citation: Mapping[str, Any]) -> list[str]:
    return str(citation.get("text", "")).removesuffix("\n").split("\n")


def _quotable(lines: list[str]) -> list[int]:
    """Lines with words in them; Markdown headings only when a source has nothing else,
    because a heading repeats the question's words without answering it."""
    worded = [i for i, line in enumerate(lines) if any(ch.isalnum() for ch in line)]
    body = [i for i in worded if not _HEADING.match(lines[i])]
    return body or worded


def _quote(
    citation: Mapping[str, Any], position: int, lines: list[str], start: int, end: int
) -> Quote:
    text = " ".join(" ".join(lines[start : end + 1]).split())
    if len(text) > MAX_QUOTE_CHARS:
        text = text[: MAX_QUOTE_CHARS - 1].rstrip() + "…"
    text = escape_markers(text)
    n = int(citation.get("n") or position)
    first = _file_line(citation, lines, start)
    last = _file_line(citation, lines, end)
    return Quote(n, text, str(citation.get("source", "")), first, last)


def _file_line(citation: Mapping[str, Any], lines: list[str], index: int) -> int | None:
    start, end = citation.get("lineStart"), citation.get("lineEnd")
    if not isinstance(start, int) or not isinstance(end, int):
        return None  # not a number, or lines unknown (None: a LangChain store's chunk)
    # Chunk text is the file's lines verbatim for text formats; for PDF/HTML extraction the
    # counts differ and a per-line number would be a guess.
    if end - start + 1 != len(lines):
        return None
    return start + index


NO_MODEL = "no chat model configured"


def extractive_text(state: Mapping[str, Any], why: str = NO_MODEL) -> str:
    """The extractive answer of a state: the best lines of its cited sources for the queries
    the subgraph ran (the rewrites make a follow-up question standalone, so they match
    better than its words alone), under the extractive header saying ``why`` no chat model
    wrote the answer."""
    question = " ".join(state.get("rag_queries") or []) or question_of(dict(state))
    quotes = best_quotes(question, state.get("rag_citations") or [])
    return render(render_prompt("agent_extractive_header", why=why), quotes)


__all__ = [
    "MAX_CONTINUATION_LINES",
    "MAX_QUOTE_CHARS",
    "NO_MODEL",
    "Quote",
    "best_quotes",
    "extractive_text",
    "line_scores",
    "passages",
    "render",
    "terms",
]
