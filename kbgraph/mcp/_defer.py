"""Packages put in ``sys.modules`` with their ``__init__`` not yet run: their submodules
import as usual, and a package's ``__init__`` runs on the first name asked of it that is not
one of its loaded submodules (``from mcp import ClientSession`` works as before). A package
imported already, whole, is left as it is. Why each is deferred is said where it is:
``_sdk`` (the SDK's own client and FastMCP) and ``serve_stdio`` (what the SDK's server
imports and a stdio server of kbgraph's never calls)."""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any

DEFERRED = ("mcp", "mcp.server")
"""The SDK's packages whose ``__init__`` waits for the first name asked of it."""

STDIO_UNUSED = ("httpx", "jsonschema")
"""Imported by the SDK's server, unused by kbgraph's over stdio: ``mcp.shared.session`` imports
httpx for one status code on a request's timeout, and httpx's ``__init__`` imports its command
line (rich, pygments, click) when those are installed; the low-level server imports
jsonschema to validate tools' input and structured output, which kbgraph's switches off
(``validate_input=False``; its tools return a ``CallToolResult``, never validated). 152
modules of a stdio server's first answer (742 before, 590 after)."""

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


__all__ = ["DEFERRED", "STDIO_UNUSED", "defer_init"]
