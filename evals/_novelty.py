"""Two plain floors for the held-out sets: what the answer says that the context never does.

Both are the simple scorers of ``../shared/design/verifier_facts.md`` (measured there on
RAGTruth: AUROC of "unfaithful" 0.734 / 0.654 / 0.697 for the share of novel words and
0.752 / 0.622 / 0.527 for the count of novel numbers and names, QA / Summary / Data2txt).
A judge that does not beat them on a set has learned nothing a word count could not see.
Higher means *less* supported; the meta-evaluation turns them round to rank faithful
answers first.
"""

from __future__ import annotations

import re

from ._text import numbers

_LETTERS = re.compile(r"[^\W\d_]+")
"""A run of letters (any script): "don't" gives "don" and "t", "GPT-4" gives "GPT"."""
LONG_WORD = 4


def _word_set(text: str) -> set[str]:
    return {w.lower() for w in _LETTERS.findall(text)}


def novel_word_share(answer: str, context: str) -> float:
    """The share of the answer's distinct words of four letters or more (case ignored, no
    stemming) that the context never uses; 0 when the answer has no such word. The four
    letters keep out most function words without a stop list."""
    wanted = {w for w in _word_set(answer) if len(w) >= LONG_WORD}
    if not wanted:
        return 0.0
    return len(wanted - _word_set(context)) / len(wanted)


def novel_fact_count(answer: str, context: str) -> int:
    """How many distinct numbers (``_text.numbers``: "2,500" = "2500", "five" = "5") and
    capitalised words (names, mostly; case ignored when looking them up) of the answer the
    context never has. A sentence's capitalised first word is counted like any other: a
    common word is found in the context anyway."""
    names = {w.lower() for w in _LETTERS.findall(answer) if w[0].isupper()}
    return len(numbers(answer) - numbers(context)) + len(names - _word_set(context))


__all__ = ["LONG_WORD", "novel_fact_count", "novel_word_share"]
