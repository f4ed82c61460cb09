"""Context precision: are the relevant passages ranked first?

Each retrieved passage is judged relevant or not to the question (and to the reference
answer when the row has one); the score is the average precision of that ranked list
(``kbgraph.evals._stats.average_precision``: Ragas' context precision), so one relevant passage at
rank 1 scores 1.0 and the same passage at rank 5 scores 0.2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._judges.base import Judge
from .._records import EvalRecord, MetricName, MetricResult
from .._stats import average_precision
from ._adapter import LangSmithAdapter


@dataclass
class ContextPrecisionEvaluator(LangSmithAdapter):
    judge: Judge
    name: ClassVar[MetricName] = "context_precision"

    def evaluate(self, record: EvalRecord) -> MetricResult:
        if not record.passages:
            reason = record.context_note or "no context was retrieved"
            return MetricResult.undetermined("context_precision", reason)
        judged = self.judge.judge_passages(
            record.question, [p.text for p in record.passages], reference=record.reference
        )
        relevant = [j.relevant for j in judged]
        score = average_precision(relevant)
        ranks = [i for i, r in enumerate(relevant, start=1) if r]
        reason = (
            f"relevant at ranks {', '.join(map(str, ranks))} of {len(relevant)}"
            if ranks
            else f"none of the {len(relevant)} passages is relevant"
        )
        return MetricResult.scored(
            "context_precision",
            score,
            reason,
            passages=[
                {
                    "n": p.n,
                    "source": p.source,
                    "relevant": j.relevant,
                    "score": j.score,
                    "reason": j.reason,
                }
                for p, j in zip(record.passages, judged, strict=True)
            ],
        )


__all__ = ["ContextPrecisionEvaluator"]
