"""Names in code a claim misnames: a snake_case name the sources do not write that is one
they do write with parts added or left out (``retry_delay_ms`` where they define
``delay_ms``). A name the sources never come near is let pass: a cited chunk of code often
lacks the ``def`` line of the function it is the body of, and a faithful answer names it.

SmolLM2's "The delay before a retry is computed by the ``retry_delay_ms`` function [2]."
was supported at 0.69 by the offline judge: every other word of it was the sources'."""

from __future__ import annotations

import re
from collections.abc import Iterable

SNAKE = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![\w])")
"""A snake_case name in code; of a dotted path (``retry.max_attempts``) the last part."""


def code_names(sentences: Iterable[str]) -> frozenset[str]:
    """The snake_case names ``sentences`` write, case folded (a context's, read once)."""
    return frozenset(m.group(0).lower() for s in sentences for m in SNAKE.finditer(s))


def misnamed(text: str, written: frozenset[str]) -> list[tuple[str, str]]:
    """``(name, the sources' name it misnames)`` for each snake_case name of ``text`` that
    misnames one of ``written`` (:func:`code_names`), in ``text``'s order."""
    out = []
    for match in SNAKE.finditer(text):
        name = match.group(0)
        parts = name.lower().split("_")
        if name.lower() in written:
            continue
        near = sorted(w for w in written if _nested(parts, w.split("_")))
        if near:
            out.append((name, near[0]))
    return out


def _nested(a: list[str], b: list[str]) -> bool:
    """Whether one of the part lists is a shorter, contiguous run of the other."""
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    n = len(shorter)
    return n < len(longer) and any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


__all__ = ["SNAKE", "code_names", "misnamed"]
