"""Retrieve: every query × ranker of every knowledge base in scope, filters before ranking,
RRF fusion with deduplication, indexing first, progress events, errors recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import ConfigError, EmbeddingError, IndexNotFoundError
from kbgraph.graphs._nodes._fusion import ListKey
from kbgraph.graphs._nodes.retrieve import (
    UNDERSPECIFIED_WEIGHT,
    candidate_limit,
    list_weights,
    lists_for,
    rankers_for,
    retrieve,
)
from kbgraph.graphs._searcher import Searcher, SearcherRegistry, open_knowledge_base
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._state import RagScope
from kbgraph.retrieval._config import SearchConfig
from kbgraph.retrieval._filters import SearchFilters

from ._rag_fakes import (
    FakeSearcher,
    debug_of,
    deps_for,
    fake_kb,
    registry_with,
    runtime_for,
    settings_for,
    state_of,
)

QUERIES = ["How do I configure the retry policy?", "configure retry policy"]


def _scope(
    kbs: list[str], paths: list[str] | None = None, kinds: list[str] | None = None
) -> RagScope:
    return {
        "knowledge_bases": kbs,
        "paths": paths or [],
        "kinds": kinds or [],
        "widened": False,
        "reason": "",
    }


def _run(
    settings: RagSettings,
    registry: SearcherRegistry,
    scope: RagScope | None = None,
    queries: list[str] = QUERIES,
) -> tuple[dict[str, Any], list[Any]]:
    events: list[Any] = []
    state = {**state_of(queries[0]), "rag_queries": queries}
    if scope is not None:
        state["rag_scope"] = scope
    out = retrieve(state, runtime_for(settings, events), deps_for(registry))  # type: ignore[arg-type]
    return out, events


@pytest.fixture
def kb(tmp_path: Path) -> tuple[Path, FakeSearcher]:
    folder = tmp_path / "docs"
    return folder, fake_kb(folder)


def test_every_query_times_every_ranker(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    out, _ = _run(settings_for(folder, search={"top_k": 3}), registry_with({folder: searcher}))
    calls = [(q, r, limit) for q, r, limit, _ in searcher.rank_calls]
    assert calls == [(q, r, 20) for q in QUERIES for r in ("vector", "bm25")]
    candidates = out["rag_candidates"]
    ids = [c["chunk_id"] for c in candidates]
    assert len(ids) == len(set(ids))
    best = candidates[0]
    assert best["source"] == "docs/configuration.md" and "retry policy" in best["text"].lower()
    assert set(best["ranks"]) == {"q0:vector", "q0:bm25", "q1:vector", "q1:bm25"}
    assert set(best["scores"]) == {*best["ranks"], "rrf", "similarity"}
    assert best["scores"]["similarity"] == max(
        best["scores"][n] for n in ("q0:vector", "q1:vector")
    )
    assert 0 < best["score"] <= 1
    # fused score normalised by the best possible: first in all four lists = 1.0
    assert best["score"] == pytest.approx(
        sum(1 / (60 + r) for r in best["ranks"].values()) / (4 / 61)
    )
    assert [c["score"] for c in candidates] == sorted(
        (c["score"] for c in candidates), reverse=True
    )
    text = (folder / best["source"]).read_text(encoding="utf-8").split("\n")
    assert best["text"] == "\n".join(text[best["line_start"] - 1 : best["line_end"]])


def test_scope_filters_reach_the_engine(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    scope = _scope([folder.name], ["src/**"], ["code"])
    out, _ = _run(settings_for(folder), registry_with({folder: searcher}), scope)
    assert {f for *_, f in searcher.rank_calls} == {
        SearchFilters(paths=("src/**",), kinds=("code",))
    }
    assert {c["source"] for c in out["rag_candidates"]} == {"src/harbor/retry.py"}
    assert debug_of(out)["steps"][0]["data"]["filters"] == {"paths": ["src/**"], "kinds": ["code"]}


def test_a_scope_naming_more_paths_than_a_filter_holds_searches_the_whole_folder(
    kb: tuple[Path, FakeSearcher],
) -> None:
    """The heuristic scope takes every path a question mentions; past a filter's limits
    (50 paths, 64 wildcards) ``SearchFilters`` refuses them, and that failed the turn."""
    folder, searcher = kb
    many = [f"docs/part{n}/**/*.md" for n in range(40)]  # 80 wildcards
    out, _ = _run(
        settings_for(folder),
        registry_with({folder: searcher}),
        _scope([folder.name], many, ["code"]),
    )
    assert {f for *_, f in searcher.rank_calls} == {SearchFilters(kinds=("code",))}
    assert out["rag_candidates"]


@pytest.mark.parametrize(
    ("overrides", "rankers"),
    [
        ({}, ["vector", "bm25"]),
        ({"search": {"mode": "bm25"}}, ["bm25"]),
        ({"search": {"mode": "vector"}}, ["vector"]),
        ({"embedding": "none"}, ["bm25"]),
    ],
)
def test_rankers_follow_search_mode(overrides: dict[str, Any], rankers: list[str]) -> None:
    assert rankers_for(RagSettings(**overrides)) == rankers


def test_lexical_only_knowledge_base(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    registry = registry_with({folder: searcher}, embedding=None)  # type: ignore[arg-type]
    out, _ = _run(settings_for(folder, embedding="none"), registry)
    assert {r for _, r, _, _ in searcher.rank_calls} == {"bm25"}
    best = out["rag_candidates"][0]
    assert set(best["ranks"]) <= {"q0:bm25", "q1:bm25"}
    expected = sum(1 / (60 + r) for r in best["ranks"].values()) / (2 / 61)
    assert best["score"] == pytest.approx(expected)


def test_candidate_depth_and_cap(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    assert candidate_limit(RagSettings(search=SearchConfig(top_k=10))) == 40
    assert candidate_limit(RagSettings(search=SearchConfig(candidates_per_ranker=3))) == 3
    out, _ = _run(
        settings_for(folder, search={"candidates_per_ranker": 2, "top_k": 1}),
        registry_with({folder: searcher}),
    )
    assert {limit for _, _, limit, _ in searcher.rank_calls} == {2}
    assert len(out["rag_candidates"]) <= 8


def test_rrf_weights(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    settings = settings_for(folder, search={"weights": {"vector": 0.0, "bm25": 1.0}})
    out, _ = _run(settings, registry_with({folder: searcher}), queries=["timeout"])
    bm25_order = [r.chunk.id for r in searcher.rank("timeout", "bm25", limit=20)]
    assert [c["chunk_id"] for c in out["rag_candidates"]][: len(bm25_order)] == bm25_order


def test_indexes_first_and_streams_events(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    registry = registry_with({folder: searcher})
    _, events = _run(settings_for(folder), registry)
    kinds = [e["event"] for e in events]
    assert kinds == [
        "knowledge.search.started",
        "knowledge.index.progress",
        "knowledge.index.progress",
        "knowledge.index.done",
        "knowledge.search.done",
    ]
    assert events[0]["queries"] == QUERIES and events[0]["kbs"] == ["docs"]
    assert events[1] == {
        "event": "knowledge.index.progress", "kb": "docs", "stage": "scan", "done": 1,
        "total": 1, "message": "scanned",
    }  # fmt: skip
    assert events[3]["indexed"] is True and events[3]["fileCount"] == 5
    assert events[4]["candidates"] > 0 and events[4]["errors"] == {}
    # second run: already fresh, no progress
    _, events = _run(settings_for(folder), registry)
    assert [e["event"] for e in events] == [
        "knowledge.search.started", "knowledge.index.done", "knowledge.search.done",
    ]  # fmt: skip
    assert events[1]["indexed"] is False


def test_auto_index_off(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    _, events = _run(settings_for(folder, auto_index=False), registry_with({folder: searcher}))
    assert searcher.index_calls == 0
    assert "knowledge.index.done" not in [e["event"] for e in events]


def test_several_knowledge_bases_and_scope(tmp_path: Path) -> None:
    a, b = tmp_path / "alpha", tmp_path / "beta"
    sa = fake_kb(a)
    sb = fake_kb(b, {"docs/configuration.md": "Retry policy of beta: never retry.\n"})
    registry = registry_with({a: sa, b: sb})
    out, _ = _run(settings_for(a, b), registry)
    assert {c["kb"] for c in out["rag_candidates"]} == {"alpha", "beta"}
    # the same path in two knowledge bases stays two candidates
    same = [c for c in out["rag_candidates"] if c["source"] == "docs/configuration.md"]
    assert {c["kb"] for c in same} == {"alpha", "beta"}
    out, _ = _run(settings_for(a, b), registry, _scope(["beta"]))
    assert {c["kb"] for c in out["rag_candidates"]} == {"beta"}


def test_errors_are_recorded_and_other_lists_kept(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    searcher.fail_rank = IndexNotFoundError("no index yet; run kbgraph index")
    out, events = _run(settings_for(folder), registry_with({folder: searcher}))
    assert out["rag_candidates"] == []
    errors = debug_of(out)["steps"][0]["data"]["errors"]["docs"]
    assert len(errors) == 4 and errors[0]["type"] == "IndexNotFoundError"
    assert events[-1]["errors"] == {"docs": errors}


def test_a_knowledge_base_is_searched_in_its_store(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    dsn = "postgresql://kb@127.0.0.1/docs"
    in_db, in_folder = fake_kb(folder), FakeSearcher([])
    registry = registry_with({folder: in_folder})
    registry.register(folder, "fake", in_db, store=dsn)
    settings = settings_for(folder)
    settings.knowledge_bases[0]["store"] = dsn
    out, _ = _run(settings, registry)
    assert out["rag_candidates"] and in_db.rank_calls and not in_folder.rank_calls


def test_open_failure_is_recorded(tmp_path: Path) -> None:
    def broken(folder: str, embedding: str | None) -> Any:
        raise OSError(f"cannot read {folder}")

    out, _ = _run(settings_for(tmp_path / "missing"), SearcherRegistry(broken))
    assert out["rag_candidates"] == []
    assert debug_of(out)["steps"][0]["data"]["errors"]["missing"][0]["type"] == "OSError"


def test_no_knowledge_base(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBGRAPH_FOLDER", raising=False)
    out, events = _run(RagSettings(), SearcherRegistry())
    assert out["rag_candidates"] == [] and events[0]["kbs"] == []


def test_registry_caches_one_searcher_per_folder_embedding_and_store(tmp_path: Path) -> None:
    opened: list[tuple[str, str | None, dict[str, Any]]] = []

    def factory(folder: str, embedding: str | None, /, **options: Any) -> Searcher:
        opened.append((folder, embedding, options))
        return FakeSearcher([])

    registry = SearcherRegistry(factory)
    first = registry.open(tmp_path, "fake")
    assert registry.open(str(tmp_path) + "/", "fake") is first
    assert registry.open(tmp_path, "local") is not first
    dsn = "postgresql://u@db/kb"
    in_db = registry.open(tmp_path, "fake", store=dsn)
    assert in_db is not first and registry.open(tmp_path, "fake", store=dsn) is in_db
    folder = str(tmp_path.resolve())
    assert opened == [(folder, "fake", {}), (folder, "local", {}), (folder, "fake", {"store": dsn})]
    assert isinstance(first, Searcher)
    registry.close_all()
    assert first.closed  # type: ignore[attr-defined]


def test_open_knowledge_base_opens_a_real_index(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\nSome text about retries.\n", encoding="utf-8")
    kb = open_knowledge_base(tmp_path, "fake")
    try:
        assert isinstance(kb, Searcher)
        assert open_knowledge_base(tmp_path, "fake") is kb
    finally:
        from kbgraph.graphs._searcher import default_registry

        default_registry.close_all()


def test_index_failure_still_searches_the_old_index(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    searcher.fail_open = EmbeddingError("embedding server unreachable; check its URL")
    out, events = _run(settings_for(folder), registry_with({folder: searcher}))
    assert out["rag_candidates"]
    errors = debug_of(out)["steps"][0]["data"]["errors"]["docs"]
    assert errors == [
        {
            "where": "index",
            "type": "EmbeddingError",
            "message": "embedding server unreachable; check its URL",
        }
    ]
    assert "knowledge.index.done" not in [e["event"] for e in events]


@pytest.mark.parametrize(
    ("overrides", "lists"),
    [
        ({"search": {"fusion": "convex"}}, ["hybrid"]),
        ({"search": {"fusion": "convex", "mode": "bm25"}}, ["bm25"]),
        ({"search": {"fusion": "convex"}, "embedding": "none"}, ["bm25"]),
        ({"search": {"fusion": "rrf"}}, ["vector", "bm25"]),
    ],
)
def test_convex_fusion_searches_one_hybrid_list_per_query(
    overrides: dict[str, Any], lists: list[str]
) -> None:
    assert lists_for(RagSettings(**overrides)) == lists


def test_convex_lists_go_to_the_engine_and_keep_vector_scores(
    kb: tuple[Path, FakeSearcher],
) -> None:
    folder, searcher = kb
    weights = {"vector": 0.7, "bm25": 0.3}
    settings = settings_for(folder, search={"fusion": "convex", "weights": weights, "top_k": 2})
    out, _ = _run(settings, registry_with({folder: searcher}))
    assert [q for q, _ in searcher.search_calls] == QUERIES
    config = searcher.search_calls[0][1]
    assert (config.mode, config.fusion, config.weights) == ("hybrid", "convex", weights)
    assert config.top_k == config.candidates() == candidate_limit(settings)
    best = out["rag_candidates"][0]
    assert set(best["ranks"]) <= {"q0:hybrid", "q1:hybrid"}
    # each ranker's raw score stays visible (GroundingCheck's floor reads ``q0:vector``)
    assert {"q0:vector", "q0:bm25"} <= set(best["scores"])
    expected = searcher.search(QUERIES[0], config=config)[0]
    assert best["chunk_id"] == expected.chunk.id


def test_unknown_fusion_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"search\.fusion='borda' is not allowed"):
        RagSettings(search={"fusion": "borda"})  # type: ignore[arg-type]


def test_index_event_lists_at_most_twenty_skipped_files_and_counts_them(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    (folder / "img").mkdir(parents=True)
    (folder / "guide.md").write_text("# Retries\n\nThe retry policy backs off.\n", "utf-8")
    for i in range(45):
        (folder / "img" / f"shot_{i:02d}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    registry = SearcherRegistry()  # the real factory: a real index of the folder
    try:
        out, events = _run(settings_for(folder), registry)
    finally:
        registry.close_all()
    done = next(e for e in events if e["event"] == "knowledge.index.done")
    assert done["skippedCount"] >= 45 and len(done["skipped"]) == 20
    recorded = debug_of(out)["steps"][0]["data"]["index"]["repo"]
    assert recorded["skippedCount"] == done["skippedCount"] and len(recorded["skipped"]) == 20


FOLLOW_UP = ["Is it retryable?", "Is it retryable? error HB-601", "retryable error HB-601"]


@pytest.mark.parametrize(
    ("queries", "standalone", "fusion", "halved"),
    [
        (FOLLOW_UP, "", "rrf", False),  # no standalone question
        (["Is it retryable?"], "Is it retryable?", "rrf", False),
        (FOLLOW_UP, "retryable? Is it", "rrf", False),  # same words
        (FOLLOW_UP, "something never searched", "rrf", False),
        (FOLLOW_UP, "Is it retryable? error HB-601", "rrf", True),
        (FOLLOW_UP, "Is it retryable? error HB-601", "convex", True),
    ],
)
def test_a_completed_follow_up_counts_its_raw_question_half(
    queries: list[str], standalone: str, fusion: str, halved: bool
) -> None:
    settings = RagSettings(search=SearchConfig(fusion=fusion, weights={"vector": 2.0, "bm25": 1.0}))  # type: ignore[arg-type]
    rankers = ["hybrid"] if fusion == "convex" else ["vector", "bm25"]
    keys = [ListKey("docs", q, r) for q in range(len(queries)) for r in rankers]
    base = {"vector": 2.0, "bm25": 1.0, "hybrid": 1.0}
    expected = {
        key: base[key.ranker] * (UNDERSPECIFIED_WEIGHT if halved and key.query == 0 else 1.0)
        for key in keys
    }
    assert list_weights(settings, keys, queries, standalone) == expected
    assert UNDERSPECIFIED_WEIGHT == 0.5


def test_the_raw_follow_up_weighs_less_in_the_fused_order(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    registry = registry_with({folder: searcher})
    settings = settings_for(folder, search={"weights": {"vector": 0.0, "bm25": 1.0}})
    raw, completed = "rotate a key", "café menu"  # no chunk holds words of both
    state = {**state_of(raw), "rag_queries": [raw, completed]}
    plain = retrieve(state, runtime_for(settings), deps_for(registry))  # type: ignore[arg-type]
    state["rag_standalone"] = completed
    weighted = retrieve(state, runtime_for(settings), deps_for(registry))  # type: ignore[arg-type]

    def order(out: dict[str, Any]) -> list[str]:
        return [str(c["chunk_id"]) for c in out["rag_candidates"]]

    raw_best = searcher.rank(raw, "bm25", limit=1)[0].chunk.id
    completed_best = searcher.rank(completed, "bm25", limit=1)[0].chunk.id
    assert raw_best != completed_best
    # Equal weights: a tie of first places, broken by list order (the raw question's first).
    assert order(plain).index(raw_best) < order(plain).index(completed_best)
    assert order(weighted).index(completed_best) < order(weighted).index(raw_best)
    assert debug_of(weighted)["steps"][0]["data"]["weights"]["q0:bm25"] == 0.5
    assert max(c["score"] for c in weighted["rag_candidates"]) <= 1.0


@pytest.mark.parametrize("where", ["rank", "open", "index"])
def test_a_custom_searchers_foreign_exception_is_recorded(
    kb: tuple[Path, FakeSearcher], where: str
) -> None:
    # A searcher from SearcherRegistry(factory=...) raises what its backend raises (a
    # RuntimeError, psycopg's OperationalError): recorded as data, the turn goes on (issue 42
    # hole 10); it crashed the turn when only KbgraphError/OSError were caught.
    folder, searcher = kb

    def broken(folder: str, embedding: str | None) -> Any:
        raise RuntimeError("backend is down")

    if where == "rank":
        searcher.fail_rank = RuntimeError("backend is down")
        registry = registry_with({folder: searcher})
    elif where == "index":
        searcher.fail_open = RuntimeError("backend is down")
        registry = registry_with({folder: searcher})
    else:
        registry = SearcherRegistry(broken)
    out, _ = _run(settings_for(folder), registry)
    errors = debug_of(out)["steps"][0]["data"]["errors"]["docs"]
    assert errors[0]["type"] == "RuntimeError" and "backend is down" in errors[0]["message"]
