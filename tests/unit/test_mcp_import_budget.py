"""What ``kbgraph mcp`` imports to its first answer over stdio (issue 44 item 2): every MCP
client start pays for it. Counted in modules, not milliseconds. ``import mcp.types`` ran the
SDK's ``__init__``, which loads its client, and ``mcp.server``'s, which loads FastMCP with
pydantic-settings, Starlette, sse-starlette and uvicorn; ``kbgraph.mcp._sdk`` defers both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kbgraph.retrieval import KnowledgeBase

# The SDK's parts a stdio server never uses (the HTTP transport imports its own on use).
NEVER = (
    "mcp.client",
    "mcp.server.fastmcp",
    "mcp.server.sse",
    "mcp.server.streamable_http",
    "pydantic_settings",
    "starlette",
    "sse_starlette",
    "uvicorn",
    "torch",
    "transformers",
    # What the SDK's server imports and never calls here (kbgraph.mcp._defer.STDIO_UNUSED):
    # httpx's client and its command line, jsonschema's validators.
    "httpx._client",
    "httpx._main",
    "rich",
    "pygments",
    "jsonschema.validators",
    "referencing",
)
# 590 measured at the change (Python 3.11, mcp 1.30, every extra installed; 742 before, with
# httpx, its command line and jsonschema; 909 before that, the SDK's client and FastMCP with
# its HTTP stack loaded): room for a few, not for a library.
MODULE_BUDGET = 620

_CHILD = """
import atexit, json, sys
def report():
    with open({out!r}, "w") as f:
        json.dump(sorted(sys.modules), f)
atexit.register(report)
sys.argv = ["kbgraph", "mcp", {folder!r}, "--embedding", "none"]
from kbgraph.cli import main
main()
"""


def _rpc(n: int, method: str, params: dict[str, object]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, object]]:
    """The modules of a ``kbgraph mcp`` that answered one BM25 ``search``, and the answer."""
    root = tmp_path_factory.mktemp("mcp-cold")
    folder = root / "docs"
    folder.mkdir()
    (folder / "retry.md").write_text(
        "# Retry policy\n\nRetries back off exponentially, up to 5 attempts.\n", encoding="utf-8"
    )
    KnowledgeBase(folder, embedding=None).index()
    out = root / "modules.json"
    client = {"name": "t", "version": "0"}
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    messages = (
        _rpc(1, "initialize", init)
        + '{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
        + _rpc(2, "tools/call", {"name": "search", "arguments": {"query": "retry policy"}})
    )
    # stdin stays open until the answer came: at its end the server stops, answered or not.
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(out=str(out), folder=str(folder))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(messages)
        proc.stdin.flush()
        answer = next((r for r in map(json.loads, proc.stdout) if r.get("id") == 2), None)
        proc.stdin.close()
        proc.wait(120)
    assert answer is not None, proc.stderr.read() if proc.stderr else ""
    modules: list[str] = json.loads(Path(out).read_text(encoding="utf-8"))
    return modules, answer


def test_a_stdio_server_answers_without_the_sdk_client_fastmcp_or_http(
    served: tuple[list[str], dict[str, object]],
) -> None:
    modules, answer = served
    result = answer["result"]
    assert isinstance(result, dict) and not result.get("isError"), result
    assert result["structuredContent"]["results"], result
    found = [m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER)]
    assert found == []


def test_a_stdio_server_stays_within_its_module_budget(
    served: tuple[list[str], dict[str, object]],
) -> None:
    modules, _ = served
    assert len(modules) <= MODULE_BUDGET, (
        f"{len(modules)} modules (budget {MODULE_BUDGET}): python -X importtime -m kbgraph mcp "
        "FOLDER, then a search, shows what came in"
    )


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter: nothing of the SDK imported before it."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_the_deferred_sdk_still_gives_its_client_in_the_same_process() -> None:
    """The packages left uninitialised run their ``__init__`` on the first name asked."""
    code = (
        "import kbgraph.mcp._server, sys\n"
        "assert 'mcp.client.session' not in sys.modules\n"
        "from mcp import ClientSession, types\n"
        "from mcp.server import FastMCP, Server\n"
        "import mcp\n"
        "assert mcp.ClientSession is ClientSession and mcp.types is types\n"
        "assert Server is kbgraph.mcp._server.Server\n"
        "print('ok')\n"
    )
    done = _python(code)
    assert done.stdout.strip() == "ok", done.stderr


def test_what_a_stdio_server_defers_still_works_in_the_same_process() -> None:
    """httpx and jsonschema, deferred before the SDK's server is imported, run their
    ``__init__`` on the first name asked: a tool or a provider that needs them gets them."""
    code = (
        "import sys\n"
        "from kbgraph.mcp._transport import defer_unused\n"
        "defer_unused()\n"
        "import kbgraph.mcp._server\n"
        "assert 'httpx._client' not in sys.modules and 'jsonschema.validators' not in sys.modules\n"
        "import httpx, jsonschema\n"
        "from httpx import Client\n"
        "assert httpx.codes.REQUEST_TIMEOUT == 408 and Client is httpx.Client\n"
        "try:\n"
        "    jsonschema.validate(instance=1, schema={'type': 'string'})\n"
        "except jsonschema.ValidationError as exc:\n"
        "    print('ok', exc.validator)\n"
    )
    done = _python(code)
    assert done.stdout.strip() == "ok type", done.stderr
