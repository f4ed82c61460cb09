"""Markdown: one chunk per section, labelled with its heading path.

Sections start at ATX headings (``#`` to ``######``, CommonMark §4.2) outside fenced code
blocks (§4.5), so that the ``# comment`` of a shell example is not a heading. A section
longer than the size is split with the recursive strategy and every piece keeps the
section's path ("Install > From source"). A heading directly followed by a deeper heading
has no text of its own; it joins the child section, whose path names it anyway.

A document whose headings are known from its structure rather than from ``#`` marks (a
DOCX heading style) gives them as the segment's ``outline``; :func:`outlined` sections it
the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kbgraph.retrieval._segments import OutlineEntry, Span

from ._pack import checked_settings, finalize, pack
from ._prose import recursive_plan

_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
PATH_SEPARATOR = " > "


@dataclass(frozen=True, slots=True)
class Heading:
    pos: int  # start of the heading line
    body: int  # start of the line after it
    level: int
    title: str


def _lines(text: str) -> list[tuple[int, str]]:
    starts = [0, *(m.end() for m in re.finditer("\n", text))]
    ends = [*starts[1:], len(text)]
    return [(start, text[start:end]) for start, end in zip(starts, ends, strict=True)]


def headings(text: str) -> list[Heading]:
    """ATX headings outside fenced code blocks, in order."""
    found: list[Heading] = []
    fence: str | None = None
    for start, line in _lines(text):
        body = start + len(line)
        line = line.rstrip("\n")
        if fence is not None:
            if re.fullmatch(rf" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*", line):
                fence = None
            continue
        opening = _FENCE_OPEN.match(line)
        if opening and not (opening.group(1)[0] == "`" and "`" in line[opening.end() :]):
            fence = opening.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            title = _CLOSING_HASHES.sub("", (atx.group(2) or "").strip()).strip()
            found.append(Heading(start, min(body, len(text)), len(atx.group(1)), title))
    return found


def _sections(text: str, marks: list[Heading]) -> list[tuple[int, int, str | None]]:
    """``(start, end, path)`` of every section, the text before the first heading
    included (path None)."""
    if not marks:
        return [(0, len(text), None)]
    bounds = [h.pos for h in marks[1:]] + [len(text)]
    sections: list[tuple[int, int, str | None]] = []
    if marks[0].pos > 0:
        sections.append((0, marks[0].pos, None))
    stack: list[tuple[int, str]] = []
    pending: int | None = None
    for index, (heading, end) in enumerate(zip(marks, bounds, strict=True)):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.title))
        path = PATH_SEPARATOR.join(title for _, title in stack if title) or None
        start = heading.pos if pending is None else pending
        following = marks[index + 1] if index + 1 < len(marks) else None
        empty = not text[heading.body : end].strip()
        if empty and following is not None and following.level > heading.level:
            pending = start
            continue
        pending = None
        sections.append((start, end, path))
    return sections


def markdown(text: str, size: int, overlap: int, cap: int) -> list[Span]:
    return by_headings(text, headings(text), size, overlap, cap)


def outlined(
    text: str, outline: tuple[OutlineEntry, ...], size: int, overlap: int, cap: int
) -> list[Span]:
    """The ``markdown`` strategy over headings given by the document's structure: each
    entry is a heading line of ``text`` (its start, level and title)."""
    marks = []
    for entry in outline:
        end = text.find("\n", entry.pos)
        body = len(text) if end < 0 else end + 1
        marks.append(Heading(entry.pos, body, entry.level, entry.title))
    return by_headings(text, marks, size, overlap, cap)


def by_headings(text: str, marks: list[Heading], size: int, overlap: int, cap: int) -> list[Span]:
    """The ``markdown`` strategy over headings found otherwise (reStructuredText,
    AsciiDoc: :mod:`._markup`)."""
    size, overlap = checked_settings(size, overlap, cap)
    plan = recursive_plan(text)
    spans: list[Span] = []
    for start, end, path in _sections(text, marks):
        spans.extend(
            Span(piece.start, piece.end, path)
            for piece in pack(text, start, end, plan, size, overlap)
        )
    return finalize(text, spans, cap)
