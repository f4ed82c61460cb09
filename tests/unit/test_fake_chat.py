"""The scripted chat model: replies in order, structured output parsed strictly, tools
recorded, failures raised, and it works inside LangChain's runnable machinery."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from kbgraph.errors import ConfigError
from kbgraph.graphs._models import FAKE_REPLY, resolve_chat_model
from kbgraph.testing import (
    ScriptedChatModel,
    ScriptedRefusalError,
    ScriptExhaustedError,
    StructuredOutputParseError,
    refusal_message,
    tool_call_message,
)
from kbgraph.testing import ScriptedChatModel as ExportedScriptedChatModel


class Verdict(BaseModel):
    grounded: bool
    reason: str = ""


@tool
def rag_search(query: str) -> str:
    """Search the documents."""
    return query


def test_exported_from_graphs() -> None:
    assert ExportedScriptedChatModel is ScriptedChatModel


def test_replies_in_order_and_records_calls() -> None:
    model = ScriptedChatModel(responses=["first", AIMessage(content="second")])
    assert model.invoke("a").content == "first"
    assert model.invoke([HumanMessage(content="b")]).content == "second"
    assert [c.messages[-1].content for c in model.calls] == ["a", "b"]
    assert model.remaining == 0


def test_exhausted_script_raises_unless_default() -> None:
    with pytest.raises(ScriptExhaustedError, match="no response left"):
        ScriptedChatModel().invoke("x")
    assert ScriptedChatModel(default="always").invoke("x").content == "always"


@pytest.mark.parametrize(
    "response",
    [{"grounded": True, "reason": "ok — ünïcode"}, Verdict(grounded=True, reason="ok — ünïcode")],
)
def test_structured_output_parses_dicts_and_models(response: Any) -> None:
    model = ScriptedChatModel(responses=[response])
    result = model.with_structured_output(Verdict).invoke("q")
    assert result == Verdict(grounded=True, reason="ok — ünïcode")
    assert model.calls[0].structured == "Verdict"


def test_structured_output_from_tool_call_and_dict_schema() -> None:
    model = ScriptedChatModel(responses=[tool_call_message("Verdict", {"grounded": False})])
    schema = {"title": "Verdict", "type": "object", "properties": {"grounded": {"type": "boolean"}}}
    assert model.with_structured_output(schema).invoke("q") == {"grounded": False}


@pytest.mark.parametrize(
    ("response", "error"),
    [
        ("not json at all", StructuredOutputParseError),
        ('["a", "list"]', StructuredOutputParseError),
        ({"reason": "no grounded key"}, ValueError),
        (refusal_message("I won't."), ScriptedRefusalError),
        (TimeoutError("too slow"), TimeoutError),
        (TimeoutError, TimeoutError),
    ],
)
def test_structured_output_failures_raise(response: Any, error: type[Exception]) -> None:
    model = ScriptedChatModel(responses=[response])
    with pytest.raises(error):
        model.with_structured_output(Verdict).invoke("q")


def test_include_raw_reports_parsing_error() -> None:
    model = ScriptedChatModel(responses=["nope"])
    out: Any = model.with_structured_output(Verdict, include_raw=True).invoke("q")
    assert out["parsed"] is None and isinstance(out["parsing_error"], ValueError)
    assert out["raw"].content == "nope"


def test_bind_tools_records_tools_and_returns_tool_calls() -> None:
    model = ScriptedChatModel(responses=[tool_call_message("rag_search", {"query": "retry"})])
    bound = model.bind_tools([rag_search], tool_choice="any")
    reply = bound.invoke("find retries")
    assert reply.tool_calls[0]["name"] == "rag_search"
    assert reply.tool_calls[0]["args"] == {"query": "retry"}
    assert model.bound_tools == ["rag_search"]
    assert model.calls[0].tools == ["rag_search"]


def test_callable_response_sees_messages() -> None:
    model = ScriptedChatModel(responses=[lambda msgs: f"echo {msgs[-1].content}"])
    assert model.invoke("héllo").content == "echo héllo"


def test_async_invoke() -> None:
    model = ScriptedChatModel(responses=["async reply"])
    assert asyncio.run(model.ainvoke("x")).content == "async reply"


def test_unsupported_response_type() -> None:
    with pytest.raises(ConfigError, match="cannot script"):
        ScriptedChatModel(responses=[42]).invoke("x")


@pytest.mark.parametrize("spec", [None, "", "none", " None "])
def test_resolve_none(spec: str | None) -> None:
    assert resolve_chat_model(spec) is None


def test_resolve_fake_and_instances() -> None:
    fake = resolve_chat_model("fake")
    assert isinstance(fake, ScriptedChatModel) and fake.invoke("x").content == FAKE_REPLY
    custom = resolve_chat_model("fake:bonjour à tous")
    assert custom is not None and custom.invoke("x").content == "bonjour à tous"
    model = ScriptedChatModel()
    assert resolve_chat_model(model) is model


def test_resolve_openai_compatible() -> None:
    from langchain_openai import ChatOpenAI

    model = resolve_chat_model("openai_compatible:llama3.1:8b@http://127.0.0.1:9/v1")
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "llama3.1:8b"
    assert model.openai_api_base == "http://127.0.0.1:9/v1"
    assert model.temperature == 0


@pytest.mark.parametrize(
    "spec",
    ["bogus:x", "openai:", "openai_compatible:model-without-url", "openai_compatible:m@ftp://x"],
)
def test_resolve_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ConfigError):
        resolve_chat_model(spec)
