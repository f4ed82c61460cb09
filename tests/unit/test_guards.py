"""A model's decision is a proposal: the evidence that overrules it, and the record of each
overruling (issue "real model": guarded DecideRetrieve, RewriteQuery, SelectScope and LLM
Rerank). Scripted models propose what the packaged SmolLM2 was seen to propose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbgraph.graphs._nodes._base import OVERRULED_EVENT
from kbgraph.graphs._nodes._fusion import ListKey, fuse
from kbgraph.graphs._nodes._rewrite_guard import dominant_script, rewrite_problem
from kbgraph.graphs._nodes.decide_retrieve import decide_retrieve
from kbgraph.graphs._nodes.rerank import kendall_tau_b, rerank
from kbgraph.graphs._nodes.rewrite_query import rewrite_query
from kbgraph.graphs._nodes.select_scope import select_scope
from kbgraph.retrieval._records import Chunk, SearchResult
from kbgraph.testing import ScriptedChatModel
from tests.unit._rag_fakes import (
    candidate,
    debug_of,
    deps_for,
    fake_kb,
    registry_with,
    runtime_for,
    settings_for,
    state_of,
)

RETRY = "How do I configure the retry policy?"


@pytest.fixture
def docs(tmp_path: Path) -> tuple[Path, Any]:
    folder = tmp_path / "docs"
    return folder, registry_with({folder: fake_kb(folder)})


def _decide(
    docs: tuple[Path, Any], text: str, reply: dict[str, Any], events: list[Any] | None = None
) -> dict[str, Any]:
    folder, registry = docs
    model = ScriptedChatModel(responses=[reply])
    runtime = runtime_for(settings_for(folder), events)
    return decide_retrieve(state_of(text), runtime, deps_for(registry, model))


def test_a_proposed_skip_of_a_documented_question_is_overruled(docs: tuple[Path, Any]) -> None:
    events: list[Any] = []
    proposal = {"retrieve": False, "reason": "retrive is not a function"}
    out = _decide(docs, RETRY, proposal, events)
    assert out["rag_should_retrieve"] is True
    debug = debug_of(out)
    (overruling,) = debug["overrulings"]
    assert overruling["node"] == "decide_retrieve"
    assert overruling["proposal"] == {"retrieve": False, "reason": "retrive is not a function"}
    hits = overruling["evidence"]["hits"]
    assert hits and hits[0]["source"] == "docs/configuration.md"
    assert overruling["decision"] == {"retrieve": True}
    assert debug["steps"][0]["data"]["decision"] == "retrieve"
    assert [e for e in events if e.get("event") == OVERRULED_EVENT] == [
        {"event": OVERRULED_EVENT, **overruling}
    ]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("thanks, that's all!", "small talk"),
        ("ok got it, cheers", "closing"),
        ("What is the capital of Mongolia?", "found nothing"),
    ],
)
def test_a_proposed_skip_stands_on_evidence(docs: tuple[Path, Any], text: str, why: str) -> None:
    out = _decide(docs, text, {"retrieve": False, "reason": "no documents needed"})
    assert out["rag_should_retrieve"] is False
    assert debug_of(out)["overrulings"] == []
    assert why in debug_of(out)["steps"][0]["data"]["reason"]


def test_a_knowledge_base_the_probe_cannot_read_never_lets_a_skip_stand(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    searcher = fake_kb(folder)
    searcher.fail_rank = RuntimeError("no index yet")
    registry = registry_with({folder: searcher})
    model = ScriptedChatModel(responses=[{"retrieve": False, "reason": "chit-chat"}])
    out = decide_retrieve(
        state_of("What is the capital of Mongolia?"),
        runtime_for(settings_for(folder)),
        deps_for(registry, model),
    )
    assert out["rag_should_retrieve"] is True
    assert "could not read docs" in debug_of(out)["overrulings"][0]["reason"]


def test_a_proposed_retrieve_is_never_overruled(docs: tuple[Path, Any]) -> None:
    out = _decide(docs, "hello", {"retrieve": True, "reason": "maybe"})
    assert out["rag_should_retrieve"] is True and debug_of(out)["overrulings"] == []


JUNK = {
    "standalone_question": "2023-08-22 14:22:52.143",
    "keyword_query": " ".join(["The answer to this question is: 4."] * 40),
    "paraphrase": "Как настроить политику повторов?",
}


def test_junk_rewrites_are_dropped_and_the_question_is_searched(docs: tuple[Path, Any]) -> None:
    folder, registry = docs
    model = ScriptedChatModel(responses=[JUNK])
    out = rewrite_query(
        state_of("How do I use HTTP/2?"),
        runtime_for(settings_for(folder)),
        deps_for(registry, model),
    )
    assert out["rag_queries"][0] == "How do I use HTTP/2?"
    assert out["rag_rewrites"] == []
    assert not set(out["rag_queries"]) & set(JUNK.values())
    assert out["rag_standalone"] == "How do I use HTTP/2?"
    (overruling,) = debug_of(out)["overrulings"]
    dropped = overruling["evidence"]["dropped"]
    assert set(dropped.values()) == {
        "shares no content word with the question or the conversation",
        "much longer than the question (280 words, at most 18)",
        "in another script (cyrillic, the question is latin)",
    }


@pytest.mark.parametrize(
    ("rewrite", "question", "problem"),
    [
        ("", "How do I use HTTP/2?", "empty"),
        ("  ?! ", "How do I use HTTP/2?", "empty"),
        ("retry retry retry policy policy policy a b", "retry policy?", "repetitive"),
        ("enable http2 enable http2 enable http2", "How do I use HTTP/2?", "repetitive"),
        ("What is the weather in Paris?", "How do I use HTTP/2?", "shares no content word"),
        ("HTTP/2 を有効にする方法", "How do I use HTTP/2?", "in another script"),
        ("HTTP/2 の使い方は?", "HTTP/2 を有効にする方法は?", None),  # kanji and kana: one script
        ("configurer le délai d'attente", "Comment configurer le délai ?", None),
        ("How do I enable HTTP/2 on a client?", "How do I use HTTP/2?", None),
        ("retry policy timeout", "What about its timeout?", None),
        # SmolLM2's "paraphrase": the question, then a sentence of its own (issue 40: it
        # moved the chunk with the answer out of the sources)
        (
            "Which HTTP status codes does Harbor retry by default? This is a question that "
            "has been asked before, but no answer has been found yet.",
            "Which HTTP status codes does Harbor retry by default?",
            "a sentence of its own added",
        ),
        (
            "How many attempts does Harbor makes by default when a downstream provider fails? "
            "This is a question that has been asked before, but no answer has been found yet.",
            "How many attempts does Harbor make by default when a call to a downstream "
            "provider fails?",
            "a sentence of its own added",
        ),
        ("Which statuses are retried? Is 429 among them?", "Which statuses are retried?", None),
        (
            "How many attempts does Harbor makes by default when a downstream provider fails?",
            "How many attempts does Harbor make by default when a call to a downstream "
            "provider fails?",
            "adds no content word to the question",
        ),
        ("how do I use http/2", "How do I use HTTP/2?", None),  # the same words: deduplicated
        # the question with the conversation's topic added is a standalone question
        (
            "How do I configure the timeout of the retry policy?",
            "How do I configure the timeout?",
            None,
        ),
        ("How do I use HTTP/2 in httpx?", "How do I use HTTP/2?", None),  # one word added
    ],
)
def test_rewrite_problems(rewrite: str, question: str, problem: str | None) -> None:
    found = rewrite_problem(rewrite, question, "user: How do I configure the retry policy?")
    assert (found is None) if problem is None else (found or "").startswith(problem)


def test_dominant_script() -> None:
    assert dominant_script("HTTP/2 café") == "LATIN"
    assert dominant_script("Ελλάς and a few more words") == "LATIN"
    assert dominant_script("Ελληνικά and a few") == "GREEK"
    assert dominant_script("12 + 3") is None


def _result(cid: str, source: str, rank: int) -> SearchResult:
    chunk = Chunk(cid, f"text of {cid}", source, 1, 2, 0, 10)
    return SearchResult(chunk, 1.0 / rank, {"x": rank}, {"x": 1.0 / rank})


def test_the_rewrites_lists_cannot_push_the_questions_best_results_down() -> None:
    own = [_result(f"own{i}", "http2.md", i) for i in range(1, 6)]
    junk = [_result(f"junk{i}", "changelog.md", i) for i in range(1, 6)]
    lists = {ListKey("docs", 0, "vector"): own, ListKey("docs", 0, "bm25"): own}
    for q in (1, 2):
        lists |= {ListKey("docs", q, "vector"): junk, ListKey("docs", q, "bm25"): junk}
    unguarded = [c["chunk_id"] for c in fuse(lists, {}, k=60)][:5]
    assert unguarded[0] == "junk1"  # four junk lists outvote the question's two
    guarded = fuse(lists, {}, k=60, rewrites=[1, 2])
    assert [c["chunk_id"] for c in guarded][:3] == ["own1", "own2", "own3"]
    assert guarded[0]["scores"]["own"] == pytest.approx(1.0)


def test_a_scope_that_leaves_out_every_probe_hit_is_widened(docs: tuple[Path, Any]) -> None:
    folder, registry = docs
    model = ScriptedChatModel(
        responses=[{"knowledge_bases": [], "paths": ["notes/"], "kinds": [], "reason": "notes"}]
    )
    runtime = runtime_for(settings_for(folder))
    out = select_scope(state_of(RETRY), runtime, deps_for(registry, model))
    scope = out["rag_scope"]
    assert scope["paths"] == [] and scope["widened"] is True
    (overruling,) = debug_of(out)["overrulings"]
    assert overruling["proposal"]["paths"] == ["notes/"]
    assert overruling["decision"] == {"scope": "everything"}


def test_a_scope_holding_a_probe_hit_stands(docs: tuple[Path, Any]) -> None:
    folder, registry = docs
    model = ScriptedChatModel(
        responses=[{"knowledge_bases": [], "paths": ["docs/"], "kinds": [], "reason": "docs"}]
    )
    runtime = runtime_for(settings_for(folder))
    out = select_scope(state_of(RETRY), runtime, deps_for(registry, model))
    assert out["rag_scope"]["paths"] == ["docs/"] and debug_of(out)["overrulings"] == []


@pytest.mark.parametrize(
    ("x", "y", "tau"),
    [
        ([1, 2, 3, 4], [1, 2, 3, 4], 1.0),
        ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
        ([1, 2, 3, 4], [1, 2, 4, 3], 2 / 3),
        ([1, 1, 1, 1], [1, 2, 3, 4], None),
        ([1, 2, 3, 3], [1, 2, 3, 4], 5 / 30**0.5),
    ],
)
def test_kendall_tau_b(x: list[float], y: list[float], tau: float | None) -> None:
    got = kendall_tau_b(x, y)
    assert got == tau if tau is None else got == pytest.approx(tau)


def _pool(n: int) -> list[Any]:
    pool = []
    for i in range(1, n + 1):
        c = candidate(f"c{i}", source=f"f{i}.md", score=1 - i / (2 * n))
        c["ranks"] = {"q0:vector": i, "q0:bm25": i}
        pool.append(c)
    return pool


def _llm_rerank(ranking: list[int], n: int = 10, top_k: int = 3) -> dict[str, Any]:
    model = ScriptedChatModel(responses=[{"ranking": ranking, "reason": ""}])
    settings = settings_for(Path("/nonexistent"), search={"top_k": top_k}, rerank="llm")
    state = state_of(RETRY, rag_candidates=_pool(n), rag_queries=[RETRY])
    return rerank(state, runtime_for(settings), deps_for(model=model))


def test_a_model_order_that_agrees_with_a_ranker_is_obeyed() -> None:
    out = _llm_rerank([2, 1, 3, 4, 5, 6, 7, 8, 9, 10])
    assert [c["chunk_id"] for c in out["rag_candidates"][:3]] == ["c2", "c1", "c3"]
    assert debug_of(out)["overrulings"] == []


def test_a_model_order_against_every_ranker_is_blended_and_keeps_the_fused_first() -> None:
    out = _llm_rerank(list(range(10, 0, -1)))
    order = [c["chunk_id"] for c in out["rag_candidates"]]
    reasons = [o["reason"] for o in debug_of(out)["overrulings"]]
    assert any("disagrees with every ranker" in r for r in reasons)
    assert "c1" in order[:3]  # never dropped from the context
    taus = debug_of(out)["overrulings"][0]["evidence"]["kendall_tau"]
    assert taus == {"q0:bm25": -1.0, "q0:vector": -1.0}


def test_the_fused_first_is_kept_when_the_model_leaves_it_out() -> None:
    out = _llm_rerank([2, 3, 4, 5, 6, 7, 8, 9, 10])  # agrees with the lists but for c1
    order = [c["chunk_id"] for c in out["rag_candidates"]]
    assert order[:3] == ["c2", "c3", "c1"]
    scores = [c["score"] for c in out["rag_candidates"]]
    assert scores == sorted(scores, reverse=True)
    (overruling,) = debug_of(out)["overrulings"]
    assert overruling["decision"] == {"position": 3}
