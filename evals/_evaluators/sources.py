"""Deterministic recall of gold sources among the retrieved citations.

A gold source ``{path, line_start, line_end}`` is recalled when some retrieved passage is the
same file and its line range overlaps the gold range (a gold source without lines is
recalled by any passage of the file). A gold ``id`` is recalled by a passage with that
chunk id or source. Paths match when one is a suffix of the other at a ``/`` boundary, so
that ``docs/configuration.md`` matches a citation of ``examples/docs/docs/configuration.md``
and vice versa. A group ``{"any_of": [...]}`` is recalled when any of its members is:
gold sources are all required, the members of a group are alternatives.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._records import GoldSource, Passage


def same_path(a: str, b: str) -> bool:
    x = a.replace("\\", "/").strip("/").removeprefix("./")
    y = b.replace("\\", "/").strip("/").removeprefix("./")
    if x == y:
        return True
    shorter, longer = sorted((x, y), key=len)
    return bool(shorter) and longer.endswith("/" + shorter)


def lines_overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    """Inclusive ranges ``[a_start, a_end]`` and ``[b_start, b_end]`` share a line."""
    return a_start <= b_end and b_start <= a_end


def is_recalled(gold: GoldSource, passages: Sequence[Passage]) -> bool:
    if gold.any_of:
        return any(is_recalled(g, passages) for g in gold.any_of)
    for p in passages:
        if gold.doc_id is not None and gold.doc_id in (p.id, p.source):
            return True
        if gold.path is None or p.source is None or not same_path(gold.path, p.source):
            continue
        if gold.line_start is None or p.line_start is None:
            return True
        end = gold.line_end if gold.line_end is not None else gold.line_start
        p_end = p.line_end if p.line_end is not None else p.line_start
        if lines_overlap(gold.line_start, end, p.line_start, p_end):
            return True
    return False


def gold_source_recall(gold: Sequence[GoldSource], passages: Sequence[Passage]) -> float:
    """Share of gold sources recalled; raises on an empty gold list (nothing to recall)."""
    if not gold:
        raise ValueError("gold_source_recall needs at least one gold source.")
    return sum(is_recalled(g, passages) for g in gold) / len(gold)


__all__ = ["gold_source_recall", "is_recalled", "lines_overlap", "same_path"]
