"""``kbgraph mcp`` as a real process driven by real clients: the MCP Python SDK's client
over stdio and over streamable HTTP on 127.0.0.1, ``langchain-mcp-adapters`` loading the
tools into a LangChain agent (the scripted model, then the packaged GGUF model calling
``search``), and stdout holding nothing but the protocol."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse, wrap_model_call
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from kbgraph.graphs._chat_models import ScriptedChatModel
from kbgraph.retrieval import KnowledgeBase
from tests.support.mcp_http import mcp_env, mcp_http_server

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "docs"
QUESTION = "How do I configure the retry policy?"


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mcp-clients") / "docs"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".kbgraph"))
    KnowledgeBase(folder, embedding="fake").index()
    return folder


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "kbgraph", "mcp", *args]


@asynccontextmanager
async def stdio_session(*args: str) -> AsyncIterator[ClientSession]:
    command = _command(*args)
    params = StdioServerParameters(command=command[0], args=command[1:], env=mcp_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_the_sdk_client_over_stdio(docs: Path) -> None:
    async with stdio_session(str(docs)) as session:
        tools = [tool.name for tool in (await session.list_tools()).tools]
        found = await session.call_tool("search", {"query": "retry policy", "top_k": 2})
        hit = found.structuredContent["results"][0]  # type: ignore[index]
        lines = await session.call_tool(
            "read", {"path": hit["source"], "line_start": hit["line_start"]}
        )
        refused = await session.call_tool("read", {"path": "../../etc/passwd"})
    assert tools == ["search", "read", "list_knowledge_bases", "stats", "ask"]
    assert hit["citation"] == f"{hit['source']}:{hit['line_start']}-{hit['line_end']}"
    assert lines.content[1].text.startswith(hit["text"].split("\n")[0])  # type: ignore[union-attr]
    assert refused.isError and "leaves the knowledge base folder" in refused.content[0].text  # type: ignore[union-attr]


def _rpc(n: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n"


def _gguf_spec() -> str:
    from tests.support.gguf import smollm2_path

    return f"gguf:{smollm2_path()}?n_ctx=2048&max_tokens=48"


@pytest.mark.parametrize("chat_model", [None, "gguf"])
def test_stdout_holds_only_the_protocol(docs: Path, chat_model: str | None) -> None:
    """Raw pipes, no client library: every line on stdout is a JSON-RPC message, whatever
    the tools did (an ask runs the agent and its answer check; with the GGUF model,
    llama.cpp loads and writes its own log from native code), and the process ends with
    stdin; logs and warnings are on stderr. The ``gguf`` case takes over 30 s (~75 s on 2
    busy cores): the server loads SmolLM2 and generates an answer, since llama.cpp's own
    native log is what could reach stdout."""
    models = ["--chat-model", _gguf_spec()] if chat_model else []
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    requests = (
        _rpc(1, "initialize", init)
        + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + "\n"
        + _rpc(2, "tools/call", {"name": "search", "arguments": {"query": "retry"}})
        + _rpc(3, "tools/call", {"name": "ask", "arguments": {"question": QUESTION}})
        + _rpc(4, "tools/call", {"name": "nope", "arguments": {}})
        + _rpc(5, "tools/call", {"name": "read", "arguments": {"path": "/etc/passwd"}})
    )
    proc = subprocess.Popen(
        _command(str(docs), "--embedding", "fake", *models),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=mcp_env(),
    )
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(requests)
        proc.stdin.flush()
        lines = [proc.stdout.readline() for _ in range(5)]  # one answer per request
        proc.stdin.close()  # the client leaves: the server ends
        proc.stdin = None
        rest, errors = proc.communicate()
    finally:
        watchdog.cancel()
    assert proc.returncode == 0, errors
    stdout = "".join(lines) + rest
    messages = [json.loads(line) for line in stdout.splitlines()]  # all JSON
    by_id = {m["id"]: m for m in messages}
    assert sorted(by_id) == [1, 2, 3, 4, 5]
    assert not by_id[2]["result"]["isError"] and by_id[3]["result"]["structuredContent"]["answer"]
    answered = by_id[3]["result"]["structuredContent"]
    assert (answered["answer_check"] is not None) == bool(chat_model), answered  # generated
    for n in (4, 5):
        assert by_id[n]["result"]["isError"] and "Traceback" not in stdout
    assert "root:" not in stdout


@contextmanager
def http_server(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    with mcp_http_server(*args) as (proc, url):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url
        yield proc, url


async def test_the_sdk_client_over_streamable_http_on_loopback(docs: Path) -> None:
    with http_server(str(docs)) as (_, url):
        async with (
            streamable_http_client(url) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            found = await session.call_tool("search", {"query": "retry policy"})
            stats = await session.call_tool("stats", {})
        rebound = httpx.post(url, headers={"Host": "evil.example:80"}, json={}, timeout=30)
    assert found.structuredContent["results"][0]["source"] == "docs/configuration.md"  # type: ignore[index]
    assert stats.structuredContent["stats"][0]["chunk_count"] > 0  # type: ignore[index]
    assert rebound.status_code in (400, 421)  # a DNS name rebound to 127.0.0.1 is refused


def test_a_host_other_than_loopback_is_refused_unless_allowed(docs: Path) -> None:
    done = subprocess.run(
        _command(str(docs), "--http", "--host", "0.0.0.0"),
        capture_output=True,
        text=True,
        env=mcp_env(),
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "not a loopback address" in done.stderr and "--allow-remote" in done.stderr


def _adapter(docs: Path) -> MultiServerMCPClient:
    command = _command(str(docs))
    return MultiServerMCPClient(
        {
            "kbgraph": {
                "transport": "stdio",
                "command": command[0],
                "args": command[1:],
                "env": mcp_env(),
            }
        }
    )


async def test_langchain_mcp_adapters_load_the_tools_into_an_agent(docs: Path) -> None:
    tools = await _adapter(docs).get_tools()
    assert {t.name for t in tools} == {"search", "read", "list_knowledge_bases", "stats", "ask"}
    call = {"name": "search", "args": {"query": "retry policy", "top_k": 2}, "id": "c1"}
    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[call]), AIMessage("Set it in harbor.toml [1].")]
    )
    agent = create_agent(model, tools)
    out = await agent.ainvoke({"messages": [HumanMessage(QUESTION)]})
    result = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert result.status == "success" and "docs/configuration.md:" in str(result.content)
    assert out["messages"][-1].text == "Set it in harbor.toml [1]."
    assert model.bound_tools and "search" in model.bound_tools


@wrap_model_call
async def search_first(
    request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
) -> ModelResponse:
    """Force a tool call at the first step (SmolLM2 alone often answers without one)."""
    if not any(isinstance(m, ToolMessage) for m in request.messages):
        request = request.override(tool_choice="any")
    return await handler(request)


async def test_the_gguf_model_calls_search_through_the_adapter(docs: Path) -> None:
    """A real model (SmolLM2 on llama.cpp) calls ``search`` through langchain-mcp-adapters
    over stdio and answers from the result. Over 30 s (~80 s on 2 busy cores): it starts
    the MCP server process and generates two replies (the tool call, then the answer) on
    the CPU; a scripted model would not prove the adapter's schema reaches a real one."""
    from kbgraph.graphs._chat_models import ChatGGUF
    from tests.support.gguf import smollm2_path

    model = ChatGGUF(model_path=str(smollm2_path()), n_ctx=3072, max_tokens=128)
    tools = [t for t in await _adapter(docs).get_tools() if t.name == "search"]
    agent = create_agent(model, tools, middleware=[search_first])
    out = await agent.ainvoke({"messages": [HumanMessage(QUESTION)]})
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results, [m.content for m in out["messages"]]
    assert results[0].name == "search" and results[0].status == "success"
    assert '"citation"' in str(results[0].content)
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls


async def test_several_knowledge_bases_in_postgresql(tmp_path: Path, pg_url: str) -> None:
    """``--store postgresql://...`` with two folders: one server, a ``kb`` argument."""
    folders = []
    for name, text in (("ops", "Restart the harbor gateway with make restart."), ("faq", "")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "notes.md").write_text(f"# {name}\n\n{text or 'The gateway restarts at noon.'}\n")
        KnowledgeBase(folder, embedding="fake", store=pg_url).index()
        folders.append(str(folder))
    async with stdio_session(*folders, "--store", pg_url) as session:
        both = await session.call_tool("search", {"query": "gateway restart"})
        one = await session.call_tool("search", {"query": "gateway restart", "kb": "faq"})
        kbs = await session.call_tool("list_knowledge_bases", {})
        lines = await session.call_tool("read", {"path": "notes.md", "kb": "ops"})
    hits = both.structuredContent["results"]  # type: ignore[index]
    assert {h["kb"] for h in hits} == {"ops", "faq"}
    assert {h["citation"] for h in hits} == {"ops:notes.md:1-3", "faq:notes.md:1-3"}
    assert [h["kb"] for h in one.structuredContent["results"]] == ["faq"]  # type: ignore[index]
    listed = kbs.structuredContent["knowledge_bases"]  # type: ignore[index]
    assert [(kb["name"], kb["store"], kb["indexed"]) for kb in listed] == [
        ("ops", "postgresql", True),
        ("faq", "postgresql", True),
    ]
    assert "make restart" in lines.content[1].text  # type: ignore[union-attr]
    assert pg_url not in str(listed)  # a URL may hold a password: never shown


def test_every_interface_answers_the_machines_addresses_and_prints_a_usable_url(
    docs: Path,
) -> None:
    # ``--host 0.0.0.0 --allow-remote`` answered 421 to every remote client (only loopback
    # names were allowed) and printed http://0.0.0.0:PORT/mcp (issue 42 hole 13). Here the
    # client dials 127.0.0.1 but names the machine's address, as a remote client would.
    with mcp_http_server(str(docs), "--host", "0.0.0.0", "--allow-remote") as (_, printed):
        url = httpx.URL(printed)
        assert url.host not in ("0.0.0.0", "") and url.path == "/mcp", url
        reply = httpx.post(
            f"http://127.0.0.1:{url.port}/mcp",
            headers={
                "Host": f"{url.host}:{url.port}",
                "Accept": "application/json, text/event-stream",
            },
            json=json.loads(_rpc(1, "initialize", _INIT)),
            timeout=30,
        )
        rebound = httpx.post(
            f"http://127.0.0.1:{url.port}/mcp", headers={"Host": "evil.example"}, json={}
        )
    assert reply.status_code == 200, reply.text
    assert rebound.status_code in (400, 421)


_INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "0"},
}


def _initialized_stdio_server(docs: Path) -> subprocess.Popen[str]:
    """A stdio server over raw pipes that has answered ``initialize``."""
    proc = subprocess.Popen(
        _command(str(docs)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=mcp_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(_rpc(1, "initialize", _INIT))
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    proc.stdin.flush()
    assert proc.stdout.readline()
    return proc


def test_a_stdio_client_that_leaves_mid_replies_ends_the_server_cleanly(docs: Path) -> None:
    # The client closes its end of stdout with 200 searches still to answer: the server
    # left a 75-line traceback and exit 1 (issue 42 hole 11); now nothing, and exit 0.
    proc = _initialized_stdio_server(docs)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    for n in range(200):
        proc.stdin.write(_rpc(10 + n, "tools/call", {"name": "search", "arguments": _QUERY}))
    proc.stdin.flush()
    proc.stdout.close()
    err = _ended(proc, 60)  # stdin stays open: the server notices that stdout is gone
    assert proc.returncode == 0, err
    assert "Traceback" not in err


_QUERY = {"query": "retry policy"}


@pytest.mark.parametrize("then", ["waits", "answers"])
def test_a_stdio_client_that_closes_stdout_but_keeps_stdin_ends_the_server(
    docs: Path, then: str
) -> None:
    # The client closes its end of stdout and keeps stdin open: the server, waiting for
    # a request ("waits") or past a reply that failed with a broken pipe ("answers"), ran
    # forever, since it only ever waited for stdin (issue 42). Now it ends within seconds
    # as for a client that leaves mid-replies: nothing on stderr, exit 0.
    proc = _initialized_stdio_server(docs)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    if then == "answers":
        proc.stdin.write(_rpc(2, "tools/call", {"name": "search", "arguments": _QUERY}))
        proc.stdin.flush()
    try:
        err = _ended(proc, 30)
    except subprocess.TimeoutExpired:
        pytest.fail("the server still runs 30 s after its client closed stdout")
    assert proc.returncode == 0, err
    assert err == ""


def _ended(proc: subprocess.Popen[str], timeout: float) -> str:
    """The stderr of a stdio server once it ended by itself within ``timeout`` (killed
    otherwise, and ``TimeoutExpired`` raised); its stdin is closed only after the wait."""
    try:
        proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.close()
    return proc.stderr.read()


async def test_an_http_client_that_ends_its_session_leaves_no_traceback(docs: Path) -> None:
    # The SDK logs an exception when a client closes its event stream (a normal end): the
    # server printed a traceback for each (issue 42 hole 11).
    with http_server(str(docs)) as (proc, url):
        async with (
            streamable_http_client(url) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("search", _QUERY)
        await anyio.sleep(1)  # the server's side of the closed stream
    assert proc.stderr is not None
    assert "Traceback" not in proc.stderr.read()
