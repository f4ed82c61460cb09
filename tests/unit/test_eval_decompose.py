"""Claim decomposition: the LLM judge's Ragas-style step (structured output, JSON fallback,
regex fallback on failure) and how faithfulness and context recall use its claims."""

from __future__ import annotations

import pytest

from kbgraph.evals._decompose import decompose
from kbgraph.evals._evaluators import ContextRecallEvaluator, FaithfulnessEvaluator
from kbgraph.evals._judges import LLMJudge, OfflineJudge
from kbgraph.evals._records import Claim, EvalRecord, Passage
from kbgraph.testing import FakeEmbeddings, ScriptedChatModel, ScriptedJudge

RETRY = Passage(1, "retry.max_attempts defaults to 5.", "docs/configuration.md", 52, 60)
WEBHOOK = Passage(2, "Webhook deliveries are retried 7 times.", "docs/api/webhooks.md", 41, 47)


def _claims(*items: tuple[str, list[int]]) -> dict[str, object]:
    return {"claims": [{"claim": text, "citations": cited} for text, cited in items]}


def _verdicts(*verdicts: str) -> dict[str, object]:
    return {
        "verdicts": [
            {"claim": i, "verdict": v, "reason": "r"} for i, v in enumerate(verdicts, start=1)
        ]
    }


def test_the_llm_resolves_pronouns_and_keeps_citations_per_claim() -> None:
    model = ScriptedChatModel(
        responses=[
            _claims(
                ("Harbor retries HTTP 429 responses.", [1]),
                ("Harbor webhooks are retried 7 times [2].", []),
                ("Harbor signs requests.", [9]),
            )
        ]
    )
    claims = LLMJudge(model).decompose_claims(
        "It retries 429 [1], and webhooks are retried 7 times [2]. It signs requests [1].",
        "How does Harbor retry?",
    )
    assert claims == [
        Claim("Harbor retries HTTP 429 responses.", (1,)),
        Claim("Harbor webhooks are retried 7 times.", (2,)),
        # [9] is not a marker of the answer: the model may not invent sources.
        Claim("Harbor signs requests.", ()),
    ]
    (call,) = model.calls
    assert call.structured == "ClaimsOut"
    assert "It retries 429 [1]" in call.messages[-1].text


def test_the_decomposition_falls_back_to_json_then_to_the_regex_splitter() -> None:
    answer = "Harbor makes 5 attempts [1]. Webhooks are retried 7 times [2]."
    via_json = ScriptedChatModel(
        responses=["no idea", '```json\n{"claims": [{"claim": "Harbor makes 5 attempts."}]}\n```']
    )
    split = decompose(LLMJudge(via_json), answer)
    assert (split.method, split.claims) == ("llm", [Claim("Harbor makes 5 attempts.")])
    broken = LLMJudge(ScriptedChatModel(default="not json"), max_retries=0)
    split = decompose(broken, answer)
    assert split.method == "regex" and "decomposition failed" in split.describe()
    assert split.claims == [
        Claim("Harbor makes 5 attempts.", (1,)),
        Claim("Webhooks are retried 7 times.", (2,)),
    ]


@pytest.mark.parametrize("judge", [ScriptedJudge(), OfflineJudge(FakeEmbeddings())])
def test_judges_without_a_decomposition_use_the_regex_splitter(judge: object) -> None:
    split = decompose(judge, "I am not sure, but Harbor makes 5 attempts.")  # type: ignore[arg-type]
    assert (split.method, split.claims) == ("regex", [Claim("Harbor makes 5 attempts.")])


def test_faithfulness_judges_each_decomposed_claim_against_its_own_source() -> None:
    model = ScriptedChatModel(
        responses=[
            _claims(("Harbor makes 5 attempts by default.", [1]), ("Webhooks retry 7 times.", [2])),
            _verdicts("supported"),
            _verdicts("supported"),
        ]
    )
    result = FaithfulnessEvaluator(LLMJudge(model)).evaluate(
        EvalRecord(
            question="How does Harbor retry?",
            answer="It makes 5 attempts [1], and webhooks retry 7 times [2].",
            passages=(RETRY, WEBHOOK),
        )
    )
    assert result.score == 1.0 and result.details["claim_split"] == "llm"
    assert [v.judged_against for v in result.details["claims"]] == [(1,), (2,)]
    judged = [c.messages[-1].text for c in model.calls[1:]]
    assert RETRY.text in judged[0] and WEBHOOK.text not in judged[0]
    assert WEBHOOK.text in judged[1] and RETRY.text not in judged[1]


def test_a_hedged_made_up_fact_is_judged_not_hidden() -> None:
    model = ScriptedChatModel(
        responses=[_claims(("Harbor makes 9 attempts.", [])), _verdicts("contradicted")]
    )
    result = FaithfulnessEvaluator(LLMJudge(model)).evaluate(
        EvalRecord("q", "I am not sure, but Harbor makes 9 attempts.", (RETRY,))
    )
    assert result.status == "scored" and result.score == 0.0


def test_context_recall_decomposes_the_reference_with_the_llm() -> None:
    model = ScriptedChatModel(
        responses=[
            _claims(("Harbor makes 5 attempts.", []), ("Harbor webhooks retry 7 times.", [])),
            _verdicts("supported", "not_supported"),
        ]
    )
    result = ContextRecallEvaluator(LLMJudge(model)).evaluate(
        EvalRecord("q", "a", (RETRY,), reference="It makes 5 attempts; its webhooks retry 7.")
    )
    assert result.score == 0.5
    assert [v.claim for v in result.details["reference_claims"]] == [
        "Harbor makes 5 attempts.",
        "Harbor webhooks retry 7 times.",
    ]
