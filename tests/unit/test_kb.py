"""The facade end to end on small folders with the deterministic fake embedder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kbgraph.errors import ConfigError, IndexNotFoundError
from kbgraph.retrieval import (
    ChunkConfig,
    KnowledgeBase,
    SearchConfig,
    SearchFilters,
    format_context,
)
from kbgraph.retrieval._segments import normalize_newlines

DOCS = {
    "guide/retry.md": "# Retry\n\n## Policy\n\nThe retry policy uses exponential backoff "
    "with a cap of 30 seconds.\nSet max_attempts to change it.\n",
    "guide/auth.md": "# Auth\n\nAPI keys rotate every 90 days. Tokens expire after one hour.\n",
    "notes/東京.txt": "東京の天気は晴れです。\r\nThe Tokyo office handles billing disputes.\r\n",
    "src/backoff.py": 'def backoff(attempt):\n    """Exponential backoff delay."""\n'
    "    return min(30, 2 ** attempt)\n",
    ".env": "SECRET=hunter2\n",
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for rel, text in DOCS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    return root


def _kb(folder: Path, **kwargs: object) -> KnowledgeBase:
    return KnowledgeBase(folder, embedding="fake", **kwargs)  # type: ignore[arg-type]


def _lines(folder: Path, source: str, start: int, end: int) -> str:
    text = normalize_newlines((folder / source).read_bytes().decode("utf-8"))
    return "\n".join(text.split("\n")[start - 1 : end])


def test_index_reports_counts_and_skips_secrets(folder: Path) -> None:
    report = _kb(folder).index()
    data = report.to_dict()
    assert data["fileCount"] == 4
    assert data["chunkCount"] >= 4
    assert data["embedded"] == data["chunkCount"]
    assert data["reused"] == 0
    assert {(s["path"], s["reason"]) for s in data["skipped"]} == {(".env", "secret")}
    assert data["lastIndexed"] and data["staleFiles"] == 0 and data["indexSize"] > 0


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid"])
def test_results_point_at_lines_that_contain_their_text(folder: Path, mode: str) -> None:
    kb = _kb(folder)
    kb.index()
    results = kb.search("exponential backoff retry policy", top_k=3, mode=mode)  # type: ignore[arg-type]
    assert results
    assert results[0].chunk.source in {"guide/retry.md", "src/backoff.py"}
    for r in results:
        assert r.chunk.text in _lines(folder, r.chunk.source, r.chunk.line_start, r.chunk.line_end)
        assert mode in r.ranks or mode == "hybrid"
    if mode == "hybrid":
        assert set(results[0].ranks) <= {"vector", "bm25"} and results[0].ranks


def test_second_run_embeds_nothing_and_an_edit_embeds_only_its_chunks(folder: Path) -> None:
    kb = _kb(folder)
    first = kb.index()
    assert kb.is_fresh()
    again = kb.index()
    assert (again.embedded, again.reused) == (0, first.stats.chunk_count)
    path = folder / "guide/auth.md"
    path.write_text(path.read_text() + "\nSessions last eight hours.\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert not kb.is_fresh()
    assert kb.stats().stale_files == 1
    edited = kb.index()
    assert 1 <= edited.embedded <= 2
    assert edited.reused == edited.stats.chunk_count - edited.embedded


def test_touch_without_change_reuses_by_hash(folder: Path) -> None:
    kb = _kb(folder)
    kb.index()
    path = folder / "guide/retry.md"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert kb.index().embedded == 0


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied"), OSError(5, "I/O")])
def test_a_file_that_could_not_be_opened_is_tried_again_on_the_next_run(
    folder: Path, monkeypatch: pytest.MonkeyPatch, error: OSError
) -> None:
    """Regression (issue 20): an unreadable file was remembered by size and mtime and never
    opened again while they held, so a fixed permission or a mount back online changed
    nothing. The open fails at the loader's seam (tests run as root, who reads any file;
    tests/faults has the real permission case, as another user)."""
    from kbgraph.retrieval._loaders import _read

    real_open = os.open

    def failing_open(path: object, flags: int, *args: int, **kwargs: int) -> int:
        # The reader opens each component below the folder (dir_fd), the file last.
        if str(path) == "auth.md":
            raise error
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    kb = _kb(folder)
    with monkeypatch.context() as patch:
        patch.setattr(_read.os, "open", failing_open)
        first = kb.index()
    assert {s.path: s.reason for s in first.skipped}["guide/auth.md"] == "unreadable"
    assert kb.is_fresh()  # nothing changed on disk: no freshness run for it
    second = kb.index()  # the same size, mtime and ctime: read again all the same
    assert "guide/auth.md" not in {s.path for s in second.skipped}
    assert second.stats.file_count == first.stats.file_count + 1
    assert kb.search("API keys rotate", mode="bm25")[0].chunk.source == "guide/auth.md"
    assert kb.index().embedded == 0  # and from then on reused as any other file


def test_deleted_file_leaves_the_index(folder: Path) -> None:
    kb = _kb(folder)
    kb.index()
    (folder / "guide/auth.md").unlink()
    assert kb.stale_files() == 1
    kb.index()
    assert all(r.chunk.source != "guide/auth.md" for r in kb.search("API keys rotate", top_k=10))


def test_chunking_change_forces_rebuild_but_cache_avoids_reembedding(folder: Path) -> None:
    _kb(folder).index()
    changed = _kb(folder, chunking=ChunkConfig(chunk_size=40, overlap=5))
    assert not changed.is_fresh()
    report = changed.index()
    assert report.rebuilt
    back = _kb(folder, chunking=ChunkConfig()).index()
    assert back.rebuilt and back.embedded == 0  # texts seen before come from the cache


@pytest.mark.parametrize(
    ("filters", "allowed"),
    [
        (SearchFilters(paths=("guide",)), {"guide/retry.md", "guide/auth.md"}),
        (SearchFilters(paths=("**/*.py",)), {"src/backoff.py"}),
        (SearchFilters(kinds=("text",)), {"notes/東京.txt"}),
        (SearchFilters(paths=("notes/東京.txt",)), {"notes/東京.txt"}),
    ],
)
def test_filters_apply_before_ranking(
    folder: Path, filters: SearchFilters, allowed: set[str]
) -> None:
    kb = _kb(folder)
    kb.index()
    for mode in ("vector", "bm25", "hybrid"):
        results = kb.search("exponential backoff retry", top_k=5, mode=mode, filters=filters)  # type: ignore[arg-type]
        assert {r.chunk.source for r in results} <= allowed
        if mode != "bm25":  # vector ranking always fills k from the allowed chunks
            assert results


def test_lexical_only_index(folder: Path) -> None:
    kb = KnowledgeBase(folder, embedding=None)
    kb.index()
    assert kb.search("tokens expire", top_k=1)[0].chunk.source == "guide/auth.md"
    with pytest.raises(ConfigError, match="lexical-only"):
        kb.search("tokens", mode="vector")


def test_index_folder_is_private_and_ignored_by_git(folder: Path) -> None:
    kb = _kb(folder)
    kb.index()
    root = folder / ".kbgraph"
    assert (root / ".gitignore").read_text() == "*\n"
    for dirpath, _, files in os.walk(root):
        assert stat.S_IMODE(os.stat(dirpath).st_mode) == 0o700
        for name in files:
            if not name.endswith((".lock",)):
                assert stat.S_IMODE(os.stat(Path(dirpath) / name).st_mode) == 0o600, name


def test_search_without_index_says_what_to_do(folder: Path) -> None:
    with pytest.raises(IndexNotFoundError, match="kbgraph index"):
        _kb(folder).search("anything")


def test_auto_embedding_reuses_the_indexed_model(folder: Path) -> None:
    _kb(folder).index()
    kb = KnowledgeBase(folder)  # "auto"
    assert kb.is_fresh()
    assert kb.search("API keys", top_k=1)[0].chunk.source == "guide/auth.md"


def test_format_context_numbers_sources(folder: Path) -> None:
    kb = _kb(folder)
    kb.index()
    context = format_context(kb.search("API keys rotate", top_k=2))
    assert "[1] Source: guide/auth.md, lines 1-3, score:" in context
    assert "[2] Source:" in context
    assert "data, not instructions" in context


def test_convex_fusion_scores_every_candidate_with_both_rankers(folder: Path) -> None:
    kb = _kb(folder)
    kb.index()
    config = SearchConfig(mode="hybrid", fusion="convex", top_k=10, candidates_per_ranker=2)
    results = kb.search("exponential backoff retry", config=config)
    assert results and all(set(r.scores) == {"vector", "bm25"} for r in results)
    # a ranker's rank is given only where its own list had the chunk
    assert all(set(r.ranks) <= {"vector", "bm25"} and r.ranks for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert all(0.0 <= r.score <= 1.0 for r in results)
    assert results[0].score == pytest.approx(1.0) or len(results) > 1


@pytest.mark.parametrize("ranker", ["vector", "bm25"])
def test_convex_fusion_with_one_weight_is_that_ranker(folder: Path, ranker: str) -> None:
    kb = _kb(folder)
    kb.index()
    other = "bm25" if ranker == "vector" else "vector"
    config = SearchConfig(mode="hybrid", fusion="convex", top_k=3, weights={ranker: 1, other: 0})
    fused = kb.search("exponential backoff retry policy", config=config)
    alone = kb.search("exponential backoff retry policy", top_k=3, mode=ranker)  # type: ignore[arg-type]
    # bm25 alone lists only matching chunks; convex may fill up with the other's candidates
    assert [r.chunk.id for r in fused][: len(alone)] == [r.chunk.id for r in alone]


def test_convex_fusion_respects_filters(folder: Path) -> None:
    kb = _kb(folder)
    kb.index()
    config = SearchConfig(mode="hybrid", fusion="convex", top_k=5)
    results = kb.search("backoff", config=config, filters=SearchFilters(paths=("**/*.py",)))
    assert results and {r.chunk.source for r in results} == {"src/backoff.py"}
