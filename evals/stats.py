"""Small pure statistics used by the evaluators and the meta-evaluation."""

from __future__ import annotations

from collections.abc import Sequence


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Area under the ROC curve: the probability that a random positive scores higher than
    a random negative, ties counting one half.

    Computed as the Mann–Whitney U statistic divided by ``n_pos * n_neg`` (Mann & Whitney
    1947; Hanley & McNeil 1982, "The meaning and use of the area under a ROC curve"), with
    mid-ranks for ties. O(n log n).
    """
    if not positives or not negatives:
        raise ValueError("AUROC needs at least one positive and one negative score.")
    ranks = _mid_ranks([*positives, *negatives])
    n_pos, n_neg = len(positives), len(negatives)
    rank_sum = sum(ranks[:n_pos])
    u = rank_sum - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


def _mid_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mid = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = mid
        i = j + 1
    return ranks


def pairwise_accuracy(pairs: Sequence[tuple[float, float]]) -> float:
    """Share of ``(better, worse)`` pairs where ``better`` scores higher; a tie counts one
    half (the Ragas paper's WikiEval agreement, Es et al. 2023, arXiv:2309.15217)."""
    if not pairs:
        raise ValueError("pairwise accuracy needs at least one pair.")
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs)
    return wins / len(pairs)


def average_precision(relevant: Sequence[bool]) -> float:
    """Rank-aware precision of a ranked list: the mean of precision@k over the ranks k that
    hold a relevant item; 0 when none is relevant. This is Ragas' context precision
    (Es et al. 2023) and the AP of information retrieval (Manning et al. 2008, §8.4)."""
    hits = 0
    total = 0.0
    for k, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


__all__ = ["auroc", "average_precision", "mean", "pairwise_accuracy"]
