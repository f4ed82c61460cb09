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


def balanced_accuracy(
    scores: Sequence[float], labels: Sequence[bool], threshold: float = 0.5
) -> float:
    """The mean of the two classes' recalls when ``score >= threshold`` predicts the positive
    class (Brodersen et al. 2010, "The balanced accuracy and its posterior distribution"):
    0.5 for any constant prediction, whatever the class mix. This is the measure of
    LLM-AggreFact and of the HHEM model card, so a judge at its own threshold reads beside
    their figures."""
    if len(scores) != len(labels):
        raise ValueError("balanced accuracy needs one label per score.")
    positives = [s for s, label in zip(scores, labels, strict=True) if label]
    negatives = [s for s, label in zip(scores, labels, strict=True) if not label]
    if not positives or not negatives:
        raise ValueError("balanced accuracy needs at least one positive and one negative.")
    hits = sum(s >= threshold for s in positives) / len(positives)
    rejections = sum(s < threshold for s in negatives) / len(negatives)
    return (hits + rejections) / 2


def auroc_within_groups(
    scores: Sequence[float], labels: Sequence[bool], sizes: Sequence[float], groups: int = 4
) -> float | None:
    """AUROC with what ``sizes`` alone explains taken out: the items are sorted by size
    (stable, so ties keep their order) and cut into ``groups`` runs as equal as possible
    (the first ``n % groups`` runs one longer), the AUROC is taken within each run that
    holds both labels, and those AUROCs are averaged weighted by run size (a stratified
    AUROC). With answer word counts as ``sizes`` it says whether a score separates
    faithful from unfaithful answers of similar length: on RAGTruth QA length alone reaches
    AUROC 0.725. None when no run holds both labels."""
    if not len(scores) == len(labels) == len(sizes):
        raise ValueError("AUROC within groups needs one label and one size per score.")
    if groups < 1:
        raise ValueError("AUROC within groups needs at least one group.")
    order = sorted(range(len(scores)), key=lambda i: sizes[i])
    base, extra = divmod(len(order), groups)
    weighted = 0.0
    counted = 0
    start = 0
    for g in range(groups):
        run = order[start : start + base + (g < extra)]
        start += len(run)
        positives = [scores[i] for i in run if labels[i]]
        negatives = [scores[i] for i in run if not labels[i]]
        if positives and negatives:
            weighted += len(run) * auroc(positives, negatives)
            counted += len(run)
    return weighted / counted if counted else None


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


__all__ = [
    "auroc",
    "auroc_within_groups",
    "average_precision",
    "balanced_accuracy",
    "mean",
    "pairwise_accuracy",
]
