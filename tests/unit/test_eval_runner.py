"""Batch runs: failure isolation, bounded concurrency, timeouts, pre-computed rows."""

from __future__ import annotations

import asyncio

import pytest

from kbgraph.evals import metric_names
from kbgraph.evals.evaluators import FaithfulnessEvaluator, default_evaluators
from kbgraph.evals.records import (
    AgentOutput,
    EvalRecord,
    EvalRow,
    MetricResult,
    Passage,
)
from kbgraph.evals.runner import FunctionAgent, arun_dataset, run_dataset, score_record
from kbgraph.testing import ScriptedJudge

SOURCE = Passage(1, "Harbor makes 5 attempts by default.", "docs/configuration.md", 52, 60)


def rows(*questions: str) -> list[EvalRow]:
    return [
        EvalRow(id=f"q{i}", question=q, reference="Five attempts.") for i, q in enumerate(questions)
    ]


def answer(question: str) -> AgentOutput:
    if "crash" in question:
        raise RuntimeError(f"agent crashed on {question!r}")
    return AgentOutput(answer="Harbor makes 5 attempts by default [1].", passages=(SOURCE,))


def test_a_crashing_row_is_a_failed_row_and_the_others_are_scored() -> None:
    judge = ScriptedJudge(default="supported", relevant=["5"], answer_scores={})
    results = run_dataset(
        rows("first", "please crash", "third"),
        default_evaluators(judge),
        FunctionAgent(answer),
        concurrency=2,
        progress=False,
    )
    assert [r.row_id for r in results] == ["q0", "q1", "q2"]
    assert [r.status for r in results] == ["ok", "failed", "ok"]
    failed = results[1]
    assert failed.error == "RuntimeError: agent crashed on 'please crash'"
    assert set(failed.metrics) == set(metric_names())
    assert all(m.status == "failed" for m in failed.metrics.values())
    for ok in (results[0], results[2]):
        assert ok.metrics["faithfulness"].score == 1.0
        assert ok.passages == (SOURCE,)


def test_concurrency_is_bounded() -> None:
    running = 0
    peak = 0

    async def slow(question: str) -> AgentOutput:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return AgentOutput(answer="Five attempts.")

    results = asyncio.run(
        arun_dataset(
            rows(*[f"q{i}" for i in range(9)]),
            [FaithfulnessEvaluator(ScriptedJudge())],
            FunctionAgent(slow),
            concurrency=3,
            progress=False,
        )
    )
    assert len(results) == 9
    assert peak == 3


def test_a_row_that_times_out_fails_alone() -> None:
    async def sometimes_slow(question: str) -> AgentOutput:
        await asyncio.sleep(5 if question == "slow" else 0)
        return AgentOutput(answer="Five attempts.")

    results = run_dataset(
        rows("fast", "slow"),
        [FaithfulnessEvaluator(ScriptedJudge())],
        FunctionAgent(sometimes_slow),
        row_timeout=0.05,
        progress=False,
    )
    assert [r.status for r in results] == ["ok", "failed"]
    assert results[1].error == "the agent did not answer within 0.05 seconds"


def test_precomputed_rows_need_no_agent() -> None:
    row = EvalRow("p1", "How many attempts?", answer="Five attempts [1].", contexts=(SOURCE,))
    (result,) = run_dataset(
        [row], [FaithfulnessEvaluator(ScriptedJudge(default="supported"))], progress=False
    )
    assert result.status == "ok"
    assert result.metrics["faithfulness"].score == 1.0


def test_rows_without_answers_need_an_agent() -> None:
    with pytest.raises(ValueError, match="no agent"):
        run_dataset(rows("q"), [], None, progress=False)


def test_an_evaluator_that_raises_fails_only_its_metric() -> None:
    class Exploding(FaithfulnessEvaluator):
        def evaluate(self, record: EvalRecord) -> MetricResult:
            raise ZeroDivisionError("boom")

    judge = ScriptedJudge(default="supported")
    metrics = score_record(
        EvalRecord("q", "Five attempts [1].", (SOURCE,), reference="Five attempts."),
        [Exploding(judge), *default_evaluators(judge)[1:]],
    )
    assert metrics["faithfulness"].status == "failed"
    assert "ZeroDivisionError: boom" in metrics["faithfulness"].reason
    assert metrics["context_recall"].status == "scored"


def test_function_agent_accepts_plain_strings() -> None:
    output = asyncio.run(FunctionAgent(lambda q: f"echo {q}").arun("hi"))
    assert output == AgentOutput(answer="echo hi")
