"""``ChatGGUF``: a LangChain chat model that runs a GGUF file in process (llama.cpp through
``xllamacpp``), with no server to start and no network.

    from kbgraph.graphs.chat_models import ChatGGUF

    model = ChatGGUF(model_path="SmolLM2-135M-Instruct.Q4_1.gguf", max_tokens=128)
    model.invoke("What is a knowledge base?").usage_metadata   # input/output tokens
    for chunk in model.stream("Count to five."): ...
    model.with_structured_output(Answer).invoke(...)         # JSON constrained by the schema

The spec ``gguf:<path>[?threads=1&n_ctx=4096&max_tokens=512]`` resolves to it
(:func:`kbgraph.graphs.models.resolve_chat_model`). Structured output constrains decoding
with the schema (llama.cpp's JSON-schema grammar), so the reply is JSON of the schema's shape
unless it is cut off at ``max_tokens``; then parsing fails, and callers take their fallback.
``profile["max_input_tokens"]`` is ``n_ctx - max_tokens``, and token counts are exact (the
model's own template and tokenizer): ``kbgraph.graphs.context_window`` trims retrieved text
to fit with both. A prompt that still does not fit raises
:class:`kbgraph.errors.ContextLengthError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput, ModelProfile
from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import (
    AIMessageChunk,
    BaseMessage,
    convert_to_openai_messages,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_json_schema
from pydantic import BaseModel, model_validator

from ._gguf_spec import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_CTX,
    DEFAULT_THREADS,
    GGUFOptions,
    check_gguf_file,
)
from ._llamacpp import LlamaRuntime, check_runtime_installed, runtime_for

# Request keys a caller may pass through invoke(..., **kwargs) or bind(); anything else is an
# error rather than silently ignored.
_REQUEST_KEYS = frozenset(
    {"max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "response_format",
     "json_schema", "grammar", "repeat_penalty", "presence_penalty", "frequency_penalty"}
)  # fmt: skip


class ChatGGUF(BaseChatModel):
    """A GGUF chat model run in this process. ``threads`` (default 1: on a small machine
    shared with other work one thread is often much faster than two), ``n_ctx`` (the context
    window, prompt and reply together), ``max_tokens`` (the longest reply), ``temperature``
    (default 0: greedy, reproducible), ``timeout`` (seconds per call; ``TimeoutError`` past
    it). Models with equal ``model_path``, ``threads`` and ``n_ctx`` share one loaded runtime
    per process."""

    model_path: str
    threads: int = DEFAULT_THREADS
    n_ctx: int = DEFAULT_N_CTX
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0
    timeout: float | None = None
    stop: list[str] | None = None

    @model_validator(mode="after")
    def _check_options(self) -> ChatGGUF:
        self.model_path = str(check_gguf_file(self.model_path))
        self.options  # noqa: B018 (validates threads, n_ctx and max_tokens together)
        check_runtime_installed()
        return self

    @property
    def options(self) -> GGUFOptions:
        return GGUFOptions(self.model_path, self.threads, self.n_ctx, self.max_tokens)

    @property
    def model_name(self) -> str:
        return Path(self.model_path).name

    @property
    def _llm_type(self) -> str:
        return "gguf"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path, "threads": self.threads, "n_ctx": self.n_ctx,
            "max_tokens": self.max_tokens, "temperature": self.temperature,
        }  # fmt: skip

    def _resolve_model_profile(self) -> ModelProfile | None:
        return {
            "max_input_tokens": self.n_ctx - self.max_tokens,
            "max_output_tokens": self.max_tokens,
            "text_inputs": True,
            "text_outputs": True,
            "structured_output": True,
            "tool_calling": False,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "gguf"
        params["ls_model_name"] = self.model_name
        params["ls_temperature"] = self.temperature
        params["ls_max_tokens"] = self.max_tokens
        return params

    def runtime(self) -> LlamaRuntime:
        """The loaded model (loaded on the first call, then shared)."""
        return runtime_for(self.options)

    # -- generation ---------------------------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Streamed internally either way (see _llamacpp); no token callbacks when not asked.
        return generate_from_stream(self._chunks(messages, stop, **kwargs))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages, stop, **kwargs):
            if run_manager is not None and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    def _chunks(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        request = self._request(messages, stop, kwargs)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        for raw in self.runtime().chat_stream(request, deadline=deadline):
            chunk = _chunk(raw, self.model_name)
            if chunk is not None:
                yield chunk

    def _request(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        extra = {k: v for k, v in kwargs.items() if not k.startswith("ls_")}
        unknown = set(extra) - _REQUEST_KEYS
        if unknown:
            raise TypeError(
                f"ChatGGUF got unsupported call options {sorted(unknown)}; "
                f"allowed: {', '.join(sorted(_REQUEST_KEYS))}."
            )
        request: dict[str, Any] = {
            "messages": convert_to_openai_messages(messages, text_format="string"),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            **extra,
        }
        stops = stop if stop is not None else self.stop
        if stops:
            request["stop"] = list(stops)
        return request

    # -- token counting -----------------------------------------------------------------

    def get_num_tokens_from_messages(
        self,
        messages: list[BaseMessage],
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool] | None = None,
    ) -> int:
        """The exact prompt length: the model's chat template applied, then its tokenizer."""
        if tools:
            raise NotImplementedError("ChatGGUF does not take tools")
        return self.runtime().count_tokens(
            convert_to_openai_messages(messages, text_format="string")
        )

    def get_token_ids(self, text: str) -> list[int]:
        return self.runtime().tokenize(text)

    # -- structured output --------------------------------------------------------------

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: Literal["json_schema", "json_mode"] = "json_schema",
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """A runnable replying with ``schema`` objects (a pydantic class → its instances; a
        TypedDict or a JSON schema dict → dicts). ``json_schema`` constrains decoding to the
        schema; ``json_mode`` only to some JSON object. With ``include_raw`` the result is
        ``{"raw", "parsed", "parsing_error"}`` and a bad reply is reported there, not raised."""
        if kwargs:
            raise TypeError(f"unsupported arguments: {sorted(kwargs)}")
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        if method == "json_schema":
            json_schema = _json_schema(schema)
            name = str(json_schema.get("title") or "reply")
            response_format: dict[str, Any] = {
                "type": "json_schema", "json_schema": {"name": name, "schema": json_schema},
            }  # fmt: skip
        elif method == "json_mode":
            response_format = {"type": "json_object"}
        else:
            raise ValueError(f"method is {method!r}; allowed: json_schema, json_mode")
        model = self.bind(
            response_format=response_format,
            ls_structured_output_format={"kwargs": {"method": method}, "schema": schema},
        )
        parser: Runnable[Any, Any] = (
            PydanticOutputParser(pydantic_object=schema) if is_model else JsonOutputParser()  # type: ignore[arg-type]
        )
        if not include_raw:
            return model | parser
        parsed = RunnablePassthrough.assign(
            parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
        )
        failed = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=model) | parsed.with_fallbacks(
            [failed], exception_key="parsing_error"
        )


def _json_schema(schema: dict[str, Any] | type) -> dict[str, Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        return schema
    return convert_to_json_schema(schema)


def _chunk(raw: dict[str, Any], model_name: str) -> ChatGenerationChunk | None:
    """One OpenAI-style chunk as a LangChain chunk (``None`` for one without content)."""
    choices = raw.get("choices") or []
    delta = (choices[0].get("delta") or {}) if choices else {}
    finish = choices[0].get("finish_reason") if choices else None
    usage = raw.get("usage")
    text = delta.get("content") or ""
    if not text and finish is None and usage is None:
        return None
    metadata: dict[str, Any] = {} if finish is None else {"finish_reason": finish}
    if usage is None:
        return ChatGenerationChunk(message=AIMessageChunk(content=text, response_metadata=metadata))
    metadata.update(model_name=model_name, model_provider="gguf")
    if raw.get("timings"):  # llama.cpp's prompt and generation speeds, tokens per second
        metadata["timings"] = raw["timings"]
    message = AIMessageChunk(
        content=text,
        response_metadata=metadata,
        usage_metadata=_usage(usage),
        chunk_position="last",
    )
    return ChatGenerationChunk(message=message)


def _usage(usage: dict[str, Any]) -> UsageMetadata:
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    out = UsageMetadata(
        input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
    )
    if cached:
        out["input_token_details"] = {"cache_read": cached}
    return out


__all__ = ["ChatGGUF"]
