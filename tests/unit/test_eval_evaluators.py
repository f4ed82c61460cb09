"""The four evaluators with a scripted judge, and their LangSmith-style signature."""

from __future__ import annotations

import inspect

import pytest
from langchain_core.documents import Document

from kbgraph.evals._evaluators import (
    AnswerRelevanceEvaluator,
    ContextPrecisionEvaluator,
    ContextRecallEvaluator,
    FaithfulnessEvaluator,
    gold_source_recall,
    lines_overlap,
    same_path,
)
from kbgraph.evals._judges import OfflineJudge
from kbgraph.evals._records import (
    ClaimVerdict,
    EvalRecord,
    GoldSource,
    Judgement,
    MetricResult,
    Passage,
    Verdict,
)
from kbgraph.evals._runner import score_record
from kbgraph.testing import FakeEmbeddings, ScriptedJudge

RETRY = Passage(1, "retry.max_attempts defaults to 5.", "docs/configuration.md", 52, 60)
WEBHOOK = Passage(2, "Webhook deliveries are retried 7 times.", "docs/api/webhooks.md", 41, 47)
RATE = Passage(3, "Chaque clé peut faire 600 requêtes par minute.", "docs/i18n.md", 20, 22)

FACTS = {
    "Harbor makes 5 attempts by default.": "defaults to 5",
    "Webhooks are retried 7 times.": "retried 7 times",
    "Une clé fait 600 requêtes par minute.": "600 requêtes",
}


def fact_rule(claim: str, context: str) -> Verdict | None:
    """Supported exactly when the context holds the claim's fact; the scripted judge thus
    behaves like a correct judge, and the evaluator's routing is what is tested."""
    needle = FACTS.get(claim)
    if needle is None:
        return None
    return "supported" if needle in context else "not_supported"


def record(
    answer: str, passages: tuple[Passage, ...] = (RETRY, WEBHOOK, RATE), **kw: object
) -> EvalRecord:
    return EvalRecord(question="How does Harbor retry?", answer=answer, passages=passages, **kw)  # type: ignore[arg-type]


def claims_of(result_details: object) -> list[ClaimVerdict]:
    assert isinstance(result_details, dict)
    return list(result_details["claims"])


@pytest.mark.parametrize(
    ("answer", "score", "verdicts"),
    [
        (
            "Harbor makes 5 attempts by default [1]. Webhooks are retried 7 times [2].",
            1.0,
            ["supported", "supported"],
        ),
        (
            "Harbor makes 5 attempts by default [1]. Harbor also sends faxes [1].",
            0.5,
            ["supported", "not_supported"],
        ),
        ("Une clé fait 600 requêtes par minute [3].", 1.0, ["supported"]),
    ],
)
def test_faithfulness_is_supported_over_claims(
    answer: str, score: float, verdicts: list[str]
) -> None:
    result = FaithfulnessEvaluator(ScriptedJudge(rules=[fact_rule])).evaluate(record(answer))
    assert result.status == "scored"
    assert result.score == pytest.approx(score)
    assert [v.verdict for v in claims_of(dict(result.details))] == verdicts


def test_contradicted_claims_count_as_unsupported_and_are_reported() -> None:
    judge = ScriptedJudge(verdicts={"Harbor makes 3 attempts by default.": "contradicted"})
    result = FaithfulnessEvaluator(judge).evaluate(
        record("Harbor makes 3 attempts by default [1]. Webhooks are retried 7 times [2].")
    )
    assert result.score == 0.0
    assert dict(result.details)["counts"] == {"supported": 0, "not_supported": 1, "contradicted": 1}
    assert "1 contradicted" in result.reason


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I don't know from the available documents.", "no claims"),
        ("   ", "empty"),
        ("The sources do not mention an SLA.", "no claims"),
    ],
)
def test_an_answer_without_claims_is_undetermined_not_nan(answer: str, reason: str) -> None:
    judge = ScriptedJudge(default="supported")
    result = FaithfulnessEvaluator(judge).evaluate(record(answer))
    assert result.status == "undetermined"
    assert result.score is None
    assert reason in result.reason
    assert judge.calls == []


def test_a_true_fact_cited_to_the_wrong_source_is_caught() -> None:
    judge = ScriptedJudge(rules=[fact_rule])
    result = FaithfulnessEvaluator(judge).evaluate(
        record("Harbor makes 5 attempts by default [2].")
    )
    (verdict,) = claims_of(dict(result.details))
    assert result.score == 0.0
    assert verdict.verdict == "not_supported"
    assert verdict.citations == (2,)
    assert verdict.judged_against == (2,)
    assert "wrong citation" in verdict.reason
    first_call_context = judge.calls[0][2]
    assert WEBHOOK.text in first_call_context and RETRY.text not in first_call_context
    assert dict(result.details)["wrong_citations"] == 1


def test_without_the_citation_check_the_whole_context_is_used() -> None:
    evaluator = FaithfulnessEvaluator(ScriptedJudge(rules=[fact_rule]), check_citations=False)
    assert evaluator.evaluate(record("Harbor makes 5 attempts by default [2].")).score == 1.0


def test_a_citation_of_a_missing_source_is_not_supported() -> None:
    judge = ScriptedJudge(default="supported")
    result = FaithfulnessEvaluator(judge).evaluate(
        record("Harbor makes 5 attempts by default [9].")
    )
    (verdict,) = claims_of(dict(result.details))
    assert verdict.verdict == "not_supported"
    assert "cites [9], but the context has sources 1-3" in verdict.reason


def test_uncited_claims_are_judged_against_every_source() -> None:
    judge = ScriptedJudge(rules=[fact_rule])
    result = FaithfulnessEvaluator(judge).evaluate(record("Webhooks are retried 7 times."))
    (verdict,) = claims_of(dict(result.details))
    assert verdict.judged_against == (1, 2, 3)
    assert result.score == 1.0


def test_claims_without_any_context_are_not_supported() -> None:
    judge = ScriptedJudge(default="supported")
    result = FaithfulnessEvaluator(judge).evaluate(record("Harbor makes 5 attempts.", passages=()))
    assert result.score == 0.0
    assert judge.calls == []


def test_context_recall_from_reference_claims_and_gold_sources() -> None:
    judge = ScriptedJudge(rules=[fact_rule])
    gold = (GoldSource("docs/configuration.md", 54, 54), GoldSource("docs/deployment.md", 1, 5))
    result = ContextRecallEvaluator(judge).evaluate(
        record(
            "anything",
            reference="Harbor makes 5 attempts by default. Harbor also sends faxes.",
            gold_sources=gold,
        )
    )
    details = dict(result.details)
    assert result.score == pytest.approx(0.5)
    assert details["claim_recall"] == pytest.approx(0.5)
    assert details["source_recall"] == pytest.approx(0.5)
    assert [g["recalled"] for g in details["gold_sources"]] == [True, False]


def test_context_recall_with_gold_sources_only_is_deterministic() -> None:
    judge = ScriptedJudge()
    result = ContextRecallEvaluator(judge).evaluate(
        record("x", gold_sources=(GoldSource(doc_id="docs/api/webhooks.md"),))
    )
    assert result.score == 1.0
    assert judge.calls == []


def test_context_recall_without_reference_or_gold_is_undetermined() -> None:
    result = ContextRecallEvaluator(ScriptedJudge()).evaluate(record("x"))
    assert result.status == "undetermined"
    assert "no reference" in result.reason


@pytest.mark.parametrize(
    ("relevant", "score"),
    [
        (["defaults to 5"], 1.0),
        (["600 requêtes"], 1 / 3),
        (["defaults", "600"], (1 + 2 / 3) / 2),
        ([], 0.0),
    ],
)
def test_context_precision_is_rank_aware(relevant: list[str], score: float) -> None:
    result = ContextPrecisionEvaluator(ScriptedJudge(relevant=relevant)).evaluate(record("x"))
    assert result.status == "scored"
    assert result.score == pytest.approx(score)


def test_context_precision_without_context_is_undetermined() -> None:
    result = ContextPrecisionEvaluator(ScriptedJudge()).evaluate(record("x", passages=()))
    assert result.status == "undetermined"


def test_answer_relevance_uses_the_judge_and_scores_refusals_zero() -> None:
    answer = "Harbor makes 5 attempts by default [1]."
    judge = ScriptedJudge(answer_scores={"Harbor makes 5 attempts by default.": 0.8})
    evaluator = AnswerRelevanceEvaluator(judge)
    assert evaluator.evaluate(record(answer)).score == pytest.approx(0.8)
    refusal = evaluator.evaluate(record("I don't know."))
    assert (refusal.status, refusal.score) == ("scored", 0.0)
    assert "noncommittal" in refusal.reason
    assert evaluator.evaluate(record("")).status == "undetermined"


@pytest.mark.parametrize(
    "evaluator_cls",
    [
        FaithfulnessEvaluator,
        ContextRecallEvaluator,
        ContextPrecisionEvaluator,
        AnswerRelevanceEvaluator,
    ],
)
def test_langsmith_signature(evaluator_cls: type) -> None:
    evaluator = evaluator_cls(ScriptedJudge(default="supported", relevant=["5"]))
    fn = evaluator.as_langsmith_evaluator()
    assert list(inspect.signature(fn).parameters) == ["inputs", "outputs", "reference_outputs"]
    out = fn(
        {"question": "How many attempts?"},
        {
            "answer": "Harbor makes 5 attempts by default [1].",
            "rag_citations": [
                {"n": 1, "text": "defaults to 5", "source": "a.md", "line_start": 1, "line_end": 2}
            ],
        },
        {"reference": "Five attempts.", "gold_sources": [{"path": "a.md", "line_start": 2}]},
    )
    assert set(out) == {"key", "score", "comment"}
    assert out["key"] == evaluator.name == fn.__name__
    assert isinstance(out["score"], float) and 0.0 <= out["score"] <= 1.0
    assert out == evaluator(
        inputs={"question": "How many attempts?"},
        outputs={
            "answer": "Harbor makes 5 attempts by default [1].",
            "contexts": [
                {"n": 1, "text": "defaults to 5", "source": "a.md", "line_start": 1, "line_end": 2}
            ],
        },
        reference_outputs={
            "reference": "Five attempts.",
            "gold_sources": [{"path": "a.md", "line_start": 2}],
        },
    )


def test_langsmith_adapter_reads_documents_and_messages_and_reports_undetermined() -> None:
    evaluator = FaithfulnessEvaluator(ScriptedJudge(default="supported"))
    out = evaluator(
        inputs={"input": "q"},
        outputs={
            "messages": [("user", "q"), ("ai", "I don't know.")],
            "documents": [Document(page_content="text", metadata={"source": "a.md"})],
        },
    )
    assert out["score"] is None
    assert out["comment"].startswith("undetermined:")


def test_langsmith_adapter_turns_a_crash_into_a_failed_comment() -> None:
    class Broken(ScriptedJudge):
        def judge_claims(self, *args: object, **kwargs: object) -> list[Judgement]:
            raise RuntimeError("judge down")

    out = FaithfulnessEvaluator(Broken())(
        {"question": "q"}, {"answer": "Five attempts.", "contexts": ["x"]}
    )
    assert out["score"] is None
    assert out["comment"] == "failed: RuntimeError: judge down"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("docs/configuration.md", "docs/configuration.md", True),
        ("docs/configuration.md", "examples/docs/docs/configuration.md", True),
        ("./docs\\configuration.md", "docs/configuration.md", True),
        ("configuration.md", "docs/xconfiguration.md", False),
        ("", "docs/a.md", False),
    ],
)
def test_same_path(a: str, b: str, same: bool) -> None:
    assert same_path(a, b) is same


def test_gold_source_recall_counts_overlapping_line_ranges() -> None:
    passages = (Passage(1, "t", "docs/a.md", 10, 20), Passage(2, "t", "docs/b.md", 5, 5, id="c9"))
    gold = (
        GoldSource("docs/a.md", 20, 30),
        GoldSource("docs/a.md", 21, 30),
        GoldSource("docs/b.md"),
        GoldSource(doc_id="c9"),
    )
    assert gold_source_recall(gold, passages) == pytest.approx(3 / 4)
    assert lines_overlap(1, 1, 1, 1) and not lines_overlap(1, 4, 5, 9)
    with pytest.raises(ValueError):
        gold_source_recall((), passages)


def test_langsmith_runs_the_evaluator_as_its_own() -> None:
    """LangSmith's own wrapper (no network) accepts the function and reads its result."""
    import datetime
    import uuid

    from langsmith.evaluation.evaluator import run_evaluator
    from langsmith.schemas import Example, Run

    fn = FaithfulnessEvaluator(ScriptedJudge(rules=[fact_rule])).as_langsmith_evaluator()
    now = datetime.datetime.now(datetime.UTC)
    run = Run(
        id=uuid.uuid4(),
        trace_id=uuid.uuid4(),
        name="agent",
        run_type="chain",
        start_time=now,
        inputs={"question": "How many attempts?"},
        outputs={
            "answer": "Harbor makes 5 attempts by default [2].",
            "contexts": [RETRY.text, WEBHOOK.text],
        },
    )
    example = Example(
        id=uuid.uuid4(),
        dataset_id=uuid.uuid4(),
        created_at=now,
        inputs={"question": "How many attempts?"},
        outputs={"reference": "Five."},
    )
    result = run_evaluator(fn).evaluate_run(run, example)
    assert (result.key, result.score) == ("faithfulness", 0.0)
    summary, claim = result.comment.split("\n")
    assert summary == "0 of 1 claims supported (0 contradicted); mean claim support 0.00"
    # The comment says which claim failed and why, for a person to act on.
    assert claim.startswith("- [not_supported] Harbor makes 5 attempts by default. — wrong ")


def test_an_any_of_gold_group_is_recalled_by_either_member() -> None:
    table = GoldSource("docs/configuration.md", 54, 54)
    prose = GoldSource("docs/configuration.md", 59, 60)
    either = GoldSource(any_of=(table, prose))
    webhook = GoldSource("docs/api/webhooks.md", 43, 47)
    only_prose = (Passage(1, "t", "examples/docs/docs/configuration.md", 58, 61),)
    assert gold_source_recall([table, prose], only_prose) == 0.5
    assert gold_source_recall([either], only_prose) == 1.0
    assert gold_source_recall([either, webhook], only_prose) == 0.5
    assert GoldSource.from_dict(either.to_dict()) == either


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_score_fails_the_metric_instead_of_becoming_zero(bad: float) -> None:
    with pytest.raises(ValueError, match="not a number in"):
        MetricResult.scored("answer_relevance", bad)
    judge = ScriptedJudge(answer_scores={"Harbor makes 5 attempts.": bad})
    metrics = score_record(
        EvalRecord("How many attempts?", "Harbor makes 5 attempts."),
        [AnswerRelevanceEvaluator(judge)],
    )
    assert metrics["answer_relevance"].status == "failed"
    assert metrics["answer_relevance"].score is None


GRADED_CONTEXT = (
    "Harbor retries calls to downstream providers.\r\n"
    "The default of 5 attempts means one call and up to four retries. "
    "Les nouvelles tentatives utilisent un délai aléatoire complet."
)


def test_faithfulness_is_graded_so_that_one_claim_answers_rank() -> None:
    """The score is the mean claim support, not supported ÷ claims: a one-claim answer is
    not just 0 or 1, and a partly supported claim ranks above a made-up one."""
    evaluator = FaithfulnessEvaluator(OfflineJudge(FakeEmbeddings()))
    answers = {
        "exact": "The default of 5 attempts means one call and up to four retries.",
        "non_ascii": "Les nouvelles tentatives utilisent un délai aléatoire complet.",
        "partial": "The default of 5 attempts means one call and a pager alert for operators.",
        "made_up": "Harbor stores orders in database clusters on shared servers.",
        "made_up_names": "Harbor stores orders in MongoDB clusters on Kubernetes.",
    }
    results = {
        name: evaluator.evaluate(
            EvalRecord("How does Harbor retry?", answer, (Passage(1, GRADED_CONTEXT),))
        )
        for name, answer in answers.items()
    }
    scores = {name: r.score for name, r in results.items()}
    assert scores["exact"] == pytest.approx(1.0, abs=0.05)
    assert scores["non_ascii"] == pytest.approx(1.0, abs=0.05)
    assert scores["exact"] > scores["partial"] > scores["made_up"] > 0.0, scores
    # Names no source states: the claim counts 0 (issue 41), its graded support is kept.
    assert scores["made_up_names"] == 0.0
    assert dict(results["made_up_names"].details)["graded"] > 0.0
    (verdict,) = claims_of(dict(results["partial"].details))
    assert results["partial"].score == pytest.approx(verdict.score)
    # The verdict counts keep their meaning beside the graded score.
    assert dict(results["exact"].details)["supported_share"] == 1.0
    assert dict(results["made_up"].details)["supported_share"] == 0.0
