"""Every path checks and marks (issue 40, item 4): the verdict of the answer check is on the
answer's own message — a chat UI renders the message, not the state — for the ready agents,
a parent graph with ``answer_check_node`` and ``create_agent`` + ``rag_search`` with
``AnswerCheckMiddleware``; under ``flag`` a visible line names what the sources do not say."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import StreamMode

from kbgraph.agents import (
    VERDICT_KEY,
    AnswerCheckMiddleware,
    answer_check_node,
    build_chat_agent,
    build_tool_agent,
    hold_draft,
    verdict_on,
)
from kbgraph.graphs import RagSettings, build_rag_graph, inject_context, mark_answer, rag_search
from kbgraph.testing import ScriptedChatModel, ScriptedJudge, tool_call_message

DOCS = {
    "retry.md": "# Retry policy\n\nThe client retries failed requests 4 times with exponential "
    "backoff.\nSet `max_attempts` in `client.toml` to change the number of retries.\n",
}
QUESTION = "How many times does the client retry a failed request?"
WRONG = "The client retries failed requests 9 times [1]."
FLAGGED = f"{WRONG}\n\n⚠ Not supported by the sources: The client retries failed requests 9 times."


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    for rel, text in DOCS.items():
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _settings(docs: Path, policy: str) -> RagSettings:
    return RagSettings(
        knowledge_bases=[{"name": "docs", "folder": str(docs)}],
        embedding="fake",
        answer_check={"policy": policy},  # type: ignore[arg-type]
    )


def _judge() -> ScriptedJudge:
    return ScriptedJudge(rules=[lambda claim, context: "supported" if "4 times" in claim else None])


def _ask(graph: Any, settings: RagSettings) -> dict[str, Any]:
    return dict(graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=settings))


def _assert_flagged(answer: Any) -> None:
    assert isinstance(answer, AIMessage) and answer.text == FLAGGED
    verdict = verdict_on(answer)
    assert verdict is not None
    assert (verdict["grounded"], verdict["policy"], verdict["action"]) == (False, "flag", "flagged")
    assert verdict["unsupported"] == ["The client retries failed requests 9 times."]


def _chat(model: ScriptedChatModel) -> Any:
    """The chat agent with ``model`` for its answers only (the subgraph's heuristics)."""
    return build_chat_agent(chat_model=model, rag_graph=build_rag_graph(), answer_judge=_judge())


def test_the_chat_agent_marks_a_flagged_answer_on_its_message(docs: Path) -> None:
    out = _ask(_chat(ScriptedChatModel(responses=[WRONG])), _settings(docs, "flag"))
    _assert_flagged(out["messages"][-1])
    assert out["answer"] == WRONG  # the state keeps the model's text
    assert [m.type for m in out["messages"]] == ["human", "ai"]  # replaced in place


def test_a_replaced_answer_carries_the_verdict_of_its_check(docs: Path) -> None:
    model = ScriptedChatModel(responses=[WRONG, WRONG])
    out = _ask(_chat(model), _settings(docs, "repair"))
    answer = out["messages"][-1]
    assert answer.text.startswith("Extractive answer")
    verdict = answer.response_metadata[VERDICT_KEY]
    assert (verdict["policy"], verdict["action"]) == ("repair", "replaced")
    assert "⚠" not in answer.text  # only flag adds the line


def test_the_tool_agent_marks_its_answer(docs: Path) -> None:
    model = ScriptedChatModel(
        responses=[tool_call_message("rag_search", {"query": "retries"}), WRONG]
    )
    out = _ask(build_tool_agent(chat_model=model, answer_judge=_judge()), _settings(docs, "flag"))
    _assert_flagged(out["messages"][-1])


class State(MessagesState, total=False):
    rag_context: str
    rag_should_retrieve: bool
    rag_grounded: bool
    rag_citations: list[dict[str, Any]]
    answer_check: dict[str, Any] | None


def _parent(model: ScriptedChatModel) -> Any:
    """The attach-a-subgraph tutorial's parent graph, with the check node after its answer."""

    def answer(state: State) -> dict[str, Any]:
        reply = model.invoke(inject_context(state["messages"], state.get("rag_context", "")))
        return {"messages": [mark_answer(reply, state, mode="llm")]}

    builder = StateGraph(State, context_schema=RagSettings)
    builder.add_node("rag", build_rag_graph())
    builder.add_node("answer", answer)
    builder.add_node("check", answer_check_node(model, judge=_judge()))
    builder.add_edge(START, "rag")
    builder.add_edge("rag", "answer")
    builder.add_edge("answer", "check")
    return builder.compile()


def test_a_parent_graph_with_the_check_node_marks_a_wrong_answer(docs: Path) -> None:
    """Issue 40: the tutorial's parent graph showed "the default … is true" with no mark."""
    out = _ask(_parent(ScriptedChatModel(responses=[WRONG])), _settings(docs, "flag"))
    _assert_flagged(out["messages"][-1])
    assert out["answer_check"]["action"] == "flagged"


def test_a_parent_graph_with_the_check_node_repairs_by_default(docs: Path) -> None:
    model = ScriptedChatModel(responses=[WRONG, "The client retries failed requests 4 times [1]."])
    out = _ask(_parent(model), _settings(docs, "repair"))
    assert [m.type for m in out["messages"]] == ["human", "ai"]
    answer = out["messages"][-1]
    assert answer.text == "The client retries failed requests 4 times [1]."
    assert verdict_on(answer)["grounded"] is True  # type: ignore[index]
    asked_again = "\n".join(m.text for m in model.calls[1].messages)
    assert "[1] Source: retry.md" in asked_again  # asked again with them


def _react(model: ScriptedChatModel, policy: str, docs: Path) -> dict[str, Any]:
    agent = create_agent(
        model, [rag_search], context_schema=RagSettings,
        middleware=[AnswerCheckMiddleware(judge=_judge())],
    )  # fmt: skip
    return _ask(agent, _settings(docs, policy))


def test_create_agent_with_rag_search_and_the_check_middleware_marks(docs: Path) -> None:
    """Issue 40: create_agent + rag_search showed a wrong answer with no mark."""
    model = ScriptedChatModel(
        responses=[tool_call_message("rag_search", {"query": "retries"}), WRONG]
    )
    out = _react(model, "flag", docs)
    _assert_flagged(out["messages"][-1])
    assert out["answer_check"]["action"] == "flagged"
    assert [(c["n"], c["source"]) for c in out["answer_citations"]] == [(1, "retry.md")]


def test_the_check_middleware_repairs_and_the_draft_never_enters_messages(docs: Path) -> None:
    fixed = "The client retries failed requests 4 times [1]."
    model = ScriptedChatModel(
        responses=[tool_call_message("rag_search", {"query": "retries"}), WRONG, fixed]
    )
    out = _react(model, "repair", docs)
    replies = [m.text for m in out["messages"] if isinstance(m, AIMessage) and m.text]
    assert replies == [fixed]
    assert out["answer_check"]["action"] == "regenerated"
    assert verdict_on(out["messages"][-1])["grounded"] is True  # type: ignore[index]


def test_the_check_middleware_streams_only_the_answer_it_keeps(docs: Path) -> None:
    fixed = "The client retries failed requests 4 times [1]."
    model = ScriptedChatModel(
        responses=[tool_call_message("rag_search", {"query": "retries"}), WRONG, fixed]
    )
    agent = create_agent(
        model, [rag_search], context_schema=RagSettings,
        middleware=[AnswerCheckMiddleware(judge=_judge())],
    )  # fmt: skip
    streamed = [
        message.text
        for message, _ in agent.stream(
            {"messages": [HumanMessage(QUESTION)]},
            context=_settings(docs, "repair"),
            stream_mode="messages",
        )
        if isinstance(message, AIMessage) and message.text
    ]
    assert streamed == [fixed]  # the rejected draft never streamed as the answer


class HeldState(State, total=False):
    answer_draft: dict[str, Any] | None


def test_a_parent_graph_that_holds_its_draft_streams_one_answer(docs: Path) -> None:
    """The tutorial's parent graph streamed its draft, then the replacement: with the draft
    held (hold_draft, the nostream tag) only the answer kept streams, once."""
    fixed = "The client retries failed requests 4 times [1]."
    model = ScriptedChatModel(responses=[WRONG, fixed])

    def answer(state: HeldState) -> dict[str, Any]:
        messages = inject_context(state["messages"], state.get("rag_context", ""))
        reply = model.invoke(messages, config={"tags": ["nostream"]})
        return {"answer_draft": hold_draft(mark_answer(reply, state, mode="llm"))}

    builder = StateGraph(HeldState, context_schema=RagSettings)
    builder.add_node("rag", build_rag_graph())
    builder.add_node("answer", answer)
    builder.add_node("check", answer_check_node(model, judge=_judge()))
    builder.add_edge(START, "rag")
    builder.add_edge("rag", "answer")
    builder.add_edge("answer", "check")
    graph = builder.compile()
    settings = _settings(docs, "repair")
    question: Any = {"messages": [HumanMessage(QUESTION)]}
    streamed: list[str] = []
    out: dict[str, Any] = {}
    modes: list[StreamMode] = ["messages", "values"]
    for mode, part in graph.stream(question, context=settings, stream_mode=modes):
        if mode == "values":
            out = cast(dict[str, Any], part)
        elif isinstance(part[0], AIMessage):
            streamed.append(part[0].text)
    assert streamed == [fixed]
    assert [m.type for m in out["messages"]] == ["human", "ai"]
    assert out["answer_draft"] is None and verdict_on(out["messages"][-1]) is not None
