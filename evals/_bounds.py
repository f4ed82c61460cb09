"""Bounds on what a judge reads of one row, applied to every row before scoring.

A data set is input: one row of 10 MB (an answer pasted twice, a whole book as a
context) made the offline judge take 2.3 GB and 72 s, and an LLM judge would send it
whole. Each judge input is cut to a bound far above any real answer or retrieved
passage, and the row's result says what was cut (``notes``), so a score is never
silently about less than the row held.
"""

from __future__ import annotations

import dataclasses

from ._records import Passage

MAX_QUESTION_CHARS = 4_000
MAX_ANSWER_CHARS = 20_000  # also the reference answer
MAX_PASSAGE_CHARS = 20_000  # each passage of the context
MAX_PASSAGES = 50


def bound_text(text: str, limit: int, what: str, notes: list[str]) -> str:
    """``text`` cut to ``limit`` characters; a note says so when it was longer."""
    if len(text) <= limit:
        return text
    notes.append(f"{what} cut from {len(text):,} to {limit:,} characters for the judge")
    return text[:limit]


def bound_passages(passages: tuple[Passage, ...], notes: list[str]) -> tuple[Passage, ...]:
    """At most ``MAX_PASSAGES`` passages, each at most ``MAX_PASSAGE_CHARS`` long."""
    if len(passages) > MAX_PASSAGES:
        notes.append(
            f"the context's {len(passages)} passages cut to the first {MAX_PASSAGES} for the judge"
        )
        passages = passages[:MAX_PASSAGES]
    out = []
    for passage in passages:
        text = bound_text(passage.text, MAX_PASSAGE_CHARS, f"passage {passage.n}", notes)
        out.append(passage if text is passage.text else dataclasses.replace(passage, text=text))
    return tuple(out)


__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_PASSAGES",
    "MAX_PASSAGE_CHARS",
    "MAX_QUESTION_CHARS",
    "bound_passages",
    "bound_text",
]
