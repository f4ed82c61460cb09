"""A real ``langgraph dev`` server on a free loopback port, started from the repository root
with its ``langgraph.json``, offline; for the e2e tests and the cold-start benchmark.

    server = start_dev_server(log_path)     # returns once /ok answers
    ...                                     # drive server.url with langgraph_sdk
    stop_dev_server(server.process)

The server runs in its own process group so that stopping it also stops the worker it
spawns."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 120.0

# Nothing the server does may reach the internet: no tracing, no analytics, no license or
# metadata beacons (they only run with a key), no model downloads.
OFFLINE_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "PYTHONUNBUFFERED": "1",
}
SECRET_ENV = (
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGGRAPH_CLOUD_LICENSE_KEY",
    "LANGSMITH_CONTROL_PLANE_API_KEY",
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
)


@dataclass(frozen=True)
class DevServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


class DevServerError(RuntimeError):
    """The server exited early or never answered /ok; the message ends with its log."""


def offline_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    env.update(OFFLINE_ENV)
    env.update(extra)
    return env


def venv_binary(name: str) -> Path:
    """A console script of the running interpreter's environment (``.venv/bin/<name>``)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise DevServerError(f"{name} is not installed next to {sys.executable}; install dev")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_dev_server(
    log: Path,
    *,
    timeout: float = START_TIMEOUT,
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
) -> DevServer:
    """Start the server and wait (polling ``/ok``) until it answers; ``env``: variables
    to add to its environment; ``args``: more options of ``langgraph dev``
    (``--n-jobs-per-worker 10``)."""
    port = free_port()
    command = [str(venv_binary("langgraph")), "dev", "--no-browser", "--no-reload"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    command += ["--config", str(REPO / "langgraph.json"), *args]
    with log.open("ab") as sink:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            # The repository on the path: a context may name tests.support.* by import path.
            env=offline_env(PYTHONPATH=str(REPO), **(env or {})),
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = DevServer(f"http://127.0.0.1:{port}", process, log)
    try:
        _wait_until_ok(server, timeout)
    except BaseException:
        stop_dev_server(process)
        raise
    return server


def _wait_until_ok(server: DevServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise DevServerError(f"langgraph dev exited early:\n{_tail(server.log)}")
        try:
            if httpx.get(f"{server.url}/ok", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise DevServerError(f"langgraph dev did not answer /ok in {timeout}s:\n{_tail(server.log)}")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:]


def stop_dev_server(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


__all__ = [
    "REPO",
    "DevServer",
    "DevServerError",
    "free_port",
    "offline_env",
    "start_dev_server",
    "stop_dev_server",
    "venv_binary",
]
