"""Retrieve's fusion: every ranked list of every knowledge base, fused by weighted RRF into
one candidate list. Pure functions over typed keys.

A list is named by a :class:`ListKey` (knowledge base, query, ranker) and a chunk by its
knowledge base and id; the string names that state and traces show (``q0:vector``) are
derived from the keys, never parsed back.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from kbgraph.retrieval import Chunk, SearchResult
from kbgraph.retrieval._internal import FusedItem, rrf_fuse

from .._state import Candidate

ChunkKey = tuple[str, str]
"""(knowledge base, chunk id): one chunk, whichever lists returned it."""

SIMILARITY = "similarity"
"""The candidate score holding its best raw vector similarity in any list of the run (what
GroundingCheck's similarity floor reads)."""


@dataclass(frozen=True, slots=True, order=True)
class ListKey:
    """One ranked list of a run: a knowledge base, the index of the query in
    ``rag_queries`` and the ranker (``vector``, ``bm25``, ``hybrid``: the engine's own convex
    fusion of both, or ``retriever``: a LangChain store's own order)."""

    kb: str
    query: int
    ranker: str

    @property
    def name(self) -> str:
        """How state and traces name the list within its knowledge base: ``q0:vector``."""
        return f"q{self.query}:{self.ranker}"

    @property
    def similarities(self) -> bool:
        """Whether the list's scores are vector similarities."""
        return self.ranker == "vector"


RankedLists = Mapping[ListKey, Sequence[SearchResult]]


def fuse(
    lists: RankedLists,
    weights: Mapping[ListKey, float],
    *,
    k: int,
    rewrites: Collection[int] = (),
) -> list[Candidate]:
    """Weighted RRF (``weights`` per list, default 1) over every list of every knowledge
    base. ``score`` is the fused score divided by the best one possible (first in every list
    of its knowledge base), so it lies in 0..1, and, with several knowledge bases, scaled by
    how close each one's best vector similarity comes to the best of all
    (:func:`similarity_scale`).

    ``rewrites`` are the indices of queries a chat model wrote: a candidate then scores at
    least what the question's own lists alone give it (the same fusion over the lists of
    the other queries; CombMAX of the two fusions, after Fox & Shaw 1994), so however many
    lists the rewrites add, they cannot push the question's own best results down."""
    results: dict[ChunkKey, SearchResult] = {}
    rankings: dict[ListKey, list[ChunkKey]] = {}
    for key, found in lists.items():
        rankings[key] = []
        for result in found:
            chunk = (key.kb, result.chunk.id)
            results.setdefault(chunk, result)
            rankings[key].append(chunk)
    scale = similarity_scale(lists)
    fused = normalised_rrf(rankings, weights, k, scale)
    own = {key: ranking for key, ranking in rankings.items() if key.query not in rewrites}
    floor = normalised_rrf(own, weights, k, scale) if rewrites and own else {}
    out: list[Candidate] = []
    for chunk, (score, item) in fused.items():
        ranks = {key.name: rank for key, rank in item.ranks.items()}
        scores = {"rrf": item.score}
        for key, rank in item.ranks.items():
            listed = list_scores(key, lists[key][rank - 1])
            similarity = max(listed.get(SIMILARITY, -2.0), scores.get(SIMILARITY, -2.0))
            scores |= listed
            if similarity > -2.0:
                scores[SIMILARITY] = similarity
        if rewrites:
            scores["own"] = floor[chunk][0] if chunk in floor else 0.0
            score = max(score, scores["own"])
        out.append(candidate_of(results[chunk].chunk, chunk[0], score, ranks, scores))
    return sorted(out, key=lambda c: -c["score"]) if rewrites else out


def normalised_rrf(
    rankings: Mapping[ListKey, list[ChunkKey]],
    weights: Mapping[ListKey, float],
    k: int,
    scale: Mapping[str, float],
) -> dict[ChunkKey, tuple[float, FusedItem[ListKey]]]:
    """Weighted RRF of ``rankings``, each fused score divided by the best one possible in
    its knowledge base (first in every one of its lists) and multiplied by its knowledge
    base's ``scale``, in fused order."""
    used = {key: weights.get(key, 1.0) for key in rankings}
    fused = rrf_fuse(rankings, k=k, weights=used)
    best: dict[str, float] = {}
    for key, weight in used.items():
        best[key.kb] = best.get(key.kb, 0.0) + weight / (k + 1)
    out: dict[ChunkKey, tuple[float, FusedItem[ListKey]]] = {}
    for item in fused:
        chunk: ChunkKey = item.key  # type: ignore[assignment]
        top = best[chunk[0]]
        out[chunk] = (item.score / top * scale.get(chunk[0], 1.0) if top > 0 else 0.0, item)
    return out


def similarity_scale(lists: RankedLists) -> dict[str, float]:
    """Each knowledge base's best vector similarity over the best of all of them (none for
    one without a vector list, or a single knowledge base). RRF sees ranks only, so every
    knowledge base's first result would score alike, however unrelated to the question;
    their similarities, under one embedding model (a folder's, or a LangChain store's
    documents scored by it), say how close each one's best comes to the question."""
    tops: dict[str, float] = {}
    for key, found in lists.items():
        if key.similarities and found:
            tops[key.kb] = max(tops.get(key.kb, float("-inf")), float(found[0].score))
    best = max(tops.values(), default=0.0)
    if len(tops) < 2 or best <= 0:
        return {}
    return {kb: max(0.0, top) / best for kb, top in tops.items()}


def list_scores(key: ListKey, result: SearchResult) -> dict[str, float]:
    """A list's score of one result under the list's name; a vector similarity also as
    :data:`SIMILARITY`, and a convex ``hybrid`` list gives each ranker's raw score under its
    own name (``q0:vector``) as well."""
    scores = {key.name: float(result.score)}
    if key.ranker == "hybrid":
        scores |= {ListKey(key.kb, key.query, r).name: float(v) for r, v in result.scores.items()}
    raw = result.scores.get("vector") if key.ranker == "hybrid" else None
    similarity = float(result.score) if key.similarities else raw
    if similarity is not None:
        scores[SIMILARITY] = float(similarity)
    return scores


def candidate_of(
    c: Chunk, kb: str, score: float, ranks: dict[str, int], scores: dict[str, float]
) -> Candidate:
    """The candidate of a chunk. Lines are 1-based, so a LangChain store's chunk of line 0
    has unknown lines: ``None`` in the candidate (and in every citation made of it);
    without a byte span it has no byte keys."""
    known = c.line_start >= 1
    candidate: Candidate = {
        "chunk_id": c.id, "kb": kb, "source": c.source,
        "line_start": c.line_start if known else None, "line_end": c.line_end if known else None,
        "text": c.text, "section": c.section, "page": c.page, "score": score,
        "ranks": ranks, "scores": scores,
    }  # fmt: skip
    if c.byte_end > c.byte_start:
        candidate |= {"byte_start": c.byte_start, "byte_end": c.byte_end}
    return candidate


__all__ = [
    "SIMILARITY",
    "ChunkKey",
    "ListKey",
    "RankedLists",
    "candidate_of",
    "fuse",
    "list_scores",
    "normalised_rrf",
    "similarity_scale",
]
