"""Search filters. They select files before any ranker runs, so that top-k is taken over
the allowed chunks only (filtering after ranking would return fewer than k results)."""

from __future__ import annotations

from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict

from .records import FileKind


class SearchFilters(BaseModel):
    """``paths``: globs (``docs/**/*.md``) or folder prefixes (``docs/api``), any of which
    may match; ``kinds``: file kinds; empty means no restriction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
    """A pattern with glob characters is a glob (``**`` crosses folders); any other pattern
    is a path or folder prefix matched on whole path components."""
    pattern = pattern.strip().lstrip("./") if pattern.startswith("./") else pattern.strip()
    if any(ch in pattern for ch in "*?["):
        if fnmatchcase(source, pattern):
            return True
        # "**/x" should also match "x" at the top level.
        return pattern.startswith("**/") and fnmatchcase(source, pattern[3:])
    prefix = pattern.rstrip("/")
    return source == prefix or source.startswith(prefix + "/") or prefix == ""


__all__ = ["SearchFilters", "path_matches"]
