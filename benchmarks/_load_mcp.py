"""``bench_load.py``'s sections through ``kbgraph mcp --http --store URL [--workers N]``:
agents are MCP clients (plain JSON-RPC over HTTP, one keep-alive connection and one MCP
session each: the load generator shares the cores with the server, so it is kept light);
the freshness probe searches through the server too; a meter reads the CPU seconds of
the server's processes, of PostgreSQL's and of this process (the agents, the writer,
the probe) around each row, for the sizing rule."""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from _load_corpus import _VERSION, QUERIES
from _load_open import Hits, Search
from _load_report import Section, measuring, open_notes
from _load_rows import Agents, Bench, Meter, closed_rows, open_rows, saturation_of
from _pg_server import postmaster, server_times

from tests.support.mcp_http import mcp_http_server

ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-06-18"


class McpAgent:
    """One MCP client: its own connection and session (``None`` from a stateless server)."""

    def __init__(self, url: str) -> None:
        self.url, self.ids = url, itertools.count(1)
        self.http = httpx.Client(timeout=120, headers={"Accept": ACCEPT})
        info = {"name": "bench_load", "version": "0"}
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": info}
        reply = self.http.post(url, json=self._rpc("initialize", params))
        reply.raise_for_status()
        self.headers = {"mcp-protocol-version": PROTOCOL}
        if session := reply.headers.get("mcp-session-id"):
            self.headers["mcp-session-id"] = session
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        self.http.post(url, json=note, headers=self.headers).raise_for_status()

    def _rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool's structured result; a tool error or an HTTP error raises."""
        body = self._rpc("tools/call", {"name": tool, "arguments": arguments})
        reply = self.http.post(self.url, json=body, headers=self.headers)
        reply.raise_for_status()
        message = _message(reply)
        if "error" in message:
            raise RuntimeError(f"JSON-RPC error: {message['error']}")
        result = message["result"]
        if result.get("isError"):
            raise RuntimeError(f"tool error: {result['content'][0]['text'][:200]}")
        return dict(result["structuredContent"])

    def search(self, query: str) -> Hits:
        # Every fourth query filtered by path, as the Python API's agents do.
        paths = {"paths": ["f1*"]} if QUERIES.index(query) % 4 == 3 else {}
        found = self.call("search", {"query": query, "top_k": 5, **paths})
        return [(r["source"], r["text"]) for r in found["results"]]

    def close(self) -> None:
        self.http.close()


def _message(reply: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC reply: the body (a stateless server's JSON), or the last ``data:``
    line of an event stream (a session's)."""
    if reply.headers.get("content-type", "").startswith("application/json"):
        return dict(reply.json())
    data = [line[5:].strip() for line in reply.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1]))


@dataclass
class McpServer:
    url: str
    process: subprocess.Popen[str]
    log: Path
    pids: list[int] = field(default_factory=list)

    def cpu_seconds(self) -> float:
        """CPU seconds of the server's processes (the parent and its workers)."""
        total = 0.0
        for pid in self.pids:
            try:
                t = psutil.Process(pid).cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += t.user + t.system
        return total


@contextmanager
def mcp_server(folder: Path, store: str, workers: int) -> Iterator[McpServer]:
    """``kbgraph mcp FOLDER --store STORE --http --port 0`` with ``--workers`` above 1 (one
    worker: the single-process server, as it is without the option); its log is a file
    (a pipe nobody reads would fill and stall the server)."""
    log = Path(tempfile.mkdtemp(prefix="kbgraph-load-mcp-")) / "server.log"
    extra = ["--workers", str(workers)] if workers > 1 else []
    server: McpServer | None = None
    try:
        with mcp_http_server(
            str(folder), "--store", store, "--embedding", "fake", *extra, log=log
        ) as (proc, url):
            server = McpServer(url, proc, log)
            warm = [McpAgent(url) for _ in range(4 * workers)]  # every worker opens its bases
            for agent in warm:
                agent.search(QUERIES[0])
                agent.close()
            main = psutil.Process(proc.pid)
            server.pids = [proc.pid, *(c.pid for c in main.children(recursive=True))]
            yield server
    finally:
        if left := wait_until_gone(server.pids if server is not None else []):
            print(f"  kbgraph mcp left processes {left} running", file=sys.stderr)


def mcp_agents(server: McpServer) -> Agents:
    @contextmanager
    def agents(n: int) -> Iterator[Search]:
        clients = [McpAgent(server.url) for _ in range(n)]  # sessions opened, not measured
        try:
            yield lambda k, query: clients[k].search(query)
        finally:
            for client in clients:
                client.close()

    return agents


def mcp_visible(server: McpServer) -> Any:
    """The freshness probe's search, through the server: does file ``i`` show
    ``version`` (or a newer one) yet."""
    probe, lock = McpAgent(server.url), threading.Lock()

    def visible(i: int, version: int) -> bool:
        query = {"query": f"File {i} version {version} line", "top_k": 3, "mode": "bm25"}
        with lock:
            found = probe.call("search", {**query, "paths": [f"f{i:02d}.md"]})
        texts = [r["text"] for r in found["results"]]
        seen = [int(v) for t in texts for f, v in _VERSION.findall(t) if int(f) == i]
        return bool(seen) and max(seen) >= version

    return visible


def cpu_meter(server: McpServer, store: str) -> Meter:
    """CPU seconds so far of the server, of PostgreSQL (every process of it) and of this
    process (the agents' clients, the writer, the probe)."""
    pg = postmaster(store)
    me = psutil.Process()

    def read() -> dict[str, float]:
        mine = me.cpu_times()
        return {
            "server": server.cpu_seconds(),
            "PostgreSQL": server_times(pg)[0],
            "bench": mine.user + mine.system,
        }

    return read


def sizing_note(rows: list[dict[str, Any]], workers: int) -> str:
    """Where each row's CPU went, per search and in cores, and what that makes of a core."""
    parts = []
    for r in rows:
        if "cpu_ms" not in r:
            continue
        ms, cores = r["cpu_ms"], r["cores"]
        spent = ", ".join(f"{p} {ms[p]:.1f} ms ({cores[p]:.2f} cores)" for p in ms)
        served = ms["server"] + ms["PostgreSQL"]
        per_core = 1000 / served if served else float("nan")
        parts.append(f"{r['name']}: {spent}; server + PostgreSQL {served:.1f} ms a search "
                     f"= {per_core:.0f} searches/s per core")  # fmt: skip
    one = "one process" if workers == 1 else f"{workers} worker processes"
    head = (
        f"CPU per search and cores busy ({one}; `bench` is this process: the agents' "
        "clients, the writer and the probe; read with psutil around each row): "
    )
    return head + "; ".join(parts) if parts else "No CPU figures (no row was metered)."


def wait_until_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """The pids still running after ``timeout`` seconds (a zombie counts as gone)."""
    deadline = time.monotonic() + timeout
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [p for p in left if psutil.pid_exists(p) and not _zombie(p)]
        time.sleep(0.1)
    return left


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


WRITER_NOTE = (
    "The writer is paced: {pause:g} s between its runs (each rewrites 3 files and indexes "
    "them through the Python API, in this process); freshness is measured through the "
    "server (the probe is one more MCP client)."
)


def mcp_sections(
    args: argparse.Namespace, sections: list[Section], folder: Path, store: str
) -> None:
    """For each ``--mcp-workers`` count, one server: its closed loop (saturation), then
    its open loop at ``--levels`` of that saturation."""
    for workers in args.mcp_workers:
        label = f"`kbgraph mcp --http --workers {workers}`"
        with mcp_server(folder, store, workers) as server:
            bench = Bench(folder, store, args.writer_pause, mcp_visible(server))
            bench.meter = cpu_meter(server, store)
            agents = mcp_agents(server)
            closed: list[dict[str, Any]] = []
            if "mcp" in args.section:
                with measuring(f"{label}, closed loop (saturation)", "closed", sections) as s:
                    closed = s.rows = closed_rows(label, agents, args.agents, args.seconds, bench)
                s.notes += [sizing_note(closed, workers), WRITER_NOTE.format(pause=bench.pause)]
            if "mcp-open" in args.section:
                saturation = saturation_of(closed, args.mcp_saturation)
                title = f"{label}, open loop (saturation {saturation:.1f}/s)"
                with measuring(title, "open", sections) as s:
                    s.rows = open_rows(label, agents, saturation, args, bench)
                s.notes += [open_notes(args), sizing_note(s.rows, workers)]
                s.notes += [WRITER_NOTE.format(pause=bench.pause)]
