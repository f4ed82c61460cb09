"""``kbgraph mcp ... --http --port 0`` as a real process, for the integration tests and the
load benchmark: started from the repository, its URL read from the first line of its
stdout (the port it picked), stopped when the block ends (SIGTERM, SIGKILL after a wait).

    with mcp_http_server(str(folder), "--embedding", "fake") as (process, url):
        ...                                 # url: http://127.0.0.1:PORT/mcp

Its stderr is a pipe the caller reads (``process.stderr``), or the file ``log`` (a server
that logs much would stall on a pipe nobody reads)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STOP_TIMEOUT = 30.0


class McpStartError(RuntimeError):
    """The server printed no URL; the message ends with what it wrote to stderr."""


def mcp_env(**extra: str) -> dict[str, str]:
    """The environment of a server (or a stdio client's server) run from this checkout."""
    return {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", **extra}


@contextmanager
def mcp_http_server(
    *args: str, log: Path | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``kbgraph mcp ARGS --http --port 0``, and the URL it serves at."""
    command = [sys.executable, "-m", "kbgraph", "mcp", *args, "--http", "--port", "0"]
    with log.open("w") if log is not None else nullcontext() as sink:
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if sink is None else sink,
            text=True,
            env=mcp_env(),
        )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise McpStartError(f"kbgraph mcp printed no URL: {_said(proc, log)}")
        yield proc, url
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM (what the server stops on, workers and all), SIGKILL if it hangs."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _said(proc: subprocess.Popen[str], log: Path | None) -> str:
    """The end of the server's stderr, once it has exited (or been stopped)."""
    stop(proc)
    if log is not None:
        return log.read_text(errors="replace")[-2000:]
    return proc.stderr.read()[-2000:] if proc.stderr is not None else ""


__all__ = ["REPO", "McpStartError", "mcp_env", "mcp_http_server", "stop"]
