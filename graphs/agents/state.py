"""State of the ready-made agents: the subgraph's keys plus the answer and its citations."""

from __future__ import annotations

from typing import Annotated, Literal

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from typing_extensions import TypedDict

from ..citations import ResolvedCitation, UncitedSource, UnresolvedMarker
from ..state import Citation, RagOutput

AnswerMode = Literal["llm", "extractive", "fallback", "small_talk", "answered", "not_grounded"]
"""How the answer was made: by the chat model from the sources; extractively (no chat
model); extractively because the chat model failed; a reply without retrieval (small talk,
or a question the conversation already answers); or a not-found message with guidance."""


class AgentInput(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    rag_query: str | None


class AnswerKeys(TypedDict, total=False):
    """What the answer and citation-extraction nodes add: the answer text (also appended to
    ``messages``), its resolved ``[N]`` markers, markers that name no source, and the
    sources it never cites. ``answer_trimmed`` says which sources the chat model was shown
    when they did not all fit its context window (``None``: all of them)."""

    answer: str
    answer_mode: AnswerMode
    answer_error: str | None
    answer_trimmed: str | None
    answer_citations: list[ResolvedCitation]
    answer_unresolved: list[UnresolvedMarker]
    answer_uncited: list[UncitedSource]


class ChatAgentState(RagOutput, AnswerKeys, total=False):
    """The chat agent: the subgraph's output keys land here unchanged."""


class ToolAgentOutput(AnswerKeys, total=False):
    """The ReAct agent's output: ``rag_citations`` gathers the sources of every
    ``rag_search`` call of the conversation (numbered as the tool numbered them)."""

    messages: Annotated[list[AnyMessage], add_messages]
    rag_citations: list[Citation]


class ToolAgentState(ToolAgentOutput, total=False):
    remaining_steps: RemainingSteps


__all__ = [
    "AgentInput",
    "AnswerKeys",
    "AnswerMode",
    "ChatAgentState",
    "ToolAgentOutput",
    "ToolAgentState",
]
