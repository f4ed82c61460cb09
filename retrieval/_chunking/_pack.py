"""Packing: turn boundary positions into chunks of at most ``size`` characters.

The rule is the one of semantic splitters (LangChain's RecursiveCharacterTextSplitter, the
``text-splitter`` crate): from a chunk's start, take the coarsest kind of boundary of which
at least one falls inside the size budget, and end the chunk at the last such boundary —
as many whole paragraphs as fit, else as many lines, sentences, words, and only as a last
resort a hard cut at a grapheme-safe position. The next chunk then starts inside the
overlap window at a line or word start, so neighbours share about ``overlap`` characters,
and it must end beyond the previous chunk, so that packing always advances.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from kbgraph.errors import ConfigError
from kbgraph.retrieval._segments import Span

from ._boundaries import Positions, next_content, word_starts_in
from ._graphemes import first_safe_cut, is_safe_cut, last_safe_cut

Level = tuple[Positions, ...]
"""Boundary kinds of equal rank (a sentence start and a paragraph start, for sentences)."""

_SPACE_RUN = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Plan:
    """How to pack one text: boundary levels from coarsest to finest; ``barriers``,
    boundaries across which chunks do not overlap (the start of a definition: a chunk that
    opens with the tail of another function would mislead); ``line_overlap``: start an
    overlap at any line start of the window (code reads by lines, prose by words);
    ``min_fill``: the share of the size a chunk must reach before a coarse boundary may end
    it (see :func:`_choose_end`); ``keep_indent``: a chunk that starts at an indented line
    starts at the line's start, its indentation included (code: the lines a chunk cites are
    whole, and its first line keeps its place among the lines below it)."""

    levels: tuple[Level, ...]
    barriers: Collection[int] = frozenset()
    line_overlap: bool = False
    min_fill: float = 0.0
    keep_indent: bool = False


def checked_settings(size: int, overlap: int, cap: int) -> tuple[int, int]:
    """Validate a chunker's settings; return the effective ``(size, overlap)``: the size
    never exceeds the cap, and the overlap stays below the size so that chunking advances."""
    if size < 1:
        raise ConfigError(
            f"chunk size must be at least 1 character, got {size}; "
            "pass a positive chunk_size (the default is 500)"
        )
    if cap < 1:
        raise ConfigError(
            f"max_chunk_chars must be at least 1 character, got {cap}; "
            "pass a positive cap (the default is 2000)"
        )
    if overlap < 0:
        raise ConfigError(f"chunk overlap cannot be negative, got {overlap}; pass 0 for no overlap")
    size = min(size, cap)
    return size, min(overlap, size - 1)


def _last_safe_in(text: str, positions: Positions, lo: int, hi: int) -> int | None:
    """The largest grapheme-safe position of ``positions`` in ``(lo, hi]``."""
    index = bisect_right(positions, hi) - 1
    while index >= 0 and positions[index] > lo:
        if is_safe_cut(text, positions[index]):
            return int(positions[index])
        index -= 1
    return None


def _choose_end(text: str, start: int, floor: int, hi: int, plan: Plan, size: int) -> int | None:
    """End of the chunk that starts at ``start``, after ``floor``, at the coarsest boundary
    level that fills at least ``plan.min_fill`` of the size; when none does, at the
    coarsest level available; None when only an unsafe cut would fit. The fill rule keeps
    a heading followed by a paragraph longer than the size from becoming a chunk of its
    own: a title-only chunk is all heading words and crowds out real text in BM25 and
    vector results alike. Boundaries are the starts of what follows, so whitespace before
    one is free: the final trim removes it, and a sentence followed by a blank line fits a
    budget that the bare sentence fits."""
    limit = min(hi, start + size)
    reach = next_content(text, limit, hi)
    if reach >= hi:
        return hi
    fill = start + int(size * plan.min_fill)
    coarsest: int | None = None
    for level in plan.levels:
        found = [_last_safe_in(text, positions, floor, reach) for positions in level]
        best = max((pos for pos in found if pos is not None), default=None)
        if best is not None and best >= fill:
            return best
        coarsest = best if coarsest is None else coarsest
    return coarsest if coarsest is not None else last_safe_cut(text, floor, limit)


def _line_overlap(text: str, start: int, end: int, lo: int, overlap: int, lines: bool) -> int:
    """A line start to begin the overlap at, or -1. Prose: one in ``[lo, end - overlap/2]``.
    Code: the last one at or before ``lo`` (up to twice the overlap back), else the first
    one after it, because a code chunk that opens mid-line reads badly."""
    if lines:
        floor = max(start + (end - start + 1) // 2, end - 2 * overlap)
        newline = text.rfind("\n", floor - 1, lo) if floor <= lo else -1
        if newline < 0:
            newline = text.find("\n", lo - 1, end - 1)
    else:
        newline = text.find("\n", lo - 1, max(lo - 1, end - overlap // 2))
    return newline + 1 if newline >= 0 and is_safe_cut(text, newline + 1) else -1


def _overlap_start(
    text: str, start: int, end: int, overlap: int, lines: bool, *, lines_only: bool = False
) -> int:
    """Where the chunk after ``[start, end)`` starts: about ``overlap`` characters before
    ``end``, at a line start (:func:`_line_overlap`), else at the earliest word start in
    ``[end - overlap, end)``, else (in a chunk without spaces) at a grapheme-safe position;
    ``end`` when there is no room. The overlap never reaches into the first half of the
    chunk, so that a short chunk (a lone heading) is not repeated almost whole.
    ``lines_only``: no overlap rather than one that starts inside a line."""
    lo = max(start + (end - start + 1) // 2, end - overlap)
    if overlap <= 0 or lo >= end:
        return end
    line = _line_overlap(text, start, end, lo, overlap, lines)
    if line >= 0:
        return line
    if lines_only:
        return end
    for pos in word_starts_in(text, lo, end):
        if is_safe_cut(text, pos):
            return pos
    if _SPACE_RUN.search(text, start, end):
        return end  # the window is inside one word: the tail of a word helps nobody
    # A chunk that is one long token (a hash, base64) was hard-cut: overlap it the same way.
    safe = first_safe_cut(text, lo, end)
    return end if safe is None else safe


def pack(text: str, lo: int, hi: int, plan: Plan, size: int, overlap: int) -> list[Span]:
    """Chunks covering every non-whitespace character of ``text[lo:hi]``, each at most
    ``size`` characters long."""
    spans: list[Span] = []
    start = next_content(text, lo, hi)
    if plan.keep_indent:
        start = indent_start(text, start, lo)
    prev_end = start
    while start < hi:
        end = _choose_end(text, start, prev_end, hi, plan, size)
        if end is None and start < prev_end:
            # The overlap left no room for a safe cut: give the overlap up.
            start = next_content(text, prev_end, hi)
            end = _choose_end(text, start, prev_end, hi, plan, size)
        if end is None:
            end = min(hi, start + size)  # one cluster longer than the size: the size wins
        spans.append(Span(start, end))
        if next_content(text, end, hi) >= hi:
            break
        step = (
            end
            if end in plan.barriers
            else _overlap_start(
                text,
                start,
                _content_end(text, start, end),
                overlap,
                plan.line_overlap,
                lines_only=plan.keep_indent,
            )
        )
        start = next_content(text, step, hi)
        if plan.keep_indent:
            start = indent_start(text, start, step)
        prev_end = end
    return spans


def indent_start(text: str, pos: int, floor: int) -> int:
    """The start of ``pos``'s line when only spaces and tabs precede ``pos`` on it and the
    line starts at or after ``floor``; else ``pos``."""
    if pos >= len(text) or text[pos].isspace():
        return pos
    line = text.rfind("\n", 0, pos) + 1
    if line >= floor and not text[line:pos].strip(" \t"):
        return line
    return pos


def _content_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _trimmed(text: str, span: Span, keep_indent: bool = False) -> Span | None:
    start = next_content(text, span.start, span.end)
    end = _content_end(text, start, span.end)
    if keep_indent:
        start = indent_start(text, start, span.start)
    return Span(start, end, span.section) if end > start else None


def _within_cap(text: str, span: Span, cap: int) -> Iterable[Span]:
    """Split a span longer than the cap: at the last whitespace of each window when there
    is one, else at a grapheme-safe position. Packing never produces such a span; this is
    the guarantee that the cap holds for every strategy."""
    start = span.start
    while span.end - start > cap:
        limit = start + cap
        spaces = [m.start() for m in _SPACE_RUN.finditer(text, start + 1, limit + 1)]
        cut = spaces[-1] if spaces else last_safe_cut(text, start, limit)
        cut = limit if cut is None else cut
        yield Span(start, cut, span.section)
        start = next_content(text, cut, span.end)
    if start < span.end:
        yield Span(start, span.end, span.section)


def finalize(
    text: str, spans: Sequence[Span], cap: int, *, keep_indent: bool = False
) -> list[Span]:
    """Sort, trim whitespace (``keep_indent``: not the indentation of a chunk's first line),
    drop empty spans and spans inside their predecessor, and enforce the cap."""
    out: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        trimmed = _trimmed(text, span, keep_indent)
        if trimmed is None:
            continue
        for piece in _within_cap(text, trimmed, cap):
            kept = _trimmed(text, piece, keep_indent)
            if kept is None:
                continue
            if out and out[-1].start <= kept.start and kept.end <= out[-1].end:
                continue
            out.append(kept)
    return out
