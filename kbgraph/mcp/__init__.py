"""``kbgraph mcp``: kbgraph's knowledge bases for any agent, over the Model Context
Protocol (stdio for desktop clients and editors, streamable HTTP on loopback).

Tools (typed input and output schemas, structured results): ``search``, ``read``,
``list_knowledge_bases``, ``stats``, ``ask``, and ``index`` when writing is allowed. The
indexed files are resources (``kbgraph://KB/PATH``). Read-only by default; ``read``
serves only files of an index, inside its folder. It sits above the graphs and the evals
(``ask`` runs the chat agent), beside the CLI.

    from kbgraph.mcp import McpSettings, build_server, serve_stdio
    serve_stdio(McpSettings.from_folders(["docs/"]))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

from ._settings import MAX_QUERY_CHARS, MAX_READ_LINES, McpSettings, ServedBase

if TYPE_CHECKING:
    from ._server import build_server
    from ._transport import http_app, serve_http, serve_stdio

# The MCP SDK loads with the server, not with the settings.
__getattr__ = lazy_imports(globals())


__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_READ_LINES",
    "McpSettings",
    "ServedBase",
    "build_server",
    "http_app",
    "serve_http",
    "serve_stdio",
]
