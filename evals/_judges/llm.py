"""A judge over any LangChain chat model.

Each question goes out as a system prompt and a user prompt from ``prompts/eval_*.txt``.
The reply is read through the shared helper of :mod:`kbgraph.graphs._structured` (the one
the subgraph's nodes use): the model's structured output (tool calling / JSON schema) and,
when the model or server cannot do that (many local models), a plain-JSON fallback prompt
whose reply is parsed and validated against the same schema. Calls are retried with
exponential backoff; every call's token usage is counted. Temperature is 0:
specs resolve through ``kbgraph.graphs._models.resolve_chat_model`` (temperature 0), and a model
instance with a ``temperature`` field is copied with it set to 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from kbgraph._base.context_window import JSON_RESERVE_TOKENS, first_lines, largest_fitting
from kbgraph._base.faces import shown_as
from kbgraph._base.model_calls import describe_error
from kbgraph.errors import JudgeError
from kbgraph.graphs._internal import ask_structured
from kbgraph.prompts import render_prompt

from .._claims import citation_numbers, strip_markers
from .._records import Claim, Judgement, Relevance, TokenUsage, Verdict

T = TypeVar("T", bound=BaseModel)

_SCORE: dict[Verdict, float] = {"supported": 1.0, "not_supported": 0.0, "contradicted": 0.0}
_ADDRESSES = {"fully": 1.0, "partly": 0.5, "not": 0.0}


class ClaimVerdictOut(BaseModel):
    claim: int = Field(description="the claim's number")
    verdict: Literal["supported", "not_supported", "contradicted"]
    reason: str = ""


class ClaimVerdictsOut(BaseModel):
    """Verdicts on numbered claims."""

    verdicts: list[ClaimVerdictOut]


class ClaimOut(BaseModel):
    claim: str = Field(description="one self-contained statement, without citation markers")
    citations: list[int] = Field(
        default_factory=list, description="source numbers its markers cite; empty if none"
    )


class ClaimsOut(BaseModel):
    """The self-contained claims of an answer, each with the sources it cites."""

    claims: list[ClaimOut]


class PassageOut(BaseModel):
    passage: int = Field(description="the passage's number")
    relevant: bool
    reason: str = ""


class PassagesOut(BaseModel):
    """Relevance of numbered passages."""

    passages: list[PassageOut]


class AnswerOut(BaseModel):
    """Whether an answer addresses its question."""

    addresses: Literal["fully", "partly", "not"]
    reason: str = ""


@shown_as("kbgraph.evals")
class LLMJudge:
    """``model`` is a chat model or a chat model spec (``openai:gpt-4o-mini``,
    ``openai_compatible:<model>@<url>`` …)."""

    def __init__(
        self,
        model: BaseChatModel | str,
        *,
        max_retries: int = 2,
        batch_size: int = 20,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._model = _at_temperature_zero(_resolve(model))
        self._max_retries = max_retries
        self._batch_size = batch_size
        self._sleep = sleep
        self._usage = TokenUsage()
        self._structured_ok = True

    @property
    def name(self) -> str:
        model = getattr(self._model, "model_name", None) or getattr(self._model, "model", None)
        return f"llm:{model or type(self._model).__name__}"

    @property
    def usage(self) -> TokenUsage:
        return self._usage

    def judge_claims(
        self, claims: Sequence[str], context: str, *, question: str | None = None
    ) -> list[Judgement]:
        out: list[Judgement] = []
        for start in range(0, len(claims), self._batch_size):
            batch = claims[start : start + self._batch_size]
            reply = self.ask(
                "claims",
                ClaimVerdictsOut,
                question=question or "(not given)",
                context=context,
                claims=_numbered(batch),
            )
            by_number = {v.claim: v for v in reply.verdicts}
            for i in range(1, len(batch) + 1):
                v = by_number.get(i)
                if v is None:
                    out.append(Judgement("not_supported", 0.0, "the judge gave no verdict"))
                else:
                    out.append(Judgement(v.verdict, _SCORE[v.verdict], v.reason))
        return out

    def decompose_claims(self, answer: str, question: str | None = None) -> list[Claim]:
        """The answer's self-contained claims (Ragas-style decomposition by the model), each
        with the citations of the markers that cover it. A citation number the answer does
        not use is dropped: the model may not invent sources. Raises :class:`JudgeError`
        when the model gives no valid reply (callers fall back to the regex splitter)."""
        reply = self.ask("decompose", ClaimsOut, question=question or "(not given)", answer=answer)
        used = set(citation_numbers(answer))
        out: list[Claim] = []
        for item in reply.claims:
            text = strip_markers(item.claim)
            if not text:
                continue
            cited = (*item.citations, *citation_numbers(item.claim))
            out.append(Claim(text, tuple(dict.fromkeys(n for n in cited if n in used))))
        return out

    def judge_passages(
        self, question: str, passages: Sequence[str], *, reference: str | None = None
    ) -> list[Relevance]:
        if not passages:
            return []
        reply = self.ask(
            "passages",
            PassagesOut,
            question=question,
            reference=reference or "(none given)",
            passages=_numbered(passages),
        )
        by_number = {p.passage: p for p in reply.passages}
        out: list[Relevance] = []
        for i in range(1, len(passages) + 1):
            p = by_number.get(i)
            relevant = bool(p and p.relevant)
            out.append(Relevance(relevant, float(relevant), p.reason if p else "no verdict"))
        return out

    def judge_answer(self, question: str, answer: str) -> Relevance:
        reply = self.ask("answer", AnswerOut, question=question, answer=answer)
        score = _ADDRESSES[reply.addresses]
        return Relevance(score >= 0.5, score, f"{reply.addresses}: {reply.reason}")

    def ask(self, task: str, schema: type[T], **values: object) -> T:
        """Ask ``prompts/eval_<task>_*.txt`` and return the validated reply (structured
        output, then plain JSON, retried with backoff); :class:`JudgeError` when every
        attempt failed. The prompt's longest value is cut to fit the model's window."""
        messages = self._fitted(task, values)
        errors: list[str] = []
        for attempt in range(self._max_retries + 1):
            if attempt:
                self._sleep(min(8.0, 0.5 * 2**attempt))
            reply = ask_structured(
                self._model, schema, messages, structured=self._structured_ok, name="judge"
            )
            for message in reply.replies:
                self._count(message)
            if reply.value is not None:
                return reply.value
            for stage, exc in reply.errors:
                if stage == "structured" and isinstance(exc, NotImplementedError):
                    self._structured_ok = False  # this model has no structured output
                errors.append(f"{stage}: {describe_error(exc)}")
        raise JudgeError(
            f"the LLM judge ({self.name}) gave no valid {schema.__name__} after "
            f"{self._max_retries + 1} attempts; last errors: {'; '.join(errors[-2:])}. "
            "Check the model spec and the server, or use --judge offline."
        )

    def _fitted(self, task: str, values: dict[str, object]) -> list[BaseMessage]:
        """The prompt, with its longest value (the context, the passages) cut to its first
        lines when the whole would not fit the model's context window."""
        longest = max(values, key=lambda k: len(str(values[k])), default=None)

        def build(lines: int) -> list[BaseMessage]:
            cut = {} if longest is None else {longest: first_lines(str(values[longest]), lines)}
            return [
                SystemMessage(render_prompt(f"eval_{task}_system")),
                HumanMessage(render_prompt(f"eval_{task}_user", **{**values, **cut})),
            ]

        total = 0 if longest is None else str(values[longest]).count("\n") + 1
        fit = largest_fitting(self._model, build, total, reserve=JSON_RESERVE_TOKENS)
        if fit is None:
            raise JudgeError(
                f"the {task} prompt does not fit {self.name}'s context window even without "
                f"its {longest}; use a model with a larger window (gguf: raise n_ctx)."
            )
        return fit.messages

    def _count(self, message: Any) -> None:
        meta = getattr(message, "usage_metadata", None) or {}
        self._usage.add(int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0)))


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {item.strip()}" for i, item in enumerate(items, start=1))


def _resolve(model: BaseChatModel | str) -> BaseChatModel:
    if isinstance(model, BaseChatModel):
        return model
    from kbgraph.graphs import resolve_chat_model

    # A judge spec reaches here from a run's answer_check.judge or from --judge.
    resolved = resolve_chat_model(model, served_as="answer_check.judge")
    if resolved is None:
        raise JudgeError(
            f"judge spec {model!r} names no chat model; use 'offline' or a chat model spec "
            "such as openai:gpt-4o-mini or openai_compatible:<model>@<url>."
        )
    return resolved


def _at_temperature_zero(model: BaseChatModel) -> BaseChatModel:
    fields = getattr(type(model), "model_fields", {})
    if "temperature" in fields and getattr(model, "temperature", 0) not in (0, 0.0):
        return model.model_copy(update={"temperature": 0})
    return model


__all__ = [
    "AnswerOut",
    "ClaimOut",
    "ClaimVerdictOut",
    "ClaimVerdictsOut",
    "ClaimsOut",
    "LLMJudge",
    "PassageOut",
    "PassagesOut",
]
