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
