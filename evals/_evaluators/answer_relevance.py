"""Answer relevance: does the answer address the question (whatever its truth)?

The judge scores the answer, citation markers removed. A noncommittal answer ("I don't
know") does not address the question and scores 0, as in Ragas (Es et al. 2023); an empty
answer is undetermined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._claims import split_claims, strip_markers
from .._judges.base import Judge
from .._records import EvalRecord, MetricName, MetricResult
from ._adapter import LangSmithAdapter


@dataclass
class AnswerRelevanceEvaluator(LangSmithAdapter):
    judge: Judge
    name: ClassVar[MetricName] = "answer_relevance"

    def evaluate(self, record: EvalRecord) -> MetricResult:
        if not record.answer.strip():
            return MetricResult.undetermined("answer_relevance", "the answer is empty")
        if not record.question.strip():
            return MetricResult.undetermined("answer_relevance", "the row has no question")
        if not split_claims(record.answer):
            return MetricResult.scored(
                "answer_relevance", 0.0, "noncommittal: the answer declines to answer"
            )
        judged = self.judge.judge_answer(record.question, strip_markers(record.answer))
        return MetricResult.scored("answer_relevance", judged.score, judged.reason)


__all__ = ["AnswerRelevanceEvaluator"]
