"""The offline judge with the real local embedding model: verdicts on the Harbor docs,
and agreement with people on a sample of the shared human-labelled sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.evals._benchmarks import default_data_dir, wikieval_pairs
from kbgraph.evals._claims import split_claims
from kbgraph.evals._evaluators import FaithfulnessEvaluator
from kbgraph.evals._judges import OfflineJudge, content_overlap
from kbgraph.evals._meta import BASELINE, run_meta
from kbgraph.evals._records import EvalRecord, Passage
from kbgraph.evals._stats import pairwise_accuracy

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


# A lower-cased, tokenised news source (as summarisation data sets ship them), CRLF lines.
NEWS = (
    "( cnn ) -- the city council of lyon voted on tuesday to approve a budget of 2.5 "
    "million euros for the public libraries .\r\n"
    "the mayor , jean dupont , said the money would pay for longer opening hours . "
    "the plan was not supported by the opposition , which called it wasteful .\r\n"
    "the libraries will open on sundays from next march , and the museum of fine arts "
    "will follow in may . le musée des beaux-arts ouvrira aussi le dimanche ."
)


@pytest.mark.parametrize(
    "claim",
    [
        # Paraphrases, fused sentences and meta-framing are supported.
        "Lyon's city council approved a 2.5 million euro budget for public libraries on Tuesday.",
        "The mayor, Jean Dupont, said the money would fund longer opening hours.",
        "The opposition did not support the plan.",
        "The article says the libraries will open on Sundays from March.",
        "The council approved the library budget on Tuesday, and the libraries will open on "
        "Sundays from next March.",
        "Le musée des beaux-arts ouvrira aussi le dimanche.",
    ],
)
def test_paraphrases_of_a_lower_cased_news_source_are_supported(
    judge: OfflineJudge, claim: str
) -> None:
    (claim_text,) = [c.text for c in split_claims(claim)]
    (judged,) = judge.judge_claims([claim_text], NEWS)
    assert judged.verdict == "supported", judged.reason


def test_the_faithfulness_score_ranks_summaries_of_a_news_source(judge: OfflineJudge) -> None:
    """The metric's own score is graded: a faithful summary ranks above corrupted copies of
    it (a swapped name, another number, a negation), and those above made-up text."""
    summaries = {
        "faithful": "Here is a summary of the article: Lyon's council approved 2.5 million "
        "euros for libraries on Tuesday. The opposition did not support the plan.",
        "swapped_name": "Here is a summary of the article: Lyon's mayor approved 2.5 million "
        "euros for museums on Tuesday. The opposition did not support the plan.",
        "number": "Here is a summary of the article: Lyon's council approved 7.5 million "
        "euros for libraries on Tuesday. The opposition did not support the plan.",
        "negation": "Here is a summary of the article: Lyon's council did not approve 2.5 "
        "million euros for libraries on Tuesday. The opposition supported the plan.",
        "made_up": "Paris banned cars from its centre after floods closed three bridges.",
    }
    evaluator = FaithfulnessEvaluator(judge)
    scores = {
        name: evaluator.evaluate(EvalRecord("", text, (Passage(1, NEWS),))).score
        for name, text in summaries.items()
    }
    assert scores["faithful"] > max(scores["swapped_name"], scores["number"], scores["negation"])
    assert min(scores["swapped_name"], scores["number"], scores["negation"]) > scores["made_up"]
    assert all(score is not None and 0.0 <= score <= 1.0 for score in scores.values())


def test_no_padded_wrong_or_off_topic_answer_is_more_relevant_than_the_correct_one(
    judge: OfflineJudge,
) -> None:
    """The bundled variants: per question a correct concise answer, the same padded with
    unrelated sentences, one with a wrong number, and an answer to another question."""
    from kbgraph.evals import AnswerRelevanceEvaluator, bundled_dataset_path, load_dataset

    metric = AnswerRelevanceEvaluator(judge)
    scores: dict[str, dict[str, float]] = {}
    for row in load_dataset(bundled_dataset_path("examples_docs_variants.jsonl")):
        result = metric.evaluate(EvalRecord(row.question, row.answer or ""))
        assert result.score is not None
        scores.setdefault(row.metadata["of"], {})[row.metadata["variant"]] = result.score
    assert len(scores) >= 8
    for question, found in scores.items():
        worse = {k: v for k, v in found.items() if k != "correct" and v > found["correct"]}
        assert not worse, (question, found)
