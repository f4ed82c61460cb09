"""Serving: over stdio (what desktop clients and editors launch) and over streamable HTTP.

Over stdio, stdout belongs to the protocol. So before anything is served, the real stdout
is moved to a descriptor of its own that only the protocol writes, and descriptor 1 (and
``sys.stdout``) is pointed at stderr: a ``print`` anywhere, a library's progress bar or a
native library writing to descriptor 1 (llama.cpp does) lands on stderr, never between two
JSON-RPC messages.

Over HTTP the server listens on loopback unless told otherwise, and answers only the Host
names it was given (the SDK's DNS-rebinding protection): a web page cannot reach it
through a DNS name rebound to 127.0.0.1."""

from __future__ import annotations

import io
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from kbgraph.errors import ConfigError

from ._bases import OpenBases
from ._settings import McpSettings

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

MCP_PATH = "/mcp"


def protocol_stdout() -> TextIO:
    """A text stream on the process's real stdout, for the protocol alone; descriptor 1
    and ``sys.stdout`` go to stderr from now on (see the module docstring)."""
    sys.stdout.flush()
    protocol = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return io.TextIOWrapper(os.fdopen(protocol, "wb"), encoding="utf-8", newline="\n")


def require_sdk() -> None:
    """Import the server's side of the MCP SDK; a ``ConfigError`` saying what to install
    when it is missing."""
    try:
        from . import _server  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"kbgraph mcp needs the MCP SDK ({exc}); pip install 'kbgraph[mcp]'"
        ) from exc


def _server(bases: OpenBases) -> Server[Any, Any]:
    """The server over ``bases``; the SDK is imported here, with a word on a missing one."""
    require_sdk()
    from ._server import server_over

    return server_over(bases)


def serve_stdio(settings: McpSettings) -> None:
    """Serve over stdin/stdout until the client closes stdin, or goes away (its end of
    stdout closed while replies were written: a normal end too, without a traceback)."""
    protocol = protocol_stdout()
    out = anyio.wrap_file(protocol)
    bases = OpenBases(settings)
    server = _server(bases)
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with stdio_server(stdout=out) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(run)
    except BaseException as exc:
        if not client_left(exc):
            raise
        _drop(protocol)
    finally:
        bases.close()


_GONE = (
    BrokenPipeError,
    ConnectionResetError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,  # a stream the SDK closed when its client went
)


def client_left(exc: BaseException) -> bool:
    """Whether ``exc`` (an exception group of the server's tasks, nested or not) is only
    the client going away: a broken pipe or a reset connection, nothing else."""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_left(inner) for inner in exc.exceptions)
    return isinstance(exc, _GONE)


class OneLineLogs(logging.Filter):
    """Every log record one line: a record of a client that left (the SDK logs an
    exception when an HTTP client ends its event stream, a normal end) is dropped, any
    other exception is named after the message instead of printed as a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return True
        if client_left(exc):
            return False
        record.msg = f"{record.getMessage()} ({type(exc).__name__}: {exc})"
        record.args, record.exc_info, record.exc_text = (), None, None
        return True


def one_line_logs() -> None:
    """Install :class:`OneLineLogs` on every handler of the root logger."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, OneLineLogs) for f in handler.filters):
            handler.addFilter(OneLineLogs())


def _drop(protocol: TextIO) -> None:
    """Forget what is buffered for a client that left: closing would flush it into the
    broken pipe again (an 'Exception ignored' report at exit)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), protocol.fileno())
        protocol.close()
    except (OSError, ValueError):
        pass


def http_app(
    settings: McpSettings, allowed_hosts: tuple[str, ...], *, stateless: bool = False
) -> Any:
    """The Starlette app serving MCP at :data:`MCP_PATH`, answering only ``allowed_hosts``
    (names, any port) and browser origins on them. ``stateless``: every request is
    answered on its own, without an MCP session, as JSON (no event stream), so that any
    process (a worker, or a machine behind a load balancer) can answer any request."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    bases = OpenBases(settings)
    server = _server(bases)
    shown = [f"[{h}]" if ":" in h else h for h in allowed_hosts]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in shown] + shown,
        allowed_origins=[f"http://{h}:*" for h in shown] + [f"http://{h}" for h in shown],
    )
    manager = StreamableHTTPSessionManager(
        app=server, security_settings=security, stateless=stateless, json_response=stateless
    )

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        try:
            async with manager.run():
                yield
        finally:
            bases.close()

    return Starlette(routes=[Route(MCP_PATH, endpoint=_Endpoint(manager))], lifespan=lifespan)


class _Endpoint:
    """An ASGI app (not a request function: Starlette then hands it the raw ASGI call)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.manager.handle_request(scope, receive, send)


def serve_http(
    settings: McpSettings,
    sock: socket.socket,
    allowed_hosts: tuple[str, ...],
    *,
    stateless: bool = False,
) -> None:
    """Serve streamable HTTP on the listening socket ``sock`` until interrupted."""
    import uvicorn

    app = http_app(settings, allowed_hosts, stateless=stateless)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])


__all__ = [
    "MCP_PATH",
    "OneLineLogs",
    "client_left",
    "http_app",
    "one_line_logs",
    "protocol_stdout",
    "require_sdk",
    "serve_http",
    "serve_stdio",
]
