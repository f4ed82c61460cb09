"""``ChatGGUF.with_structured_output``: the three LangChain methods, each a constrained reply.

- ``json_schema`` (the default): the reply is held to the schema itself;
- ``function_calling``: a forced call of one tool whose arguments are the schema (the way
  LangChain's tool-calling models do it; the same reply under a tool-call wrapper);
- ``json_mode``: the reply is held to some JSON object; the prompt must name the keys.

Pydantic classes (v1 or v2) parse to their instances, TypedDicts and JSON schemas to dicts.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.output_parsers.openai_tools import (
    JsonOutputKeyToolsParser,
    PydanticToolsParser,
)
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_json_schema
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import BaseModel

from ._gguf_tools import tool_functions

StructuredMethod = Literal["json_schema", "function_calling", "json_mode"]
_METHODS = ("json_schema", "function_calling", "json_mode")


def structured_runnable(
    model: BaseChatModel,
    schema: dict[str, Any] | type,
    *,
    method: StructuredMethod,
    include_raw: bool,
) -> Runnable[Any, Any]:
    """``model`` bound for ``method`` and piped into the parser of ``schema``. The model is a
    ``ChatGGUF``, typed as the LangChain base that declares ``bind`` and ``bind_tools`` so
    that this module needs nothing of ``gguf.py`` (which imports it)."""
    is_model = is_basemodel_subclass(schema) if isinstance(schema, type) else False
    traced = {"kwargs": {"method": method}, "schema": schema}
    parser: Runnable[Any, Any]
    if method == "function_calling":
        name = tool_functions([schema])[0]["name"]
        bound = model.bind_tools([schema], tool_choice=name, ls_structured_output_format=traced)
        parser = (
            PydanticToolsParser(tools=[schema], first_tool_only=True)  # type: ignore[list-item]
            if is_model
            else JsonOutputKeyToolsParser(key_name=name, first_tool_only=True)
        )
    elif method in ("json_schema", "json_mode"):
        if method == "json_schema":
            json_schema = json_schema_of(schema)
            name = str(json_schema.get("title") or "reply")
            response_format: dict[str, Any] = {
                "type": "json_schema", "json_schema": {"name": name, "schema": json_schema},
            }  # fmt: skip
        else:
            response_format = {"type": "json_object"}
        bound = model.bind(response_format=response_format, ls_structured_output_format=traced)
        parser = (
            PydanticOutputParser(pydantic_object=schema)  # type: ignore[arg-type]
            if is_model
            else JsonOutputParser()
        )
    else:
        raise ValueError(f"method is {method!r}; allowed: {', '.join(_METHODS)}")
    if not include_raw:
        return bound | parser
    parsed = RunnablePassthrough.assign(
        parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
    )
    failed = RunnablePassthrough.assign(parsed=lambda _: None)
    return RunnableMap(raw=bound) | parsed.with_fallbacks([failed], exception_key="parsing_error")


def json_schema_of(schema: dict[str, Any] | type) -> dict[str, Any]:
    """The JSON schema of a pydantic class, TypedDict or JSON schema dict (an OpenAI tool /
    function dict → the schema of its arguments)."""
    if isinstance(schema, dict) and "parameters" in schema and "name" in schema:
        return dict(schema["parameters"])
    if isinstance(schema, dict) and isinstance(schema.get("function"), dict):
        return json_schema_of(schema["function"])
    if isinstance(schema, dict):
        return schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return convert_to_json_schema(schema)


def response_schema(response_format: Any) -> dict[str, Any] | None:
    """The JSON schema an OpenAI ``response_format`` holds a reply to (``None``: text)."""
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        return dict(spec.get("schema") or {"type": "object"})
    if kind == "json_object":
        return {"type": "object"}
    if kind == "text":
        return None
    raise ValueError(
        f"response_format {response_format!r} is not one ChatGGUF takes; allowed: "
        '{"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}, '
        '{"type": "json_object"}, {"type": "text"}.'
    )


__all__ = ["StructuredMethod", "json_schema_of", "response_schema", "structured_runnable"]
