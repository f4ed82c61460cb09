"""Ranking primitives as pure functions: top-k selection, vector top-k over a (memory-mapped)
matrix, Reciprocal Rank Fusion and convex score fusion.

Filters are applied *before* selection everywhere: a masked row can never be returned, and
top-k is taken over the allowed rows only, so a filter never leaves fewer than ``k`` results
while more than ``k`` allowed rows exist.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from kbgraph.errors import ConfigError, DimensionMismatchError

from ._blas import single_blas_thread

N = TypeVar("N", bound=Hashable)
"""The name of a ranking in a fusion: a ranker's name, or a caller's typed key."""

# Rows per BLAS call. One call is fastest; blocks only keep each call far below the 2**31
# rows that BLAS builds with 32-bit integers accept (numpy falls back to a slow loop beyond).
_DOT_BLOCK_ROWS = 1 << 24


def check_k(k: int) -> int:
    if k < 0:
        raise ConfigError(f"k must be 0 or more, got {k}; pass the number of results wanted.")
    return int(k)


def check_mask(mask: np.ndarray | None, n: int) -> np.ndarray | None:
    """A boolean array with one entry per row, or None (no restriction)."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.dtype != np.bool_ or mask.shape != (n,):
        raise ConfigError(
            f"mask must be a boolean array of shape ({n},), got dtype {mask.dtype} and shape "
            f"{mask.shape}; build it with one True/False per indexed row."
        )
    return mask


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest ``scores``, best first; equal scores come in position
    order, so the result is deterministic. ``np.argpartition`` finds the k best in O(n) and
    only those k are sorted; when the k-th value is tied beyond the k, the tied entries that
    get in are the first ones by position (one more O(n) pass, no larger sort)."""
    n = len(scores)
    k = min(check_k(k), n)
    if k == 0:
        return np.empty(0, dtype=np.int64)
    # Selecting the k smallest of the negated scores: numpy's introselect is several times
    # slower for a kth near the end of the array, above all with many equal values (the
    # zeros of BM25).
    neg = np.negative(scores)
    if k < n:
        best = np.argpartition(neg, k - 1)[:k]
        kth = neg[best].max()
        if np.count_nonzero(neg <= kth) > k:
            above = np.flatnonzero(neg < kth)
            tied = np.flatnonzero(neg == kth)[: k - len(above)]
            best = np.concatenate((above, tied))
    else:
        best = np.arange(n, dtype=np.int64)
    order = np.lexsort((best, neg[best]))
    return best[order].astype(np.int64, copy=False)


def top_k_of(
    scores: np.ndarray, k: int, candidates: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k restricted to ``candidates`` (ascending row ids; None: every row). Returns the
    row ids (int64) and their scores (float32), best first, ties by row id."""
    if candidates is None:
        best = top_k_indices(scores, k)
    else:
        best = candidates[top_k_indices(scores[candidates], k)].astype(np.int64, copy=False)
    return best, scores[best].astype(np.float32, copy=False)


def dot_scores(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` in the matrix's dtype, without copying ``matrix`` (an ``np.memmap``
    stays a view: the query is cast to the matrix's dtype, never the other way round), on
    one BLAS thread."""
    if matrix.ndim != 2:
        raise ConfigError(f"matrix must be 2-D (rows, dims), got shape {matrix.shape}.")
    n, dims = matrix.shape
    query = np.ascontiguousarray(query, dtype=matrix.dtype)
    if query.shape != (dims,):
        raise DimensionMismatchError(
            f"query vector has shape {query.shape} but the index holds {dims}-dimensional "
            "vectors; embed the query with the model the index was built with."
        )
    rows = np.asarray(matrix)  # base-class view: memmap's Python-level wrappers stay out
    out = np.empty(n, dtype=matrix.dtype)
    with single_blas_thread():  # see retrieval/_blas.py: spinning BLAS threads slow the model
        for start in range(0, n, _DOT_BLOCK_ROWS):
            stop = min(start + _DOT_BLOCK_ROWS, n)
            np.matmul(rows[start:stop], query, out=out[start:stop])
    return out


def top_k_dot(
    matrix: np.ndarray, query: np.ndarray, k: int, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows of ``matrix`` with the largest dot product with ``query`` (cosine
    similarity when both are L2-normalised), best first, ties by row id. ``mask`` (one bool
    per row) restricts the rows before selection. Returns row ids (int64), scores (float32)."""
    check_k(k)
    scores = dot_scores(matrix, query)
    mask = check_mask(mask, len(scores))
    candidates = None if mask is None else np.flatnonzero(mask)
    return top_k_of(scores, k, candidates)


@dataclass(frozen=True, slots=True)
class FusedItem(Generic[N]):
    """One fused result: its fused ``score`` and the 1-based rank each ranking gave it
    (rankings that did not return it are absent), by the rankings' own names."""

    key: Hashable
    score: float
    ranks: dict[N, int] = field(default_factory=dict)


def rrf_contribution(rank: int, k: int, weight: float = 1.0) -> float:
    """Reciprocal Rank Fusion term ``w / (k + rank)``, rank 1-based (Cormack, Clarke &
    Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and individual Rank Learning
    Methods", SIGIR 2009; k = 60 in the paper)."""
    return weight / (k + rank)


def rrf_fuse(
    rankings: Mapping[N, Sequence[Hashable]],
    *,
    k: int = 60,
    weights: Mapping[N, float] | None = None,
) -> list[FusedItem[N]]:
    """Fuse ranked lists: ``score(d) = Σ_r w_r / (k + rank_r(d))``, ranks 1-based (Cormack et
    al. 2009). Rankings are named by any hashable (a ranker name, a typed key); ``weights``
    by the same names, 1 for a ranking it does not name. A key listed twice in one ranking
    keeps its best rank. Ties are broken by the best single rank, then by first appearance
    (rankings in mapping order, each best first)."""
    check_k(k)
    ranks: dict[Hashable, dict[N, int]] = {}
    for name, ranking in rankings.items():
        for rank, key in enumerate(ranking, start=1):
            ranks.setdefault(key, {}).setdefault(name, rank)
    resolved = {name: _checked_weight(name, weights) for name in rankings}
    items: list[tuple[float, int, int, FusedItem[N]]] = []
    for seen, (key, by_name) in enumerate(ranks.items()):
        # fsum is exact-then-rounded, so items with the same multiset of contributions tie
        # exactly whatever order the rankings list them in.
        score = math.fsum(rrf_contribution(r, k, resolved[n]) for n, r in by_name.items())
        items.append((-score, min(by_name.values()), seen, FusedItem(key, score, by_name)))
    items.sort(key=lambda item: item[:3])
    return [item[3] for item in items]


def min_max(scores: np.ndarray) -> np.ndarray:
    """``(s - min) / (max - min)`` in float64; a constant array (no ordering to keep) maps to
    zeros. The "MM" normalisation of Bruch et al. 2023 (see :func:`convex_fuse`)."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    if not high > low:
        return np.zeros_like(values)
    return (values - low) / (high - low)


def convex_fuse(
    scores: Mapping[str, np.ndarray], weights: Mapping[str, float] | None = None
) -> np.ndarray:
    """Convex combination of min-max normalised scores over one candidate set:
    ``Σ_r w_r · mm(s_r) / Σ_r w_r``, so the result lies in 0..1. ``scores[r][i]`` is ranker
    ``r``'s exact score of candidate ``i`` (every array aligned on the same candidates).

    Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS
    2023: a convex combination of normalised scores beats RRF in and out of domain and needs
    only a handful of labelled queries to set its weight; RRF discards the score gaps that
    make one ranker sure and the other unsure."""
    if not scores:
        return np.zeros(0, dtype=np.float64)
    lengths = {len(values) for values in scores.values()}
    if len(lengths) != 1:
        raise ConfigError(
            f"every ranker must score the same candidates; got lengths {sorted(lengths)}."
        )
    resolved = {name: _checked_weight(name, weights) for name in scores}
    total = math.fsum(resolved.values())
    if total <= 0:
        raise ConfigError(
            f"fusion weights {resolved} sum to 0; give at least one ranker a weight > 0."
        )
    fused = np.zeros(lengths.pop(), dtype=np.float64)
    for name, values in scores.items():
        fused += resolved[name] * min_max(values)
    return fused / total


def _checked_weight(name: Hashable, weights: Mapping[Any, float] | None) -> float:
    weight = float(weights.get(name, 1.0)) if weights else 1.0
    if not math.isfinite(weight) or weight < 0:
        raise ConfigError(
            f"weight of ranking {name!r} is {weight}; weights must be finite and >= 0 "
            "(0 switches a ranking off)."
        )
    return weight


__all__ = [
    "FusedItem",
    "check_k",
    "check_mask",
    "convex_fuse",
    "dot_scores",
    "min_max",
    "rrf_contribution",
    "rrf_fuse",
    "top_k_dot",
    "top_k_indices",
    "top_k_of",
]
