"""The nodes' structured LLM call: the shared helper (:mod:`kbgraph.graphs._structured`:
structured output, then plain JSON) over a node's prompt pair, with every failure turned
into an ``LlmFallback`` record for ``rag_retrieval_debug``; an outage is marked as such, and
the nodes after it in the same run do not call the model (see ``StepRecorder.chat_model``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from kbgraph.prompts import render_prompt

from .._state import LlmFallback
from .._structured import Stage, StructuredPath, ask_structured, describe_error, is_outage

T = TypeVar("T", bound=BaseModel)


@dataclass
class LlmResult(Generic[T]):
    value: T | None
    path: StructuredPath | None = None
    fallbacks: list[LlmFallback] = field(default_factory=list)


def ask_node(
    model: BaseChatModel,
    schema: type[T],
    prompt: str,
    *,
    node: str,
    attempt: int,
    **values: object,
) -> LlmResult[T]:
    """Ask ``model`` the prompt pair ``<prompt>_system`` / ``<prompt>_user`` (rendered with
    ``values``) for a ``schema`` object; ``value`` is ``None`` when the model failed."""
    reply = ask_structured(model, schema, list(prompt_messages(prompt, **values)), name=node)
    fallbacks = [_record(node, attempt, stage, exc) for stage, exc in reply.errors]
    return LlmResult(reply.value, reply.path, fallbacks)


def prompt_messages(prompt: str, **values: object) -> tuple[SystemMessage, HumanMessage]:
    """The prompt pair ``<prompt>_system`` / ``<prompt>_user`` rendered with ``values``."""
    system = render_prompt(f"{prompt}_system", **values).strip()
    user = render_prompt(f"{prompt}_user", **values).strip()
    return SystemMessage(content=system), HumanMessage(content=user)


def context_fallback(node: str, attempt: int) -> LlmFallback:
    """The record of a call not made: the prompt does not fit the model's context window
    even with the retrieved text cut down (see ``kbgraph.graphs._context_window``)."""
    return {
        "node": node,
        "attempt": attempt,
        "stage": "context",
        "error": "ContextLengthError: the prompt does not fit the chat model's context "
        "window even with the retrieved text cut down; raise the window (gguf: n_ctx)",
    }


def _record(node: str, attempt: int, stage: Stage, exc: BaseException) -> LlmFallback:
    record: LlmFallback = {
        "node": node,
        "attempt": attempt,
        "stage": stage,
        "error": describe_error(exc),
    }
    if is_outage(exc):
        record["outage"] = True
    return record


__all__ = ["LlmResult", "ask_node", "context_fallback", "prompt_messages"]
