"""The real langchain-openai clients against the loopback OpenAI server: batching, retries,
Retry-After, timeouts, isolation of refused inputs, the embedding cache across killed and
concurrent processes, and the server's own chat endpoints (which other suites reuse)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import cast

import httpx
import numpy as np
import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

from kbgraph.errors import EmbeddingError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._embeddings import (
    BatchEmbedder,
    EmbeddingCache,
    describe_embeddings,
    l2_normalise,
    length_order,
    resolve_embeddings,
)
from kbgraph.retrieval._records import text_hash
from kbgraph.testing import FakeEmbeddings
from tests.support import CHAT_PATH, EMBEDDINGS_PATH, ChatReply, OpenAIServer

pytestmark = pytest.mark.integration

MODEL = "fake-embedding"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(embedding_model=MODEL) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_ambient_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _texts(n: int, offset: int = 0) -> list[str]:
    return [f"chunk {i} — ünïcode text\r\nsecond line {i % 5}" for i in range(offset, offset + n)]


def _expected(texts: list[str]) -> np.ndarray:
    return l2_normalise(np.array(FakeEmbeddings().embed_documents(texts)))


def _embedder(server: OpenAIServer, delays: list[float], **kwargs: object) -> BatchEmbedder:
    timeout = float(kwargs.pop("timeout", 10.0))  # type: ignore[arg-type]
    embeddings = resolve_embeddings(f"{server.base_url}#{MODEL}", timeout=timeout)
    return BatchEmbedder(embeddings, sleep=delays.append, **kwargs)  # type: ignore[arg-type]


# -- batching and spec forms ---------------------------------------------------------------


@pytest.mark.parametrize("form", ["url", "openai_compatible"])
def test_batches_over_http_match_the_model(server: OpenAIServer, form: str) -> None:
    spec = (
        f"{server.base_url}#{MODEL}"
        if form == "url"
        else f"openai_compatible:{MODEL}@{server.base_url}"
    )
    texts = _texts(150)
    outcome = BatchEmbedder(resolve_embeddings(spec), batch_size=64).embed(texts)
    assert [len(batch) for batch in server.embedding_inputs()] == [64, 64, 22]
    sent = [t for batch in server.embedding_inputs() for t in batch]
    assert sorted(sent) == sorted(texts)
    assert [len(t) for t in sent] == sorted(map(len, texts), reverse=True)  # longest first
    assert np.allclose(outcome.vectors, _expected(texts), atol=1e-6)
    body = server.requests_to(EMBEDDINGS_PATH)[0].body
    assert body["model"] == MODEL
    assert body["encoding_format"] == "base64"  # the SDK's default, decoded by the SDK


def test_openai_spec_goes_where_openai_api_base_points(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
    embedder = BatchEmbedder(resolve_embeddings("openai:text-embedding-3-small"))
    vector = embedder.embed_query("retry policy")
    assert np.allclose(vector, _expected(["retry policy"])[0], atol=1e-6)
    request = server.requests_to(EMBEDDINGS_PATH)[0]
    assert request.body["model"] == "text-embedding-3-small"
    assert request.headers["authorization"] == "Bearer sk-test"


def test_azure_spec_over_http(server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.azure_endpoint)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key")
    monkeypatch.setenv("OPENAI_API_VERSION", "2024-02-01")
    outcome = BatchEmbedder(resolve_embeddings("azure_openai:team-embed")).embed(["a b", "c"])
    assert outcome.vectors.shape == (2, 384)
    request = server.requests_to(EMBEDDINGS_PATH)[0]
    assert request.raw_path.startswith("/openai/deployments/team-embed/embeddings")
    assert "api-version=2024-02-01" in request.raw_path
    assert request.headers["api-key"] == "azure-key"


def test_api_key_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with OpenAIServer(api_key="right-key") as keyed:
        spec = f"{keyed.base_url}#{MODEL}"
        with pytest.raises(EmbeddingError, match="API key"):
            BatchEmbedder(resolve_embeddings(spec)).embed(["a", "b"])
        assert [r.status for r in keyed.requests] == [401]  # fatal: no retries
        monkeypatch.setenv("OPENAI_API_KEY", "right-key")
        assert BatchEmbedder(resolve_embeddings(spec)).embed(["a"]).failed == []


# -- failures --------------------------------------------------------------------------


@pytest.mark.parametrize("retry_after", [2, "http-date"])
def test_429_with_retry_after_then_success(server: OpenAIServer, retry_after: object) -> None:
    if retry_after == "http-date":
        when = datetime.now(UTC) + timedelta(seconds=30)
        server.rate_limit_next(1, retry_after=format_datetime(when, usegmt=True))
    else:
        server.rate_limit_next(1, retry_after=2)
    delays: list[float] = []
    outcome = _embedder(server, delays).embed(_texts(3))
    assert [r.status for r in server.requests] == [429, 200]
    assert server.embedding_inputs()[0] == server.embedding_inputs()[1]
    assert len(delays) == 1
    if retry_after == 2:
        assert delays == [2.0]
    else:
        assert 25.0 <= delays[0] <= 31.0  # whole seconds in an HTTP-date
    assert outcome.failed == []


def test_500_then_success(server: OpenAIServer) -> None:
    server.fail_next(2, status=500)
    delays: list[float] = []
    outcome = _embedder(server, delays, base_delay=0.5).embed(_texts(5))
    assert [r.status for r in server.requests] == [500, 500, 200]
    assert len(delays) == 2
    assert 0.25 <= delays[0] <= 0.5
    assert np.allclose(outcome.vectors, _expected(_texts(5)), atol=1e-6)


def test_persistent_503_gives_up_with_a_clear_error(server: OpenAIServer) -> None:
    server.fail_next(10, status=503)
    delays: list[float] = []
    with pytest.raises(EmbeddingError, match=r"still failing after 3 attempts.*HTTP 503"):
        _embedder(server, delays, max_retries=2).embed(_texts(2))
    assert len(server.requests) == 3


def test_a_poisoned_input_is_isolated(server: OpenAIServer) -> None:
    server.reject_inputs_containing("POISON")
    texts = _texts(20)
    # As long as its neighbours, so that it stays in the first batch of 8 (longest first).
    texts[13] = "POISON pill — ☠".ljust(len(texts[13]), "!")
    delays: list[float] = []
    outcome = _embedder(server, delays, batch_size=8).embed(texts)
    assert outcome.failed == [13]
    assert delays == []  # a refusal is not retried, it is bisected
    good = [i for i in range(20) if i != 13]
    assert np.allclose(outcome.vectors[good], _expected([texts[i] for i in good]), atol=1e-6)
    assert not outcome.vectors[13].any()
    assert [1 for r in server.requests if r.status == 400] == [1] * 4  # 8 → 4 → 2 → 1


def test_one_refused_new_chunk_does_not_fail_an_incremental_index(
    server: OpenAIServer, tmp_path: Path
) -> None:
    """With an index in place, the only new chunk of a run is refused (HTTP 400): the run
    keeps the index's vector size, records the chunk as failed, and a later run retries it."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "retry.md").write_text("# Retry\n\nExponential backoff with jitter.\n")
    spec = f"openai_compatible:{MODEL}@{server.base_url}"
    assert KnowledgeBase(folder, embedding=spec).index().stats.embedding["dims"] == 384
    server.reject_inputs_containing("POISON")
    (folder / "bad.md").write_text("POISON pill\n")
    kb = KnowledgeBase(folder, embedding=spec)  # a new run: the vector size is not known yet
    report = kb.index()
    assert (report.failed_embeddings, report.embedded, report.rebuilt) == (1, 0, False)
    assert report.stats.embedding["dims"] == 384 and report.stats.file_count == 2
    # Nothing of this run was accepted before the refusal, so a one-word probe tells a
    # refused input from a provider that refuses every request (issue 24): it is accepted.
    sent = server.requests_to(EMBEDDINGS_PATH)
    assert [r.status for r in sent][-2:] == [400, 200]
    assert sent[-2].body["input"] == ["POISON pill"] and sent[-1].body["input"] == ["probe"]
    kb.validate()
    hits = kb.search("exponential backoff", top_k=2, mode="vector")
    assert hits[0].chunk.source == "retry.md"
    server.clear_faults()
    retried = kb.index()
    assert (retried.failed_embeddings, retried.embedded) == (0, 1)


def test_a_timeout_is_retried(server: OpenAIServer) -> None:
    server.hang_next(1, seconds=30)
    delays: list[float] = []
    started = time.monotonic()
    outcome = _embedder(server, delays, timeout=0.5).embed(_texts(4))
    assert time.monotonic() - started < 10
    assert len(delays) == 1
    assert len(server.requests_to(EMBEDDINGS_PATH)) == 2
    assert np.allclose(outcome.vectors, _expected(_texts(4)), atol=1e-6)


# -- the cache across processes ----------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from kbgraph.retrieval._embeddings import (
        BatchEmbedder, EmbeddingCache, embed_with_cache, resolve_embeddings,
    )

    spec, cache_path, n, offset, batch = sys.argv[1:6]
    texts = [
        f"chunk {i} — ünïcode text\\r\\nsecond line {i % 5}"
        for i in range(int(offset), int(offset) + int(n))
    ]
    embedder = BatchEmbedder(resolve_embeddings(spec, timeout=120), batch_size=int(batch))
    with EmbeddingCache(Path(cache_path), embedder.info.key) as cache:
        outcome = embed_with_cache(
            embedder, cache, texts, lambda done, total: print(done, total, flush=True)
        )
    print("finished", outcome.embedded, outcome.reused, flush=True)
    """
)


def _spawn(
    script: Path, spec: str, cache: Path, n: int, offset: int, batch: int
) -> subprocess.Popen[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    args = [sys.executable, str(script), spec, str(cache), str(n), str(offset), str(batch)]
    return subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def test_a_killed_run_keeps_the_batches_it_committed(server: OpenAIServer, tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD, encoding="utf-8")
    cache_path = tmp_path / "index" / "embeddings.sqlite"
    spec = f"{server.base_url}#{MODEL}"
    # Three batches go through; the fourth request hangs, so the kill lands mid-run.
    server.hang_next(100, seconds=120, after=3)
    child = _spawn(script, spec, cache_path, n=40, offset=0, batch=4)
    try:
        assert child.stdout is not None
        lines = [child.stdout.readline().strip() for _ in range(4)]
        assert lines == ["0 40", "4 40", "8 40", "12 40"], (
            child.stderr.read() if child.stderr else ""
        )
        deadline = time.monotonic() + 30
        while len(server.requests_to(EMBEDDINGS_PATH)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.requests_to(EMBEDDINGS_PATH)[3].status is None  # held by the hang
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
    texts = _texts(40)
    committed = [texts[i] for i in length_order(texts)[:12]]  # the first three batches
    key = describe_embeddings(spec).key
    with EmbeddingCache(cache_path, key) as cache:
        assert len(cache) == 12
        got = cache.get_many([text_hash(t) for t in texts])
    assert set(got) == {text_hash(t) for t in committed}
    stored = np.array([got[text_hash(t)] for t in committed])
    assert np.allclose(stored, _expected(committed), atol=1e-6)


def test_two_processes_share_one_cache(server: OpenAIServer, tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD, encoding="utf-8")
    cache_path = tmp_path / "embeddings.sqlite"
    spec = f"{server.base_url}#{MODEL}"
    children = [
        _spawn(script, spec, cache_path, n=30, offset=0, batch=3),
        _spawn(script, spec, cache_path, n=30, offset=15, batch=3),
    ]
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert out.splitlines()[-1].startswith("finished")
    with EmbeddingCache(cache_path, describe_embeddings(spec).key) as cache:
        assert len(cache) == 45
        got = cache.get_many([text_hash(t) for t in _texts(45)])
    stored = np.array([got[text_hash(t)] for t in _texts(45)])
    assert np.allclose(stored, _expected(_texts(45)), atol=1e-6)


# -- the server's chat endpoints (reused by the subgraph's tests) -------------------------


def _chat(server: OpenAIServer, **kwargs: object) -> ChatOpenAI:
    return ChatOpenAI(
        model="fake-chat",
        base_url=server.base_url,
        api_key=SecretStr("x"),
        max_retries=0,
        **kwargs,  # type: ignore[arg-type]
    )


SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "search the knowledge base",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


def test_chat_plain_and_tool_call_replies(server: OpenAIServer) -> None:
    server.queue_reply("Grüße — the answer [1]", ChatReply.tool("search", {"q": "retry"}))
    chat = _chat(server)
    assert chat.invoke("hello").content == "Grüße — the answer [1]"
    message = chat.bind_tools([SEARCH_TOOL]).invoke("find it")
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [("search", {"q": "retry"})]
    requests = server.requests_to(CHAT_PATH)
    assert requests[0].body["messages"][-1]["content"] == "hello"
    assert requests[1].body["tools"][0]["function"]["name"] == "search"
    assert server.pending_replies == 0


def test_chat_structured_output_gets_the_scripted_json(server: OpenAIServer) -> None:
    class Verdict(BaseModel):
        grounded: bool
        reason: str

    server.queue_reply(ChatReply.json({"grounded": True, "reason": "cited [1]"}))
    result = _chat(server).with_structured_output(Verdict).invoke("judge")
    assert result == Verdict(grounded=True, reason="cited [1]")
    assert server.requests_to(CHAT_PATH)[0].body["response_format"]["type"] == "json_schema"


def test_chat_streaming_content_tool_calls_and_usage(server: OpenAIServer) -> None:
    server.queue_reply("streamed reply with ünïcode", ChatReply.tool("search", {"q": "ä"}))
    chat = _chat(server, stream_usage=True)
    pieces = [chunk.content for chunk in chat.stream("hi")]
    assert len([p for p in pieces if p]) > 1
    assert "".join(str(p) for p in pieces) == "streamed reply with ünïcode"
    chunks = cast(list[AIMessageChunk], list(chat.bind_tools([SEARCH_TOOL]).stream("find")))
    merged = add_ai_message_chunks(chunks[0], *chunks[1:])
    assert [(c["name"], c["args"]) for c in merged.tool_calls] == [("search", {"q": "ä"})]
    assert merged.usage_metadata is not None and merged.usage_metadata["total_tokens"] > 0
    assert all(r.body["stream"] for r in server.requests_to(CHAT_PATH))


def test_chat_responder_and_empty_script(server: OpenAIServer) -> None:
    chat = _chat(server)
    with pytest.raises(Exception, match="no scripted chat reply"):
        chat.invoke("nothing queued")
    server.chat_responder = lambda body: f"echo: {body['messages'][-1]['content']}"
    assert chat.invoke("ping").content == "echo: ping"


def test_models_unknown_routes_and_chat_faults(server: OpenAIServer) -> None:
    models = httpx.get(f"{server.base_url}/models").json()
    assert {m["id"] for m in models["data"]} == {MODEL, "fake-chat"}
    assert httpx.post(f"{server.base_url}/responses", json={}).status_code == 404
    server.fail_next(1, status=503, path=CHAT_PATH)
    server.queue_reply("after the outage")
    response = httpx.post(f"{server.base_url}/chat/completions", json={"messages": []})
    assert response.status_code == 503
    assert _chat(server).invoke("again").content == "after the outage"
