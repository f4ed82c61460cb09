"""Chunking strategies on hand-built inputs: where each strategy cuts, and the guarantees
every strategy keeps (cap, coverage, trimming, progress, whole grapheme clusters)."""

from __future__ import annotations

import codecs
import dataclasses
from itertools import pairwise

import pytest

from kbgraph.errors import ConfigError
from kbgraph.retrieval._chunking import CHUNKERS, choose, chunk_file, chunk_segment
from kbgraph.retrieval._chunking._pack import finalize
from kbgraph.retrieval._config import ChunkConfig, ChunkStrategy
from kbgraph.retrieval._segments import (
    Segment,
    Span,
    decode_bytes,
    normalize_newlines,
    segment_from_text,
)

STRATEGIES: tuple[ChunkStrategy, ...] = tuple(CHUNKERS)


def texts(text: str, spans: list[Span]) -> list[str]:
    return [text[span.start : span.end] for span in spans]


def assert_invariants(text: str, spans: list[Span], limit: int) -> None:
    """Sorted, non-empty, trimmed (a chunk may keep the indentation of its first line when
    it starts at a line start), at most ``limit`` long, covering all non-whitespace."""
    assert [s.start for s in spans] == sorted(s.start for s in spans)
    covered = bytearray(len(text))
    for span in spans:
        piece = text[span.start : span.end]
        assert piece, span
        at_line_start = span.start == 0 or text[span.start - 1] == "\n"
        assert piece.strip() and piece == piece.rstrip(), span
        assert piece.lstrip(" \t") == piece.strip(), span
        assert at_line_start or piece == piece.lstrip(), span
        assert span.end - span.start <= limit, span
        covered[span.start : span.end] = b"\1" * len(piece)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert missing == []


# --- recursive, paragraph, sentence, fixed_size -------------------------------------------


def test_recursive_packs_whole_paragraphs() -> None:
    text = "Alpha beta gamma.\n\nDelta epsilon zeta.\n\nEta theta iota."
    spans = CHUNKERS["recursive"](text, 40, 0, 40)
    assert texts(text, spans) == ["Alpha beta gamma.\n\nDelta epsilon zeta.", "Eta theta iota."]


def test_recursive_cuts_a_long_paragraph_at_lines_before_sentences() -> None:
    text = "One two three. Four five\nsix seven eight nine\nten eleven twelve."
    spans = CHUNKERS["recursive"](text, 40, 0, 40)
    # The line break wins over the sentence end inside the first line.
    assert texts(text, spans) == [
        "One two three. Four five",
        "six seven eight nine\nten eleven twelve.",
    ]


def test_paragraph_cuts_a_long_paragraph_at_sentences_not_lines() -> None:
    text = "One two three. Four five\nsix seven eight nine\nten eleven twelve."
    spans = CHUNKERS["paragraph"](text, 40, 0, 40)
    assert texts(text, spans)[0] == "One two three."
    assert_invariants(text, spans, 40)


def test_paragraph_packs_short_paragraphs_together() -> None:
    paragraphs = [f"Paragraph number {n} is short." for n in range(6)]
    text = "\n\n".join(paragraphs)
    spans = CHUNKERS["paragraph"](text, 70, 0, 70)
    assert texts(text, spans) == [
        "\n\n".join(paragraphs[i : i + 2]) for i in range(0, len(paragraphs), 2)
    ]


SENTENCES = [
    "Dr. Smith met Mr. Jones and Mrs. Lee at noon.",
    "They compared fruit, e.g. apples vs. pears, etc. today.",
    "The value of pi is 3.14 in the U.S. and abroad.",
    "See Fig. 2 and No. 5 for the rest, i.e. details.",
    "Prof. J. R. Tolkien wrote it in Jan. of that year!",
    "Was it a café in Zürich or in São Paulo?",
]


@pytest.mark.parametrize("separator", [" ", "\n", "  \n  "])
def test_sentence_keeps_abbreviations_and_decimals_inside_sentences(separator: str) -> None:
    text = separator.join(SENTENCES)
    size = max(map(len, SENTENCES)) + 2  # one sentence fits, two never do
    spans = CHUNKERS["sentence"](text, size, 0, size)
    assert texts(text, spans) == SENTENCES


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("No. I will not go there today, thank you kindly.", "No."),
        ("Yes. No. 5 is the winner of the long race, they said.", "Yes."),
    ],
)
def test_sentence_no_is_an_abbreviation_only_before_a_number(text: str, first: str) -> None:
    spans = CHUNKERS["sentence"](text, 40, 0, 40)
    assert texts(text, spans)[0] == first
    assert all(not piece.startswith("5") for piece in texts(text, spans))


def test_sentence_cjk_punctuation_needs_no_space_and_skips_fullwidth_decimals() -> None:
    text = "今天天气很好。我们去公园吧！你想一起来吗？好的．圆周率是３．１４。"
    spans = CHUNKERS["sentence"](text, 10, 0, 10)
    assert texts(text, spans) == [
        "今天天气很好。",
        "我们去公园吧！",
        "你想一起来吗？好的．",
        "圆周率是３．１４。",
    ]


def test_sentence_closing_quotes_stay_with_their_sentence() -> None:
    text = 'He said "stop here." Then he left the room.'
    spans = CHUNKERS["sentence"](text, 25, 0, 25)
    assert texts(text, spans)[0] == 'He said "stop here."'


def test_fixed_size_windows_end_at_word_starts_and_overlap() -> None:
    text = " ".join(f"wörd{n}" for n in range(60))
    spans = CHUNKERS["fixed_size"](text, 40, 12, 40)
    assert_invariants(text, spans, 40)
    for before, after in pairwise(spans):
        assert after.start < before.end <= after.end  # neighbours share text
        assert before.end - after.start <= 12
        assert text[after.start - 1] == " "  # the overlap starts at a word
        assert before.end == len(text) or text[before.end] == " "


def test_overlap_is_about_the_requested_size_and_starts_at_a_word() -> None:
    text = " ".join(["The quick brown fox jumps over the lazy dog."] * 40)
    spans = CHUNKERS["recursive"](text, 200, 50, 2000)
    shared = [a.end - b.start for a, b in pairwise(spans)]
    assert all(40 <= n <= 50 for n in shared), shared
    assert all(text[b.start - 1].isspace() for b in spans[1:])


def test_overlap_never_repeats_most_of_a_short_chunk_nor_starts_mid_word() -> None:
    text = "# Title\n\n" + " ".join(["Lorem ipsum dolor sit amet."] * 10)
    spans = CHUNKERS["recursive"](text, 60, 20, 60)
    assert texts(text, spans)[:2] == [
        "# Title\n\nLorem ipsum dolor sit amet.",
        "dolor sit amet. Lorem ipsum dolor sit amet.",
    ]
    assert all(text[s.start - 1].isspace() for s in spans[1:])


@pytest.mark.parametrize("strategy", ["recursive", "paragraph", "markdown"])
def test_a_heading_before_a_long_paragraph_joins_its_first_sentences(strategy: str) -> None:
    body = " ".join(f"Sentence number {i} of the abstract." for i in range(40))
    text = "# A short title\n\n" + body + "\n\nA second paragraph."
    spans = CHUNKERS[strategy](text, 300, 30, 2000)
    first = texts(text, spans)[0]
    assert first.startswith("# A short title\n\nSentence number 0")
    assert first.endswith("abstract.") and len(first) > 150
    assert_invariants(text, spans, 300)


def test_paragraphs_that_fill_a_quarter_still_end_chunks_at_paragraph_breaks() -> None:
    first = "A lead paragraph that is long enough to stand on its own as a chunk here."
    text = first + "\n\n" + " ".join(["Lorem ipsum dolor sit amet."] * 20)
    spans = CHUNKERS["recursive"](text, 200, 20, 2000)
    assert texts(text, spans)[0] == first


def test_zero_overlap_gives_disjoint_chunks() -> None:
    text = " ".join(["Lorem ipsum dolor sit amet."] * 30)
    spans = CHUNKERS["recursive"](text, 100, 0, 100)
    assert all(a.end <= b.start for a, b in pairwise(spans))
    assert_invariants(text, spans, 100)


# --- markdown ----------------------------------------------------------------------------

MARKDOWN = """Intro line before any heading.

# Install

Download it.

## From source

```bash
# clone the repo, not a heading
git clone x
```

## From PyPI ##

pip install kbgraph
    # indented code, not a heading
#hashtag is not a heading either

# Usage
### Deep
Text.
"""


def test_markdown_sections_carry_their_heading_path() -> None:
    spans = CHUNKERS["markdown"](MARKDOWN, 500, 50, 2000)
    got = [(s.section, MARKDOWN[s.start : s.end].splitlines()[0]) for s in spans]
    assert got == [
        (None, "Intro line before any heading."),
        ("Install", "# Install"),
        ("Install > From source", "## From source"),
        ("Install > From PyPI", "## From PyPI ##"),
        # "Usage" has no text of its own: it joins its child section.
        ("Usage > Deep", "# Usage"),
    ]
    assert_invariants(MARKDOWN, spans, 500)


def test_markdown_tilde_fences_and_unclosed_fences_hide_headings() -> None:
    text = "# Top\n\n~~~\n# inside\n~~~\n\n# Next\n\n```\n# never closed\n"
    sections = [s.section for s in CHUNKERS["markdown"](text, 500, 0, 2000)]
    assert sections == ["Top", "Next"]


def test_markdown_long_section_is_sub_split_and_keeps_its_path() -> None:
    body = " ".join(f"Sentence number {n} talks about ünïcode." for n in range(30))
    text = f"# Guide\n\n## Long part\n\n{body}\n\n## Short part\n\nDone."
    spans = CHUNKERS["markdown"](text, 120, 20, 2000)
    long_part = [s for s in spans if s.section == "Guide > Long part"]
    assert len(long_part) > 5
    # "Guide" has no text of its own, so its heading opens the first chunk of its child.
    assert text[long_part[0].start :].startswith("# Guide\n\n## Long part")
    assert spans[-1].section == "Guide > Short part"
    assert "Sentence" not in text[spans[-1].start : spans[-1].end]
    assert_invariants(text, spans, 120)


def test_markdown_sibling_heading_without_text_stays_its_own_section() -> None:
    text = "# A\n# B\nbody of b\n"
    spans = CHUNKERS["markdown"](text, 500, 0, 2000)
    assert [(s.section, text[s.start : s.end]) for s in spans] == [
        ("A", "# A"),
        ("B", "# B\nbody of b"),
    ]


RST = """=========
 Flask
=========

Intro paragraph.

Configuration
=============

Builtin Values
--------------

.. code-block:: python

    app.config['MAX_CONTENT_LENGTH'] = 16 * 1000 * 1000
    Title
    =====

A transition follows.

----------

Other text.

Sessions
========

The session lifetime is 31 days.
"""

ADOC = """= Guide

Preface.

== Install

----
== not a heading inside a listing block
----

=== From source

Build it.
"""


def test_rst_and_asciidoc_headings_become_sections_like_markdown() -> None:
    # Issue 30: a .rst file was chunked as plain text, its headings not sections.
    config = ChunkConfig()
    rst = chunk_segment(decode_bytes(RST.encode()), config, "text", "docs/config.rst")
    by_section = {s.section: RST[s.start : s.end] for s in rst}
    assert list(by_section) == [
        "Flask",
        "Flask > Configuration > Builtin Values",
        "Flask > Sessions",
    ]
    assert "MAX_CONTENT_LENGTH" in by_section["Flask > Configuration > Builtin Values"]
    assert by_section["Flask > Sessions"].startswith("Sessions\n========")
    assert_invariants(RST, rst, config.max_chunk_chars)
    adoc = chunk_segment(decode_bytes(ADOC.encode()), config, "text", "guide.adoc")
    sections = ["Guide", "Guide > Install", "Guide > Install > From source"]
    assert [s.section for s in adoc] == sections
    plain = chunk_segment(decode_bytes(RST.encode()), config, "text", "notes.txt")
    assert {s.section for s in plain} == {None}


# --- code --------------------------------------------------------------------------------

PYTHON = """import os


@decorator
@other(
    arg=1,
)
def first():
    return 1


# Explains second.
async def second():
    await x


class Third:
    def method(self):
        pass
"""


def test_code_chunks_start_at_definitions_with_their_decorators_and_comments() -> None:
    spans = CHUNKERS["code"](PYTHON, 60, 20, 2000)
    firsts = [PYTHON[s.start : s.end].splitlines()[0] for s in spans]
    assert firsts == ["import os", "@decorator", "# Explains second.", "class Third:"]
    # Chunks do not overlap across definition boundaries.
    assert all(a.end <= b.start for a, b in pairwise(spans))


def test_code_packs_small_definitions_together() -> None:
    text = "\n\n".join(f"def f{n}(x):\n    return x + {n}" for n in range(12))
    spans = CHUNKERS["code"](text, 100, 0, 2000)
    assert 1 < len(spans) < 12
    for span in spans:
        piece = text[span.start : span.end]
        assert piece.startswith("def f")
        assert piece.endswith(tuple(f"return x + {n}" for n in range(12)))


@pytest.mark.parametrize(
    "definition",
    [
        "export function handler(req) {\n  return req;\n}",
        "export const LIMIT = 10;",
        "pub fn main() {\n    run();\n}",
        "impl<T> Store<T> {\n    fn get(&self) {}\n}",
        "#[derive(Debug)]\nstruct Point {\n    x: i32,\n}",
        "func (s *Server) Start() error {\n\treturn nil\n}",
        "interface Shape {\n  area(): number;\n}",
        "type Id = string;",
        "function* gen() {\n  yield 1;\n}",
    ],
)
def test_code_recognises_definitions_of_common_languages(definition: str) -> None:
    filler = "x = compute_something_rather_long(1, 2, 3)\n" * 2
    text = f"{filler}\n{definition}\n\n{filler}"
    spans = CHUNKERS["code"](text, len(definition) + 10, 0, 2000)
    assert definition in texts(text, spans)


def test_code_splits_a_long_definition_at_blank_lines() -> None:
    block = "    value = value + 1\n    value = value * 2\n"
    text = "def long():\n" + "\n".join([block] * 6) + "    return value\n"
    spans = CHUNKERS["code"](text, 2 * len(block) + 20, 0, 2000)
    assert len(spans) > 1
    for piece in texts(text, spans):
        assert piece.endswith(("value * 2", "return value"))
    assert_invariants(text, spans, 2 * len(block) + 20)


def test_code_pieces_of_a_long_definition_overlap_from_a_line_start() -> None:
    body = "".join(f"    result_{n} = compute(alpha_{n}, beta_{n}, gamma_{n})\n" for n in range(30))
    text = "def long():\n" + body
    spans = CHUNKERS["code"](text, 200, 60, 2000)
    assert len(spans) > 3
    for before, after in pairwise(spans):
        assert before.start < after.start < before.end
        assert text[text.rfind("\n", 0, after.start) + 1 : after.start].strip() == ""


# --- records (CSV) -----------------------------------------------------------------------


def _csv_segment(rows: list[str], header: str = "name,city,note") -> Segment:
    text = header + "\n" + "\n".join(rows) + "\n"
    units: list[tuple[int, int]] = []
    pos = len(header) + 1
    for row in rows:
        units.append((pos, pos + len(row)))
        pos += len(row) + 1
    return dataclasses.replace(segment_from_text(text), units=tuple(units))


def test_csv_records_are_packed_whole() -> None:
    rows = [f"name{n},Köln,{'x' * 15}" for n in range(10)]  # 27 characters each
    segment = _csv_segment(rows)
    spans = chunk_segment(segment, ChunkConfig(chunk_size=90, overlap=30), "csv")
    pieces = texts(segment.text, spans)
    assert pieces[0] == "name,city,note\n" + "\n".join(rows[:2])
    assert all(set(piece.split("\n")) <= {*rows, "name,city,note"} for piece in pieces)
    assert_invariants(segment.text, spans, 90)


def test_csv_record_longer_than_the_cap_is_split() -> None:
    rows = ["short,row,1", "long," + " ".join(["word"] * 200), "short,row,2"]
    segment = _csv_segment(rows)
    config = ChunkConfig(chunk_size=100, overlap=10, max_chunk_chars=150)
    spans = chunk_segment(segment, config, "csv")
    assert_invariants(segment.text, spans, 150)
    assert texts(segment.text, spans)[-1] == "short,row,2"


def test_csv_record_longer_than_the_size_but_within_the_cap_stays_whole() -> None:
    rows = ["a,b", "c," + "y" * 150, "d,e"]
    segment = _csv_segment(rows, header="h1,h2")
    config = ChunkConfig(chunk_size=100, overlap=0, max_chunk_chars=200)
    assert rows[1] in texts(segment.text, chunk_segment(segment, config, "csv"))


# --- dispatch ------------------------------------------------------------------------------


def test_by_kind_chooses_markdown_code_and_small_recursive_for_data() -> None:
    config = ChunkConfig(strategy="sentence", chunk_size=400, overlap=40)
    assert choose(config, "markdown").strategy == "markdown"
    assert choose(config, "code").strategy == "code"
    data = choose(config, "data")
    assert (data.strategy, data.size) == ("recursive", 200)
    assert data.overlap < data.size
    assert choose(config, "text").strategy == "sentence"
    off = ChunkConfig(strategy="sentence", by_kind=False)
    assert {choose(off, k).strategy for k in ("markdown", "code", "data")} == {"sentence"}


def test_chunk_segment_uses_sections_for_markdown_files_only_by_kind() -> None:
    segment = decode_bytes(MARKDOWN.encode())
    by_kind = chunk_segment(segment, ChunkConfig(strategy="fixed_size"), "markdown")
    plain = chunk_segment(segment, ChunkConfig(strategy="fixed_size", by_kind=False), "markdown")
    assert "Install > From source" in {s.section for s in by_kind}
    assert {s.section for s in plain} == {None}


def test_data_files_get_half_size_chunks() -> None:
    text = "{\n" + ",\n".join(f'  "key{n}": "value number {n}"' for n in range(40)) + "\n}\n"
    spans = chunk_segment(decode_bytes(text.encode()), ChunkConfig(chunk_size=100), "data")
    assert max(s.end - s.start for s in spans) <= 50
    assert_invariants(text, spans, 50)


# --- whole files: bytes, lines, encodings ----------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("bom", [b"", codecs.BOM_UTF8])
def test_chunk_file_crlf_and_non_ascii_map_back_to_bytes_and_lines(
    strategy: ChunkStrategy, bom: bytes
) -> None:
    text = (
        "# Überblick\r\n\r\nDie Straße ist naß. Café crème, s'il vous plaît.\r\n"
        "日本語の文です。次の文！\r\n\r\n## Détails\r\n\r\ndef fünf():\r\n    return 5\r\n"
    )
    raw = bom + text.encode("utf-8")
    config = ChunkConfig(strategy=strategy, chunk_size=24, overlap=6, by_kind=False)
    chunks = chunk_file([decode_bytes(raw)], config, "text", "docs/ü.md")
    lines = normalize_newlines(text).split("\n")
    assert chunks
    for chunk in chunks:
        assert normalize_newlines(raw[chunk.byte_start : chunk.byte_end].decode()) == chunk.text
        assert chunk.text in "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        assert "\r" not in chunk.text and len(chunk.text) <= 24


def test_chunk_file_runs_every_segment_and_keeps_pages() -> None:
    pages = [
        segment_from_text("Page one text.\nMore.", page=1),
        segment_from_text("   \n  "),  # a blank page gives no chunk
        segment_from_text("Page three.", start_byte=100, page=3),
    ]
    chunks = chunk_file(pages, ChunkConfig(), "pdf", "a.pdf")
    assert [(c.page, c.text) for c in chunks] == [(1, "Page one text.\nMore."), (3, "Page three.")]
    assert chunks[1].byte_start == 100


# --- guarantees of every strategy ----------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_cap_wins_over_the_size(strategy: ChunkStrategy) -> None:
    text = "word " * 300 + "x" * 700 + "\n\n# Heading\n" + "def f():\n" + "    y = 1\n" * 80
    spans = CHUNKERS[strategy](text, 1000, 100, 90)
    assert_invariants(text, spans, 90)


CLUSTERS = [
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",  # family (ZWJ sequence)
    "e\u0301",  # e + combining acute
    "\u2764\ufe0f",  # heart + variation selector 16
    "\U0001f44d\U0001f3fd",  # thumbs up + skin tone
    "\U0001f1eb\U0001f1f7",  # flag: regional indicator pair
    "\u1100\u1161\u11a8",  # Hangul jamo L V T
]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_hard_cuts_never_split_a_grapheme_cluster(strategy: ChunkStrategy, cluster: str) -> None:
    text = cluster * 40  # no spaces anywhere: every cut is a hard cut
    spans = CHUNKERS[strategy](text, 16, 5, 16)
    assert_invariants(text, spans, 16)
    for span in spans:
        assert span.start % len(cluster) == 0 and span.end % len(cluster) == 0, span


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_cluster_longer_than_the_size_is_cut_anyway(strategy: ChunkStrategy) -> None:
    text = "a" + "\u0301" * 40 + " b" + "\u0308" * 3 + " c"
    spans = CHUNKERS[strategy](text, 16, 8, 16)
    assert_invariants(text, spans, 16)
    b = text.index("b")  # "b" and its three marks stay together
    assert all(not b < pos < b + 4 for span in spans for pos in (span.start, span.end))


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("size", [1, 2, 3, 7])
@pytest.mark.parametrize(
    "text", ["x" * 60, "ab cd " * 12, "今天天气很好。" * 6, "\n\n".join(["# h", "p q r"] * 5)]
)
def test_tiny_sizes_and_maximal_overlap_always_progress(
    strategy: ChunkStrategy, size: int, text: str
) -> None:
    spans = CHUNKERS[strategy](text, size, size - 1, size)
    assert_invariants(text, spans, size)
    assert len(spans) <= 2 * len(text)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n", "\u3000 \n"])
def test_blank_text_gives_no_chunks(strategy: ChunkStrategy, text: str) -> None:
    assert CHUNKERS[strategy](text, 50, 10, 100) == []


@pytest.mark.parametrize(
    ("size", "overlap", "cap", "word"),
    [(0, 0, 10, "chunk size"), (10, -1, 10, "overlap"), (10, 0, 0, "max_chunk_chars")],
)
def test_invalid_settings_say_what_is_allowed(size: int, overlap: int, cap: int, word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        CHUNKERS["recursive"]("some text", size, overlap, cap)


def test_finalize_splits_any_span_over_the_cap_at_whitespace() -> None:
    # Packing never yields such a span; finalize is the net that makes the cap absolute.
    text = "  zwölf Wörter ohne Ende, " * 8 + "x" * 25
    spans = finalize(text, [Span(0, len(text), "S")], 12)
    assert_invariants(text, spans, 12)
    assert {s.section for s in spans} == {"S"}
    assert all(text[s.end : s.end + 1] in ("", " ", "x") for s in spans)
