"""The answer given when no chat model is configured: the passages of the cited sources that
state the fact, quoted with their ``[N]`` markers and exact line numbers, under a header
that says the answer is extractive.

A document's passage is whole sentences without markup and the code, config and command
lines that answer (:mod:`._passages`): the units scored best against the question across
the sources, only those close to the best one (an answer padded with near misses states the
fact less clearly), and a sentence that introduces a code block ("run:", "in harbor.yaml:")
brings the block. A code or CSV source is quoted by lines, each carried on to the end of
its sentence (a docstring wraps), neighbours merged."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbgraph.prompts import render_prompt
from kbgraph.retrieval._internal import escape_markers, language_of, stems

from ._nodes import content_terms, question_of
from ._passages import Unit, units

MAX_QUOTE_CHARS = 400
MAX_SENTENCE_CHARS = 1000
"""A sentence is quoted whole up to this length; only a longer one is cut."""
CLOSE_TO_BEST = 0.6
"""A unit is quoted when it scores at least this share of the best unit's score."""
MAX_QUOTES = 4
MAX_CODE_LINES = 8
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
    code: tuple[str, ...] = ()  # code lines shown as they are, after ``text``


def terms(text: str) -> set[str]:
    """The stems of the topic words of ``text`` (the heuristic nodes' notion of a term, so
    that the quoted lines match the question the way GroundingCheck judged it), and of the
    words of its ``snake_case`` names (``MAX_CONTENT_LENGTH``: content, length)."""
    found = content_terms(text)
    parts = [p for word in found if "_" in word for p in word.split("_") if len(p) > 1]
    return set(stems([*found, *parts]))


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
    """Quotes of the units close to the best one over the first ``max_sources`` citations
    (they arrive ranked), at most ``lines_per_source`` units of a source and
    :data:`MAX_QUOTES` in all, in file order within a source. When no unit shares a term
    with the question, the first unit of each source stands in."""
    chosen = list(citations)[:max_sources]
    found = [(pos, unit) for pos, c in enumerate(chosen) for unit in _units(c)]
    scores = line_scores(question, [unit.text for _, unit in found])
    best = max(scores, default=0.0)
    picked: dict[int, list[Unit]] = {}
    if best > 0:
        order = sorted(range(len(found)), key=lambda k: (-scores[k], k))
        total = 0
        for k in order:
            pos, unit = found[k]
            mine = picked.setdefault(pos, [])
            if scores[k] >= CLOSE_TO_BEST * best and len(mine) < lines_per_source:
                mine.append(unit)
                total += 1
            if total == MAX_QUOTES:
                break
    else:
        for pos, unit in found:
            picked.setdefault(pos, [unit])
    quotes: list[Quote] = []
    for pos, citation in enumerate(chosen):
        if picked.get(pos):
            quotes.extend(_quotes(citation, pos + 1, sorted(picked[pos], key=lambda u: u.first)))
    return quotes


def _units(citation: Mapping[str, Any]) -> list[Unit]:
    """A prose source's sentences and code lines; a code or CSV file's quotable lines."""
    lines = _lines(citation)
    if _by_lines(citation):
        return [Unit(i, i, lines[i]) for i in _quotable(lines)]
    return units(lines)


def _by_lines(citation: Mapping[str, Any]) -> bool:
    source = str(citation.get("source", ""))
    return language_of(source) is not None or source.lower().endswith((".csv", ".tsv"))


def _quotes(citation: Mapping[str, Any], position: int, picked: list[Unit]) -> list[Quote]:
    lines = _lines(citation)
    if _by_lines(citation):
        spans = passages(lines, [u.first for u in picked])
        return [_quote(citation, position, lines, start, end) for start, end in spans]
    every = units(lines)
    groups: list[list[Unit]] = []
    for unit in picked:
        if groups and _follows(every, groups[-1][-1], unit):
            groups[-1].append(unit)
        else:
            groups.append([unit])
    return [_unit_quote(citation, position, lines, every, group) for group in groups]


def _follows(every: list[Unit], before: Unit, unit: Unit) -> bool:
    """``unit`` comes right after ``before`` in the source: the next sentence of its
    paragraph, or the next line of its code."""
    index = every.index(before)
    if index + 1 >= len(every) or every[index + 1] != unit or unit.code != before.code:
        return False
    return unit.code or unit.paragraph == before.paragraph


def _unit_quote(
    citation: Mapping[str, Any],
    position: int,
    lines: list[str],
    every: list[Unit],
    group: list[Unit],
) -> Quote:
    prose = [u for u in group if not u.code]
    code = [lines[u.first].rstrip() for u in group if u.code]
    last = group[-1]
    block = _introduced_block(every, last)
    if block is not None and not code:
        code = [line.rstrip() for line in lines[block[0] : block[1] + 1] if line.strip()]
        code = code[:MAX_CODE_LINES]
        last = Unit(block[0], min(block[1], block[0] + MAX_CODE_LINES - 1), "")
    text = " ".join(u.text for u in prose)
    if len(text) > MAX_SENTENCE_CHARS:
        text = text[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"
    n = int(citation.get("n") or position)
    first = _file_line(citation, lines, group[0].first)
    end = _file_line(citation, lines, max(last.last, group[-1].last))
    return Quote(
        n,
        escape_markers(text),
        str(citation.get("source", "")),
        first,
        end,
        tuple(escape_markers(line) for line in _dedent(code)),
    )


def _introduced_block(every: list[Unit], unit: Unit) -> tuple[int, int] | None:
    """The code block a sentence ending in ``:`` introduces (the next unit, a code line)."""
    if unit.code or not unit.text.endswith(":"):
        return None
    index = every.index(unit)
    following = every[index + 1] if index + 1 < len(every) else None
    return following.block if following is not None and following.code else None


def _dedent(code: list[str]) -> list[str]:
    margin = min((len(line) - len(line.lstrip()) for line in code if line.strip()), default=0)
    return [line[margin:] for line in code]


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
    """The header, then one bullet per quote; a quote's code follows its text, inline
    when it is one short line, else as a fenced block under the bullet."""
    out = [header.strip(), ""]
    for q in quotes:
        if q.first is None or q.last is None:
            where = q.source
        elif q.first == q.last:
            where = f"{q.source}:{q.first}"
        else:
            where = f"{q.source}:{q.first}-{q.last}"
        inline = len(q.code) == 1 and len(q.code[0]) <= 100 and "`" not in q.code[0]
        text = " ".join(filter(None, [q.text, f"`{q.code[0].strip()}`" if inline else ""]))
        out.append(f"- {text} [{q.n}] ({where})")
        if q.code and not inline:
            out.extend(["  ```", *(f"  {line}" for line in q.code), "  ```"])
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
    "CLOSE_TO_BEST",
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
