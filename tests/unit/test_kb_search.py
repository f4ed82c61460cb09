"""Search settings that need a corpus built for them (score threshold, candidates per ranker,
filters before ranking) and what an indexing run reports (refused chunks, dimension checks,
warnings, files that changed during the run)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

import kbgraph.retrieval._folder._query as search_module
from kbgraph.errors import DimensionMismatchError
from kbgraph.retrieval import KnowledgeBase, SearchConfig, SearchFilters
from kbgraph.retrieval._progress import ProgressEvent
from kbgraph.testing import FakeEmbeddings

QUERY = "exponential backoff retry policy"


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return root


@pytest.fixture
def crowded(tmp_path: Path) -> Path:
    """60 notes that match the query well, one that matches it barely."""
    files: dict[str, str | bytes] = {
        f"noise/n{i:02d}.md": f"Exponential backoff retry policy, note {i}: jitter and caps.\n"
        for i in range(60)
    }
    files["target/garden.md"] = "Retry the tomato seedlings; the garden schedule is weekly.\n"
    return _write(tmp_path / "docs", files)


def _kb(folder: Path, embedding: Any = "fake") -> KnowledgeBase:
    kb = KnowledgeBase(folder, embedding=embedding)
    kb.index()
    return kb


# -- score threshold -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid"])
def test_score_threshold_drops_results_below_it(crowded: Path, mode: str) -> None:
    kb = _kb(crowded)
    everything = kb.search(QUERY, top_k=61, mode=mode)  # type: ignore[arg-type]
    scores = sorted({r.score for r in everything})
    threshold = scores[len(scores) // 2]
    config = SearchConfig(mode=mode, top_k=61, score_threshold=threshold)  # type: ignore[arg-type]
    kept = kb.search(QUERY, config=config)
    assert kept and len(kept) < len(everything)
    assert all(r.score >= threshold for r in kept)
    assert [r.chunk.id for r in kept] == [r.chunk.id for r in everything if r.score >= threshold]


# -- candidates per ranker -----------------------------------------------------------------


@pytest.fixture
def selections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int, int]]]:
    """(ranker, limit asked, rows returned) of every ranker list a search takes."""
    calls: list[tuple[str, int, int]] = []
    real = search_module.select

    def spy(scores: np.ndarray, ranker: str, limit: int, mask: Any) -> Any:
        rows, best = real(scores, ranker, limit, mask)
        calls.append((ranker, limit, len(rows)))
        return rows, best

    monkeypatch.setattr(search_module, "select", spy)
    yield calls


@pytest.mark.parametrize(("top_k", "candidates"), [(1, 20), (5, 20), (10, 40), (14, 56)])
@pytest.mark.parametrize("fusion", ["rrf", "convex"])
def test_each_ranker_gets_max_20_or_4_top_k_candidates(
    crowded: Path,
    selections: list[tuple[str, int, int]],
    top_k: int,
    candidates: int,
    fusion: str,
) -> None:
    kb = _kb(crowded)
    config = SearchConfig(mode="hybrid", top_k=top_k, fusion=fusion)  # type: ignore[arg-type]
    assert len(kb.search(QUERY, config=config)) == top_k
    # Both rankers were asked for, and really returned, that many candidates.
    assert sorted(selections) == [
        ("bm25", candidates, candidates),
        ("vector", candidates, candidates),
    ]


def test_candidates_per_ranker_can_be_set(
    crowded: Path, selections: list[tuple[str, int, int]]
) -> None:
    kb = _kb(crowded)
    kb.search(QUERY, config=SearchConfig(mode="hybrid", top_k=3, candidates_per_ranker=7))
    assert sorted(selections) == [("bm25", 7, 7), ("vector", 7, 7)]


# -- filters before ranking ----------------------------------------------------------------


def test_filters_apply_before_ranking_on_a_crowded_corpus(crowded: Path) -> None:
    kb = _kb(crowded)
    target = "target/garden.md"
    # Unfiltered, the target ranks below every candidate list: filtering the fused top-k,
    # or even each ranker's candidates, afterwards would find nothing.
    for ranker in ("vector", "bm25"):
        ranked = [r.chunk.source for r in kb.rank(QUERY, ranker, limit=61)]  # type: ignore[arg-type]
        assert ranked.index(target) >= SearchConfig(top_k=5).candidates(), ranker
    only = SearchFilters(paths=("target",))
    for mode in ("vector", "bm25", "hybrid"):
        results = kb.search(QUERY, top_k=5, mode=mode, filters=only)  # type: ignore[arg-type]
        assert [r.chunk.source for r in results] == [target], mode
    convex = SearchConfig(mode="hybrid", fusion="convex", top_k=5)
    assert [r.chunk.source for r in kb.search(QUERY, config=convex, filters=only)] == [target]
    for ranker in ("vector", "bm25"):
        hits = kb.rank(QUERY, ranker, limit=5, filters=only)  # type: ignore[arg-type]
        assert [r.chunk.source for r in hits] == [target]


# -- refused chunks and vector sizes in index() ----------------------------------------------


class _Refusing(FakeEmbeddings):
    """Refuses (HTTP 400) any batch holding POISON, as an OpenAI-compatible server does."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if any("POISON" in t for t in texts):
            request = httpx.Request("POST", "http://127.0.0.1:9/v1/embeddings")
            response = httpx.Response(400, request=request)
            raise httpx.HTTPStatusError("refused", request=request, response=response)
        return super().embed_documents(texts)


def test_one_refused_new_chunk_does_not_fail_an_incremental_run(tmp_path: Path) -> None:
    folder = _write(tmp_path / "docs", {"a.md": "# A\n\nRetry with backoff.\n"})
    _kb(folder, _Refusing())
    _write(folder, {"bad.md": "POISON pill\n"})  # the only new chunk, and it is refused
    # A new process (here: a new embedder) does not know the model's vector size yet.
    kb = KnowledgeBase(folder, embedding=_Refusing())
    report = kb.index()
    assert report.failed_embeddings == 1 and report.embedded == 0
    assert report.stats.embedding["dims"] == 384
    kb.validate()  # the refused row is zero, and recorded as failed
    assert kb.search("retry backoff", top_k=1, mode="vector")[0].chunk.source == "a.md"
    _write(folder, {"bad.md": "a cure\n"})
    assert kb.index().failed_embeddings == 0


class _Sized(Embeddings):
    """One model name whatever its vector size, like OpenAI's ``dimensions=`` option."""

    model = "sized"

    def __init__(self, dims: int) -> None:
        self.fake = FakeEmbeddings(dims)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.fake.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.fake.embed_query(text)


def test_index_refuses_vectors_of_another_size_and_keeps_the_index(tmp_path: Path) -> None:
    folder = _write(tmp_path / "docs", {"a.md": "# A\n\nRetry with backoff.\n"})
    kb = _kb(folder, _Sized(8))
    _write(folder, {"b.md": "# B\n\nTokens expire hourly.\n"})
    with pytest.raises(DimensionMismatchError, match=r"8-dimensional.*16-dimensional"):
        KnowledgeBase(folder, embedding=_Sized(16)).index()
    assert kb.stats().file_count == 1  # the old generation stays live
    report = kb.index()  # the 16-dim vector never reached the cache
    assert report.stats.file_count == 2 and report.stats.embedding["dims"] == 8


# -- what a run reports --------------------------------------------------------------------


def test_a_fallback_decoded_file_is_a_warning_not_a_skip(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "docs",
        {"latin.txt": b"caf\xe9 cr\xe8me br\xfbl\xe9e\r\n", "ok.md": "fine", ".env": "K=v"},
    )
    kb = KnowledgeBase(folder, embedding="fake")
    for _ in range(2):  # the second run reuses the file and still reports it
        data = kb.index().to_dict()
        assert data["fileCount"] == 2
        assert [(s["path"], s["reason"]) for s in data["skipped"]] == [(".env", "secret")]
        assert [(w["path"], w["reason"]) for w in data["warnings"]] == [
            ("latin.txt", "decode-fallback")
        ]
        assert "cp1252" in data["warnings"][0]["detail"]


def test_stale_files_counts_files_changed_during_the_run(tmp_path: Path) -> None:
    folder = _write(tmp_path / "docs", {"a.md": "alpha retry", "b.md": "beta backoff"})
    kb = KnowledgeBase(folder, embedding="fake")
    changed: list[bool] = []

    def edit_during_embedding(event: ProgressEvent) -> None:
        if event.stage == "embed" and not changed:
            path = folder / "b.md"
            path.write_text("beta backoff, edited while the run embedded")
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
            changed.append(True)

    report = kb.index(progress=edit_during_embedding)
    assert changed and report.stats.stale_files == 1
    assert kb.stale_files() == 1
    assert kb.index().stats.stale_files == 0
    assert "edited" in kb.search("edited while", top_k=1, mode="bm25")[0].chunk.text
