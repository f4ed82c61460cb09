"""The answer verifier's seam (``kbgraph.evals._judges._verifier``), how the offline judge mixes
a verifier into a claim's graded support score, and the training data's edits."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from kbgraph.errors import ConfigError
from kbgraph.evals._judges import OfflineJudge
from kbgraph.evals._judges._evidence import VERIFIER_WEIGHT, graded, lexical_score
from kbgraph.evals._judges._verifier import Verifier
from kbgraph.evals._text import content_words

ROOT = Path(__file__).resolve().parents[2]
SOURCE = (
    "Uploads larger than 10 MB are refused. The upload is then rejected with status 413, "
    "and the client is told to retry with a smaller file."
)


class OverlapVerifier:
    """A fake verifier: the share of the claim's content words in the evidence; records
    what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.asked += pairs
        out = []
        for claim, evidence in pairs:
            words, held = set(content_words(claim)), set(content_words(evidence))
            out.append(len(words & held) / len(words) if words else 0.0)
        return out


def test_graded_lets_the_verifier_decide_only_where_the_words_do_not() -> None:
    assert graded(0.8, None) == 0.8  # no verifier ran
    # Certain lexical evidence (a near-copy, or nothing shared) is not moved.
    assert graded(1.0, 0.0) == 1.0 and graded(0.0, 1.0) == 0.0
    # At even odds the verifier moves the score by the whole weight.
    assert graded(0.5, 1.0, 1.0) == pytest.approx(1.0)
    assert graded(0.5, 0.0, 0.5) == pytest.approx(0.25)
    assert graded(0.5, 0.9) == pytest.approx(0.5 + VERIFIER_WEIGHT * 0.4)
    # In between, less: 4 * 0.9 * 0.1 = 0.36 of the weight.
    assert graded(0.9, 0.1, 1.0) == pytest.approx(0.9 - 0.36 * 0.8)


def test_missing_weights_are_a_config_error_saying_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"weights are missing.*make verifier"):
        Verifier(tmp_path)


def test_the_verifier_judge_spec_without_weights_says_how_to_make_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kbgraph.evals._judges import _verifier, resolve_judge

    monkeypatch.setattr(_verifier.Verifier.__init__, "__defaults__", (tmp_path,))
    with pytest.raises(ConfigError, match=r"make verifier"):
        resolve_judge("offline+verifier", embeddings="fake")


def test_without_a_verifier_the_judge_is_the_lexical_one() -> None:
    judge = OfflineJudge("fake")
    evidence = judge.evidence(["The upload is rejected with status 413."], SOURCE)
    assert evidence[0].verified is None and judge.name == "offline"


def test_the_judge_asks_the_verifier_about_each_claim_and_mixes_its_answer() -> None:
    fake = OverlapVerifier()
    judge = OfflineJudge("fake", verifier=fake)
    claims = ["The upload is rejected with status 413.", "Lunch is served at noon."]
    evidence = judge.evidence(claims, SOURCE)
    assert judge.name == "offline+verifier"
    assert [e.verified for e in evidence] == [1.0, 0.0]
    # Each claim read against its best sentence with its neighbours, not the whole text.
    assert fake.asked[0][0] == claims[0] and "413" in fake.asked[0][1]
    score = judge.judge_claims(claims[:1], SOURCE)[0].score
    plain = OfflineJudge("fake").judge_claims(claims[:1], SOURCE)[0].score
    lexical = lexical_score(evidence[0])
    assert score == pytest.approx(graded(lexical, 1.0)) and score >= plain


def test_a_fragment_answer_is_verified_with_its_question() -> None:
    fake = OverlapVerifier()
    OfflineJudge("fake", verifier=fake).evidence(
        ["413"], SOURCE, question="Which status rejects a large upload?"
    )
    assert [claim for claim, _ in fake.asked] == ["Which status rejects a large upload? 413"]


@pytest.fixture(scope="module")
def edits():
    sys.path.insert(0, str(ROOT / "training"))
    import _edits

    return _edits


def test_the_training_edits_change_what_they_say_they_change(edits) -> None:
    doc = edits.Doc(
        "d",
        [
            "The gateway was built by Ada Park in Oslo and serves 120 requests per second.",
            "It does not retry a request that failed with status 413.",
            "Grace Hopper reviewed the design, the tests and the deployment plan.",
        ],
    )
    rng = random.Random(3)
    assert edits.change_number(doc, 0, [doc], rng) != doc.sentences[0]
    assert "120" not in edits.change_number(doc, 0, [doc], rng)
    assert (
        edits.negate(doc, 1, [doc], rng) == "It does retry a request that failed with status 413."
    )
    # A name of the same document takes the place of one of the sentence's names.
    swapped = edits.swap_name(doc, 0, [doc], rng)
    assert swapped != doc.sentences[0] and "Hopper" in swapped
    bracketed = edits.Doc("e", ["The service (written in Go) runs on port 80."])
    assert edits.drop_clause(bracketed, 0, [doc], rng) == "The service runs on port 80."
    assert (
        edits.reverse_relation(
            edits.Doc("f", ["In this setup the proxy wraps the transport."]), 0, [doc], rng
        )
        == "In this setup transport wraps the proxy."
    )


@pytest.fixture(scope="module")
def human():
    sys.path.insert(0, str(ROOT / "training"))
    import _human

    return _human


def test_only_the_claims_an_edit_changed_carry_a_summedits_label(human) -> None:
    original = "The team met on Monday. They chose a blue logo."
    changed, kept = human.edited_claims("The team met on Monday. They chose a red logo.", original)
    assert changed == ["They chose a red logo."]
    assert kept == ["The team met on Monday."]


def test_a_wice_claim_is_cut_only_before_one_trailing_unsupported_span(human) -> None:
    claim = "Raza made his debut for Pakistan against Zimbabwe on 24 October 1996 ."
    tokens = claim.split()
    trailing = [False] * 8 + [True] * 4 + [False]
    assert (
        human.supported_part(tokens, trailing)
        == "Raza made his debut for Pakistan against Zimbabwe."
    )
    # Unsupported words in the middle: what is left would not be a sentence a person wrote.
    middle = [False] * 13
    middle[4] = True
    assert human.supported_part(tokens, middle) is None
    # Too little left to be a claim.
    assert human.supported_part(tokens, [False] * 3 + [True] * 9 + [False]) is None


def test_wice_evidence_is_the_first_supporting_set_in_page_order(human) -> None:
    row = {"evidence": ["a.", "b.", "c.", "d."], "supporting_sentences": [[2, 0], [3]]}
    assert human.wice_evidence(row) == "a. c."


def test_the_seed_13_summedits_sample_is_the_same_with_domains_tagged(tmp_path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_verdict

    for domain in ("news", "samsum"):
        rows = [
            {"doc": f"{domain} doc {i}.", "summary": f"{domain} summary {i}.", "label": i % 2}
            for i in range(20)
        ]
        (tmp_path / f"summedits_{domain}.json").write_text(json.dumps(rows))
    tagged = bench_verdict.sample_tagged(tmp_path, 8, 13)
    assert [item for _, item in tagged] == bench_verdict.sample_summedits(tmp_path, 8, 13)
    dev = bench_verdict.dev_only(tagged)
    assert dev and all(item.answer.startswith("samsum") for item in dev)
