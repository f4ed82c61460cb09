"""BEIR metrics against values worked out by hand (trec_eval definitions: linear gain,
log2(rank + 1) discount, relevant = grade >= 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbgraph.evals._beir import (
    dcg,
    max_pool,
    mean_metrics,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    query_metrics,
    recall_at_k,
    without_query_id,
)

LOG2_3 = math.log2(3)  # 1.5849625
LOG2_5 = math.log2(5)  # 2.3219281

# Graded qrels: "b" grade 2, "d" and "e" grade 1, "z" judged not relevant (grade 0).
QRELS = {"b": 2, "d": 1, "e": 1, "z": 0}
RANKING = ["a", "b", "c", "d", "z"]


def test_dcg_is_linear_gain_over_log2_of_rank_plus_one() -> None:
    # 3/log2(2) + 0 + 1/log2(4) = 3 + 0.5
    assert dcg([3, 0, 1]) == pytest.approx(3.5)
    assert dcg([]) == 0.0


def test_ndcg_at_10_by_hand() -> None:
    # DCG  = b at rank 2: 2/log2(3) + d at rank 4: 1/log2(5) = 1.2618595 + 0.4306766 = 1.6925361
    # IDCG = 2/log2(2) + 1/log2(3) + 1/log2(4)               = 2 + 0.6309298 + 0.5 = 3.1309298
    # nDCG = 1.6925361 / 3.1309298                                                   = 0.5405858
    expected = (2 / LOG2_3 + 1 / LOG2_5) / (2 + 1 / LOG2_3 + 0.5)
    assert expected == pytest.approx(0.5405858, abs=1e-7)
    assert ndcg_at_k(RANKING, QRELS, 10) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("ranking", "k", "expected"),
    [
        # The ideal order scores 1 whatever follows it.
        (["b", "d", "e", "a"], 10, 1.0),
        # Grades swapped: d, b, e → (1 + 2/log2 3 + 1/2) / (2 + 1/log2 3 + 1/2)
        (["d", "b", "e"], 10, (1 + 2 / LOG2_3 + 0.5) / (2 + 1 / LOG2_3 + 0.5)),
        # Cut at 2: only "a", "b" count; IDCG@2 = 2 + 1/log2 3.
        (RANKING, 2, (2 / LOG2_3) / (2 + 1 / LOG2_3)),
        # A judged non-relevant document gains nothing.
        (["z", "b"], 10, (2 / LOG2_3) / (2 + 1 / LOG2_3 + 0.5)),
        ([], 10, 0.0),
    ],
)
def test_ndcg_cases(ranking: list[str], k: int, expected: float) -> None:
    assert ndcg_at_k(ranking, QRELS, k) == pytest.approx(expected)


def test_ndcg_without_relevant_documents_is_zero() -> None:
    assert ndcg_at_k(["a", "b"], {"a": 0}, 10) == 0.0


@pytest.mark.parametrize(
    ("k", "expected"),
    [(1, 0.0), (2, 1 / 3), (4, 2 / 3), (10, 2 / 3), (100, 2 / 3)],
)
def test_recall_counts_relevant_documents_in_the_first_k(k: int, expected: float) -> None:
    # Relevant: b, d, e (z has grade 0); RANKING finds b at 2 and d at 4.
    assert recall_at_k(RANKING, QRELS, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("ranking", "k", "expected"),
    [
        (RANKING, 10, 0.5),  # first relevant, "b", at rank 2
        (["d"], 10, 1.0),
        (["a", "c", "z"], 10, 0.0),  # a grade-0 document is not a hit
        (["a", "c", "x", "y", "b"], 4, 0.0),  # beyond the cut
    ],
)
def test_mrr(ranking: list[str], k: int, expected: float) -> None:
    assert mrr_at_k(ranking, QRELS, k) == pytest.approx(expected)


def test_query_metrics_names_every_metric() -> None:
    got = query_metrics(RANKING, QRELS)
    assert set(got) == {"ndcg@10", "recall@10", "recall@100", "mrr@10"}
    assert got["mrr@10"] == 0.5


def test_mean_counts_a_query_without_ranking_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    got = mean_metrics({"q1": ["a"]}, qrels)
    # q1 is perfect (1.0), q2 has no ranking (0.0): the mean is 0.5, not 1.0.
    assert got["ndcg@10"] == pytest.approx(0.5)
    assert got["recall@100"] == pytest.approx(0.5)
    assert mean_metrics({}, {}) == dict.fromkeys(got, 0.0)


def test_max_pool_scores_a_document_by_its_best_passage() -> None:
    hits = [("d1", 0.9), ("d2", 0.8), ("d1", 0.7), ("d3", 0.8), ("d2", 0.95)]
    # d2's later passage (0.95) beats d1's 0.9; d3 ties d2's first score but d2 is better.
    assert max_pool(hits) == ["d2", "d1", "d3"]


def test_max_pool_keeps_first_appearance_on_ties() -> None:
    assert max_pool([("b", 1.0), ("a", 1.0), ("c", 1.0)]) == ["b", "a", "c"]
    assert max_pool([]) == []


@pytest.mark.parametrize("q", [0, 25, 50, 95, 100])
@pytest.mark.parametrize("values", [[5.0], [3.0, 1.0], [1.0, 9.0, 2.0, 7.0, 4.0, 4.0]])
def test_percentile_matches_numpy_linear(values: list[float], q: float) -> None:
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_of_nothing_is_zero() -> None:
    assert percentile([], 50) == 0.0


def test_without_query_id_drops_only_the_query_own_document() -> None:
    # BEIR ignore_identical_ids: "q7" is both a query id and a document id.
    assert without_query_id(["d1", "q7", "d2"], "q7") == ["d1", "d2"]
    assert without_query_id(["d1", "d2"], "q7") == ["d1", "d2"]
    # nDCG@10 of the ranking with and without it, qrels {d2: 1}:
    # kept: d2 at rank 3 → 1/log2(4) = 0.5; dropped: rank 2 → 1/log2(3) = 0.6309298
    assert ndcg_at_k(["d1", "q7", "d2"], {"d2": 1}) == pytest.approx(0.5)
    assert ndcg_at_k(without_query_id(["d1", "q7", "d2"], "q7"), {"d2": 1}) == pytest.approx(
        1 / LOG2_3
    )
