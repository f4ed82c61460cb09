"""The shared LLM helper (kbgraph.graphs._structured) and the nodes' use of it: structured
output first, a plain-JSON retry, then nothing; every failure recorded; timeouts not waited
for twice; the calls never stream as chat."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel, Field

from kbgraph.errors import ChatModelError, LlmRefusalError
from kbgraph.evals._judges.llm import ClaimVerdictsOut
from kbgraph.graphs._nodes._llm import (
    NODE_MAX_TOKENS,
    STEP_MAX_TOKENS,
    STEP_TIMEOUT_SHARE,
    ask_node,
    budgeted,
)
from kbgraph.graphs._structured import (
    first_json_object,
    is_outage,
    is_timeout,
    json_instruction,
    parse_json_reply,
    skeleton,
)
from kbgraph.testing import ScriptedChatModel, refusal_message
from tests.support.gguf import stub_gguf_model


class Choice(BaseModel):
    retrieve: bool
    names: list[str] = Field(default_factory=list)
    reason: str = ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure!\n```json\n{"a": "}{"}\n```\nDone.', {"a": "}{"}),
        ('[1, 2] then {"b": [1, {"c": 2}]}', {"b": [1, {"c": 2}]}),
        ('{broken {"ok": true}', {"ok": True}),
        ('{"é": "ünïcode ✓"}', {"é": "ünïcode ✓"}),
        ('```json\n{"a": "é"}\n```', {"a": "é"}),
        ('Here: {"a": [1, 2]} done', {"a": [1, 2]}),
        ("no object here", None),
        ("", None),
    ],
)
def test_first_json_object(text: str, expected: dict[str, Any] | None) -> None:
    assert first_json_object(text) == expected


def test_parse_json_reply_refusal_and_missing() -> None:
    with pytest.raises(LlmRefusalError):
        parse_json_reply(refusal_message())
    with pytest.raises(ChatModelError, match="no JSON object"):
        parse_json_reply(AIMessage(content="just words"))


def test_json_instruction_lists_the_fields() -> None:
    text = json_instruction(Choice)
    assert '{"retrieve": <boolean>, "names": [<string>, ...], "reason": <string>}' in text
    assert "JSON" in text


def test_skeleton_shows_nested_objects_and_choices() -> None:
    assert skeleton(ClaimVerdictsOut) == (
        '{"verdicts": [{"claim": <integer>, "verdict": <"supported" | "not_supported" | '
        '"contradicted">, "reason": <string>}, ...]}'
    )


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (TimeoutError(), True),
        (type("APITimeoutError", (Exception,), {})(), True),
        (type("ReadTimeout", (Exception,), {})(), True),
        (ValueError("timeout in message only"), False),
        (ConnectionError(), False),
    ],
)
def test_is_timeout(exc: BaseException, expected: bool) -> None:
    assert is_timeout(exc) is expected


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (TimeoutError(), True),
        (ConnectionError("refused"), True),
        (ConnectionRefusedError(), True),
        (type("APIConnectionError", (Exception,), {})(), True),
        (type("ConnectError", (Exception,), {})(), True),
        (ValueError("connection in message only"), False),
        (type("InternalServerError", (Exception,), {})(), False),
    ],
)
def test_is_outage(exc: BaseException, expected: bool) -> None:
    assert is_outage(exc) is expected


def test_an_outage_is_marked_and_not_asked_again() -> None:
    model = ScriptedChatModel(responses=[ConnectionError("refused")])
    result = _ask(model)
    (fallback,) = result.fallbacks
    assert fallback["outage"] is True and len(model.calls) == 1


def test_a_timeout_is_not_waited_for_twice_nor_called_an_outage() -> None:
    # A slow model is not a down one: the next node, and the answer, still ask it.
    model = ScriptedChatModel(responses=[TimeoutError("slow")])
    result = _ask(model)
    (fallback,) = result.fallbacks
    assert "outage" not in fallback and len(model.calls) == 1
    assert fallback["error"].startswith("TimeoutError")


def test_a_node_call_is_held_to_its_own_budget(tmp_path: Any) -> None:
    model = stub_gguf_model(tmp_path, max_tokens=512, timeout=60.0)
    step = budgeted(model, 60.0)
    assert step.max_tokens == STEP_MAX_TOKENS and step.timeout == 60.0 * STEP_TIMEOUT_SHARE
    assert model.max_tokens == 512 and model.timeout == 60.0  # the answer keeps its own
    small = budgeted(model.model_copy(update={"max_tokens": 64, "timeout": 1.0}), 60.0)
    assert small.max_tokens == 64 and small.timeout == 1.0
    scripted = ScriptedChatModel(responses=[])
    assert budgeted(scripted, 60.0) is scripted


def test_a_node_whose_reply_is_a_few_short_fields_gets_a_tighter_cap(tmp_path: Any) -> None:
    """SelectScope's SmolLM2 reply listed invented paths until the 256-token cap, every
    run (~7 CPU-s of a question's time); a node of its own cap is held to it, the others
    to STEP_MAX_TOKENS, and a caller's smaller max_tokens still wins."""
    model = stub_gguf_model(tmp_path, max_tokens=512, timeout=60.0)
    assert budgeted(model, 60.0, "select_scope").max_tokens == 128
    assert budgeted(model, 60.0, "decide_retrieve").max_tokens == 96
    assert budgeted(model, 60.0, "rerank").max_tokens == STEP_MAX_TOKENS
    small = model.model_copy(update={"max_tokens": 64})
    assert budgeted(small, 60.0, "rewrite_query").max_tokens == 64
    # each capped name is a node's own (a misspelt one would quietly get the wide cap)
    from kbgraph.graphs._nodes import decide_retrieve, grounding_check, rewrite_query, select_scope

    nodes = {m.NODE for m in (decide_retrieve, grounding_check, rewrite_query, select_scope)}
    assert set(NODE_MAX_TOKENS) == nodes


def test_other_failures_are_not_outages() -> None:
    result = _ask(ScriptedChatModel(responses=["prose", "more prose"]))
    assert [f.get("outage") for f in result.fallbacks] == [None, None]


def _ask(model: ScriptedChatModel) -> Any:
    return ask_node(
        model, Choice, "decide_retrieve", node="n", attempt=2, question="q?",
        conversation="(none)", knowledge_bases="docs",
    )  # fmt: skip


def test_structured_success() -> None:
    result = _ask(ScriptedChatModel(responses=[{"retrieve": True, "names": ["a"]}]))
    assert result.value == Choice(retrieve=True, names=["a"]) and result.path == "llm"
    assert result.fallbacks == []


def test_json_retry_success_is_recorded() -> None:
    model = ScriptedChatModel(responses=["prose", 'ok: {"retrieve": false}'])
    result = _ask(model)
    assert result.value == Choice(retrieve=False) and result.path == "llm-json"
    (fallback,) = result.fallbacks
    assert (
        fallback["node"] == "n" and fallback["attempt"] == 2 and fallback["stage"] == "structured"
    )
    assert fallback["error"].startswith("StructuredOutputParseError")
    system, user, ask = model.calls[1].messages
    assert "Question: q?" in user.text and ask.text.rstrip().endswith("}")
    assert "JSON" in ask.text
    assert system.content == model.calls[0].messages[0].content


def test_errors_are_cut_to_one_line() -> None:
    result = _ask(ScriptedChatModel(responses=[RuntimeError("line1\nline2 " + "x" * 1000)] * 2))
    assert result.value is None
    assert all("\n" not in f["error"] and len(f["error"]) < 340 for f in result.fallbacks)
