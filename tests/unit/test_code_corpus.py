"""Code as a corpus around the engine: languages and test files in filters, the symbol in
the citation header, and an index of the previous analyser and chunker (searched as it is,
rebuilt by the next run without embedding any text again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbgraph._base.languages import is_test_path, language_of
from kbgraph.retrieval import KnowledgeBase, SearchFilters, format_context
from kbgraph.retrieval._context import ContextEntry, render_context
from kbgraph.retrieval._lexical import LEGACY_TOKENIZER_ID, TOKENIZER_ID, BM25Index
from kbgraph.retrieval._records import Chunk, SearchResult, index_text, json_checksum
from tests.unit.test_kb_search import _write


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/test_client.py", True),
        ("pkg/tests/helpers.py", True),
        ("src/test_utils.py", True),
        ("src/client_test.py", True),
        ("conftest.py", True),
        ("net/http/client_test.go", True),
        ("web/__tests__/app.tsx", True),
        ("web/app.test.ts", True),
        ("web/app.spec.js", True),
        ("src/main/java/ClientTest.java", True),
        ("spec/client_spec.rb", True),
        ("src/client.py", False),
        ("src/testing.py", False),  # a module named testing is not a test
        ("src/contest.py", False),
        ("docs/testing-guide.md", False),
        ("net/http/client.go", False),
    ],
)
def test_test_files_are_known_from_their_path(path: str, test: bool) -> None:
    assert is_test_path(path) is test


@pytest.mark.parametrize(
    ("path", "language"),
    [("a/b.py", "python"), ("x.tsx", "typescript"), ("m.mjs", "javascript"), ("main.go", "go"),
     ("lib.rs", "rust"), ("A.java", "java"), ("run.sh", "shell"), ("README.md", None)],
)  # fmt: skip
def test_languages_are_known_from_the_extension(path: str, language: str | None) -> None:
    assert language_of(path) == language


@pytest.mark.parametrize(
    ("kinds", "allowed"),
    [
        (("python",), {"src/client.py", "tests/test_client.py"}),
        (("test",), {"tests/test_client.py", "web/app.test.ts"}),
        (("non-test",), {"src/client.py", "web/app.ts", "docs/guide.md"}),
        (("python", "non-test"), {"src/client.py"}),
        (("typescript", "markdown"), {"web/app.ts", "web/app.test.ts", "docs/guide.md"}),
        (("code", "test"), {"tests/test_client.py", "web/app.test.ts"}),
    ],
)
def test_filters_combine_kinds_languages_and_test_roles(
    kinds: tuple[str, ...], allowed: set[str]
) -> None:
    files = {
        "src/client.py": "code",
        "tests/test_client.py": "code",
        "web/app.ts": "code",
        "web/app.test.ts": "code",
        "docs/guide.md": "markdown",
    }
    filters = SearchFilters(kinds=kinds)  # type: ignore[arg-type]
    assert {f for f, kind in files.items() if filters.allows(f, kind)} == allowed  # type: ignore[arg-type]


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(Exception, match="kinds"):
        SearchFilters(kinds=("cobol",))  # type: ignore[arg-type]


def _result(source: str, section: str | None) -> SearchResult:
    chunk = Chunk("id1", "    def _redirect_url(self):", source, 517, 545, 0, 10, section)
    return SearchResult(chunk, 0.87)


def test_the_citation_header_names_the_symbol_of_a_code_chunk() -> None:
    context = format_context([_result("httpx/_client.py", "Client._redirect_url")])
    assert (
        "[1] Source: httpx/_client.py, lines 517-545 § Client._redirect_url, score: 0.87" in context
    )
    # A document's heading path stays out of the header, as before.
    docs = format_context([_result("guide/retry.md", "Retries > Limits")])
    assert "[1] Source: guide/retry.md, lines 517-545, score: 0.87" in docs
    entry = ContextEntry("web/a.ts", 1, 2, 0.5, "x", section="Client.redirectUrl,\nClient.close")
    assert "lines 1-2 § Client.redirectUrl, Client.close, score" in render_context([entry])


CODE = {
    "pkg/config.py": '"""Defaults."""\n\nimport os\n\n\nDEFAULT_TIMEOUT_CONFIG = 5.0\n',
    "docs/guide.md": "# Guide\n\nThe timeout is five seconds by default.\n",
}


def test_an_index_of_the_previous_analyser_keeps_working_then_is_rebuilt(tmp_path: Path) -> None:
    folder = _write(tmp_path / "code", CODE)
    kb = KnowledgeBase(folder, embedding="fake")
    first = kb.index()
    # Make it an index of the previous version: no analyser or code chunker recorded, BM25
    # files of the old analyser.
    [generation] = [p for p in (folder / ".kbgraph").glob("gen-*") if p.is_dir()]
    meta = json.loads((generation / "meta.json").read_text())
    assert (meta["tokenizer"], meta["code_chunker"][:6]) == (TOKENIZER_ID, "code-3")
    del meta["tokenizer"], meta["code_chunker"], meta["checksum"]
    meta["checksum"] = json_checksum(meta)  # as that version wrote it: a sound meta.json
    (generation / "meta.json").write_text(json.dumps(meta))
    chunks = [json.loads(line) for line in (generation / "chunks.jsonl").read_text().splitlines()]
    texts = [index_text(Chunk.from_dict(c)) for c in chunks]
    BM25Index.build(texts, tokenizer=LEGACY_TOKENIZER_ID).save(generation / "bm25")

    old = KnowledgeBase(folder, embedding="fake")
    hits = old.search("timeout", top_k=5, mode="bm25")  # searched with its analyser
    assert [h.chunk.source for h in hits] == ["docs/guide.md"]
    assert old.stale_files() is None  # another analyser: everything is stale
    report = old.index()
    assert report.rebuilt and report.embedded == 0  # same texts: the cache has them all
    assert report.reused == first.stats.chunk_count
    hits = old.search("timeout", top_k=5, mode="bm25")
    assert {h.chunk.source for h in hits} == {"docs/guide.md", "pkg/config.py"}
    assert old.stale_files() == 0
