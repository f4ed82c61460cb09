"""Records (CSV rows) are packed whole: a chunk holds as many consecutive records as fit in
the size. Records do not overlap: each is self-contained, and repeating rows would count
them twice in search. Only a record longer than the cap is split, recursively."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kbgraph.retrieval._segments import Span

from ._pack import Plan, checked_settings, finalize, pack
from ._prose import recursive_plan


def _items(text: str, units: Sequence[tuple[int, int]]) -> Iterable[tuple[int, int]]:
    """The units, clamped to the text and to each other, plus any non-blank text between
    them (a header, a stray line), so that nothing is left uncovered."""
    pos = 0
    for unit_start, unit_end in sorted(units):
        start, end = max(unit_start, pos), min(unit_end, len(text))
        if start > pos and text[pos:start].strip():
            yield pos, start
        if end > start:
            yield start, end
            pos = end
    if text[pos:].strip():
        yield pos, len(text)


def chunk_units(
    text: str, units: Sequence[tuple[int, int]], size: int, overlap: int, cap: int
) -> list[Span]:
    size, overlap = checked_settings(size, overlap, cap)
    spans: list[Span] = []
    current: Span | None = None
    plan: Plan | None = None  # built on the first record longer than the cap
    for start, end in _items(text, units):
        if current is not None and end - current.start <= size:
            current = Span(current.start, end)
            continue
        if current is not None:
            spans.append(current)
        current = Span(start, end)
        if end - start > cap:
            plan = plan or recursive_plan(text)
            spans.extend(pack(text, start, end, plan, size, overlap))
            current = None
    if current is not None:
        spans.append(current)
    return finalize(text, spans, cap)
