"""Plain text, Markdown, code and data files: one segment of the decoded file."""

from __future__ import annotations

from .._records import SkippedFile
from .._segments import Segment, decode_bytes
from ._base import binary_reason, fallback_binary_reason, skip


def decode_text_file(data: bytes, rel: str) -> tuple[Segment, list[SkippedFile]]:
    """Decode a text file; raise ``SkipFile`` for binary or blank files. A file that is not
    UTF-8 is still decoded (cp1252, then latin-1) and a ``decode-fallback`` note says so."""
    reason = binary_reason(data)
    if reason is not None:
        raise skip(rel, "binary", reason)
    segment = decode_bytes(data)
    if segment.fallback:
        reason = fallback_binary_reason(segment.text, segment.encoding)
        if reason is not None:
            raise skip(rel, "binary", reason)
    if not segment.text.strip():
        raise skip(rel, "empty", "the file holds no text (empty or whitespace only)")
    notes: list[SkippedFile] = []
    if segment.fallback:
        detail = f"not valid UTF-8; decoded as {segment.encoding}, some characters may be wrong"
        notes.append(SkippedFile(rel, "decode-fallback", detail))
    return segment, notes


__all__ = ["decode_text_file"]
