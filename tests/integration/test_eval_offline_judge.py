"""The offline judge with the real local embedding model: verdicts on the Harbor docs,
and agreement with people on a sample of the shared human-labelled sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.evals._benchmarks import default_data_dir, wikieval_pairs
from kbgraph.evals.judges import OfflineJudge, content_overlap
from kbgraph.evals.meta import BASELINE, run_meta
from kbgraph.evals.stats import pairwise_accuracy

pytestmark = pytest.mark.integration

DOCS = Path(__file__).resolve().parents[2] / "examples" / "docs"


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge("local")


@pytest.fixture(scope="module")
def retry_section() -> str:
    lines = (DOCS / "docs" / "configuration.md").read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[45:92])


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("By default max_attempts is five: the first call and up to four retries.", "supported"),
        ("Set max_attempts to 1 to disable retries.", "supported"),
        ("A 404 response is never retried.", "supported"),
        (
            "Harbor waits for the Retry-After time, but never longer than backoff_cap_ms.",
            "supported",
        ),
        ("By default max_attempts is 7.", "contradicted"),
        ("4xx responses such as 404 are retried.", "contradicted"),
        ("Harbor stores retry state in Redis and pages the on-call engineer.", "not_supported"),
    ],
)
def test_verdicts_on_the_retry_policy(
    judge: OfflineJudge, retry_section: str, claim: str, verdict: str
) -> None:
    (judged,) = judge.judge_claims([claim], retry_section)
    assert judged.verdict == verdict, judged.reason


def test_offline_judge_beats_the_overlap_baseline_on_held_out_samples() -> None:
    data = default_data_dir()
    if not (data / "halueval").is_dir():
        pytest.skip(f"no meta-evaluation data at {data}")
    results = run_meta(
        [OfflineJudge("local")], data_dir=data, limit=150, benchmarks=("halueval", "begin")
    )
    by_split = {(r.benchmark, r.split): r.scores for r in results}
    for key in [("HaluEval QA", "qa_one_turn (held out)"), ("BEGIN", "wow test (held out)")]:
        scores = by_split[key]
        assert scores["offline"] > scores[BASELINE], (key, scores)


def test_answer_relevance_prefers_complete_answers_to_partial_evasive_and_off_topic(
    judge: OfflineJudge,
) -> None:
    question = "How many attempts does Harbor make by default, and how can I turn retries off?"
    complete = (
        "Harbor makes 5 attempts by default: the first call and up to four retries. "
        "Set retry.max_attempts to 1 to turn retries off."
    )
    partial = "Harbor makes attempts by default."
    evasive = (
        "I am not sure how many attempts Harbor makes. The documents do not say how to turn "
        "retries off."
    )
    padded = (
        "Harbor is an order service written in Python. Its logo is a lighthouse. "
        "PostgreSQL stores the orders."
    )
    scores = {
        name: judge.judge_answer(question, answer).score
        for name, answer in [
            ("complete", complete),
            ("partial", partial),
            ("evasive", evasive),
            ("padded", padded),
        ]
    }
    assert scores["complete"] > max(scores["partial"], scores["evasive"], scores["padded"])
    assert scores["evasive"] == 0.0, scores


def test_answer_relevance_beats_the_baseline_on_wikieval(judge: OfflineJudge) -> None:
    data = default_data_dir()
    if not (data / "wikieval").is_dir():
        pytest.skip(f"no meta-evaluation data at {data}")
    pairs = wikieval_pairs(data, "answer_relevance")
    judged = [
        (
            judge.judge_answer(p.question, p.better).score,
            judge.judge_answer(p.question, p.worse).score,
        )
        for p in pairs
    ]
    baseline = [
        (content_overlap(p.question, p.better), content_overlap(p.question, p.worse)) for p in pairs
    ]
    assert pairwise_accuracy(judged) > pairwise_accuracy(baseline) + 0.2
