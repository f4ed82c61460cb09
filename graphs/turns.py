"""What an answer remembers of its turn, for the turns after it.

The chat agent marks each reply (``AIMessage.response_metadata["kbgraph"]``) with whether
retrieval ran, whether the sources were judged grounded, how the reply was made, and which
sources (file, section) it drew on. The subgraph reads the mark on later turns:

* DecideRetrieve skips a repeated question only when its earlier answer was grounded — a
  question answered with "I could not find an answer" is searched again;
* RewriteQuery completes a follow-up with the sections and files the previous answer
  cited, and never with the reply's own words (an extractive header or a canned reply
  would leak into the query).

A parent agent of your own can mark its replies the same way::

    reply = mark_answer(AIMessage(text), state, mode="llm")

``response_metadata`` is never sent to a chat model, survives checkpoints and the LangGraph
API, and an unmarked reply simply counts as "not known to be grounded".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from typing_extensions import TypedDict

from kbgraph.errors import ConfigError

TURN_KEY = "kbgraph"
MAX_SOURCES = 3


class TurnSource(TypedDict):
    kb: str
    source: str
    section: str | None


class TurnMarker(TypedDict, total=False):
    """``retrieved``: retrieval ran; ``grounded``: GroundingCheck found the sources support
    an answer; ``mode``: how the reply was made (``kbgraph.agents.AnswerMode``); ``sources``:
    the best sources of the context (at most three), best first."""

    retrieved: bool
    grounded: bool
    mode: str
    sources: list[TurnSource]


def turn_marker(state: Mapping[str, Any], mode: str | None = None) -> TurnMarker:
    """The marker of a turn whose ``rag_*`` keys are in ``state``."""
    marker: TurnMarker = {
        "retrieved": bool(state.get("rag_should_retrieve")),
        "grounded": bool(state.get("rag_grounded")),
        "sources": [
            {
                "kb": str(c.get("kb", "")),
                "source": str(c.get("source", "")),
                "section": c.get("section"),
            }
            for c in list(state.get("rag_citations") or [])[:MAX_SOURCES]
        ],
    }
    if mode is not None:
        marker["mode"] = mode
    return marker


MARKED_KEYS = ("rag_should_retrieve", "rag_grounded", "rag_citations")
"""The state keys a marker is made of: a parent graph's ``State`` must declare all three
(LangGraph drops the subgraph's keys its parent does not declare)."""
_SUBGRAPH_KEYS = (*MARKED_KEYS, "rag_context", "rag_queries", "rag_grounding")


def check_marked_keys(state: Mapping[str, Any]) -> None:
    """Raise a ``ConfigError`` when ``state`` holds the subgraph's output but not every key a
    marker reads: a parent ``State`` without ``rag_should_retrieve`` marked each reply
    "retrieved: False" after a real retrieval, and later turns reasoned on it."""
    if not any(key in state for key in _SUBGRAPH_KEYS):
        return  # no retrieval in this conversation yet: nothing to mark wrongly
    missing = [key for key in MARKED_KEYS if key not in state]
    if missing:
        raise ConfigError(
            f"mark_answer: the state has no {', '.join(missing)}, so the turn marker would "
            "be wrong; declare rag_should_retrieve: bool, rag_grounded: bool and "
            "rag_citations: list[dict] in your graph's State (or subclass "
            "kbgraph.graphs.RagOutput)"
        )


def mark_answer(message: AIMessage, state: Mapping[str, Any], mode: str | None = None) -> AIMessage:
    """A copy of ``message`` carrying the marker of the turn in ``state`` (a ``ConfigError``
    when ``state`` lacks a key the marker reads: see :func:`check_marked_keys`)."""
    check_marked_keys(state)
    metadata = {**message.response_metadata, TURN_KEY: dict(turn_marker(state, mode))}
    return message.model_copy(update={"response_metadata": metadata})


def marker_of(message: BaseMessage) -> TurnMarker | None:
    """The marker of a reply, or ``None`` (not a reply, or not marked)."""
    if not isinstance(message, AIMessage):
        return None
    found = message.response_metadata.get(TURN_KEY)
    if not isinstance(found, Mapping):
        return None
    marker: TurnMarker = {}
    for key in ("retrieved", "grounded"):
        if isinstance(found.get(key), bool):
            marker[key] = found[key]
    if isinstance(found.get("mode"), str):
        marker["mode"] = found["mode"]
    marker["sources"] = [
        {"kb": str(s.get("kb", "")), "source": str(s.get("source", "")),
         "section": s.get("section") if isinstance(s.get("section"), str) else None}
        for s in found.get("sources") or []
        if isinstance(s, Mapping) and s.get("source")
    ]  # fmt: skip
    return marker


def reply_after(messages: Sequence[BaseMessage], index: int) -> AIMessage | None:
    """The AI reply with text to ``messages[index]`` (tool-call steps skipped), or ``None``
    when the next human message comes first."""
    for message in messages[index + 1 :]:
        if isinstance(message, HumanMessage):
            return None
        if isinstance(message, AIMessage) and message.text.strip():
            return message
    return None


__all__ = [
    "MARKED_KEYS",
    "MAX_SOURCES",
    "TURN_KEY",
    "TurnMarker",
    "TurnSource",
    "check_marked_keys",
    "mark_answer",
    "marker_of",
    "reply_after",
    "turn_marker",
]
