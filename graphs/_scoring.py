"""How well a unit of a cited source answers a question: the question terms it holds,
weighted by their rarity among the candidate units, and whether it has the form the
question asks for. Pure functions over strings; :mod:`._extractive` picks and quotes."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from kbgraph._base.text import QUESTION_STOP_WORDS, stems

from ._entries import (
    FORM_WEIGHT,
    HOW_TO_WEIGHT,
    POINTER_WEIGHT,
    SETTINGS_WEIGHT,
    TITLE_WEIGHT,
    asks_default,
    asks_how,
    defined_subject,
    defines,
    faq_question,
    gives_formula,
    holds_value,
    introduces,
    is_index_table,
    is_pointer,
    settings_table,
    states_default,
)
from ._nodes import content_terms
from ._passages import Unit


def terms(text: str) -> set[str]:
    """The stems of the topic words of ``text`` (the heuristic nodes' notion of a term, so
    that the quoted lines match the question the way GroundingCheck judged it), and of the
    words of its ``snake_case`` and dotted names (``MAX_CONTENT_LENGTH``: content, length;
    ``retry.max_attempts``: retry, max, attempts)."""
    found = content_terms(text)
    # A name's stop-word parts are left out: ``call_with_retry`` is about calls and
    # retries, and a "with" would count the name once more than the line that answers.
    parts = [p for word in found for p in re.split(r"[_.]", word) if len(p) > 1 and p != word]
    parts = [p for p in parts if p not in QUESTION_STOP_WORDS]
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


def answers_form(question: str, text: str) -> bool:
    """A FAQ entry whose question holds at least half the reader's question terms, a
    sentence stating a default and its value for a question about a default, the
    expression a "How is X computed?" asks for, or the
    definition of what a "What is X?" question names."""
    asked = faq_question(text)
    if asked is not None:
        wanted = terms(question)
        return bool(wanted) and 2 * len(terms(asked) & wanted) >= len(wanted)
    if (asks_default(question) and states_default(text)) or gives_formula(question, text):
        return True
    subject = defined_subject(question)
    return subject is not None and defines(subject, text)


def weight(question: str, unit: Unit, following: Unit | None) -> float:
    """How much a unit's match counts (:func:`_match_weight`), more in the asked form."""
    form = FORM_WEIGHT if not unit.code and answers_form(question, unit.text) else 1.0
    return form * _match_weight(question, unit, following)


def _match_weight(question: str, unit: Unit, following: Unit | None) -> float:
    """How much a unit's match counts: less for a pointer sentence or table and for one that
    announces what its chunk does not hold ("To change the policy in harbor.yaml:" as the
    chunk's last line), more for a sentence that introduces a code block or a list when
    the question asks how to do something. ``following`` is the next unit of the chunk."""
    if unit.table is not None:
        if is_index_table(unit.text.split("; ")):
            return POINTER_WEIGHT
        return SETTINGS_WEIGHT if settings_table(question, unit.text.split("; ")[0]) else 1.0
    if unit.code:
        return 1.0
    if unit.title and not holds_value(unit.text):
        return TITLE_WEIGHT
    dangling = following is None and unit.text.rstrip().endswith(":")
    if dangling or is_pointer(unit.text):
        return POINTER_WEIGHT
    shows = following is not None and (following.code or following.item)
    return HOW_TO_WEIGHT if shows and introduces(unit.text) and asks_how(question) else 1.0


__all__ = ["answers_form", "line_scores", "terms", "weight"]
