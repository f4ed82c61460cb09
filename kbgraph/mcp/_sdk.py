"""The MCP SDK's server side, imported without the rest of the SDK: the one module of
``kbgraph.mcp`` that imports the SDK at its top, for the others.

``import mcp.types`` first runs ``mcp/__init__.py``, which imports the SDK's client (its
sessions, its stdio and session-group clients), and ``mcp/server/__init__.py`` imports
FastMCP (pydantic-settings, Starlette, sse-starlette, uvicorn): ~150 modules that ``kbgraph
mcp`` never uses, loaded on every start of an MCP client's server (issue 44). So before the
SDK is imported, those two packages are put in ``sys.modules`` with their ``__init__`` not
yet run: their submodules import as usual, and a package's ``__init__`` runs on the first
name asked of the package that is not one of its loaded submodules (``from mcp import
ClientSession`` works in the same process as before). A package imported already, whole,
is left as it is."""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any

DEFERRED = ("mcp", "mcp.server")
"""The packages whose ``__init__`` waits for the first name asked of it."""

_lock = threading.Lock()


def defer_init(name: str) -> None:
    """Put package ``name`` in ``sys.modules`` with its ``__init__`` run on first use (see
    the module docstring); nothing when it is imported already. ``ModuleNotFoundError``
    when it is not installed."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(attribute: str) -> Any:
        with _lock:
            if module.__dict__.pop("__getattr__", None) is not None:  # once, by one thread
                loader.exec_module(module)
        return getattr(module, attribute)

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


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

__all__ = ["DEFERRED", "defer_init"]
