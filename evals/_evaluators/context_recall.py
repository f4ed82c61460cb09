"""Context recall: did retrieval find what the answer needs?

Two figures. The claim recall is the share of the reference answer's claims that the
retrieved context supports (Ragas' context recall, Es et al. 2023). The source recall is
deterministic: the share of the row's gold sources found among the retrieved citations
(``kbgraph.evals._evaluators.sources``). The metric's score is the claim recall when the row has a
reference answer, else the source recall; both are in ``details``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._decompose import decompose
from .._judges.base import Judge
from .._records import ClaimVerdict, EvalRecord, MetricName, MetricResult
from ._adapter import LangSmithAdapter
from ._context import join_passages
from .sources import gold_source_recall, is_recalled


@dataclass
class ContextRecallEvaluator(LangSmithAdapter):
    judge: Judge
    name: ClassVar[MetricName] = "context_recall"

    def evaluate(self, record: EvalRecord) -> MetricResult:
        reference = (record.reference or "").strip()
        if not reference and not record.gold_sources:
            return MetricResult.undetermined(
                "context_recall", "the row has no reference answer and no gold sources"
            )
        if record.context_note and not record.passages:
            return MetricResult.undetermined("context_recall", record.context_note)
        details: dict[str, object] = {}
        parts: list[str] = []
        source_recall: float | None = None
        if record.gold_sources:
            source_recall = gold_source_recall(record.gold_sources, record.passages)
            details["source_recall"] = source_recall
            details["gold_sources"] = [
                {**g.to_dict(), "recalled": is_recalled(g, record.passages)}
                for g in record.gold_sources
            ]
            found = round(source_recall * len(record.gold_sources))
            parts.append(f"{found} of {len(record.gold_sources)} gold sources retrieved")
        if not reference:
            assert source_recall is not None
            return MetricResult.scored("context_recall", source_recall, "; ".join(parts), **details)
        verdicts = self._reference_verdicts(record, reference)
        supported = sum(v.verdict == "supported" for v in verdicts)
        claim_recall = supported / len(verdicts)
        details["claim_recall"] = claim_recall
        details["reference_claims"] = verdicts
        parts.insert(0, f"{supported} of {len(verdicts)} reference claims in the context")
        return MetricResult.scored("context_recall", claim_recall, "; ".join(parts), **details)

    def _reference_verdicts(self, record: EvalRecord, reference: str) -> list[ClaimVerdict]:
        split = decompose(self.judge, reference, record.question)
        claims = [c.text for c in split.claims] or [reference]
        if not record.passages:
            return [
                ClaimVerdict(c, "not_supported", 0.0, reason="no context was retrieved")
                for c in claims
            ]
        context = join_passages(record.passages)
        judged = self.judge.judge_claims(claims, context, question=record.question)
        every = tuple(p.n for p in record.passages)
        return [
            ClaimVerdict(
                c,
                j.verdict,
                j.score,
                judged_against=every,
                reason=j.reason,
                evidence=j.evidence,
                cause=j.cause,
            )
            for c, j in zip(claims, judged, strict=True)
        ]


__all__ = ["ContextRecallEvaluator"]
