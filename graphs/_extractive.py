"""The answer given when no chat model is configured: the best lines of the cited sources,
quoted with their ``[N]`` markers and exact line numbers, under a header that says the
answer is extractive."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_WORD = re.compile(r"\w+", re.UNICODE)
# Question words carry no topic; without this list they would dominate the overlap,
# because documents rarely contain "how" or "what".
_STOP = frozenset(
    """a an and are as at be by can could do does for from how i in is it its me my of on
    or should that the this to was what when where which who why will with would you your
    le la les des un une est et de du en il ce que qui quoi comment der die das und ist
    wie was ein eine el los las es y qué cómo""".split()
)
MAX_LINE_CHARS = 300


@dataclass(frozen=True, slots=True)
class Quote:
    n: int
    text: str
    source: str
    line: int | None  # None when the chunk text does not map line-for-line onto the file


def terms(text: str) -> list[str]:
    """Case-folded word tokens minus question words (any script: ``\\w`` is Unicode)."""
    return [t for t in (w.casefold() for w in _WORD.findall(text)) if t not in _STOP]


def line_scores(question: str, lines: Sequence[str]) -> list[float]:
    """Query-biased line scoring: the sum of the IDF of the question terms a line contains,
    IDF taken over the candidate lines (Tombros & Sanderson, "Advantages of query biased
    summaries in information retrieval", SIGIR 1998; IDF as in Sparck Jones 1972)."""
    wanted = set(terms(question))
    line_terms = [set(terms(line)) for line in lines]
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
    """The best ``lines_per_source`` lines of each of the first ``max_sources`` citations
    (they arrive ranked), kept in file order within a source."""
    chosen = list(citations)[:max_sources]
    candidates = [(c, i, line) for c in chosen for i, line in enumerate(_lines(c)) if _quotable(line)]
    scores = line_scores(question, [line for _, _, line in candidates])
    quotes: list[Quote] = []
    for position, citation in enumerate(chosen, start=1):
        mine = [(s, i, line) for s, (c, i, line) in zip(scores, candidates, strict=True) if c is citation]
        ranked = sorted(mine, key=lambda item: (-item[0], item[1]))[:lines_per_source]
        for _, index, line in sorted(ranked, key=lambda item: item[1]):
            quotes.append(_quote(citation, position, index, line))
    return quotes


def render(header: str, quotes: Sequence[Quote]) -> str:
    lines = [header.strip(), ""]
    for q in quotes:
        where = f"{q.source}:{q.line}" if q.line is not None else q.source
        lines.append(f"- {q.text} [{q.n}] ({where})")
    return "\n".join(lines)


def _lines(citation: Mapping[str, Any]) -> list[str]:
    return str(citation.get("text", "")).removesuffix("\n").split("\n")


def _quotable(line: str) -> bool:
    stripped = line.strip().strip("#>*-|` ")
    return bool(_WORD.search(stripped))


def _quote(citation: Mapping[str, Any], position: int, index: int, line: str) -> Quote:
    text = " ".join(line.split())
    if len(text) > MAX_LINE_CHARS:
        text = text[: MAX_LINE_CHARS - 1].rstrip() + "…"
    n = int(citation.get("n") or position)
    return Quote(n, text, str(citation.get("source", "")), _file_line(citation, index))


def _file_line(citation: Mapping[str, Any], index: int) -> int | None:
    start, end = citation.get("lineStart"), citation.get("lineEnd")
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    # Chunk text is the file's lines verbatim for text formats; for PDF/HTML extraction the
    # counts differ and a per-line number would be a guess.
    if end - start + 1 != len(_lines(citation)):
        return None
    return start + index


__all__ = ["MAX_LINE_CHARS", "Quote", "best_quotes", "line_scores", "render", "terms"]
