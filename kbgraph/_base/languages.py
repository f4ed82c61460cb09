"""Code languages and test files, known from a file's path alone.

A code file (kind ``code``) has a language named by its extension (``python``,
``typescript`` …: :data:`CODE_LANGUAGES`). A *test file* is one that a test runner of the
common ecosystems collects, or anything inside a test folder:

- folders: ``test/``, ``tests/``, ``__tests__/``, ``spec/``, ``specs/``, ``testdata/`` at
  any depth;
- Python ``test_*.py``, ``*_test.py``, ``conftest.py``; Go ``*_test.go``; JavaScript and
  TypeScript ``*.test.*``, ``*.spec.*``; Java, Kotlin, Scala, C#, Swift, PHP ``*Test``,
  ``*Tests``, ``*Spec`` (``ClientTest.java``); Ruby ``*_spec.rb``, ``*_test.rb``; C and
  C++ ``*_test.*``, ``*_unittest.*``, ``test_*.*``.

Search filters and the subgraph's scope use both (``SearchFilters(kinds=("python",
"non-test"))``), so "where is X defined" can leave tests out and "how is X tested" can
look in them first.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal, get_args

CodeLanguage = Literal[
    "python", "javascript", "typescript", "go", "rust", "java", "kotlin", "c", "cpp",
    "csharp", "ruby", "php", "swift", "scala", "shell",
]  # fmt: skip
CODE_LANGUAGES: tuple[CodeLanguage, ...] = get_args(CodeLanguage)

TestRole = Literal["test", "non-test"]
TEST_ROLES: tuple[TestRole, ...] = get_args(TestRole)

_BY_SUFFIX: dict[str, CodeLanguage] = {
    "py": "python", "pyi": "python",
    "js": "javascript", "jsx": "javascript", "mjs": "javascript", "cjs": "javascript",
    "ts": "typescript", "tsx": "typescript",
    "go": "go", "rs": "rust", "java": "java", "kt": "kotlin",
    "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "hpp": "cpp",
    "cs": "csharp", "rb": "ruby", "php": "php", "swift": "swift", "scala": "scala",
    "sh": "shell",
}  # fmt: skip
"""Every extension the scanner treats as code (``scan``'s kind ``code``)."""

_TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testdata"})
_TEST_NAME = re.compile(
    r"test_.+\.py|.+_test\.py|conftest\.py"
    r"|.+_test\.go"
    r"|.+\.(?:test|spec)\.[cm]?[jt]sx?"
    r"|.+(?:Test|Tests|Spec)\.(?:java|kt|scala|cs|swift|php)"
    r"|.+_(?:spec|test)\.rb"
    r"|(?:.+_(?:test|unittest)|test_.+)\.(?:c|cc|cpp|h|hpp)"
)


def language_of(path: str) -> CodeLanguage | None:
    """The language of a code file from its extension, or None (not code)."""
    return _BY_SUFFIX.get(PurePosixPath(path).suffix.lower().lstrip("."))


def is_test_path(path: str) -> bool:
    """Whether ``path`` (POSIX, relative to the folder) is a test file or lies in a test
    folder."""
    parts = PurePosixPath(path).parts
    if any(part.lower() in _TEST_DIRS for part in parts[:-1]):
        return True
    return bool(parts) and _TEST_NAME.fullmatch(parts[-1]) is not None


def test_role(path: str) -> TestRole:
    return "test" if is_test_path(path) else "non-test"


__all__ = [
    "CODE_LANGUAGES",
    "TEST_ROLES",
    "CodeLanguage",
    "TestRole",
    "is_test_path",
    "language_of",
    "test_role",
]
