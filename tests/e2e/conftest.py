"""Fixtures for end-to-end tests: a real ``langgraph dev`` server on a free loopback port,
started from the repository root with its ``langgraph.json``, and a small Markdown folder.

The server runs in its own process group so that stopping it also stops the worker it
spawns; it is stopped after the module's tests, pass or fail."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

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

DOCS = {
    "retry.md": (
        "# Retry policy\n\n"
        "The client retries failed requests with exponential backoff.\n"
        "Set `max_attempts` in `client.toml` to change the number of retries (default 5).\n"
    ),
    "auth/tokens.md": (
        "# Tokens\n\n"
        "Access tokens expire after one hour; refresh tokens after thirty days.\n"
        "Rotate the signing key with `kbgraph-auth rotate`.\n"
    ),
    "über/straße.md": (
        "# Straßenverzeichnis\n\r\nDie Größe des Caches wird in Megabyte angegeben.\r\n"
    ),
}


@dataclass(frozen=True)
class DevServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


def offline_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    env.update(OFFLINE_ENV)
    env.update(extra)
    return env


def venv_binary(name: str) -> Path:
    """A console script of the running interpreter's environment (``.venv/bin/<name>``)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.fail(f"{name} is not installed next to {sys.executable}; install the dev extra")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_docs(root: Path) -> Path:
    for rel, text in DOCS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    return root


@pytest.fixture(scope="module")
def docs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_docs(tmp_path_factory.mktemp("docs"))


def _wait_until_ok(server: DevServer) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"langgraph dev exited early:\n{server.log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{server.url}/ok", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(
        f"langgraph dev did not answer /ok in {START_TIMEOUT}s:\n{server.log.read_text()[-4000:]}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    port = free_port()
    log = tmp_path_factory.mktemp("langgraph-dev") / "server.log"
    command = [
        str(venv_binary("langgraph")),
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--config",
        str(REPO / "langgraph.json"),
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=offline_env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = DevServer(f"http://127.0.0.1:{port}", process, log)
    try:
        _wait_until_ok(server)
        yield server
    finally:
        _stop(process)
