"""Both of kbgraph's langgraph.json apps (``kbgraph.inspector:app`` and
``kbgraph.graphs:http_app``) guard every route of ``langgraph dev`` (issue 42 hole 2): a
POST to /runs/wait with a rebound Host or a foreign Origin, or a context naming a folder
the server was not started with, is refused before the server runs anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from kbgraph.graphs import http_app as graphs_app
from kbgraph.graphs._internal import ServedRequestsGuard
from kbgraph.inspector import app as inspector_app

APPS = {"kbgraph.inspector:app": inspector_app, "kbgraph.graphs:http_app": graphs_app}
_APP: list[Any] = [inspector_app]


@pytest.fixture(params=sorted(APPS), autouse=True)
def served_app(request: pytest.FixtureRequest) -> Any:
    """Every test runs against both apps a langgraph.json may name."""
    _APP[0] = APPS[request.param]
    return _APP[0]


def _post(body: Any, **headers: str) -> httpx.Response:
    import anyio

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=_APP[0])
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return await c.post("/runs/wait", json=body, headers=headers)

    return anyio.run(go)


def _passed(reply: httpx.Response) -> None:
    """The request went past the guard and the context check to the app's routes: neither
    app serves /runs/wait itself (the LangGraph server's route does), so Starlette's own
    404. "Not refused" was all the tests asked before, and a 500 passed as allowed."""
    assert (reply.status_code, reply.text) == (404, "Not Found"), reply.text


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
        _passed(_post({}, origin=origin))


def test_a_folder_the_server_was_not_started_with_is_refused(served: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    refused = _post(_run(other))
    assert refused.status_code == 403 and "KBGRAPH_ALLOWED_FOLDERS" in refused.json()["detail"]
    assert not (other / ".kbgraph").exists()
    _passed(_post(_run(served / "sub")))  # inside: passes on


def test_an_index_dir_outside_the_servers_folders_is_refused(served: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere-index"
    kb = {"folder": str(served), "index_dir": str(elsewhere)}
    body = {"assistant_id": "rag_subgraph", "context": {"knowledge_bases": [kb]}}
    refused = _post(body)
    assert refused.status_code == 403 and "elsewhere-index" in refused.json()["detail"]
    assert not elsewhere.exists()
    inside = {"folder": str(served), "index_dir": str(served / "index")}
    body["context"] = {"knowledge_bases": [inside]}
    assert _post(body).status_code not in (403, 421)


def test_a_run_does_not_index_unless_the_server_allows_it(
    served: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "no writes from a request unless the server was started to allow them": the run
    # reaches the server with auto_index false (it indexed the folder before).
    import json

    import anyio

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


def test_each_app_puts_the_guard_in_front_of_the_context_check(served_app: Any) -> None:
    from kbgraph.graphs._internal import ContextKeysMiddleware

    assert [m.cls for m in served_app.user_middleware] == [
        ServedRequestsGuard,
        ContextKeysMiddleware,
    ]


def test_the_inspector_app_also_allows_the_folders_it_inspects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, served_app: Any
) -> None:
    # KBGRAPH_INSPECT_FOLDERS is the inspector's variable: only its app reads it.
    inspected = tmp_path / "inspected"
    inspected.mkdir()
    monkeypatch.delenv("KBGRAPH_ALLOWED_FOLDERS", raising=False)
    monkeypatch.delenv("KBGRAPH_FOLDER", raising=False)
    monkeypatch.setenv("KBGRAPH_INSPECT_FOLDERS", str(inspected))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    reply = _post(_run(inspected))
    if served_app is inspector_app:
        _passed(reply)
    else:
        assert reply.status_code == 403


def _only_the_working_folder(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """No folder variable set, the working folder ``folder``: the one folder served."""
    for name in ("KBGRAPH_ALLOWED_FOLDERS", "KBGRAPH_INSPECT_FOLDERS", "KBGRAPH_FOLDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(folder)


def test_the_guard_never_blocks_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under langgraph dev (blockbuster on), the folder check's os.getcwd ran on the loop
    # when no folder variable was set: every request, /ok included, answered 500.
    from blockbuster import blockbuster_ctx

    _only_the_working_folder(monkeypatch, tmp_path)
    with blockbuster_ctx():
        refused = _post(_run(tmp_path.parent / "elsewhere"))
        passed = _post(_run(tmp_path / "docs"))
    assert refused.status_code == 403 and str(tmp_path) in refused.json()["detail"]
    _passed(passed)


def test_a_cron_or_an_assistant_does_not_index_unless_the_server_allows_it(
    served: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cron's runs are started by the server itself, past the guard: POST /runs/crons with
    # auto_index true wrote FOLDER/.kbgraph a minute later although the server was started
    # without KBGRAPH_ALLOW_INDEX (only /runs, /runs/stream, /runs/wait, /runs/batch and
    # their thread forms were stamped).
    import json

    import anyio

    seen: list[Any] = []

    async def server(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        seen.append(json.loads(message["body"] or b"null"))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def send(method: str, path: str, body: Any) -> None:
        transport = httpx.ASGITransport(app=ServedRequestsGuard(server))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            reply = await c.request(method, path, json=body)
            assert reply.status_code == 200, reply.text

    monkeypatch.delenv("KBGRAPH_ALLOW_INDEX", raising=False)
    wants = {"knowledge_bases": [str(served)], "auto_index": True}
    cron = {"assistant_id": "rag_subgraph", "schedule": "* * * * *", "context": wants}
    for method, path, body in [
        ("POST", "/runs/crons", cron),
        ("POST", "/threads/t1/runs/crons", cron),
        ("PATCH", "/runs/crons/c1", {"context": wants}),
        ("POST", "/assistants", {"graph_id": "rag_subgraph", "context": wants}),
        ("PATCH", "/assistants/a1", {"context": wants}),
    ]:
        anyio.run(send, method, path, json.loads(json.dumps(body)))
        assert seen[-1]["context"]["auto_index"] is False, (method, path)
    anyio.run(send, "POST", "/assistants", {"graph_id": "rag_subgraph"})
    assert seen[-1]["context"] == {"auto_index": False}
    anyio.run(send, "PATCH", "/assistants/a1", {"metadata": {"a": 1}})
    assert seen[-1] == {"metadata": {"a": 1}}  # no context sent: the stored one is kept
    anyio.run(send, "POST", "/assistants/search", {"graph_id": "rag_subgraph"})
    assert seen[-1] == {"graph_id": "rag_subgraph"}
    monkeypatch.setenv("KBGRAPH_ALLOW_INDEX", "1")
    anyio.run(send, "POST", "/runs/crons", json.loads(json.dumps(cron)))
    assert seen[-1]["context"]["auto_index"] is True


def test_runs_the_server_starts_itself_write_no_index_while_it_serves(
    served: Path, served_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cron stored before the guard stamped crons keeps ``auto_index: true`` in
    # .langgraph_api, and the server starts its runs itself, past the guard: such a run
    # wrote FOLDER/.kbgraph on a server started without KBGRAPH_ALLOW_INDEX.
    from starlette.testclient import TestClient

    from kbgraph.graphs._nodes.retrieve import search_kb
    from kbgraph.graphs._searcher import SearcherRegistry
    from kbgraph.retrieval import KnowledgeBase

    from ._rag_fakes import deps_for, settings_for

    (served / "retry.md").write_text("# Retry\r\n\nRetries back off: up to 5 attempts.\n")
    settings = settings_for(served, auto_index=True)
    [kb] = settings.resolved_knowledge_bases()

    def run_as_a_cron() -> None:
        registry = SearcherRegistry(lambda f, e, /, **o: KnowledgeBase(f, embedding=e))
        search_kb(kb, ["retry"], settings, None, deps_for(registry), lambda _e: None)
        registry.close_all()

    monkeypatch.delenv("KBGRAPH_ALLOW_INDEX", raising=False)
    with TestClient(served_app, base_url="http://127.0.0.1"):  # the app's lifespan runs
        run_as_a_cron()
        assert not (served / ".kbgraph").exists()
        monkeypatch.setenv("KBGRAPH_ALLOW_INDEX", "1")
        run_as_a_cron()
        assert (served / ".kbgraph").is_dir()  # a server started to allow it indexes
    shutil.rmtree(served / ".kbgraph")
    monkeypatch.delenv("KBGRAPH_ALLOW_INDEX")
    run_as_a_cron()  # no server any more: a script's run indexes as it always did
    assert (served / ".kbgraph").is_dir()


def test_a_deeply_nested_body_is_checked_as_the_server_parses_it(
    served: Path, tmp_path: Path
) -> None:
    # ``json.loads`` gave up ~950 levels deep (RecursionError) and the body passed
    # unchecked; the server's orjson reads up to 1,024, so its foreign folder was run.
    deep = "[" * 1000 + "]" * 1000
    foreign = json.dumps(_run(tmp_path))
    raw = foreign[:-1] + f', "metadata": {{"x": {deep}}}}}'
    reply = _post_raw(raw.encode())
    assert reply.status_code == 403 and "is not one this server was started with" in reply.text
    from kbgraph.graphs._served_guard import parse_body

    too_deep = ("[" * 5000 + "]" * 5000).encode()
    assert parse_body(too_deep)[1] is None  # orjson refuses it, as the server will
    assert parse_body(b"not json") == (None, None)


def _post_raw(body: bytes) -> httpx.Response:
    import anyio

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=_APP[0])
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            headers = {"content-type": "application/json"}
            return await c.post("/runs/wait", content=body, headers=headers)

    return anyio.run(go)


@pytest.mark.parametrize(
    "form",
    [" {other}", "{other} ", "{other}\n", "\t{other}", "~/other", "./../other", "../cwd/../other"],
)
def test_a_folder_is_judged_as_the_graph_opens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    # Hole A: with no allow-list variable only the working folder is allowed, and
    # " /elsewhere" (a leading space) passed: the guard resolved it without the strip the
    # settings apply, as a name inside the working folder, and the graph opened /elsewhere.
    from kbgraph.graphs._settings import RagSettings

    (tmp_path / "cwd").mkdir()
    (tmp_path / "other").mkdir()
    _only_the_working_folder(monkeypatch, tmp_path / "cwd")
    monkeypatch.setenv("HOME", str(tmp_path))
    raw = form.format(other=tmp_path / "other")
    [kb] = RagSettings(knowledge_bases=[raw]).resolved_knowledge_bases()
    assert kb.folder == str(tmp_path / "other")  # what the graph would open
    for shape in (raw, [raw], [{"name": "o", "folder": raw}], {"o": raw}):
        reply = _post({"assistant_id": "rag_subgraph", "context": {"knowledge_bases": shape}})
        assert reply.status_code == 403, (shape, reply.text)
        assert "is not one this server was started with" in reply.json()["detail"]


def test_folders_inside_the_working_folder_pass_in_any_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _only_the_working_folder(monkeypatch, tmp_path)
    for raw in (" docs", "docs ", f" {tmp_path}/docs", "./a\\b", "."):
        reply = _post({"assistant_id": "rag_subgraph", "context": {"knowledge_bases": [raw]}})
        _passed(reply)


@pytest.fixture
def probe_module(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A module ``kbg_served_probe`` whose ``make`` records that it was called."""
    import sys
    import types

    calls: list[str] = []
    module = types.ModuleType("kbg_served_probe")
    module.make = lambda: calls.append("make")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kbg_served_probe", module)
    return calls


def test_a_request_may_not_name_code_to_import(
    served: Path, monkeypatch: pytest.MonkeyPatch, probe_module: list[str]
) -> None:
    # Hole B: {"retriever": "os:abort"} skipped the folder check and the importer called
    # it: langgraph dev died (rc -6); "os:getpid" was called and the run went on.
    monkeypatch.delenv("KBGRAPH_ALLOWED_RETRIEVERS", raising=False)
    for ref in ("os:abort", " os:getpid", "kbg_served_probe:make"):
        context = {"knowledge_bases": [{"name": "r", "retriever": ref}]}
        for body in (
            {"assistant_id": "rag_subgraph", "context": context},
            {"assistant_id": "rag_subgraph", "config": {"configurable": context}},
        ):
            reply = _post(body, origin="https://smith.langchain.com")
            assert reply.status_code == 403, reply.text
            detail = reply.json()["detail"]
            assert "KBGRAPH_ALLOWED_RETRIEVERS" in detail and "allowed: none" in detail
    assert probe_module == []
    monkeypatch.setenv(
        "KBGRAPH_ALLOWED_RETRIEVERS", "tests.support.lc_store:wiki, kbg_served_probe:make"
    )
    allowed = [
        {"name": "w", "retriever": " kbg_served_probe:make"},
        {"name": "o", "retriever": "object:wiki"},  # an object the graph was built with
    ]
    reply = _post({"assistant_id": "rag_subgraph", "context": {"knowledge_bases": allowed}})
    _passed(reply)
    refused = _post(_run_of([{"name": "r", "retriever": "os:abort"}]))
    assert refused.status_code == 403
    assert "allowed: tests.support.lc_store:wiki, kbg_served_probe:make" in refused.text


def _run_of(knowledge_bases: Any) -> dict[str, Any]:
    return {"assistant_id": "rag_subgraph", "context": {"knowledge_bases": knowledge_bases}}


def test_runs_the_server_starts_itself_import_only_what_it_was_started_with(
    served_app: Any, monkeypatch: pytest.MonkeyPatch, probe_module: list[str]
) -> None:
    # A cron's runs and a stored assistant's never pass the guard: in a served process
    # the importer itself refuses a retriever the server was not started with.
    from starlette.testclient import TestClient

    from kbgraph.errors import NotServedError
    from kbgraph.graphs._langchain_kb import resolve_source
    from kbgraph.graphs._searcher import SearcherRegistry

    monkeypatch.delenv("KBGRAPH_ALLOWED_RETRIEVERS", raising=False)
    with TestClient(served_app, base_url="http://127.0.0.1"):  # the app's lifespan runs
        with pytest.raises(NotServedError, match="KBGRAPH_ALLOWED_RETRIEVERS"):
            resolve_source("kbg_served_probe:make", {}, SearcherRegistry())
        assert probe_module == []
        monkeypatch.setenv("KBGRAPH_ALLOWED_RETRIEVERS", "tests.support.lc_store:wiki")
        assert resolve_source("tests.support.lc_store:wiki", {}, SearcherRegistry())
    monkeypatch.delenv("KBGRAPH_ALLOWED_RETRIEVERS")
    with pytest.raises(Exception, match="VectorStore or BaseRetriever"):
        resolve_source("kbg_served_probe:make", {}, SearcherRegistry())  # a script: as before
    assert probe_module == ["make"]


STORE = "postgresql://probe:s3cret@127.0.0.1:9/db?connect_timeout=3"


@pytest.mark.parametrize("key", ["store", "read_store"])
def test_a_request_connects_only_to_stores_the_server_was_started_with(
    served: Path, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    # Hole C: an allowed folder with "store": "postgresql://probe@127.0.0.1:PORT/db" made
    # the server connect to whatever listened there.
    for name in ("KBGRAPH_ALLOWED_STORES", "KBGRAPH_STORE", "KBGRAPH_READ_STORE"):
        monkeypatch.delenv(name, raising=False)
    for url in (STORE, f" {STORE}"):
        kb = {"name": "a", "folder": str(served), key: url}
        reply = _post(_run_of([kb]), origin="https://smith.langchain.com")
        assert reply.status_code == 403, reply.text
        detail = reply.json()["detail"]
        assert f"the {key} " in detail and "KBGRAPH_ALLOWED_STORES" in detail
        assert "allowed: none" in detail and "s3cret" not in detail  # the password masked
    other = "postgresql://kb@db.internal/kb"
    monkeypatch.setenv("KBGRAPH_STORE", STORE)
    monkeypatch.setenv("KBGRAPH_ALLOWED_STORES", f'{other}, "postgresql://kb@a,b/kb"')
    for url in (STORE, other, "postgresql://kb@a,b/kb"):
        reply = _post(_run_of([{"name": "a", "folder": str(served), key: url}]))
        _passed(reply)
    refused = _post(_run_of([{"name": "a", "folder": str(served), key: f"{other}x"}]))
    assert refused.status_code == 403 and "s3cret" not in refused.text


def test_runs_the_server_starts_itself_connect_only_to_its_stores(
    served: Path, served_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The registry refuses a store before its factory opens (connects to) anything.
    from starlette.testclient import TestClient

    from kbgraph.errors import NotServedError
    from kbgraph.graphs._searcher import SearcherRegistry

    opened: list[Any] = []

    def factory(folder: str, embedding: str | None, /, **options: Any) -> Any:
        opened.append(options)
        return object()

    for name in ("KBGRAPH_ALLOWED_STORES", "KBGRAPH_STORE", "KBGRAPH_READ_STORE"):
        monkeypatch.delenv(name, raising=False)
    with TestClient(served_app, base_url="http://127.0.0.1"):  # the app's lifespan runs
        with pytest.raises(NotServedError, match="KBGRAPH_ALLOWED_STORES"):
            SearcherRegistry(factory).open(served, "fake", store=STORE)
        with pytest.raises(NotServedError, match="the read_store"):
            SearcherRegistry(factory).open(served, "fake", read_store=STORE)
        assert opened == []
        SearcherRegistry(factory).open(served, "fake")  # the folder's own index
        monkeypatch.setenv("KBGRAPH_ALLOWED_STORES", STORE)
        SearcherRegistry(factory).open(served, "fake", store=STORE)
    monkeypatch.delenv("KBGRAPH_ALLOWED_STORES")
    SearcherRegistry(factory).open(served, "fake", store=STORE)  # a script: as before
    assert opened == [{}, {"store": STORE}, {"store": STORE}]


def _places(tmp_path: Path) -> list[tuple[str, str]]:
    """(key, spec) of model specs that name a server or a file."""
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    return [
        ("chat_model", "openai_compatible:m@http://127.0.0.1:9/v1"),
        ("chat_model", f" gguf:{model_file}"),
        ("answer_check.judge", "openai_compatible:m@http://127.0.0.1:9/v1"),
        ("embedding", "http://127.0.0.1:9/v1#m"),
        ("embedding", "openai_compatible:m@https://user:pw@embed.example/v1"),
        ("embedding", f"local:{tmp_path}"),
    ]


FREE = [
    ("chat_model", "fake"),
    ("chat_model", "fake:Hello, from a script"),
    ("chat_model", "none"),
    ("answer_check.judge", "offline"),
    ("answer_check.judge", "overlap"),
    ("embedding", "auto"),
    ("embedding", "none"),
    ("embedding", "fake:8"),
    ("embedding", "local"),
    ("embedding", "local#int8"),  # the packaged model at int8: the server's files too
]


def _with_model(folder: Path, key: str, spec: str) -> dict[str, Any]:
    context: dict[str, Any] = {"knowledge_bases": [str(folder)]}
    if key == "answer_check.judge":
        context["answer_check"] = {"judge": spec}
    else:
        context[key] = spec
    return {"assistant_id": "rag_subgraph", "context": context}


def test_a_request_names_no_model_server_or_file_the_server_was_not_started_with(
    served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # chat_model "openai_compatible:m@http://anywhere/v1" sent the server's OPENAI_API_KEY
    # to that URL; gguf:<path> and local:<path> load any file the server can read.
    for name in ("KBGRAPH_ALLOWED_MODELS", "KBGRAPH_CHAT_MODEL", "KBGRAPH_EMBEDDING"):
        monkeypatch.delenv(name, raising=False)
    for key, spec in _places(tmp_path):
        reply = _post(_with_model(served, key, spec), origin="https://smith.langchain.com")
        assert reply.status_code == 403, (key, spec, reply.text)
        assert f"the {key} " in reply.text and "KBGRAPH_ALLOWED_MODELS" in reply.text
        assert ":pw@" not in reply.text  # a password in a URL is masked
    for key, spec in FREE:  # what reaches nothing and spends nothing: no listing needed
        _passed(_post(_with_model(served, key, spec)))
    places = _places(tmp_path)
    monkeypatch.setenv("KBGRAPH_ALLOWED_MODELS", ", ".join(spec.strip() for _, spec in places))
    for key, spec in places:
        _passed(_post(_with_model(served, key, spec)))
    monkeypatch.delenv("KBGRAPH_ALLOWED_MODELS")
    monkeypatch.setenv("KBGRAPH_CHAT_MODEL", places[0][1])  # the server's own model
    _passed(_post(_with_model(served, *places[0])))


def test_runs_the_server_starts_itself_use_only_its_model_servers_and_files(
    served_app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starlette.testclient import TestClient

    from kbgraph.agents._common import model_for
    from kbgraph.errors import NotServedError
    from kbgraph.evals import LLMJudge
    from kbgraph.graphs import RagSettings, resolve_chat_model
    from kbgraph.graphs._nodes._base import NodeDeps
    from kbgraph.graphs._searcher import SearcherRegistry

    for name in ("KBGRAPH_ALLOWED_MODELS", "KBGRAPH_CHAT_MODEL", "KBGRAPH_EMBEDDING"):
        monkeypatch.delenv(name, raising=False)
    url = "openai_compatible:m@http://127.0.0.1:9/v1"
    settings = RagSettings(chat_model=url)
    with TestClient(served_app, base_url="http://127.0.0.1"):  # the app's lifespan runs
        for resolve in (NodeDeps().model_for, lambda s: model_for(None, s)):
            with pytest.raises(NotServedError, match="KBGRAPH_ALLOWED_MODELS"):
                resolve(settings)
        with pytest.raises(NotServedError, match=r"the answer_check\.judge"):
            LLMJudge(url)  # a judge spec: a run's answer_check.judge (or --judge)
        assert resolve_chat_model(url) is not None  # the server's own code: not a run's spec
        with pytest.raises(NotServedError, match="the embedding"):
            SearcherRegistry().embeddings("http://127.0.0.1:9/v1#m")
        with pytest.raises(NotServedError, match="the embedding"):
            SearcherRegistry(lambda f, e, /, **o: object()).open(tmp_path, f"local:{tmp_path}")
    assert NodeDeps().model_for(settings) is not None  # a script: as before


def test_a_served_run_starts_no_watcher_unless_the_server_allows_index_writes(
    served: Path, served_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # live: true started a file watcher, whose first run indexes the folder: a request on
    # an allowed, unindexed folder wrote FOLDER/.kbgraph without KBGRAPH_ALLOW_INDEX.
    from starlette.testclient import TestClient

    from kbgraph.graphs._nodes.retrieve import search_kb

    from ._rag_fakes import deps_for, fake_kb, registry_with, settings_for

    searcher = fake_kb(served)
    watched: list[bool] = []
    searcher.start_watching = lambda: watched.append(True)  # type: ignore[attr-defined]
    settings = settings_for(served, live=True, auto_index=False)
    [kb] = settings.resolved_knowledge_bases()
    deps = deps_for(registry_with({served: searcher}))

    def run() -> None:
        search_kb(kb, ["retry"], settings, None, deps, lambda _e: None)

    monkeypatch.delenv("KBGRAPH_ALLOW_INDEX", raising=False)
    with TestClient(served_app, base_url="http://127.0.0.1"):  # the app's lifespan runs
        run()
        assert watched == []
        monkeypatch.setenv("KBGRAPH_ALLOW_INDEX", "1")
        run()
    assert watched == [True]  # a server started to allow index writes watches


PROVIDER_MODELS = [
    ("chat_model", "openai:gpt-4o"),
    ("chat_model", "anthropic:claude-3-opus-latest"),
    ("answer_check.judge", "openai:o1"),
    ("embedding", "openai:text-embedding-3-large"),
    ("embedding", "cohere:embed-v4"),
]


def test_a_provider_model_is_the_servers_choice(
    served: Path, served_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "openai:<any model>" stayed a run's choice: a request spent the server's
    # OPENAI_API_KEY on whatever model of that provider it named.
    from starlette.testclient import TestClient

    from kbgraph.errors import NotServedError
    from kbgraph.graphs._served import check_model

    for name in ("KBGRAPH_ALLOWED_MODELS", "KBGRAPH_CHAT_MODEL", "KBGRAPH_EMBEDDING"):
        monkeypatch.delenv(name, raising=False)
    for key, spec in PROVIDER_MODELS:
        reply = _post(_with_model(served, key, spec))
        assert reply.status_code == 403, (key, spec, reply.text)
        assert f"the {key} {spec!r} is not a model this server was started with" in reply.text
    with TestClient(served_app, base_url="http://127.0.0.1"):  # runs the server starts
        for key, spec in PROVIDER_MODELS:
            with pytest.raises(NotServedError, match="KBGRAPH_ALLOWED_MODELS"):
                check_model(key, spec)
    monkeypatch.setenv("KBGRAPH_ALLOWED_MODELS", ", ".join(s for _, s in PROVIDER_MODELS[1:]))
    monkeypatch.setenv("KBGRAPH_CHAT_MODEL", PROVIDER_MODELS[0][1])  # the server's own
    for key, spec in PROVIDER_MODELS:
        _passed(_post(_with_model(served, key, spec)))


@pytest.mark.parametrize(
    ("key", "spec"),
    [
        ("embedding", "huggingface:/some/path"),
        ("embedding", "huggingface:~/models/e5"),
        ("embedding", "ollama:./weights"),
        ("chat_model", "huggingface:/some/path"),
        ("answer_check.judge", "ollama:../model"),
    ],
)
def test_a_provider_spec_loading_a_folder_is_refused(
    served: Path, served_app: Any, monkeypatch: pytest.MonkeyPatch, key: str, spec: str
) -> None:
    # huggingface:/some/path named no URL and was not local:, so the model guard let it
    # load whatever folder the server can read.
    from starlette.testclient import TestClient

    from kbgraph.errors import NotServedError
    from kbgraph.graphs._searcher import SearcherRegistry
    from kbgraph.graphs._served import check_model

    for name in ("KBGRAPH_ALLOWED_MODELS", "KBGRAPH_CHAT_MODEL", "KBGRAPH_EMBEDDING"):
        monkeypatch.delenv(name, raising=False)
    reply = _post(_with_model(served, key, spec))
    assert reply.status_code == 403 and "KBGRAPH_ALLOWED_MODELS" in reply.text, reply.text
    with TestClient(served_app, base_url="http://127.0.0.1"):
        with pytest.raises(NotServedError, match=f"the {key} "):
            check_model(key, spec)
        if key == "embedding":  # refused before any model is loaded
            with pytest.raises(NotServedError):
                SearcherRegistry().embeddings(spec)


def test_a_request_does_not_record_runs_unless_the_server_allows_it(
    served: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # record_runs: true in a request's context wrote a run record into the server's
    # KBGRAPH_RUNS_DIR: a request made the server write.
    import anyio

    seen: list[Any] = []

    async def server(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        seen.append(json.loads(message["body"] or b"null"))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def send(path: str, body: Any) -> None:
        transport = httpx.ASGITransport(app=ServedRequestsGuard(server))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            assert (await c.post(path, json=body)).status_code == 200

    monkeypatch.setenv("KBGRAPH_ALLOW_INDEX", "1")
    monkeypatch.delenv("KBGRAPH_ALLOW_RECORD_RUNS", raising=False)
    wants = {"knowledge_bases": [str(served)], "record_runs": True}
    anyio.run(send, "/runs/wait", {"assistant_id": "a", "context": dict(wants)})
    anyio.run(send, "/runs/crons", {"assistant_id": "a", "config": {"configurable": wants}})
    anyio.run(send, "/runs/wait", _run(served))
    assert seen[0]["context"]["record_runs"] is False
    assert seen[1]["config"]["configurable"]["record_runs"] is False
    assert seen[2] == _run(served)  # asks for nothing: nothing added
    monkeypatch.setenv("KBGRAPH_ALLOW_RECORD_RUNS", "1")
    anyio.run(send, "/runs/wait", {"assistant_id": "a", "context": dict(wants)})
    assert seen[-1]["context"]["record_runs"] is True


def test_runs_the_server_starts_itself_record_only_when_it_allows_it(
    served: Path, served_app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cron's runs pass no guard: the recorder itself writes nothing in a served process
    # started without KBGRAPH_ALLOW_RECORD_RUNS.
    from langchain_core.messages import HumanMessage
    from starlette.testclient import TestClient

    from kbgraph.graphs import RagSettings, build_rag_graph

    runs = tmp_path / "runs"
    monkeypatch.setenv("KBGRAPH_RUNS_DIR", str(runs))
    monkeypatch.delenv("KBGRAPH_ALLOW_RECORD_RUNS", raising=False)
    settings = RagSettings.model_validate(
        {"knowledge_bases": str(served), "embedding": "fake", "record_runs": True}
    )
    graph = build_rag_graph()

    def run() -> None:
        graph.invoke({"messages": [HumanMessage("How are retries done?")]}, context=settings)

    with TestClient(served_app, base_url="http://127.0.0.1"):  # the app's lifespan runs
        run()
        assert not runs.exists()
        monkeypatch.setenv("KBGRAPH_ALLOW_RECORD_RUNS", "1")
        run()
        assert len(list(runs.glob("*.json"))) == 1  # a server started to allow it records
    monkeypatch.delenv("KBGRAPH_ALLOW_RECORD_RUNS")
    run()  # no server any more: a script records as it always did
    assert len(list(runs.glob("*.json"))) == 2


def test_allow_lists_match_urls_in_any_trivial_spelling(
    served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One rule for every list: commas, CSV quotes for an item holding one, so a spec with
    # a space can be listed (white space separated KBGRAPH_ALLOWED_MODELS); a URL's scheme
    # and host case and a trailing slash do not make it another.
    spaced = tmp_path / "my models" / "m.gguf"
    spaced.parent.mkdir()
    spaced.write_bytes(b"GGUF")
    for name in ("KBGRAPH_CHAT_MODEL", "KBGRAPH_EMBEDDING", "KBGRAPH_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "KBGRAPH_ALLOWED_MODELS",
        f"gguf:{spaced}, openai_compatible:m@http://Models.Example:9/v1/",
    )
    monkeypatch.setenv("KBGRAPH_ALLOWED_STORES", '"postgresql://kb@db.example,standby/kb"')
    monkeypatch.setenv("KBGRAPH_ALLOW_ORIGINS", "HTTPS://Studio.Example/")
    _passed(_post(_with_model(served, "chat_model", f"gguf:{spaced}")))
    url = "openai_compatible:m@HTTP://models.example:9/v1"
    _passed(_post(_with_model(served, "chat_model", url)))
    assert _post(_with_model(served, "chat_model", url + "/x")).status_code == 403
    store = {"name": "a", "folder": str(served), "store": "POSTGRESQL://kb@DB.example,Standby/kb"}
    _passed(_post(_run_of([store])))
    _passed(_post({}, origin="https://studio.example"))
    for other in ("postgresql://KB@db.example,standby/kb", "postgresql://kb@db.example/kb"):
        refused = _post(_run_of([{**store, "store": other}]))  # another user, another host
        assert refused.status_code == 403, other
    assert _post({}, origin="https://studio.example.evil").status_code == 403
