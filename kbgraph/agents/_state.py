"""State of the ready-made agents: the subgraph's keys plus the answer and its citations."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from typing_extensions import TypedDict

from kbgraph._base.citations import ResolvedCitation, UncitedSource, UnresolvedMarker
from kbgraph.evals import AnswerCheck
from kbgraph.graphs import Citation, RagOutput

from ._repair import DroppedPart

AnswerMode = Literal[
    "llm", "extractive", "fallback", "small_talk", "answered", "not_grounded", "stopped"
]
"""How the answer was made: by the chat model from the sources; extractively (no chat
model); extractively because the chat model failed or its answer could not be shown
(``answer_check.policy="repair"``); a reply without retrieval (small talk,
or a question the conversation already answers); a not-found message with guidance; or
the tool agent's message that it stopped at its limit of searches or steps."""


class AgentInput(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    rag_query: str | None


AnswerAction = Literal["none", "flagged", "repaired", "regenerated", "replaced"]
"""What the answer check did: nothing to do (every claim supported, or none made), flagged
unsupported claims (``policy="flag"``, or a regeneration that did not do better), showed
the draft less what its sources do not support (``repair``: ``dropped`` says what and why),
wrote the answer again (``regenerate``, or ``repair`` with a second answer that may be shown),
or replaced it by the extractive one (``extractive``, or ``repair`` when neither answer may
be shown)."""


class AnswerAttempt(TypedDict):
    """One answer the chat model wrote under ``policy="repair"``: its text, its answer
    check's score, and why it was not shown (empty: it was)."""

    text: str
    score: float | None
    problems: list[str]


class AnswerCheckRecord(AnswerCheck):
    """``answer_check``: the check of the answer (:class:`kbgraph.evals.AnswerCheck`: score,
    claims with verdicts and evidence, judge), the policy and threshold it ran under, what it
    did, after a regeneration the check of the ``first`` answer, and under ``repair``, when
    an answer was not shown, each ``attempts`` of the chat model (kept here, never lost),
    the sentences of the draft ``dropped`` from the answer shown, with why, and the source
    numbers repair ``added_citations`` for (a kept sentence that cited none, or a source that
    does not support it)."""

    policy: str
    threshold: float
    action: AnswerAction
    first: NotRequired[AnswerCheck]
    attempts: NotRequired[list[AnswerAttempt]]
    dropped: NotRequired[list[DroppedPart]]
    added_citations: NotRequired[list[int]]


class AnswerKeys(TypedDict, total=False):
    """What the answer and citation-extraction nodes add: the answer text (also appended to
    ``messages``), its resolved ``[N]`` markers, markers that name no source, and the
    sources it never cites. ``answer_check`` is the answer checked against its sources
    (``None`` when no model wrote it, or the check is off). ``answer_trimmed`` says which
    sources the chat model was shown when they did not all fit its context window
    (``None``: all of them)."""

    answer: str
    answer_mode: AnswerMode
    answer_error: str | None
    answer_trimmed: str | None
    answer_citations: list[ResolvedCitation]
    answer_unresolved: list[UnresolvedMarker]
    answer_uncited: list[UncitedSource]
    answer_check: AnswerCheckRecord | None


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
    "AnswerAction",
    "AnswerAttempt",
    "AnswerCheckRecord",
    "AnswerKeys",
    "AnswerMode",
    "ChatAgentState",
    "ToolAgentOutput",
    "ToolAgentState",
]
