"""The subgraph's LLM path against a real OpenAI-compatible server on 127.0.0.1: chat
completions (scripted) and embeddings (the local all-MiniLM-L6-v2 model) reach the real
``langchain-openai`` clients over a socket; malformed replies, server errors and timeouts
fall back to the heuristic path."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.messages import HumanMessage

from kbgraph.graphs import RagSettings, build_rag_graph
from kbgraph.graphs._searcher import SearcherRegistry
from tests.support.openai_server import CHAT_PATH, EMBEDDINGS_PATH, ChatReply, OpenAIServer

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
QUESTION = "How do I configure the retry policy?"


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    from kbgraph.retrieval._embeddings import LocalEmbeddings

    with OpenAIServer(embeddings=LocalEmbeddings()) as running:
        yield running


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A copy: the index is written beside the folder, never into the repository. Shared by
    # the tests of this module so that the local model embeds it once.
    target = tmp_path_factory.mktemp("http") / "docs"
    return Path(shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns(".kbgraph")))


@pytest.fixture
def registry() -> Iterator[SearcherRegistry]:
    reg = SearcherRegistry()
    yield reg
    reg.close_all()


def _settings(server: OpenAIServer, docs: Path, **overrides: Any) -> RagSettings:
    values: dict[str, Any] = {
        "knowledge_bases": [{"name": "docs", "folder": str(docs), "description": "Harbor docs"}],
        "embedding": f"openai_compatible:{server.embedding_model}@{server.base_url}",
        "chat_model": f"openai_compatible:{server.chat_model}@{server.base_url}",
        "rerank": "llm",
        **overrides,
    }
    return RagSettings(**values)


def _script() -> list[ChatReply]:
    return [
        ChatReply.json({"retrieve": True, "reason": "asks about configuration"}),
        ChatReply.json(
            {
                "knowledge_bases": ["docs"],
                "paths": ["docs/**"],
                "kinds": [],
                "reason": "docs folder",
            }
        ),
        ChatReply.json(
            {
                "standalone_question": "How is the retry policy configured?",
                "keyword_query": "retry policy max_attempts backoff",
                "paraphrase": "Which settings control retries of provider calls?",
            }
        ),
        ChatReply.json({"ranking": [2, 1], "reason": "2 answers directly"}),
        ChatReply.json(
            {"grounded": True, "reason": "the configuration page explains it", "missing": ""}
        ),
    ]


def test_llm_path_over_http(server: OpenAIServer, docs: Path, registry: SearcherRegistry) -> None:
    server.clear_requests()
    server.queue_reply(*_script())
    graph = build_rag_graph(registry=registry)
    events: list[str] = []
    final: dict[str, Any] = {}
    for mode, data in cast(Any, graph).stream(
        cast(Any, {"messages": [HumanMessage(QUESTION)]}),
        context=_settings(server, docs),
        stream_mode=["custom", "values"],
    ):
        if mode == "custom":
            events.append(data["event"])
        else:
            final = data
    assert server.pending_replies == 0
    chats = server.requests_to(CHAT_PATH)
    assert len(chats) == 5 and all(r.status == 200 for r in chats)
    assert all("response_format" in r.body or "tools" in r.body for r in chats)
    assert server.requests_to(EMBEDDINGS_PATH)  # the index and the queries were embedded over HTTP
    paths = [s["path"] for s in final["rag_retrieval_debug"]["steps"]]
    assert paths == ["llm", "llm", "llm", "heuristic", "llm", "heuristic", "llm"]
    assert final["rag_retrieval_debug"]["fallbacks"] == []
    assert final["rag_scope"]["paths"] == ["docs/**"]
    # the same-words standalone is not searched on a first attempt (issue 40)
    assert final["rag_queries"][1] == "retry policy max_attempts backoff"
    assert final["rag_grounded"] is True
    assert "knowledge.index.done" in events
    for citation in final["rag_citations"]:
        assert citation["source"].startswith("docs/")
        lines = (docs / citation["source"]).read_text(encoding="utf-8").splitlines()
        assert citation["text"] in "\n".join(
            lines[citation["line_start"] - 1 : citation["line_end"]]
        )
    assert any("retry" in c["text"].lower() for c in final["rag_citations"])


def test_malformed_replies_use_the_json_fallback_then_the_heuristic(
    server: OpenAIServer, docs: Path, registry: SearcherRegistry
) -> None:
    server.clear_requests()
    # Faults hit the next chat requests, whatever node sends them: DecideRetrieve's two
    # calls, each tried twice by the client (max_retries=1).
    server.fail_next(4, status=500, path=CHAT_PATH)
    server.queue_reply(
        "Sure! I think we should limit the search.",  # select_scope: structured output fails ...
        'Here you go: {"knowledge_bases": [], "paths": [], "kinds": [], "reason": "all"} ok?',
        "no idea",  # rewrite_query: both calls fail → heuristic
        "still no idea",
        ChatReply.json({"grounded": True, "reason": "ok", "missing": ""}),
    )
    graph = build_rag_graph(registry=registry)
    out = graph.invoke(
        cast(Any, {"messages": [HumanMessage(QUESTION)]}),
        context=_settings(server, docs, rerank="heuristic"),
    )
    steps = {s["node"]: s["path"] for s in out["rag_retrieval_debug"]["steps"]}
    assert steps == {
        "decide_retrieve": "fallback",
        "select_scope": "llm-json",
        "rewrite_query": "fallback",
        "retrieve": "heuristic",
        "rerank": "heuristic",
        "build_context": "heuristic",
        "grounding_check": "llm",
    }
    fallbacks = out["rag_retrieval_debug"]["fallbacks"]
    assert [(f["node"], f["stage"]) for f in fallbacks] == [
        ("decide_retrieve", "structured"),
        ("decide_retrieve", "json"),
        ("select_scope", "structured"),
        ("rewrite_query", "structured"),
        ("rewrite_query", "json"),
    ]
    assert "500" in fallbacks[0]["error"] and "500" in fallbacks[1]["error"]
    assert out["rag_should_retrieve"] is True and out["rag_scope"]["reason"] == "all"
    assert out["rag_queries"][0] == QUESTION and out["rag_grounded"] is True
    assert server.pending_replies == 0


def test_a_hung_chat_server_falls_back_for_that_node_only(
    server: OpenAIServer, docs: Path, registry: SearcherRegistry
) -> None:
    server.clear_requests()
    # The client retries once after a timeout. The hung requests are released (503) when
    # the server stops. No reply is queued: the nodes after the timed-out one still ask
    # (a slow server is not a down one) and get an error that is not a timeout.
    server.hang_next(2, seconds=600, path=CHAT_PATH)
    graph = build_rag_graph(registry=registry)
    settings = _settings(server, docs, llm_timeout_seconds=0.5, max_rewrites=0)
    out = graph.invoke(cast(Any, {"messages": [HumanMessage(QUESTION)]}), context=settings)
    assert len(server.requests_to(CHAT_PATH)) > 2, "the next nodes asked the model again"
    fallbacks = out["rag_retrieval_debug"]["fallbacks"]
    assert fallbacks[0]["node"] == "decide_retrieve" and "Timeout" in fallbacks[0]["error"]
    assert not any(f.get("outage") or f["stage"] == "skipped" for f in fallbacks)
    assert {f["node"] for f in fallbacks} >= {"decide_retrieve", "select_scope"}
    assert out["rag_should_retrieve"] is True  # the heuristic's verdict
    assert out["rag_grounded"] is True
    server.clear_faults()
