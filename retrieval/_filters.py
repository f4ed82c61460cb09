"""Search filters. They select files before any ranker runs, so that top-k is taken over
the allowed chunks only (filtering after ranking would return fewer than k results)."""

from __future__ import annotations

from functools import lru_cache
from typing import get_args

from pydantic import field_validator

from kbgraph._base.languages import TEST_ROLES, CodeLanguage, TestRole, language_of, test_role
from kbgraph._base.validation import Settings

from ._globs import GlobSet, check_globs, compile_globs
from ._loaders import file_kinds
from ._records import FileKind

SearchKind = str
"""What ``SearchFilters.kinds`` may name (:func:`search_kinds`): a file kind of the loader
table (``markdown``, ``code`` …), a code language (``python``, ``typescript`` …) or a test
role (``test``, ``non-test``)."""


def search_kinds() -> tuple[SearchKind, ...]:
    """Every kind a filter may name: the file kinds (registered ones too), the code
    languages, the test roles."""
    return (*file_kinds(), *get_args(CodeLanguage), *get_args(TestRole))


class SearchFilters(Settings):
    """``paths``: globs (``docs/**/*.md``) or folder prefixes (``docs/api``), any of which
    may match; ``kinds``: file kinds and code languages, any of which may match, and test
    roles: ``test`` (test files and anything in a test folder, see
    :mod:`kbgraph._base.languages`) or ``non-test``. A file must match both groups
    when both are given: ``("python", "non-test")`` is Python outside the tests. Empty
    means no restriction."""

    paths: tuple[str, ...] = ()
    kinds: tuple[SearchKind, ...] = ()

    @field_validator("paths")
    @classmethod
    def _bounded_globs(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        check_globs(paths)  # each one's and all together's, before any file is matched
        return paths

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, kinds: tuple[str, ...]) -> tuple[str, ...]:
        allowed = search_kinds()
        if bad := [k for k in kinds if k not in allowed]:
            raise ValueError(f"unknown kind {bad[0]!r}; allowed: {', '.join(allowed)}")
        return kinds

    def is_empty(self) -> bool:
        return not self.paths and not self.kinds

    def allows(self, source: str, kind: FileKind) -> bool:
        if self.kinds and not self._kind_allows(source, kind):
            return False
        return not self.paths or _path_matcher(self.paths).allows(source)

    def _kind_allows(self, source: str, kind: FileKind) -> bool:
        roles = [k for k in self.kinds if k in TEST_ROLES]
        if roles and test_role(source) not in roles:
            return False
        what = [k for k in self.kinds if k not in TEST_ROLES]
        return not what or kind in what or language_of(source) in what


def path_matches(source: str, pattern: str) -> bool:
    """A pattern with glob characters is a glob with the scanner's rules (``**`` crosses
    folders, ``*`` does not, a pattern without ``/`` matches at any depth); any other
    pattern is a path or folder prefix matched on whole path components."""
    return _path_matcher((pattern,)).allows(source)


class _PathMatcher:
    """Any of some filter paths: the folder prefixes compared, the globs in one
    :class:`GlobSet` (one regular expression for the usual ones; each glob once, however
    often it is given), so a file costs one match per search, not one per pattern."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        cleaned = [p.strip().removeprefix("./") for p in patterns]
        globs = [p for p in cleaned if _is_glob(p)]
        self.prefixes = tuple(dict.fromkeys(p.rstrip("/") for p in cleaned if not _is_glob(p)))
        self.globs: GlobSet | None = compile_globs(tuple(dict.fromkeys(globs))) if globs else None

    def allows(self, source: str) -> bool:
        if any(p == "" or source == p or source.startswith(p + "/") for p in self.prefixes):
            return True
        return self.globs is not None and self.globs.fullmatch(source) is not None


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


@lru_cache(maxsize=256)
def _path_matcher(patterns: tuple[str, ...]) -> _PathMatcher:
    return _PathMatcher(patterns)


__all__ = ["SearchFilters", "SearchKind", "path_matches", "search_kinds"]
