"""The answer given when no chat model is configured: the passages of the cited sources that
state the fact, quoted with their ``[N]`` markers and exact line numbers, under a header
that says the answer is extractive.

A document's passage is whole sentences without markup and the code, config and command
lines that answer (:mod:`._passages`): the units scored best against the question across
the sources, only those close to the best one (an answer padded with near misses states the
fact less clearly). A unit is quoted with the rest of its entry (:mod:`._entries`): the
sentences after it up to one that holds a value, the block or list a sentence introduces
("run:", "in harbor.yaml:"), a table's header and the rows that answer; a pointer sentence
counts little, and so does a table of contents. A unit in the form the question asks for (a
FAQ entry asking it, the definition a "What is X?" names, a default and its value, a
formula: :mod:`._scoring`) counts more and may come from a source ranked a little lower.
A code or CSV source is quoted by lines, each carried on to the end of its sentence (a
docstring wraps), from the ``def`` line it belongs to, neighbours merged."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbgraph._base.citations import escape_markers
from kbgraph._base.languages import language_of
from kbgraph.prompts import render_prompt

from ._entries import (
    best_rows,
    definition_term,
    enclosing_definition,
    introduced_list,
    introduces,
    is_header,
    with_follow_ups,
)
from ._nodes import question_of
from ._passages import Unit, opens_docstring, plain, units
from ._scoring import answers_form, line_scores, terms, weight

MAX_QUOTE_CHARS = 400
MAX_SENTENCE_CHARS = 1000
"""A sentence is quoted whole up to this length; only a longer one is cut."""
CLOSE_TO_BEST = 0.6
"""A unit is quoted when it scores at least this share of the best unit's score."""
MAX_QUOTES = 4
FORM_SOURCES = 2
"""How many citations after the first ``max_sources`` may answer with a unit in the form
the question asks for (a FAQ entry, a definition, a default, a formula)."""
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


def best_quotes(
    question: str,
    citations: Sequence[Mapping[str, Any]],
    *,
    max_sources: int = 3,
    lines_per_source: int = 2,
) -> list[Quote]:
    """Quotes of the units close to the best one over the first ``max_sources`` citations
    (they arrive ranked), at most ``lines_per_source`` units of a source and
    :data:`MAX_QUOTES` in all, in file order within a source and the sources in the order
    of their best unit. When no unit shares a term with the question, the first unit of
    each source stands in."""
    chosen = list(citations)[: max_sources + FORM_SOURCES]
    candidates = _candidates(question, chosen, max_sources)
    found = [(pos, unit) for pos, unit, _ in candidates]
    scores = line_scores(question, [unit.text for _, unit in found])
    scores = [
        score * weight(question, unit, after)
        for score, (_, unit, after) in zip(scores, candidates, strict=True)
    ]
    picked = _pick(found, scores, lines_per_source)
    # The answer opens with what answers: the source of the best unit first.
    top = {pos: max(scores[found.index((pos, u))] for u in us) for pos, us in picked.items()}
    quotes: list[Quote] = []
    for pos in sorted(top, key=lambda p: (-top[p], p)):
        mine = sorted(picked[pos], key=lambda u: u.first)
        quotes.extend(_quotes(chosen[pos], pos + 1, mine, question))
    return quotes


def _pick(
    found: list[tuple[int, Unit]], scores: list[float], lines_per_source: int
) -> dict[int, list[Unit]]:
    """Per source position, the units to quote (see :func:`best_quotes`)."""
    best = max(scores, default=0.0)
    picked: dict[int, list[Unit]] = {}
    if best <= 0:
        for pos, unit in found:
            picked.setdefault(pos, [unit])
        return picked
    total = 0
    for k in sorted(range(len(found)), key=lambda k: (-scores[k], k)):
        pos, unit = found[k]
        mine = picked.setdefault(pos, [])
        if scores[k] >= CLOSE_TO_BEST * best and len(mine) < lines_per_source:
            mine.append(unit)
            total += 1
        if total == MAX_QUOTES:
            break
    return {pos: units_ for pos, units_ in picked.items() if units_}


def _candidates(
    question: str, chosen: Sequence[Mapping[str, Any]], max_sources: int
) -> list[tuple[int, Unit, Unit | None]]:
    """Each unit of the first ``max_sources`` citations with its source's position and the
    unit after it; of the next :data:`FORM_SOURCES`, only the units in the form the question
    asks for (:func:`answers_form`): a source ranked lower that holds the FAQ entry or the
    definition asked for still answers, its other sentences would only add near misses."""
    out: list[tuple[int, Unit, Unit | None]] = []
    for pos, citation in enumerate(chosen):
        every = _units(citation)
        for k, unit in enumerate(every):
            if pos < max_sources or answers_form(question, unit.text):
                out.append((pos, unit, every[k + 1] if k + 1 < len(every) else None))
    return out


def _units(citation: Mapping[str, Any]) -> list[Unit]:
    """A prose source's sentences, code lines and tables; a code or CSV file's lines."""
    lines = _lines(citation)
    if _by_lines(citation):
        top = citation.get("line_start") == 1  # only a file's first lines hold its title
        return [
            Unit(i, i, lines[i], title=top and opens_docstring(lines, i)) for i in _quotable(lines)
        ]
    return _entries(lines)


def _entries(lines: list[str]) -> list[Unit]:
    """The units of a prose chunk with each table's rows made one unit: a table is scored
    as a whole (its header says "Default", its rows name the settings) and quoted by
    the rows that answer (:func:`_table_quote`)."""
    out: list[Unit] = []
    for unit in units(lines):
        if unit.table is not None and out and out[-1].table == unit.table:
            last = out[-1]
            out[-1] = Unit(last.first, unit.last, f"{last.text}; {unit.text}", table=unit.table)
        else:
            out.append(unit)
    return out


def _by_lines(citation: Mapping[str, Any]) -> bool:
    source = str(citation.get("source", ""))
    return language_of(source) is not None or source.lower().endswith((".csv", ".tsv"))


def _quotes(
    citation: Mapping[str, Any], position: int, picked: list[Unit], question: str
) -> list[Quote]:
    lines = _lines(citation)
    if _by_lines(citation):
        spans = passages(lines, _with_definitions(lines, [u.first for u in picked]))
        return [_quote(citation, position, lines, start, end) for start, end in spans]
    every = _entries(lines)
    groups: list[list[Unit]] = []
    for unit in with_follow_ups(every, picked):
        if unit.table is not None:
            groups.append([unit])
            continue
        if groups and _follows(every, groups[-1][-1], unit):
            groups[-1].append(unit)
        else:
            groups.append([unit])
    return _uncovered(
        [
            _table_quote(citation, position, lines, group[0], question)
            if group[0].table is not None
            else _unit_quote(citation, position, lines, every, group)
            for group in groups
        ]
    )


def _uncovered(quotes: list[Quote]) -> list[Quote]:
    """The quotes of one source less those another already holds: a list item picked on
    its own is quoted again inside the list its introducing sentence brings ("Run harbor
    keys rotate key_7Hq2." under "Rotation replaces a key without downtime: 1. Run …").
    Kept in the order given."""
    kept: list[Quote] = []
    for quote in sorted(quotes, key=_extent, reverse=True):
        if not any(_holds(outer, quote) for outer in kept):
            kept.append(quote)
    return [q for q in quotes if any(q is k for k in kept)]


def _extent(quote: Quote) -> int:
    if quote.first is None or quote.last is None:
        return len(quote.text)
    return quote.last - quote.first


def _holds(outer: Quote, inner: Quote) -> bool:
    """``outer`` quotes every line of ``inner`` (its text, when lines are unknown)."""
    if outer.first is None or outer.last is None or inner.first is None or inner.last is None:
        return inner.text in outer.text and set(inner.code) <= set(outer.code)
    return outer.first <= inner.first and inner.last <= outer.last


def _with_definitions(lines: list[str], picked: list[int]) -> list[int]:
    """The picked lines of a code file, the ``def``/``class`` line each belongs to and the
    term of the definition-list item it opens, so that a code answer names what it
    quotes."""
    found = {d for i in picked if (d := enclosing_definition(lines, i)) is not None}
    found |= {t for i in picked if (t := definition_term(lines, i)) is not None}
    return sorted(found | set(picked))


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
    items = introduced_list(every, last) if block is None else []
    if items:
        last = items[-1]
    text = " ".join(u.text for u in [*prose, *items])
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
    if unit.code or not introduces(unit.text):
        return None
    index = every.index(unit)
    following = every[index + 1] if index + 1 < len(every) else None
    return following.block if following is not None and following.code else None


def _table_quote(
    citation: Mapping[str, Any], position: int, lines: list[str], table: Unit, question: str
) -> Quote:
    """A table as its header (the text) and the rows that answer (shown under it)."""
    rows = [u for u in units(lines) if u.table == table.table]
    header = rows[0] if len(rows) > 1 and is_header(lines, rows[0].first) else None
    body = [u for u in rows if u is not header]
    chosen = [body[k] for k in best_rows(line_scores(question, [u.text for u in body]))]
    n = int(citation.get("n") or position)
    first = (header or chosen[0]).first
    return Quote(
        n,
        escape_markers(header.text if header else ""),
        str(citation.get("source", "")),
        _file_line(citation, lines, first),
        _file_line(citation, lines, chosen[-1].last),
        tuple(escape_markers(u.text) for u in chosen),
    )


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
    text = plain(" ".join(" ".join(lines[start : end + 1]).split())).strip("\"'").strip()
    if len(text) > MAX_QUOTE_CHARS:
        text = text[: MAX_QUOTE_CHARS - 1].rstrip() + "…"
    text = escape_markers(text)
    n = int(citation.get("n") or position)
    first = _file_line(citation, lines, start)
    last = _file_line(citation, lines, end)
    return Quote(n, text, str(citation.get("source", "")), first, last)


def _file_line(citation: Mapping[str, Any], lines: list[str], index: int) -> int | None:
    start, end = citation.get("line_start"), citation.get("line_end")
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
