"""The subgraph and the chat agent on a copy of the real ``examples/docs`` folder, indexed by
the real engine with the offline ``fake`` embedding: named files and kinds keep their
scope, follow-ups find the right file only through RewriteQuery, and a new question is not
polluted by the previous topic.

The bag-of-words ``fake`` embedding says little about meaning, so the grounding similarity
floor is off here; the e2e tests run the same questions with the real local model."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from kbgraph.agents import build_chat_agent
from kbgraph.graphs import NODE_ORDER, RagSettings, build_rag_graph
from kbgraph.graphs._nodes.retrieve import UNDERSPECIFIED_WEIGHT
from kbgraph.graphs._searcher import SearcherRegistry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A copy: the index goes beside the folder, never into the repository.
    target = tmp_path_factory.mktemp("examples") / "docs"
    return Path(shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns(".kbgraph")))


@pytest.fixture(scope="module")
def registry() -> Iterator[SearcherRegistry]:
    reg = SearcherRegistry()
    yield reg
    reg.close_all()


@pytest.fixture(scope="module")
def settings(docs: Path) -> RagSettings:
    return RagSettings(
        knowledge_bases=[{"name": "docs", "folder": str(docs)}],
        embedding="fake",
        grounding_min_vector_score=None,
    )


def _run(registry: SearcherRegistry, settings: RagSettings, question: str) -> dict[str, Any]:
    graph = build_rag_graph(registry=registry)
    return dict(graph.invoke({"messages": [HumanMessage(question)]}, context=settings))


def _lines(docs: Path, source: str, start: int, end: int) -> str:
    text = (docs / source).read_bytes().decode("utf-8").replace("\r\n", "\n")
    return "\n".join(text.split("\n")[start - 1 : end])


@pytest.mark.parametrize(
    ("question", "source", "scope"),
    [
        (
            "What does docs/configuration.md say about the retry policy?",
            "docs/configuration.md",
            {"paths": ["docs/configuration.md"], "kinds": []},
        ),
        (
            "Which error codes are retryable in the CSV file?",
            "data/error_codes.csv",
            {"paths": [], "kinds": ["csv"]},
        ),
    ],
)
def test_a_named_file_or_kind_keeps_its_scope(
    registry: SearcherRegistry, settings: RagSettings, docs: Path, question: str, source: str,
    scope: dict[str, list[str]],
) -> None:  # fmt: skip
    out = _run(registry, settings, question)
    assert out["rag_grounded"] is True
    assert out["rag_attempt"] == 0, "not grounded on the named scope, retried wider"
    assert {k: out["rag_scope"][k] for k in scope} == scope
    assert [s["node"] for s in out["rag_retrieval_debug"]["steps"]] == list(NODE_ORDER)
    assert {c["source"] for c in out["rag_citations"]} == {source}
    for c in out["rag_citations"]:
        assert c["text"] == _lines(docs, c["source"], c["line_start"], c["line_end"])


def _conversation(
    registry: SearcherRegistry, settings: RagSettings, *questions: str
) -> list[dict[str, Any]]:
    agent = build_chat_agent(registry=registry, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "-".join(questions)}}
    return [
        dict(agent.invoke({"messages": [HumanMessage(q)]}, context=settings, config=config))
        for q in questions
    ]


@pytest.mark.parametrize(
    ("first", "follow_up", "source", "cited"),
    [("What does error HB-601 mean?", "Is it retryable?", "data/error_codes.csv", "HB-601")],
)
def test_follow_up_retrieves_the_right_file_after_rewrite_query(
    registry: SearcherRegistry, settings: RagSettings, docs: Path, first: str, follow_up: str,
    source: str, cited: str,
) -> None:  # fmt: skip
    # Done when (issue 3): a follow-up that only makes sense with the previous turn
    # retrieves the right file after RewriteQuery. Alone, it cites no line about the error.
    # (Which file ranks first is the e2e test's, with the real model: the bag-of-words fake
    # cannot tell the HB-601 row from other error codes.)
    alone = _run(registry, settings, follow_up)
    assert not any(cited in c["text"] for c in alone["rag_citations"])
    _, out = _conversation(registry, settings, first, follow_up)
    rewrite = next(s for s in out["rag_retrieval_debug"]["steps"] if s["node"] == "rewrite_query")
    assert rewrite["data"]["follow_up"] is True
    assert out["rag_queries"][0] == follow_up and len(out["rag_queries"]) > 1
    hits = [c for c in out["rag_citations"] if cited in c["text"]]
    assert hits and all(c["source"] == source for c in hits)
    for c in hits:
        assert c["text"] == _lines(docs, c["source"], c["line_start"], c["line_end"])
    assert out["rag_grounded"] is True
    assert any(c["source"] == source for c in out["answer_citations"])
    retrieve = next(s for s in out["rag_retrieval_debug"]["steps"] if s["node"] == "retrieve")
    assert retrieve["data"]["weights"]["q0:bm25"] == UNDERSPECIFIED_WEIGHT


def test_a_complete_question_is_not_mixed_with_the_previous_topic(
    registry: SearcherRegistry, settings: RagSettings
) -> None:
    _, out = _conversation(
        registry, settings, "How often are webhooks retried?", "What is the webhook timeout?"
    )
    assert out["rag_queries"] == ["What is the webhook timeout?", "webhook timeout"]
    assert out["rag_grounded"] is True
    # The fact is cited: the configuration table's row or the example config's key
    # (identifier parts weigh half since issue 30, and with the bag-of-words fake embedding
    # the YAML now outranks the table).
    texts = [c["text"] for c in out["rag_citations"]]
    assert any(
        "webhooks.timeout" in t or ("webhooks:" in t and "timeout: 10s" in t) for t in texts
    ), texts


def test_follow_up_queries_take_no_words_from_the_extractive_answer(
    registry: SearcherRegistry, settings: RagSettings
) -> None:
    first, out = _conversation(
        registry, settings, "How often are webhooks retried?", "How do I turn them off?"
    )
    assert first["answer_mode"] == "extractive"
    answer_only = set(first["answer"].lower().split()) - set(out["rag_queries"][0].lower().split())
    header = {"extractive", "answer", "configured", "quoted", "best-matching", "language"}
    for query in out["rag_queries"][1:]:
        words = set(query.lower().split())
        assert not words & header, f"{query!r} took words of the answer's header"
        assert {"webhooks", "retried"} <= words
    assert answer_only  # the answer did have words of its own to leak
