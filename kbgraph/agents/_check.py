"""The ``check_answer`` node of the ready agents: every answer the chat model writes is
checked against the sources it cites (:func:`kbgraph.evals.check_answer`, the offline judge
by default), and ``RagSettings.answer_check.policy`` decides what happens to an answer the
sources do not support:

* ``repair`` (default): an answer that must not be shown (it loops, was cut off, cites no
  source while sources exist, scores below ``threshold``, or has a wrongly cited claim or
  an unstated fact; see :mod:`kbgraph.agents._problems`) is first kept less what is
  wrong (:mod:`kbgraph.agents._repair`) and shown when that passes; else written once more
  with those reasons named; when the second answer has a problem too, the extractive
  answer replaces it, its header saying why, below the draft's supported sentences. The
  attempts stay in ``answer_check["attempts"]``, the dropped sentences in ``dropped`` (and
  ``--trace``). An answer with none of these problems is never touched;
* ``flag``: nothing changes but ``answer_check`` (and ``kbgraph ask`` prints the
  unsupported sentences);
* ``regenerate``: when a claim is unsupported, the model answers once more with those claims
  named; the answer the sources support better is kept;
* ``extractive``: an answer scored below ``threshold`` is replaced by the extractive answer;
* ``off``: no check.

Extractive answers, canned replies and not-found messages are not the model's and are not
checked. A reply made without retrieval (small talk, an off-topic question) is checked
against no source: what it claims, nothing supports. Replacing an answer removes its
message from ``messages`` and appends the new one under a new id (so that
``stream_mode="messages"`` shows the replacement, once), and resolves its ``[N]`` markers
again. A second answer is not streamed token by token (it may be replaced in turn).
"""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.runtime import Runtime

from kbgraph._base.model_calls import INTERNAL, describe_error
from kbgraph.evals import AnswerCheck, Judge
from kbgraph.evals import check_answer as check_with
from kbgraph.evals._internal import unsupported
from kbgraph.graphs import (
    AnswerCheckSettings,
    RagSettings,
    mark_answer,
    settings_from_runtime,
)
from kbgraph.graphs._internal import question_of, run_outage
from kbgraph.prompts import render_prompt

from ._common import citation_update, model_for
from ._problems import answer_problems, cut_off
from ._repair import repair_draft
from ._state import AnswerAction, AnswerAttempt, AnswerCheckRecord

PromptFor = Callable[[Mapping[str, Any], BaseChatModel, RagSettings], list[BaseMessage]]
"""The messages a state's answer was written from (regeneration repeats them)."""
Extractive = Callable[[Mapping[str, Any], str], str]


def make_check_node(
    chat_model: BaseChatModel | None,
    prompt_for: PromptFor,
    extractive: Extractive,
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
        if not with_sources:
            return update
        if config.policy == "repair":
            usable = model is not None and run_outage(state) is None
            usable = usable and config.rewrites_with(model)
            redo = _Redo(state, model, settings, prompt_for, chosen) if usable else None
            return _repaired(state, check, config, citations, extractive, update, redo, chosen)
        if check["error"] or model is None or run_outage(state):
            return update
        if config.policy == "regenerate" and unsupported(check):
            prompt = _regeneration_prompt(state, model, settings, prompt_for, check)
            redo_once = _regenerated(state, model, prompt, check, config, citations, chosen)
            return redo_once or update
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
    request: str | None = None,
) -> Callable[[], list[BaseMessage]]:
    """The answer's own prompt, the answer, then ``request`` (by default: the unsupported
    claims named)."""

    def prompt() -> list[BaseMessage]:
        claims = "\n".join(f"- {c['text']}" for c in unsupported(check))
        asked = request or render_prompt("agent_regenerate", claims=claims)
        last = _answer_message(state)
        before = list(state.get("messages") or [])[: -1 if last is not None else None]
        return [
            *prompt_for({**state, "messages": before}, model, settings),
            AIMessage(str(state.get("answer") or "")),
            HumanMessage(asked.strip()),
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
        message = model.invoke(prompt(), config=INTERNAL)
    except Exception as exc:  # the first answer stands; say why the second is missing
        record = _record(check, config, "flagged")
        record["error"] = f"regeneration failed: {describe_error(exc)}"
        return {"answer_check": record}
    text = message.text
    question = question_of(dict(state))
    second = check_with(text, citations, question=question, judge=judge)
    if not text.strip() or (second["score"] or 0.0) <= (check["score"] or 0.0):
        return None
    return _replaced(state, text, "llm", second, config, citations, first=check, source=message)


class _Redo:
    """The ``repair`` policy's one more try: the answer's own prompt, the answer, and why
    it cannot be shown."""

    def __init__(
        self,
        state: Mapping[str, Any],
        model: BaseChatModel | None,
        settings: RagSettings,
        prompt_for: PromptFor,
        judge: Judge | str,
    ) -> None:
        self.state, self.model, self.settings = state, model, settings
        self.prompt_for, self.judge = prompt_for, judge

    def __call__(
        self, problems: list[str], check: AnswerCheck, citations: list[Any]
    ) -> tuple[AIMessage, AnswerCheck] | str:
        """The second answer and its check, or why there is none."""
        assert self.model is not None  # _Redo is only made with a model
        claims = list(dict.fromkeys(c["text"] for c in unsupported(check)))[:MAX_CLAIMS_NAMED]
        reasons = [*problems, *(f"the sources do not say: {c}" for c in claims)]
        request = render_prompt("agent_repair", problems="\n".join(f"- {r}" for r in reasons))
        prompt = _regeneration_prompt(
            self.state, self.model, self.settings, self.prompt_for, check, request
        )
        try:
            # Not streamed: this answer may be replaced in turn; the one kept is emitted
            # whole when the node ends.
            message = self.model.invoke(prompt(), config=INTERNAL)
        except Exception as exc:
            return f"writing it again failed: {describe_error(exc)}"
        question = question_of(dict(self.state))
        return message, check_with(message.text, citations, question=question, judge=self.judge)


MAX_CLAIMS_NAMED = 3
MAX_WHY_CHARS = 160
"""The extractive header's reason (``Extractive answer ({why}): ...``) at most: the header
read ~400 characters with both attempts' problems spelled out, cut mid-word."""


def _attempt(
    text: str,
    message: AIMessage | None,
    check: AnswerCheck,
    citations: list[Any],
    config: AnswerCheckSettings,
) -> AnswerAttempt:
    cited = citation_update(text, citations)["answer_citations"]
    score = None if check["error"] else check["score"]
    problems = answer_problems(
        text, message=message, sources=len(citations), cited=len(cited), score=score,
        threshold=config.threshold, claims=check["claims"],
    )  # fmt: skip
    return {"text": text, "score": check["score"], "problems": problems}


def _repaired(
    state: Mapping[str, Any],
    check: AnswerCheck,
    config: AnswerCheckSettings,
    citations: list[Any],
    extractive: Extractive,
    update: dict[str, Any],
    redo: _Redo | None,
    judge: Judge | str,
) -> dict[str, Any]:
    """The ``repair`` policy: the answer as it is when it may be shown; else the draft less
    what its sources do not support (:func:`kbgraph.agents._repair.repair_draft`), checked
    again, when that may be shown; else written once more with the reasons; else the
    extractive answer, saying why, below what the draft said that its sources support."""
    text = str(state.get("answer") or "")
    first = _attempt(text, _answer_message(state), check, citations, config)
    if not first["problems"] or not citations:
        # Without sources (the tool agent answered without a search) there is nothing to
        # quote instead: the check's verdict is recorded, as under ``flag``.
        return update
    attempts = [first]
    kept = repair_draft(text, check, citations, cut=cut_off(_answer_message(state)))
    supported_part = ""
    if kept.text:
        question = question_of(dict(state))
        rechecked = check_with(kept.text, citations, question=question, judge=judge)
        attempts.append(_attempt(kept.text, None, rechecked, citations, config))
        if rechecked["score"] is not None and not unsupported(rechecked):
            supported_part = kept.text
        if not attempts[-1]["problems"]:
            out = _replaced(
                state, kept.text, "llm", rechecked, config, citations, first=check,
                action="repaired",
            )  # fmt: skip
            out["answer_check"].update(
                attempts=attempts, dropped=kept.dropped, added_citations=kept.cited
            )
            return out
    if redo is not None:
        second = redo(first["problems"], check, citations)
        if isinstance(second, str):
            attempts.append({"text": "", "score": None, "problems": [second]})
        else:
            message, checked = second
            attempts.append(_attempt(message.text, message, checked, citations, config))
            if not attempts[-1]["problems"]:
                out = _replaced(
                    state, message.text, "llm", checked, config, citations, first=check,
                    source=message,
                )  # fmt: skip
                out["answer_check"].update(attempts=attempts, dropped=kept.dropped)
                return out
    quotes = extractive(state, _why(attempts))
    # What the check found supported in the draft is kept above the quotes: they may
    # lack it (a model's right first sentence, then a loop).
    # Only when checked again it holds no unsupported claim: a sentence the first check
    # matched no claim to was kept, and must not reach the person unchecked.
    shown = f"{supported_part}\n\n{quotes}" if supported_part else quotes
    out = _replaced(state, shown, "fallback", check, config, citations)
    out["answer_check"].update(attempts=attempts, dropped=kept.dropped)
    if supported_part:
        out["answer_check"]["added_citations"] = kept.cited
    return out


def _why(attempts: list[AnswerAttempt]) -> str:
    """One line: why the extractive answer is shown."""
    first = attempts[0]["problems"]
    why = f"the chat model's answer was not shown: {'; '.join(first)}"
    if len(attempts) > 1:
        again = attempts[1]["problems"]
        why += "; written again, the same" if again == first else f"; again: {'; '.join(again)}"
    # cut at a word (the whole problems stay in answer_check["attempts"] and --trace)
    return textwrap.shorten(why, width=MAX_WHY_CHARS, placeholder=" …")


def _replaced(
    state: Mapping[str, Any],
    text: str,
    mode: str,
    check: AnswerCheck,
    config: AnswerCheckSettings,
    citations: list[Any],
    *,
    first: AnswerCheck | None = None,
    source: AIMessage | None = None,
    action: AnswerAction | None = None,
) -> dict[str, Any]:
    """The state update that puts ``text`` in place of the answer (and of its message).
    The old message is removed and the new one appended under a new id (the second
    answer's own, when the model wrote it): LangGraph's ``stream_mode="messages"`` emits a
    message whose id it has seen never again, so a replacement under the old id would never
    reach a chat UI."""
    action = action or ("regenerated" if first is not None else "replaced")
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
    if last is not None and last.id is not None:
        new_id = (source.id if source is not None else None) or f"kbgraph-{uuid.uuid4()}"
        message = AIMessage(content=text, id=new_id)
        if "rag_should_retrieve" in state:  # the chat agent's turns are marked; the tool
            message = mark_answer(message, state, mode)  # agent's are not
        update["messages"] = [RemoveMessage(id=last.id), message]
    return update


def _answer_message(state: Mapping[str, Any]) -> AIMessage | None:
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return last if isinstance(last, AIMessage) and last.id else None


__all__ = ["PromptFor", "generated", "make_check_node"]
