"""One answer in the stream (issue 40, item 5): a draft the check may reject is never
streamed as the answer.

Under a policy that may replace the chat model's answer (``repair``, ``regenerate``,
``extractive``) the chat agent's answer node asks the model with the ``nostream`` tag
(LangGraph's ``stream_mode="messages"`` then shows none of its tokens) and holds the draft
in ``answer_draft`` instead of appending it to ``messages``; the check node appends the
answer it keeps — the draft, marked with its verdict, or its replacement — once, as a new
message of the state (``stream_mode="messages"`` emits a node's new message whole). In
Studio and over ``langgraph_sdk`` a client sees exactly one answer message, never a
rejected draft followed by a second message. Under ``flag`` and ``off`` nothing can replace
the answer: its tokens stream as the model writes them, and the check's verdict replaces
that message in place (same id) in the state. ``RagMiddleware`` and
``AnswerCheckMiddleware`` do the same for ``create_agent``'s model step
(:func:`not_streamed`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langchain_core.messages import AIMessage, RemoveMessage, message_to_dict, messages_from_dict
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from kbgraph.graphs import RagSettings

from ._state import ChatAgentState

DRAFT_TAG = "kbgraph:draft"
HELD: RunnableConfig = {"tags": ["nostream", DRAFT_TAG]}
"""The config of a draft's model call: traced under its tag, never streamed."""
REPLACING = frozenset({"repair", "regenerate", "extractive"})


class ChatRunState(ChatAgentState, total=False):
    """The chat agent's state in a run: its output keys and the draft the check holds
    (``None`` once the check appended the answer it keeps). The draft is kept as a dict
    (``message_to_dict``): ``stream_mode="messages"`` emits every message a node returns,
    whatever its key."""

    answer_draft: dict[str, Any] | None


def holds_draft(settings: RagSettings) -> bool:
    """Whether the answer's draft is held back for the check (see the module docstring)."""
    return settings.answer_check.policy in REPLACING


def draft_config(settings: RagSettings) -> RunnableConfig | None:
    return HELD if holds_draft(settings) else None


@contextmanager
def not_streamed(active: bool) -> Iterator[None]:
    """Model calls made inside, when ``active``, carry the draft's tags (the ``nostream``
    tag on the run's config): ``create_agent``'s model step, which the middleware cannot
    give a config, then emits only the answer it keeps, once, when it ends."""
    if not active:
        yield
        return
    config = var_child_runnable_config.get() or {}
    tags = [*(config.get("tags") or []), *(HELD.get("tags") or [])]
    token = var_child_runnable_config.set({**config, "tags": tags})
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def hold(message: AIMessage) -> dict[str, Any]:
    """The draft as the state holds it."""
    return dict(message_to_dict(message))


def held_message(held: Mapping[str, Any]) -> AIMessage:
    (message,) = messages_from_dict([dict(held)])
    assert isinstance(message, AIMessage)  # only the answer node holds one
    return message


def with_draft(state: Mapping[str, Any], draft: AIMessage) -> dict[str, Any]:
    """The state as the check reads it: the held draft is its last message."""
    return {**state, "messages": [*(state.get("messages") or []), draft]}


def published(update: dict[str, Any], draft: AIMessage) -> dict[str, Any]:
    """A check's ``update`` on a held draft: the answer it keeps appended (the draft itself
    when nothing replaced it), the draft's removal dropped (it never entered ``messages``)
    and the draft released."""
    kept = [
        m for m in update.get("messages") or []
        if not (isinstance(m, RemoveMessage) and m.id == draft.id)
    ]  # fmt: skip
    if not any(isinstance(m, AIMessage) for m in kept):
        kept.append(draft)
    return {**update, "messages": kept, "answer_draft": None}


def publishing(node: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """A ``(state, runtime)`` check node that appends the answer it keeps when the answer
    node held the draft back: the check reads the state as if the draft were its last
    message; removing the draft is then no removal (it never entered ``messages``)."""

    def check_answer(state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
        held = state.get("answer_draft")
        if not held:
            return node(state, runtime)
        draft = held_message(held)
        return published(node(with_draft(state, draft), runtime), draft)

    check_answer.__doc__ = node.__doc__
    return check_answer


__all__ = [
    "DRAFT_TAG",
    "HELD",
    "ChatRunState",
    "draft_config",
    "held_message",
    "hold",
    "holds_draft",
    "not_streamed",
    "published",
    "publishing",
    "with_draft",
]
