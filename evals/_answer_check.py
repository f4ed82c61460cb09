"""The answer check: how much of a generated answer the sources it cites support.

Faithfulness, per answer and at answer time: the answer is split into claims, each judged
against the sources it cites (all of them when it cites none) by any judge of
:mod:`kbgraph.evals._judges` — the offline judge by default, which needs no LLM and runs on
one core. The ready agents run it on every answer the chat model writes
(``RagSettings.answer_check``), ``kbgraph ask`` prints the unsupported sentences, and an
agent of your own that answers from ``rag_search`` calls :func:`check_answer` itself::

    from kbgraph.evals import check_answer

    check = check_answer(answer, artifact["citations"], question=question)
    check["score"], [c["text"] for c in check["claims"] if not c["supported"]]

A judge is loaded once per process and spec (the offline judge's local model, an LLM
judge's client) and shared by every check.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from ._evaluators import FaithfulnessEvaluator, passages_from
from ._judges import Judge, resolve_judge
from ._records import ClaimVerdict, EvalRecord, Passage
from ._text import content_words

ClaimVerdictName = Literal["supported", "not_supported", "contradicted"]


class ClaimCheck(TypedDict):
    """One claim of an answer: its text (citation markers removed), whether the sources
    support it, the judge's verdict and support score, the source numbers it cites, the
    chunk id of the source that supports it (``None`` when none does), the judge's reason,
    the source sentence the claim was aligned with (``""`` when none was) and the reason's
    kind (``cause``: ``number_mismatch``, ``negation``, ``no_aligned_sentence`` …)."""

    text: str
    supported: bool
    verdict: ClaimVerdictName
    score: float
    citations: list[int]
    evidence: str | None
    reason: str
    source: str
    cause: str


class AnswerCheck(TypedDict):
    """An answer checked against its sources. ``score`` is the mean support of its claims
    in 0..1 (``None`` when the answer makes no claim: a refusal, small talk); ``judge``
    names the judge; ``reason`` says what the score means or why there is none; ``error``
    is set when the judge failed (then no claim is judged); ``ms`` is the check's time.
    ``score`` carries the verdicts: a claim with a fact no source states counts 0 and caps
    the answer under 0.5 (``evaluators.faithfulness.verdict_score``); ``graded`` is the
    judge's mean claim support without that, ``supported_share`` supported ÷ claims."""

    score: float | None
    graded: NotRequired[float | None]
    supported_share: NotRequired[float | None]
    claims: list[ClaimCheck]
    judge: str
    reason: str
    error: str | None
    ms: float


_JUDGES: dict[str, Judge] = {}
_LOCK = threading.Lock()


def judge_for(spec: str | Judge) -> Judge:
    """The judge a spec names (``offline``, ``overlap`` or a chat model spec), loaded once
    per process; a judge object is used as is."""
    if not isinstance(spec, str):
        return spec
    key = spec.strip()
    with _LOCK:
        judge = _JUDGES.get(key)
        if judge is None:
            judge = _JUDGES[key] = resolve_judge(key)
    return judge


def check_answer(
    answer: str,
    citations: Sequence[Mapping[str, Any]],
    *,
    question: str = "",
    judge: str | Judge = "offline",
) -> AnswerCheck:
    """Judge each claim of ``answer`` against the citations it cites (``rag_citations``,
    or a ``rag_search`` artifact's ``citations``: ``{n, chunk_id, source, text, ...}``). A
    judge that fails gives a check with ``error`` set and no score, never an exception."""
    start = time.perf_counter()
    name = spec_name(judge)
    try:
        chosen = judge_for(judge)
        name = chosen.name
        passages = passages_from(list(citations))
        record = EvalRecord(question=question, answer=answer, passages=passages)
        result = FaithfulnessEvaluator(chosen).evaluate(record)
    except Exception as exc:  # a judge that fails must not fail the answer
        return _check(None, [], name, "the answer could not be checked", start, error=exc)
    verdicts: list[ClaimVerdict] = list(result.details.get("claims") or [])
    claims = [_claim(v, passages) for v in verdicts]
    check = _check(result.score, claims, name, result.reason, start)
    check["graded"] = _rounded(result.details.get("graded"))
    check["supported_share"] = _rounded(result.details.get("supported_share"))
    return check


def _rounded(value: Any) -> float | None:
    return None if value is None else round(float(value), 4)


def spec_name(judge: str | Judge) -> str:
    return judge.strip() if isinstance(judge, str) else judge.name


def _check(
    score: float | None,
    claims: list[ClaimCheck],
    judge: str,
    reason: str,
    start: float,
    *,
    error: BaseException | None = None,
) -> AnswerCheck:
    return {
        "score": None if score is None else round(float(score), 4),
        "claims": claims,
        "judge": judge,
        "reason": reason,
        "error": None if error is None else f"{type(error).__name__}: {error}"[:300],
        "ms": round((time.perf_counter() - start) * 1000, 1),
    }


def _claim(verdict: ClaimVerdict, passages: Sequence[Passage]) -> ClaimCheck:
    supported = verdict.verdict == "supported"
    return {
        "text": verdict.claim,
        "supported": supported,
        "verdict": verdict.verdict,
        "score": round(verdict.score, 4),
        "citations": list(verdict.citations),
        "evidence": evidence_of(verdict, passages) if supported else None,
        "reason": verdict.reason,
        "source": verdict.evidence,
        "cause": verdict.cause,
    }


def evidence_of(verdict: ClaimVerdict, passages: Sequence[Passage]) -> str | None:
    """The chunk id of the source a supported claim rests on: the one it was judged against,
    or among several, the one sharing the most content words with it."""
    judged = [p for p in passages if p.n in verdict.judged_against]
    if not judged:
        return None
    words = set(content_words(verdict.claim))
    best = max(judged, key=lambda p: len(words & set(content_words(p.text))))
    return best.id


def unsupported(check: AnswerCheck | None) -> list[ClaimCheck]:
    """The claims of ``check`` its sources do not support."""
    return [] if check is None else [c for c in check["claims"] if not c["supported"]]


__all__ = [
    "AnswerCheck",
    "ClaimCheck",
    "check_answer",
    "evidence_of",
    "judge_for",
    "spec_name",
    "unsupported",
]
