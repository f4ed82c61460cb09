"""The LangSmith / openevals evaluator shape shared by every evaluator:
``(inputs, outputs, reference_outputs) -> {"key", "score", "comment"}``.

The dicts are read leniently, because LangSmith data sets, openevals examples and our own
agent's state name things differently: the question is ``question`` / ``input`` /
``query``; the answer ``answer`` / ``output`` / ``response`` or the last message of
``messages``; the retrieved contexts ``contexts`` / ``rag_citations`` /
``retrieved_contexts`` / ``documents`` / ``context`` / ``source_documents`` (strings,
citation dicts or LangChain ``Document``s); the reference ``reference`` / ``answer`` / ``output``.

A mistake in these dicts is an error, not a silent 0: contexts under a key that looks like
one but is not read (``context_docs``, ``retrieved_docs``) raise ``ConfigError`` naming the
keys that are; no contexts under any key make the metrics that need them "undetermined",
with the reason. An empty list under a known key is an empty retrieval, and scores so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from kbgraph.errors import ConfigError

from .._records import EvalRecord, GoldSource, MetricName, MetricResult, Passage

_QUESTION_KEYS = ("question", "input", "query")
_ANSWER_KEYS = ("answer", "output", "response", "prediction")
_CONTEXT_KEYS = (
    "contexts",
    "rag_citations",
    "retrieved_contexts",
    "documents",
    "context",
    "source_documents",  # LangChain's RetrievalQA
)
_REFERENCE_KEYS = ("reference", "answer", "output", "ground_truth", "expected")
_CONTEXT_LIKE = re.compile(r"context|doc|passage|citation|retriev|chunk|evidence|source")
"""Key names that look like retrieved contexts: one of them that the adapter does not read
is a mistake to report, not contexts to drop."""
_NOT_CONTEXTS = frozenset({"gold_sources"})
COMMENT_CLAIMS = 5
"""Claims that are not supported listed in a LangSmith comment, with their reasons."""


class _Evaluates(Protocol):
    @property
    def name(self) -> MetricName: ...

    def evaluate(self, record: EvalRecord) -> MetricResult: ...


class LangSmithAdapter:
    """Mixed into each evaluator: calling the evaluator like a LangSmith evaluator scores
    one example. ``score`` is ``None`` when the metric is undetermined or failed, and the
    comment says why."""

    def __call__(
        self: _Evaluates,
        inputs: Mapping[str, Any] | None = None,
        outputs: Mapping[str, Any] | None = None,
        reference_outputs: Mapping[str, Any] | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        # A wrongly named key is the caller's mistake: raised, not scored (ConfigError).
        record = record_from_langsmith(inputs or {}, outputs or {}, reference_outputs or {})
        try:
            result = self.evaluate(record)
        except Exception as error:  # an evaluator must report, not break the caller's run
            result = MetricResult.failed(self.name, error)
        return to_langsmith(result)

    def as_langsmith_evaluator(self: _Evaluates) -> Callable[..., dict[str, Any]]:
        """A plain function with the exact parameter names LangSmith's ``evaluate`` and
        openevals inspect."""
        call = LangSmithAdapter.__call__

        def evaluator(
            inputs: dict[str, Any],
            outputs: dict[str, Any],
            reference_outputs: dict[str, Any] | None = None,
        ) -> dict[str, Any]:
            return call(self, inputs, outputs, reference_outputs)

        evaluator.__name__ = self.name
        return evaluator


def to_langsmith(result: MetricResult) -> dict[str, Any]:
    """``{key, score, comment}``; the comment says why, and lists the claims that are not
    supported with their reasons and source sentences."""
    comment = result.reason if result.status == "scored" else f"{result.status}: {result.reason}"
    weak = [
        v
        for key in ("claims", "answer_claims")
        for v in result.details.get(key, ())
        if getattr(v, "verdict", "supported") != "supported"
    ]
    for verdict in weak[:COMMENT_CLAIMS]:
        comment += f"\n- [{verdict.verdict}] {verdict.claim} — {verdict.reason}"
    if len(weak) > COMMENT_CLAIMS:
        comment += f"\n- … and {len(weak) - COMMENT_CLAIMS} more"
    return {"key": result.name, "score": result.score, "comment": comment}


def record_from_langsmith(
    inputs: Mapping[str, Any], outputs: Mapping[str, Any], reference_outputs: Mapping[str, Any]
) -> EvalRecord:
    question = _first_text(inputs, _QUESTION_KEYS) or _first_text(outputs, _QUESTION_KEYS)
    answer = _first_text(outputs, _ANSWER_KEYS)
    if answer is None and isinstance(outputs.get("messages"), Sequence):
        answer = _message_text(outputs["messages"][-1]) if outputs["messages"] else ""
    contexts = next((outputs[k] for k in _CONTEXT_KEYS if k in outputs), None)
    if contexts is None:
        contexts = next((inputs[k] for k in _CONTEXT_KEYS if k in inputs), None)
    note = None
    if contexts is None:
        _refuse_unknown_context_keys(inputs, outputs)
        note = (
            "no contexts were given: put the retrieved contexts under one of "
            f"{', '.join(_CONTEXT_KEYS)} in outputs (or inputs)"
        )
    gold = reference_outputs.get("gold_sources") or inputs.get("gold_sources") or []
    return EvalRecord(
        question=question or "",
        answer=answer or "",
        passages=passages_from(contexts or []),
        reference=_first_text(reference_outputs, _REFERENCE_KEYS),
        gold_sources=tuple(GoldSource.from_dict(g) for g in gold),
        context_note=note,
    )


def _refuse_unknown_context_keys(inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None:
    for where, data in (("outputs", outputs), ("inputs", inputs)):
        unknown = [
            k
            for k in data
            if isinstance(k, str) and k not in _NOT_CONTEXTS and _CONTEXT_LIKE.search(k.lower())
        ]
        if unknown:
            raise ConfigError(
                f"{where} has {', '.join(map(repr, unknown))}, which the evaluators do not read "
                f"as retrieved contexts; use one of {', '.join(_CONTEXT_KEYS)} (a list of "
                "strings, citation dicts or Documents)."
            )


def passages_from(contexts: Any) -> tuple[Passage, ...]:
    """Passages from a string, a list of strings, citation dicts or ``Document`` objects."""
    if isinstance(contexts, str):
        return (Passage(n=1, text=contexts),) if contexts.strip() else ()
    out: list[Passage] = []
    for i, item in enumerate(contexts or [], start=1):
        if hasattr(item, "page_content"):
            meta = dict(getattr(item, "metadata", {}) or {})
            out.append(Passage.from_any({**meta, "text": item.page_content}, i))
        else:
            out.append(Passage.from_any(item, i))
    return tuple(out)


def _first_text(data: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str):
            return value
        if value is not None and hasattr(value, "content"):
            return _message_text(value)
    return None


def _message_text(message: Any) -> str:
    if isinstance(message, tuple | list) and len(message) == 2:
        return str(message[1])
    if isinstance(message, Mapping):
        return str(message.get("content", ""))
    text = getattr(message, "text", None)
    if isinstance(text, str):
        return text
    return str(getattr(message, "content", ""))


__all__ = ["LangSmithAdapter", "passages_from", "record_from_langsmith", "to_langsmith"]
