"""The offline answer-relevance evidence: question parts, and how evasion, restating and
off-topic padding move the score (pure functions, no model)."""

from __future__ import annotations

import pytest

from kbgraph.evals._judges._relevance import answer_evidence, question_parts


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "When was GPT-4 released and what are some of its capabilities?",
            ["When was GPT-4 released", "what are some of its capabilities"],
        ),
        (
            "Where is it endemic to, and what is its conservation status?",
            ["Where is it endemic to", "what is its conservation status"],
        ),
        ("How do retries and webhooks differ?", ["How do retries and webhooks differ"]),
        (
            "Quelle est la limite ? Combien de clés ?",
            ["Quelle est la limite", "Combien de clés"],
        ),
        ("max_attempts", ["max_attempts"]),
    ],
)
def test_question_parts(question: str, parts: list[str]) -> None:
    assert question_parts(question) == parts


def test_an_answer_with_new_on_topic_information_beats_one_that_restates() -> None:
    full = answer_evidence([0.6, 0.5], [0.6, 0.5], [frozenset("abcdefghij"), frozenset("klmno")], 0)
    restating = answer_evidence([0.7, 0.2], [0.7], [frozenset({"tong"})], 0)
    assert full.score > restating.score
    assert (full.new_words, restating.new_words) == (15, 1)


def test_off_topic_sentences_add_no_information() -> None:
    on_topic = answer_evidence([0.6], [0.6], [frozenset("abc")], 0)
    padded = answer_evidence([0.6], [0.6, 0.05], [frozenset("abc"), frozenset("vwxyz")], 0)
    assert padded.informative == on_topic.informative
    assert padded.new_words == 3


@pytest.mark.parametrize("evasive", [0.0, 0.5, 1.0])
def test_evasion_scales_the_score_down(evasive: float) -> None:
    base = answer_evidence([0.6], [0.6], [frozenset("abcdef")], 0.0)
    hedged = answer_evidence([0.6], [0.6], [frozenset("abcdef")], evasive)
    assert hedged.score == pytest.approx(base.score * (1 - evasive))
    assert "evasive" in hedged.reason()


def test_padding_lowers_the_score_of_an_answer() -> None:
    """The same on-topic sentence, then the same with two sentences about nothing that was
    asked: padding adds no new on-topic words, and now dilutes the sentences' focus."""
    concise = answer_evidence(
        part_best=[0.7],
        sentence_on_topic=[0.7],
        sentence_new_words=[frozenset({"five", "attempt"})],
        evasive_share=0.0,
    )
    padded = answer_evidence(
        part_best=[0.7],
        sentence_on_topic=[0.7, 0.2, 0.15],
        sentence_new_words=[frozenset({"five", "attempt"}), frozenset(), frozenset()],
        evasive_share=0.0,
    )
    assert padded.score < concise.score
    assert padded.focus < concise.focus == 1.0


def test_numbers_are_masked_for_relevance() -> None:
    from kbgraph.evals._judges import OfflineJudge
    from kbgraph.evals._judges._relevance import mask_numbers
    from kbgraph.testing import FakeEmbeddings

    assert mask_numbers("Port 8080, not 9102; GPT-4 on 1.6 s") == "Port N, not N; GPT-4 on N s"
    judge = OfflineJudge(FakeEmbeddings())
    question = "On which port does Harbor listen?"
    right = judge.judge_answer(question, "Harbor listens on port 8080.")
    wrong = judge.judge_answer(question, "Harbor listens on port 9090.")
    assert right.score == wrong.score
