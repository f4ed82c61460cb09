"""Word documents (DOCX): the body's paragraphs and table rows, in document order, one per
line of the extracted text, so that line numbers are paragraph numbers.

A DOCX has no lines of its own. Its text is extracted block by block with python-docx:
every paragraph (empty ones included, so that the numbering follows the document) and
every table row becomes one line; a row's cells are joined by `` | ``, and line breaks
inside a paragraph or a cell become spaces. Line ``N`` of a chunk is therefore the
document's ``N``-th paragraph or table row. Paragraphs in a heading style (``Title``,
``Heading 1`` … ``Heading 9``, or a style based on one) are the outline the chunker
sections by, so a chunk's ``section`` is its heading path. As for PDF, byte offsets are
offsets into the extracted text encoded as UTF-8, not into the zip archive. Headers,
footers, footnotes, comments and text boxes are not read.
"""

from __future__ import annotations

import dataclasses
import io
import re
import zipfile
from collections.abc import Iterator
from typing import Any

from .._records import SkippedFile
from .._segments import OutlineEntry, Segment, segment_from_text
from ._base import skip

# A DOCX is a zip: a few MiB on disk can inflate to gigabytes of XML (a "zip bomb").
# Real documents stay far below this; python-docx would hold it all in memory.
MAX_UNZIPPED_BYTES = 256 * 1024 * 1024
CELL_SEPARATOR = " | "
_HEADING_STYLE = re.compile(r"^heading ([1-9])$", re.IGNORECASE)
_BREAKS = re.compile(r"[\r\n\v\f\u2028\u2029]+")
_MAX_STYLE_DEPTH = 16  # base_style chains are short; a cycle in a damaged file is not


def _one_line(text: str) -> str:
    return _BREAKS.sub(" ", text)


def heading_level(style: Any) -> int | None:
    """1-9 for a heading style, 0 for ``Title`` (the document's own name, above its
    ``Heading 1`` sections), following ``base_style`` so that a custom style built on
    "Heading 2" is a level-2 heading; None for any other style."""
    for _ in range(_MAX_STYLE_DEPTH):
        if style is None:
            return None
        name = str(getattr(style, "name", "") or "")
        match = _HEADING_STYLE.match(name)
        if match:
            return int(match.group(1))
        if name.lower() == "title":
            return 0
        style = getattr(style, "base_style", None)
    return None


def _cell_text(cell: Any) -> str:
    """A cell's paragraphs (and any table nested in it) on one line."""
    parts: list[str] = []
    for block in cell.iter_inner_content():
        if hasattr(block, "rows"):
            parts.extend(_row_text(row) for row in block.rows)
        else:
            parts.append(_one_line(block.text))
    return " ".join(p.strip() for p in parts if p.strip())


def _row_text(row: Any) -> str:
    cells: list[str] = []
    seen: set[int] = set()
    for cell in row.cells:
        # A merged cell (gridSpan / vMerge) comes back once per grid column it spans.
        if id(cell._tc) in seen:
            continue
        seen.add(id(cell._tc))
        cells.append(_cell_text(cell))
    return CELL_SEPARATOR.join(cells)


def _blocks(document: Any) -> Iterator[tuple[str, int | None]]:
    """``(line, heading level or None)`` per paragraph and table row of the body."""
    for block in document.iter_inner_content():
        if hasattr(block, "rows"):
            for row in block.rows:
                yield _row_text(row), None
        else:
            text = _one_line(block.text)
            level = heading_level(block.style) if text.strip() else None
            yield text, level


def _open(data: bytes, rel: str) -> Any:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unzipped = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise skip(rel, "extract-failed", f"not a DOCX (zip) file: {exc}") from exc
    if unzipped > MAX_UNZIPPED_BYTES:
        raise skip(
            rel,
            "extract-failed",
            f"the archive inflates to {unzipped} bytes (> {MAX_UNZIPPED_BYTES}); not read",
        )
    try:
        import docx
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise skip(rel, "extract-failed", "python-docx is not installed") from exc
    try:
        return docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises many types on damaged or odd files
        raise skip(rel, "extract-failed", f"python-docx cannot read it: {exc}") from exc


def load_docx(data: bytes, rel: str) -> tuple[list[Segment], list[SkippedFile]]:
    """One segment of the document's text, its heading paragraphs as the outline."""
    document = _open(data, rel)
    lines: list[str] = []
    outline: list[OutlineEntry] = []
    pos = 0
    try:
        for text, level in _blocks(document):
            if level is not None:
                outline.append(OutlineEntry(pos, level, text.strip()))
            lines.append(text)
            pos += len(text) + 1
    except Exception as exc:  # a damaged part met while walking the body
        raise skip(rel, "extract-failed", f"python-docx cannot read the body: {exc}") from exc
    text = "\n".join(lines)
    if not text.strip():
        raise skip(rel, "empty", "the document has no text in its body")
    segment = segment_from_text(text, line_base=1)
    return [dataclasses.replace(segment, outline=tuple(outline))], []


__all__ = ["CELL_SEPARATOR", "MAX_UNZIPPED_BYTES", "heading_level", "load_docx"]
