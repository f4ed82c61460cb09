"""Word documents: real .docx files written with python-docx, loaded, chunked, indexed and
cited by paragraph range and heading path."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest
from docx.enum.style import WD_STYLE_TYPE

from kbgraph.retrieval import ChunkConfig, KnowledgeBase, format_context
from kbgraph.retrieval._chunking import chunk_file
from kbgraph.retrieval._loaders import SkipFile, load_bytes
from kbgraph.retrieval._loaders._docx import CELL_SEPARATOR, MAX_UNZIPPED_BYTES

# (style, text): the body of the test document, in order; "table" rows follow below.
BODY: list[tuple[str, str]] = [
    ("Title", "Harbor Operations Guide"),
    ("Normal", "Harbor keeps ships moving. Café crème at the 東京 office."),
    ("Heading 1", "Retries"),
    ("Normal", "Every webhook delivery is retried with exponential backoff."),
    ("Normal", ""),  # an empty paragraph still counts as one
    ("Heading 2", "Limits"),
    ("Normal", "The delay is capped at 30 seconds 😀 and attempts at five."),
    ("Custom Heading", "Custom level two"),  # a style based on "Heading 2"
    ("Normal", "Text under the custom heading."),
]
TABLE = [["Code", "Meaning"], ["HB-601", "Quota exceeded, retry later"], ["HB-404", "No such dock"]]


def make_docx(*, with_break: bool = True) -> bytes:
    document = docx.Document()
    custom = document.styles.add_style("Custom Heading", WD_STYLE_TYPE.PARAGRAPH)
    custom.base_style = document.styles["Heading 2"]
    for style, text in BODY:
        document.add_paragraph(text, style=style)
    table = document.add_table(rows=len(TABLE), cols=2)
    for row, values in zip(table.rows, TABLE, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    tail = document.add_paragraph("Final words, first line")
    if with_break:
        tail.add_run().add_break()
        tail.add_run("second line of the same paragraph.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_paragraphs_and_table_rows_are_lines_in_document_order() -> None:
    loaded = load_bytes(make_docx(), "guide.docx", "docx")
    assert loaded.kind == "docx"
    [segment] = loaded.segments
    lines = segment.text.split("\n")
    assert lines[: len(BODY)] == [text for _, text in BODY]
    rows = lines[len(BODY) : len(BODY) + len(TABLE)]
    assert rows == [CELL_SEPARATOR.join(r) for r in TABLE]
    # A line break inside a paragraph does not start another "line": numbering follows
    # paragraphs.
    assert lines[-1] == "Final words, first line second line of the same paragraph."
    assert len(lines) == len(BODY) + len(TABLE) + 1
    # Offsets are UTF-8 offsets into the extracted text, as for PDF pages.
    encoded = segment.text.encode("utf-8")
    assert segment.offsets[-1] == len(encoded)
    for i in range(len(segment.text)):
        assert encoded[segment.offsets[i] : segment.offsets[i + 1]].decode() == segment.text[i]


def test_heading_styles_are_the_outline() -> None:
    [segment] = load_bytes(make_docx(), "guide.docx", "docx").segments
    assert segment.outline is not None
    found = [(e.level, e.title, segment.text[e.pos :].split("\n")[0]) for e in segment.outline]
    assert found == [
        (0, "Harbor Operations Guide", "Harbor Operations Guide"),
        (1, "Retries", "Retries"),
        (2, "Limits", "Limits"),
        (2, "Custom level two", "Custom level two"),
    ]


@pytest.mark.parametrize("size", [40, 120, 2000])
def test_chunks_carry_heading_paths_and_exact_spans(size: int) -> None:
    loaded = load_bytes(make_docx(), "guide.docx", "docx")
    [segment] = loaded.segments
    config = ChunkConfig(chunk_size=size, overlap=size // 10)
    chunks = chunk_file(loaded.segments, config, "docx", "guide.docx")
    assert chunks
    encoded = segment.text.encode("utf-8")
    lines = segment.text.split("\n")
    for chunk in chunks:
        assert encoded[chunk.byte_start : chunk.byte_end].decode("utf-8") == chunk.text
        # line_start..line_end are the paragraphs the chunk's text comes from.
        assert "\n".join(lines[chunk.line_start - 1 : chunk.line_end]).find(chunk.text) >= 0
    sections = {c.section for c in chunks if "capped at 30 seconds" in c.text}
    assert sections == {"Harbor Operations Guide > Retries > Limits"}
    custom = {c.section for c in chunks if "custom heading" in c.text}
    assert custom == {"Harbor Operations Guide > Retries > Custom level two"}


def test_without_by_kind_the_configured_strategy_applies() -> None:
    loaded = load_bytes(make_docx(), "guide.docx", "docx")
    chunks = chunk_file(loaded.segments, ChunkConfig(by_kind=False), "docx", "guide.docx")
    assert chunks and all(c.section is None for c in chunks)


def _zip(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


def _empty_docx() -> bytes:
    document = docx.Document()
    document.add_paragraph("   ")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"plain text named .docx", "extract-failed"),
        (_zip({"hello.txt": b"not a word document"}), "extract-failed"),
        (_zip({"word/document.xml": b"\0" * (MAX_UNZIPPED_BYTES + 1)}), "extract-failed"),
        (_empty_docx(), "empty"),
    ],
    ids=["not-a-zip", "zip-without-document", "zip-bomb", "blank"],
)
def test_unusable_docx_files_are_skipped(data: bytes, reason: str) -> None:
    with pytest.raises(SkipFile) as caught:
        load_bytes(data, "bad.docx", "docx")
    assert caught.value.skipped.reason == reason


def test_a_docx_is_indexed_searched_and_cited_by_paragraphs(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    data = make_docx()
    (folder / "guide.docx").write_bytes(data)
    (folder / "notes.md").write_text("# Notes\n\nNothing about delays here.\n", encoding="utf-8")
    with KnowledgeBase(folder, embedding="fake") as kb:
        report = kb.index()
        assert report.stats.file_count == 2 and not report.skipped
        results = kb.search("How long is the retry delay capped?", top_k=1, mode="bm25")
        assert results
        chunk = results[0].chunk
        assert chunk.source == "guide.docx"
        assert chunk.section == "Harbor Operations Guide > Retries > Limits"
        text = load_bytes(data, "guide.docx", "docx").segments[0].text
        line = text.split("\n").index("The delay is capped at 30 seconds 😀 and attempts at five.")
        assert chunk.line_start <= line + 1 <= chunk.line_end
        header = format_context(results).split("\n")[2]
        assert header.startswith(f"[1] Source: guide.docx, paragraphs {chunk.line_start}-")
        # Unchanged on a second run: nothing is read or embedded again.
        assert kb.index().embedded == 0
