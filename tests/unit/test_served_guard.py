"""langgraph.json's app guards every route of ``langgraph dev`` (issue 42 hole 2): a POST
to /runs/wait with a rebound Host or a foreign Origin, or a context naming a folder the
server was not started with, is refused before the server runs anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from kbgraph.inspector._http_app import app


def _post(body: Any, **headers: str) -> httpx.Response:
    import anyio

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return await c.post("/runs/wait", json=body, headers=headers)

    return anyio.run(go)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "served"
    folder.mkdir()
    monkeypatch.setenv("KBGRAPH_ALLOWED_FOLDERS", str(folder))
    for name in ("KBGRAPH_ALLOW_HOSTS", "KBGRAPH_ALLOW_ORIGINS"):
        monkeypatch.delenv(name, raising=False)
    return folder


def _run(folder: Path) -> dict[str, Any]:
    return {"assistant_id": "rag_subgraph", "context": {"knowledge_bases": [str(folder)]}}


def test_a_rebound_host_is_refused(served: Path) -> None:
    reply = _post(_run(served), host="127.0.0.1.rebind.example")
    assert reply.status_code == 421 and "loopback names only" in reply.json()["detail"]


def test_a_foreign_origin_is_refused_and_studio_and_loopback_pages_pass(served: Path) -> None:
    refused = _post(_run(served), origin="https://evil.example")
    assert refused.status_code == 403 and "KBGRAPH_ALLOW_ORIGINS" in refused.json()["detail"]
    for origin in ("https://smith.langchain.com", "http://127.0.0.1:2024"):
        assert _post({}, origin=origin).status_code not in (403, 421)


def test_a_folder_the_server_was_not_started_with_is_refused(served: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    refused = _post(_run(other))
    assert refused.status_code == 403 and "KBGRAPH_ALLOWED_FOLDERS" in refused.json()["detail"]
    assert not (other / ".kbgraph").exists()
    assert _post(_run(served / "sub")).status_code not in (403, 421)  # inside: passes on


def test_a_run_does_not_index_unless_the_server_allows_it(
    served: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "no writes from a request unless the server was started to allow them": the run
    # reaches the server with auto_index false (it indexed the folder before).
    import json

    import anyio

    from kbgraph.inspector._served import ServedRequestsGuard

    seen: list[Any] = []

    async def server(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        seen.append(json.loads(message["body"]))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def post(body: Any) -> None:
        transport = httpx.ASGITransport(app=ServedRequestsGuard(server))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            assert (await c.post("/runs/wait", json=body)).status_code == 200

    monkeypatch.delenv("KBGRAPH_ALLOW_INDEX", raising=False)
    anyio.run(post, _run(served))
    anyio.run(post, {"assistant_id": "x", "config": {"configurable": {"top_k": 3}}})
    assert seen[0]["context"]["auto_index"] is False
    assert seen[1]["config"]["configurable"] == {"top_k": 3, "auto_index": False}
    monkeypatch.setenv("KBGRAPH_ALLOW_INDEX", "1")
    anyio.run(post, _run(served))
    assert "auto_index" not in seen[2]["context"]
