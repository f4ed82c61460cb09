"""A scripted chat model for tests: it answers from a list, in order, and records every call.

    model = ScriptedChatModel(responses=[
        {"retrieve": True, "reason": "asks about the docs"},  # structured output (JSON)
        "The retry policy is ... [1]",                          # plain text answer
        TimeoutError("slow"),                                   # raised, like a timeout
        refusal_message("I can't help with that."),             # a refusal
        tool_call_message("rag_search", {"query": "retry"}),    # a tool call
    ])

A response is a ``str`` (the reply text), a ``dict`` or pydantic model (sent as JSON text:
what ``with_structured_output`` parses), an ``AIMessage`` (as is), an exception instance or
class (raised), or a callable taking the messages and returning any of these.
``with_structured_output`` parses the reply's JSON (or its first tool call) strictly and
raises on anything else, so that callers' fallback paths can be tested; ``bind_tools``
returns a binding whose calls record the tools. When the script runs out, ``default`` is
used, or :class:`ScriptExhaustedError` is raised.

Token counts are words (whitespace-separated), counted offline: give the model a window with
``profile={"max_input_tokens": N}`` to test what fits (``kbgraph._base.context_window``).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, PrivateAttr

from kbgraph._base.faces import shown_as
from kbgraph.errors import ChatModelError, ConfigError, KbgraphError, LlmRefusalError


@shown_as("kbgraph.testing")
class ScriptExhaustedError(KbgraphError, RuntimeError):
    """The scripted model was called more often than it has responses."""


@shown_as("kbgraph.testing")
class ScriptedRefusalError(LlmRefusalError):
    """A structured-output call got a refusal instead of JSON."""


@shown_as("kbgraph.testing")
class StructuredOutputParseError(ChatModelError, ValueError):
    """A structured-output call got a reply that is not a JSON object of the schema."""


@dataclass
class ScriptedCall:
    """One call: the messages sent, the names of the tools bound, and the name of the
    structured-output schema (``None`` for plain calls)."""

    messages: list[BaseMessage]
    tools: list[str] = field(default_factory=list)
    structured: str | None = None


def tool_call_message(
    name: str, args: dict[str, Any], *, call_id: str | None = None, content: str = ""
) -> AIMessage:
    """A reply that calls tool ``name`` with ``args``."""
    return AIMessage(
        content=content,
        tool_calls=[{"name": name, "args": args, "id": call_id or f"call_{uuid.uuid4().hex[:12]}"}],
    )


def refusal_message(text: str = "I can't help with that.") -> AIMessage:
    """A refusal as OpenAI-style models return it (text plus ``refusal`` metadata)."""
    return AIMessage(content=text, additional_kwargs={"refusal": text})


class ScriptedChatModel(BaseChatModel):
    """A ``BaseChatModel`` that replays ``responses`` (see the module docstring)."""

    responses: list[Any] = Field(default_factory=list)
    default: Any = None
    calls: list[ScriptedCall] = Field(default_factory=list)
    bound_tools: list[str] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "kbgraph-scripted"

    @property
    def remaining(self) -> int:
        """How many scripted responses are left."""
        return len(self.responses)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = [_tool_name(t) for t in kwargs.get("tools") or []]
        with self._lock:
            self.calls.append(ScriptedCall(list(messages), tools, kwargs.get("kbgraph_schema")))
            if self.responses:
                response = self.responses.pop(0)
            elif self.default is not None:
                response = self.default
            else:
                raise ScriptExhaustedError(
                    f"ScriptedChatModel has no response left for call {len(self.calls)}; add "
                    "one to responses=[...] or set default=..."
                )
        message = _to_message(response, messages)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def get_num_tokens_from_messages(
        self,
        messages: list[BaseMessage],
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool] | None = None,
    ) -> int:
        """Words, plus one per message (the base class would fetch a GPT-2 tokenizer)."""
        return sum(len(m.text.split()) + 1 for m in messages)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(t) for t in tools]
        self.bound_tools = [_tool_name(t) for t in formatted]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        name = getattr(schema, "__name__", None) or str(
            schema.get("title", "schema") if isinstance(schema, dict) else "schema"
        )
        bound = self.bind(kbgraph_schema=name)

        def parse(message: AIMessage) -> Any:
            if not include_raw:
                return parse_structured(message, schema)
            try:
                return {
                    "raw": message,
                    "parsed": parse_structured(message, schema),
                    "parsing_error": None,
                }
            except ValueError as exc:
                return {"raw": message, "parsed": None, "parsing_error": exc}

        return bound | RunnableLambda(parse)


def parse_structured(message: AIMessage, schema: dict[str, Any] | type) -> Any:
    """The reply as ``schema``: a refusal or anything but one JSON object (or a tool call)
    of the schema raises."""
    refusal = message.additional_kwargs.get("refusal")
    if refusal:
        raise ScriptedRefusalError(f"the model refused: {refusal}")
    if message.tool_calls:
        data: Any = message.tool_calls[0]["args"]
    else:
        try:
            data = json.loads(message.text.strip())
        except json.JSONDecodeError as exc:
            raise StructuredOutputParseError(f"reply is not JSON: {message.text[:80]!r}") from exc
    if not isinstance(data, dict):
        raise StructuredOutputParseError(f"reply is JSON but not an object: {data!r}")
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_validate(data)
    return data


def _to_message(response: Any, messages: list[BaseMessage]) -> AIMessage:
    if isinstance(response, BaseException):
        raise response
    if isinstance(response, type) and issubclass(response, BaseException):
        raise response(f"scripted {response.__name__}")
    if isinstance(response, AIMessage):
        return response.model_copy()
    if isinstance(response, str):
        return AIMessage(content=response)
    if isinstance(response, BaseModel):
        return AIMessage(content=response.model_dump_json())
    if isinstance(response, dict):
        return AIMessage(content=json.dumps(response, ensure_ascii=False))
    if callable(response):
        return _to_message(response(messages), messages)
    raise ConfigError(
        f"cannot script a response of type {type(response).__name__}; use str, dict, "
        "AIMessage, a pydantic model, an exception or a callable."
    )


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        return str(tool.get("function", {}).get("name") or tool.get("name") or "tool")
    return str(getattr(tool, "name", None) or getattr(tool, "__name__", "tool"))


__all__ = [
    "ScriptExhaustedError",
    "ScriptedCall",
    "ScriptedChatModel",
    "ScriptedRefusalError",
    "StructuredOutputParseError",
    "parse_structured",
    "refusal_message",
    "tool_call_message",
]
