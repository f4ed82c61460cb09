"""Regressions of what a real LangGraph agent hit (issue 10): an explicit ``rag_query``
that outlived its turn in a checkpointed parent, the internal merge key in subgraph
updates, ``rag_search.invoke`` outside an agent, and a ResourceWarning at exit."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langchain_core.tracers.schemas import Run
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from kbgraph._base.model_calls import INTERNAL_TAG
from kbgraph.graphs import RagSettings, build_rag_graph
from kbgraph.graphs._tool import rag_search, tool_runtime
from kbgraph.testing import ScriptedChatModel

from ._rag_fakes import fake_kb, registry_with, settings_for


class ParentState(MessagesState, total=False):
    rag_query: str | None
    rag_queries: list[str]
    rag_citations: list[dict[str, Any]]


def parent_over(folder: Path) -> StateGraph[Any, Any, Any, Any]:
    """A parent graph whose one node is the subgraph over a fake knowledge base."""
    rag = build_rag_graph(registry=registry_with({folder: fake_kb(folder)}))
    builder = StateGraph(ParentState, context_schema=RagSettings)
    builder.add_node("rag", rag)
    builder.add_edge(START, "rag")
    return builder


def test_explicit_query_applies_to_its_turn_only(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    parent = parent_over(folder).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    context = settings_for(folder)
    first = parent.invoke(
        {"messages": [HumanMessage("tell me about config")], "rag_query": "retry policy attempts"},
        config,
        context=context,
    )
    assert first["rag_queries"][0] == "retry policy attempts"
    for question in ("How do I rotate an API key?", "When does the café open?"):
        turn = parent.invoke({"messages": [HumanMessage(question)]}, config, context=context)
        assert "retry policy attempts" not in turn["rag_queries"]
        assert turn["rag_queries"][0] == question
        assert not turn.get("rag_query")
    sources = {c["source"] for c in turn["rag_citations"]}
    assert "notes/café.md" in sources


def test_subgraph_updates_show_no_internal_key(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    updates = list(
        parent_over(folder)
        .compile()
        .stream(
            {"messages": [HumanMessage("How do I configure the retry policy?")]},
            context=settings_for(folder),
            stream_mode="updates",
            subgraphs=True,
        )
    )
    text = json.dumps(updates, default=str)
    assert "__kbgraph_merge__" not in text
    steps = [u["rag_retrieval_debug"] for ns, update in updates if ns for u in update.values()]
    assert all(set(step) == {"steps", "fallbacks", "overrulings"} for step in steps)


def test_rag_search_invoke_outside_an_agent(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    fake_kb(folder)  # writes the files; the real engine indexes them
    settings = RagSettings(knowledge_bases=[{"name": "docs", "folder": str(folder)}],
                           embedding="fake")  # fmt: skip
    content = rag_search.invoke({"query": "rotate an API key", "runtime": tool_runtime(settings)})
    assert "docs/authentication.md" in content
    dict_context = {"knowledge_bases": [{"folder": str(folder)}], "embedding": "fake"}
    again = rag_search.invoke({"query": "retry policy", "runtime": tool_runtime(dict_context)})
    assert "docs/configuration.md" in again


def test_no_resource_warning_at_exit(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Retry\n\nThe retry policy backs off.\n", encoding="utf-8")
    script = textwrap.dedent(
        f"""
        from kbgraph.graphs import RagSettings, build_rag_graph
        settings = RagSettings(knowledge_bases=[{{"folder": {str(tmp_path)!r}}}],
                               embedding="fake")
        out = build_rag_graph().invoke(
            {{"messages": [("user", "what is the retry policy?")]}}, context=settings
        )
        assert out["rag_citations"], out
        """
    )
    run = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", script],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "ResourceWarning" not in run.stderr, run.stderr


def test_internal_model_calls_do_not_stream_as_chat(tmp_path: Path) -> None:
    """stream_mode="messages" with subgraphs=True shows the answer only; the nodes' own
    model calls (JSON decisions, here replies that fail to parse) stay out of it, and are
    still traced (tagged, named after their node)."""
    folder = tmp_path / "docs"
    internal = ScriptedChatModel(default="INTERNAL-REPLY not json")
    answerer = ScriptedChatModel(default="Set max_attempts in harbor.yaml. [1]")
    rag = build_rag_graph(registry=registry_with({folder: fake_kb(folder)}), chat_model=internal)

    def answer(state: ParentState) -> dict[str, Any]:
        return {"messages": [answerer.invoke(state["messages"])]}

    builder = StateGraph(ParentState, context_schema=RagSettings)
    builder.add_node("rag", rag)
    builder.add_node("answer", answer)
    builder.add_edge(START, "rag")
    builder.add_edge("rag", "answer")
    tracer = RunCollectorCallbackHandler()
    streamed = [
        message.text
        for _, (message, _meta) in builder.compile().stream(
            {"messages": [HumanMessage("How do I configure the retry policy?")]},
            {"callbacks": [tracer]},
            context=settings_for(folder),
            stream_mode="messages",
            subgraphs=True,
        )
    ]
    assert streamed == ["Set max_attempts in harbor.yaml. [1]"]
    assert internal.calls  # the nodes did call the model ...
    traced = {r.name for r in all_runs(tracer.traced_runs) if INTERNAL_TAG in (r.tags or [])}
    assert {"kbgraph.decide_retrieve", "kbgraph.grounding_check"} <= traced  # ... on the record


def all_runs(runs: list[Run]) -> list[Run]:
    return [r for run in runs for r in (run, *all_runs(run.child_runs))]


def test_configurable_settings_are_honoured_in_process(tmp_path: Path) -> None:
    """issue 30: ``config={"configurable": {...}}`` in process was ignored without a word
    (0 sources); it is used when no context is given, as the LangGraph server does."""
    from kbgraph.agents import chat_agent

    folder = tmp_path / "docs"
    fake_kb(folder)
    configurable: dict[str, Any] = {
        "thread_id": "t1",  # not a setting: left alone
        "knowledge_bases": [{"name": "docs", "folder": str(folder)}],
        "embedding": "fake",
    }
    question: Any = {"messages": [HumanMessage("How do I rotate an API key?")]}
    config: Any = {"configurable": configurable}
    out = chat_agent.invoke(question, config)
    assert "docs/authentication.md" in {c["source"] for c in out["rag_citations"]}
    # A context, when given, is the run's settings: configurable does not add to it.
    empty = tmp_path / "empty"
    empty.mkdir()
    context: Any = {"knowledge_bases": [{"name": "docs", "folder": str(empty)}],
                    "embedding": "fake"}  # fmt: skip
    other = chat_agent.invoke(question, config, context=context)
    assert other["rag_citations"] == []
