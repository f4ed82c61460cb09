"""Pick the loader for a file's kind."""

from __future__ import annotations

import hashlib

from ..config import ScanConfig
from ..records import FileKind, ScannedFile
from ._base import LoadedFile
from ._kinds import loader_for
from ._read import READ_TIMEOUT_S, read_scanned, read_with_timeout


def load_bytes(data: bytes, rel: str, kind: FileKind) -> LoadedFile:
    """Turn the bytes of a file into segments; raise ``SkipFile`` when the file cannot be
    indexed (binary, empty, extraction failed)."""
    segments, notes = loader_for(kind).load(data, rel)
    sha256 = hashlib.sha256(data).hexdigest()
    return LoadedFile(segments=segments, kind=kind, sha256=sha256, notes=notes)


def load_file(
    file: ScannedFile, *, timeout: float = READ_TIMEOUT_S, max_bytes: int | None = None
) -> LoadedFile:
    """Read (safely: :mod:`._read`) and load one scanned file; ``max_bytes`` defaults to
    the scan's default ``max_file_bytes``."""
    limit = ScanConfig().max_file_bytes if max_bytes is None else max_bytes
    data = read_scanned(file, max_bytes=limit, timeout=timeout)
    return load_bytes(data, file.rel, file.kind)


__all__ = ["READ_TIMEOUT_S", "load_bytes", "load_file", "read_with_timeout"]
