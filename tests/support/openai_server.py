"""A real OpenAI-compatible HTTP server on 127.0.0.1, for tests. No mocks: clients under test
(langchain-openai, the openai SDK, httpx) talk to it over a real socket.

    with OpenAIServer() as server:                      # embeddings: FakeEmbeddings
        emb = OpenAIEmbeddings(model="fake", base_url=server.base_url, api_key="x",
                               check_embedding_ctx_length=False, max_retries=0)
        server.rate_limit_next(1, retry_after=2)        # next request: 429, Retry-After: 2
        server.reject_inputs_containing("POISON")       # any batch holding it: 400
        server.shape_items(lambda items: items[::-1])   # `data` reversed, each with its index
        server.queue_reply("plain answer", ChatReply.tool("search", {"q": "x"}))
        chat = ChatOpenAI(model="fake-chat", base_url=server.base_url, api_key="x")
        ...
        assert server.requests_to("/v1/embeddings")[0].body["input"] == [...]

Endpoints: ``POST /v1/embeddings`` (str or list input; ``encoding_format`` float or base64),
``POST /v1/chat/completions`` (scripted replies; plain content, tool calls, JSON for
``response_format``; ``"stream": true`` answers with server-sent events), ``GET /v1/models``.
Faults are queued per path and consumed one request at a time, before routing.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from kbgraph.testing import FakeEmbeddings

EmbedFn = Callable[[list[str]], list[list[float]]]
ItemShaper = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
EMBEDDINGS_PATH = "/v1/embeddings"
CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
# Azure OpenAI puts the deployment in the path: /openai/deployments/<name>/embeddings.
_AZURE_PATH = re.compile(r"^/openai/deployments/[^/]+/(?P<op>embeddings|chat/completions)$")


@dataclass(slots=True)
class RecordedRequest:
    """One request, recorded on arrival (so the list is in arrival order); ``status`` is
    filled in when it is answered (``None`` while a hang fault holds it)."""

    method: str
    path: str  # the route: Azure deployment paths are recorded as their /v1/... route
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None
    raw_path: str = ""  # as requested, with the query string
    status: int | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # generated when None


@dataclass(frozen=True, slots=True)
class ChatReply:
    """A scripted assistant message: text content, tool calls, or both."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()

    @classmethod
    def text(cls, content: str) -> ChatReply:
        return cls(content=content)

    @classmethod
    def json(cls, value: Any) -> ChatReply:
        """Content that is the JSON of ``value`` (what a ``response_format`` request gets)."""
        return cls(content=json.dumps(value))

    @classmethod
    def tool(
        cls, name: str, arguments: Mapping[str, Any] | str, id: str | None = None
    ) -> ChatReply:
        return cls(tool_calls=(ToolCall(name, arguments, id),))


ChatResponder = Callable[[dict[str, Any]], "ChatReply | str"]


@dataclass(slots=True)
class _Fault:
    kind: Literal["status", "hang", "pass"]
    path: str | None
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "injected failure"
    seconds: float = 0.0


def _error_body(message: str, status: int) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}
    return {
        "error": {
            "message": message,
            "type": kinds.get(status, "server_error"),
            "param": None,
            "code": None,
        }
    }


def _as_embed_fn(embeddings: Embeddings | EmbedFn | None) -> EmbedFn:
    if embeddings is None:
        return FakeEmbeddings().embed_documents
    if isinstance(embeddings, Embeddings):
        return embeddings.embed_documents
    return embeddings


class OpenAIServer:
    """Loopback OpenAI API subset. Use as a context manager, or ``start()`` / ``stop()``.

    ``embeddings``: the model behind ``/v1/embeddings`` — any LangChain ``Embeddings`` or a
    function of a list of texts (default ``FakeEmbeddings()``, 384 dims). ``api_key``: when
    set, requests without ``Authorization: Bearer <api_key>`` (or Azure's ``api-key``
    header) get 401. ``chat_responder``: called with the request body when no queued reply
    is left. Azure OpenAI clients work too: pass ``server.azure_endpoint`` as the endpoint;
    ``/openai/deployments/<name>/...`` is served as the matching ``/v1/...`` route."""

    def __init__(
        self,
        *,
        embeddings: Embeddings | EmbedFn | None = None,
        embedding_model: str = "fake-embedding",
        chat_model: str = "fake-chat",
        api_key: str | None = None,
        chat_responder: ChatResponder | None = None,
        port: int = 0,
    ) -> None:
        self.embedding_model = embedding_model
        self.wanted_port = port  # 0: any free one; a served graph's allow-list names one
        self.chat_model = chat_model
        self.api_key = api_key
        self.chat_responder = chat_responder
        self._embed = _as_embed_fn(embeddings)
        self._lock = threading.Lock()
        self._faults: deque[_Fault] = deque()
        self._markers: dict[str, int] = {}
        self._shape: ItemShaper | None = None
        self._replies: deque[ChatReply] = deque()
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        handler = type("Handler", (_Handler,), {"app": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.wanted_port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="openai-test-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests hanging on an injected fault are released."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started; call start() or use `with`")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, the ``base_url`` OpenAI clients take."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def azure_endpoint(self) -> str:
        """``http://127.0.0.1:<port>``, the ``azure_endpoint`` Azure OpenAI clients take."""
        return f"http://127.0.0.1:{self.port}"

    # -- failure injection --------------------------------------------------------------

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 500,
        headers: Mapping[str, str] | None = None,
        message: str = "injected failure",
        path: str | None = EMBEDDINGS_PATH,
        after: int = 0,
    ) -> None:
        """The next ``count`` requests to ``path`` (any path when None) get ``status``;
        with ``after``, that many requests are first served normally."""
        fault = _Fault("status", path, status, dict(headers or {}), message)
        self._enqueue(fault, count, after)

    def rate_limit_next(
        self,
        count: int = 1,
        *,
        retry_after: float | str = 1,
        path: str | None = EMBEDDINGS_PATH,
        after: int = 0,
    ) -> None:
        """The next ``count`` requests get 429 with ``Retry-After`` (seconds or HTTP-date)."""
        value = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
        headers = {"Retry-After": value}
        self.fail_next(
            count, status=429, headers=headers, message="rate limited", path=path, after=after
        )

    def hang_next(
        self,
        count: int = 1,
        *,
        seconds: float = 30.0,
        path: str | None = EMBEDDINGS_PATH,
        after: int = 0,
    ) -> None:
        """The next ``count`` requests wait ``seconds`` (or until ``stop()``) before being
        answered normally — longer than a client's timeout, so the client gives up. With
        ``after``, that many requests are first served normally."""
        self._enqueue(_Fault("hang", path, seconds=seconds), count, after)

    def _enqueue(self, fault: _Fault, count: int, after: int) -> None:
        with self._lock:
            self._faults.extend(_Fault("pass", fault.path) for _ in range(after))
            self._faults.extend(replace(fault) for _ in range(count))

    def reject_inputs_containing(self, marker: str, *, status: int = 400) -> None:
        """From now on, an embeddings request with any input containing ``marker`` gets
        ``status`` (the whole request fails, as with OpenAI)."""
        with self._lock:
            self._markers[marker] = status

    def shape_items(self, shaper: ItemShaper | None) -> None:
        """From now on, the ``data`` items of every embeddings answer (each
        ``{"object", "index", "embedding"}``, in input order) go through ``shaper`` first:
        reorder them, drop their ``index``, drop items … (None: as computed)."""
        with self._lock:
            self._shape = shaper

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self._markers.clear()
            self._shape = None

    # -- chat script --------------------------------------------------------------------

    def queue_reply(self, *replies: ChatReply | str) -> None:
        """Replies for the next chat requests, in order (a ``str`` is plain content)."""
        with self._lock:
            self._replies.extend(ChatReply.text(r) if isinstance(r, str) else r for r in replies)

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    # -- recorded requests --------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def embedding_inputs(self, *, ok_only: bool = False) -> list[list[str]]:
        """The ``input`` of each embeddings request, as a list of texts."""
        out = []
        for r in self.requests_to(EMBEDDINGS_PATH):
            if ok_only and r.status != 200:
                continue
            value = (r.body or {}).get("input")
            out.append([value] if isinstance(value, str) else list(value or []))
        return out

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # -- internals used by the handler ---------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _take_fault(self, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.path is None or fault.path == path:
                    self._faults.remove(fault)
                    return fault
        return None

    def _rejecting_marker(self, texts: Sequence[str]) -> tuple[str, int] | None:
        with self._lock:
            markers = dict(self._markers)
        for marker, status in markers.items():
            if any(marker in text for text in texts):
                return marker, status
        return None

    def _next_reply(self, body: dict[str, Any]) -> ChatReply | None:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        if self.chat_responder is None:
            return None
        reply = self.chat_responder(body)
        return ChatReply.text(reply) if isinstance(reply, str) else reply

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}-{next(self._ids)}"


def _encode_vector(vector: Sequence[float], encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
    return [float(v) for v in vector]


def _count_words(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).split())


class _Handler(BaseHTTPRequestHandler):
    app: OpenAIServer
    protocol_version = "HTTP/1.1"
    _record: RecordedRequest | None = None

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read ``server.requests`` instead of stderr."""

    # -- plumbing -----------------------------------------------------------------------

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}

    def _send_json(
        self, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode("utf-8")
        if self._record is not None:
            # Set before the bytes go out: a client that raises on this response may
            # read ``requests`` before ``_handle`` returns.
            self._record.status = status
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer

    def _handle(self, method: str) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        azure = _AZURE_PATH.match(path)
        if azure is not None:
            path = f"/v1/{azure['op']}"
        body = self._read_body() if method == "POST" else None
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = RecordedRequest(method, path, headers, body, raw_path=self.path)
        self.app._record(record)
        self._record = record
        record.status = self._dispatch(method, path, body)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _dispatch(self, method: str, path: str, body: Any) -> int:
        app = self.app
        if app.api_key is not None and app.api_key not in (
            self.headers.get("api-key"),  # Azure's header
            (self.headers.get("Authorization") or "").removeprefix("Bearer "),
        ):
            return self._fail(401, "invalid api key")
        fault = app._take_fault(path)
        if fault is not None and fault.kind == "status":
            return self._fail(fault.status, fault.message, fault.headers)
        if fault is not None and fault.kind == "hang" and app._stopping.wait(fault.seconds):
            return self._fail(503, "server stopping")
        routes: dict[tuple[str, str], Callable[[Any], int]] = {
            ("POST", EMBEDDINGS_PATH): self._embeddings,
            ("POST", CHAT_PATH): self._chat,
            ("GET", MODELS_PATH): self._models,
        }
        route = routes.get((method, path))
        if route is None:
            return self._fail(404, f"no route for {method} {path} in the test server")
        if method == "POST" and not isinstance(body, dict):
            return self._fail(400, "the body must be a JSON object")
        return route(body)

    def _fail(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> int:
        self._send_json(status, _error_body(message, status), headers)
        return status

    # -- routes -------------------------------------------------------------------------

    def _models(self, _body: Any) -> int:
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "kbgraph-tests"}
            for m in (self.app.embedding_model, self.app.chat_model)
        ]
        self._send_json(200, {"object": "list", "data": data})
        return 200

    def _embeddings(self, body: dict[str, Any]) -> int:
        raw = body.get("input")
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list) or not items:
            return self._fail(400, "'input' must be a string or a non-empty list")
        # Token-id inputs (lists of ints) are embedded as their decimal text.
        texts = [t if isinstance(t, str) else " ".join(map(str, t)) for t in items]
        rejected = self.app._rejecting_marker(texts)
        if rejected is not None:
            return self._fail(rejected[1], f"input rejected: contains {rejected[0]!r}")
        vectors = self.app._embed(texts)
        encoding = str(body.get("encoding_format") or "float")
        data = [
            {"object": "embedding", "index": i, "embedding": _encode_vector(v, encoding)}
            for i, v in enumerate(vectors)
        ]
        with self.app._lock:
            shape = self.app._shape
        if shape is not None:
            data = shape(data)
        tokens = sum(len(t.split()) for t in texts)
        payload = {
            "object": "list",
            "data": data,
            "model": body.get("model") or self.app.embedding_model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        self._send_json(200, payload)
        return 200

    def _chat(self, body: dict[str, Any]) -> int:
        reply = self.app._next_reply(body)
        if reply is None:
            return self._fail(500, "the test server has no scripted chat reply left")
        message = self._message(reply)
        finish = "tool_calls" if reply.tool_calls else "stop"
        usage = {
            "prompt_tokens": _count_words(body.get("messages")),
            "completion_tokens": _count_words(message),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        base = {
            "id": self.app._next_id("chatcmpl"),
            "created": int(time.time()),
            "model": body.get("model") or self.app.chat_model,
            "system_fingerprint": None,
        }
        if body.get("stream"):
            options = body.get("stream_options") or {}
            self._stream(base, message, finish, usage if options.get("include_usage") else None)
            return 200
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        self._send_json(
            200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
        )
        return 200

    def _message(self, reply: ChatReply) -> dict[str, Any]:
        calls = [
            {
                "id": call.id or self.app._next_id("call"),
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments),
                },
            }
            for call in reply.tool_calls
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        return message

    def _stream(
        self,
        base: dict[str, Any],
        message: dict[str, Any],
        finish: str,
        usage: dict[str, int] | None,
    ) -> None:
        chunks: list[dict[str, Any]] = [{"choices": [_delta(d)]} for d in _deltas(message)]
        chunks.append({"choices": [_delta({}, finish)]})
        if usage is not None:
            chunks.append({"choices": [], "usage": usage})
        if self._record is not None:
            self._record.status = 200
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            # No length is known up front: the end of the stream is the end of the connection.
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in chunks:
                event = {**base, "object": "chat.completion.chunk", **chunk}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}


def _deltas(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The message cut into stream deltas: role, content in word-sized pieces, then each
    tool call as a header delta followed by its arguments."""
    yield {"role": "assistant", "content": ""}
    content = message.get("content") or ""
    words = content.split(" ")
    for i, word in enumerate(words):
        piece = word if i == len(words) - 1 else word + " "
        if piece:
            yield {"content": piece}
    for index, call in enumerate(message.get("tool_calls", [])):
        fn = call["function"]
        yield {
            "tool_calls": [
                {
                    "index": index,
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": fn["name"], "arguments": ""},
                }
            ]
        }
        yield {"tool_calls": [{"index": index, "function": {"arguments": fn["arguments"]}}]}


__all__ = [
    "CHAT_PATH",
    "EMBEDDINGS_PATH",
    "MODELS_PATH",
    "ChatReply",
    "ChatResponder",
    "EmbedFn",
    "ItemShaper",
    "OpenAIServer",
    "RecordedRequest",
    "ToolCall",
]
