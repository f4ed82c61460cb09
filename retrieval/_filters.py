"""Search filters. They select files before any ranker runs, so that top-k is taken over
the allowed chunks only (filtering after ranking would return fewer than k results)."""

from __future__ import annotations

from functools import lru_cache
from typing import get_args

from pydantic import field_validator

from kbgraph._base.languages import TEST_ROLES, CodeLanguage, TestRole, language_of, test_role
from kbgraph._base.validation import Settings

from ._globs import GlobSet, check_glob, compile_globs
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
        for pattern in paths:
            check_glob(pattern)  # length and wildcards, before any file is matched
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
        if not self.paths:
            return True
        return any(path_matches(source, pattern) for pattern in self.paths)

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
    pattern = pattern.strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if any(ch in pattern for ch in "*?["):
        return _compiled(pattern).fullmatch(source) is not None
    prefix = pattern.rstrip("/")
    return source == prefix or source.startswith(prefix + "/") or prefix == ""


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> GlobSet:
    return compile_globs([pattern])


__all__ = ["SearchFilters", "SearchKind", "path_matches", "search_kinds"]
