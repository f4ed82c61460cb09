"""AUROC, balanced accuracy, AUROC within groups, pairwise accuracy and average precision as
pure functions."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbgraph.evals._stats import (
    auroc,
    auroc_within_groups,
    average_precision,
    balanced_accuracy,
    pairwise_accuracy,
)


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


def test_balanced_accuracy_by_hand() -> None:
    # Positives 0.9, 0.5 (at the line: counted positive), 0.2 -> 2 of 3 right;
    # negatives 0.1, 0.49, 0.7 -> 2 of 3 rejected. (2/3 + 2/3) / 2.
    scores = [0.9, 0.5, 0.2, 0.1, 0.49, 0.7]
    labels = [True, True, True, False, False, False]
    assert balanced_accuracy(scores, labels) == pytest.approx(2 / 3)
    # Unequal classes: 4 positives all right, 1 negative wrong -> (1 + 0) / 2, where plain
    # accuracy would say 0.8.
    assert balanced_accuracy([0.6] * 5, [True] * 4 + [False]) == pytest.approx(0.5)
    # Another line moves the predictions: at 0.8 only 0.9 passes -> (1/3 + 3/3) / 2.
    assert balanced_accuracy(scores, labels, threshold=0.8) == pytest.approx(2 / 3)
    assert balanced_accuracy([0.1, 0.9], [False, True], threshold=0.95) == pytest.approx(0.5)


def test_balanced_accuracy_needs_both_classes_and_one_label_per_score() -> None:
    with pytest.raises(ValueError, match="one positive and one negative"):
        balanced_accuracy([0.9, 0.8], [True, True])
    with pytest.raises(ValueError, match="one label per score"):
        balanced_accuracy([0.9, 0.8], [True])


def test_auroc_within_groups_by_hand() -> None:
    """Eight answers of lengths 1..8 in two groups of four (lengths 1-4 and 5-8)."""
    sizes = [5, 1, 7, 2, 3, 8, 4, 6]
    labels = [False, True, False, True, True, False, False, True]
    scores = [0.2, 0.9, 0.1, 0.3, 0.8, 0.05, 0.4, 0.7]
    # Lengths 1-4: positives 0.9, 0.3, 0.8 against the negative 0.4 -> 2/3. Lengths 5-8:
    # the positive 0.7 against 0.2, 0.1, 0.05 -> 1. Both groups hold 4: (2/3 + 1) / 2.
    assert auroc_within_groups(scores, labels, sizes, groups=2) == pytest.approx(5 / 6)
    # Pooled, 0.3 loses only to 0.4: 15 of 16 pairs; one group is the pooled AUROC.
    assert auroc_within_groups(scores, labels, sizes, groups=1) == pytest.approx(15 / 16)
    # Length itself (shorter = faithful): pooled, -6 loses to -5 and -4 -> 14/16; within
    # the groups 1 (lengths 1-3 against 4) and 2/3 (6 against 5, 7, 8) -> 5/6.
    by_length = [-float(n) for n in sizes]
    assert auroc_within_groups(by_length, labels, sizes, groups=1) == pytest.approx(14 / 16)
    assert auroc_within_groups(by_length, labels, sizes, groups=2) == pytest.approx(5 / 6)


def test_auroc_within_groups_weights_by_size_and_skips_one_label_groups() -> None:
    """Seven items in three groups: sizes 3, 2, 2 (the first takes the remainder)."""
    sizes = [1, 2, 3, 4, 5, 6, 7]
    labels = [True, False, True, True, False, True, True]
    scores = [0.9, 0.5, 0.1, 0.6, 0.7, 0.3, 0.2]
    # Group 1 (1, 2, 3): positives 0.9, 0.1 vs 0.5 -> 1/2, weight 3. Group 2 (4, 5):
    # 0.6 vs 0.7 -> 0, weight 2. Group 3 (6, 7): only positives, skipped.
    assert auroc_within_groups(scores, labels, sizes, groups=3) == pytest.approx(1.5 / 5)
    assert auroc_within_groups([0.1, 0.2], [True, True], [1, 2]) is None
    with pytest.raises(ValueError, match="one label and one size"):
        auroc_within_groups([0.1], [True], [1, 2])
