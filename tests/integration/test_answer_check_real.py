"""The answer check with the packaged embedding model, as a user runs it: the five
single-fact changes of issue 29, each of which this judge's graded score alone calls
supported (0.51 to 0.97), are unsupported with the token named; the same claims written
right are supported."""

from __future__ import annotations

import pytest

from kbgraph.evals import check_answer
from kbgraph.evals._judges import OfflineJudge
from tests.unit.test_eval_facts import (
    COMPANY,
    DESK,
    FIVE,
    KEYS,
    NOT_SUPPORTED,
    ONE_SENTENCE,
    SERVER,
    UPLOADS,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge("local")


def _cited(source: str) -> list[dict[str, object]]:
    return [{"n": 1, "chunk_id": "c1", "source": "doc.md", "text": source}]


@pytest.mark.parametrize(("claim", "source", "named"), FIVE)
def test_single_fact_changes_are_unsupported(
    judge: OfflineJudge, claim: str, source: str, named: list[str]
) -> None:
    (found,) = check_answer(f"{claim} [1]", _cited(source), judge=judge)["claims"]
    # A changed port or status is contradicted ("port 8443 ≠ port 8080"), the others not
    # supported: either way not supported, with the token named.
    assert not found["supported"] and found["verdict"] in NOT_SUPPORTED
    assert found["cause"] == "unstated_fact"
    assert all(token in found["reason"] for token in named)


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        ("The upload was rejected with status 413.", UPLOADS),
        ("The server listens on port 8080 by default.", SERVER),
        ("With sandbox keys, orders go through the full checkout flow.", KEYS),
        ("The company was founded in 1998 by Ada Park.", COMPANY),
        ("The day shift has eight people.", DESK),
    ],
)
def test_the_same_facts_written_right_are_supported(
    judge: OfflineJudge, claim: str, source: str
) -> None:
    (found,) = check_answer(f"{claim} [1]", _cited(source), judge=judge)["claims"]
    assert found["supported"], found["reason"]


@pytest.mark.parametrize(("claim", "source", "named"), ONE_SENTENCE)
def test_single_fact_changes_within_one_source_sentence_are_unsupported(
    judge: OfflineJudge, claim: str, source: str, named: str
) -> None:
    check = check_answer(f"{claim} [1]", _cited(source), judge=judge)
    (found,) = check["claims"]
    assert not found["supported"] and found["verdict"] in NOT_SUPPORTED
    assert found["cause"] == "unstated_fact"
    assert named in found["reason"]
    assert check["score"] is not None and check["score"] < 0.5
