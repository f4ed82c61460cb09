"""Search filters. They select files before any ranker runs, so that top-k is taken over
the allowed chunks only (filtering after ranking would return fewer than k results)."""

from __future__ import annotations

import re
from functools import lru_cache

from .records import FileKind
from .scan import compile_globs
from .validation import Settings


class SearchFilters(Settings):
    """``paths``: globs (``docs/**/*.md``) or folder prefixes (``docs/api``), any of which
    may match; ``kinds``: file kinds; empty means no restriction."""

    paths: tuple[str, ...] = ()
    kinds: tuple[FileKind, ...] = ()

    def is_empty(self) -> bool:
        return not self.paths and not self.kinds

    def allows(self, source: str, kind: FileKind) -> bool:
        if self.kinds and kind not in self.kinds:
            return False
        if not self.paths:
            return True
        return any(path_matches(source, pattern) for pattern in self.paths)


def path_matches(source: str, pattern: str) -> bool:
    """A pattern with glob characters is a glob with the scanner's rules (``**`` crosses
    folders, ``*`` does not, a pattern without ``/`` matches at any depth); any other
    pattern is a path or folder prefix matched on whole path components."""
    pattern = pattern.strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if any(ch in pattern for ch in "*?["):
        return _compiled(pattern).fullmatch(source) is not None
    prefix = pattern.rstrip("/")
    return source == prefix or source.startswith(prefix + "/") or prefix == ""


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return compile_globs([pattern])


__all__ = ["SearchFilters", "path_matches"]
