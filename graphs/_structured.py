"""Ask a chat model for a pydantic object: structured output, then plain JSON, then fail
clearly. The one helper behind the subgraph's LLM paths and the LLM judge.

1. ``model.with_structured_output(schema, include_raw=True)`` (tool / JSON-schema calling);
2. when that fails for any reason but an outage (a timeout or a refused connection), a plain
   call whose last message asks for one JSON object of the schema's shape
   (``prompts/json_fallback.txt``), parsed from the first ``{...}`` of the reply — local
   models behind OpenAI-compatible servers often cannot do (1) but can do this;
3. when both fail, a reply with no value and every error, for the caller to fall back
   (the nodes' heuristic path) or to raise (the judge's ``JudgeError``).

Calls are tagged ``nostream``: LangGraph's ``stream_mode="messages"`` leaves them out, so a
client streaming the answer never sees this JSON, while traces still show the calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from kbgraph._base.model_calls import INTERNAL, INTERNAL_TAG, describe_error, internal_config
from kbgraph.errors import ChatModelError, LlmRefusalError
from kbgraph.prompts import render_prompt

T = TypeVar("T", bound=BaseModel)
Stage = Literal["structured", "json"]
StructuredPath = Literal["llm", "llm-json"]


@dataclass
class StructuredReply(Generic[T]):
    """``value`` (``None`` when both ways failed), the way that gave it, each failed way with
    its error, and the raw replies (for token usage)."""

    value: T | None = None
    path: StructuredPath | None = None
    errors: list[tuple[Stage, BaseException]] = field(default_factory=list)
    replies: list[BaseMessage] = field(default_factory=list)

    @property
    def outage(self) -> bool:
        """The last call found the chat server hung or unreachable."""
        return bool(self.errors) and is_outage(self.errors[-1][1])


def ask_structured(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    structured: bool = True,
    name: str | None = None,
) -> StructuredReply[T]:
    """``schema`` from ``model`` for ``messages``; ``structured=False`` skips way (1) (a
    model known to lack structured output); ``name`` names the traced run."""
    reply: StructuredReply[T] = StructuredReply()
    config = internal_config(name)
    if structured:
        try:
            runnable = model.with_structured_output(schema, include_raw=True)
            result: Any = runnable.invoke(list(messages), config=config)
            if isinstance(result, dict) and isinstance(result.get("raw"), BaseMessage):
                reply.replies.append(result["raw"])
            reply.value = _validated(schema, result)
            reply.path = "llm"
            return reply
        except Exception as exc:  # any failure of the model means: try plain JSON
            reply.errors.append(("structured", exc))
            if is_outage(exc):
                return reply
    try:
        ask = HumanMessage(json_instruction(schema))
        answer = model.invoke([*messages, ask], config=config)
        reply.replies.append(answer)
        reply.value = schema.model_validate(parse_json_reply(answer))
        reply.path = "llm-json"
    except Exception as exc:
        reply.errors.append(("json", exc))
    return reply


def _validated(schema: type[T], result: Any) -> T:
    """The parsed value of an ``include_raw=True`` result (or of a bare one)."""
    if isinstance(result, dict) and "parsed" in result:
        error = result.get("parsing_error")
        if result.get("parsed") is None:
            raw = result.get("raw")
            _raise_on_refusal(raw)
            raise error or ChatModelError("structured output was empty (an unparsable reply)")
        result = result["parsed"]
    if result is None:
        raise ChatModelError("structured output was empty (refusal or unparsable reply)")
    if isinstance(result, schema):
        return result
    if isinstance(result, BaseModel):
        return schema.model_validate(result.model_dump())
    return schema.model_validate(result)


def json_instruction(schema: type[BaseModel]) -> str:
    """The JSON-only instruction, with a skeleton of the schema's shape."""
    return render_prompt("json_fallback", skeleton=skeleton(schema)).strip()


def skeleton(schema: type[BaseModel]) -> str:
    """A one-line picture of the JSON the schema wants: ``{"verdicts": [{"claim":
    <integer>, "verdict": <"supported" | "not_supported" | "contradicted">}]}``."""
    spec = schema.model_json_schema()
    return _shape(spec, spec.get("$defs", {}))


def _shape(spec: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in spec:
        return _shape(defs[spec["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in spec:
        return " | ".join(_shape(option, defs) for option in spec["anyOf"])
    if "enum" in spec:
        return "<" + " | ".join(json.dumps(v) for v in spec["enum"]) + ">"
    kind = spec.get("type")
    if kind == "object" or "properties" in spec:
        fields = ", ".join(
            f"{json.dumps(name)}: {_shape(sub, defs)}"
            for name, sub in spec.get("properties", {}).items()
        )
        return "{" + fields + "}"
    if kind == "array":
        return "[" + _shape(spec.get("items", {}), defs) + ", ...]"
    return f"<{kind or 'value'}>"


def parse_json_reply(reply: Any) -> dict[str, Any]:
    """The first JSON object in the reply text (code fences and prose around it are
    ignored); a refusal or a reply without an object raises."""
    _raise_on_refusal(reply)
    text = reply.text if isinstance(reply, BaseMessage) else str(reply)
    found = first_json_object(text)
    if found is None:
        raise ChatModelError(f"no JSON object in the reply: {text[:120]!r}")
    return found


def _raise_on_refusal(reply: Any) -> None:
    if isinstance(reply, AIMessage):
        refusal = reply.additional_kwargs.get("refusal")
        if refusal:
            raise LlmRefusalError(f"the model refused: {refusal}")


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first ``{...}`` of ``text`` that decodes to a JSON object, or ``None``."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def is_timeout(exc: BaseException) -> bool:
    """``TimeoutError`` or a client's own timeout class (``openai.APITimeoutError``,
    ``httpx.ReadTimeout`` ...), which do not all derive from it."""
    return isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower()


def is_outage(exc: BaseException) -> bool:
    """A timeout or a failed connection (``ConnectionError``, ``openai.APIConnectionError``,
    ``httpx.ConnectError`` ...): the chat server is hung or unreachable, and the next call
    would most likely wait or fail the same way."""
    name = type(exc).__name__.lower()
    return is_timeout(exc) or isinstance(exc, ConnectionError) or "connect" in name


def is_down(exc: BaseException) -> bool:
    """A failed connection: the chat server could not be reached, and the rest of the run
    need not try it again. A timeout is not one: the model is slow, and a call with a
    smaller job (the answer after a node's JSON) may well finish."""
    return is_outage(exc) and not is_timeout(exc)


__all__ = [
    "INTERNAL",
    "INTERNAL_TAG",
    "Stage",
    "StructuredPath",
    "StructuredReply",
    "ask_structured",
    "describe_error",
    "first_json_object",
    "is_down",
    "is_outage",
    "is_timeout",
    "json_instruction",
    "parse_json_reply",
    "skeleton",
]
