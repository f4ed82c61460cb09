"""Retrieval metrics as small pure functions, with the definitions of trec_eval as exposed by
pytrec_eval (Van Gysel & de Rijke, SIGIR 2018), which BEIR uses (Thakur et al., NeurIPS 2021,
``beir.retrieval.evaluation.EvaluateRetrieval``).

``ranking`` is a list of document ids, best first; ``qrels`` maps a document id to its graded
relevance (absent = not judged = 0). A document is *relevant* when its grade is ≥ 1
(trec_eval's default ``relevance_level``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

METRICS: tuple[str, ...] = ("ndcg@10", "recall@10", "recall@100", "mrr@10")


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain with linear gain and a ``log2(rank + 1)`` discount, ranks
    from 1: ``Σ_i g_i / log2(i + 1)`` (Järvelin & Kekäläinen, "Cumulated gain-based
    evaluation of IR techniques", TOIS 2002; trec_eval ``ndcg_cut``, which takes the grade
    itself as the gain, not ``2^grade - 1``)."""
    return math.fsum(g / math.log2(rank + 1) for rank, g in enumerate(gains, 1) if g > 0)


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """``DCG@k / IDCG@k``; the ideal ranking sorts the judged grades of ``qrels``, best
    first (trec_eval ``ndcg_cut.k``). 0 when no document is relevant."""
    ideal = dcg(sorted((g for g in qrels.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg([max(qrels.get(doc, 0), 0) for doc in ranking[:k]]) / ideal


def relevant(qrels: Mapping[str, int]) -> set[str]:
    return {doc for doc, grade in qrels.items() if grade >= 1}


def recall_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Relevant documents in the first ``k`` over all relevant documents (trec_eval
    ``recall.k``); 0 when no document is relevant."""
    wanted = relevant(qrels)
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranking[:k])) / len(wanted)


def mrr_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the first ``k``, else 0
    (Voorhees, TREC-8 QA track, 1999; BEIR ``evaluate_custom(..., "mrr")``)."""
    wanted = relevant(qrels)
    for rank, doc in enumerate(ranking[:k], 1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def query_metrics(ranking: Sequence[str], qrels: Mapping[str, int]) -> dict[str, float]:
    """Every metric of :data:`METRICS` for one query."""
    return {
        "ndcg@10": ndcg_at_k(ranking, qrels, 10),
        "recall@10": recall_at_k(ranking, qrels, 10),
        "recall@100": recall_at_k(ranking, qrels, 100),
        "mrr@10": mrr_at_k(ranking, qrels, 10),
    }


def mean_metrics(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, float]:
    """The mean of each metric over every query of ``qrels``; a query the run has no
    ranking for scores 0 (trec_eval ``-c``), so a run cannot gain by dropping queries."""
    if not qrels:
        return dict.fromkeys(METRICS, 0.0)
    totals = dict.fromkeys(METRICS, 0.0)
    for qid, judged in qrels.items():
        for name, value in query_metrics(run.get(qid, ()), judged).items():
            totals[name] += value
    return {name: total / len(qrels) for name, total in totals.items()}


def max_pool(hits: Sequence[tuple[str, float]]) -> list[str]:
    """Document ranking from ranked passages: each document scores the best score of its
    passages ("MaxP", Dai & Callan, "Deeper Text Understanding for IR with Contextual Neural
    Language Modeling", SIGIR 2019). ``hits`` are ``(doc_id, score)`` best first; equal
    document scores keep the order in which the documents first appear."""
    best: dict[str, tuple[float, int]] = {}
    for position, (doc, score) in enumerate(hits):
        kept = best.get(doc)
        if kept is None:
            best[doc] = (score, position)
        elif score > kept[0]:
            best[doc] = (score, kept[1])
    return sorted(best, key=lambda doc: (-best[doc][0], best[doc][1]))


def without_query_id(ranking: Sequence[str], query_id: str) -> list[str]:
    """``ranking`` without the document whose id is the query's own id. In data sets built
    from documents (ArguAna, Quora, CQADupStack) a query is itself a document of the corpus
    and would trivially retrieve itself; BEIR drops it by default
    (``EvaluateRetrieval.evaluate(..., ignore_identical_ids=True)``)."""
    return [doc for doc in ranking if doc != query_id]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation between closest ranks
    (Hyndman & Fan 1996, definition 7; numpy's default). 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


__all__ = [
    "METRICS",
    "dcg",
    "max_pool",
    "mean_metrics",
    "mrr_at_k",
    "ndcg_at_k",
    "percentile",
    "query_metrics",
    "recall_at_k",
    "relevant",
    "without_query_id",
]
