"""Faithfulness: are the answer's claims supported by the retrieved context?

The answer is split into self-contained claims (``kbgraph.evals._decompose``: the LLM judge's
decomposition, else the regex splitter of ``kbgraph.evals._claims``); each is judged
supported / not supported / contradicted, with a support score in [0, 1].

The score is the mean support score of the claims. With a judge that scores verdicts 1 / 0
(the LLM judge) it is supported ÷ claims, Ragas' faithfulness (Es et al. 2023,
arXiv:2309.15217); with the offline judge it is graded, so that it ranks answers: a
one-claim answer is not just 0 or 1, and a paraphrase just under the supported cut scores
above a made-up claim. A contradicted claim is penalised by its judge (the offline judge
scales its support by ``CONTRADICTION_FACTOR``; the LLM judge gives it 0). The verdicts keep
their meaning: ``counts`` and ``supported_share`` (supported ÷ claims) are in the details.

Citation check: a claim that cites ``[N]`` is judged against source N only (the sources it
cites, when several), so that a true fact cited to the wrong source is not supported. Such
a claim is judged once more against the whole context, only to say in its reason whether
the fact is there under another number (a wrong citation) or nowhere (unsupported).

Checkable facts (``judges._facts``): a claim the judge supports is still not supported when
one of its numbers, dates, quantities, names, codes or negations is not stated by its
sources about the same subject — the verdict becomes ``not_supported``, the cause
``unstated_fact`` and the reason names the token ("8443 is in no cited source"). The score
carries that verdict (issue 41: the score people gate on must not call such an answer
faithful): such a claim scores 0, and an answer with one scores its mean scaled into
``[0, UNSTATED_CAP]``, below the faithful threshold 0.5 and below any gate
(:func:`verdict_score`). The judge's graded support is kept: each claim's in its reason,
the answer's as ``graded`` in the details, beside ``supported_share``. A claim the judge
already rejects gets the fact's reason too; one it contradicts keeps that verdict, and an
unstated number, name or code in it ("$6.89" where the source says $6.86) makes its cause
``unstated_fact`` as well, so that it caps the answer and makes repair act
(``agents._problems.ACTING_CAUSES``). The reason keeps the judge's verdict and score:
"8443 is in no cited source (judge: supported, 0.51)". ``check_facts=False`` turns the
layer off (the score is then the graded support).

A claim that repeats an earlier one (``claims.repeats``) keeps ``REPEAT_FACTOR`` of its
score, and its reason says so.

An answer without claims — a refusal, "I don't know", an empty answer — is undetermined,
with the reason; never a NaN and never a silent 0 or 1.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from .._claims import repeats
from .._decompose import decompose
from .._judges import FactKind, Judge, unstated_facts
from .._records import Claim, ClaimVerdict, EvalRecord, Judgement, MetricName, MetricResult, Passage
from ._adapter import LangSmithAdapter
from ._context import join_passages


@dataclass
class FaithfulnessEvaluator(LangSmithAdapter):
    judge: Judge
    check_citations: bool = True
    check_facts: bool = True
    name: ClassVar[MetricName] = "faithfulness"

    def evaluate(self, record: EvalRecord) -> MetricResult:
        if not record.answer.strip():
            return MetricResult.undetermined("faithfulness", "the answer is empty")
        if record.context_note and not record.passages:
            return MetricResult.undetermined("faithfulness", record.context_note)
        split = decompose(self.judge, record.answer, record.question)
        claims = split.claims
        if not claims:
            return MetricResult.undetermined(
                "faithfulness",
                "the answer makes no claims (a refusal or no content)",
                claim_split=split.describe(),
            )
        verdicts = _discount_repeats(
            claims, self.judge_claims(claims, record.passages, record.question)
        )
        counts = Counter(v.verdict for v in verdicts)
        graded = sum(v.score for v in verdicts) / len(verdicts)
        unstated = [v.cause == "unstated_fact" for v in verdicts]
        score = verdict_score([v.score for v in verdicts], unstated)
        reason = (
            f"{counts['supported']} of {len(verdicts)} claims supported"
            f" ({counts['contradicted']} contradicted); mean claim support {graded:.2f}"
        )
        if any(unstated):
            reason += (
                f"; {sum(unstated)} with a fact no source states (scored 0, the answer"
                f" scaled to at most {UNSTATED_CAP:g}): {score:.2f}"
            )
        return MetricResult.scored(
            "faithfulness",
            score,
            reason,
            claims=list(verdicts),
            counts={v: counts[v] for v in ("supported", "not_supported", "contradicted")},
            supported_share=counts["supported"] / len(verdicts),
            graded=graded,
            unstated_facts=sum(unstated),
            wrong_citations=sum(v.cause == "wrong_citation" for v in verdicts),
            claim_split=split.describe(),
        )

    def judge_claims(
        self, claims: Sequence[Claim], passages: Sequence[Passage], question: str
    ) -> list[ClaimVerdict]:
        """Verdicts in claim order; claims sharing the same sources are judged in one call."""
        by_n = {p.n: p for p in passages}
        groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
        results: dict[int, ClaimVerdict] = {}
        for i, claim in enumerate(claims):
            target = self._target(claim, by_n)
            if target is None:
                results[i] = _unknown_citation(claim, sorted(by_n))
            else:
                groups[target].append(i)
        for target, members in groups.items():
            context = join_passages([by_n[n] for n in target])
            texts = [claims[i].text for i in members]
            judged = (
                self.judge.judge_claims(texts, context, question=question)
                if target
                else [
                    Judgement(
                        "not_supported", 0.0, "no context was retrieved", cause="empty_context"
                    )
                    for _ in texts
                ]
            )
            for i, judgement in zip(members, judged, strict=True):
                if self.check_facts:
                    judgement = _stated(claims[i], judgement, context)
                results[i] = _verdict(claims[i], target, judgement)
        self._explain_wrong_citations(claims, results, passages, question)
        return [results[i] for i in range(len(claims))]

    def _target(self, claim: Claim, by_n: dict[int, Passage]) -> tuple[int, ...] | None:
        """Source numbers to judge against; ``None`` when every cited number is unknown."""
        if not (self.check_citations and claim.citations):
            return tuple(sorted(by_n))
        known = tuple(n for n in claim.citations if n in by_n)
        return known or None

    def _explain_wrong_citations(
        self,
        claims: Sequence[Claim],
        results: dict[int, ClaimVerdict],
        passages: Sequence[Passage],
        question: str,
    ) -> None:
        everything = tuple(p.n for p in passages)
        suspects = [
            i
            for i, v in results.items()
            if v.verdict != "supported" and v.citations and set(v.judged_against) != set(everything)
        ]
        if not suspects or not passages:
            return
        context = join_passages(passages)
        second = self.judge.judge_claims(
            [claims[i].text for i in suspects], context, question=question
        )
        for i, judgement in zip(suspects, second, strict=True):
            if self.check_facts:
                judgement = _stated(claims[i], judgement, context, cited=False)
            if judgement.verdict == "supported":
                old = results[i]
                cited = ", ".join(f"[{n}]" for n in old.citations)
                reason = (
                    f"wrong citation: not supported by its cited source {cited}, "
                    f"but supported elsewhere in the context; {old.reason}"
                )
                results[i] = replace(old, reason=reason, cause="wrong_citation")


_EXACT: frozenset[FactKind] = frozenset({"number", "name", "code", "identifier"})
"""The facts a claim the judge contradicts is still checked for."""


def _stated(claim: Claim, judgement: Judgement, context: str, *, cited: bool = True) -> Judgement:
    """The judgement, not supported when a checkable fact of the claim is not stated by
    ``context`` (see the module docstring). A claim the judge contradicts is checked for
    its numbers, names and codes (``_EXACT``): when one is unstated ("$6.89" where the
    source says $6.86) the verdict stays ``contradicted``, the fact's reason goes before
    the judge's and the cause becomes ``unstated_fact``, so that it caps the answer
    (:func:`verdict_score`). Unchecked, that claim at 0.10 beside one at 0.99 scored 0.55,
    faithful at 0.5. Its negations and antonyms are not checked: the judge has read
    its polarity, and on SummEdits' seed-29 sample (development data) checking them too
    flagged 18 more consistent summaries for 17 more edited ones, at the same AUROC."""
    if not claim.text.strip():
        return judgement
    facts = unstated_facts(claim.text, context, cited=cited and bool(claim.citations))
    contradicted = judgement.verdict == "contradicted"
    if contradicted:
        facts = [f for f in facts if f.kind in _EXACT]
    if not facts:
        return judgement
    fact = facts[0]
    stated = "; ".join(f.reason for f in facts[:3])
    if contradicted:
        reason = f"{stated}; judge: {judgement.reason}"
        return replace(judgement, reason=reason, cause="unstated_fact")
    said = judgement.verdict.replace("_", " ")
    return replace(
        judgement,
        verdict="not_supported",
        reason=f"{stated} (judge: {said}, {judgement.score:.2f})",
        evidence=fact.source or judgement.evidence,
        cause="unstated_fact",
    )


def _verdict(claim: Claim, target: tuple[int, ...], judgement: Judgement) -> ClaimVerdict:
    return ClaimVerdict(
        claim=claim.text,
        verdict=judgement.verdict,
        score=judgement.score,
        citations=claim.citations,
        judged_against=target,
        reason=judgement.reason,
        evidence=judgement.evidence,
        cause=judgement.cause,
    )


UNSTATED_CAP = 0.45
"""The most an answer with a claim whose fact no source states can score: under the
faithful threshold (0.5, ``kbgraph eval meta``'s balanced accuracy) whatever its other
claims, so that no gate passes it. Chosen on SummEdits (development data; see
benchmarks/bench_verdict.py)."""


def verdict_score(scores: Sequence[float], unstated: Sequence[bool]) -> float:
    """The answer's score from its claims' graded support and whether each has an unstated
    fact: the mean support with such claims at 0 (Ragas' faithfulness counts an unsupported
    claim 0; Es et al. 2023, arXiv:2309.15217); when any has one, that mean scaled into
    ``[0, UNSTATED_CAP]`` (RAGTruth's span labels call an answer unfaithful when any span
    is; Niu et al. 2024). Scaled, not clipped: a clip scored every flagged answer of
    well-supported others alike (0.45), while the share of its claims left standing still
    ranks them — on development data (SummEdits rows outside the seed-13 sample, 400 + 400)
    the score's AUROC went 0.573 → 0.591, HaluEval qa_multi_turn and BEGIN's dev split
    unchanged (0.930, 0.942), and balanced accuracy cannot move (both stay under 0.5)."""
    kept = [0.0 if bad else s for s, bad in zip(scores, unstated, strict=True)]
    mean = sum(kept) / len(kept)
    return UNSTATED_CAP * mean if any(unstated) else mean


REPEAT_FACTOR = 0.75
"""A claim that repeats an earlier one keeps this share of its support score: a summary that
says one thing twice has told less than its length claims (degenerate repetition is
commoner in unfaithful summaries: 8.9% against 2.9% of FRANK's CNN/DM summaries)."""


def _discount_repeats(claims: Sequence[Claim], verdicts: list[ClaimVerdict]) -> list[ClaimVerdict]:
    for i, first in repeats(claims).items():
        old = verdicts[i]
        verdicts[i] = replace(
            old,
            score=old.score * REPEAT_FACTOR,
            reason=f"repeats claim {first + 1}, counted at {REPEAT_FACTOR:g}; {old.reason}",
            # An unstated fact stays the cause: the answer's score reads it.
            cause=old.cause if old.cause == "unstated_fact" else "repeated",
        )
    return verdicts


def _unknown_citation(claim: Claim, known: list[int]) -> ClaimVerdict:
    cited = ", ".join(f"[{n}]" for n in claim.citations)
    have = f"sources 1-{max(known)}" if known else "no sources"
    return ClaimVerdict(
        claim=claim.text,
        verdict="not_supported",
        score=0.0,
        citations=claim.citations,
        judged_against=(),
        reason=f"cites {cited}, but the context has {have}",
        cause="unknown_citation",
    )


__all__ = ["UNSTATED_CAP", "FaithfulnessEvaluator", "verdict_score"]
