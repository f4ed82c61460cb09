"""Pick the loader for a file's kind."""

from __future__ import annotations

import hashlib

from ..records import FileKind, SkippedFile
from ..scan import ScannedFile
from ..segments import Segment
from ._base import LoadedFile, skip
from ._csv import with_record_units
from ._docx import load_docx
from ._html import extract_html
from ._pdf import load_pdf
from ._text import decode_text_file


def load_bytes(data: bytes, rel: str, kind: FileKind) -> LoadedFile:
    """Turn the bytes of a file into segments; raise ``SkipFile`` when the file cannot be
    indexed (binary, empty, extraction failed)."""
    segments: list[Segment]
    notes: list[SkippedFile]
    if kind == "pdf":
        segments, notes = load_pdf(data, rel)
    elif kind == "docx":
        segments, notes = load_docx(data, rel)
    else:
        segment, notes = decode_text_file(data, rel)
        if kind == "html":
            segment = extract_html(segment, data, rel)
        elif kind == "csv":
            segment = with_record_units(segment, rel)
        segments = [segment]
    sha256 = hashlib.sha256(data).hexdigest()
    return LoadedFile(segments=segments, kind=kind, sha256=sha256, notes=notes)


def load_file(file: ScannedFile) -> LoadedFile:
    """Read and load one scanned file."""
    try:
        data = file.path.read_bytes()
    except OSError as exc:
        raise skip(file.rel, "unreadable", exc.strerror or str(exc)) from exc
    return load_bytes(data, file.rel, file.kind)


__all__ = ["load_bytes", "load_file"]
