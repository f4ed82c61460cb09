"""File loaders: the bytes of a scanned file become text segments that remember where
every character came from (see :mod:`kbgraph.retrieval._segments`).

``load_file`` raises :class:`SkipFile` for files that cannot be indexed (binary,
unreadable, empty, extraction failed); its ``skipped`` record goes into the index report.
Problems that do not stop indexing (a non-UTF-8 file decoded with a fallback encoding, a
PDF page that failed) come back as ``LoadedFile.notes``.
"""

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

from ._kinds import (
    TEXT,
    ChunkAs,
    Load,
    Loader,
    file_kinds,
    kind_of,
    load_text,
    loader_for,
    register_loader,
    unregister_loader,
)

if TYPE_CHECKING:
    # Reading and loading files load on first use: a search filters by the kinds table
    # above and reads no document, so the segments (three dataclasses) stay unloaded.
    from ._base import LoadedFile, SkipFile, binary_reason
    from ._load import load_bytes, load_file
    from ._read import open_regular_file, read_regular_file, read_scanned

__getattr__ = lazy_imports(globals())

__all__ = [
    "TEXT",
    "ChunkAs",
    "Load",
    "LoadedFile",
    "Loader",
    "SkipFile",
    "binary_reason",
    "file_kinds",
    "kind_of",
    "load_bytes",
    "load_file",
    "load_text",
    "loader_for",
    "open_regular_file",
    "read_regular_file",
    "read_scanned",
    "register_loader",
    "unregister_loader",
]
