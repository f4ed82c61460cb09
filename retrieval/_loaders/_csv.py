"""CSV files: the decoded text plus the span of every record, so that chunkers never cut
a row in two. Record boundaries follow the :mod:`csv` module's quoting rules, so a quoted
field holding line breaks stays inside its record."""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Iterator

from .._segments import Segment

_SNIFF_CHARS = 16384
_DELIMITERS = ",;\t|"


def _delimiter(text: str, rel: str) -> str:
    if rel.lower().endswith(".tsv"):
        return "\t"
    try:
        return csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=_DELIMITERS).delimiter
    except csv.Error:  # one column, or too irregular to tell: the comma is the default
        return ","


def _lines(text: str, consumed: list[int]) -> Iterator[str]:
    """Yield the lines of ``text`` (with their LF) and keep ``consumed[0]`` at the end of
    the last line handed out: the csv reader pulls lines only as a record needs them."""
    pos = 0
    while pos < len(text):
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl + 1
        consumed[0] = end
        yield text[pos:end]
        pos = end


def record_units(text: str, delimiter: str = ",") -> tuple[tuple[int, int], ...]:
    """``(start, end)`` text positions of each non-blank record, its final LF excluded.
    A file the csv module rejects (an unterminated quote would swallow the rest of the
    file) falls back to one unit per line."""
    consumed = [0]
    units: list[tuple[int, int]] = []
    start = 0
    try:
        for row in csv.reader(_lines(text, consumed), delimiter=delimiter, strict=True):
            end = consumed[0]
            if any(field.strip() for field in row):
                units.append((start, end - 1 if text.endswith("\n", start, end) else end))
            start = end
    except csv.Error:
        return _line_units(text)
    return tuple(units)


def _line_units(text: str) -> tuple[tuple[int, int], ...]:
    units: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        if line.strip():
            units.append((pos, pos + len(line)))
        pos += len(line) + 1
    return tuple(units)


def with_record_units(segment: Segment, rel: str) -> Segment:
    units = record_units(segment.text, _delimiter(segment.text, rel))
    return dataclasses.replace(segment, units=units)


__all__ = ["record_units", "with_record_units"]
