"""A judge that answers from a script, for tests: verdicts are looked up by claim text
(or by ``(claim, context)``), so a test states exactly what the judge decides and checks
what the evaluator makes of it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kbgraph.evals._records import Judgement, Relevance, TokenUsage, Verdict

_SCORES: dict[Verdict, float] = {"supported": 1.0, "not_supported": 0.0, "contradicted": 0.0}

ClaimRule = Callable[[str, str], Verdict | None]
"""``(claim, context) -> verdict`` or ``None`` to fall through to the next rule."""


@dataclass
class ScriptedJudge:
    """``verdicts`` maps a claim to its verdict wherever it is judged; ``rules`` decide from
    claim and context (first non-``None`` wins) and run before ``verdicts``; anything else
    gets ``default``. ``relevant`` lists passage texts (or substrings) judged relevant;
    ``answer_scores`` maps an answer to its relevance score. Every call is recorded in
    ``calls`` so that tests can check what was judged against what."""

    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    rules: Sequence[ClaimRule] = ()
    default: Verdict = "not_supported"
    relevant: Sequence[str] = ()
    answer_scores: Mapping[str, float] = field(default_factory=dict)
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    _usage: TokenUsage = field(default_factory=TokenUsage)

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def usage(self) -> TokenUsage:
        return self._usage

    def judge_claims(
        self, claims: Sequence[str], context: str, *, question: str | None = None
    ) -> list[Judgement]:
        out: list[Judgement] = []
        for claim in claims:
            self.calls.append(("claim", claim, context))
            verdict = self._verdict(claim, context)
            out.append(Judgement(verdict, _SCORES[verdict], f"scripted: {verdict}"))
        return out

    def judge_passages(
        self, question: str, passages: Sequence[str], *, reference: str | None = None
    ) -> list[Relevance]:
        out: list[Relevance] = []
        for passage in passages:
            self.calls.append(("passage", question, passage))
            hit = any(marker in passage for marker in self.relevant)
            out.append(Relevance(hit, 1.0 if hit else 0.0, "scripted"))
        return out

    def judge_answer(self, question: str, answer: str) -> Relevance:
        self.calls.append(("answer", question, answer))
        score = self.answer_scores.get(answer, 0.0)
        return Relevance(score >= 0.5, score, "scripted")

    def _verdict(self, claim: str, context: str) -> Verdict:
        for rule in self.rules:
            decided = rule(claim, context)
            if decided is not None:
                return decided
        return self.verdicts.get(claim, self.default)


__all__ = ["ClaimRule", "ScriptedJudge"]
