"""The nodes' structured LLM call: the shared helper (:mod:`kbgraph.graphs._structured`:
structured output, then plain JSON) over a node's prompt pair, with every failure turned
into an ``LlmFallback`` record for ``rag_retrieval_debug``.

Each call has its own budget (:func:`budgeted`): a node's reply is one small JSON object,
so it gets at most :data:`STEP_MAX_TOKENS` tokens and, with an in-process GGUF model, a
share of ``llm_timeout_seconds``. A timeout falls back for that node only: a slow model is
still asked by the next node and for the answer. Only a chat server that could not be
reached is an outage (``outage``), after which the rest of the run does not call the model
(see ``StepRecorder.chat_model``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from kbgraph._base.model_calls import describe_error
from kbgraph.prompts import render_prompt

from .._chat_models import ChatGGUF
from .._state import LlmFallback
from .._structured import Stage, StructuredPath, ask_structured, is_down

STEP_MAX_TOKENS = 256
"""The longest reply of a node's structured call: its JSON objects (a verdict, a scope, a
query, an order of up to ``llm_rerank_max`` numbers) take well under 200 tokens; a small
model that loops inside a value ran on to its ``max_tokens`` (512 by default), twice."""
NODE_MAX_TOKENS = {
    "decide_retrieve": 96,
    "select_scope": 128,
    "rewrite_query": 160,
    "grounding_check": 128,
}
"""Tighter caps where a node's whole reply is a few short fields (the rest keep
:data:`STEP_MAX_TOKENS`). SmolLM2's complete replies took 31-47 tokens (DecideRetrieve),
69-76 (RewriteQuery: three short strings) and 70-82 (GroundingCheck: a verdict and two
short texts); SelectScope's never completed: it lists invented paths until the cap, so
each token past a reply's real size is time lost (~40 tokens/s on one core), not a
better answer. A capable model's replies are of the same size."""
STEP_TIMEOUT_SHARE = 0.25
"""The share of ``llm_timeout_seconds`` one node's call may take with an in-process GGUF
model: the answer, the call the person waits for, keeps the whole of it."""

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


def budgeted(model: BaseChatModel, timeout_seconds: float, node: str = "") -> BaseChatModel:
    """``model`` held to one node call's budget: at most the node's
    :data:`NODE_MAX_TOKENS` (else :data:`STEP_MAX_TOKENS`) tokens when it has a
    ``max_tokens`` field (read per request by ``ChatGGUF`` and ``ChatOpenAI``), and
    :data:`STEP_TIMEOUT_SHARE` of ``timeout_seconds`` for a ``ChatGGUF`` (other clients
    fix their timeout when they are made)."""
    update: dict[str, object] = {}
    if "max_tokens" in type(model).model_fields:
        cap = NODE_MAX_TOKENS.get(node, STEP_MAX_TOKENS)
        current = getattr(model, "max_tokens", None)
        update["max_tokens"] = min(current or cap, cap)
    if isinstance(model, ChatGGUF):
        share = timeout_seconds * STEP_TIMEOUT_SHARE
        update["timeout"] = min(model.timeout or share, share)
    return model.model_copy(update=update) if update else model


def prompt_messages(prompt: str, **values: object) -> tuple[SystemMessage, HumanMessage]:
    """The prompt pair ``<prompt>_system`` / ``<prompt>_user`` rendered with ``values``."""
    system = render_prompt(f"{prompt}_system", **values).strip()
    user = render_prompt(f"{prompt}_user", **values).strip()
    return SystemMessage(content=system), HumanMessage(content=user)


def context_fallback(node: str, attempt: int) -> LlmFallback:
    """The record of a call not made: the prompt does not fit the model's context window
    even with the retrieved text cut down (see ``kbgraph._base.context_window``)."""
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
    if is_down(exc):
        record["outage"] = True
    return record


__all__ = [
    "NODE_MAX_TOKENS",
    "STEP_MAX_TOKENS",
    "STEP_TIMEOUT_SHARE",
    "LlmResult",
    "ask_node",
    "budgeted",
    "context_fallback",
    "prompt_messages",
]
