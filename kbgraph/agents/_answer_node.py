"""The answer check for code of your own: a node for a parent graph that attached the
retrieval subgraph (``answer_check_node``), and a middleware for ``create_agent`` with the
``rag_search`` tool (``AnswerCheckMiddleware``). Both run the ready agents' check
(:mod:`kbgraph.agents._check`: ``RagSettings.answer_check`` says the policy) on the last
``AIMessage`` and put the verdict on it (:mod:`kbgraph.agents._verdict`)::

    builder.add_node("rag", build_rag_graph())
    builder.add_node("answer", answer)
    builder.add_node("check", answer_check_node())  # after your own answer node
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.runtime import Runtime

from kbgraph.evals import Judge
from kbgraph.graphs import RagSettings, inject_context
from kbgraph.graphs._internal import extractive_text

from ._check import make_check_node
from ._held import held_message, published, with_draft
from ._verdict import marked_update

ANSWER_KEYS = (
    "messages", "answer_check", "answer_citations", "answer_unresolved", "answer_uncited",
    "answer_draft",
)  # fmt: skip
"""What the node writes (declare ``answer_check`` in your state to keep the record; the
verdict is on the message either way)."""


def _prompt_of(
    state: Mapping[str, Any], model: BaseChatModel, settings: RagSettings
) -> list[BaseMessage]:
    """The prompt a parent's answer is written again from: the conversation with the
    subgraph's sources (as ``inject_context`` gives them)."""
    return inject_context(list(state.get("messages") or []), str(state.get("rag_context") or ""))


def answer_view(state: Mapping[str, Any]) -> dict[str, Any] | None:
    """The state as the check node reads it: the last message is the answer (``None``: it
    is no AI answer, or calls tools)."""
    messages = list(state.get("messages") or [])
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage) or last.tool_calls or not last.id:
        return None
    with_sources = bool(state.get("rag_citations")) and state.get("rag_grounded", True)
    mode = "llm" if with_sources else "answered"
    return {**state, "answer": last.text, "answer_mode": mode, "answer_error": None}


def answer_check_node(
    chat_model: BaseChatModel | None = None, *, judge: Judge | None = None
) -> Any:
    """A ``(state, runtime)`` node that checks the last ``AIMessage`` of a parent graph's
    state against the subgraph's ``rag_citations`` and acts as
    ``RagSettings.answer_check.policy`` says (``repair`` by default: writes it again with
    ``chat_model``, else ``RagSettings.chat_model``, or quotes the sources; ``flag``: a
    visible line; ``off``). The verdict is in the message's
    ``response_metadata["kbgraph_check"]`` and in ``answer_check``.

    For one answer in ``stream_mode="messages"`` (a draft the check rejects never streamed
    as the answer), your answer node asks the model with the ``nostream`` tag and returns
    ``{"answer_draft": hold_draft(reply)}`` instead of a message (declare ``answer_draft:
    dict | None`` in your state): this node then appends the answer it keeps, once."""
    check = make_check_node(chat_model, _prompt_of, extractive_text, judge)

    def check_answer(state: Mapping[str, Any], runtime: Runtime[RagSettings]) -> dict[str, Any]:
        """Check the answer against its sources; mark it (or replace it) as the policy says."""
        held = state.get("answer_draft")
        draft = held_message(held) if held else None
        view = answer_view(state if draft is None else with_draft(state, draft))
        if view is None:
            return {}
        update = marked_update(view, check(view, runtime))
        if draft is not None:
            update = published(update, draft)
        return {k: v for k, v in update.items() if k in ANSWER_KEYS}

    return check_answer


__all__ = ["ANSWER_KEYS", "answer_check_node", "answer_view"]
