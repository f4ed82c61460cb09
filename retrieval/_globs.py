"""Glob patterns over POSIX relative paths, as the scan and the search filters use them
(semantics in :mod:`kbgraph.retrieval._scan`)."""

from __future__ import annotations

import re
from collections.abc import Iterable


def glob_to_regex(pattern: str) -> str:
    """Translate one glob to a regular expression over POSIX relative paths (semantics in
    :mod:`kbgraph.retrieval._scan`'s docstring; ``[...]`` classes as in :mod:`fnmatch`,
    ``[!...]`` negates)."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    if "/" not in pattern:
        pattern = "**/" + pattern
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                out.append("(?:.*/)?")
                i += 1
            else:
                out.append(".*")
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and (close := _class_end(pattern, i)) > 0:
            body = pattern[i + 1 : close].replace("\\", "\\\\").replace("[", "\\[")
            if body.startswith("!"):
                body = "^" + body[1:]
            elif body.startswith("^"):  # a literal caret, as in fnmatch
                body = "\\" + body
            out.append(f"[{body}]")
            i = close
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1 (a literal ``[``)."""
    j = start + 1
    if j < len(pattern) and pattern[j] == "!":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    close = pattern.find("]", j)
    return close if close > 0 and "/" not in pattern[start:close] else -1


def compile_globs(patterns: Iterable[str], *, ignore_case: bool = False) -> re.Pattern[str]:
    """One regex matching any of ``patterns`` (use ``fullmatch``); none matches nothing."""
    parts = [f"(?:{glob_to_regex(p)})" for p in patterns if p.strip()]
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile("|".join(parts) if parts else "(?!)", flags)


__all__ = ["compile_globs", "glob_to_regex"]
