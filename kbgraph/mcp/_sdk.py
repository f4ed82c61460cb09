"""The MCP SDK's server side, imported without the rest of the SDK: the one module of
``kbgraph.mcp`` that imports the SDK at its top, for the others.

``import mcp.types`` first runs ``mcp/__init__.py``, which imports the SDK's client (its
sessions, its stdio and session-group clients), and ``mcp/server/__init__.py`` imports
FastMCP (pydantic-settings, Starlette, sse-starlette, uvicorn): ~150 modules that ``kbgraph
mcp`` never uses, loaded on every start of an MCP client's server (issue 44). So before the
SDK is imported, those two packages are deferred (``_defer``): their ``__init__`` runs on
the first name asked of them (``from mcp import ClientSession`` works in the same process
as before)."""

from __future__ import annotations

from ._defer import DEFERRED, defer_init

for _name in DEFERRED:
    defer_init(_name)

# What kbgraph's server uses of the SDK (the stdio and HTTP transports import theirs where
# they serve, after this module).
# Lent, not exported: ``__all__`` names this module's own (an SDK exception in it would be
# one outside KbgraphError, which tests/unit/test_public_api.py refuses).
import mcp.types as types  # noqa: F401 (lent to _server)
from mcp.server.lowlevel import Server as Server
from mcp.server.lowlevel.helper_types import ReadResourceContents as ReadResourceContents
from mcp.shared.exceptions import McpError as McpError

__all__: list[str] = []
