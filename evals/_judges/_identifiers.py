"""Names in code a claim misnames: a snake_case name the sources do not write that is one
they do write with parts added or left out (``retry_delay_ms`` where they define
``delay_ms``), or with one part replaced (``create_order`` where they write ``place_order``)
in a sentence that says what the claim says of it (``beside``: "Call create_order() to
place an order" against "To place an order, call place_order(cart)"), where the sources
name it in prose or define it (:func:`named_not_called`). A name the sources
never come near is let pass: a cited chunk of code often lacks the ``def`` line of the
function it is the body of, and a faithful answer names it. A name one part off, alone,
is no misname: of the function bodies of Jinja and httpx cut into 30-line chunks without
their ``def`` line, 10 % and 17 % write a name one part off the function's own
(``do_map`` calls ``prepare_map``), against 4 % and 5 % with parts added or left out.

SmolLM2's "The delay before a retry is computed by the ``retry_delay_ms`` function [2]."
was supported at 0.69 by the offline judge: every other word of it was the sources'."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

SNAKE = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![\w])")
"""A snake_case name in code; of a dotted path (``retry.max_attempts``) the last part."""


def code_names(sentences: Iterable[str]) -> frozenset[str]:
    """The snake_case names ``sentences`` write, case folded (a context's, read once)."""
    return frozenset(m.group(0).lower() for s in sentences for m in SNAKE.finditer(s))


def misnamed(
    text: str, written: frozenset[str], beside: Callable[[str], float] = lambda _name: 0.0
) -> list[tuple[str, str]]:
    """``(name, the sources' name it misnames)`` for each snake_case name of ``text`` that
    misnames one of ``written`` (:func:`code_names`), in ``text``'s order; ``beside(name)``:
    the share of ``text``'s other words in the sources' sentence writing ``name`` that holds
    most of them (at least ``BESIDE`` for a name one part off)."""
    out = []
    own = {m.group(0).lower() for m in SNAKE.finditer(text)}
    for match in SNAKE.finditer(text):
        name = match.group(0)
        parts = name.lower().split("_")
        if name.lower() in written:
            continue
        near = sorted(w for w in written if _nested(parts, w.split("_")))
        if not near:
            # A name the claim writes too is another thing it names ("do_map calls
            # prepare_map"), not the one it misnames.
            shares = {w: beside(w) for w in sorted(written - own) if _one_off(parts, w.split("_"))}
            near = [w for w in sorted(shares, key=lambda w: -shares[w]) if shares[w] >= BESIDE]
        if near:
            out.append((name, near[0]))
    return out


BESIDE = 0.5
"""The share of a claim's other words a sentence writing the sources' name holds when a
name one part off it is a misname: "Call create_order() to place an order" and "To place
an order, call place_order(cart)" share all three."""


_DEFINED = r"(?:\b(?:def|class)\s+{0}\b|\b{0}\s*(?:=(?!=)|:(?!:)))"
_IN_CODE = re.compile(r"^(?:\s{2,}|\t)|[=({]|\b(?:return|yield|await|import|from)\b")


def named_not_called(name: str, text: str) -> bool:
    """Whether ``text`` writes ``name`` in a line of prose, or defines it (``def name``,
    ``name = …``, ``name: …``), not only calls it in code: the body of ``load_config``
    calls ``read_config(path)``, and an answer about it names ``load_config`` (six false
    flags a review found, on function bodies cut without their ``def`` line)."""
    found = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)", re.IGNORECASE)
    defined = re.compile(_DEFINED.format(re.escape(name)), re.IGNORECASE)
    for line in text.splitlines():
        for match in found.finditer(line):
            if defined.search(line) or not _IN_CODE.search(line[: match.start()]):
                return True
    return False


def _one_off(a: list[str], b: list[str]) -> bool:
    """Whether the part lists are as long, of two parts or more, and differ in one."""
    return len(a) == len(b) >= 2 and sum(x != y for x, y in zip(a, b, strict=True)) == 1


def _nested(a: list[str], b: list[str]) -> bool:
    """Whether one of the part lists is a shorter, contiguous run of the other."""
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    n = len(shorter)
    return n < len(longer) and any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


__all__ = ["BESIDE", "SNAKE", "code_names", "misnamed", "named_not_called"]
