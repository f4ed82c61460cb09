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

import contextlib
import errno
import io
import logging
import os
import select
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TextIO, cast

import anyio

from kbgraph.errors import ConfigError

from ._bases import OpenBases
from ._defer import STDIO_UNUSED, defer_init
from ._settings import McpSettings

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.transport_security import TransportSecuritySettings

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


def defer_unused() -> None:
    """Defer what the SDK's server imports and a stdio server never calls (see
    ``_defer.STDIO_UNUSED``); one not installed is nothing to defer."""
    for name in STDIO_UNUSED:
        with contextlib.suppress(ModuleNotFoundError):
            defer_init(name)


def _server(bases: OpenBases) -> Server[Any, Any]:
    """The server over ``bases``; the SDK is imported here, with a word on a missing one."""
    require_sdk()
    from ._server import server_over

    return server_over(bases)


def serve_stdio(settings: McpSettings) -> None:
    """Serve over stdin/stdout until the client closes stdin, or goes away (its end of
    stdout closed, while replies are written or while the server waits for a request: a
    normal end too, without a traceback)."""
    protocol = protocol_stdout()
    out = anyio.wrap_file(protocol)
    lines = client_lines(sys.stdin.fileno(), protocol.fileno())
    bases = OpenBases(settings)
    defer_unused()
    server = _server(bases)
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with stdio_server(stdin=lines, stdout=out) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(run)
    except BaseException as exc:
        if not client_left(exc):
            raise
        _drop(protocol)
    finally:
        bases.close()


# How long the thread that waits for stdin waits at a time: the longest a cancelled read
# (Ctrl-C, a task that failed) keeps the server from ending.
_WAIT_S = 1.0
_READ_BYTES = 1 << 16


class ClientLines:
    """The client's lines on stdin, for the SDK's stdio transport, and a
    ``BrokenPipeError`` (a client that left, :func:`client_left`) as soon as the client's
    end of stdout is closed.

    The SDK reads stdin in a worker thread that a cancellation must wait for, and nothing
    looks at stdout while no reply is written: a client that closed its end of stdout but
    kept stdin open left the server running forever (issue 42), idle or after a reply had
    failed with a broken pipe. Here the thread waits at most :data:`_WAIT_S` at a time, in
    one ``poll`` of stdin and stdout, and reads only once stdin is readable; the write end
    of a pipe whose reader went away polls as an error (as ``stdout_closed`` tells of a
    command's stdout)."""

    def __init__(self, stdin: int, stdout: int) -> None:
        self.stdin = stdin
        self.stdout = stdout

    async def __aiter__(self) -> AsyncIterator[str]:
        pending = b""
        while chunk := await self._chunk():
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                yield line.decode("utf-8", errors="replace")  # as the SDK decodes stdin
        if pending:
            yield pending.decode("utf-8", errors="replace")

    async def _chunk(self) -> bytes:
        """stdin's next bytes, ``b""`` at its end."""
        while (chunk := await anyio.to_thread.run_sync(self._wait_and_read)) is None:
            pass  # nothing yet; each wait is a checkpoint, where a cancelled read ends
        return chunk

    def _wait_and_read(self) -> bytes | None:
        """In a worker thread: what stdin holds once it is readable, ``None`` after
        :data:`_WAIT_S` without anything; a ``BrokenPipeError`` when stdout is gone."""
        poller = select.poll()
        poller.register(self.stdin, select.POLLIN)
        poller.register(self.stdout, 0)  # errors and hang-ups are reported unasked
        events = dict(poller.poll(int(_WAIT_S * 1000)))
        if events.get(self.stdout, 0) & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
            raise BrokenPipeError(errno.EPIPE, "the client closed its end of stdout")
        if events.get(self.stdin):  # readable, or hung up: a read ends at once
            return os.read(self.stdin, _READ_BYTES)
        return None


def client_lines(stdin: int, stdout: int) -> anyio.AsyncFile[str] | None:
    """What the SDK's ``stdio_server`` reads the client from: :class:`ClientLines` (the
    SDK only iterates its lines), or ``None`` (the SDK's own reader of stdin) where there
    is no ``poll`` (Windows)."""
    if not hasattr(select, "poll"):
        return None
    return cast("anyio.AsyncFile[str]", ClientLines(stdin, stdout))


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
    from starlette.applications import Starlette
    from starlette.routing import Route

    bases = OpenBases(settings)
    server = _server(bases)
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=host_checks(allowed_hosts),
        stateless=stateless,
        json_response=stateless,
    )

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        try:
            async with manager.run():
                yield
        finally:
            bases.close()

    return Starlette(routes=[Route(MCP_PATH, endpoint=_Endpoint(manager))], lifespan=lifespan)


def host_checks(allowed_hosts: tuple[str, ...]) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection answering ``allowed_hosts`` (names, any port)
    and browser origins on them; any other Host gets 421, any other Origin 403."""
    from mcp.server.transport_security import TransportSecuritySettings

    shown = [f"[{h}]" if ":" in h else h for h in allowed_hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in shown] + shown,
        allowed_origins=[f"http://{h}:*" for h in shown] + [f"http://{h}" for h in shown],
    )


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
    "ClientLines",
    "OneLineLogs",
    "client_left",
    "client_lines",
    "host_checks",
    "http_app",
    "one_line_logs",
    "protocol_stdout",
    "require_sdk",
    "serve_http",
    "serve_stdio",
]
