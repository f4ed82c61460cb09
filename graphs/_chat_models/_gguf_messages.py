"""LangChain messages → the chat messages ``ChatGGUF`` sends to llama.cpp.

Chat templates of small models know only system, user and assistant turns with text, so a
conversation with tool calls is written in those (any template renders it, and no template
refuses a ``tool`` role): an assistant's calls become a sentence after its text
(``I call rag_search with {"query": "retries"}.``) and each tool result a user turn
(``rag_search returned:`` and the result; ``failed:`` for an error status), results of
one step joined into one turn so that turns still alternate. The past calls are not
written in the JSON the model must reply in: a small model copies a JSON call it sees
above instead of answering from its result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_openai_messages

from kbgraph.prompts import render_prompt


def prompt_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """OpenAI-style ``{"role", "content"}`` dicts with text content, tool calls and tool
    results written as text (see the module)."""
    out: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}
    joining_results = False
    for message in messages:
        if isinstance(message, ToolMessage):
            text = _tool_result(message, call_names)
            if joining_results:
                out[-1]["content"] += "\n\n" + text
            else:
                out.append({"role": "user", "content": text})
            joining_results = True
            continue
        joining_results = False
        for converted in _converted(message):
            if converted.get("role") == "tool":  # a tool result block inside another message
                converted = {"role": "user", "content": _text(converted.get("content"))}
            calls = converted.pop("tool_calls", None)
            if calls:
                converted["content"] = _with_calls(_text(converted.get("content")), calls)
                call_names.update((c.get("id"), c["function"]["name"]) for c in calls)
            out.append(converted)
    return out


def with_system(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """``text`` at the end of the first system message (a new one first when none)."""
    if messages and messages[0].get("role") == "system":
        first = messages[0]
        joined = "\n\n".join(part for part in (_text(first.get("content")).strip(), text) if part)
        return [{**first, "content": joined}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _converted(message: BaseMessage) -> list[dict[str, Any]]:
    if isinstance(message, AIMessage) and message.tool_calls and isinstance(message.content, list):
        # Provider blocks (Anthropic's tool_use) repeat the calls: keep the text only.
        text = [b for b in message.content if isinstance(b, str) or b.get("type") == "text"]
        message = message.model_copy(update={"content": text})
    converted = convert_to_openai_messages(message, text_format="string")
    return [dict(m) for m in (converted if isinstance(converted, list) else [converted])]


def _with_calls(text: str, calls: list[dict[str, Any]]) -> str:
    lines = [text.strip()] if text.strip() else []
    for call in calls:
        function = call["function"]
        lines.append(
            render_prompt(
                "gguf_tools_history_call",
                tool=function["name"],
                arguments=_compact_json(function.get("arguments") or "{}"),
            ).strip()
        )
    return "\n".join(lines)


def _tool_result(message: ToolMessage, call_names: dict[str, str]) -> str:
    name = message.name or call_names.get(message.tool_call_id) or "the tool"
    error = message.status == "error"
    prompt = "gguf_tools_history_error" if error else "gguf_tools_history_result"
    content = _text(_converted(message)[0].get("content"))
    return render_prompt(prompt, tool=name, content=content).strip()


def _compact_json(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False)
    except ValueError:
        return arguments


def _text(content: Any) -> str:
    """The text of a message's content (text parts of a list; other parts left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part if isinstance(part, str) else str(part.get("text") or "")
            for part in content
            if isinstance(part, str) or part.get("type") == "text"
        ]
        return "\n".join(p for p in parts if p)
    return str(content)


__all__ = ["prompt_messages", "with_system"]
