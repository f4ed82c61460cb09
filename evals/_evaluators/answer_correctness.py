"""Answer correctness: does the answer say what the data set's reference answer says?

Ragas' answer correctness (Es et al. 2023) is a factual F1 between the answer's and the
reference's claims. Here, graded: the answer's claims are judged against the reference
(``precision``: the mean support of what the answer says, so that a wrong number — a
contradiction — or a made-up claim costs), and the reference's claims against the answer
(``recall``: the mean support of what it should say). The score is their harmonic mean;
both, and every claim's verdict, are in the details. A row without a reference answer is
undetermined, and so is an answer without claims (a refusal: nothing to compare).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._decompose import decompose
from .._judges.base import Judge
from .._records import ClaimVerdict, EvalRecord, MetricName, MetricResult
from ._adapter import LangSmithAdapter


@dataclass
class AnswerCorrectnessEvaluator(LangSmithAdapter):
    judge: Judge
    name: ClassVar[MetricName] = "answer_correctness"

    def evaluate(self, record: EvalRecord) -> MetricResult:
        reference = (record.reference or "").strip()
        if not reference:
            return MetricResult.undetermined(
                "answer_correctness", "the row has no reference answer to compare with"
            )
        if not record.answer.strip():
            return MetricResult.undetermined("answer_correctness", "the answer is empty")
        said = [c.text for c in decompose(self.judge, record.answer, record.question).claims]
        if not said:
            return MetricResult.undetermined(
                "answer_correctness", "the answer makes no claims (a refusal or no content)"
            )
        wanted = [c.text for c in decompose(self.judge, reference, record.question).claims]
        wanted = wanted or [reference]
        answer_claims = self._verdicts(said, reference, record.question)
        reference_claims = self._verdicts(wanted, record.answer, record.question)
        precision = sum(v.score for v in answer_claims) / len(answer_claims)
        recall = sum(v.score for v in reference_claims) / len(reference_claims)
        score = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        reason = (
            f"{_supported(answer_claims)} of {len(answer_claims)} answer claims in the "
            f"reference, {_supported(reference_claims)} of {len(reference_claims)} reference "
            f"claims in the answer; precision {precision:.2f}, recall {recall:.2f}"
        )
        contradicted = [v for v in answer_claims if v.verdict == "contradicted"]
        if contradicted:
            reason += f"; contradicts the reference: {contradicted[0].reason}"
        return MetricResult.scored(
            "answer_correctness",
            score,
            reason,
            precision=precision,
            recall=recall,
            answer_claims=answer_claims,
            reference_claims=reference_claims,
        )

    def _verdicts(self, claims: list[str], against: str, question: str) -> list[ClaimVerdict]:
        judged = self.judge.judge_claims(claims, against, question=question)
        return [
            ClaimVerdict(c, j.verdict, j.score, reason=j.reason, evidence=j.evidence, cause=j.cause)
            for c, j in zip(claims, judged, strict=True)
        ]


def _supported(verdicts: list[ClaimVerdict]) -> int:
    return sum(v.verdict == "supported" for v in verdicts)


__all__ = ["AnswerCorrectnessEvaluator"]
