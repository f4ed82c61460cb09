"""Properties of every chunking strategy over generated files: the bytes and lines a chunk
cites hold its text, no chunk exceeds the cap, every non-whitespace character is covered,
and no cut splits a grapheme cluster (the generated clusters are all shorter than the
smallest size, so no cut is ever forced)."""

from __future__ import annotations

import codecs
import dataclasses
import string
import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbgraph.retrieval._chunking import CHUNKERS, chunk_segment
from kbgraph.retrieval._config import ChunkConfig, ChunkStrategy
from kbgraph.retrieval._segments import Segment, decode_bytes, normalize_newlines, spans_to_chunks

EMOJI = [
    "\U0001f600",
    "\U0001f44d\U0001f3fd",  # skin tone modifier
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",  # ZWJ family
    "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag: VS16 + ZWJ
    "\u2764\ufe0f",
    "\U0001f1eb\U0001f1f7",  # regional indicator pair
    "1\ufe0f\u20e3",  # keycap
]
MARKS = ["\u0301", "\u0308", "\u0323", "\u0327"]
CJK = "今天天气很好我们去公园吧你想一起来吗日本語の文ですか한국어。！？．、"
ASCII_WORD = st.text(string.ascii_letters + string.digits, min_size=1, max_size=10)
LONG_WORD = st.integers(20, 90).map(lambda n: "x" * n)

cluster_word = st.tuples(
    st.sampled_from("aeiouyAEIOU"), st.lists(st.sampled_from(MARKS), min_size=1, max_size=3)
).map(lambda t: t[0] + "".join(t[1]))
token = st.one_of(
    ASCII_WORD,
    ASCII_WORD,
    st.text(CJK, min_size=1, max_size=12),
    st.sampled_from(EMOJI),
    cluster_word,
    st.sampled_from(["e.g.", "Dr.", "3.14", "U.S.", "etc.", "No.", "Straße", "café."]),
    LONG_WORD,
)
prose_line = st.lists(token, min_size=1, max_size=12).map(" ".join)
heading_line = st.tuples(st.integers(1, 7), prose_line).map(lambda t: "#" * t[0] + " " + t[1])
code_line = st.sampled_from(
    [
        "def f(x):",
        "    return x",
        "@decorator",
        "class A:",
        "async def g():",
        "function h() {",
        "}",
        "pub fn main() {",
        "```",
        "```python",
        "~~~",
        "// comment",
        "    # note",
    ]
)
blank_line = st.sampled_from(["", " ", "\t", "   "])
line = st.one_of(prose_line, prose_line, heading_line, code_line, blank_line)
newline = st.sampled_from(["\n", "\r\n", "\n", "\r\n", "\r"])
document = st.lists(st.tuples(line, newline), max_size=40).map(
    lambda pairs: "".join(text + end for text, end in pairs)
)

# (chunk_size, overlap, max_chunk_chars): overlap = size - 1 is the tightest legal setting.
SETTINGS = [(16, 0, 16), (16, 15, 16), (40, 10, 60), (120, 119, 120), (300, 50, 2000)]


def _is_cluster_cut(text: str, pos: int) -> bool:
    """Independent of the implementation: True when a cut at ``pos`` would split one of the
    generated clusters."""
    if pos <= 0 or pos >= len(text):
        return False
    after, before = text[pos], text[pos - 1]
    if unicodedata.combining(after) or after in "\u200d\ufe0f\u20e3" or before == "\u200d":
        return True
    if 0x1F3FB <= ord(after) <= 0x1F3FF:
        return True
    indicators = 0
    while pos - indicators > 0 and 0x1F1E6 <= ord(text[pos - indicators - 1]) <= 0x1F1FF:
        indicators += 1
    return 0x1F1E6 <= ord(after) <= 0x1F1FF and indicators % 2 == 1


def _check(
    raw: bytes, segment: Segment, strategy: ChunkStrategy, size: int, overlap: int, cap: int
) -> None:
    config = ChunkConfig(
        strategy=strategy, chunk_size=size, overlap=overlap, max_chunk_chars=cap, by_kind=False
    )
    text = segment.text
    spans = chunk_segment(segment, config, "text")
    lines = text.split("\n")
    covered = bytearray(len(text))
    for span in spans:
        covered[span.start : span.end] = b"\1" * (span.end - span.start)
        assert not _is_cluster_cut(text, span.start) and not _is_cluster_cut(text, span.end)
    assert [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]] == []
    assert [s.start for s in spans] == sorted(s.start for s in spans)

    chunks = spans_to_chunks(segment, spans, "doc.md")
    assert len(chunks) == len(spans)  # no span is blank
    for chunk in chunks:
        assert chunk.text.strip() and chunk.text == chunk.text.rstrip()
        if strategy == "code" and chunk.text != chunk.text.lstrip():
            # Code chunks start at a line start, the indentation of their first line kept.
            first_line = chunk.byte_start == len(raw) - len(raw.lstrip(codecs.BOM_UTF8))
            assert first_line or raw[chunk.byte_start - 1 : chunk.byte_start] in (b"\n", b"\r")
            assert chunk.text.lstrip(" \t") == chunk.text.strip()
        else:
            assert chunk.text == chunk.text.strip()
        assert len(chunk.text) <= min(size, cap)
        cited = raw[chunk.byte_start : chunk.byte_end].decode("utf-8")
        assert normalize_newlines(cited) == chunk.text
        assert 1 <= chunk.line_start <= chunk.line_end <= len(lines)
        assert chunk.text in "\n".join(lines[chunk.line_start - 1 : chunk.line_end])


# Every example runs every strategy: 150 examples per strategy for the price of one draw.
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=document, bom=st.booleans(), setting=st.sampled_from(SETTINGS))
def test_every_chunk_cites_its_bytes_and_lines(
    text: str, bom: bool, setting: tuple[int, int, int]
) -> None:
    raw = (codecs.BOM_UTF8 if bom else b"") + text.encode("utf-8")
    segment = decode_bytes(raw)
    assert segment.text == normalize_newlines(text)
    for strategy in CHUNKERS:
        _check(raw, segment, strategy, *setting)


record = st.lists(st.one_of(ASCII_WORD, cluster_word, LONG_WORD), min_size=1, max_size=30)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(record.map(",".join), min_size=1, max_size=30),
    newline=newline,
    setting=st.sampled_from(SETTINGS),
)
def test_records_are_kept_whole_unless_longer_than_the_cap(
    rows: list[str], newline: str, setting: tuple[int, int, int]
) -> None:
    size, overlap, cap = setting
    segment = decode_bytes(newline.join(["id,text", *rows, ""]).encode("utf-8"))
    starts = [m + 1 for m, ch in enumerate(segment.text) if ch == "\n"][:-1]
    units = tuple(
        (start, start + len(normalize_newlines(row)))
        for start, row in zip(starts, rows, strict=True)
    )
    segment = dataclasses.replace(segment, units=units)
    config = ChunkConfig(chunk_size=size, overlap=overlap, max_chunk_chars=cap)
    spans = chunk_segment(segment, config, "csv")
    unit_starts = {0} | {start for start, _ in units}
    unit_ends = {end for _, end in units} | {len("id,text")}
    whole = {i for i, (start, end) in enumerate(units) if end - start <= cap}
    for span in spans:
        inside = [
            i for i, (start, end) in enumerate(units) if start < span.end and span.start < end
        ]
        if all(i in whole for i in inside):
            assert span.start in unit_starts and span.end in unit_ends
        assert span.end - span.start <= cap
    covered = {i for span in spans for i in range(span.start, span.end)}
    assert all(ch.isspace() or i in covered for i, ch in enumerate(segment.text))
