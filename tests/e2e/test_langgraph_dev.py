"""``langgraph dev`` serves the three graphs of ``langgraph.json``; a real server process on
a free loopback port, driven by ``langgraph_sdk`` as Studio or an application would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from kbgraph.graphs._subgraph import NODE_ORDER
from tests.support.openai_server import ChatReply, OpenAIServer, ToolCall

from .conftest import DevServer, make_docs

pytestmark = pytest.mark.e2e

QUESTION = "How do I change the number of retries?"


@pytest.fixture(scope="module")
def client(dev_server: DevServer) -> SyncLangGraphClient:
    return get_sync_client(url=dev_server.url)


def _assistant(client: SyncLangGraphClient, graph_id: str) -> str:
    found = client.assistants.search(graph_id=graph_id, metadata={"created_by": "system"})
    assert len(found) == 1, f"one assistant for {graph_id}, got {found}"
    return str(found[0]["assistant_id"])


def _context(folder: Path, **extra: Any) -> dict[str, Any]:
    return {
        "knowledge_bases": [{"name": "docs", "folder": str(folder)}],
        "embedding": "fake",
        **extra,
    }


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _lines(folder: Path, citation: dict[str, Any]) -> str:
    text = (folder / citation["source"]).read_bytes().decode("utf-8").splitlines()
    return "\n".join(text[citation["line_start"] - 1 : citation["line_end"]])


def test_the_three_graphs_are_listed(client: SyncLangGraphClient) -> None:
    graph_ids = {a["graph_id"] for a in client.assistants.search(limit=50)}
    assert graph_ids == {"rag_subgraph", "chat_agent", "tool_agent"}


@pytest.mark.parametrize("graph_id", ["rag_subgraph", "chat_agent", "tool_agent"])
def test_studio_gets_input_output_and_context_schemas(
    client: SyncLangGraphClient, graph_id: str
) -> None:
    schemas = client.assistants.get_schemas(_assistant(client, graph_id))
    for key in ("input_schema", "output_schema", "context_schema"):
        assert schemas.get(key), f"{graph_id} serves no {key}: {schemas.get(key)!r}"
    assert "messages" in schemas["input_schema"]["properties"]
    assert "knowledge_bases" in schemas["context_schema"]["properties"]
    expected = "rag_grounded" if graph_id == "rag_subgraph" else "answer_citations"
    assert expected in schemas["output_schema"]["properties"]


def test_xray_shows_the_seven_nodes(client: SyncLangGraphClient) -> None:
    subgraph = client.assistants.get_graph(_assistant(client, "rag_subgraph"), xray=True)
    assert [n["id"] for n in subgraph["nodes"]] == ["__start__", *NODE_ORDER, "__end__"]
    chat = client.assistants.get_graph(_assistant(client, "chat_agent"), xray=True)
    ids = {n["id"] for n in chat["nodes"]}
    assert {f"rag:{name}" for name in NODE_ORDER} | {"answer", "extract_citations"} <= ids


def test_run_the_subgraph_on_a_folder(client: SyncLangGraphClient, docs_folder: Path) -> None:
    out = client.runs.wait(
        None,
        _assistant(client, "rag_subgraph"),
        input=_user(QUESTION),
        context=_context(docs_folder),
    )
    assert isinstance(out, dict)
    assert out["rag_grounded"] is True
    first = out["rag_citations"][0]
    assert first["source"] == "retry.md"
    assert first["text"] == _lines(docs_folder, first)
    assert "[1] Source: retry.md" in out["rag_context"]
    assert [s["node"] for s in out["rag_retrieval_debug"]["steps"]] == list(NODE_ORDER)


def test_a_vector_store_named_by_import_path_in_the_context(
    client: SyncLangGraphClient, docs_folder: Path
) -> None:
    context = _context(docs_folder)
    context["knowledge_bases"].append({"name": "wiki", "retriever": "tests.support.lc_store:wiki"})
    out = client.runs.wait(
        None,
        _assistant(client, "rag_subgraph"),
        input=_user("How is the proxy configured, and how are failed requests retried?"),
        context=context,
    )
    assert isinstance(out, dict)
    assert {c["kb"] for c in out["rag_citations"]} == {"docs", "wiki"}
    assert "wiki/proxy.md, lines 3-4" in out["rag_context"]


def test_chat_agent_streams_knowledge_events_and_answers(
    client: SyncLangGraphClient, tmp_path: Path
) -> None:
    folder = make_docs(tmp_path / "fresh")  # not indexed yet: the run indexes it first
    custom: list[dict[str, Any]] = []
    final: dict[str, Any] = {}
    for part in client.runs.stream(
        None,
        _assistant(client, "chat_agent"),
        input=_user(QUESTION),
        context=_context(folder),
        stream_mode=["custom", "values"],
        stream_subgraphs=True,
    ):
        if part.event.startswith("custom"):
            custom.append(part.data)
        elif part.event == "values":
            final = part.data
        assert part.event != "error", part.data
    events = [e["event"] for e in custom]
    assert "knowledge.index.progress" in events
    assert events.index("knowledge.search.started") < events.index("knowledge.search.done")
    done = next(e for e in custom if e["event"] == "knowledge.index.done")
    assert done["indexed"] is True and done["kb"] == "docs"
    assert final["answer"].startswith("Extractive answer (no chat model configured):")
    assert final["answer_citations"]
    for citation in final["answer_citations"]:
        assert final["answer"][citation["start"] : citation["end"]] == citation["marker"]


def test_chat_agent_keeps_a_conversation_on_a_thread(
    client: SyncLangGraphClient, docs_folder: Path
) -> None:
    assistant = _assistant(client, "chat_agent")
    thread = client.threads.create()
    first = client.runs.wait(
        thread["thread_id"], assistant, input=_user(QUESTION), context=_context(docs_folder)
    )
    assert isinstance(first, dict) and first["answer_citations"]
    second = client.runs.wait(
        thread["thread_id"], assistant, input=_user("thanks!"), context=_context(docs_folder)
    )
    assert isinstance(second, dict)
    assert second["rag_should_retrieve"] is False
    assert second["answer_citations"] == []
    assert len(second["messages"]) == 4


def test_tool_agent_runs_with_a_model_from_the_context(
    client: SyncLangGraphClient, docs_folder: Path
) -> None:
    out = client.runs.wait(
        None,
        _assistant(client, "tool_agent"),
        input=_user("hello"),
        context=_context(docs_folder, chat_model="fake:Hello from the scripted model."),
    )
    assert isinstance(out, dict)
    assert out["answer"] == "Hello from the scripted model."


def _react_model(body: dict[str, Any]) -> ChatReply | str:
    """A chat model behind a real OpenAI-compatible endpoint: with ``rag_search`` bound it
    searches once, then answers citing [1]; the subgraph's own structured calls get prose,
    so its nodes fall back to their heuristics."""
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    if "rag_search" not in tools:
        return "not the JSON you asked for"
    if any(m.get("role") == "tool" for m in body.get("messages") or []):
        return "Set max_attempts in client.toml [1]."
    return ChatReply(tool_calls=(ToolCall("rag_search", {"query": "number of retries"}),))


def test_tool_agent_searches_through_a_real_chat_endpoint(
    client: SyncLangGraphClient, docs_folder: Path, chat_port: int
) -> None:
    with OpenAIServer(chat_responder=_react_model, port=chat_port) as chat:
        spec = f"openai_compatible:fake-chat@{chat.base_url}"
        out = client.runs.wait(
            None,
            _assistant(client, "tool_agent"),
            input=_user("How do I change the number of retries?"),
            context=_context(docs_folder, chat_model=spec),
        )
    assert isinstance(out, dict)
    tool_messages = [m for m in out["messages"] if m["type"] == "tool"]
    assert len(tool_messages) == 1
    assert "[1] Source: retry.md" in tool_messages[0]["content"]
    assert out["answer"] == "Set max_attempts in client.toml [1]."
    (cited,) = out["answer_citations"]
    assert (cited["n"], cited["source"]) == (1, "retry.md")
    assert cited["line_start"] <= 4 <= cited["line_end"]


def test_tool_agent_without_a_model_fails_the_run_not_the_server(
    client: SyncLangGraphClient, docs_folder: Path
) -> None:
    assistant = _assistant(client, "tool_agent")
    thread = client.threads.create()
    run = client.runs.create(
        thread["thread_id"], assistant, input=_user("retries?"), context=_context(docs_folder)
    )
    client.runs.join(thread["thread_id"], run["run_id"])
    status = client.runs.get(thread["thread_id"], run["run_id"])["status"]
    assert status == "error"
    assert client.assistants.search(limit=50), "the server still answers"


def _refused(call: Any) -> str:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    assert refused.value.response.status_code == 422
    return str(refused.value.response.json()["detail"])


def test_a_mistyped_context_key_is_refused_not_dropped(
    client: SyncLangGraphClient, docs_folder: Path
) -> None:
    """langgraph-api drops top-level context keys the graph's schema lacks before the graph
    runs; a typo then searched nothing and the run succeeded. The server refuses it."""
    typo = {"knowledge_base": str(docs_folder), "embedding": "fake"}
    message = _refused(
        lambda: client.runs.wait(None, "rag_subgraph", input=_user(QUESTION), context=typo)
    )
    assert "'knowledge_base'" in message and "did you mean 'knowledge_bases'?" in message
    legacy = {"configurable": typo}  # the server copies it into the context
    message = _refused(
        lambda: client.runs.wait(None, "rag_subgraph", input=_user(QUESTION), config=legacy)
    )
    assert message.endswith("did you mean 'knowledge_bases'? (in config.configurable)")
    thread = client.threads.create()
    assistant = _assistant(client, "chat_agent")
    message = _refused(
        lambda: client.runs.create(
            thread["thread_id"],
            assistant,
            input=_user(QUESTION),
            context=_context(docs_folder, top_k=3),
        )
    )
    assert "did you mean 'search.top_k'?" in message
    assert client.runs.list(thread["thread_id"]) == [], "no run was queued"
    message = _refused(
        lambda: client.assistants.create(
            "tool_agent", context=_context(docs_folder, chat_modle="x")
        )
    )
    assert "'chat_modle'" in message and "did you mean 'chat_model'?" in message


def test_a_value_the_graph_refuses_is_refused_in_one_line_and_nothing_runs(
    client: SyncLangGraphClient, dev_server: DevServer, docs_folder: Path
) -> None:
    """``knowledge_bases`` as a mapping of names to objects: the run started and failed as
    it did, and the server logged the ConfigError with a 60-line traceback (issue 42)."""
    wrong = {"knowledge_bases": {"docs": {"folder": str(docs_folder)}}, "embedding": "fake"}
    logged = len(dev_server.log.read_bytes())
    message = _refused(
        lambda: client.runs.wait(None, "rag_subgraph", input=_user(QUESTION), context=wrong)
    )
    assert message.startswith("RagSettings knowledge_bases={'docs': {'folder': ")
    assert "is not a folder" in message and "a mapping of names to paths" in message
    assert b"Traceback" not in dev_server.log.read_bytes()[logged:]


def test_a_context_the_graph_accepts_still_runs_after_the_check(
    client: SyncLangGraphClient, docs_folder: Path
) -> None:
    assistant = client.assistants.create("rag_subgraph", context=_context(docs_folder))
    try:
        out = client.runs.wait(
            None, assistant["assistant_id"], input=_user(QUESTION), context={"max_rewrites": 0}
        )
    finally:  # the dev server keeps its assistants in the repository between sessions
        client.assistants.delete(assistant["assistant_id"])
    assert isinstance(out, dict) and out["rag_citations"]
    assert out["rag_citations"][0]["source"] == "retry.md"


INSPECT = "/kbgraph/inspect"


def test_the_inspector_is_mounted_beside_the_context_check(
    dev_server: DevServer, docs_folder: Path
) -> None:
    lab = httpx.get(
        f"{dev_server.url}{INSPECT}/api/search", params={"q": QUESTION}, timeout=120
    )  # the subgraph in the server's process; it indexes the folder first when needed
    assert lab.status_code == 200, lab.text
    assert lab.json()["results"][0]["source"] == "retry.md"
    index = httpx.get(f"{dev_server.url}{INSPECT}/api/index/{docs_folder.name}", timeout=60)
    assert index.status_code == 200, index.text
    assert {f["path"] for f in index.json()["files"]} >= {"retry.md", "auth/tokens.md"}
    page = httpx.get(f"{dev_server.url}{INSPECT}/search", timeout=60)
    assert page.status_code == 200
    assert f'href="{INSPECT}/runs"' in page.text, "links keep the mount path"
    refused = httpx.get(
        f"{dev_server.url}{INSPECT}/source/{docs_folder.name}/..%2F..%2Fetc%2Fpasswd"
    )
    assert refused.status_code == 403


def test_a_thread_of_the_server_opens_as_a_run_by_its_id(
    client: SyncLangGraphClient, dev_server: DevServer, docs_folder: Path
) -> None:
    thread = client.threads.create()
    out = client.runs.wait(
        thread["thread_id"],
        _assistant(client, "chat_agent"),
        input=_user(QUESTION),
        context=_context(docs_folder),
    )
    assert isinstance(out, dict) and out["answer_citations"]
    base = f"{dev_server.url}{INSPECT}"
    run = httpx.get(f"{base}/api/runs/thread/{thread['thread_id']}", timeout=60).json()
    nodes = [item["node"] for item in run["timeline"]]
    assert nodes[0] == "decide_retrieve" and nodes[-1] == "answer"
    assert run["graph"] == "chat_agent" and run["question"] == QUESTION
    assert run["citations"][0]["source"] == "retry.md"
    listed = httpx.get(f"{base}/api/runs", timeout=60).json()["threads"]
    assert thread["thread_id"] in {t["id"] for t in listed}
    html = httpx.get(f"{base}/runs/thread/{thread['thread_id']}", timeout=60).text
    # The thread's knowledge base ("docs") is the folder the inspector shows under the
    # folder's own name: its sources link there, by folder.
    assert f'href="{INSPECT}/source/{docs_folder.name}/retry.md?lines=' in html
    missing = httpx.get(f"{base}/api/runs/thread/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 400 and "no thread" in missing.json()["detail"]


def _chat_model(body: dict[str, Any]) -> str:
    """The subgraph's structured calls get prose (its nodes fall back to their heuristics);
    the answer cites [1]."""
    if body.get("response_format") or body.get("tools"):
        return "not the JSON you asked for"
    return "Set max_attempts in client.toml to change the number of retries [1]."


def test_chat_agent_streams_its_answer_once(
    client: SyncLangGraphClient, docs_folder: Path, chat_port: int
) -> None:
    """stream_mode="messages-tuple" over the server (issue 30): the answer's tokens come
    under one id, and the whole answer never comes again as a message of its own."""
    texts: dict[str, str] = {}
    with OpenAIServer(chat_responder=_chat_model, port=chat_port) as chat:
        spec = f"openai_compatible:fake-chat@{chat.base_url}"
        for part in client.runs.stream(
            None,
            _assistant(client, "chat_agent"),
            input=_user(QUESTION),
            context=_context(docs_folder, chat_model=spec, answer_check={"policy": "flag"}),
            stream_mode="messages-tuple",
        ):
            assert part.event != "error", part.data
            if part.event == "messages":
                message = part.data[0]
                if str(message.get("type")).lower().startswith("ai"):  # AIMessageChunk too
                    key = str(message["id"])
                    texts[key] = texts.get(key, "") + str(message.get("content") or "")
    answer = "Set max_attempts in client.toml to change the number of retries [1]."
    assert list(texts.values()) == [answer], texts


DRAFT = "DRAFT: the number of retries is set in server.yaml."


def _drafting_model(body: dict[str, Any]) -> str:
    """The first answer is a draft the check rejects (it cites no source); asked again
    (the request then holds that draft as an assistant message), it cites [1]."""
    if body.get("response_format") or body.get("tools"):
        return "not the JSON you asked for"
    if any(m.get("role") == "assistant" for m in body.get("messages") or []):
        return "Set max_attempts in client.toml to change the number of retries [1]."
    return DRAFT


def test_studio_shows_one_answer_never_the_rejected_draft(
    client: SyncLangGraphClient, docs_folder: Path, chat_port: int
) -> None:
    """Issue 40: in langgraph dev/Studio a rejected answer streamed token by token, then
    its replacement came as a second message with a new id. Under the default policy
    (repair) the draft is held for the check: one AI message streams, the answer kept."""
    texts: dict[str, str] = {}
    final: dict[str, Any] = {}
    with OpenAIServer(chat_responder=_drafting_model, port=chat_port) as chat:
        spec = f"openai_compatible:fake-chat@{chat.base_url}"
        for part in client.runs.stream(
            None,
            _assistant(client, "chat_agent"),
            input=_user(QUESTION),
            context=_context(docs_folder, chat_model=spec),
            stream_mode=["messages-tuple", "values"],
        ):
            assert part.event != "error", part.data
            if part.event == "values":
                final = part.data
            if part.event == "messages":
                message = part.data[0]
                if str(message.get("type")).lower().startswith("ai"):
                    key = str(message["id"])
                    texts[key] = texts.get(key, "") + str(message.get("content") or "")
    assert len(texts) == 1, texts  # one answer message
    (streamed,) = texts.values()
    assert "DRAFT" not in streamed
    answer = final["messages"][-1]
    assert answer["content"] == streamed and answer["id"] in texts
    assert answer["response_metadata"]["kbgraph_check"]["policy"] == "repair"


def _unsupported_model(body: dict[str, Any]) -> str:
    if body.get("response_format") or body.get("tools"):
        return "not the JSON you asked for"
    return "Set max_attempts in client.toml to 42 to change the number of retries [1]."


def test_under_flag_the_streamed_answer_is_marked_in_place(
    client: SyncLangGraphClient, docs_folder: Path, chat_port: int
) -> None:
    """Issue 40: the message a chat UI renders carried no mark. Under flag the answer
    streams as written; the run's final values hold that message (same id) with the
    verdict in its metadata and the visible line in its content."""
    ids: set[str] = set()
    final: dict[str, Any] = {}
    with OpenAIServer(chat_responder=_unsupported_model, port=chat_port) as chat:
        spec = f"openai_compatible:fake-chat@{chat.base_url}"
        for part in client.runs.stream(
            None,
            _assistant(client, "chat_agent"),
            input=_user(QUESTION),
            context=_context(docs_folder, chat_model=spec, answer_check={"policy": "flag"}),
            stream_mode=["messages-tuple", "values"],
        ):
            assert part.event != "error", part.data
            if part.event == "values":
                final = part.data
            elif part.event == "messages" and str(part.data[0].get("type")).lower().startswith(
                "ai"
            ):
                ids.add(str(part.data[0]["id"]))
    answer = final["messages"][-1]
    assert ids == {answer["id"]}
    verdict = answer["response_metadata"]["kbgraph_check"]
    assert verdict["policy"] == "flag" and verdict["grounded"] is False
    assert "⚠ Not supported by the sources:" in answer["content"]


def test_the_real_server_refuses_a_rebound_host_a_foreign_page_and_a_foreign_folder(
    dev_server: DevServer, docs_folder: Path
) -> None:
    # issue 42 hole 2: `langgraph dev` answered these with 200 and
    # access-control-allow-origin: *, ran on any folder and indexed it.
    body = {"assistant_id": "rag_subgraph", "input": _user(QUESTION)}
    rebound = httpx.post(
        f"{dev_server.url}/runs/wait",
        json={**body, "context": _context(docs_folder)},
        headers={"Host": "127.0.0.1.rebind.example", "Origin": "https://evil.example"},
        timeout=60,
    )
    assert rebound.status_code == 421, rebound.text
    page = httpx.post(
        f"{dev_server.url}/runs/wait",
        json={**body, "context": _context(docs_folder)},
        headers={"Origin": "https://evil.example"},
        timeout=60,
    )
    assert page.status_code == 403 and "access-control-allow-origin" not in page.headers
    outside = Path("/etc")
    folder = httpx.post(
        f"{dev_server.url}/runs/wait", json={**body, "context": _context(outside)}, timeout=60
    )
    assert folder.status_code == 403 and "KBGRAPH_ALLOWED_FOLDERS" in folder.text


def test_the_real_server_imports_no_code_a_request_names(
    dev_server: DevServer, docs_folder: Path
) -> None:
    # Hole B: {"retriever": "os:abort"} in a run's context killed the server (rc -6).
    context = {"knowledge_bases": [{"name": "r", "retriever": "os:abort"}], "embedding": "fake"}
    body = {"assistant_id": "rag_subgraph", "input": _user(QUESTION), "context": context}
    reply = httpx.post(
        f"{dev_server.url}/runs/wait",
        json=body,
        headers={"Origin": "https://smith.langchain.com"},
        timeout=60,
    )
    assert reply.status_code == 403 and "KBGRAPH_ALLOWED_RETRIEVERS" in reply.text
    assert dev_server.process.poll() is None
    assert httpx.get(f"{dev_server.url}/ok", timeout=10).status_code == 200


def test_the_real_server_connects_to_no_store_a_request_names(
    dev_server: DevServer, docs_folder: Path
) -> None:
    # Hole C: an allowed folder with "store": "postgresql://probe@127.0.0.1:PORT/db" made
    # the server open a connection to whatever listened on PORT.
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(2)
        port = listener.getsockname()[1]
        kb = {"name": "docs", "folder": str(docs_folder)}
        for key in ("store", "read_store"):
            url = f"postgresql://probe@127.0.0.1:{port}/db?connect_timeout=2"
            context = {"knowledge_bases": [{**kb, key: url}], "embedding": "fake"}
            body = {"assistant_id": "rag_subgraph", "input": _user(QUESTION), "context": context}
            reply = httpx.post(f"{dev_server.url}/runs/wait", json=body, timeout=60)
            assert reply.status_code == 403 and "KBGRAPH_ALLOWED_STORES" in reply.text
        with pytest.raises(TimeoutError):
            listener.accept()[0].close()  # nothing connected


def test_the_real_server_sends_no_key_to_a_model_server_a_request_names(
    dev_server: DevServer, docs_folder: Path, chat_port: int
) -> None:
    # chat_model "openai_compatible:m@http://anywhere/v1" sent the server's OPENAI_API_KEY
    # to that URL; the one model server it was started with still answers (tests above).
    spec = f"openai_compatible:fake-chat@http://127.0.0.1:{chat_port + 1}/v1"
    body = {"assistant_id": "chat_agent", "input": _user(QUESTION)}
    reply = httpx.post(
        f"{dev_server.url}/runs/wait",
        json={**body, "context": _context(docs_folder, chat_model=spec)},
        timeout=60,
    )
    assert reply.status_code == 403 and "KBGRAPH_ALLOWED_MODELS" in reply.text


def test_the_real_server_spends_no_key_on_a_model_a_request_names(
    dev_server: DevServer, docs_folder: Path
) -> None:
    # "openai:<any model>" stayed a run's choice: the server's OPENAI_API_KEY paid for it.
    for context in (
        _context(docs_folder, chat_model="openai:gpt-4o"),
        _context(docs_folder, embedding="huggingface:/some/path"),  # a folder to load
    ):
        body = {"assistant_id": "chat_agent", "input": _user(QUESTION), "context": context}
        reply = httpx.post(f"{dev_server.url}/runs/wait", json=body, timeout=60)
        assert reply.status_code == 403 and "KBGRAPH_ALLOWED_MODELS" in reply.text


def test_the_real_server_records_no_run_a_request_asks_for(
    client: SyncLangGraphClient, docs_folder: Path, runs_folder: Path
) -> None:
    # record_runs: true wrote a record into the server's KBGRAPH_RUNS_DIR (started without
    # KBGRAPH_ALLOW_RECORD_RUNS); the run itself still answers.
    out = client.runs.wait(
        None,
        _assistant(client, "rag_subgraph"),
        input=_user(QUESTION),
        context=_context(docs_folder, record_runs=True),
    )
    assert isinstance(out, dict) and out["rag_citations"]
    assert list(runs_folder.iterdir()) == []
