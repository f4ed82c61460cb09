"""The tool agent searches a question before any answer: its first step forces a
``rag_search`` call (a small local model would answer from nothing), later steps and small
talk leave the choice to the model. ``ChatGGUF`` with a scripted runtime shows what each
step allowed: a forced call's reply schema has no ``response``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from kbgraph.agents import build_tool_agent
from kbgraph.agents._react import needs_search
from kbgraph.graphs import RagSettings
from tests.support.gguf import ScriptedRuntime

pytest.importorskip("xllamacpp")  # ChatGGUF checks that its runtime is installed

from kbgraph.graphs.chat_models import ChatGGUF

SEARCH = '{"tool_call": {"name": "rag_search", "arguments": {"query": "Wiederholungen"}}}'


@pytest.fixture
def settings(tmp_path: Path) -> RagSettings:
    docs = tmp_path / "docs"
    docs.mkdir()
    text = "# Wiederholungen — Größe\r\n\r\nSet max_attempts to change the retries.\r\n"
    (docs / "retry.md").write_bytes(text.encode("utf-8"))
    return RagSettings(knowledge_bases=[{"name": "docs", "folder": str(docs)}], embedding="fake")


def _agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *replies: str) -> Any:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 16)
    runtime = ScriptedRuntime(*replies)
    monkeypatch.setattr(ChatGGUF, "runtime", lambda self: runtime)
    model = ChatGGUF(model_path=str(path), n_ctx=2048, max_tokens=64)
    return build_tool_agent(chat_model=model), runtime


def _may_respond(request: dict[str, Any]) -> bool:
    schema = request["response_format"]["json_schema"]["schema"]
    return "anyOf" in schema


def test_the_first_step_of_a_question_must_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: RagSettings
) -> None:
    agent, runtime = _agent(tmp_path, monkeypatch, SEARCH, '{"response": "max_attempts [1]"}')
    out = agent.invoke({"messages": [HumanMessage("Wie ändere ich die Wiederholungen?")]},
                       context=settings)  # fmt: skip
    first, second = runtime.requests
    assert not _may_respond(first) and "Call the tool rag_search now." in str(first["messages"])
    assert _may_respond(second)  # with the sources, the model chooses
    assert [m.name for m in out["messages"] if isinstance(m, ToolMessage)] == ["rag_search"]
    assert out["answer"] == "max_attempts [1]" and out["rag_citations"]


@pytest.mark.parametrize("message", ["thanks!", "", "   "])
def test_small_talk_and_empty_messages_are_not_forced_to_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: RagSettings, message: str
) -> None:
    agent, runtime = _agent(tmp_path, monkeypatch, '{"response": "You are welcome."}')
    out = agent.invoke({"messages": [HumanMessage(message)]}, context=settings)
    (request,) = runtime.requests
    assert _may_respond(request) and out["answer"] == "You are welcome."


@pytest.mark.parametrize(
    ("question", "expected"),
    [("How do I configure retries?", True), ("Größe des Caches?", True), ("thanks, bye", False),
     ("hello", False), ("", False), ("\r\n", False)],
)  # fmt: skip
def test_needs_search(question: str, expected: bool) -> None:
    assert needs_search(question) is expected
