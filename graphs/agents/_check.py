"""The ``check_answer`` node of the ready agents: every answer the chat model writes is
checked against the sources it cites (:func:`kbgraph.evals.check_answer`, the offline judge
by default), and ``RagSettings.answer_check.policy`` decides what happens to an answer the
sources do not support:

* ``flag`` (default): nothing changes but ``answer_check`` (and ``kbgraph ask`` prints the
  unsupported sentences);
* ``regenerate``: when a claim is unsupported, the model answers once more with those claims
  named; the answer the sources support better is kept;
* ``extractive``: an answer scored below ``threshold`` is replaced by the extractive answer;
* ``off``: no check.

Extractive answers, canned replies and not-found messages are not the model's and are not
checked. A reply made without retrieval (small talk, an off-topic question) is checked
against no source: what it claims, nothing supports. Replacing an answer replaces its
message in ``messages`` (same id) and resolves its ``[N]`` markers again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from kbgraph.evals.answer_check import AnswerCheck, unsupported
from kbgraph.evals.answer_check import check_answer as check_with
from kbgraph.evals.judges import Judge
from kbgraph.prompts import render_prompt

from ..nodes._base import run_outage
from ..nodes._text import question_of
from ..settings import AnswerCheckSettings, RagSettings, settings_from_runtime
from ..structured import describe_error
from ..turns import mark_answer
from ._common import citation_update, model_for
from .state import AnswerAction, AnswerCheckRecord

PromptFor = Callable[[Mapping[str, Any], BaseChatModel, RagSettings], list[BaseMessage]]
"""The messages a state's answer was written from (regeneration repeats them)."""


def make_check_node(
    chat_model: BaseChatModel | None,
    prompt_for: PromptFor,
    extractive: Callable[[Mapping[str, Any], str], str],
    judge: Judge | None = None,
) -> Any:
    """The node; ``judge`` (any :class:`kbgraph.evals.Judge`) overrides the settings'
    ``answer_check.judge`` spec."""

    def check_answer(state: Mapping[str, Any], runtime: Runtime[RagSettings]) -> dict[str, Any]:
        """Check the chat model's answer against its sources; act as the policy says."""
        settings = settings_from_runtime(runtime)
        config = settings.answer_check
        model = model_for(chat_model, settings)
        if config.policy == "off" or not generated(state, model):
            return {"answer_check": None}
        answer = str(state.get("answer") or "")
        with_sources = state.get("answer_mode") == "llm"
        citations = list(state.get("rag_citations") or []) if with_sources else []
        question = question_of(dict(state))
        chosen = judge or config.judge
        check = check_with(answer, citations, question=question, judge=chosen)
        flagged: AnswerAction = "flagged" if unsupported(check) else "none"
        update: dict[str, Any] = {"answer_check": _record(check, config, flagged)}
        if not with_sources or check["error"] or model is None or run_outage(state):
            return update
        if config.policy == "regenerate" and unsupported(check):
            prompt = _regeneration_prompt(state, model, settings, prompt_for, check)
            redo = _regenerated(state, model, prompt, check, config, citations, chosen)
            return redo or update
        if config.policy == "extractive" and (check["score"] or 0.0) < config.threshold:
            why = f"the chat model's answer scored {check['score'] or 0:.2f} against its sources"
            return _replaced(state, extractive(state, why), "extractive", check, config, citations)
        return update

    return check_answer


def generated(state: Mapping[str, Any], model: BaseChatModel | None) -> bool:
    """Whether the chat model wrote the answer: from the sources (``llm``), or a reply
    without retrieval it wrote itself (not a canned one, which says nothing checkable)."""
    mode = state.get("answer_mode")
    if mode == "llm":
        return True
    return (
        mode in ("small_talk", "answered") and model is not None and not state.get("answer_error")
    )


def _record(
    check: AnswerCheck, config: AnswerCheckSettings, action: AnswerAction
) -> AnswerCheckRecord:
    return {**check, "policy": config.policy, "threshold": config.threshold, "action": action}


def _regeneration_prompt(
    state: Mapping[str, Any],
    model: BaseChatModel,
    settings: RagSettings,
    prompt_for: PromptFor,
    check: AnswerCheck,
) -> Callable[[], list[BaseMessage]]:
    """The answer's own prompt, the answer, then the unsupported claims named."""

    def prompt() -> list[BaseMessage]:
        claims = "\n".join(f"- {c['text']}" for c in unsupported(check))
        last = _answer_message(state)
        before = list(state.get("messages") or [])[: -1 if last is not None else None]
        return [
            *prompt_for({**state, "messages": before}, model, settings),
            AIMessage(str(state.get("answer") or "")),
            HumanMessage(render_prompt("agent_regenerate", claims=claims).strip()),
        ]

    return prompt


def _regenerated(
    state: Mapping[str, Any],
    model: BaseChatModel,
    prompt: Callable[[], list[BaseMessage]],
    check: AnswerCheck,
    config: AnswerCheckSettings,
    citations: list[Any],
    judge: Judge | str,
) -> dict[str, Any] | None:
    """The answer written again, when the sources support it better than the first (else
    ``None``: the first stays, flagged)."""
    try:
        text = model.invoke(prompt()).text
    except Exception as exc:  # the first answer stands; say why the second is missing
        record = _record(check, config, "flagged")
        record["error"] = f"regeneration failed: {describe_error(exc)}"
        return {"answer_check": record}
    question = question_of(dict(state))
    second = check_with(text, citations, question=question, judge=judge)
    if not text.strip() or (second["score"] or 0.0) <= (check["score"] or 0.0):
        return None
    return _replaced(state, text, "llm", second, config, citations, first=check)


def _replaced(
    state: Mapping[str, Any],
    text: str,
    mode: str,
    check: AnswerCheck,
    config: AnswerCheckSettings,
    citations: list[Any],
    *,
    first: AnswerCheck | None = None,
) -> dict[str, Any]:
    """The state update that puts ``text`` in place of the answer (and of its message)."""
    action: AnswerAction = "regenerated" if first is not None else "replaced"
    record = _record(check, config, action)
    if first is not None:
        record["first"] = first
    update: dict[str, Any] = {
        "answer": text,
        "answer_mode": mode,
        "answer_check": record,
        **citation_update(text, citations),
    }
    last = _answer_message(state)
    if last is not None:
        update["messages"] = [mark_answer(last.model_copy(update={"content": text}), state, mode)]
    return update


def _answer_message(state: Mapping[str, Any]) -> AIMessage | None:
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return last if isinstance(last, AIMessage) and last.id else None


__all__ = ["PromptFor", "generated", "make_check_node"]
