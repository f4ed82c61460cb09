"""One structured LLM call with two ways out.

1. ``model.with_structured_output(Schema)`` (tool / JSON-schema calling);
2. when that fails for any reason but an outage (a timeout or a refused connection), a plain
   call whose prompt asks for one JSON object, parsed from the first ``{...}`` of the reply
   — local models behind OpenAI-compatible servers often cannot do (1) but can do this;
3. when both fail, ``None``: the node takes its heuristic path.

Every failure is returned as an ``LlmFallback`` record for ``rag_retrieval_debug``; an
outage is marked as such, and the nodes after it in the same run do not call the model
(see ``StepRecorder.chat_model``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from kbgraph.errors import LlmRefusalError
from kbgraph.prompts import render_prompt

from ..state import LlmFallback

T = TypeVar("T", bound=BaseModel)
LlmPath = Literal["llm", "llm-json"]

_ERROR_CHARS = 300


@dataclass
class LlmResult(Generic[T]):
    value: T | None
    path: LlmPath | None = None
    fallbacks: list[LlmFallback] = field(default_factory=list)


def ask_structured(
    model: BaseChatModel,
    schema: type[T],
    prompt: str,
    *,
    node: str,
    attempt: int,
    **values: object,
) -> LlmResult[T]:
    """Ask ``model`` the prompt pair ``<prompt>_system`` / ``<prompt>_user`` (rendered with
    ``values``) for a ``schema`` object."""
    system = render_prompt(f"{prompt}_system", **values).strip()
    user = render_prompt(f"{prompt}_user", **values).strip()
    result: LlmResult[T] = LlmResult(None)
    try:
        value = model.with_structured_output(schema).invoke(
            [SystemMessage(content=system), HumanMessage(content=user)]
        )
        result.value = _validated(schema, value)
        result.path = "llm"
        return result
    except Exception as exc:  # any failure of the model means: fall back
        result.fallbacks.append(_record(node, attempt, "structured", exc))
        if is_outage(exc):
            return result
    try:
        reply = model.invoke(
            [
                SystemMessage(content=system),
                HumanMessage(content=f"{user}\n\n{json_instruction(schema)}"),
            ]
        )
        result.value = schema.model_validate(parse_json_reply(reply))
        result.path = "llm-json"
    except Exception as exc:
        result.fallbacks.append(_record(node, attempt, "json", exc))
    return result


def json_instruction(schema: type[BaseModel]) -> str:
    """The JSON-only instruction, with a skeleton of the schema's fields."""
    properties = schema.model_json_schema().get("properties", {})
    fields = ", ".join(f'"{name}": <{_type_name(spec)}>' for name, spec in properties.items())
    return render_prompt("json_fallback", skeleton="{" + fields + "}").strip()


def _type_name(spec: dict[str, Any]) -> str:
    kind = spec.get("type")
    if kind == "array":
        return f"list of {spec.get('items', {}).get('type', 'value')}"
    return str(kind or "value")


def parse_json_reply(reply: Any) -> dict[str, Any]:
    """The first JSON object in the reply text (code fences and prose around it are
    ignored); a refusal or a reply without an object raises."""
    if isinstance(reply, AIMessage):
        refusal = reply.additional_kwargs.get("refusal")
        if refusal:
            raise LlmRefusalError(f"the model refused: {refusal}")
    text = reply.text if isinstance(reply, BaseMessage) else str(reply)
    found = first_json_object(text)
    if found is None:
        raise ValueError(f"no JSON object in the reply: {text[:120]!r}")
    return found


def first_json_object(text: str) -> dict[str, Any] | None:
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


def _validated(schema: type[T], value: Any) -> T:
    if value is None:
        raise ValueError("structured output was empty (refusal or unparsable reply)")
    if isinstance(value, schema):
        return value
    if isinstance(value, BaseModel):
        return schema.model_validate(value.model_dump())
    return schema.model_validate(value)


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


def _record(
    node: str, attempt: int, stage: Literal["structured", "json"], exc: BaseException
) -> LlmFallback:
    message = " ".join(str(exc).split())[:_ERROR_CHARS]
    record: LlmFallback = {
        "node": node,
        "attempt": attempt,
        "stage": stage,
        "error": f"{type(exc).__name__}: {message}",
    }
    if is_outage(exc):
        record["outage"] = True
    return record


__all__ = [
    "LlmRefusalError",
    "LlmResult",
    "ask_structured",
    "first_json_object",
    "is_outage",
    "is_timeout",
    "json_instruction",
    "parse_json_reply",
]
