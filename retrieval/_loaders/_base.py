"""What every loader shares: the result record, the skip signal and binary sniffing."""

from __future__ import annotations

from dataclasses import dataclass

from kbgraph.errors import KbgraphError

from .._records import FileKind, SkippedFile, SkipReason
from .._segments import Segment

SNIFF_BYTES = 8192
# Share of control bytes above which a NUL-free file is still treated as binary. Text
# uses almost none (tab, newlines, form feed and ANSI escapes are allowed); compiled and
# compressed data, at random, about one byte in eight.
MAX_CONTROL_RATIO = 0.10
_CONTROL_BYTES = frozenset(range(0x20)) - {0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B} | {0x7F}
_CONTROL_TABLE = bytes(1 if b in _CONTROL_BYTES else 0 for b in range(256))
# Bytes that are not UTF-8 decode as *some* characters under cp1252 or latin-1, so the
# fallback decoding is judged instead: real Western text in those encodings holds almost
# no control characters, while random data decoded as latin-1 is ~23 % controls (C0 and
# the C1 range 0x80-0x9F, which cp1252 maps to punctuation and latin-1 does not).
MAX_FALLBACK_CONTROL_RATIO = 0.05
_MIN_FALLBACK_CONTROLS = 16  # a stray byte or two in a short legacy file is still text
_DROP_CONTROLS = dict.fromkeys(
    [*sorted(_CONTROL_BYTES), *range(0x80, 0xA0)],
    None,
)


class SkipFile(KbgraphError):
    """A file cannot be indexed (binary, unreadable, empty, extraction failed); the
    indexer reports ``skipped`` and carries on with the other files."""

    def __init__(self, skipped: SkippedFile) -> None:
        detail = f": {skipped.detail}" if skipped.detail else ""
        super().__init__(f"{skipped.path} was skipped ({skipped.reason}){detail}")
        self.skipped = skipped


def skip(rel: str, reason: SkipReason, detail: str) -> SkipFile:
    return SkipFile(SkippedFile(rel, reason, detail))


@dataclass(frozen=True, slots=True)
class LoadedFile:
    """The text of one file. ``sha256`` is of the raw bytes; ``notes`` are reported but
    do not stop indexing (``decode-fallback``, a PDF page that failed)."""

    segments: list[Segment]
    kind: FileKind
    sha256: str
    notes: list[SkippedFile]


def binary_reason(data: bytes) -> str | None:
    """Why ``data`` looks binary, or None. Only the first 8 KiB are sniffed, as git and
    ``grep -I`` do: a NUL byte there, or too many control bytes."""
    sample = data[:SNIFF_BYTES]
    if b"\0" in sample:
        return "NUL byte in the first 8 KiB (binary data, or UTF-16 text, which is not supported)"
    if not sample:
        return None
    controls = sum(sample.translate(_CONTROL_TABLE))
    if controls / len(sample) > MAX_CONTROL_RATIO:
        return f"{controls} control bytes in the first {len(sample)} bytes"
    return None


def fallback_binary_reason(text: str, encoding: str) -> str | None:
    """Why a text decoded with a fallback encoding looks like binary data, or None: more
    than ``MAX_FALLBACK_CONTROL_RATIO`` of its characters are control characters."""
    if not text:
        return None
    controls = len(text) - len(text.translate(_DROP_CONTROLS))
    if controls >= _MIN_FALLBACK_CONTROLS and controls / len(text) > MAX_FALLBACK_CONTROL_RATIO:
        share = 100 * controls / len(text)
        return (
            f"not UTF-8, and {share:.1f} % of it decoded as {encoding} are control "
            "characters (binary data, not text)"
        )
    return None


__all__ = ["LoadedFile", "SkipFile", "binary_reason", "fallback_binary_reason", "skip"]
