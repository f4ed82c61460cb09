"""``RagMiddleware`` on ``create_agent`` with a real model: the packaged SmolLM2-135M in
process (``ChatGGUF``), the default answer check (``repair``, the offline judge), two turns
on one checkpointed thread. A 135M model answers poorly; what is checked is behaviour: the
sources reach its request (fitted to its small window) and never ``messages``, every ``[N]``
of the answer kept is resolved or reported, the check ran and said what it did, and the
small talk of the next turn is neither searched nor given the first turn's sources."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse, wrap_model_call
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from kbgraph.agents import RagMiddleware
from kbgraph.graphs import RagSettings
from kbgraph.graphs._chat_models import ChatGGUF
from tests.e2e.conftest import make_docs
from tests.support.gguf import smollm2_path

pytestmark = pytest.mark.integration
QUESTION = "How do I change the number of retries?"


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_docs(tmp_path_factory.mktemp("gguf-middleware-docs"))


def _spy(seen: list[str]) -> Any:
    """A middleware inside ``RagMiddleware``: what each request carries (its system message,
    then its messages: the sources are a user message of the request)."""

    @wrap_model_call
    def spy(request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        seen.append("\n".join([request.system_prompt or "", *(m.text for m in request.messages)]))
        return handler(request)

    return spy


def test_two_turns_with_the_packaged_model(docs: Path) -> None:
    model = ChatGGUF(model_path=str(smollm2_path()), n_ctx=1024, max_tokens=96)
    settings = RagSettings(
        knowledge_bases=[{"name": "docs", "folder": str(docs)}], embedding="fake"
    )
    seen: list[str] = []
    agent = create_agent(
        model, tools=[], middleware=[RagMiddleware(settings), _spy(seen)],
        checkpointer=InMemorySaver(),
    )  # fmt: skip
    config: RunnableConfig = {"configurable": {"thread_id": "gguf"}}

    out = agent.invoke({"messages": [HumanMessage(QUESTION)]}, config)
    assert out["rag_should_retrieve"] is True and out["rag_citations"]
    assert "retry.md" in [c["source"] for c in out["rag_citations"]]
    assert "[1] Source:" in seen[0]  # the sources reached the model, fitted to its window
    check = out["answer_check"]
    assert check["judge"] == "offline" and check["policy"] == "repair"
    assert check["action"] in ("none", "flagged", "repaired", "regenerated", "replaced")
    answer = out["messages"][-1]
    assert isinstance(answer, AIMessage) and answer.text.strip()
    assert out["answer_mode"] in ("llm", "fallback")
    markers = {int(n) for n in re.findall(r"\[(\d+)\]", answer.text)}
    resolved = {c["n"] for c in out["answer_citations"]} | {
        u["n"] for u in out["answer_unresolved"]
    }
    assert markers <= resolved

    out = agent.invoke({"messages": [HumanMessage("thanks!")]}, config)
    assert "Retrieved sources follow" not in seen[-1]  # no sources for small talk
    assert "Source:" not in seen[-1]
    assert [m.type for m in out["messages"]] == ["human", "ai", "human", "ai"]
    assert not any("Source:" in m.text for m in out["messages"])
