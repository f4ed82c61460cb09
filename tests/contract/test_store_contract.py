"""One contract, every store: the folder index and PostgreSQL (pgvector + full-text search)
index, search and report the same way through ``KnowledgeBase``.

Each test runs once per store (``store`` fixture: None = the folder index beside the
documents, else a PostgreSQL URL: the primary, or the primary and its streaming standby in
one multi-host URL, where every search is answered by the standby and every write goes to
the primary, or a server with an older pgvector, 0.6, whose tables lack the halfvec index
and the BM25 weights column); the deterministic fake embedder keeps them offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import ConfigError, IndexNotFoundError, ModelMismatchError
from kbgraph.retrieval import (
    ChunkConfig,
    FieldRanker,
    KnowledgeBase,
    SearchConfig,
    SearchFilters,
    register_ranker,
    unregister_ranker,
)
from kbgraph.retrieval._segments import normalize_newlines
from kbgraph.testing import FakeEmbeddings
from tests.unit.test_kb import DOCS
from tests.unit.test_kb_search import _write

QUERY = "exponential backoff retry policy"


STORES = {"postgres": "pg_url", "standby": "pg_replica_url", "pgvector-0.6": "pg_older_url"}


@pytest.fixture(params=["folder", *STORES])
def store(request: pytest.FixtureRequest) -> str | None:
    if request.param == "folder":
        return None
    return str(request.getfixturevalue(STORES[request.param]))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return _write(tmp_path / "docs", DOCS)


def _kb(folder: Path, store: str | None, **kwargs: Any) -> KnowledgeBase:
    kwargs.setdefault("embedding", "fake")
    return KnowledgeBase(folder, store=store, **kwargs)


def _lines(folder: Path, source: str, start: int, end: int) -> str:
    text = normalize_newlines((folder / source).read_bytes().decode("utf-8"))
    return "\n".join(text.split("\n")[start - 1 : end])


def test_index_reports_counts_and_skips_secrets(folder: Path, store: str | None) -> None:
    data = _kb(folder, store).index().to_dict()
    assert data["fileCount"] == 4 and data["chunkCount"] >= 4
    assert data["embedded"] == data["chunkCount"] and data["reused"] == 0
    assert {(s["path"], s["reason"]) for s in data["skipped"]} == {(".env", "secret")}
    assert data["lastIndexed"] and data["staleFiles"] == 0 and data["indexSize"] > 0


@pytest.mark.parametrize(
    ("mode", "fusion"),
    [("vector", "rrf"), ("bm25", "rrf"), ("hybrid", "rrf"), ("hybrid", "convex")],
)
def test_results_cite_lines_that_contain_their_text(
    folder: Path, store: str | None, mode: str, fusion: str
) -> None:
    kb = _kb(folder, store)
    kb.index()
    config = SearchConfig(mode=mode, top_k=3, fusion=fusion)  # type: ignore[arg-type]
    results = kb.search(QUERY, config=config)
    assert results and results[0].chunk.source in {"guide/retry.md", "src/backoff.py"}
    for r in results:
        c = r.chunk
        assert c.text in _lines(folder, c.source, c.line_start, c.line_end)
        assert set(r.to_dict()) == {
            "text", "score", "source", "line_start", "line_end", "chunk_id", "section", "page",
            "ranks",
        }  # fmt: skip
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_non_ascii_and_crlf_file_is_found_and_cited(folder: Path, store: str | None) -> None:
    kb = _kb(folder, store)
    kb.index()
    [hit] = kb.search("Tokyo billing disputes", top_k=1, mode="bm25")
    assert hit.chunk.source == "notes/東京.txt"
    assert hit.chunk.text in _lines(
        folder, "notes/東京.txt", hit.chunk.line_start, hit.chunk.line_end
    )


def test_incremental_runs_embed_only_new_text(folder: Path, store: str | None) -> None:
    kb = _kb(folder, store)
    first = kb.index()
    assert kb.is_fresh() and kb.stale_files() == 0
    again = kb.index()
    assert (again.embedded, again.reused) == (0, first.stats.chunk_count)
    (folder / "guide/auth.md").write_text("# Auth\n\nKeys rotate every 30 days now.\n")
    (folder / "src/backoff.py").unlink()
    assert kb.stale_files() == 2
    edited = kb.index()
    assert edited.embedded == 1 and edited.stats.file_count == 3
    assert "src/backoff.py" not in kb.indexed_files()
    assert all(r.chunk.source != "src/backoff.py" for r in kb.search(QUERY, top_k=10))
    assert kb.search("rotate keys 30 days", top_k=1)[0].chunk.source == "guide/auth.md"


def test_scores_and_ranks_agree_between_stores(folder: Path, pg_url: str, tmp_path: Path) -> None:
    other = _write(tmp_path / "copy", DOCS)
    in_folder, in_db = _kb(folder, None), _kb(other, pg_url)
    in_folder.index(), in_db.index()
    for mode in ("vector", "bm25", "hybrid", "title"):
        a = in_folder.search(QUERY, top_k=4, mode=mode)  # type: ignore[arg-type]
        b = in_db.search(QUERY, top_k=4, mode=mode)  # type: ignore[arg-type]
        assert [r.chunk.id for r in a] == [r.chunk.id for r in b], mode
        assert [r.score for r in a] == pytest.approx([r.score for r in b], rel=1e-4), mode


@pytest.fixture
def crowded(tmp_path: Path) -> Path:
    """60 notes that match the query well, one that matches it barely."""
    files = {
        f"noise/n{i:02d}.md": f"Exponential backoff retry policy, note {i}: jitter and caps.\n"
        for i in range(60)
    }
    files["target/garden.md"] = "Retry the tomato seedlings; the garden schedule is weekly.\n"
    files["target/plan.txt"] = "Retry plan for the garden: water daily.\n"
    return _write(tmp_path / "crowded", files)


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid"])
def test_filters_apply_before_ranking(crowded: Path, store: str | None, mode: str) -> None:
    kb = _kb(crowded, store)
    kb.index()
    unfiltered = {r.chunk.source for r in kb.search(QUERY, top_k=20, mode=mode)}  # type: ignore[arg-type]
    assert not unfiltered & {"target/garden.md", "target/plan.txt"}
    for filters, expected in [
        (SearchFilters(paths=("target/**",)), {"target/garden.md", "target/plan.txt"}),
        (SearchFilters(paths=("target",), kinds=("markdown",)), {"target/garden.md"}),
        (SearchFilters(paths=("*.txt",)), {"target/plan.txt"}),
        (SearchFilters(paths=("nowhere/**",)), set()),
    ]:
        results = kb.search(QUERY, top_k=5, mode=mode, filters=filters)  # type: ignore[arg-type]
        assert {r.chunk.source for r in results} == expected, filters


def test_score_threshold_and_top_k(crowded: Path, store: str | None) -> None:
    kb = _kb(crowded, store)
    kb.index()
    everything = kb.search(QUERY, top_k=62, mode="bm25")
    assert len(everything) == 62
    distinct = sorted({r.score for r in everything})
    threshold = distinct[len(distinct) // 2]
    kept = kb.search(QUERY, config=SearchConfig(mode="bm25", top_k=62, score_threshold=threshold))
    assert [r.chunk.id for r in kept] == [r.chunk.id for r in everything if r.score >= threshold]


def test_every_store_ranks_the_title_ranker_and_any_field_ranker(
    folder: Path, store: str | None
) -> None:
    """The title ranker (BM25 over path and headings) and a field ranker registered by a
    user need no store code of their own: every store ranks them, filters first."""
    kb = _kb(folder, store)
    kb.index()
    assert kb.search("auth guide", mode="title")[0].chunk.source == "guide/auth.md"
    code = SearchFilters(kinds=("code",))
    assert [r.chunk.source for r in kb.search("backoff", mode="title", filters=code)] == [
        "src/backoff.py"
    ]
    assert not kb.search("backoff", mode="title", filters=SearchFilters(paths=("notes/**",)))
    for fusion in ("rrf", "convex"):
        config = SearchConfig(top_k=2, fusion=fusion, weights={"title": 1.0})  # type: ignore[arg-type]
        best = kb.search("auth guide", config=config)[0]
        assert best.chunk.source == "guide/auth.md" and "title" in best.ranks, fusion
    register_ranker(FieldRanker("first_line", "the first line", lambda c: c.text.split("\n")[0]))
    try:
        (hit,) = kb.search("def backoff attempt", mode="first_line", top_k=5)
        assert hit.chunk.source == "src/backoff.py" and set(hit.scores) == {"first_line"}
    finally:
        unregister_ranker("first_line")


def test_the_title_ranker_sees_each_new_version(folder: Path, store: str | None) -> None:
    """A field ranker's index is built per version: after an update the same knowledge
    base finds the new file and no longer the deleted one (no row of the old version)."""
    kb = _kb(folder, store)
    kb.index()
    assert [r.chunk.source for r in kb.search("auth", mode="title")] == ["guide/auth.md"]
    (folder / "guide" / "auth.md").unlink()
    (folder / "guide" / "authorization.md").write_text("# Roles\n\nAdmins.\n", encoding="utf-8")
    kb.index()
    assert [r.chunk.source for r in kb.search("authorization", mode="title")] == [
        "guide/authorization.md"
    ]
    assert not kb.search("auth", mode="title")


def test_rank_gives_one_rankers_list(folder: Path, store: str | None) -> None:
    kb = _kb(folder, store)
    kb.index()
    hits = kb.rank(QUERY, "bm25", limit=2, filters=SearchFilters(kinds=("code",)))
    assert [h.chunk.source for h in hits] == ["src/backoff.py"]
    assert hits[0].ranks == {"bm25": 1} and set(hits[0].scores) == {"bm25"}


def test_stats_validate_and_recorded_settings(folder: Path, store: str | None) -> None:
    _kb(folder, store, chunking=ChunkConfig(chunk_size=64, overlap=8)).index()
    kb = _kb(folder, store, embedding="auto")
    assert kb.chunk_config.chunk_size == 64  # the index's settings, not the defaults
    kb.validate()
    stats = kb.stats().to_dict()
    assert stats["fileCount"] == 4 and stats["staleFiles"] == 0
    if store is None:
        assert stats["server"] == {}
    else:  # the server that answered: the standby when the URL names one (several hosts)
        assert stats["server"]["standby"] is ("," in store)
        assert stats["server"]["pgvector"] and stats["server"]["address"]
    assert stats["embedding"]["model"] and stats["embedding"]["dims"] > 0
    assert kb.index().embedded == 0


def test_lexical_only_index(folder: Path, store: str | None) -> None:
    kb = _kb(folder, store, embedding=None)
    kb.index()
    assert not kb.has_vectors
    assert kb.search(QUERY, top_k=1)[0].chunk.source in {"guide/retry.md", "src/backoff.py"}
    with pytest.raises(ConfigError, match="lexical-only"):
        kb.search(QUERY, mode="vector")


def test_another_model_is_refused(folder: Path, store: str | None) -> None:
    _kb(folder, store).index()
    other = _kb(folder, store, embedding=FakeEmbeddings(dims=64))
    with pytest.raises(ModelMismatchError):
        other.search(QUERY, mode="vector")
    assert other.search(QUERY, mode="bm25")  # BM25 never embeds


def test_delete_and_no_index(folder: Path, store: str | None) -> None:
    kb = _kb(folder, store)
    with pytest.raises(IndexNotFoundError):
        kb.search(QUERY)
    kb.index()
    kb.delete()
    with pytest.raises(IndexNotFoundError):
        _kb(folder, store).search(QUERY)
    assert (folder / "guide/retry.md").exists()


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid"])
def test_an_empty_folder_has_no_results_then_finds_what_is_added(
    tmp_path: Path, store: str | None, mode: str
) -> None:
    """Regression: the index of an empty folder recorded 0-dim vectors, and every vector
    search then failed as a model mismatch ("re-index with --rebuild", exit 7)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    kb = _kb(empty, store)
    assert kb.index().to_dict()["chunkCount"] == 0
    assert kb.search(QUERY, mode=mode) == []  # type: ignore[arg-type]
    _write(empty, {"retry.md": DOCS["guide/retry.md"]})
    assert kb.index().to_dict()["chunkCount"] > 0  # embedded, or taken from the cache
    assert kb.search(QUERY, mode=mode)[0].chunk.source == "retry.md"  # type: ignore[arg-type]


# --- code as a corpus (issue 22) ---------------------------------------------------------

CODE = {
    "pkg/_config.py": '"""Configuration defaults."""\n\nimport os\n\n\n'
    "class Timeout:\n    def __init__(self, timeout: float = 5.0) -> None:\n"
    "        self.timeout = timeout\n\n\n"
    "DEFAULT_TIMEOUT_CONFIG = Timeout(timeout=5.0)\nDEFAULT_MAX_REDIRECTS = 20\n",
    "pkg/_client.py": '"""The client."""\n\nfrom ._config import DEFAULT_MAX_REDIRECTS\n\n\n'
    "class Client:\n    def __init__(self) -> None:\n"
    "        self.max_redirects = DEFAULT_MAX_REDIRECTS\n\n"
    "    def _redirect_url(self, request, response):\n"
    '        location = response.headers["Location"]\n'
    "        return request.url.join(location)\n",
    "tests/test_client.py": "from pkg._client import Client\n\n\n"
    "def test_redirect_url_follows_location():\n    client = Client()\n"
    "    assert client._redirect_url is not None\n",
    "web/client.ts": "export class Client {\n  maxRedirects = 20;\n\n"
    "  redirectUrl(location: string): string {\n    return location;\n  }\n}\n",
}


# Small chunks, so that each definition is a chunk of its own.
SMALL = ChunkConfig(chunk_size=200, overlap=20)


@pytest.fixture
def code(tmp_path: Path) -> Path:
    return _write(tmp_path / "code", CODE)


def test_code_chunks_carry_symbol_paths_and_identifier_words_match(
    code: Path, store: str | None
) -> None:
    kb = _kb(code, store, chunking=SMALL)
    kb.index()
    # Words a question uses match the parts of an identifier (DEFAULT_TIMEOUT_CONFIG).
    [hit] = kb.search("default timeout", top_k=1, mode="bm25")
    assert hit.chunk.source == "pkg/_config.py" and hit.chunk.section is not None
    assert "DEFAULT_TIMEOUT_CONFIG" in hit.chunk.section.split(", ")
    hits = kb.search("default max redirects", top_k=3, mode="bm25")
    assert any("DEFAULT_MAX_REDIRECTS = 20" in h.chunk.text for h in hits)
    # A query naming a symbol finds its definition first (not a place that only uses it).
    [hit] = kb.search("Client._redirect_url", top_k=1, mode="bm25")
    assert (hit.chunk.source, hit.chunk.section) == ("pkg/_client.py", "Client._redirect_url")
    assert hit.chunk.text.startswith("    def _redirect_url(")
    assert hit.to_dict()["section"] == "Client._redirect_url"
    assert (
        kb.as_retriever(k=1, mode="bm25").invoke("Client._redirect_url")[0].metadata["section"]
        == "Client._redirect_url"
    )


def test_code_filters_know_languages_and_tests(code: Path, store: str | None) -> None:
    kb = _kb(code, store, chunking=SMALL)
    kb.index()

    def sources(*kinds: str) -> set[str]:
        filters = SearchFilters(kinds=kinds)  # type: ignore[arg-type]
        return {r.chunk.source for r in kb.search("redirect url", top_k=20, filters=filters)}

    assert sources("typescript") == {"web/client.ts"}
    assert sources("test") == {"tests/test_client.py"}
    assert sources("python", "non-test") == {"pkg/_client.py", "pkg/_config.py"}
    assert "tests/test_client.py" not in sources("non-test")


def test_both_stores_rank_code_alike(code: Path, pg_url: str, tmp_path: Path) -> None:
    other = _write(tmp_path / "copy", CODE)
    in_folder, in_db = _kb(code, None, chunking=SMALL), _kb(other, pg_url, chunking=SMALL)
    in_folder.index(), in_db.index()
    for query in ("redirect url", "DEFAULT_MAX_REDIRECTS", "maxRedirects", "Timeout timeout"):
        a = in_folder.search(query, top_k=5, mode="bm25")
        b = in_db.search(query, top_k=5, mode="bm25")
        assert [(r.chunk.id, r.chunk.section) for r in a] == [
            (r.chunk.id, r.chunk.section) for r in b
        ], query
        assert [r.score for r in a] == pytest.approx([r.score for r in b], rel=1e-4), query


# The defect issue 22 reports, as a user met it: the question's words are parts of the
# identifiers that answer it, and the old analyser kept each identifier as one term, so no
# mode reached these lines. Public API only, so that it runs against the old engine too.
CONFIG = {
    "pkg/_config.py": '"""Configuration."""\n\nimport typing\n\n\n'
    "class Timeout:\n"
    "    def __init__(self, timeout: float | None = None) -> None:\n"
    "        self.connect = timeout\n        self.read = timeout\n"
    "        self.write = timeout\n        self.pool = timeout\n\n"
    "    def as_dict(self) -> dict[str, float | None]:\n"
    '        return {"connect": self.connect, "read": self.read}\n\n\n'
    "DEFAULT_TIMEOUT_CONFIG = Timeout(timeout=5.0)\nDEFAULT_MAX_REDIRECTS = 20\n",
    "pkg/_client.py": '"""The client."""\n\n\nclass Client:\n'
    "    def send(self, request: object, timeout: object = None) -> object:\n"
    "        return self.transport.handle(request, timeout)\n",
}


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What is the default timeout?", "DEFAULT_TIMEOUT_CONFIG = Timeout(timeout=5.0)"),
        ("How many redirects at most?", "DEFAULT_MAX_REDIRECTS = 20"),
    ],
)
def test_a_question_in_words_finds_the_identifier_that_answers_it(
    tmp_path: Path, store: str | None, question: str, answer: str
) -> None:
    folder = _write(tmp_path / "code", CONFIG)
    kb = _kb(folder, store, chunking=SMALL)
    kb.index()
    hits = kb.search(question, top_k=1, mode="bm25")
    assert hits and answer in hits[0].chunk.text, [h.chunk.text for h in hits]
    hit = hits[0].chunk
    assert answer in _lines(folder, hit.source, hit.line_start, hit.line_end)
