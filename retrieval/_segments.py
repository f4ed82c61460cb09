"""Decoded text that remembers where each character came from.

Chunkers work on newline-normalised text (CRLF and lone CR become LF) so that every
strategy sees one kind of line break; a :class:`Segment` keeps, for every character of
that text, the byte offset of the character in the original file. A chunk ``[start, end)``
of the text therefore maps back to ``bytes[offsets[start]:offsets[end]]`` of the file, and
decoding those bytes and normalising newlines gives the chunk text again.
"""

from __future__ import annotations

import codecs
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from ._records import Chunk, chunk_id

# Tried in order after UTF-8 fails; cp1252 covers most "Windows" text and latin-1 can
# decode any byte string, so the chain always ends with a result.
FALLBACK_ENCODINGS: tuple[str, ...] = ("cp1252", "latin-1")


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    """A heading known from a document's structure (a DOCX heading style): the heading's
    line starts at text position ``pos``."""

    pos: int
    level: int
    title: str


@dataclass(frozen=True, slots=True)
class Segment:
    """A normalised text with ``offsets[i]`` = byte offset of ``text[i]`` in the file and
    ``offsets[len(text)]`` = the end offset. ``line_base`` is the 1-based line of
    ``text[0]``; ``page`` is set for PDF pages."""

    text: str
    offsets: np.ndarray
    line_base: int = 1
    page: int | None = None
    encoding: str = "utf-8"
    fallback: bool = False
    # Byte offsets where the file's lines start, for segments whose text is extracted
    # (HTML): line numbers then come from the original bytes, not from the text.
    byte_line_starts: np.ndarray | None = None
    # Spans a chunker must keep whole (CSV rows), sorted, in text positions.
    units: tuple[tuple[int, int], ...] | None = None
    # Headings from the document's structure (DOCX), in order; None: find them in the text.
    outline: tuple[OutlineEntry, ...] | None = None

    def newline_positions(self) -> list[int]:
        return [i for i, ch in enumerate(self.text) if ch == "\n"]


def _utf8_widths(text: str) -> np.ndarray:
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    widths = np.ones(len(codes), dtype=np.int64)
    widths[codes >= 0x80] = 2
    widths[codes >= 0x800] = 3
    widths[codes >= 0x10000] = 4
    return widths


def segment_from_text(
    raw_text: str,
    *,
    start_byte: int = 0,
    encoding: str = "utf-8",
    fallback: bool = False,
    line_base: int = 1,
    page: int | None = None,
) -> Segment:
    """Build a segment from text as decoded from the file (before newline normalisation)."""
    if encoding.replace("-", "").lower() in ("utf8", "utf8sig"):
        widths = _utf8_widths(raw_text)
    else:
        # Single-byte fallbacks (cp1252, latin-1): one byte per character.
        widths = np.ones(len(raw_text), dtype=np.int64)
    offsets = np.empty(len(raw_text) + 1, dtype=np.int64)
    offsets[0] = start_byte
    np.cumsum(widths, out=offsets[1:])
    offsets[1:] += start_byte
    if "\r" in raw_text:
        # A CRLF pair becomes one LF that starts where the CR starts: drop the entry of
        # every LF preceded by CR. A lone CR stays one character (it becomes LF).
        chars = np.frombuffer(raw_text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        lf_after_cr = np.zeros(len(chars), dtype=bool)
        lf_after_cr[1:] = (chars[1:] == 0x0A) & (chars[:-1] == 0x0D)
        keep = np.ones(len(raw_text) + 1, dtype=bool)
        keep[:-1] = ~lf_after_cr
        offsets = offsets[keep]
    return Segment(
        text=normalize_newlines(raw_text),
        offsets=offsets,
        line_base=line_base,
        page=page,
        encoding=encoding,
        fallback=fallback,
    )


def decode_bytes(data: bytes) -> Segment:
    """Decode a whole file: UTF-8 (BOM skipped but counted in offsets), else a reported
    fallback encoding."""
    if data.startswith(codecs.BOM_UTF8):
        try:
            return segment_from_text(data[3:].decode("utf-8"), start_byte=3)
        except UnicodeDecodeError:
            pass
    else:
        try:
            return segment_from_text(data.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    for encoding in FALLBACK_ENCODINGS:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        return segment_from_text(text, encoding=encoding, fallback=True)
    raise AssertionError("latin-1 decodes every byte string")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class Span:
    """A chunk candidate: ``[start, end)`` in a segment's text, plus its heading path."""

    start: int
    end: int
    section: str | None = None


class LineIndex:
    """Maps character positions of a segment to 1-based line numbers in O(log n)."""

    def __init__(self, segment: Segment) -> None:
        self._segment = segment
        self._newlines = segment.newline_positions()
        self._base = segment.line_base

    def line_of(self, pos: int) -> int:
        starts = self._segment.byte_line_starts
        if starts is not None:
            return int(np.searchsorted(starts, self._segment.offsets[pos], side="right"))
        return self._base + bisect_right(self._newlines, pos - 1)


def spans_to_chunks(segment: Segment, spans: list[Span], source: str) -> list[Chunk]:
    """Turn spans into chunks with exact line and byte coordinates. Empty or all-blank
    spans are dropped: they carry nothing to retrieve."""
    lines = LineIndex(segment)
    # PDF offsets are per page: the page joins the identity so that a header repeated on
    # every page does not collapse into one chunk id.
    identity = source if segment.page is None else f"{source}#page={segment.page}"
    chunks: list[Chunk] = []
    for span in spans:
        text = segment.text[span.start : span.end]
        if not text.strip():
            continue
        byte_start = int(segment.offsets[span.start])
        byte_end = int(segment.offsets[span.end])
        chunks.append(
            Chunk(
                id=chunk_id(identity, byte_start, byte_end, text),
                text=text,
                source=source,
                line_start=lines.line_of(span.start),
                line_end=lines.line_of(span.end - 1),
                byte_start=byte_start,
                byte_end=byte_end,
                section=span.section,
                page=segment.page,
            )
        )
    return chunks


__all__ = [
    "FALLBACK_ENCODINGS",
    "LineIndex",
    "OutlineEntry",
    "Segment",
    "Span",
    "decode_bytes",
    "normalize_newlines",
    "segment_from_text",
    "spans_to_chunks",
]
