"""One answer in the stream (issue 30): in ``stream_mode="messages"`` the chat agent's
answer came twice — the model's message (its tokens, under the model's id), then the whole
answer again as the answer node's new message without that id. Each message now comes
once; a replaced answer (policy ``repair``) comes as its own message, once."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage

from kbgraph.agents import build_chat_agent
from kbgraph.graphs._settings import AnswerCheckSettings, RagSettings
from kbgraph.testing import ScriptedChatModel, ScriptedJudge

DOCS = {"retry.md": "# Retry policy\n\nThe client retries failed requests 4 times.\n"}
QUESTION = "How many times does the client retry a failed request?"
TRUE = "The client retries failed requests 4 times [1]."


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> RagSettings:
    root = tmp_path_factory.mktemp("docs")
    for rel, text in DOCS.items():
        (root / rel).write_text(text, encoding="utf-8")
    return RagSettings(knowledge_bases=[{"name": "docs", "folder": str(root)}], embedding="fake")


def _streamed(agent: Any, question: str, settings: RagSettings) -> list[tuple[str, str]]:
    """(id, text) of each message the stream shows, chunks of one id joined, in order."""
    texts: dict[str, str] = {}
    for message, _meta in agent.stream(
        {"messages": [HumanMessage(question)]}, context=settings, stream_mode="messages"
    ):
        key = str(message.id)
        if isinstance(message, AIMessageChunk):
            texts[key] = texts.get(key, "") + message.text
        elif isinstance(message, AIMessage):
            assert key not in texts, f"message {key} streamed twice"
            texts[key] = message.text
    return list(texts.items())


def _agent(*answers: Any, failures: int = 8) -> Any:
    # The subgraph's nodes fall back to their heuristics on replies that are no JSON (eight
    # calls for a question, two for small talk); then come the answers.
    model = ScriptedChatModel(responses=[ValueError("no JSON")] * failures + list(answers))
    judge = ScriptedJudge(default="supported")
    return build_chat_agent(chat_model=model, answer_judge=judge)


def test_the_models_answer_streams_once(settings: RagSettings) -> None:
    agent = _agent(TRUE)
    streamed = _streamed(agent, QUESTION, settings)
    assert [text for _, text in streamed] == [TRUE]


def test_a_reply_without_retrieval_streams_once(settings: RagSettings) -> None:
    streamed = _streamed(_agent("Hello! Ask me about the docs.", failures=2), "hello", settings)
    assert [text for _, text in streamed] == ["Hello! Ask me about the docs."]


def test_an_extractive_answer_streams_once(settings: RagSettings) -> None:
    streamed = _streamed(build_chat_agent(), QUESTION, settings)
    assert len(streamed) == 1 and streamed[0][1].startswith("Extractive answer")


def test_a_replaced_answer_streams_as_its_own_message_once(settings: RagSettings) -> None:
    wrong = "The client gives up after 9 attempts [1]."
    streamed = _streamed(_agent(wrong, wrong), QUESTION, settings)
    texts = [text for _, text in streamed]
    # Issue 40: the rejected draft streamed token by token, then its replacement came as a
    # second message. Under repair the draft is held for the check: the replacement is the
    # one answer streamed; neither attempt of the model is.
    assert len(texts) == 1 and wrong not in texts
    assert texts[0].startswith("Extractive answer (the chat model's answer was not shown")
    assert Counter(i for i, _ in streamed).most_common(1)[0][1] == 1


def test_a_second_answer_that_is_kept_streams_once(settings: RagSettings) -> None:
    wrong = "The client gives up after 9 attempts [1]."
    streamed = _streamed(_agent(wrong, TRUE), QUESTION, settings)
    assert [text for _, text in streamed] == [TRUE]  # the rejected draft never streamed


def test_a_repaired_draft_streams_once_with_its_citation(settings: RagSettings) -> None:
    # Repair attaches the supporting source's citation instead of replacing the draft.
    uncited = "The client retries failed requests 4 times."
    streamed = _streamed(_agent(uncited, "never asked"), QUESTION, settings)
    assert [text for _, text in streamed] == [TRUE]


def test_under_flag_the_answer_streams_as_written_and_is_marked_in_place(
    settings: RagSettings,
) -> None:
    """Nothing can replace the answer under flag: its tokens stream, and the check's
    verdict replaces that message in place (same id) in the state."""
    flag = settings.model_copy(update={"answer_check": AnswerCheckSettings(policy="flag")})
    streamed = _streamed(_agent(TRUE), QUESTION, flag)
    assert [text for _, text in streamed] == [TRUE]
    out = _agent(TRUE).invoke({"messages": [HumanMessage(QUESTION)]}, context=flag)
    assert [m.type for m in out["messages"]] == ["human", "ai"]
    assert out["messages"][-1].response_metadata["kbgraph_check"]["grounded"] is True


def test_the_final_state_holds_one_answer_message(settings: RagSettings) -> None:
    uncited = "The client retries failed requests 4 times."
    out = _agent(uncited, TRUE).invoke({"messages": [HumanMessage(QUESTION)]}, context=settings)
    assert [m.text for m in out["messages"] if isinstance(m, AIMessage)] == [TRUE]
