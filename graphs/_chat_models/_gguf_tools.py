"""Tool calling for ``ChatGGUF``: what the model is told, and the JSON its reply must be.

llama.cpp runs the model's chat template, which for most small models knows nothing of
tools, so the tools are described in the system message and the reply is held by
constrained decoding to one JSON object of a fixed shape (the same shape llama.cpp's own
generic tool format uses):

    {"tool_call": {"name": "<a bound tool>", "arguments": {...its schema...}}}
    {"tool_calls": [{"name": ..., "arguments": ...}, ...]}          (parallel_tool_calls=True)
    {"response": "<the reply to the user>"}        (a schema instead of a string with a
                                                    response_format, as create_agent binds)

``tool_choice`` picks the branches: ``auto`` both, ``required`` (LangChain's ``any``) the
calls only, a tool's name the calls of that tool only, ``none`` no JSON at all (plain text).
The arguments are held to each tool's JSON schema, so a call always names a bound tool and
parses, unless the reply is cut off at ``max_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from kbgraph.prompts import load_prompt, render_prompt

ToolLike = dict[str, Any] | type | Callable[..., Any] | BaseTool
Choice = Literal["auto", "required", "none"]
_CHOICE_WORDS: dict[str, Choice] = {
    "auto": "auto", "none": "none", "any": "required", "required": "required",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """The bound tools (OpenAI function dicts: name, description, parameters) and what the
    reply may be: calls of ``allowed`` tools, and with ``choice="auto"`` a response too
    (a string, or ``response_schema``)."""

    tools: tuple[dict[str, Any], ...]
    choice: Choice = "auto"
    allowed: tuple[str, ...] = ()
    parallel: bool = False
    response_schema: dict[str, Any] | None = None

    @property
    def calls_tools(self) -> bool:
        return self.choice != "none" and bool(self.allowed)


def tool_functions(tools: Sequence[ToolLike]) -> list[dict[str, Any]]:
    """The OpenAI function dicts of LangChain tools (``BaseTool``, pydantic models, typed
    functions, TypedDicts, OpenAI / Anthropic tool dicts), through ``convert_to_openai_tool``."""
    functions: list[dict[str, Any]] = []
    for tool in tools:
        converted = convert_to_openai_tool(tool)
        function = converted.get("function")
        if converted.get("type") != "function" or not isinstance(function, dict):
            raise ValueError(
                f"ChatGGUF runs function tools only; {converted.get('type')!r} tools (a "
                "provider's built-in tools) have no local implementation."
            )
        functions.append(function)
    # Two definitions under one name (a pydantic class and its JSON schema) are both kept:
    # a call of that name may take the arguments of either.
    return functions


def openai_tool_choice(choice: Any, names: Sequence[str]) -> Choice | dict[str, Any]:
    """LangChain's ``tool_choice`` values in OpenAI's form: ``None`` / ``False`` / ``"auto"``
    → ``"auto"``; ``"any"`` / ``"required"`` / ``True`` → ``"required"``; ``"none"``; a tool's
    name or ``{"type": "function", "function": {"name": ...}}`` → that tool."""
    if choice is None or choice is False:
        return "auto"
    if choice is True:
        return "required"
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        kind = choice.get("type")
        if name is None and kind in _CHOICE_WORDS:
            return _CHOICE_WORDS[str(kind)]
        choice = name
    if isinstance(choice, str):
        if choice in names:
            return {"type": "function", "function": {"name": choice}}
        if choice in _CHOICE_WORDS:
            return _CHOICE_WORDS[choice]
    raise ValueError(
        f"tool_choice={choice!r} names no bound tool; allowed: 'auto', 'any' (or "
        f"'required'), 'none', or one of the bound tools: {', '.join(names) or '(none)'}."
    )


def tool_plan(
    tools: Sequence[dict[str, Any]],
    tool_choice: str | dict[str, Any] | None,
    *,
    parallel: bool = False,
    response_schema: dict[str, Any] | None = None,
) -> ToolPlan:
    """The plan of a request's ``tools``, ``tool_choice`` (OpenAI form, as ``bind_tools``
    stores it) and ``parallel_tool_calls``."""
    names = [t["name"] for t in tools]
    normalized = openai_tool_choice(tool_choice, names)
    if isinstance(normalized, dict):
        forced = str(normalized["function"]["name"])
        return ToolPlan(tuple(tools), "required", (forced,), parallel, response_schema)
    return ToolPlan(tuple(tools), normalized, tuple(names), parallel, response_schema)


def reply_schema(plan: ToolPlan, *, calls: bool = True) -> dict[str, Any]:
    """The JSON schema of a reply under ``plan`` (``$defs`` of every part moved to the top,
    each part's under its own prefix, so that references still resolve); ``calls=False``:
    of a response only."""
    defs: dict[str, Any] = {}
    options = _call_options(plan, defs) if calls else []
    if plan.choice == "auto" or not calls:
        response = plan.response_schema or {"type": "string"}
        options.append(_object(response=_hoisted(response, "response.", defs)))
    schema: dict[str, Any] = options[0] if len(options) == 1 else {"anyOf": options}
    return {**schema, "$defs": defs} if defs else schema


def _call_options(plan: ToolPlan, defs: dict[str, Any]) -> list[dict[str, Any]]:
    calls = []
    for tool in plan.tools:
        if tool["name"] in plan.allowed:
            arguments = _hoisted(_arguments_schema(tool), f"{tool['name']}.", defs)
            calls.append(_object(name={"const": tool["name"]}, arguments=arguments))
    call = calls[0] if len(calls) == 1 else {"anyOf": calls}
    if plan.parallel:
        return [_object(tool_calls={"type": "array", "items": call, "minItems": 1})]
    return [_object(tool_call=call)]


def tools_prompt(plan: ToolPlan) -> str:
    """The system-message text that describes the tools and the reply's shape."""
    tools = "\n".join(
        json.dumps(_described(tool), ensure_ascii=False)
        for tool in plan.tools
        if tool["name"] in plan.allowed
    )
    formats = [load_prompt("gguf_tools_calls" if plan.parallel else "gguf_tools_call").strip()]
    if plan.choice == "auto":
        formats.append(load_prompt("gguf_tools_response").strip())
    elif len(plan.allowed) == 1:
        formats.append(render_prompt("gguf_tools_forced", tool=plan.allowed[0]).strip())
    return render_prompt("gguf_tools_system", tools=tools, formats="\n".join(formats)).strip()


def _arguments_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's parameters; an object without ``additionalProperties`` gets ``false``, so
    that a tool without arguments is called with ``{}`` and no made-up ones."""
    schema = dict(tool.get("parameters") or {"type": "object", "properties": {}})
    if schema.get("type", "object") == "object" and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    return schema


def _described(tool: Mapping[str, Any]) -> dict[str, Any]:
    parameters = dict(tool.get("parameters") or {})
    parameters.pop("$defs", None)
    return {"name": tool["name"], "description": tool.get("description") or "",
            "parameters": parameters}  # fmt: skip


def _object(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _hoisted(schema: dict[str, Any], prefix: str, defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its ``$defs`` (added to ``defs`` as ``prefix + name``), its local
    references renamed to match."""
    own = schema.get("$defs") or schema.get("definitions")
    if not own:
        return schema
    names = {f"#/{key}/{name}": f"#/$defs/{prefix}{name}"
             for key in ("$defs", "definitions") for name in own}  # fmt: skip

    def rename(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: names.get(v, v) if k == "$ref" and isinstance(v, str) else rename(v)
                for k, v in node.items()
                if k not in ("$defs", "definitions")
            }
        if isinstance(node, list):
            return [rename(item) for item in node]
        return node

    for name, definition in own.items():
        defs[f"{prefix}{name}"] = rename(definition)
    renamed: dict[str, Any] = rename(schema)
    return renamed


__all__ = [
    "Choice",
    "ToolLike",
    "ToolPlan",
    "openai_tool_choice",
    "reply_schema",
    "tool_functions",
    "tool_plan",
    "tools_prompt",
]
