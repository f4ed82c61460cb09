"""A looping reply is stopped where it starts to loop (``ChatGGUF.stop_loops``): SmolLM2's
answers ran on to their 512-token cap repeating one sentence, ~15 s of a question's time
on two cores, and the draft quoted back to the model for a second attempt grew with them.
The loop itself is kept, so the answer check still names it; JSON replies are never cut."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from kbgraph._base.loops import LoopWatch, repetition
from kbgraph.graphs._chat_models import ChatGGUF
from tests.support.gguf import stub_gguf_model

LOOP = "The default is 5. " + "It is set by the retry module. " * 6
REFRAIN = (
    "The sea is blue and the sky is wide.\nA ship sails by.\nThe sea is blue and the sky is wide.\n"
)


def _fed(text: str, piece: int = 4) -> tuple[bool, str]:
    watch = LoopWatch()
    for i in range(0, len(text), piece):
        if watch.feed(text[i : i + piece]):
            return True, watch.text
    return False, watch.text


def test_the_watch_stops_at_the_third_time_a_sentence_is_said() -> None:
    stopped, text = _fed(LOOP)
    assert stopped
    assert text.count("It is set by the retry module") == 3
    assert repetition(text) is not None  # the answer check still sees the loop


def test_a_refrain_said_twice_and_plain_prose_are_not_stopped() -> None:
    assert _fed(REFRAIN) == (False, REFRAIN)
    prose = "Harbor retries failed calls. The delay doubles each time. Set retry.max_attempts."
    assert _fed(prose) == (False, prose)
    assert repetition(REFRAIN) is not None  # the answer check is stricter than the stop


def test_a_list_that_counts_on_is_a_loop_and_a_short_list_is_not() -> None:
    """SmolLM2 listed "N. 5NN (Unauthorized)" to its 512-token cap: no sentence repeats."""
    counting = "The codes are:\n" + "".join(
        f"{i}. {500 + i} (Unauthorized)\n" for i in range(1, 30)
    )
    stopped, text = _fed(counting)
    assert stopped and text.count("(Unauthorized)") == 8
    assert repetition(counting) == (
        'it repeats the line "1. 501 (Unauthorized)" with other numbers 29 times'
    )
    codes = "Retried: 408, 429, 500, 502, 503.\n- 502 (Bad Gateway)\n- 503 (Unavailable)\n"
    assert repetition(codes) is None and _fed(codes)[0] is False


class _Runtime:
    """llama.cpp's stream of a looping reply, one word a chunk; records being closed."""

    def __init__(self, text: str) -> None:
        self.pieces = [w + " " for w in text.split()]
        self.sent = 0
        self.closed = False

    def chat_stream(
        self, request: dict[str, Any], *, deadline: Any = None
    ) -> Iterator[dict[str, Any]]:
        try:
            for piece in self.pieces:
                self.sent += 1
                yield {"choices": [{"delta": {"content": piece}, "finish_reason": None}]}
            usage = {"prompt_tokens": 7, "completion_tokens": self.sent}
            yield {"choices": [{"delta": {}, "finish_reason": "length"}], "usage": usage}
        finally:
            self.closed = True

    def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        return 7

    def tokenize(self, text: str) -> list[int]:
        return list(range(len(text.split())))


@pytest.fixture
def model(tmp_path: Any) -> ChatGGUF:
    stub: ChatGGUF = stub_gguf_model(tmp_path, max_tokens=512)
    return stub


def _with_runtime(model: ChatGGUF, runtime: _Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ChatGGUF, "runtime", lambda self: runtime)


def test_a_looping_reply_stops_generating_and_says_why(
    model: ChatGGUF, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = _Runtime(LOOP * 10)
    _with_runtime(model, runtime, monkeypatch)
    reply = model.invoke([HumanMessage("How many attempts?")])
    assert runtime.closed and runtime.sent < len(runtime.pieces) // 5  # llama.cpp told to stop
    assert reply.response_metadata["finish_reason"] == "looped"
    assert reply.text.count("It is set by the retry module") == 3
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] == len(reply.text.split())
    assert reply.usage_metadata["input_tokens"] == 7


def test_json_under_a_schema_and_a_model_told_not_to_are_never_stopped(
    model: ChatGGUF, monkeypatch: pytest.MonkeyPatch
) -> None:
    for chat, options in (
        (model.model_copy(update={"stop_loops": False}), {}),
        (model, {"response_format": {"type": "json_object"}}),
    ):
        runtime = _Runtime(LOOP * 3)
        _with_runtime(chat, runtime, monkeypatch)
        reply = chat.invoke([HumanMessage("How many attempts?")], **options)
        assert runtime.sent == len(runtime.pieces)
        assert reply.response_metadata["finish_reason"] == "length"
