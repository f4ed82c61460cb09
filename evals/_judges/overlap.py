"""The plain content-word-overlap baseline every judge is measured against.

It is deliberately naive: the share of the answer's distinct content words (stemmed, stop
words removed) that also occur anywhere in the context. No claims, no embeddings, no
negation. The meta-evaluation reports it next to each judge, computed in the same run.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbgraph._base.faces import shown_as

from .._records import Judgement, Relevance, TokenUsage, Verdict
from .._text import content_words

SUPPORTED_AT = 0.5


def content_overlap(answer: str, context: str) -> float:
    """Share of the distinct content words of ``answer`` found in ``context``; 0 when the
    answer has none."""
    wanted = set(content_words(answer))
    if not wanted:
        return 0.0
    return len(wanted & set(content_words(context))) / len(wanted)


@shown_as("kbgraph.evals")
class OverlapJudge:
    """The baseline as a judge, so that it can run through the same evaluators."""

    def __init__(self) -> None:
        self._usage = TokenUsage()

    @property
    def name(self) -> str:
        return "overlap-baseline"

    @property
    def usage(self) -> TokenUsage:
        return self._usage

    def judge_claims(
        self, claims: Sequence[str], context: str, *, question: str | None = None
    ) -> list[Judgement]:
        out = []
        for claim in claims:
            score = content_overlap(claim, context)
            verdict: Verdict = "supported" if score >= SUPPORTED_AT else "not_supported"
            out.append(Judgement(verdict, score, f"overlap {score:.2f}"))
        return out

    def judge_passages(
        self, question: str, passages: Sequence[str], *, reference: str | None = None
    ) -> list[Relevance]:
        target = reference or question
        out = []
        for passage in passages:
            score = content_overlap(target, passage)
            out.append(Relevance(score >= SUPPORTED_AT, score, f"overlap {score:.2f}"))
        return out

    def judge_answer(self, question: str, answer: str) -> Relevance:
        score = content_overlap(question, answer)
        return Relevance(score >= SUPPORTED_AT, score, f"overlap {score:.2f}")


__all__ = ["OverlapJudge", "content_overlap"]
