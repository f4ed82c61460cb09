"""PDF files: the text of each page, extracted with pypdf, one segment per page.

A PDF has no lines of its own, so the coordinates of a PDF chunk are relative to the text
extracted from its page: ``page`` is the 1-based page number, line numbers are lines of
that page's extracted text (``line_base=1``), and byte offsets are offsets into that text
encoded as UTF-8 (not into the PDF file). A page whose extraction fails is left out with
an ``extract-failed`` note; a PDF that cannot be read at all is skipped (with what pypdf
warned about it, which never reaches stderr).
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .._records import SkippedFile
from .._segments import Segment, segment_from_text
from ._base import SkipFile, skip

if TYPE_CHECKING:
    from pypdf import PdfReader


class _Collect(logging.Handler):
    """pypdf's warnings of this thread (a damaged file's "EOF marker not found"), kept for
    the file's skip reason instead of reaching stderr through logging's last resort."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(" ".join(record.getMessage().split()))


@contextmanager
def _pypdf_warnings() -> Iterator[list[str]]:
    logger = logging.getLogger("pypdf")
    handler = _Collect()
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)


def _open(data: bytes, rel: str, warnings: list[str]) -> PdfReader:
    # Imported here: pypdf takes a noticeable share of a cold `kbgraph search`, which
    # loads no PDF.
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        # Many PDFs are "encrypted" with an empty user password and open without one.
        if reader.is_encrypted and not reader.decrypt(""):
            raise skip(rel, "extract-failed", "the PDF is password-protected")
        _ = len(reader.pages)
    except SkipFile:
        raise
    except Exception as exc:  # pypdf raises many exception types on damaged files
        said = f" ({'; '.join(dict.fromkeys(warnings))})" if warnings else ""
        raise skip(rel, "extract-failed", f"pypdf cannot read the PDF: {exc}{said}") from exc
    return reader


def load_pdf(data: bytes, rel: str) -> tuple[list[Segment], list[SkippedFile]]:
    """One segment per page with text; raise ``SkipFile`` when no page gives any."""
    with _pypdf_warnings() as warnings:
        return _load_pdf(data, rel, warnings)


def _load_pdf(
    data: bytes, rel: str, warnings: list[str]
) -> tuple[list[Segment], list[SkippedFile]]:
    reader = _open(data, rel, warnings)
    segments: list[Segment] = []
    notes: list[SkippedFile] = []
    for number, page in enumerate(reader.pages, start=1):
        try:
            text = page.extract_text()
        except Exception as exc:  # one bad page must not lose the others
            notes.append(SkippedFile(rel, "extract-failed", f"page {number}: {exc}"))
            continue
        if text.strip():
            segments.append(segment_from_text(text, page=number, line_base=1))
    if segments:
        return segments, notes
    if notes and len(notes) == len(reader.pages):
        raise skip(rel, "extract-failed", f"no page could be extracted ({notes[0].detail})")
    raise skip(rel, "empty", "the PDF has no extractable text (a scanned PDF needs OCR first)")


__all__ = ["load_pdf"]
