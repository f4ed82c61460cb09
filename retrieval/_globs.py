"""Glob patterns over POSIX relative paths, as the scan and the search filters use them
(semantics in :mod:`kbgraph.retrieval._scan`).

A glob is matched in time linear in the path (times the pattern's length), whatever the
pattern: a backtracking regular expression takes time exponential in the number of
wildcards on a path that does not match (``**?**?**?**?**?**?**Z`` took 20 s on one
50-character path). A pattern with at most :data:`_REGEX_WILDCARDS` unbounded wildcards
(every usual one: ``docs/**/*.md``) is matched by ``re`` (at worst quadratic, in C); any
other by simulating its automaton (Thompson's construction: the set of pattern positions
reachable so far, advanced one character at a time, so no choice is ever tried twice).
Patterns are limited in length and wildcards (:data:`MAX_GLOB_CHARS`,
:data:`MAX_GLOB_WILDCARDS`), and the paths of one search filter in number, characters and
wildcards together (:func:`check_globs`: fifty patterns each within the limits took a
minute per search over 1,000 files), refused as :class:`~kbgraph.errors.GlobLimitError`."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from kbgraph.errors import GlobLimitError

MAX_GLOB_CHARS = 512
MAX_GLOB_WILDCARDS = 32  # '*', '**', '?' and '[...]' of one pattern
# The paths of one search filter (globs and folder prefixes) together; MCP's search tool
# schema takes its limit from here (kbgraph.mcp._schemas).
MAX_FILTER_PATHS = 50
MAX_FILTER_CHARS = 4096
MAX_FILTER_WILDCARDS = 2 * MAX_GLOB_WILDCARDS
_REGEX_WILDCARDS = 2  # unbounded ones ('*', '**') a pattern may have to go to ``re``

# A character; any number of them; the start of '**/' (which is '(?:.*/)?': past its three
# tokens, or into them, without reading a character).
_Kind = Literal["one", "loop", "opt"]


@dataclass(frozen=True, slots=True)
class _Token:
    kind: _Kind
    regex: str  # what it is in a regular expression
    accepts: Callable[[str], bool]
    wild: bool = True  # counts towards MAX_GLOB_WILDCARDS
    char: str = ""  # a literal's character


def _literal(ch: str) -> _Token:
    return _Token("one", re.escape(ch), ch.__eq__, wild=False, char=ch)


_NOT_SLASH = "/".__ne__
_ANY_CHAR: Callable[[str], bool] = bool


def _normalised(pattern: str) -> str:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    if "/" not in pattern:
        pattern = "**/" + pattern
    return pattern


def _tokens(pattern: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                out.append(_Token("opt", "(?:", _ANY_CHAR))
                out.append(_Token("loop", ".*", _ANY_CHAR, wild=False))
                out.append(_Token("one", "/)?", "/".__eq__, wild=False, char="/"))
                i += 1
            else:
                out.append(_Token("loop", ".*", _ANY_CHAR))
            continue
        if ch == "*":
            out.append(_Token("loop", "[^/]*", _NOT_SLASH))
        elif ch == "?":
            out.append(_Token("one", "[^/]", _NOT_SLASH))
        elif ch == "[" and (close := _class_end(pattern, i)) > 0:
            body = pattern[i + 1 : close].replace("\\", "\\\\").replace("[", "\\[")
            if body.startswith("!"):
                body = "^" + body[1:]
            elif body.startswith("^"):  # a literal caret, as in fnmatch
                body = "\\" + body
            regex = f"[{body}]"
            out.append(_Token("one", regex, _char_class(regex)))
            i = close
        else:
            out.append(_literal(ch))
        i += 1
    return out


def _char_class(regex: str, flags: int = 0) -> Callable[[str], bool]:
    compiled = re.compile(regex, re.DOTALL | flags)
    return lambda ch: compiled.fullmatch(ch) is not None


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1 (a literal ``[``)."""
    j = start + 1
    if j < len(pattern) and pattern[j] == "!":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    close = pattern.find("]", j)
    return close if close > 0 and "/" not in pattern[start:close] else -1


def check_glob(pattern: str) -> None:
    """``GlobLimitError`` when ``pattern`` is longer or has more wildcards than a glob may."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise GlobLimitError(
            f"the glob {pattern[:40]!r}... is {len(pattern)} characters long; a glob may "
            f"have at most {MAX_GLOB_CHARS}: shorten it or pass a folder prefix"
        )
    wild = _wildcards(pattern)
    if wild > MAX_GLOB_WILDCARDS:
        raise GlobLimitError(
            f"the glob {pattern[:40]!r} has {wild} wildcards ('*', '**', '?', '[...]'); a "
            f"glob may have at most {MAX_GLOB_WILDCARDS}: merge runs like '**?**' into '**'"
        )


def check_globs(patterns: Sequence[str]) -> None:
    """``GlobLimitError`` when one of a search filter's ``patterns`` is past a glob's limits
    (:func:`check_glob`) or all of them together are past a filter's: each file of a
    search is matched against every pattern, so their cost adds up."""
    for pattern in patterns:
        check_glob(pattern)
    fix = "pass fewer, shorter globs (one 'docs/**/*.md' for many files) or folder prefixes"
    if len(patterns) > MAX_FILTER_PATHS:
        raise GlobLimitError(
            f"a search filter names {len(patterns)} paths; it may name at most "
            f"{MAX_FILTER_PATHS}: {fix}"
        )
    chars = sum(len(p) for p in patterns)
    if chars > MAX_FILTER_CHARS:
        raise GlobLimitError(
            f"a search filter's paths have {chars} characters in all; they may have at most "
            f"{MAX_FILTER_CHARS}: {fix}"
        )
    wild = sum(_wildcards(p) for p in patterns)
    if wild > MAX_FILTER_WILDCARDS:
        raise GlobLimitError(
            f"a search filter's globs have {wild} wildcards in all ('*', '**', '?', '[...]'); "
            f"they may have at most {MAX_FILTER_WILDCARDS}: {fix}"
        )


def _wildcards(pattern: str) -> int:
    return sum(t.wild for t in _tokens(pattern))


def glob_to_regex(pattern: str) -> str:
    """Translate one glob to a regular expression over POSIX relative paths (semantics in
    :mod:`kbgraph.retrieval._scan`'s docstring; ``[...]`` classes as in :mod:`fnmatch`,
    ``[!...]`` negates). ``ConfigError`` past the limits (:func:`check_glob`)."""
    check_glob(pattern)
    return "".join(t.regex for t in _tokens(_normalised(pattern)))


_EPSILON = {"loop": (1,), "opt": (1, 3)}  # 'opt': into '.*/', or past its three tokens


_MAX_DFA_STATES = 512  # sets of positions one automaton keeps before it starts afresh


@dataclass(frozen=True, slots=True)
class _Sets:
    """The position sets an automaton has met, numbered, with their moves: ``moves[n][ch]``
    is the number of the set that set ``n`` reaches on ``ch``."""

    sets: list[frozenset[int]]
    moves: list[dict[str, int]]
    numbers: dict[frozenset[int], int]

    def number(self, reached: frozenset[int]) -> int:
        if (known := self.numbers.get(reached)) is not None:
            return known
        self.sets.append(reached)
        self.moves.append({})
        self.numbers[reached] = len(self.sets) - 1
        return len(self.sets) - 1


class _Automaton:
    """One glob matched by the set of its positions reachable so far (linear time). Each set
    met and its move on each character met are kept (a lazy subset construction, as RE2
    does: Cox, "Regular expression matching in the wild", 2010), so once a path's prefix
    has been seen its characters cost one lookup each: folder names repeat from path to
    path. Without it one ``**e**e...**Z`` of 96 characters took 1 ms per 113-character path,
    1 s per search of 1,000 files. At most :data:`_MAX_DFA_STATES` sets are kept."""

    def __init__(self, tokens: list[_Token], ignore_case: bool) -> None:
        self.tokens = [_folded(t) for t in tokens] if ignore_case else tokens
        self._lock = threading.Lock()  # a served search may match from several threads
        self._known = self._fresh()

    def _fresh(self) -> _Sets:
        start = frozenset(self._closed({0}))
        return _Sets([start], [{}], {start: 0})

    def _closed(self, states: set[int]) -> set[int]:
        """``states`` with every position reachable without reading a character."""
        todo, seen = list(states), set(states)
        while todo:
            state = todo.pop()
            kind = self.tokens[state].kind if state < len(self.tokens) else "one"
            for reached in _EPSILON.get(kind, ()):
                if state + reached not in seen:
                    seen.add(state + reached)
                    todo.append(state + reached)
        return seen

    def _step(self, states: frozenset[int], ch: str) -> frozenset[int]:
        """The positions reachable from ``states`` by reading ``ch`` (none: no match)."""
        tokens, end = self.tokens, len(self.tokens)
        after: set[int] = set()
        for state in states:
            if state == end or tokens[state].kind == "opt" or not tokens[state].accepts(ch):
                continue
            after.add(state + 1 if tokens[state].kind == "one" else state)
        return frozenset(self._closed(after))

    def _move(self, known: _Sets, state: int, ch: str) -> tuple[_Sets, int]:
        """Set ``state`` of ``known`` read ``ch``: the tables its successor is numbered in
        (fresh ones, replaced whole for threads still reading the old, past the limit)."""
        with self._lock:
            reached = self._step(known.sets[state], ch)
            if known is not self._known or len(known.sets) >= _MAX_DFA_STATES:
                if len(self._known.sets) >= _MAX_DFA_STATES:
                    self._known = self._fresh()
                return self._known, self._known.number(reached)
            number = known.number(reached)
            known.moves[state][ch] = number
            return known, number

    def fullmatch(self, text: str) -> bool:
        known, state = self._known, 0
        for ch in text:
            number = known.moves[state].get(ch)
            if number is None:
                known, number = self._move(known, state, ch)
            state = number
            if not known.sets[state]:
                return False
        return len(self.tokens) in known.sets[state]


def _folded(token: _Token) -> _Token:
    """``token`` matching as ``re.IGNORECASE`` does."""
    if token.kind != "one":
        return token
    if token.char:
        folded = token.char.casefold()
        return replace(token, accepts=lambda ch: ch.casefold() == folded)
    return replace(token, accepts=_char_class(token.regex, re.IGNORECASE))


class GlobSet:
    """Globs any of which may match a whole path: ``fullmatch(path)`` is True or None
    (like a regex's match). Safe patterns share one regular expression; the others are
    matched by their automata, so no pattern can take exponential time."""

    def __init__(self, patterns: Iterable[str], *, ignore_case: bool = False) -> None:
        fast: list[str] = []
        self._slow: list[_Automaton] = []
        for raw in patterns:
            if not raw.strip():
                continue
            check_glob(raw)
            tokens = _tokens(_normalised(raw))
            if sum(t.kind == "loop" for t in tokens) <= _REGEX_WILDCARDS:
                fast.append(f"(?:{''.join(t.regex for t in tokens)})")
            else:
                self._slow.append(_Automaton(tokens, ignore_case))
        flags = re.IGNORECASE if ignore_case else 0
        self._regex = re.compile("|".join(fast), flags) if fast else None

    def fullmatch(self, text: str) -> Literal[True] | None:
        if self._regex is not None and self._regex.fullmatch(text):
            return True
        return True if any(a.fullmatch(text) for a in self._slow) else None


def compile_globs(patterns: Iterable[str], *, ignore_case: bool = False) -> GlobSet:
    """A matcher of any of ``patterns`` (use ``fullmatch``); none matches nothing. Kept
    for the next call with the same patterns: every served read judges its path by the
    scan's rules again (:mod:`kbgraph.retrieval._served`)."""
    return _compiled(tuple(patterns), ignore_case)


@lru_cache(maxsize=128)
def _compiled(patterns: tuple[str, ...], ignore_case: bool) -> GlobSet:
    return GlobSet(patterns, ignore_case=ignore_case)


__all__ = [
    "MAX_FILTER_CHARS",
    "MAX_FILTER_PATHS",
    "MAX_FILTER_WILDCARDS",
    "MAX_GLOB_CHARS",
    "MAX_GLOB_WILDCARDS",
    "GlobSet",
    "check_glob",
    "check_globs",
    "compile_globs",
    "glob_to_regex",
]
