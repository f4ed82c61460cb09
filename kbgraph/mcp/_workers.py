"""``kbgraph mcp --http --workers N``: N processes answering on one listening socket.

Python runs one search at a time per process (one GIL), so more cores take more
processes. The command binds the socket, then starts N workers (``spawn``: a fresh
interpreter each, no state copied from the parent) that inherit it and ``accept`` on it
in turn; the kernel hands each connection to one of them. An MCP session lives in the
process that opened it, so workers serve statelessly (every request on its own, JSON
replies): any worker answers any request. Every worker opens the knowledge bases itself;
they share the store (PostgreSQL, or the folder index read through a memory map).

The parent only supervises. SIGTERM or Ctrl-C stops every worker (SIGTERM, each finishes
what it is answering), then the parent exits 0 (SIGTERM) or 130 (Ctrl-C); a worker that
ends without being asked to is reported and stops the others (exit 1): a service
manager restarts the whole server, not half of it. A worker whose parent is gone (killed
with SIGKILL) stops on its own within a second, so no worker is left behind."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from kbgraph.errors import ServerWorkerError

from ._settings import McpSettings

WORKER_HEADER = "kbgraph-worker"  # the answering worker's pid, on every reply
STOP_TIMEOUT_S = 10.0  # how long a worker may take to finish its replies before SIGKILL
GRACEFUL_S = 5  # uvicorn's own wait for open connections, inside STOP_TIMEOUT_S
ORPHAN_POLL_S = 1.0


class _Stop(Exception):
    """Raised in the parent by SIGTERM, to leave its wait for the workers."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signum)


def serve_workers(
    settings: McpSettings, sock: socket.socket, allowed_hosts: tuple[str, ...], count: int
) -> None:
    """Serve on ``sock`` from ``count`` worker processes until SIGTERM (returns), Ctrl-C
    (``KeyboardInterrupt``) or a worker's end (:class:`ServerWorkerError`)."""
    context = multiprocessing.get_context("spawn")
    parent = os.getpid()
    workers = [
        context.Process(
            target=run_worker,
            args=(k, settings, sock, allowed_hosts, parent),
            name=f"worker {k}",
        )
        for k in range(1, count + 1)
    ]
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    try:
        for worker in workers:
            worker.start()
        sock.close()  # the workers hold it now; the parent never accepts
        pids = ", ".join(str(w.pid) for w in workers)
        print(f"kbgraph mcp: {count} workers (pids {pids}), stateless", file=sys.stderr)
        _watch(workers)
    except _Stop:
        pass  # asked to stop: a clean end
    finally:
        # Every worker is reaped, whatever signal comes next (a second Ctrl-C included).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
        stop_all(workers)
        signal.signal(signal.SIGINT, interrupt)
        signal.signal(signal.SIGTERM, previous)


def _watch(workers: Sequence[BaseProcess]) -> None:
    """Wait until a worker ends; it was not asked to, so that is a failure."""
    by_sentinel = {w.sentinel: w for w in workers}
    ready = wait(list(by_sentinel))
    ended = by_sentinel[ready[0]]  # type: ignore[index]
    # Its sentinel closes while it exits, a moment before it can be reaped.
    ended.join(STOP_TIMEOUT_S)
    raise ServerWorkerError(
        f"{ended.name} (pid {ended.pid}) {describe_end(ended.exitcode)}; stopped the other "
        "workers (see the lines above for its reason); start the server again"
    )


def describe_end(exitcode: int | None) -> str:
    if exitcode is None:
        return "is still running"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}"
    return f"exited with code {exitcode}"


def stop_all(workers: Sequence[BaseProcess], timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM to every live worker, then SIGKILL to those still running after
    ``timeout`` seconds; every worker is reaped (no zombie, no orphan)."""
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    deadline = time.monotonic() + timeout
    for worker in workers:
        if worker.pid is None:
            continue  # never started
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive():
            print(f"kbgraph mcp: {worker.name} did not stop; killed", file=sys.stderr)
            worker.kill()
            worker.join()


def run_worker(
    index: int,
    settings: McpSettings,
    sock: socket.socket,
    allowed_hosts: tuple[str, ...],
    parent: int,
) -> None:
    """A worker's body: serve statelessly on ``sock`` until SIGTERM or the parent's end."""
    import uvicorn

    from kbgraph._exit_codes import EXIT_CODES
    from kbgraph.errors import KbgraphError

    from ._transport import http_app, one_line_logs

    # Ctrl-C reaches the whole process group: the parent alone decides, and stops the
    # workers with SIGTERM (see _WorkerServer).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    prefix = f"kbgraph mcp worker {index}: "
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format=prefix + "%(message)s")
    logging.getLogger("mcp.server.lowlevel.server").setLevel(logging.ERROR)
    one_line_logs()
    try:
        app = pid_header(http_app(settings, allowed_hosts, stateless=True))
    except KbgraphError as exc:
        print(f"{prefix}{exc}", file=sys.stderr)
        sys.exit(next((c for t, c in EXIT_CODES.items() if isinstance(exc, t)), 1))
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=GRACEFUL_S)
    server = _worker_server(config)
    _stop_when_orphaned(parent, lambda: setattr(server, "should_exit", True))
    server.run(sockets=[sock])


def _worker_server(config: Any) -> Any:
    """A uvicorn server that stops on SIGTERM alone. uvicorn's own also takes SIGINT (which
    every worker gets on Ctrl-C, sent to the process group) and raises the signal again
    once stopped (a worker would die of it rather than exit 0)."""
    import uvicorn

    class WorkerServer(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            previous = signal.signal(signal.SIGTERM, self.handle_exit)
            try:
                yield
            finally:
                signal.signal(signal.SIGTERM, previous)

    return WorkerServer(config)


def _stop_when_orphaned(parent: int, stop: Callable[[], None]) -> None:
    """Call ``stop`` once ``parent`` is no longer this process's parent (it was killed
    without stopping its workers): polled, since no signal says so on every system."""

    def poll() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_POLL_S)
        stop()

    threading.Thread(target=poll, name="orphan-watch", daemon=True).start()


def pid_header(app: Any) -> Any:
    """``app`` with a :data:`WORKER_HEADER` on every reply: which worker answered, for an
    operator (and a test) to see requests spread over the workers."""
    value = str(os.getpid()).encode()

    async def with_header(scope: Any, receive: Any, send: Any) -> None:
        async def send_with_pid(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", ()), (WORKER_HEADER.encode(), value)]
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, send_with_pid)

    return with_header


__all__ = ["WORKER_HEADER", "describe_end", "pid_header", "run_worker", "serve_workers", "stop_all"]
