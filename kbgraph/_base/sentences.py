"""Sentence starts, for Latin-script and CJK text.

A Latin sentence ends at ``.``, ``!``, ``?`` or ``…`` (plus closing quotes or brackets)
followed by whitespace, unless the period belongs to an abbreviation (``e.g.``, ``Dr.``,
``U.S.``), an initial (``J. Smith``) or a number reference (``No. 5``); a decimal such as
``3.14`` has no whitespace after its point and is never a candidate. CJK text ends sentences
with ``。！？`` or a fullwidth ``．`` and needs no space after them (fullwidth digits around
``．`` make it a decimal point). The rule set follows the Punkt-style heuristics of
Kiss & Strunk (2006), without the trained model.
"""

from __future__ import annotations

import re
from array import array

_CLOSERS = "\"')\\]»”’"
_LATIN_END = re.compile(rf"[.!?\u2026]+[{_CLOSERS}]*\s+")
_CJK_END = re.compile(rf"[。！？｡．]+[」』）】〕〉》〞〟{_CLOSERS}]*\s*")
_OPENERS = "\"'([{“‘«"
_ACRONYM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")  # U.S, e.g, i.e, a.m, U.S.A

ABBREVIATIONS = frozenset(
    {
        "e.g", "i.e", "etc", "vs", "cf", "al", "approx", "ca", "viz",
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "rev", "gen", "col", "capt",
        "fig", "figs", "vol", "vols", "eq", "eqs", "ch", "sec", "pp",
        "inc", "ltd", "co", "corp", "dept", "univ", "est",
        "jan", "feb", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    }
)  # fmt: skip
# "No." is an abbreviation only before a number ("No. 5"); "No. I won't." ends a sentence.
NUMBER_ABBREVIATIONS = frozenset({"no", "nos"})
_MAX_TOKEN = 32


def _token_before(text: str, dot: int) -> str:
    start = dot
    floor = max(0, dot - _MAX_TOKEN)
    while start > floor and not text[start - 1].isspace():
        start -= 1
    return text[start:dot].lstrip(_OPENERS)


def is_abbreviation(text: str, dot: int, after: int) -> bool:
    """True when the period at ``dot`` closes an abbreviation rather than a sentence;
    ``after`` is where the next word starts."""
    token = _token_before(text, dot)
    if not token:
        return False
    if len(token) == 1 and token.isupper():
        return True  # an initial
    lowered = token.lower()
    if lowered in ABBREVIATIONS or _ACRONYM.fullmatch(token):
        return True
    return lowered in NUMBER_ABBREVIATIONS and after < len(text) and text[after].isdigit()


def _latin_starts(text: str) -> list[int]:
    starts = []
    for match in _LATIN_END.finditer(text):
        run = match.group().rstrip().rstrip(_CLOSERS)
        if run == "." and is_abbreviation(text, match.start(), match.end()):
            continue
        starts.append(match.end())
    return starts


def _cjk_starts(text: str) -> list[int]:
    starts = []
    for match in _CJK_END.finditer(text):
        start, end = match.start(), match.end()
        decimal = (
            match.group() == "．"
            and start > 0
            and text[start - 1].isdigit()
            and end < len(text)
            and text[end].isdigit()
        )
        if not decimal:
            starts.append(end)
    return starts


def sentence_starts(text: str) -> array[int]:
    """Starts of sentences after the first, sorted (an ``array("q")``, as the chunkers'
    other boundaries)."""
    merged = sorted(set(_latin_starts(text)) | set(_cjk_starts(text)))
    return array("q", (pos for pos in merged if pos < len(text)))
