"""Fixtures for end-to-end tests: a real ``langgraph dev`` server on a free loopback port,
started from the repository root with its ``langgraph.json``, and a small Markdown folder.

The server runs in its own process group so that stopping it also stops the worker it
spawns; it is stopped after the module's tests, pass or fail."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.langgraph_dev import (
    REPO,
    DevServer,
    DevServerError,
    offline_env,
    start_dev_server,
    stop_dev_server,
    venv_binary,
)

__all__ = ["REPO", "DevServer", "make_docs", "offline_env", "venv_binary"]

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


def make_docs(root: Path) -> Path:
    for rel, text in DOCS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    return root


@pytest.fixture(scope="module")
def docs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_docs(tmp_path_factory.mktemp("docs"))


@pytest.fixture(scope="module")
def chat_port() -> int:
    """The port of the tests' OpenAI-compatible chat server: a served graph may use only the
    model servers it was started with, so the dev server's allow-list names this one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's ``KBGRAPH_RUNS_DIR``."""
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def dev_server(
    tmp_path_factory: pytest.TempPathFactory, docs_folder: Path, chat_port: int, runs_folder: Path
) -> Iterator[DevServer]:
    """The server, with the inspector mounted in it showing ``docs_folder`` (and the runs
    recorded in a folder of the test's own)."""
    log = tmp_path_factory.mktemp("langgraph-dev") / "server.log"
    env = {
        "KBGRAPH_INSPECT_FOLDERS": str(docs_folder),
        # the folders runs may name: the docs and the tests' own temporary folders
        "KBGRAPH_ALLOW_INDEX": "1",  # the runs index the tests' fresh folders
        "KBGRAPH_ALLOWED_FOLDERS": os.pathsep.join(
            [str(docs_folder), str(tmp_path_factory.getbasetemp())]
        ),
        "KBGRAPH_RUNS_DIR": str(runs_folder),  # no KBGRAPH_ALLOW_RECORD_RUNS: none recorded
        # the one import path a run may name as a retriever (a request names no other code)
        "KBGRAPH_ALLOWED_RETRIEVERS": "tests.support.lc_store:wiki",
        "KBGRAPH_ALLOWED_MODELS": f"openai_compatible:fake-chat@http://127.0.0.1:{chat_port}/v1",
    }
    try:
        server = start_dev_server(log, env=env)
    except DevServerError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        stop_dev_server(server.process)
