"""The LangChain chunks of ``ChatGGUF`` replies, from llama.cpp's OpenAI-style ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessageChunk
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk

from ._gguf_reply import ParsedReply

# Ollama's default repetition penalty; used only to generate a cut-off tool call again.
LOOP_PENALTY = 1.1
LOOPED = "looped"
"""The finish reason of a free-text reply stopped because it loops (``ChatGGUF.stop_loops``)."""


def json_format(schema: dict[str, Any]) -> dict[str, Any]:
    """A ``response_format`` holding the reply to ``schema``: llama.cpp turns it into a
    grammar (its own converter, whose layout kept SmolLM2's values shorter and more often
    valid than llguidance's one-line JSON in a trial of 8 schemas: 7 vs 6 parsed)."""
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


@dataclass
class Generated:
    """How one or more generations for a reply ended: usage added up, the last ones' finish
    reason and llama.cpp timings."""

    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] | None = None

    def then(self, later: Generated) -> Generated:
        usage = {
            key: int(self.usage.get(key) or 0) + int(later.usage.get(key) or 0)
            for key in ("prompt_tokens", "completion_tokens")
        }
        return Generated(later.finish_reason, usage, later.timings)

    def metadata(self, model_name: str) -> dict[str, Any]:
        out: dict[str, Any] = {"model_name": model_name, "model_provider": "gguf"}
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason
        if self.timings:
            out["timings"] = self.timings
        return out


def delta(raw: dict[str, Any]) -> tuple[str, str | None, dict[str, Any] | None]:
    """The new text, finish reason and usage of one OpenAI-style chunk."""
    choices = raw.get("choices") or []
    delta = (choices[0].get("delta") or {}) if choices else {}
    finish = choices[0].get("finish_reason") if choices else None
    return delta.get("content") or "", finish, raw.get("usage")


def plain_chunk(raw: dict[str, Any], model_name: str) -> ChatGenerationChunk | None:
    """One OpenAI-style chunk as a LangChain chunk (``None`` for one without content)."""
    text, finish, usage = delta(raw)
    if not text and finish is None and usage is None:
        return None
    metadata: dict[str, Any] = {} if finish is None else {"finish_reason": finish}
    if usage is None:
        return ChatGenerationChunk(message=AIMessageChunk(content=text, response_metadata=metadata))
    return final_chunk(text, Generated(finish, usage, raw.get("timings")), model_name)


def final_chunk(text: str, done: Generated, model_name: str) -> ChatGenerationChunk:
    """A reply's last chunk: ``text``, how it ended, its usage and metadata."""
    message = AIMessageChunk(
        content=text,
        response_metadata=done.metadata(model_name),
        usage_metadata=usage_metadata(done.usage),
        chunk_position="last",
    )
    return ChatGenerationChunk(message=message)


def usage_metadata(usage: dict[str, Any]) -> UsageMetadata:
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    out = UsageMetadata(
        input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
    )
    if cached:
        out["input_token_details"] = {"cache_read": cached}
    return out


def last_chunk(
    reply: ParsedReply,
    streamed: str,
    done: Generated,
    metadata: dict[str, Any],
    model_name: str,
) -> AIMessageChunk:
    """The last chunk of a reply under a tool plan: the response text not streamed yet,
    the calls (whole, each with its id; none for a cut reply, which must not run), usage
    and metadata."""
    rest = reply.content[len(streamed) :] if reply.content.startswith(streamed) else ""
    calls = [
        tool_call_chunk(name=c.name, args=c.args, id=c.id, index=i)
        for i, c in enumerate(reply.calls)
    ] if reply.complete else []  # fmt: skip
    return AIMessageChunk(
        content=rest,
        tool_call_chunks=calls,
        response_metadata={**metadata, **done.metadata(model_name)},
        usage_metadata=usage_metadata(done.usage),
        chunk_position="last",
    )


__all__ = [
    "LOOPED",
    "LOOP_PENALTY",
    "Generated",
    "delta",
    "final_chunk",
    "json_format",
    "last_chunk",
    "plain_chunk",
    "usage_metadata",
]
