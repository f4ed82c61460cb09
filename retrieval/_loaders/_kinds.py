"""The loader table: each file kind, the suffixes that name it and the function that turns
a file's bytes into segments. The scan reads a file's kind here, the indexer its loader,
the filters and the CLI the kinds: one entry is all a new kind takes
(:func:`register_loader`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

from kbgraph._base.registry import Registry
from kbgraph.errors import ConfigError

if TYPE_CHECKING:  # a search reads this table, never a segment
    from .._records import SkippedFile
    from .._segments import Segment

Load = Callable[[bytes, str], "tuple[list[Segment], list[SkippedFile]]"]
"""``(data, rel)`` → the file's segments and notes; raises ``SkipFile`` for a file that
cannot be indexed."""
TEXT = "text"  # a file whose suffix no loader names


ChunkAs = Literal["markdown", "code", "data"]
"""How chunking by kind (``ChunkConfig.by_kind``) cuts a kind: at headings (``markdown``:
a Markdown file, or a loader's outline), at definitions (``code``), or small (``data``)."""


@dataclass(frozen=True, slots=True)
class Loader:
    """A file kind: its name, its suffixes (lower case, no dot), its load function and how
    chunking by kind cuts it (``None``: the configured strategy)."""

    kind: str
    suffixes: tuple[str, ...]
    load: Load
    chunk_as: ChunkAs | None = None


# The loaders themselves (the segments; html.parser, zipfile, pypdf's wrapper, csv) are
# imported by the first file of their kind: the table is read by every search (a file's
# kind), a loader only by the indexer.
def load_text(data: bytes, rel: str) -> tuple[list[Segment], list[SkippedFile]]:
    """Decoded text as one segment (plain text, Markdown, code, data files)."""
    from ._plain import decode_text_file

    segment, notes = decode_text_file(data, rel)
    return [segment], notes


def _load_html(data: bytes, rel: str) -> tuple[list[Segment], list[SkippedFile]]:
    from ._html import extract_html
    from ._plain import decode_text_file

    segment, notes = decode_text_file(data, rel)
    return [extract_html(segment, data, rel)], notes


def _load_csv(data: bytes, rel: str) -> tuple[list[Segment], list[SkippedFile]]:
    from ._csv import with_record_units
    from ._plain import decode_text_file

    segment, notes = decode_text_file(data, rel)
    return [with_record_units(segment, rel)], notes


def _load_pdf(data: bytes, rel: str) -> tuple[list[Segment], list[SkippedFile]]:
    from ._pdf import load_pdf

    return load_pdf(data, rel)


def _load_docx(data: bytes, rel: str) -> tuple[list[Segment], list[SkippedFile]]:
    from ._docx import load_docx

    return load_docx(data, rel)


_CODE = ("py", "pyi", "js", "jsx", "mjs", "cjs", "ts", "tsx", "rs", "go", "java", "kt",
         "c", "h", "cc", "cpp", "hpp", "cs", "rb", "php", "swift", "scala", "sh")  # fmt: skip
_BUILT_IN = (
    # rst is plain text: its headings are not Markdown headings.
    Loader(TEXT, (), load_text),
    Loader("markdown", ("md", "markdown", "mdx"), load_text, "markdown"),
    Loader("code", _CODE, load_text, "code"),
    Loader("html", ("html", "htm", "xhtml"), _load_html),
    Loader("pdf", ("pdf",), _load_pdf),
    Loader("docx", ("docx",), _load_docx, "markdown"),  # sectioned by its heading styles
    Loader("csv", ("csv", "tsv"), _load_csv),
    Loader("data", ("json", "jsonl", "yaml", "yml", "toml"), load_text, "data"),
)
_LOADERS: Registry[Loader] = Registry("file kind", {loader.kind: loader for loader in _BUILT_IN})
_BY_SUFFIX: dict[str, str] = {s: loader.kind for loader in _BUILT_IN for s in loader.suffixes}


def register_loader(loader: Loader, *, replace: bool = False) -> Loader:
    """Add a file kind (or, with ``replace``, change one): its suffixes are scanned as that
    kind from now on (a suffix another kind names is refused: remove it there first)."""
    if not loader.kind.isidentifier():
        raise ConfigError(f"a file kind is a lower-case word, got {loader.kind!r}")
    if loader.kind in _LOADERS and not replace:
        _LOADERS.add(loader.kind, loader)  # refuses the kind taken (unless it is this loader)
    taken = {
        s: _BY_SUFFIX[s] for s in loader.suffixes if _BY_SUFFIX.get(s, loader.kind) != loader.kind
    }
    if taken:
        suffix, kind = next(iter(taken.items()))
        raise ConfigError(f"the suffix {suffix!r} is the kind {kind!r}'s; choose another suffix")
    if loader.kind in _LOADERS:
        unregister_loader(loader.kind)
    _LOADERS.add(loader.kind, loader, replace=True)
    _BY_SUFFIX.update(dict.fromkeys(loader.suffixes, loader.kind))
    return loader


def unregister_loader(kind: str) -> None:
    """Remove the kind ``kind`` (a test's cleanup); its suffixes become plain text."""
    if kind == TEXT:
        raise ConfigError(f"the file kind {TEXT!r} is every other file's and stays")
    _LOADERS.remove(kind)
    for suffix in [s for s, k in _BY_SUFFIX.items() if k == kind]:
        del _BY_SUFFIX[suffix]


def file_kinds() -> tuple[str, ...]:
    """Every file kind, built-in ones first."""
    return _LOADERS.names()


def kind_of(rel: str) -> str:
    """The kind of a file from its suffix (:data:`TEXT` when no loader names it)."""
    return _BY_SUFFIX.get(PurePosixPath(rel).suffix.lower().lstrip("."), TEXT)


def loader_for(kind: str) -> Loader:
    """The loader of ``kind``; a kind no longer registered (an index written while a plug-in
    was) loads as text."""
    return _LOADERS.get(kind) or _LOADERS[TEXT]


__all__ = [
    "TEXT",
    "ChunkAs",
    "Load",
    "Loader",
    "file_kinds",
    "kind_of",
    "load_text",
    "loader_for",
    "register_loader",
    "unregister_loader",
]
