"""AUROC, pairwise accuracy and average precision as pure functions."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbgraph.evals.stats import auroc, average_precision, pairwise_accuracy


def _brute_force_auroc(pos: list[float], neg: list[float]) -> float:
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


@pytest.mark.parametrize(
    ("pos", "neg", "expected"),
    [
        ([0.9, 0.8], [0.1, 0.2], 1.0),
        ([0.1], [0.9, 0.8], 0.0),
        ([0.5, 0.5], [0.5], 0.5),
        # 0.8 beats 0.2 and 0.5, ties 0.8 -> 2.5; 0.5 beats 0.2, ties 0.5 -> 1.5; total 4/6.
        ([0.8, 0.5], [0.2, 0.5, 0.8], 4 / 6),
    ],
)
def test_auroc_known_values(pos: list[float], neg: list[float], expected: float) -> None:
    assert auroc(pos, neg) == pytest.approx(expected)


scores = st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=25)


@given(scores, scores)
def test_auroc_equals_pair_counting(pos: list[float], neg: list[float]) -> None:
    assert auroc(pos, neg) == pytest.approx(_brute_force_auroc(pos, neg))


@given(scores, scores)
def test_auroc_is_symmetric(pos: list[float], neg: list[float]) -> None:
    assert auroc(pos, neg) + auroc(neg, pos) == pytest.approx(1.0)


def test_auroc_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="positive and one negative"):
        auroc([0.5], [])


def test_pairwise_accuracy_counts_ties_as_half() -> None:
    assert pairwise_accuracy([(0.9, 0.1), (0.2, 0.3), (0.5, 0.5), (1.0, 0.0)]) == 0.625
    with pytest.raises(ValueError):
        pairwise_accuracy([])


@pytest.mark.parametrize(
    ("relevant", "expected"),
    [
        ([True, False, False], 1.0),
        ([False, False, True], 1 / 3),
        ([True, False, True], (1 + 2 / 3) / 2),
        ([False, False], 0.0),
        ([], 0.0),
    ],
)
def test_average_precision(relevant: list[bool], expected: float) -> None:
    assert average_precision(relevant) == pytest.approx(expected)
