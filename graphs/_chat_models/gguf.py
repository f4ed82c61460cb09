"""``ChatGGUF``: a LangChain chat model that runs a GGUF file in process (llama.cpp through
``xllamacpp``), with no server to start and no network.

    from kbgraph.graphs._chat_models import ChatGGUF

    model = ChatGGUF(model_path="SmolLM2-135M-Instruct.Q4_1.gguf", max_tokens=128)
    model.invoke("What is a knowledge base?").usage_metadata   # input/output tokens
    for chunk in model.stream("Count to five."): ...
    model.with_structured_output(Answer).invoke(...)         # JSON constrained by the schema
    model.bind_tools([rag_search]).invoke(...).tool_calls     # calls constrained by the tools

The spec ``gguf:<path>[?threads=1&n_ctx=4096&max_tokens=512]`` resolves to it
(:func:`kbgraph.graphs._models.resolve_chat_model`). Structured output and tool calls
constrain decoding (llama.cpp's JSON-schema grammar): the reply is JSON of the schema's
shape, or a call of a bound tool with arguments of its schema, unless it is cut off at
``max_tokens`` (see ``_gguf_tools`` for the reply's shape and ``_gguf_messages`` for how a
conversation with tool calls is written for a model's chat template).
``profile["max_input_tokens"]`` is ``n_ctx - max_tokens``, and token counts are exact (the
model's own template and tokenizer): ``kbgraph._base.context_window`` trims retrieved text
to fit with both. A prompt that still does not fit raises
:class:`kbgraph.errors.ContextLengthError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput, ModelProfile
from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import BaseModel, model_validator

from kbgraph._base.loops import LoopWatch

from ._gguf_chunks import (
    LOOP_PENALTY,
    LOOPED,
    Generated,
    delta,
    final_chunk,
    json_format,
    last_chunk,
    plain_chunk,
)
from ._gguf_messages import prompt_messages, with_system
from ._gguf_reply import ParsedReply, ReplyReader, repeats_answered, with_cut_calls
from ._gguf_spec import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_CTX,
    DEFAULT_THREADS,
    GGUFOptions,
    check_gguf_file,
)
from ._gguf_structured import StructuredMethod, response_schema, structured_runnable
from ._gguf_tools import (
    ToolPlan,
    openai_tool_choice,
    reply_schema,
    tool_functions,
    tool_plan,
    tools_prompt,
)
from ._llamacpp import LlamaRuntime, check_runtime_installed, runtime_for

# Request keys a caller may pass through invoke(..., **kwargs) or bind(); anything else is an
# error rather than silently ignored.
_REQUEST_KEYS = frozenset(
    {"max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "response_format",
     "json_schema", "grammar", "repeat_penalty", "presence_penalty", "frequency_penalty",
     "tools", "tool_choice", "parallel_tool_calls", "cache_prompt"}
)  # fmt: skip


class ChatGGUF(BaseChatModel):
    """A GGUF chat model run in this process. ``threads`` (default 1: on a small machine
    shared with other work one thread is often much faster than two), ``n_ctx`` (the context
    window, prompt and reply together), ``max_tokens`` (the longest reply), ``temperature``
    (default 0: greedy, reproducible), ``timeout`` (seconds per call; ``TimeoutError`` past
    it). Models with equal ``model_path``, ``threads`` and ``n_ctx`` share one loaded runtime
    per process."""

    model_path: str
    runs_in_process: ClassVar[bool] = True
    """It computes on this machine's CPU, in this process: an optional call (GroundingCheck's
    verdict, a second answer) costs as much CPU as the person's answer does (see
    :func:`kbgraph.graphs._settings.asks_optional`)."""
    threads: int = DEFAULT_THREADS
    n_ctx: int = DEFAULT_N_CTX
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0
    timeout: float | None = None
    stop: list[str] | None = None
    stop_loops: bool = True
    """Stop a reply in free text once it loops (see ``kbgraph._base.loops``), with
    ``finish_reason="looped"``; JSON under a schema, a grammar or tools is never stopped."""

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
            "tool_calling": True,
            "tool_choice": True,
            "tool_call_streaming": True,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "gguf"
        params["ls_model_name"] = str(kwargs.get("model") or self.model_name)
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
        replies: list[ParsedReply] = []
        result = generate_from_stream(self._chunks(messages, stop, kwargs, replies))
        if replies and replies[0].calls and not replies[0].complete:
            limit = int(kwargs.get("max_tokens") or self.max_tokens)
            result.generations[0].message = with_cut_calls(
                result.generations[0].message, replies[0], limit
            )
        return result

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages, stop, kwargs):
            if run_manager is not None and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    def _chunks(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        replies: list[ParsedReply] | None = None,
    ) -> Iterator[ChatGenerationChunk]:
        request, plan = self._request(messages, stop, kwargs)
        if plan is not None:
            yield from self._tool_chunks(request, plan, messages, replies)
            return
        watch = LoopWatch() if self.stop_loops and _free_text(request) else None
        with closing(self._raw_chunks(request)) as raws:
            for raw in raws:
                chunk = plain_chunk(raw, self.model_name)
                if chunk is None:
                    continue
                yield chunk
                if watch is not None and watch.feed(chunk.text):
                    break
            else:
                return
        # The reply loops: generating stopped there (closing the stream stops llama.cpp),
        # and the last chunk says why, with the tokens counted as llama.cpp would have.
        assert watch is not None  # only the watch breaks the loop
        runtime = self.runtime()
        usage = {
            "prompt_tokens": runtime.count_tokens(request["messages"]),
            "completion_tokens": len(runtime.tokenize(watch.text)),
        }
        yield final_chunk("", Generated(LOOPED, usage), self.model_name)

    def _raw_chunks(self, request: dict[str, Any]) -> Generator[dict[str, Any], None, None]:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        yield from self.runtime().chat_stream(request, deadline=deadline)

    def _tool_chunks(
        self,
        request: dict[str, Any],
        plan: ToolPlan,
        messages: list[BaseMessage],
        replies: list[ParsedReply] | None,
    ) -> Iterator[ChatGenerationChunk]:
        """The reply under ``plan``: response text as it comes, calls at the end. Two
        replies are asked for again (see docs/how-to/gguf.md): JSON the caller needs
        (a call, or a response under a schema) cut off at ``max_tokens``, once with
        llama.cpp's repetition penalty (a small model looping inside a value is the usual
        cause); a call that repeats one already answered since the user's last message,
        held to a response (it would get the same result, and a small model repeats it
        forever)."""
        reader, done = yield from self._generate_reply(request, plan, Generated())
        reply = reader.finish()
        metadata: dict[str, Any] = {}
        needed_json = bool(reply.calls) or plan.response_schema is not None
        if needed_json and not reply.complete and "repeat_penalty" not in request:
            metadata["cut_reply_retried"] = {"repeat_penalty": LOOP_PENALTY}
            again = {**request, "repeat_penalty": LOOP_PENALTY}
            reader, done = yield from self._generate_reply(again, plan, done)
            reply = reader.finish()
        if plan.choice == "auto" and repeats_answered(reply, messages):
            metadata["repeated_tool_calls"] = [c.name for c in reply.calls]
            answer = {**request, "response_format": json_format(reply_schema(plan, calls=False))}
            reader, done = yield from self._generate_reply(answer, plan, done)
            reply = reader.finish()
        if replies is not None:
            replies.append(reply)
        last = last_chunk(reply, reader.streamed, done, metadata, self.model_name)
        yield ChatGenerationChunk(message=last)

    def _generate_reply(
        self, request: dict[str, Any], plan: ToolPlan, before: Generated
    ) -> Generator[ChatGenerationChunk, None, tuple[ReplyReader, Generated]]:
        """Run one request under ``plan``, giving out the response text that may stream;
        return its reader and how it ended (after ``before``)."""
        reader, done = ReplyReader(plan), Generated()
        for raw in self._raw_chunks(request):
            text, finish, usage = delta(raw)
            new = reader.feed(text)
            if new:
                yield ChatGenerationChunk(message=AIMessageChunk(content=new))
            done.finish_reason = finish or done.finish_reason
            if usage is not None:
                done.usage, done.timings = usage, raw.get("timings")
        return reader, before.then(done)

    def _request(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], ToolPlan | None]:
        """The llama.cpp request, and the tool plan when the reply may call tools."""
        extra = {k: v for k, v in kwargs.items() if not k.startswith("ls_")}
        unknown = set(extra) - _REQUEST_KEYS
        if unknown:
            raise TypeError(
                f"ChatGGUF got unsupported call options {sorted(unknown)}; "
                f"allowed: {', '.join(sorted(_REQUEST_KEYS))}."
            )
        tools = [t.get("function", t) for t in extra.pop("tools", None) or []]
        choice = extra.pop("tool_choice", None)
        parallel = bool(extra.pop("parallel_tool_calls", False))
        schema = response_schema(extra.get("response_format"))
        chat = prompt_messages(messages)
        plan: ToolPlan | None = tool_plan(tools, choice, parallel=parallel, response_schema=schema)
        if plan is not None and plan.calls_tools:
            if "grammar" in extra or "json_schema" in extra:
                raise ValueError("ChatGGUF takes tools or a grammar / json_schema, not both.")
            chat = with_system(chat, tools_prompt(plan))
            extra["response_format"] = json_format(reply_schema(plan))
        else:
            plan = None
        request: dict[str, Any] = {
            "messages": chat,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            **extra,
        }
        stops = stop if stop is not None else self.stop
        if stops:
            request["stop"] = list(stops)
        return request, plan

    # -- tools and structured output ----------------------------------------------------

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: dict[str, Any] | str | bool | None = None,
        parallel_tool_calls: bool | None = None,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The model with ``tools`` (anything ``convert_to_openai_tool`` takes). ``tool_choice``:
        ``None`` / ``"auto"`` (call a tool or reply), ``"any"`` / ``"required"`` / ``True``
        (call a tool), a tool's name (call that tool), ``"none"`` (reply in text).
        ``parallel_tool_calls=True`` lets one reply call several tools (default: one call per
        reply, which small models get right more often). Decoding is always held to the
        tools' schemas, so ``strict`` changes nothing. Other ``kwargs`` are bound as call
        options (``response_format``: the schema of a reply that calls no tool)."""
        functions = tool_functions(tools)
        choice = openai_tool_choice(tool_choice, [f["name"] for f in functions])
        if parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = parallel_tool_calls
        formatted = [{"type": "function", "function": f} for f in functions]
        return self.bind(tools=formatted, tool_choice=choice, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: StructuredMethod = "json_schema",
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """A runnable replying with ``schema`` objects (a pydantic class → its instances; a
        TypedDict or a JSON schema dict → dicts). ``json_schema`` constrains decoding to the
        schema; ``function_calling`` forces a call of a tool with the schema's arguments;
        ``json_mode`` constrains to some JSON object (say the keys in the prompt). With
        ``include_raw`` the result is ``{"raw", "parsed", "parsing_error"}`` and a bad reply
        is reported there, not raised. ``strict`` changes nothing (decoding is constrained)."""
        if kwargs:
            raise TypeError(f"unsupported arguments: {sorted(kwargs)}")
        return structured_runnable(self, schema, method=method, include_raw=include_raw)

    # -- token counting -----------------------------------------------------------------

    def get_num_tokens_from_messages(
        self,
        messages: list[BaseMessage],
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool] | None = None,
    ) -> int:
        """The exact prompt length: the model's chat template applied, then its tokenizer;
        with ``tools``, of the prompt that describes them (as ``bind_tools(tools)`` sends)."""
        options = {"tools": tool_functions(tools)} if tools else {}
        request, _ = self._request(messages, None, options)
        return self.runtime().count_tokens(request["messages"])

    def get_token_ids(self, text: str) -> list[int]:
        return self.runtime().tokenize(text)


def _free_text(request: dict[str, Any]) -> bool:
    """Whether the reply is free text: no schema, grammar or JSON format holds it."""
    return not any(request.get(k) for k in ("response_format", "grammar", "json_schema"))


__all__ = ["ChatGGUF"]
