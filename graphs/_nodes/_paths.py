"""Files, folders and file kinds a question names, matched against the real files of a
knowledge base folder, so that a scope never names a path that does not exist."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from kbgraph._base.languages import is_test_path, language_of
from kbgraph._base.text import word_set, words
from kbgraph.retrieval._internal import SearchKind, path_matches, search_kinds


def scope_kinds() -> tuple[SearchKind, ...]:
    """The kinds a scope may name: the filters' (file kinds of the loader table, code
    languages, test roles), read when asked so a registered file kind is one too."""
    return search_kinds()


LISTING_LIMIT = 5000
_SKIP_DIRS = frozenset(
    {"node_modules", "__pycache__", "venv", "env", "site-packages", "dist", "build", "target"}
)

_TOKEN = re.compile(r"[\w*][\w.*/\\-]*", re.UNICODE)
_FOLDER_NAMED = re.compile(
    r"\b(?:in|under|inside|within|from|of)\s+(?:the\s+|my\s+|our\s+)?[`'\"]?([\w./-]+)[`'\"]?"
    r"\s+(?:folder|directory|dir|subfolder|package|module)\b"
    r"|\b(?:folder|directory|dir|subfolder)\s+[`'\"]?([\w./-]+)",
    re.IGNORECASE | re.UNICODE,
)
_DOC_KINDS: dict[str, SearchKind] = {
    "markdown": "markdown", "md": "markdown", "pdf": "pdf", "pdfs": "pdf", "csv": "csv",
    "html": "html", "docx": "docx", "word": "docx", "json": "data", "yaml": "data",
    "toml": "data", "txt": "text",
}  # fmt: skip
_LANGUAGES: dict[str, SearchKind] = {
    "python": "python", "javascript": "javascript", "typescript": "typescript",
    "rust": "rust", "java": "java", "golang": "go", "go": "go", "kotlin": "kotlin",
    "ruby": "ruby", "php": "php", "swift": "swift", "scala": "scala", "shell": "shell",
}  # fmt: skip
_KIND_NAMES: dict[str, SearchKind] = {**_DOC_KINDS, **_LANGUAGES}
_DOC_WORDS = "|".join(sorted(_DOC_KINDS, key=len, reverse=True))
_ALL_WORDS = "|".join(sorted(_KIND_NAMES, key=len, reverse=True))
# A kind counts only after "in / from (the)" or before a document noun: "export to PDF" or
# "retry in Python" name a topic, "in the PDF files" or "the Python modules" a scope.
_KIND_PHRASE = re.compile(
    rf"\b(?:in|from|inside|within|among|across)\s+(?:the\s+|my\s+|our\s+|all\s+)?"
    rf"({_DOC_WORDS})\b(?!\s+(?:format|export|output))"
    rf"|\b({_ALL_WORDS})\s+(?:files?|documents?|docs|sources?|pages?|code|scripts?|modules?)\b",
    re.IGNORECASE,
)
_CODE_PHRASE = re.compile(r"\b(?:source code|the codebase|in the code)\b", re.IGNORECASE)
# "How is X tested?", "the tests for X", "which test cases cover X": look in the tests.
_TEST_PHRASE = re.compile(
    r"\btested\b|\b(?:unit |integration )?tests?\s+(?:for|of|that|which|covering|cover)\b"
    r"|\btest\s+(?:cases?|files?|suites?|coverage)\b|\b(?:in|from) the tests\b",
    re.IGNORECASE,
)
# "Where is X defined?", "the implementation of X": the definition, not its tests.
_DEFINITION_PHRASE = re.compile(
    r"\b(?:where|which file|what file)\b.{0,80}?\b(?:defined|declared|implemented)\b"
    r"|\b(?:definition|implementation|declaration)\s+of\b",
    re.IGNORECASE,
)
_ROLE_WORDS: dict[str, frozenset[str]] = {
    "test": word_set("test tests tested testing"),
    "non-test": word_set(
        "defined declared implemented definition implementation declaration where"
    ),
}


@dataclass(frozen=True, slots=True)
class Listing:
    files: tuple[str, ...]
    folders: tuple[str, ...]


def list_folder(folder: str, limit: int = LISTING_LIMIT) -> Listing:
    """Relative POSIX paths of up to ``limit`` files and their folders (hidden entries and
    dependency / build folders left out), in a stable order."""
    files: list[str] = []
    folders: set[str] = set()
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        rel_root = os.path.relpath(root, folder).replace(os.sep, "/")
        prefix = "" if rel_root == "." else rel_root + "/"
        if prefix:
            folders.add(rel_root)
        for name in sorted(names):
            if not name.startswith("."):
                files.append(prefix + name)
                if len(files) >= limit:
                    return Listing(tuple(files), tuple(sorted(folders)))
    return Listing(tuple(files), tuple(sorted(folders)))


def _clean(token: str) -> str:
    return token.replace("\\", "/").strip("./`'\"").rstrip("?!,;:)")


def mentioned_paths(question: str, listing: Listing) -> list[str]:
    """Path filters for the files and folders of ``listing`` that ``question`` names: a
    file name (``auth.md``), a path (``docs/api``), a distinctive stem (``retry_policy``),
    an extension glob (``*.py``) or a folder introduced as one ("in the api folder")."""
    found: dict[str, None] = {}
    lowered_files = [(f, f.lower()) for f in listing.files]
    folder_names = {PurePosixPath(d).name.lower(): d for d in listing.folders}
    for raw in _TOKEN.findall(question):
        token = _clean(raw).lower()
        if not token:
            continue
        if token.startswith("*.") or (raw.startswith(".") and token.isalnum() and len(token) <= 5):
            ext = token.lstrip("*.")
            if any(low.endswith("." + ext) for _, low in lowered_files):
                found.setdefault(f"**/*.{ext}", None)
            continue
        for pattern in _file_or_folder(token, lowered_files, folder_names, listing):
            found.setdefault(pattern, None)
    for match in _FOLDER_NAMED.finditer(question):
        name = _clean(match.group(1) or match.group(2) or "").lower()
        if name in folder_names:
            found.setdefault(_folder_pattern(folder_names[name]), None)
    return list(found)


def _file_or_folder(
    token: str,
    lowered_files: Sequence[tuple[str, str]],
    folder_names: dict[str, str],
    listing: Listing,
) -> Iterable[str]:
    if "/" in token:
        exact = [f for f, low in lowered_files if low == token or low.endswith("/" + token)]
        if exact:
            return exact
        folders = [
            d for d in listing.folders if d.lower() == token or d.lower().endswith("/" + token)
        ]
        return [_folder_pattern(d) for d in folders]
    has_ext = (
        "." in token and token.rsplit(".", 1)[1].isalnum() and not token.replace(".", "").isdigit()
    )
    if has_ext:
        return [f for f, low in lowered_files if PurePosixPath(low).name == token]
    if "-" in token or "_" in token:
        # A hyphenated or snake_case word is distinctive enough to be a file or folder name.
        files = [f for f, low in lowered_files if PurePosixPath(low).stem == token]
        if files:
            return files
        if token in folder_names:
            return [_folder_pattern(folder_names[token])]
    return []


def _folder_pattern(folder: str) -> str:
    return f"{folder}/**"


def mentioned_kinds(question: str, listing: Listing | None = None) -> list[SearchKind]:
    """The kinds a question names: file kinds and languages ("in the PDF files", "the
    Python modules"), and the test role of what it asks about: "how is X tested" looks in
    the test files, "where is X defined" outside them. With a ``listing``, a language or
    test role no listed file has is left out (it would empty the search)."""
    kinds: dict[SearchKind, None] = {}
    for match in _KIND_PHRASE.finditer(question):
        word = (match.group(1) or match.group(2)).lower()
        kinds.setdefault(_KIND_NAMES[word], None)
    if _CODE_PHRASE.search(question):
        kinds.setdefault("code", None)
    if _TEST_PHRASE.search(question):
        kinds.setdefault("test", None)
    elif _DEFINITION_PHRASE.search(question):
        kinds.setdefault("non-test", None)
    if listing is None:
        return list(kinds)
    return [k for k in kinds if _listed(k, listing)]


def _listed(kind: SearchKind, listing: Listing) -> bool:
    """Whether some listed file is of ``kind`` (file kinds are not checked: as before,
    a kind named but absent widens on retry)."""
    if kind == "test":
        return any(is_test_path(f) for f in listing.files)
    if kind == "non-test":
        return any(not is_test_path(f) for f in listing.files)
    if kind in _LANGUAGES.values():
        return any(language_of(f) == kind for f in listing.files)
    return True


# Nouns that say where to look ("in the CSV file", "under the api folder"), not what about.
_SCOPE_NOUNS = word_set(
    """
    file files folder folders directory directories dir dirs subfolder subfolders document
    documents doc docs page pages script scripts module modules package packages extension
    """
)


def scope_terms(question: str, paths: Sequence[str], kinds: Sequence[str]) -> list[str]:
    """The words of ``question`` that name the scope of ``paths`` and ``kinds`` rather than
    the topic: the words of a path the question writes out (``docs/configuration.md``,
    ``retry_policy``, ``*.py``) or of a folder it introduces as one ("in the api folder")
    when the scope kept that path, the names of the chosen kinds ("CSV"), and the nouns
    around them ("file", "folder"). A scope the question did not name (a chat model chose
    ``deploy.md`` for "How do we deploy?") consumes nothing."""
    path_words = {w for p in paths for w in words(p)}
    named: set[str] = set()
    for match in _TOKEN.finditer(question):
        token = _clean(match.group(0))
        dotted = match.start() > 0 and question[match.start() - 1] == "."  # ".py files"
        if dotted or _looks_like_path(token):
            named |= {w for w in words(token) if w in path_words}
    for match in _FOLDER_NAMED.finditer(question):
        named |= {w for w in words(match.group(1) or match.group(2) or "") if w in path_words}
    kind_words = {w for w, kind in _KIND_NAMES.items() if kind in kinds} | set(kinds)
    kind_words |= {
        w for role, role_words in _ROLE_WORDS.items() if role in kinds for w in role_words
    }
    asked = words(question)
    named |= {w for w in asked if w in kind_words}
    if not named:
        return []
    return list(dict.fromkeys(w for w in asked if w in named or w in _SCOPE_NOUNS))


def _looks_like_path(token: str) -> bool:
    if any(ch in token for ch in "/*_-"):
        return True
    head, dot, ext = token.rpartition(".")
    return bool(dot and head and ext.isalnum() and not token.replace(".", "").isdigit())


def existing(patterns: Iterable[str], listing: Listing) -> list[str]:
    """The patterns that match at least one listed file (others would empty the search)."""
    return [p for p in patterns if any(path_matches(f, p) for f in listing.files)]


__all__ = [
    "Listing",
    "existing",
    "list_folder",
    "mentioned_kinds",
    "mentioned_paths",
    "scope_kinds",
    "scope_terms",
]
