"""When a chat model's reply loops: one sentence, one long run of words, or one line with other
numbers, said again and again. A small model does this on real questions ("The permanent
session lifetime is 30 seconds" 43 times); :func:`repetition` says so from the text, for the
answer check (``kbgraph.agents._problems``) and for :class:`LoopWatch`, which lets an in-
process model (``kbgraph.graphs.ChatGGUF``) stop generating once its reply loops instead of
running on to ``max_tokens``: with SmolLM2 on two cores the 400 tokens after the loop began
cost ~15 s of the answer and, in the draft the repair quotes back, ~10 s of the second
attempt's prompt."""

from __future__ import annotations

import re
from collections import Counter

from kbgraph._base.text import words

SENTENCE_REPEATS = 3
"""A sentence said three times is a loop, whatever its length ..."""
LONG_SENTENCE_WORDS = 6
"""... and a sentence of six words or more said twice is one too."""
RUN_WORDS = 8
"""A run of eight words said three times is a loop that ran without a full stop."""
SHAPE_REPEATS = 8
"""Eight lines in a row that differ only in their numbers are a list that counts on
("15. 514 (Unauthorized)", "16. 515 (Unauthorized)", … to the token limit)."""
QUOTE_CHARS = 80
_DIGITS = re.compile(r"\d+")
_MARKER = re.compile(r"\[\d+\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def repetition(text: str, *, long_twice: bool = True) -> str | None:
    """How ``text`` loops (``'repeats "…" 43 times'``), or ``None`` when it does not.
    ``long_twice=False``: a long sentence too must be said three times (a poem's refrain,
    said twice, is no loop for a model that may write poems)."""
    plain = _MARKER.sub("", text)
    sentences = [" ".join(words(s)) for s in _SENTENCE_END.split(plain)]
    counts = Counter(s for s in sentences if len(s.split()) >= 3)
    for sentence, n in counts.most_common(3):
        long = long_twice and len(sentence.split()) >= LONG_SENTENCE_WORDS
        if n >= SENTENCE_REPEATS or (n >= 2 and long):
            return f"it repeats {quoted(sentence)} {n} times"
    counted = counting_lines(plain)
    if counted is not None:
        line, n = counted
        return f"it repeats the line {quoted(line)} with other numbers {n} times"
    tokens = words(plain)
    runs = Counter(tuple(tokens[i : i + RUN_WORDS]) for i in range(len(tokens) - RUN_WORDS + 1))
    if runs:
        run, n = runs.most_common(1)[0]
        if n >= SENTENCE_REPEATS:
            return f"it repeats {quoted(' '.join(run))} {n} times"
    return None


def counting_lines(text: str) -> tuple[str, int] | None:
    """The first line of the longest run of :data:`SHAPE_REPEATS` or more lines in a row
    that are the same once their numbers are masked, and the run's length."""
    best: tuple[str, int] | None = None
    shape, first, n = "", "", 0
    for line in (raw.strip() for raw in text.splitlines()):
        if not line:
            continue
        masked = _DIGITS.sub("0", line)
        if masked == shape and len(line.split()) >= 2:
            n += 1
        else:
            shape, first, n = masked, line, 1
        if n >= SHAPE_REPEATS and (best is None or n > best[1]):
            best = (first, n)
    return best


def quoted(text: str) -> str:
    """``text`` in double quotes, cut to :data:`QUOTE_CHARS` with an ellipsis."""
    return f'"{text}"' if len(text) <= QUOTE_CHARS else f'"{text[: QUOTE_CHARS - 1]}…"'


CHECK_EVERY_CHARS = 32
"""How much new text :class:`LoopWatch` lets pass between two checks when no sentence
ended in it: a loop is caught within a few tokens, and a 512-token reply is read ~60 times
(each read is linear in the text), not once per token."""


class LoopWatch:
    """A reply read as it streams: :meth:`feed` says when the text so far loops (a
    sentence or a run of words said three times, see :func:`repetition`), so the
    generation can stop there. What was generated up to that point is kept whole, so the
    loop is still there for the answer check to name."""

    def __init__(self) -> None:
        self.text = ""
        self._checked = 0

    def feed(self, piece: str) -> bool:
        """Add ``piece``; ``True`` once the text loops."""
        self.text += piece
        ended = _SENTENCE_END.search(piece) is not None
        if not ended and len(self.text) - self._checked < CHECK_EVERY_CHARS:
            return False
        self._checked = len(self.text)
        return repetition(self.text, long_twice=False) is not None


__all__ = [
    "CHECK_EVERY_CHARS",
    "LONG_SENTENCE_WORDS",
    "QUOTE_CHARS",
    "RUN_WORDS",
    "SENTENCE_REPEATS",
    "SHAPE_REPEATS",
    "LoopWatch",
    "counting_lines",
    "quoted",
    "repetition",
]
