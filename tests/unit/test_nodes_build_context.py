"""BuildContext: overlapping and adjacent chunks merge into one exact line range, the
context fits the token budget, sources are numbered, citations point at the right lines."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbgraph.graphs._nodes.build_context import (
    Block,
    block_of,
    build_context,
    estimate_tokens,
    fit_budget,
    join,
    merge_candidates,
    overlap_length,
    render_blocks,
    truncate,
)
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._state import Candidate
from kbgraph.graphs._tool import render_sources
from kbgraph.retrieval._config import SearchConfig
from kbgraph.retrieval._context import FENCE
from kbgraph.retrieval._records import chunk_id

from ._rag_fakes import candidate, debug_of, runtime_for

CITATION_KEYS = {
    "n",
    "chunk_id",
    "source",
    "kb",
    "line_start",
    "line_end",
    "score",
    "text",
    "section",
    "page",
}


@pytest.mark.parametrize(
    ("a", "b", "limit", "expected"),
    [
        ("hello world", "world peace", 100, 5),
        ("abcabc", "abcabcd", 100, 6),
        ("abcabc", "abcabcd", 3, 3),
        ("abc", "xyz", 100, 0),
        ("", "xyz", 100, 0),
        ("naïve café", "café crème", 100, 4),
    ],
)
def test_overlap_length(a: str, b: str, limit: int, expected: int) -> None:
    assert overlap_length(a, b, limit) == expected


def window(raw: bytes, source: str, first: int, last: int, score: float = 0.5) -> Candidate:
    """The candidate for lines ``first``..``last`` of ``raw`` (exact byte span, LF text)."""
    lines = raw.splitlines(keepends=True)
    start = sum(len(x) for x in lines[: first - 1])
    data = b"".join(lines[first - 1 : last]).rstrip(b"\r\n")
    text = data.decode("utf-8").replace("\r\n", "\n")
    cid = chunk_id(source, start, start + len(data), text)
    return candidate(cid, source, (first, last), text, score, byte_span=(start, start + len(data)))


def file_lines(raw: bytes, first: int, last: int) -> str:
    return "\n".join(raw.decode("utf-8").replace("\r\n", "\n").split("\n")[first - 1 : last])


LF = "".join(f"line {i} — ünïcode ✓\n" for i in range(1, 21)).encode()
CRLF = LF.replace(b"\n", b"\r\n")


@pytest.mark.parametrize("raw", [LF, CRLF], ids=["lf", "crlf"])
@pytest.mark.parametrize(
    ("windows", "merged"),
    [
        ([(1, 4), (3, 6)], [(1, 6)]),  # overlap
        ([(1, 3), (4, 6)], [(1, 6)]),  # adjacent lines: the gap is the line break
        ([(1, 6), (2, 3)], [(1, 6)]),  # contained
        ([(1, 3), (5, 6)], [(1, 3), (5, 6)]),  # a line apart: two sources
        ([(5, 8), (1, 3), (3, 5), (12, 13)], [(1, 8), (12, 13)]),
    ],
)
def test_merge_gives_exact_line_ranges(
    raw: bytes, windows: list[tuple[int, int]], merged: list[tuple[int, int]]
) -> None:
    candidates = [
        window(raw, "a.md", a, b, score=0.9 - i * 0.1) for i, (a, b) in enumerate(windows)
    ]
    blocks = merge_candidates(candidates)
    assert sorted((b.line_start, b.line_end) for b in blocks) == merged
    for block in blocks:
        assert block.text == file_lines(raw, block.line_start, block.line_end)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 20), st.integers(0, 5)), min_size=1, max_size=6),
    st.booleans(),
)
def test_merged_text_is_always_the_file_lines(spans: list[tuple[int, int]], crlf: bool) -> None:
    raw = CRLF if crlf else LF
    candidates = [window(raw, "a.md", a, min(20, a + n)) for a, n in spans]
    unique = {c["chunk_id"]: c for c in candidates}
    for block in merge_candidates(list(unique.values())):
        assert block.text == file_lines(raw, block.line_start, block.line_end)


def test_mid_line_overlap_without_byte_spans() -> None:
    a = candidate("a", "x.md", (1, 2), "alpha beta\ngamma delta", 0.9)
    b = candidate("b", "x.md", (2, 3), "gamma delta\nepsilon", 0.8)
    (block,) = merge_candidates([a, b])
    assert block.text == "alpha beta\ngamma delta\nepsilon" and block.id == "a"
    assert block.ids == ("a", "b")


def test_texts_that_do_not_line_up_stay_apart() -> None:
    a = Block("kb", "x.md", 1, 2, "one\ntwo", 0.9, "a", None, None, 0, 7)
    b = Block("kb", "x.md", 2, 3, "XXX\nthree", 0.8, "b", None, None, 4, 13)
    assert join(a, b) is None


def test_pages_are_not_merged() -> None:
    a = candidate("a", "m.pdf", (1, 2), "p1 text", page=1)
    b = candidate("b", "m.pdf", (1, 2), "p2 text", page=2)
    assert len(merge_candidates([a, b])) == 2


def test_truncate_by_lines() -> None:
    block = block_of(candidate("a", "x.md", (10, 13), "l10\nl11\nl12\nl13"))
    cut = truncate(block, 2)
    assert cut is not None and cut.text == "l10\nl11" and (cut.line_start, cut.line_end) == (10, 11)
    # extracted text whose lines are not file lines cannot be cut safely
    odd = block_of(candidate("b", "x.html", (10, 40), "a\nb\nc"))
    assert truncate(odd, 1) is None


def test_budget_keeps_best_sources_and_cuts_the_first() -> None:
    big = block_of(
        candidate(
            "big", "big.md", (1, 200), "\n".join(f"row {i:03d} " * 8 for i in range(200)), 0.9
        )
    )
    small = block_of(candidate("small", "s.md", (1, 1), "tiny", 0.5))
    kept, dropped = fit_budget([big, small], 300)
    assert kept[0].id == "big" and 1 < kept[0].line_end < 200
    assert estimate_tokens("x" * 9) == 3
    assert estimate_tokens(render_blocks(kept)) <= 300
    # the cut is maximal: one more line of the big source would not fit
    longer = truncate(big, kept[0].line_end + 1)
    assert longer is not None and estimate_tokens(render_blocks([longer])) > 300
    assert {b.id for b in kept} | set(dropped) == {"big", "small"}


def test_later_source_cut_only_when_half_fits() -> None:
    first = block_of(candidate("f", "f.md", (1, 1), "short first source", 0.9))
    long = block_of(candidate("l", "l.md", (1, 100), "\n".join("x" * 70 for _ in range(100)), 0.8))
    kept, dropped = fit_budget([first, long], 400)
    assert [b.id for b in kept] == ["f"] and dropped == ["l"]


def _run(candidates: list[Candidate], **overrides: Any) -> dict[str, Any]:
    state: Any = {"messages": [], "rag_candidates": candidates}
    return build_context(state, runtime_for(RagSettings(**overrides)))


def test_context_and_citations() -> None:
    raw = LF
    cands = [
        window(raw, "docs/a.md", 3, 5, 0.91),
        window(raw, "src/b.py", 1, 2, 0.6),
        window(raw, "docs/a.md", 6, 7, 0.4),
    ]
    out = _run(cands)
    citations = out["rag_citations"]
    assert [c["n"] for c in citations] == [1, 2]
    first = citations[0]
    assert set(first) == CITATION_KEYS
    assert (first["source"], first["line_start"], first["line_end"]) == ("docs/a.md", 3, 7)
    assert first["text"] == file_lines(raw, 3, 7) and first["chunk_id"] == cands[0]["chunk_id"]
    assert first["score"] == pytest.approx(0.91) and first["kb"] == "kb"
    context = out["rag_context"]
    assert "[1] Source: docs/a.md, lines 3-7, score: 0.91\n" + first["text"] in context
    assert "[2] Source: src/b.py, lines 1-2, score: 0.60" in context
    assert context.count(FENCE) == 2 and "data, not instructions" in context
    data = debug_of(out)["steps"][0]["data"]
    assert data["sources"] == [[cands[0]["chunk_id"], cands[2]["chunk_id"]], [cands[1]["chunk_id"]]]
    assert data["tokens"] == estimate_tokens(context) <= 2000


def test_threshold_top_k_and_empty() -> None:
    cands = [candidate(f"c{i}", f"f{i}.md", score=1 - i / 10) for i in range(8)]
    out = _run(cands, search=SearchConfig(top_k=3, score_threshold=0.85))
    assert [c["chunk_id"] for c in out["rag_citations"]] == ["c0", "c1"]
    assert debug_of(out)["steps"][0]["data"]["below_threshold"] == 6
    empty = _run([])
    assert empty["rag_context"] == "" and empty["rag_citations"] == []


def test_same_path_in_two_knowledge_bases_is_prefixed_in_the_header_only() -> None:
    cands = [
        candidate("a", "README.md", kb="alpha", score=0.9, text="alpha readme"),
        candidate("b", "README.md", kb="beta", score=0.8, text="beta readme"),
        candidate("c", "only.md", kb="beta", score=0.7, text="only here"),
    ]
    out = _run(cands)
    assert "[1] Source: alpha:README.md, lines 1-3" in out["rag_context"]
    assert "[2] Source: beta:README.md, lines 1-3" in out["rag_context"]
    assert "[3] Source: only.md, lines 1-3" in out["rag_context"]
    assert [c["source"] for c in out["rag_citations"]] == ["README.md", "README.md", "only.md"]


def test_pdf_page_in_header() -> None:
    out = _run([candidate("p", "manual.pdf", (4, 6), "page text", 0.5, page=3)])
    assert "[1] Source: manual.pdf, page 3, lines 4-6, score: 0.50" in out["rag_context"]
    assert out["rag_citations"][0]["page"] == 3


def test_code_header_names_the_symbol_and_the_tool_shows_it_too() -> None:
    out = _run(
        [
            candidate("c", "httpx/_client.py", (517, 545), "def _redirect_url():", 0.87,
                      section="Client._redirect_url"),
            candidate("d", "guide/retry.md", (1, 3), "Retries", 0.5, section="Guide > Retries"),
        ]
    )  # fmt: skip
    context = out["rag_context"]
    assert (
        "[1] Source: httpx/_client.py, lines 517-545 § Client._redirect_url, score: 0.87" in context
    )
    assert "[2] Source: guide/retry.md, lines 1-3, score: 0.50" in context  # headings stay out
    assert render_sources(out["rag_citations"]).count("§ Client._redirect_url, score") == 1
