"""``ChatGGUF`` with a real model: SmolLM2-135M-Instruct run in process by llama.cpp.

A 135M model answers poorly; these tests check behaviour (replies, usage, streaming,
structured output, token counts, the window, timeouts, threads), not wisdom. Replies are
kept short (``max_tokens``) so the module stays within about 30 s on a loaded 2-core
machine."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessageChunk, HumanMessage, SystemMessage
from langgraph.graph import START, MessagesState, StateGraph
from pydantic import BaseModel

from kbgraph.errors import ContextLengthError
from kbgraph.graphs._chat_models import ChatGGUF
from kbgraph.graphs._models import resolve_chat_model
from tests.support.gguf import smollm2_path, smollm2_spec

pytestmark = pytest.mark.integration
MESSAGES = [SystemMessage("Answer in one short sentence."), HumanMessage("What is Paris?")]


class City(BaseModel):
    city: str
    country: str


@pytest.fixture(scope="module")
def model() -> ChatGGUF:
    return ChatGGUF(model_path=str(smollm2_path()), n_ctx=1024, max_tokens=24)


def test_invoke_replies_with_text_and_usage(model: ChatGGUF) -> None:
    reply = model.invoke(MESSAGES)
    assert reply.text.strip()
    usage = reply.usage_metadata
    assert usage is not None and 0 < usage["output_tokens"] <= 24
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert reply.response_metadata["finish_reason"] in ("stop", "length")
    assert reply.response_metadata["model_name"] == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_token_counts_are_the_models_own(model: ChatGGUF) -> None:
    reply = model.invoke(MESSAGES, max_tokens=1)
    assert reply.usage_metadata is not None
    assert model.get_num_tokens_from_messages(MESSAGES) == reply.usage_metadata["input_tokens"]
    assert 0 < model.get_num_tokens("Harbor retries failed calls.") < 12


def test_stream_yields_the_reply_in_pieces(model: ChatGGUF) -> None:
    chunks = list(model.stream(MESSAGES))
    assert len([c for c in chunks if c.text]) > 1
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    assert whole.text == model.invoke(MESSAGES).text  # temperature 0: the same reply
    assert whole.usage_metadata is not None and whole.usage_metadata["output_tokens"] > 0


def test_internal_calls_stream_through_a_graph(model: ChatGGUF) -> None:
    def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState).add_node("llm", node).add_edge(START, "llm").compile()
    streamed = [
        message
        for message, _ in graph.stream({"messages": MESSAGES}, stream_mode="messages")
        if isinstance(message, AIMessageChunk) and message.text
    ]
    assert len(streamed) > 1


def test_structured_output_follows_the_schema(model: ChatGGUF) -> None:
    structured = model.with_structured_output(City, include_raw=True)
    prompt = [HumanMessage("Paris is the capital of France. Give the city and its country.")]
    out: Any = structured.invoke(prompt)
    assert out["raw"].text.lstrip().startswith("{")  # decoding is held to JSON
    if out["parsing_error"] is None:
        assert isinstance(out["parsed"], City)
    else:  # the reply ran out of max_tokens mid-object: reported, not raised
        assert out["raw"].response_metadata["finish_reason"] == "length"
    with pytest.raises(OutputParserException):
        short = model.model_copy(update={"max_tokens": 3})
        short.with_structured_output(City).invoke(prompt)


def test_a_prompt_beyond_the_window_raises_context_length_error(model: ChatGGUF) -> None:
    with pytest.raises(ContextLengthError) as caught:
        model.invoke("word " * 1500)
    assert caught.value.limit == 1024 and caught.value.prompt_tokens > 1024


def test_the_timeout_stops_a_generation(model: ChatGGUF) -> None:
    slow = model.model_copy(update={"timeout": 0.05})
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        slow.invoke("Write a long story about a harbor.", max_tokens=200)
    assert time.monotonic() - started < 10


def test_a_reply_that_loops_stops_where_it_loops(model: ChatGGUF) -> None:
    """SmolLM2 writes this refrain again and again (to max_tokens without the watch)."""
    prompt = [
        HumanMessage("Write a poem where every line is 'The sea is blue and the sky is wide.'")
    ]
    reply = model.invoke(prompt, max_tokens=200)
    assert reply.response_metadata["finish_reason"] == "looped"
    assert reply.usage_metadata is not None and reply.usage_metadata["output_tokens"] < 100
    assert reply.text.count("The sea is blue and the sky is wide") == 3
    unwatched = model.model_copy(update={"stop_loops": False}).invoke(prompt, max_tokens=200)
    assert unwatched.response_metadata["finish_reason"] == "length"


def test_the_model_loads_once_and_serves_several_threads(model: ChatGGUF) -> None:
    spec = smollm2_spec(n_ctx=1024, max_tokens=24)
    resolved = resolve_chat_model(spec)
    assert isinstance(resolved, ChatGGUF) and resolved.runtime() is model.runtime()
    replies: list[str] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            replies.append(resolved.invoke(MESSAGES, max_tokens=8).text)
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=ask) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert errors == [] and len(replies) == 3 and len(set(replies)) == 1
