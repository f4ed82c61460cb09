"""Pick the loader for a file's kind."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

from ..records import FileKind, SkippedFile
from ..scan import ScannedFile
from ..segments import Segment
from ._base import LoadedFile, skip
from ._csv import with_record_units
from ._docx import load_docx
from ._html import extract_html
from ._pdf import load_pdf
from ._plain import decode_text_file

READ_TIMEOUT_S = 30.0
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX; Windows has no FIFOs to open
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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


def load_file(file: ScannedFile, *, timeout: float = READ_TIMEOUT_S) -> LoadedFile:
    """Read and load one scanned file."""
    return load_bytes(read_document(file.path, file.rel, timeout=timeout), file.rel, file.kind)


def read_document(path: Path, rel: str, *, timeout: float = READ_TIMEOUT_S) -> bytes:
    """The bytes of a regular file, never blocking on anything else: the file is opened
    non-blocking (a FIFO swapped in since the scan would block a plain open until a writer
    came) and its type checked on the open descriptor, and the read must finish within
    ``timeout`` seconds (a hung network mount), else the file is skipped as unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        raise skip(rel, "unreadable", exc.strerror or str(exc)) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise skip(rel, "unreadable", "not a regular file (pipe, socket or device)")
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    data = read_with_timeout(fd, timeout)  # takes the descriptor over
    if isinstance(data, OSError):
        raise skip(rel, "unreadable", data.strerror or str(data)) from data
    if data is None:
        raise skip(rel, "unreadable", f"reading it took longer than {timeout:g}s")
    return data


def read_with_timeout(fd: int, timeout: float) -> bytes | OSError | None:
    """Read ``fd`` to its end in a helper thread, which closes it; None when the read did
    not finish within ``timeout`` seconds (the thread is left to finish or hang alone: a
    read blocked in the kernel cannot be cancelled)."""
    result: list[bytes | OSError] = []

    def work() -> None:
        try:
            with os.fdopen(fd, "rb") as fh:
                result.append(fh.read())
        except OSError as exc:
            result.append(exc)

    reader = threading.Thread(target=work, name="kbgraph-read", daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else None


__all__ = ["READ_TIMEOUT_S", "load_bytes", "load_file", "read_document", "read_with_timeout"]
