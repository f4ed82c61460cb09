"""File loaders: decoding, binary sniffing, HTML and PDF extraction, CSV records."""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
from pathlib import Path

import numpy as np
import pytest

from kbgraph.errors import KbgraphError
from kbgraph.retrieval._config import ScanConfig
from kbgraph.retrieval._loaders import LoadedFile, SkipFile, load_bytes, load_file
from kbgraph.retrieval._records import FileKind
from kbgraph.retrieval._scan import scan_folder
from kbgraph.retrieval._segments import (
    LineIndex,
    Segment,
    Span,
    normalize_newlines,
    spans_to_chunks,
)


def only_segment(loaded: LoadedFile) -> Segment:
    assert len(loaded.segments) == 1
    return loaded.segments[0]


def assert_offsets_map_back(segment: Segment, data: bytes, encoding: str = "utf-8") -> None:
    """Every character of the text decodes from its own bytes of the file."""
    assert len(segment.offsets) == len(segment.text) + 1
    for i, ch in enumerate(segment.text):
        raw = data[segment.offsets[i] : segment.offsets[i + 1]]
        assert normalize_newlines(raw.decode(encoding)) == ch, (i, ch, raw)


def skip_reason(data: bytes, rel: str, kind: FileKind) -> str:
    with pytest.raises(SkipFile) as caught:
        load_bytes(data, rel, kind)
    assert caught.value.skipped.path == rel
    return caught.value.skipped.reason


# --- plain text -----------------------------------------------------------------------------

TEXTS = {
    "ascii": b"Hello world\nsecond line\n",
    "non-ascii": "Café crème — naïve 日本語 😀\nzweite Zeile\n".encode(),
    "crlf": "line one\r\nline two é\r\n\r\nlast".encode(),
    "lone-cr": b"old mac\rline two\r",
    "bom": codecs.BOM_UTF8 + "# Überschrift\r\ntext\n".encode(),
}


@pytest.mark.parametrize("name", TEXTS)
@pytest.mark.parametrize("kind", ["text", "markdown", "code", "data"])
def test_text_kinds_give_one_segment_mapping_to_the_bytes(name: str, kind: FileKind) -> None:
    data = TEXTS[name]
    loaded = load_bytes(data, f"f.{kind}", kind)
    segment = only_segment(loaded)
    assert loaded.kind == kind
    assert loaded.notes == []
    assert loaded.sha256 == hashlib.sha256(data).hexdigest()
    assert "\r" not in segment.text
    assert "\ufeff" not in segment.text
    assert segment.text == normalize_newlines(data.decode("utf-8-sig"))
    assert_offsets_map_back(segment, data)
    assert segment.offsets[-1] == len(data)


def test_bom_is_skipped_but_counted_in_offsets() -> None:
    segment = only_segment(load_bytes(TEXTS["bom"], "a.md", "markdown"))
    assert segment.text.startswith("# Überschrift\n")
    assert segment.offsets[0] == 3


@pytest.mark.parametrize(
    ("text", "encoding"),
    [("Caf\xe9 \u201cquoted\u201d \u20ac5\r\nnext", "cp1252"), ("na\xefve \x81 byte", "latin-1")],
)
def test_non_utf8_is_decoded_with_a_reported_fallback(text: str, encoding: str) -> None:
    data = text.encode(encoding)
    loaded = load_bytes(data, "legacy.txt", "text")
    segment = only_segment(loaded)
    assert segment.text == normalize_newlines(text)
    assert segment.encoding == encoding
    assert [(n.path, n.reason) for n in loaded.notes] == [("legacy.txt", "decode-fallback")]
    assert encoding in loaded.notes[0].detail
    assert_offsets_map_back(segment, data, encoding)


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"text then a NUL \x00 byte",
        "UTF-16 text".encode("utf-16"),
        bytes(range(1, 8)) * 200,  # no NUL, but mostly control bytes
    ],
)
@pytest.mark.parametrize("kind", ["text", "code", "html", "csv"])
def test_binary_files_are_skipped(data: bytes, kind: FileKind) -> None:
    assert skip_reason(data, f"blob.{kind}", kind) == "binary"


@pytest.mark.parametrize(
    "data",
    [
        b"\x1b[31mred\x1b[0m log line\n\tindented\x0cform feed\n",
        b"A" * 9000 + b"\x00",  # a NUL beyond the sniffed 8 KiB does not count
        "\u00e9\u00e8 accents \x07 one bell".encode(),
    ],
)
def test_text_with_a_few_control_bytes_is_not_binary(data: bytes) -> None:
    assert only_segment(load_bytes(data, "log.txt", "text")).text


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"", "text"),
        (b"  \r\n\t\n", "markdown"),
        (codecs.BOM_UTF8, "code"),
        (b"\n\n", "csv"),
        (b"<html><head><script>var x = 1;</script></head><body> </body></html>", "html"),
    ],
)
def test_empty_files_are_skipped(data: bytes, kind: FileKind) -> None:
    assert skip_reason(data, f"empty.{kind}", kind) == "empty"


def test_skip_file_is_a_kbgraph_error_with_a_readable_message() -> None:
    with pytest.raises(KbgraphError, match=r"blob\.bin was skipped \(binary\): NUL byte"):
        load_bytes(b"\x00\x01", "blob.bin", "text")


# --- HTML -----------------------------------------------------------------------------------

HTML = (
    codecs.BOM_UTF8
    + """<!DOCTYPE html>\r
<html><head><title>Menü &amp; Café</title>\r
<style>body { color: red; } .hidden-style {}</style>\r
<script>var hiddenScript = "<p>not text</p>";</script>\r
</head>\r
<body>\r
<h1>Première   section</h1>\r
<p>First paragraph\r
   continues here &lt;tag&gt; AT&T &#x263A; &#233;t&eacute;</p>\r
<noscript><p>hiddenNoscript</p></noscript>\r
<template><p>hiddenTemplate</p></template>\r
<ul><li>one</li><li>two</li></ul>\r
<pre>keep   spaces\r
  and lines</pre>\r
<table><tr><td>cell 1</td><td>cell 2</td></tr></table>\r
<!-- hiddenComment -->\r
<p>last<br>line</p>\r
</body></html>\r
""".encode()
)


@pytest.fixture
def html_segment() -> Segment:
    return only_segment(load_bytes(HTML, "page.html", "html"))


def test_html_drops_hidden_content(html_segment: Segment) -> None:
    for hidden in ("hiddenScript", "hidden-style", "hiddenNoscript", "hiddenTemplate"):
        assert hidden not in html_segment.text
    assert "hiddenComment" not in html_segment.text
    assert "<" not in html_segment.text.replace("<tag>", "")


def test_html_text_decodes_entities_and_breaks_blocks(html_segment: Segment) -> None:
    text = html_segment.text
    assert text.startswith("Menü & Café\n\nPremière section\n\nFirst paragraph continues")
    assert "continues here <tag> AT&T ☺ été\n\n" in text
    assert "\none\ntwo\n" in text
    assert "keep   spaces\n  and lines" in text  # pre is verbatim
    assert "cell 1 cell 2" in text
    assert text.endswith("last\nline")
    assert "\n\n\n" not in text
    assert not text.startswith(("\n", " "))


def test_html_offsets_are_monotonic_and_inside_the_file(html_segment: Segment) -> None:
    offsets = html_segment.offsets
    assert len(offsets) == len(html_segment.text) + 1
    assert np.all(np.diff(offsets) >= 0)
    assert offsets[0] >= 3  # after the BOM
    assert offsets[-1] <= len(HTML)


def test_html_entities_point_at_their_ampersand(html_segment: Segment) -> None:
    text, offsets = html_segment.text, html_segment.offsets
    for decoded, entity in (("☺", b"&#x263A;"), ("<", b"&lt;"), ("&", b"&amp;")):
        start = int(offsets[text.index(decoded)])
        assert HTML[start : start + len(entity)] == entity


def test_html_plain_chars_sit_on_their_original_line(html_segment: Segment) -> None:
    """Each copied character is found on the file line that holds its byte offset."""
    lines = HTML.split(b"\n")
    starts = html_segment.byte_line_starts
    assert starts is not None
    assert starts.dtype == np.int64
    assert list(starts) == [0, *(i + 1 for i, b in enumerate(HTML) if b == 0x0A)][:-1]
    index = LineIndex(html_segment)
    plain = decoded = 0
    for pos, ch in enumerate(html_segment.text):
        if ch.isspace():
            continue
        line = lines[index.line_of(pos) - 1].decode("utf-8-sig")
        offset = int(html_segment.offsets[pos])
        if HTML.startswith(ch.encode(), offset):
            assert ch in line, (pos, ch, line)
            plain += 1
        else:  # decoded from an entity, which starts on this line
            assert HTML[offset : offset + 1] == b"&", (pos, ch)
            assert "&" in line
            decoded += 1
    assert plain > 100
    assert decoded == 5  # <, >, ☺, é (&#233;), é (&eacute;); "&amp;" reads as plain "&"


def test_html_chunks_cite_the_lines_of_the_html_file(html_segment: Segment) -> None:
    text = html_segment.text
    start = text.index("First paragraph")
    end = text.index("été") + len("été")
    [chunk] = spans_to_chunks(html_segment, [Span(start, end)], "page.html")
    lines = HTML.decode("utf-8-sig").split("\r\n")
    assert lines[chunk.line_start - 1].startswith("<p>First paragraph")
    assert chunk.line_end == chunk.line_start + 1
    assert "&eacute;" in lines[chunk.line_end - 1]
    assert HTML[chunk.byte_start : chunk.byte_end].startswith(b"First paragraph")


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<p>a</p><pre>\n  x\n</pre><p>b</p>", "a\n\n  x\n\nb"),
        ("<div><div>nested</div></div><p>next</p>", "nested\n\nnext"),
        ("<span>in</span><b>line</b> <i>words</i>", "inline words"),
        ("<p>nbsp&nbsp;&nbsp;kept</p>", "nbsp\xa0\xa0kept"),
        ("<p>&unknown; &#65;&#x42;</p>", "&unknown; AB"),
        ("<p>a<script>x</script>b</p><style>y</style>", "ab"),
    ],
)
def test_html_text_rules(html: str, expected: str) -> None:
    segment = only_segment(load_bytes(html.encode(), "x.html", "html"))
    assert segment.text == expected
    assert np.all(np.diff(segment.offsets) >= 0)


def test_html_in_cp1252_is_extracted_with_a_fallback_note() -> None:
    data = "<p>Caf\xe9 cr\xe8me</p>".encode("cp1252")
    loaded = load_bytes(data, "old.htm", "html")
    assert only_segment(loaded).text == "Café crème"
    assert [n.reason for n in loaded.notes] == ["decode-fallback"]


# --- PDF ------------------------------------------------------------------------------------


def _pdf_string(text: str) -> bytes:
    out = bytearray(b"(")
    for byte in text.encode("cp1252"):
        if byte in b"()\\" or byte >= 0x80:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b")")


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF: Helvetica (WinAnsi) text, one line per string, with a real
    cross-reference table (pypdf can read but not author text)."""
    page_ids = [4 + 2 * i for i in range(len(pages))]
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    for page_id, lines in zip(page_ids, pages, strict=True):
        shows = b" ".join(_pdf_string(line) + b" Tj T*" for line in lines)
        stream = b"BT /F1 12 Tf 14 TL 72 720 Td " + shows + b" ET"
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_id + 1)
        )
        objects[page_id + 1] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    out = bytearray(b"%PDF-1.4\n")
    where: dict[int, int] = {}
    for number in sorted(objects):
        where[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % where[n] for n in sorted(objects))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_pdf_gives_one_segment_per_page() -> None:
    data = make_pdf([["First page", "Café (menu) 2€"], ["Second page text"]])
    loaded = load_bytes(data, "doc.pdf", "pdf")
    assert loaded.kind == "pdf"
    assert loaded.sha256 == hashlib.sha256(data).hexdigest()
    assert [s.page for s in loaded.segments] == [1, 2]
    first, second = loaded.segments
    assert first.text.split() == ["First", "page", "Café", "(menu)", "2€"]
    assert "Second page text" in second.text
    for segment in loaded.segments:
        assert segment.line_base == 1
        # Offsets are UTF-8 byte offsets into the page's extracted text.
        assert segment.offsets[0] == 0
        assert segment.offsets[-1] == len(segment.text.encode("utf-8"))
        assert_offsets_map_back(segment, segment.text.encode("utf-8"))
    assert LineIndex(first).line_of(first.text.index("Café")) == 2


def test_pdf_pages_without_text_are_left_out() -> None:
    loaded = load_bytes(make_pdf([[], ["only text"], []]), "doc.pdf", "pdf")
    assert [s.page for s in loaded.segments] == [2]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"%PDF-1.4\nthis is not a pdf body", "extract-failed"),
        (b"plain text named .pdf", "extract-failed"),
        (make_pdf([[], []]), "empty"),
    ],
)
def test_unusable_pdfs_are_skipped(data: bytes, reason: str) -> None:
    assert skip_reason(data, "bad.pdf", "pdf") == reason


# --- CSV ------------------------------------------------------------------------------------


def unit_texts(segment: Segment) -> list[str]:
    assert segment.units is not None
    return [segment.text[a:b] for a, b in segment.units]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_csv_quoted_newlines_stay_in_one_record(newline: str) -> None:
    rows = [
        ["name", "note"],
        ["Zoë", "line one\nline two"],
        ["Bob", 'said "hi", twice'],
        ["Ann", "plain"],
    ]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator=newline).writerows(rows)
    data = buffer.getvalue().encode()
    segment = only_segment(load_bytes(data, "people.csv", "csv"))
    units = unit_texts(segment)
    assert len(units) == len(rows)
    assert [next(csv.reader(io.StringIO(u))) for u in units] == rows
    assert units[1] == 'Zoë,"line one\nline two"'
    assert_offsets_map_back(segment, data)
    assert segment.units == tuple(sorted(segment.units or ()))


@pytest.mark.parametrize(
    ("rel", "data", "expected"),
    [
        ("semi.csv", 'a;b\n1;"x\ny"\n', ["a;b", '1;"x\ny"']),
        ("tabs.tsv", 'a\tb\n1\t"x\ny"\n', ["a\tb", '1\t"x\ny"']),
        ("blank-lines.csv", "a,b\n\n1,2\n\n", ["a,b", "1,2"]),
        ("no-final-newline.csv", "a,b\n1,2", ["a,b", "1,2"]),
        # An unterminated quote would swallow the rest: fall back to one unit per line.
        ("broken.csv", 'a,b\n1,"open\n2,x\n', ["a,b", '1,"open', "2,x"]),
    ],
)
def test_csv_records(rel: str, data: str, expected: list[str]) -> None:
    assert unit_texts(only_segment(load_bytes(data.encode(), rel, "csv"))) == expected


# --- load_file ------------------------------------------------------------------------------


def test_load_file_reads_a_scanned_file(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_bytes("# Titre\r\nété\r\n".encode())
    [scanned] = scan_folder(tmp_path, ScanConfig()).files
    loaded = load_file(scanned)
    assert only_segment(loaded).text == "# Titre\nété\n"
    assert loaded.kind == "markdown"
    assert loaded.sha256 == hashlib.sha256((tmp_path / "notes.md").read_bytes()).hexdigest()


def test_load_file_reports_a_file_that_vanished(tmp_path: Path) -> None:
    (tmp_path / "gone.txt").write_text("x")
    [scanned] = scan_folder(tmp_path, ScanConfig()).files
    (tmp_path / "gone.txt").unlink()
    with pytest.raises(SkipFile) as caught:
        load_file(scanned)
    assert caught.value.skipped.reason == "unreadable"
    assert caught.value.skipped.path == "gone.txt"
