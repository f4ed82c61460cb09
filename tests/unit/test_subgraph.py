"""The compiled subgraph end to end: trajectories, the bounded loop, custom stream events,
narrow input/output schemas, settings from the runtime context, attaching to a parent
agent, the LLM path driven by the scripted model, and a real folder index."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from kbgraph.graphs import NODE_ORDER, RagOutput, RagSettings, build_rag_graph, rag_graph
from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.testing import ScriptedChatModel

from ._rag_fakes import FakeSearcher, ask, fake_kb, registry_with, settings_for

FULL = list(NODE_ORDER)
LOOP = FULL[2:]


@pytest.fixture
def kb(tmp_path: Path) -> tuple[Path, FakeSearcher]:
    folder = tmp_path / "docs"
    return folder, fake_kb(folder)


def trajectory(graph: Any, question: str | list[Any], context: Any, **kwargs: Any) -> list[str]:
    messages = [HumanMessage(question)] if isinstance(question, str) else question
    return [
        next(iter(update))
        for update in graph.stream(
            {"messages": messages}, context=context, stream_mode="updates", **kwargs
        )
    ]


def test_graph_shape() -> None:
    drawn = rag_graph.get_graph()
    assert set(drawn.nodes) == {"__start__", "__end__", *NODE_ORDER}
    edges = {(e.source, e.target) for e in drawn.edges}
    assert ("decide_retrieve", "__end__") in edges
    assert ("grounding_check", "rewrite_query") in edges
    assert ("grounding_check", "__end__") in edges
    assert rag_graph.checkpointer is None


def test_schemas_are_narrow() -> None:
    assert set(rag_graph.get_input_jsonschema()["properties"]) == {"messages", "rag_query"}
    out = set(rag_graph.get_output_jsonschema()["properties"])
    assert out == set(RagOutput.__annotations__)
    assert "rag_next" not in out and "remaining_steps" not in out
    context = rag_graph.get_context_jsonschema()
    assert context is not None and {"knowledge_bases", "max_rewrites", "rerank"} <= set(
        context["properties"]
    )


def test_grounded_run(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))
    assert trajectory(graph, "How do I configure the retry policy?", settings_for(folder)) == FULL
    out = graph.invoke(
        ask("How do I configure the retry policy?"),
        context=settings_for(folder),
    )
    assert out["rag_grounded"] is True and out["rag_attempt"] == 0
    assert out["rag_citations"][0]["source"] == "docs/configuration.md"
    assert set(out) == set(RagOutput.__annotations__)
    assert out["rag_query"] is None  # cleared: an explicit query is for its turn only
    steps = out["rag_retrieval_debug"]["steps"]
    assert [s["node"] for s in steps] == FULL
    assert all(s["ms"] >= 0 and s["path"] == "heuristic" for s in steps)


def test_small_talk_skips_retrieval(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))
    assert trajectory(graph, "thanks a lot!", settings_for(folder)) == ["decide_retrieve"]
    assert searcher.rank_calls == [] and searcher.index_calls == 0


# Eighteen topic words the documents never use: four retries have new words to search.
LONG_OFF_TOPIC = (
    "Which volcanic eruptions, glaciers, tectonic plates, tsunamis, hurricanes and meteorites "
    "shaped ancient Patagonian geology, and which glaciologists, seismologists and "
    "cartographers charted its fjords, lagoons, basalt, moraines and archipelagos?"
)


@pytest.mark.parametrize("max_rewrites", [0, 1, 2])
def test_off_topic_loops_at_most_max_rewrites_times(
    kb: tuple[Path, FakeSearcher], max_rewrites: int
) -> None:
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))
    context = settings_for(folder, max_rewrites=max_rewrites)
    nodes = trajectory(graph, LONG_OFF_TOPIC, context)
    assert nodes == FULL + LOOP * max_rewrites
    out = graph.invoke(ask(LONG_OFF_TOPIC), context=context)
    assert out["rag_grounded"] is False and out["rag_attempt"] == max_rewrites
    assert out["rag_grounding"]["guidance"]
    steps = out["rag_retrieval_debug"]["steps"]
    attempts = [s["attempt"] for s in steps if s["node"] == "retrieve"]
    assert attempts == list(range(max_rewrites + 1))
    searched = [s["data"]["queries"][1:] for s in steps if s["node"] == "retrieve"]
    later = [frozenset(q.split()) for queries in searched for q in queries]
    assert len(later) == len(set(later)), f"a retry repeated a search: {searched}"


def test_a_retry_with_nothing_new_to_search_does_not_run(kb: tuple[Path, FakeSearcher]) -> None:
    # Two topic words, both missing, the scope already everything: another attempt could
    # only repeat the same search.
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))
    context = settings_for(folder, max_rewrites=3)
    assert trajectory(graph, "What is the capital of France?", context) == FULL
    out = graph.invoke(ask("What is the capital of France?"), context=context)
    check = out["rag_retrieval_debug"]["steps"][-1]
    assert check["node"] == "grounding_check" and check["data"]["retry"] is False
    assert check["data"]["retry_reason"].startswith("nothing new to search")
    assert out["rag_grounded"] is False and out["rag_attempt"] == 0


def test_loop_stops_before_the_recursion_limit(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))
    context = settings_for(folder, max_rewrites=5)
    nodes = trajectory(graph, LONG_OFF_TOPIC, context, config={"recursion_limit": 14})
    assert nodes == FULL + LOOP  # 12 steps; one more attempt would need 17
    nodes = trajectory(graph, LONG_OFF_TOPIC, context, config={"recursion_limit": 25})
    assert nodes == FULL + LOOP * 3  # 22 steps
    nodes = trajectory(graph, LONG_OFF_TOPIC, context, config={"recursion_limit": 100})
    assert nodes == FULL + LOOP * 4, "new words for a fourth retry: the limits above stopped it"


def test_retry_widens_the_scope(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))
    out = graph.invoke(
        ask("What does authentication.md say about the capital of France?"),
        context=settings_for(folder),
    )
    filters = [f for *_, f in searcher.rank_calls]
    assert filters[0] is not None and filters[0].paths == ("docs/authentication.md",)
    assert filters[-1] is None
    assert out["rag_scope"]["widened"] is True


def test_custom_events(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))
    events = list(
        graph.stream(
            ask("retry policy"),
            context=settings_for(folder),
            stream_mode="custom",
        )
    )
    kinds = [e["event"] for e in events]
    assert kinds[0] == "knowledge.search.started" and kinds[-1] == "knowledge.search.done"
    assert "knowledge.index.progress" in kinds and "knowledge.index.done" in kinds


def test_async_stream(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))

    async def run() -> tuple[list[str], list[str]]:
        nodes, events = [], []
        async for mode, data in cast(Any, graph).astream(
            ask("How do I configure the retry policy?"),
            context=settings_for(folder),
            stream_mode=["updates", "custom"],
        ):
            if mode == "updates":
                nodes.append(next(iter(data)))
            else:
                events.append(data["event"])
        return nodes, events

    nodes, events = asyncio.run(run())
    assert nodes == FULL and "knowledge.search.done" in events
    # the sync Retrieve node ran in a worker thread, not on the event loop's thread
    assert searcher.threads and threading.main_thread().name not in searcher.threads


def test_context_as_dict_and_missing(
    kb: tuple[Path, FakeSearcher], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, searcher = kb
    registry = registry_with({folder: searcher}, embedding="auto")
    graph = build_rag_graph(registry=registry)
    as_dict = {"knowledge_bases": [{"name": "docs", "folder": str(folder)}], "search": {"top_k": 1}}
    out = graph.invoke(ask("retry policy"), context=cast(Any, as_dict))
    assert len(out["rag_citations"]) == 1
    monkeypatch.setenv("KBGRAPH_FOLDER", str(folder))
    out = graph.invoke(ask("retry policy"))  # no context: defaults + env
    assert out["rag_citations"] and out["rag_citations"][0]["kb"] == "docs"
    monkeypatch.delenv("KBGRAPH_FOLDER")
    out = graph.invoke(ask("retry policy"))
    assert out["rag_citations"] == [] and "add documents" in out["rag_grounding"]["guidance"][0]


def test_explicit_rag_query(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))
    out = graph.invoke(ask("hi", rag_query="rotate API keys"), context=settings_for(folder))
    assert out["rag_queries"][0] == "rotate API keys"
    assert out["rag_citations"][0]["source"] == "docs/authentication.md"


def test_follow_up_retrieves_the_right_file_after_rewrite(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    graph = build_rag_graph(registry=registry_with({folder: searcher}))
    messages = [
        HumanMessage("How do clients authenticate?"),
        AIMessage("With API keys [1]."),
        HumanMessage("How do I rotate it without downtime?"),
    ]
    out = graph.invoke(cast(Any, {"messages": messages}), context=settings_for(folder))
    assert len(out["rag_queries"]) >= 2 and "authenticate" in out["rag_queries"][1]
    assert out["rag_citations"][0]["source"] == "docs/authentication.md"
    assert out["rag_grounded"] is True


class ParentState(RagOutput):
    """A parent agent's state: the conversation plus the subgraph's output keys."""


def test_attached_to_a_parent_agent(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    sub = build_rag_graph(registry=registry_with({folder: searcher}))

    def answer(state: ParentState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"{len(state['rag_citations'])} sources")]}

    parent = StateGraph(ParentState, context_schema=RagSettings)
    parent.add_node("rag", sub)
    parent.add_node("answer", answer)
    parent.add_edge(START, "rag")
    parent.add_edge("rag", "answer")
    app = parent.compile()
    first = app.invoke(
        ask("How do I configure the retry policy?"),
        context=settings_for(folder),
    )
    assert first["rag_citations"] and first["messages"][-1].content.endswith("sources")
    assert len(first["messages"]) == 2  # the subgraph hands the conversation back unchanged
    # next turn: small talk; the previous turn's context and candidates must not linger
    second = app.invoke(
        {"messages": [*first["messages"], HumanMessage("thanks!")]}, context=settings_for(folder)
    )
    assert second["rag_should_retrieve"] is False
    assert (
        second["rag_candidates"] == []
        and second["rag_context"] == ""
        and second["rag_citations"] == []
    )
    assert [s["node"] for s in second["rag_retrieval_debug"]["steps"]] == ["decide_retrieve"]


def _llm_script() -> list[Any]:
    return [
        {"retrieve": True, "reason": "asks about configuration"},
        {"knowledge_bases": [], "paths": [], "kinds": [], "reason": "nothing named"},
        {
            "standalone_question": "How is the retry policy configured?",
            "keyword_query": "retry policy max_attempts",
            "paraphrase": "retries settings",
        },
        {"ranking": [1], "reason": "first passage"},
        {"grounded": True, "reason": "the passage says how", "missing": ""},
    ]


def test_llm_path_trajectory(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    model = ScriptedChatModel(responses=_llm_script())
    graph = build_rag_graph(chat_model=model, registry=registry_with({folder: searcher}))
    out = graph.invoke(
        ask("How do I configure the retry policy?"),
        context=settings_for(folder, rerank="llm"),
    )
    assert [c.structured for c in model.calls] == [
        "RetrieveDecision", "ScopeChoice", "RewrittenQueries", "RerankOrder", "GroundingVerdict",
    ]  # fmt: skip
    # "How is the retry policy configured?" has only the question's words: on a first
    # attempt it is not searched (one more list of the same words reorders the fusion)
    assert out["rag_queries"] == [
        "How do I configure the retry policy?",
        "retry policy max_attempts",
        "retries settings",
    ]
    assert [s["path"] for s in out["rag_retrieval_debug"]["steps"]] == [
        "llm", "llm", "llm", "heuristic", "llm", "heuristic", "llm",
    ]  # fmt: skip
    assert out["rag_grounding"]["reasons"][0] == "chat model: the passage says how"
    assert out["rag_retrieval_debug"]["fallbacks"] == []


def test_llm_failures_everywhere_fall_back_to_the_heuristic_run(
    kb: tuple[Path, FakeSearcher],
) -> None:
    folder, searcher = kb
    model = ScriptedChatModel(default="I'd rather chat about something else.")
    graph = build_rag_graph(chat_model=model, registry=registry_with({folder: searcher}))
    heuristic = build_rag_graph(registry=registry_with({folder: searcher}))
    question = ask("How do I configure the retry policy?")
    out = graph.invoke(question, context=settings_for(folder, rerank="llm"))
    expected = heuristic.invoke(question, context=settings_for(folder))
    for key in ("rag_queries", "rag_context", "rag_citations", "rag_grounded"):
        assert out[key] == expected[key]
    fallbacks = out["rag_retrieval_debug"]["fallbacks"]
    assert [f["node"] for f in fallbacks] == [
        n for n in NODE_ORDER if n not in ("retrieve", "build_context") for _ in (0, 1)
    ]


def test_a_timeout_falls_back_for_that_node_only(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    model = ScriptedChatModel(responses=[TimeoutError("slow"), *_llm_script()[1:]])
    graph = build_rag_graph(chat_model=model, registry=registry_with({folder: searcher}))
    question = ask("How do I configure the retry policy?")
    out = graph.invoke(question, context=settings_for(folder, rerank="llm"))
    assert len(model.calls) == 5, "every node after the timed-out one still asked the model"
    fallbacks = out["rag_retrieval_debug"]["fallbacks"]
    assert [(f["node"], f["stage"]) for f in fallbacks] == [("decide_retrieve", "structured")]
    assert "outage" not in fallbacks[0]
    paths = {s["node"]: s["path"] for s in out["rag_retrieval_debug"]["steps"]}
    assert paths["decide_retrieve"] == "fallback" and paths["select_scope"] == "llm"


def test_a_chat_server_outage_opens_the_circuit_for_the_rest_of_the_run(
    kb: tuple[Path, FakeSearcher],
) -> None:
    folder, searcher = kb
    # Only one scripted reply: any second call would raise ScriptExhaustedError.
    model = ScriptedChatModel(responses=[ConnectionError("refused")])
    graph = build_rag_graph(chat_model=model, registry=registry_with({folder: searcher}))
    heuristic = build_rag_graph(registry=registry_with({folder: searcher}))
    question = ask("How do I configure the retry policy?")
    out = graph.invoke(question, context=settings_for(folder, rerank="llm"))
    assert len(model.calls) == 1, "no node called the model after the outage"
    expected = heuristic.invoke(question, context=settings_for(folder))
    for key in ("rag_queries", "rag_citations", "rag_grounded"):
        assert out[key] == expected[key]
    fallbacks = out["rag_retrieval_debug"]["fallbacks"]
    assert [(f["node"], f["stage"]) for f in fallbacks] == [
        ("decide_retrieve", "structured"), ("select_scope", "skipped"),
        ("rewrite_query", "skipped"), ("rerank", "skipped"), ("grounding_check", "skipped"),
    ]  # fmt: skip
    assert all(f["outage"] for f in fallbacks)
    assert "decide_retrieve found the chat server down" in fallbacks[1]["error"]
    paths = {s["node"]: s["path"] for s in out["rag_retrieval_debug"]["steps"]}
    assert paths["select_scope"] == paths["grounding_check"] == "fallback"


def test_the_circuit_closes_with_the_next_run(kb: tuple[Path, FakeSearcher]) -> None:
    folder, searcher = kb
    model = ScriptedChatModel(responses=[ConnectionError("refused"), *_llm_script()])
    graph = build_rag_graph(
        chat_model=model, registry=registry_with({folder: searcher}), checkpointer=InMemorySaver()
    )
    context, thread = settings_for(folder, rerank="llm"), {"configurable": {"thread_id": "t"}}
    first = graph.invoke(
        ask("How do I configure the retry policy?"), context=context, config=thread
    )
    assert first["rag_retrieval_debug"]["fallbacks"][0]["outage"] is True
    # Same thread: the second run starts from a state that holds the first run's outage.
    second = graph.invoke(ask("What about its timeout?"), context=context, config=thread)
    assert len(model.calls) == 6 and second["rag_retrieval_debug"]["fallbacks"] == []


def test_whole_subgraph_on_a_real_folder(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "retry.md").write_text(
        "# Retries\n\nThe client retries failed calls.\n\n## Configuration\n\n"
        "Set max_attempts in the config file to change how often it retries.\n",
        encoding="utf-8",
    )
    (folder / "auth.md").write_bytes(
        "# Authentification\r\n\r\nLes clés d'API tournent chaque mois.\r\n".encode()
    )
    (folder / "notes.txt").write_text(
        "Unrelated notes about lunch and the café.\n", encoding="utf-8"
    )
    registry = SearcherRegistry()
    try:
        graph = build_rag_graph(registry=registry)
        context = RagSettings(
            knowledge_bases=[{"name": "kb", "folder": str(folder)}], embedding="fake",
            grounding_min_vector_score=None,
        )  # fmt: skip
        events = []
        final: dict[str, Any] = {}
        for mode, data in cast(Any, graph).stream(
            ask("How do I configure max_attempts for retries?"),
            context=context, stream_mode=["custom", "values"],
        ):  # fmt: skip
            if mode == "custom":
                events.append(data["event"])
            else:
                final = data
        assert "knowledge.index.done" in events
        assert final["rag_grounded"] is True
        cited = final["rag_citations"][0]
        assert cited["source"] == "retry.md"
        lines = (folder / "retry.md").read_text(encoding="utf-8").split("\n")
        assert cited["text"] in "\n".join(lines[cited["line_start"] - 1 : cited["line_end"]])
        assert "max_attempts" in cited["text"]
        assert (folder / ".kbgraph").is_dir()
    finally:
        registry.close_all()


def test_internal_model_calls_do_not_stream_as_chat(kb: tuple[Path, FakeSearcher]) -> None:
    """With ``stream_mode="messages"`` a client streams the answer; the nodes' structured
    calls (their raw JSON) are tagged ``nostream`` and stay out of it."""
    folder, searcher = kb
    model = ScriptedChatModel(responses=_llm_script())
    graph = build_rag_graph(chat_model=model, registry=registry_with({folder: searcher}))
    streamed = list(
        graph.stream(
            ask("How do I configure the retry policy?"),
            context=settings_for(folder, rerank="llm"),
            stream_mode="messages",
            subgraphs=True,
        )
    )
    assert len(model.calls) == 5  # every node asked the model ...
    assert streamed == []  # ... and none of it streamed as chat


def test_the_chat_agents_answer_still_streams(kb: tuple[Path, FakeSearcher]) -> None:
    from kbgraph.agents import build_chat_agent

    folder, searcher = kb
    model = ScriptedChatModel(default="The retry policy is set in harbor.yaml [1].")
    agent = build_chat_agent(chat_model=model, registry=registry_with({folder: searcher}))
    streamed = [
        chunk.text
        for _, (chunk, _meta) in agent.stream(
            ask("How do I configure the retry policy?"),
            context=settings_for(folder),
            stream_mode="messages",
            subgraphs=True,
        )
    ]
    assert streamed and all("{" not in text for text in streamed)
    assert any("harbor.yaml" in text for text in streamed)
