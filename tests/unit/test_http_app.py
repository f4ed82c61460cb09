"""langgraph.json's HTTP app: its middleware refuses a context key the graph's context
schema lacks (langgraph-api would drop it before the graph runs), with the line a
``ConfigError`` has in process, and hands every other request to the server unchanged.
The server's own answer to these requests is covered over a real ``langgraph dev`` in
tests/e2e/test_langgraph_dev.py; here the server is a small ASGI app that echoes."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from kbgraph.errors import ConfigError
from kbgraph.graphs import RagSettings
from kbgraph.graphs._http_app import ContextKeysMiddleware, unknown_context_keys
from kbgraph.graphs._subgraph import rag_graph

SCHEMA = rag_graph.get_context_jsonschema()


def _in_process(context: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as refused:
        RagSettings.model_validate(context)
    return str(refused.value)


@pytest.mark.parametrize(
    "context",
    [
        {"knowledge_base": "docs/"},
        {"knowledge_bases": ["docs/"], "top_k": 3},
        {"chat_modle": "fake", "embedding": "fake"},
        {"größe": 1},
    ],
)
def test_the_refusal_is_the_in_process_line(context: dict[str, Any]) -> None:
    assert unknown_context_keys(context, SCHEMA) == _in_process(context)


def test_a_key_one_level_down_is_suggested_there() -> None:
    message = unknown_context_keys({"top_k": 3}, SCHEMA)
    assert message is not None and message.endswith("did you mean 'search.top_k'?")


def test_every_unknown_key_is_named() -> None:
    message = unknown_context_keys({"topk": 3, "knowledge_base": "d", "live": True}, SCHEMA)
    assert message is not None
    assert "no setting 'topk'" in message and message.endswith("(also unknown: 'knowledge_base')")


@pytest.mark.parametrize(
    ("context", "schema"),
    [
        ({"knowledge_bases": ["d"], "search": {"topk": 3}}, SCHEMA),  # nested: the graph's
        ({"anything": 1}, {"type": "object"}),  # no keys listed: the server drops none
        ({"anything": 1}, {"properties": {}}),
    ],
)
def test_what_the_server_keeps_passes(context: dict[str, Any], schema: dict[str, Any]) -> None:
    assert unknown_context_keys(context, schema) is None


class EchoServer:
    """Stands in for langgraph-api: answers 200 with the body it received."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


class Middleware(ContextKeysMiddleware):
    """The middleware with the schema lookup answered from a table instead of the server."""

    def __init__(self, app: Any, schemas: dict[str, dict[str, Any]]) -> None:
        super().__init__(app)
        self.table = schemas
        self.asked: list[str] = []

    async def _lookup(self, target: str) -> dict[str, Any] | None:
        self.asked.append(target)
        if target not in self.table:
            raise LookupError(f"no assistant {target}")
        return self.table[target]


ASSISTANT = "b109547b-3119-504e-8f47-f3929dea9ef7"
TYPO = {"knowledge_base": "docs/"}
GOOD = {"knowledge_bases": ["docs/"]}


async def _send(
    method: str, path: str, body: Any, app: Middleware | None = None
) -> tuple[httpx.Response, EchoServer, Middleware]:
    server = EchoServer()
    if app is None:
        app = Middleware(server, {"rag_subgraph": SCHEMA, ASSISTANT: SCHEMA})
    app.app = server
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://server") as client:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        response = await client.request(method, path, content=content)
    return response, server, app


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/runs/wait", {"assistant_id": "rag_subgraph", "context": TYPO}),
        ("POST", "/runs/stream", {"assistant_id": ASSISTANT, "context": TYPO}),
        ("POST", "/threads/t1/runs", {"assistant_id": ASSISTANT, "context": TYPO}),
        ("POST", "/threads/t1/runs/crons", {"assistant_id": "rag_subgraph", "context": TYPO}),
        (
            "POST",
            "/runs/batch",
            [
                {"assistant_id": ASSISTANT, "context": GOOD},
                {"assistant_id": ASSISTANT, "context": TYPO},
            ],
        ),
        ("POST", "/assistants", {"graph_id": "rag_subgraph", "context": TYPO}),
        ("PATCH", f"/assistants/{ASSISTANT}", {"context": TYPO}),
        ("POST", "/mount/prefix/runs", {"assistant_id": "rag_subgraph", "context": TYPO}),
    ],
)
async def test_requests_that_carry_a_mistyped_context_are_refused(
    method: str, path: str, body: Any
) -> None:
    response, server, _ = await _send(method, path, body)
    assert response.status_code == 422 and server.calls == 0
    assert response.json() == {"detail": _in_process(TYPO)}


@pytest.mark.parametrize(
    ("method", "path", "body", "asked"),
    [
        ("POST", "/runs/wait", {"assistant_id": "rag_subgraph", "context": GOOD}, ["rag_subgraph"]),
        ("POST", "/threads/t1/runs", {"assistant_id": ASSISTANT, "input": {"größe": "ü"}}, []),
        ("POST", "/runs/wait", {"assistant_id": "unknown", "context": TYPO}, ["unknown"]),
        ("POST", "/assistants/search", {"graph_id": "rag_subgraph", "context": TYPO}, []),
        ("POST", "/threads/search", {"metadata": {"context": TYPO}}, []),
        ("GET", "/runs/wait", None, []),
        ("POST", "/runs/wait", b"{not json", []),
        (
            "POST",
            "/runs/wait",
            b'{"context": {"search": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
            [],
        ),
        (
            "POST",
            "/runs/wait",
            {
                "assistant_id": "rag_subgraph",
                "config": {"configurable": {"thread_id": "t", "model": "m", **GOOD}},
            },
            ["rag_subgraph"],
        ),
        ("POST", "/runs/wait", b"", []),
    ],
)
async def test_every_other_request_reaches_the_server_unchanged(
    method: str, path: str, body: Any, asked: list[str]
) -> None:
    response, server, app = await _send(method, path, body if body is not None else b"")
    sent = body if isinstance(body, bytes) else json.dumps(body).encode() if body else b""
    assert response.status_code == 200 and server.calls == 1
    assert response.content == sent
    assert app.asked == asked


async def test_a_schema_is_asked_once_until_its_assistant_changes() -> None:
    run = {"assistant_id": ASSISTANT, "context": GOOD}
    _, _, app = await _send("POST", "/runs/wait", run)
    await _send("POST", "/runs/wait", run, app)
    assert app.asked == [ASSISTANT]
    app.table[ASSISTANT] = {"properties": {"other": {}}}  # its graph changed
    response, _, _ = await _send("PATCH", f"/assistants/{ASSISTANT}", {"graph_id": "g2"}, app)
    assert response.status_code == 200
    response, server, _ = await _send("POST", "/runs/wait", run, app)
    assert response.status_code == 422 and server.calls == 0
    assert app.asked == [ASSISTANT, ASSISTANT]
    await _send("DELETE", f"/assistants/{ASSISTANT}", b"", app)
    await _send("POST", "/runs/wait", run, app)
    assert app.asked == [ASSISTANT] * 3


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/runs/wait", {"assistant_id": "rag_subgraph", "config": {"configurable": TYPO}}),
        ("POST", "/assistants", {"graph_id": "rag_subgraph", "config": {"configurable": TYPO}}),
        (
            "POST",
            "/runs/batch",
            [{"assistant_id": ASSISTANT, "config": {"configurable": {"embeding": "fake"}}}],
        ),
    ],
)
async def test_a_misspelt_setting_in_the_legacy_configurable_is_refused(
    method: str, path: str, body: Any
) -> None:
    """The server copies ``config.configurable`` into the context when none is given, and
    drops the same keys; there only near misses of a setting count (it carries other keys)."""
    response, server, _ = await _send(method, path, body)
    assert response.status_code == 422 and server.calls == 0
    detail = response.json()["detail"]
    assert "; did you mean '" in detail and detail.endswith("? (in config.configurable)")


@pytest.mark.parametrize(
    "context",
    [
        {"knowledge_bases": {"docs": {"folder": "docs/"}}, "embedding": "fake"},
        {"knowledge_bases": {"docs": 5}},
        {"knowledge_bases": 42},
        {"knowledge_bases": ["docs/"], "search": {"top_k": 0}},
    ],
)
async def test_a_value_the_graph_refuses_is_refused_in_one_line(context: dict[str, Any]) -> None:
    # Its keys are the graph's, so the run was started and failed as it did: langgraph-api
    # logged the ConfigError with its traceback, twice (issue 42). Now the client gets the
    # line a ConfigError has in process, and nothing runs.
    response, server, _ = await _send(
        "POST", "/runs/wait", {"assistant_id": "rag_subgraph", "context": context}
    )
    assert response.status_code == 422 and server.calls == 0
    detail = response.json()["detail"]
    assert detail == _in_process(context) and "\n" not in detail


async def test_a_value_the_graph_refuses_in_the_legacy_configurable_is_refused() -> None:
    configurable = {"thread_id": "t", "knowledge_bases": {"docs": {"folder": "docs/"}}}
    body = {"assistant_id": ASSISTANT, "config": {"configurable": configurable}}
    response, server, _ = await _send("POST", "/runs/wait", body)
    assert response.status_code == 422 and server.calls == 0
    detail = response.json()["detail"]
    assert "knowledge_bases=" in detail and detail.endswith(" (in config.configurable)")


async def test_another_graphs_values_are_its_own() -> None:
    # A graph of the user's own may take knowledge_bases in another shape.
    other = {"title": "MyContext", "properties": {"knowledge_bases": {"type": "object"}}}
    run = {"assistant_id": "mine", "context": {"knowledge_bases": {"docs": {"folder": "d"}}}}
    app = Middleware(EchoServer(), {"mine": other})
    response, server, _ = await _send("POST", "/runs/wait", run, app)
    assert response.status_code == 200 and server.calls == 1
