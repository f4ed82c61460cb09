"""Reading a ``ChatGGUF`` reply made under a tool plan (see ``_gguf_tools``).

The reply is one JSON object. A ``{"response": "..."}`` string is given out as it streams
(what the user reads arrives token by token); tool calls are given out whole at the end, as
LangChain's ``tool_call_chunks``, each with an id. A reply cut off at ``max_tokens`` is not
complete JSON: the text of a response so far is kept, and a call is reported as cut (never
run with half its arguments).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.tool import invalid_tool_call
from langchain_core.utils.json import parse_partial_json

from ._gguf_tools import ToolPlan

_RESPONSE_START = re.compile(r'\s*\{\s*"response"\s*:\s*"')
_STRING = json.JSONDecoder()
# The longest escape a JSON string can end in mid-way: a surrogate pair, \uXXXX\uXXXX.
_LONGEST_ESCAPE = 12


@dataclass
class ToolCall:
    name: str | None  # None only in a reply cut off before the name
    args: str  # JSON text of the arguments
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")


@dataclass
class ParsedReply:
    """``content`` (the response text, or the JSON of a response under a schema),
    ``calls``, and whether the JSON was complete; ``raw`` is the reply as generated."""

    raw: str
    content: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    complete: bool = True


class ReplyReader:
    """Feed the generated text piece by piece; :meth:`feed` returns the response text to
    give out now, :meth:`finish` the whole reply."""

    def __init__(self, plan: ToolPlan) -> None:
        self._raw = ""
        self._streamed = ""
        self._streams_text = plan.choice == "auto" and plan.response_schema is None
        self._plan = plan

    @property
    def streamed(self) -> str:
        return self._streamed

    def feed(self, text: str) -> str:
        self._raw += text
        if not self._streams_text or not text:
            return ""
        so_far = response_so_far(self._raw)
        if so_far is None or not so_far.startswith(self._streamed):
            return ""
        new = so_far[len(self._streamed) :]
        self._streamed = so_far
        return new

    def finish(self) -> ParsedReply:
        reply = parse_reply(self._raw)
        if self._plan.choice == "required" and not reply.complete and not reply.calls:
            # Cut before the key: a reply that had to be a call is a cut call all the same.
            only = self._plan.allowed[0] if len(self._plan.allowed) == 1 else None
            reply.calls.append(ToolCall(only, "{}"))
        return reply


def parse_reply(raw: str) -> ParsedReply:
    """The content and calls of a whole reply (a cut one: as much as can be read)."""
    reply = ParsedReply(raw=raw)
    try:
        value: Any = json.loads(raw)
    except ValueError:
        reply.complete = False
        value = parse_partial_json(raw) if raw.strip() else None
    if not isinstance(value, dict):
        reply.content = raw
        return reply
    if "response" in value:
        response = value["response"]
        if isinstance(response, str):
            reply.content = response
        elif reply.complete:
            reply.content = json.dumps(response, ensure_ascii=False)
        else:  # a cut object: its text as generated, not a completed guess
            reply.content = raw.split(":", 1)[1].strip() if ":" in raw else ""
        return reply
    calls = value.get("tool_calls") if "tool_calls" in value else [value.get("tool_call")]
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        name = call.get("name") if isinstance(call.get("name"), str) else None
        arguments = call.get("arguments")
        args = json.dumps(arguments if isinstance(arguments, dict) else {}, ensure_ascii=False)
        if name is not None or not reply.complete:  # cut before its name: still a cut call
            reply.calls.append(ToolCall(name, args))
    return reply


def repeats_answered(reply: ParsedReply, messages: Sequence[BaseMessage]) -> bool:
    """Every call of ``reply`` was made (same name, same arguments) since the last human
    message."""
    made: list[tuple[str, Any]] = []
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage):
            made.extend((c["name"], c["args"]) for c in message.tool_calls)
    return (
        reply.complete
        and bool(reply.calls)
        and bool(made)
        and all((c.name, json.loads(c.args)) in made for c in reply.calls)
    )


def with_cut_calls(message: BaseMessage, reply: ParsedReply, max_tokens: int) -> BaseMessage:
    """The reply's calls as ``invalid_tool_calls``: cut off, they must not run."""
    error = (
        f"the tool call was cut off at max_tokens={max_tokens} before its arguments were "
        "complete; raise max_tokens"
    )
    invalid = [invalid_tool_call(name=c.name, args=reply.raw, id=c.id, error=error)
               for c in reply.calls]  # fmt: skip
    return message.model_copy(update={"tool_calls": [], "invalid_tool_calls": invalid})


def response_so_far(raw: str) -> str | None:
    """The text of a ``{"response": "...`` reply generated so far (an escape cut in the
    middle left out until it is whole), or ``None`` for any other reply."""
    start = _RESPONSE_START.match(raw)
    if start is None:
        return None
    rest = raw[start.end() :]
    try:
        text, _ = _STRING.raw_decode('"' + rest)  # the string is closed
        return str(text)
    except ValueError:
        pass
    for cut in range(min(len(rest), _LONGEST_ESCAPE) + 1):
        try:
            text = json.loads('"' + rest[: len(rest) - cut] + '"')
        except ValueError:
            continue
        if text and "\ud800" <= text[-1] <= "\udbff":  # half a surrogate pair
            text = text[:-1]
        return str(text)
    return None


__all__ = [
    "ParsedReply",
    "ReplyReader",
    "ToolCall",
    "parse_reply",
    "repeats_answered",
    "response_so_far",
    "with_cut_calls",
]
