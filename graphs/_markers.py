"""Finding ``[N]`` citation markers in an answer.

Kept apart from ``citations`` so that the grammar of a marker lives in one small place:
``[1]``, ``[1, 2]``, ``[1][3]`` (two markers), ``[1-3]`` / ``[1–3]`` (a range), and mixes
such as ``[1, 3-4]``. Markers inside Markdown code (fenced blocks and inline backticks) are
not citations — ``items[1]`` in a code sample must not resolve to source 1 — and neither
is the text of a Markdown link (``[1](https://…)``) or an escaped bracket (``\\[1]``, how
quoted text that itself contains ``[1]`` is written).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# A range wider than this is treated as a typo, not as a citation of every source in it.
MAX_RANGE = 50

_PART = r"\d{1,6}(?:\s*[-–—]\s*\d{1,6})?"
_MARKER = re.compile(rf"(?<!\\)\[\s*({_PART}(?:\s*[,;]\s*{_PART})*)\s*\](?!\()")
_RANGE = re.compile(r"(\d+)\s*[-–—]\s*(\d+)")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})", re.MULTILINE)
_INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)


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


def iter_numbers(markers: list[Marker]) -> Iterator[tuple[Marker, int]]:
    for marker in markers:
        for n in marker.numbers:
            yield marker, n


def escape_markers(text: str) -> str:
    """``text`` with every ``[N]``-like bracket escaped (``\\[N]``), so that quoted source
    text is never read as a citation."""
    return _MARKER.sub(lambda m: "\\" + m.group(0), text)


__all__ = ["MAX_RANGE", "Marker", "escape_markers", "find_markers", "iter_numbers"]
