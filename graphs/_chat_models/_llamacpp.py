"""The in-process llama.cpp runtime behind ``ChatGGUF`` (through ``xllamacpp``).

One runtime per process and per file, thread count and window: loading a model takes seconds and its
memory, so every ``ChatGGUF`` (every node, the answer, the judge) with the same options
shares it. llama.cpp's server engine queues concurrent requests itself, so the runtime is
safe to call from several threads.

Every request is streamed internally, even for ``invoke``: the token callback is where a
deadline can stop a generation that runs too long (a prompt is bounded by ``n_ctx`` anyway).

``xllamacpp.Server`` also serves llama.cpp's HTTP API on ``127.0.0.1`` at a free port. The
runtime gives it a random API key, so other local processes cannot use it, and uses it for
the two endpoints the Python API lacks: ``/apply-template`` and ``/tokenize`` (exact token
counts of a chat prompt).
"""

from __future__ import annotations

import importlib.util
import queue
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from kbgraph.errors import ChatModelError, ConfigError, ContextLengthError

from ._gguf_spec import GGUFOptions

INSTALL_HINT = "pip install 'kbgraph[gguf]' (it installs xllamacpp, a prebuilt llama.cpp wheel)"
_DONE = object()
_HTTP_TIMEOUT = 30.0
_STOP_WAIT = 30.0
"""Seconds a stopped generation is waited for before the caller goes on (it ends at the
next token; a long prompt is read whole first). Past it, the thread, not being a daemon,
is still waited for at interpreter exit."""


def check_runtime_installed() -> None:
    """Fail early, and say what to install, when ``xllamacpp`` is missing."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise ConfigError(f"gguf chat models need the xllamacpp package: {INSTALL_HINT}.")


class LlamaRuntime:
    """A loaded GGUF model. Use :func:`runtime_for` rather than this constructor."""

    def __init__(self, path: str, threads: int, n_ctx: int) -> None:
        check_runtime_installed()
        import xllamacpp

        self.path = path
        params = xllamacpp.CommonParams()
        params.model.path = path
        params.n_ctx = n_ctx
        params.n_parallel = 1  # one slot: the whole window for each request
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.warmup = False
        params.verbosity = 0  # llama.cpp logs every request to stderr otherwise
        # A conversation that ends with an assistant message is history, as with hosted
        # models, not the start of the reply to continue (llama.cpp's default): continued,
        # it is not at the start of a JSON grammar, and llama.cpp refuses the request.
        params.prefill_assistant = False
        self._key = secrets.token_urlsafe(24)
        params.api_keys = [self._key]
        try:
            self._server = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise ChatModelError(
                f"llama.cpp could not load {path} ({exc}); check that it is a chat model in "
                f"a GGUF version this xllamacpp supports, and that memory suffices for "
                f"n_ctx={n_ctx}."
            ) from exc
        self._http = httpx.Client(
            base_url=str(self._server.listening_address),
            headers={"Authorization": f"Bearer {self._key}"},
            timeout=_HTTP_TIMEOUT,
            trust_env=False,  # loopback only: never through a proxy from the environment
        )

    def chat_stream(
        self, request: Mapping[str, Any], *, deadline: float | None = None
    ) -> Iterator[dict[str, Any]]:
        """The chunks of one chat completion (OpenAI ``chat.completion.chunk`` dicts; the
        last one carries ``usage``). Past ``deadline`` (``time.monotonic()``) the generation
        is stopped and :class:`TimeoutError` raised; closing the iterator stops it too. The
        worker thread has ended (or is ending) when this returns or raises."""
        # No prompt cache: a prefix reused from the previous request is computed in other
        # batches than a fresh prompt, and at temperature 0 that changes the reply. The same
        # messages give the same reply whatever was asked before (a little slower).
        body = {
            "cache_prompt": False,
            **request,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        chunks: queue.Queue[Any] = queue.Queue()
        stop = threading.Event()

        def on_chunk(chunk: Any) -> bool:
            chunks.put(chunk)
            return stop.is_set()  # True asks llama.cpp to stop generating

        def run() -> None:
            try:
                returned = self._server.handle_chat_completions(body, on_chunk)
                if returned:  # a request refused before generation: an error dict
                    chunks.put(returned)
            except BaseException as exc:  # handed to the consumer, raised there
                chunks.put(exc)
            finally:
                chunks.put(_DONE)

        # Not a daemon, and joined before this returns: at interpreter exit a daemon thread
        # still inside llama.cpp is ended by pthread_exit, whose forced unwind llama.cpp's
        # catch (...) swallows, and glibc aborts the process ("FATAL: exception not
        # rethrown", exit 134) -- what a timed-out call did to `kbgraph ask`.
        worker = threading.Thread(target=run, name="kbgraph-gguf")
        worker.start()
        try:
            while True:
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    item = chunks.get(timeout=timeout)
                except queue.Empty:
                    raise TimeoutError(
                        f"the GGUF model gave no complete reply within the timeout ({self.path})"
                    ) from None
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise ChatModelError(f"llama.cpp failed: {item}") from item
                yield checked(item)
        finally:
            stop.set()  # llama.cpp stops at its next token (or once the prompt is read)
            worker.join(_STOP_WAIT)

    def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        """The exact prompt length of ``messages`` in tokens: the model's chat template
        applied, then its tokenizer (special tokens count once each)."""
        prompt = self._post("/apply-template", {"messages": messages})["prompt"]
        body = {"content": prompt, "add_special": True, "parse_special": True}
        return len(self._post("/tokenize", body)["tokens"])

    def tokenize(self, text: str) -> list[int]:
        """The token ids of ``text`` alone (no special tokens added)."""
        tokens = self._post("/tokenize", {"content": text, "add_special": False})["tokens"]
        return [int(t) for t in tokens]

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        response = self._http.post(path, json=dict(body))
        if response.status_code != 200:
            raise ChatModelError(f"llama.cpp {path} answered {response.status_code}")
        data: dict[str, Any] = response.json()
        return data


def checked(chunk: Any) -> dict[str, Any]:
    """The chunk, or the error it reports raised as a kbgraph error."""
    if not isinstance(chunk, Mapping):
        raise ChatModelError(f"llama.cpp returned {type(chunk).__name__}, not a JSON object")
    error = chunk.get("error")
    if error is None:
        return dict(chunk)
    if not isinstance(error, Mapping):
        raise ChatModelError(f"llama.cpp error: {error}")
    if error.get("type") == "exceed_context_size_error":
        raise ContextLengthError(
            f"the prompt has {error.get('n_prompt_tokens')} tokens, more than the model's "
            f"context window ({error.get('n_ctx')}) holds; shorten it or raise n_ctx",
            prompt_tokens=int(error.get("n_prompt_tokens") or 0),
            limit=int(error.get("n_ctx") or 0),
        )
    raise ChatModelError(f"llama.cpp error {error.get('code')}: {error.get('message')}")


_RUNTIMES: dict[tuple[str, int, int], LlamaRuntime] = {}
_LOADING = threading.Lock()


def runtime_for(options: GGUFOptions) -> LlamaRuntime:
    """The process's runtime for the file, thread count and window of ``options`` (the
    reply length is per request), loaded on first use: once, even when several threads ask
    at the same time."""
    key = (options.path, options.threads, options.n_ctx)
    runtime = _RUNTIMES.get(key)
    if runtime is not None:
        return runtime
    with _LOADING:
        runtime = _RUNTIMES.get(key)
        if runtime is None:
            runtime = _RUNTIMES[key] = LlamaRuntime(*key)
    return runtime


__all__ = [
    "INSTALL_HINT",
    "LlamaRuntime",
    "check_runtime_installed",
    "checked",
    "runtime_for",
]
