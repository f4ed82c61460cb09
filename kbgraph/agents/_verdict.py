"""The answer check's verdict on the answer's own message: a chat UI renders the message, not
the graph's state, so an unsupported answer must carry its mark there (issue 40).

* ``response_metadata["kbgraph_check"]`` (:data:`VERDICT_KEY`) holds an
  :class:`AnswerVerdict` — whether the sources support every claim, the score, the policy
  and what the check did — on every answer the check ran on (the ready agents,
  ``RagMiddleware``, ``AnswerCheckMiddleware``, ``answer_check_node``);
* under ``policy="flag"`` an answer written from the sources with unsupported claims also
  gets a visible line at its end (:data:`FLAG_PREFIX` …), since ``flag`` keeps the answer
  as written.

The ``answer`` key of a state keeps the model's text; only the message is marked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import AIMessage
from typing_extensions import TypedDict

from kbgraph.evals._internal import unsupported

from ._state import AnswerAction, AnswerCheckRecord

VERDICT_KEY = "kbgraph_check"
FLAG_PREFIX = "⚠ Not supported by the sources:"
MAX_FLAGGED = 3
MAX_CLAIM_CHARS = 120


class AnswerVerdict(TypedDict):
    """``response_metadata["kbgraph_check"]`` of a checked answer. ``grounded``: the check
    ran without error and found no unsupported claim; ``score``: its mean support (``None``:
    no claim, or the judge failed); ``unsupported``: the claims the sources do not support
    (of the message as shown); ``error``: why the judge could not check, if it could not."""

    grounded: bool
    score: float | None
    policy: str
    threshold: float
    action: AnswerAction
    unsupported: list[str]
    error: str | None


def verdict_of(record: AnswerCheckRecord) -> AnswerVerdict:
    """The verdict a check record gives its message."""
    claims = list(dict.fromkeys(c["text"] for c in unsupported(record)))
    return {
        "grounded": not claims and not record["error"],
        "score": record["score"],
        "policy": record["policy"],
        "threshold": record["threshold"],
        "action": record["action"],
        "unsupported": claims,
        "error": record["error"],
    }


def verdict_on(message: Any) -> AnswerVerdict | None:
    """The verdict a message carries (``None``: not checked, or no AI message)."""
    if not isinstance(message, AIMessage):
        return None
    found = message.response_metadata.get(VERDICT_KEY)
    return found if isinstance(found, dict) else None  # type: ignore[return-value]


def flag_line(verdict: AnswerVerdict) -> str:
    """The visible line of a flagged answer (empty: nothing to flag)."""
    if verdict["policy"] != "flag" or not verdict["unsupported"]:
        return ""
    shown = [_short(c) for c in verdict["unsupported"][:MAX_FLAGGED]]
    more = len(verdict["unsupported"]) - len(shown)
    tail = f" (and {more} more)" if more > 0 else ""
    return f"{FLAG_PREFIX} {'; '.join(shown)}{tail}"


def _short(claim: str) -> str:
    claim = " ".join(claim.split())
    return claim if len(claim) <= MAX_CLAIM_CHARS else claim[: MAX_CLAIM_CHARS - 1] + "…"


def mark_verdict(
    message: AIMessage, record: AnswerCheckRecord | None, *, from_sources: bool = True
) -> AIMessage:
    """A copy of ``message`` with the check's verdict (``message`` itself when the check did
    not run: nothing to mark). The id is kept: a state update replaces the message in
    place. ``from_sources=False`` (a reply written without retrieval: small talk, an answer
    from memory) gets the metadata but no visible line: "Hello!" is no claim to flag."""
    if record is None:
        return message
    verdict = verdict_of(record)
    metadata = {**message.response_metadata, VERDICT_KEY: dict(verdict)}
    update: dict[str, Any] = {"response_metadata": metadata}
    line = flag_line(verdict) if from_sources else ""
    text = message.text
    if line and line not in text:
        update["content"] = f"{text.rstrip()}\n\n{line}"
    return message.model_copy(update=update)


def marked_update(state: Mapping[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """A check node's ``update`` with its verdict on the answer's message: the replacement
    it appends, else the state's last message, put back under its id."""
    record = update.get("answer_check")
    if record is None:
        return update
    from_sources = update.get("answer_mode", state.get("answer_mode")) == "llm"
    new = list(update.get("messages") or [])
    if new and isinstance(new[-1], AIMessage):
        marked = mark_verdict(new[-1], record, from_sources=from_sources)
        return {**update, "messages": [*new[:-1], marked]}
    messages = list(state.get("messages") or [])
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage) or last.id is None or last.tool_calls:
        return update
    return {**update, "messages": [mark_verdict(last, record, from_sources=from_sources)]}


def with_verdict(node: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """A ``(state, runtime)`` check node whose verdict lands on the answer's message."""

    def check_answer(state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
        return marked_update(state, node(state, runtime))

    check_answer.__doc__ = node.__doc__
    return check_answer


__all__ = [
    "FLAG_PREFIX",
    "VERDICT_KEY",
    "AnswerVerdict",
    "flag_line",
    "mark_verdict",
    "marked_update",
    "verdict_of",
    "verdict_on",
    "with_verdict",
]
