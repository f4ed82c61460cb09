"""The four strategies that differ only in which boundaries they prefer.

- ``fixed_size``: windows of ``size`` characters that end at a word start when one fits.
- ``sentence``: as many whole sentences as fit (a blank line also ends a sentence).
- ``paragraph``: as many whole paragraphs as fit, then sentences, then words.
- ``recursive``: paragraph → line → sentence → word → character, the separator order of
  LangChain's RecursiveCharacterTextSplitter, but returning exact positions.
"""

from __future__ import annotations

from kbgraph._base.sentences import sentence_starts
from kbgraph.retrieval._segments import Span

from ._boundaries import line_starts, paragraph_starts, word_starts
from ._pack import Plan, checked_settings, finalize, pack

PROSE_MIN_FILL = 0.25
"""Prose chunks end at a paragraph or line boundary only when they reach a quarter of the
size; a shorter head (a heading, a one-line lead-in) joins the sentences that follow it."""


def recursive_plan(text: str) -> Plan:
    return Plan(
        levels=(
            (paragraph_starts(text),),
            (line_starts(text),),
            (sentence_starts(text),),
            (word_starts(text),),
        ),
        min_fill=PROSE_MIN_FILL,
    )


def _run(text: str, plan: Plan, size: int, overlap: int, cap: int) -> list[Span]:
    return finalize(text, pack(text, 0, len(text), plan, size, overlap), cap)


def fixed_size(text: str, size: int, overlap: int, cap: int) -> list[Span]:
    size, overlap = checked_settings(size, overlap, cap)
    return _run(text, Plan(levels=((word_starts(text),),)), size, overlap, cap)


def sentence(text: str, size: int, overlap: int, cap: int) -> list[Span]:
    size, overlap = checked_settings(size, overlap, cap)
    plan = Plan(levels=((sentence_starts(text), paragraph_starts(text)), (word_starts(text),)))
    return _run(text, plan, size, overlap, cap)


def paragraph(text: str, size: int, overlap: int, cap: int) -> list[Span]:
    size, overlap = checked_settings(size, overlap, cap)
    plan = Plan(
        levels=(
            (paragraph_starts(text),),
            (sentence_starts(text),),
            (word_starts(text),),
        ),
        min_fill=PROSE_MIN_FILL,
    )
    return _run(text, plan, size, overlap, cap)


def recursive(text: str, size: int, overlap: int, cap: int) -> list[Span]:
    size, overlap = checked_settings(size, overlap, cap)
    return _run(text, recursive_plan(text), size, overlap, cap)
