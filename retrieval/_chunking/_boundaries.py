"""Positions where a cut between two chunks reads well, one kind per function.

Every position is the *start* of the thing that follows the cut (the first character of a
paragraph, line or word), so that a chunk ``[start, cut)`` ends with its own trailing
whitespace, which the final trim removes. Positions come back sorted, as compact arrays,
because a 10 MB file has millions of word starts.
"""

from __future__ import annotations

import re
from array import array

Positions = array  # array("q") of sorted character positions

# Ideographs, kana, CJK punctuation and fullwidth forms: scripts written without spaces,
# where the gap between any two characters is as good a cut as a space elsewhere.
CJK_CLASS = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3190-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f"
)

# A line that follows at least one blank (whitespace-only) line.
_PARAGRAPH = re.compile(r"\n(?:[^\S\n]*\n)+")
_LINE = re.compile(r"\n")
_WORD = re.compile(rf"(?<=\s)(?=\S)|(?<=[{CJK_CLASS}])(?=\S)|(?<=\S)(?=[{CJK_CLASS}])")
_CONTENT = re.compile(r"\S")


def _match_ends(pattern: re.Pattern[str], text: str) -> Positions:
    return array("q", (m.end() for m in pattern.finditer(text)))


def paragraph_starts(text: str) -> Positions:
    """Starts of lines that follow a blank line."""
    return _match_ends(_PARAGRAPH, text)


def line_starts(text: str) -> Positions:
    """Starts of every line but the first."""
    return _match_ends(_LINE, text)


def word_starts(text: str) -> Positions:
    """Starts of words: after whitespace, and between characters of CJK text."""
    return _match_ends(_WORD, text)


def next_content(text: str, pos: int, hi: int) -> int:
    """The first non-whitespace position in ``[pos, hi)``, or ``hi``."""
    match = _CONTENT.search(text, pos, hi)
    return match.start() if match else hi


def word_starts_in(text: str, lo: int, hi: int) -> list[int]:
    """Word starts in ``[lo, hi)``, in order (the lookbehind sees the text before ``lo``)."""
    return [m.start() for m in _WORD.finditer(text, lo, hi)]
