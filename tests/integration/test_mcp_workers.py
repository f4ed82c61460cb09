"""``kbgraph mcp --http --workers 2`` as a real process on 127.0.0.1, driven by the MCP
SDK's client: searches answered (folder index and PostgreSQL), requests answered by more
than one worker (the ``kbgraph-worker`` header names the pid that answered), the Host and
Origin checks kept, SIGTERM stopping every worker (exit 0, none left), and a crashed
worker reported (exit 1) with the others stopped."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import psutil
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from kbgraph.mcp._workers import WORKER_HEADER
from kbgraph.retrieval import KnowledgeBase
from tests.support.mcp_http import mcp_http_server

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "docs"
ACCEPT = {"Accept": "application/json, text/event-stream"}
SEARCH = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "search", "arguments": {"query": "retry policy", "top_k": 1}},
}


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mcp-workers") / "docs"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".kbgraph"))
    KnowledgeBase(folder, embedding="fake").index()
    return folder


@contextmanager
def workers_server(*args: str) -> Iterator[tuple[subprocess.Popen[str], str, list[int]]]:
    """The server, its URL and its workers' pids (the parent's children but the
    multiprocessing resource tracker, which imports nothing of ours)."""
    with mcp_http_server(*args, "--workers", "2", "--embedding", "fake") as (proc, url):
        assert proc.stderr is not None
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url
        started = proc.stderr.readline()  # "kbgraph mcp: 2 workers (pids A, B), stateless"
        assert "2 workers" in started, started
        pids = [int(p) for p in started.split("(pids ")[1].split(")")[0].split(", ")]
        yield proc, url, pids


async def _search_in_a_session(url: str) -> tuple[str, set[str]]:
    """One MCP session of the SDK's client: the first result's source, and the pids of
    the workers that answered its requests."""
    seen: set[str] = set()

    async def record(response: httpx.Response) -> None:
        seen.add(response.headers.get(WORKER_HEADER, "none"))

    async with (
        httpx.AsyncClient(event_hooks={"response": [record]}, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        found = await session.call_tool("search", {"query": "retry policy"})
    return found.structuredContent["results"][0]["source"], seen  # type: ignore[index]


def _gone(pids: list[int]) -> bool:
    """No process of ``pids`` left (a zombie counts as gone: its parent reaps it)."""
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


async def test_two_workers_answer_the_sdk_client_and_stop_on_sigterm(docs: Path) -> None:
    with workers_server(str(docs)) as (proc, url, pids):
        answered: set[str] = set()
        results: list[tuple[str, set[str]]] = []

        async def one() -> None:
            results.append(await _search_in_a_session(url))

        for _ in range(6):  # sessions at once, each its own connections, until both answered
            async with anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(one)
            assert {source for source, _ in results} == {"docs/configuration.md"}
            answered |= {pid for _, seen in results for pid in seen}
            if len(answered) > 1:
                break
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
    assert answered == {str(p) for p in pids}, (answered, pids)
    assert _gone(pids)
    assert "Traceback" not in err, err


def test_the_host_and_origin_checks_hold_on_every_worker(docs: Path) -> None:
    with workers_server(str(docs)) as (_, url, pids), httpx.Client(timeout=30) as client:
        asked = [
            client.post(url, headers={**ACCEPT, "Host": "evil.example"}, json=SEARCH)
            for _ in range(8)
        ]
        origin = {**ACCEPT, "Origin": "http://evil.example"}
        cross = [client.post(url, headers=origin, json=SEARCH) for _ in range(4)]
        fine = client.post(url, headers=ACCEPT, json=SEARCH)
    assert {r.status_code for r in asked} == {421}  # a DNS name rebound to 127.0.0.1
    assert {r.status_code for r in cross} == {403}  # a web page of another site
    assert fine.status_code == 200 and fine.json()["result"]["isError"] is False
    assert fine.headers[WORKER_HEADER] in {str(p) for p in pids}


def test_a_crashed_worker_is_reported_and_stops_the_others(docs: Path) -> None:
    with workers_server(str(docs)) as (proc, _, pids):
        os.kill(pids[1], signal.SIGKILL)
        assert proc.wait(30) == 1
        assert proc.stderr is not None
        err = proc.stderr.read()
    assert f"worker 2 (pid {pids[1]}) was killed by SIGKILL" in err, err
    assert _gone(pids)


def test_a_killed_parent_leaves_no_worker_behind(docs: Path) -> None:
    with workers_server(str(docs)) as (proc, _, pids):
        proc.kill()  # SIGKILL: the parent cannot stop its workers
        proc.wait()
        deadline = time.monotonic() + 10
        while not _gone(pids) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert _gone(pids)


async def test_two_workers_serve_one_knowledge_base_in_postgresql(
    tmp_path: Path, pg_url: str
) -> None:
    folder = tmp_path / "ops"
    folder.mkdir()
    (folder / "notes.md").write_text("# Ops\n\nRestart the harbor gateway with make restart.\n")
    KnowledgeBase(folder, embedding="fake", store=pg_url).index()
    with workers_server(str(folder), "--store", pg_url) as (_, url, _pids):
        sources = [await _search_in_a_session(url) for _ in range(3)]
    assert {source for source, _ in sources} == {"notes.md"}


async def test_one_stateless_process_answers_without_a_session(docs: Path) -> None:
    """``--stateless`` alone: the single process serves as each worker does (no session
    id, JSON replies), for servers behind a load balancer."""
    with mcp_http_server(str(docs), "--embedding", "fake", "--stateless") as (_, url):
        source, seen = await _search_in_a_session(url)
        reply = httpx.post(url, headers=ACCEPT, json=SEARCH, timeout=30)
    assert source == "docs/configuration.md" and seen == {"none"}  # no worker header
    assert reply.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in reply.headers
