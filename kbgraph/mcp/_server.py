"""The MCP server: kbgraph's tools and files on the SDK's low-level ``Server``.

Arguments are validated here, against the same pydantic models whose JSON schemas the
tools list, so that every refusal is one line naming the argument and the rule (never
the value: a 10 MB query is not sent back). A tool's ``KbgraphError`` becomes an MCP tool
error (``isError``) carrying kbgraph's one-line message; anything else is logged to stderr
and reported in one line too. Tools run in worker threads: a search never blocks the
event loop, so a slow ``ask`` does not stall other requests."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import anyio
from pydantic import AnyUrl, BaseModel, ValidationError

from kbgraph import __version__
from kbgraph.errors import KbgraphError

from . import _tools
from ._bases import OpenBases
from ._schemas import (
    AskArgs,
    AskOutput,
    IndexOutput,
    KbArgs,
    KnowledgeBasesOutput,
    NoArgs,
    ReadArgs,
    ReadOutput,
    Reply,
    SearchArgs,
    SearchOutput,
    StatsOutput,
)
from ._sdk import McpError, ReadResourceContents, Server, types
from ._settings import MAX_READ_CHARS, McpSettings

logger = logging.getLogger("kbgraph.mcp")
SCHEME = "kbgraph"
_MAX_MESSAGE = 1000


@dataclass(frozen=True, slots=True)
class ToolSpec:
    run: Callable[[OpenBases, Any], BaseModel | Reply]
    arguments: type[BaseModel]
    output: type[BaseModel]
    description: str
    writes: bool = False


TOOLS: dict[str, ToolSpec] = {
    "search": ToolSpec(
        _tools.search,
        SearchArgs,
        SearchOutput,
        "Search the knowledge bases (hybrid vector + BM25). Each result has its file "
        "('source'), exact line range, section or code symbol, score, a citation string "
        "(kb/source:start-end) and its text. 'freshness' says whether an index is stale.",
    ),
    "read": ToolSpec(
        _tools.read,
        ReadArgs,
        ReadOutput,
        "Read lines of a file of a knowledge base (a 'source' of a search result), "
        "numbered as the citations number them. Only indexed files are read. The lines "
        "are the reply's second text block; the structured result says where they are from.",
    ),
    "list_knowledge_bases": ToolSpec(
        _tools.list_knowledge_bases,
        NoArgs,
        KnowledgeBasesOutput,
        "The knowledge bases served: name (the 'kb' argument of the other tools), folder, "
        "store, whether it has an index.",
    ),
    "stats": ToolSpec(
        _tools.stats,
        KbArgs,
        StatsOutput,
        "Index statistics: files, chunks, size, when it was built, its embedding model, "
        "and its freshness (files changed since).",
    ),
    "ask": ToolSpec(
        _tools.ask,
        AskArgs,
        AskOutput,
        "Answer a question from the knowledge bases: retrieval (with query rewriting and "
        "a grounding check), an answer with numbered citations [N], and the answer "
        "checked against its sources.",
    ),
    "index": ToolSpec(
        _tools.index,
        KbArgs,
        IndexOutput,
        "Bring the index of the knowledge bases up to date with their folders "
        "(incremental: only new or changed text is embedded).",
        writes=True,
    ),
}


def one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 1] + "…"


def argument_error(tool: str, exc: ValidationError, model: type[BaseModel]) -> str:
    """The first problem of ``exc`` in one line, without the value given."""
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "arguments"
    if error["type"] == "extra_forbidden":
        allowed = ", ".join(model.model_fields) or "none"
        return f"{tool}: unknown argument {where!r}; its arguments: {allowed}"
    if error["type"] == "missing":
        return f"{tool}: argument {where!r} is missing; pass it"
    return f"{tool}: argument {where!r} is not allowed: {error['msg']}"


def served_tools(settings: McpSettings) -> dict[str, ToolSpec]:
    return {name: spec for name, spec in TOOLS.items() if settings.allow_write or not spec.writes}


def tool_listing(settings: McpSettings) -> list[types.Tool]:
    return [
        types.Tool(
            name=name,
            description=spec.description,
            inputSchema=spec.arguments.model_json_schema(),
            outputSchema=spec.output.model_json_schema(),
            annotations=types.ToolAnnotations(
                readOnlyHint=not spec.writes,
                destructiveHint=False,
                idempotentHint=True,
                openWorldHint=False,
            ),
        )
        for name, spec in served_tools(settings).items()
    ]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=one_line(message))], isError=True
    )


async def call(
    bases: OpenBases, name: str, arguments: dict[str, Any] | None
) -> types.CallToolResult:
    """Run tool ``name``: its structured output, or a one-line tool error."""
    tools = served_tools(bases.settings)
    spec = tools.get(name)
    if spec is None:
        why = " (served only with --allow-write)" if name in TOOLS else ""
        shown = one_line(name)[:100]
        return _error(f"unknown tool {shown!r}{why}; tools: {', '.join(tools)}")
    try:
        parsed = spec.arguments.model_validate(arguments or {})
    except ValidationError as exc:
        return _error(argument_error(name, exc, spec.arguments))
    try:
        result = await anyio.to_thread.run_sync(spec.run, bases, parsed)
    except KbgraphError as exc:
        return _error(f"{name}: {exc}")
    except Exception as exc:  # a bug or a library's failure: logged whole, said in one line
        logger.exception("tool %s failed", name)
        return _error(f"{name} failed: {type(exc).__name__}: {exc}")
    return _result(result)


def _result(result: BaseModel | Reply) -> types.CallToolResult:
    """The structured output, its JSON as the first text block (as the MCP spec asks of
    tools with an output schema, for clients that read only ``content``) and a reply's
    body as the second."""
    output, body = (result.output, result.body) if isinstance(result, Reply) else (result, None)
    data = output.model_dump(mode="json")
    text = json.dumps(data, ensure_ascii=False, indent=1)
    blocks: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    if body is not None:
        blocks.append(types.TextContent(type="text", text=body))
    return types.CallToolResult(content=blocks, structuredContent=data)


def resource_uri(kb: str, path: str) -> str:
    return f"{SCHEME}://{quote(kb, safe='')}/{quote(path)}"


def _resources(bases: OpenBases) -> list[types.Resource]:
    out = []
    for base in bases.settings.knowledge_bases:
        try:
            files = bases.get(base).indexed_files()
        except KbgraphError:  # no index yet: nothing to list
            continue
        out += [
            types.Resource(
                uri=AnyUrl(resource_uri(base.name, rel)),
                name=f"{base.name}/{rel}",
                mimeType="text/plain",
                size=record.size,
            )
            for rel, record in sorted(files.items())
        ]
    return out


def _read_resource(bases: OpenBases, uri: str) -> str:
    from ._paths import source_of

    parts = urlsplit(uri)
    if parts.scheme != SCHEME or not parts.netloc or parts.query or parts.fragment:
        raise KbgraphError(f"{one_line(uri)[:200]!r} is not a {SCHEME}://KB/PATH resource")
    kb, path = unquote(parts.netloc), unquote(parts.path.removeprefix("/"))
    _, text = source_of(bases, kb, path)
    whole = "\n".join(text.lines)
    if len(whole) > MAX_READ_CHARS:
        # A resource is the whole file or nothing: a silent cut would read as all of it.
        raise KbgraphError(
            f"{path} has {len(whole):,} characters, more than the {MAX_READ_CHARS:,} a "
            f"resource read returns; read it in parts with the read tool (path {path!r}, "
            "line_start, line_end)"
        )
    return whole


def _refuse(message: str) -> McpError:
    return McpError(types.ErrorData(code=types.INVALID_PARAMS, message=one_line(message)))


def build_server(settings: McpSettings) -> Server[Any, Any]:
    """An MCP server over ``settings``' knowledge bases (run it with :func:`serve_stdio`,
    :func:`serve_http`, or any transport of the MCP SDK)."""
    return server_over(OpenBases(settings))


def server_over(bases: OpenBases) -> Server[Any, Any]:
    settings = bases.settings
    server: Server[Any, Any] = Server(
        "kbgraph",
        version=__version__,
        instructions="Search the knowledge bases with 'search', then 'read' the lines a "
        "result cites; cite sources as the results' 'citation' strings.",
    )

    @server.list_tools()
    async def _list_tools() -> list[types.Tool]:
        return tool_listing(settings)

    @server.call_tool(validate_input=False)
    async def _call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await call(bases, name, arguments)

    @server.list_resources()
    async def _list_resources() -> list[types.Resource]:
        return await anyio.to_thread.run_sync(_resources, bases)

    @server.list_resource_templates()
    async def _templates() -> list[types.ResourceTemplate]:
        return [
            types.ResourceTemplate(
                uriTemplate=f"{SCHEME}://{{kb}}/{{path}}",
                name="file",
                description="A file of a knowledge base, as its index read it",
                mimeType="text/plain",
            )
        ]

    @server.read_resource()
    async def _read(uri: AnyUrl) -> list[ReadResourceContents]:
        try:
            text = await anyio.to_thread.run_sync(_read_resource, bases, str(uri))
        except KbgraphError as exc:
            raise _refuse(str(exc)) from None
        except Exception as exc:
            logger.exception("reading %s failed", uri)
            raise _refuse(f"reading the resource failed: {type(exc).__name__}: {exc}") from None
        return [ReadResourceContents(content=text, mime_type="text/plain")]

    return server


__all__ = [
    "SCHEME",
    "TOOLS",
    "build_server",
    "call",
    "resource_uri",
    "server_over",
]
