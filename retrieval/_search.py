"""Search over an open generation: each ranker gives a list, hybrid fuses them by RRF."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .config import SearchConfig, SearchMode
from .errors import ConfigError, DimensionMismatchError
from .filters import SearchFilters
from .ranking import rrf_fuse, top_k_dot
from .records import SearchResult
from .store import IndexReader

QueryEmbedder = Callable[[str], np.ndarray]
RANKERS = ("vector", "bm25")


def resolve_mode(reader: IndexReader, mode: SearchMode | None) -> SearchMode:
    has_vectors = reader.vectors is not None
    if mode is None:
        return "hybrid" if has_vectors else "bm25"
    if mode in ("vector", "hybrid") and not has_vectors:
        raise ConfigError(
            f"search mode {mode!r} needs vectors but this index is lexical-only; "
            "use --mode bm25 or re-index with an embedding model"
        )
    if mode not in ("vector", "bm25", "hybrid"):
        raise ConfigError(f"unknown search mode {mode!r}; allowed: vector, bm25, hybrid")
    return mode


def rank_one(
    reader: IndexReader,
    query: str,
    ranker: str,
    limit: int,
    mask: np.ndarray | None,
    embed_query: QueryEmbedder | None,
) -> list[tuple[int, float]]:
    """(chunk row, score) of one ranker, best first, over the allowed chunks only."""
    if ranker == "bm25":
        idx, scores = reader.bm25.top_k(query, limit, mask=mask)
    elif ranker == "vector":
        if reader.vectors is None or embed_query is None:
            return []
        vector = embed_query(query)
        dims = int(reader.vectors.shape[1])
        if vector.shape[-1] != dims:
            embedding = reader.meta.embedding
            raise DimensionMismatchError(
                f"the index was built with {dims}-dim vectors "
                f"({embedding.provider if embedding else '?'}:"
                f"{embedding.model if embedding else '?'}) but the query model gives "
                f"{vector.shape[-1]}; search with the same model or re-index with --rebuild"
            )
        idx, scores = top_k_dot(reader.vectors, vector, limit, mask=mask)
    else:
        raise ConfigError(f"unknown ranker {ranker!r}; allowed: {', '.join(RANKERS)}")
    return [(int(i), float(s)) for i, s in zip(idx, scores, strict=True)]


def search(
    reader: IndexReader,
    query: str,
    config: SearchConfig,
    filters: SearchFilters | None,
    embed_query: QueryEmbedder | None,
) -> list[SearchResult]:
    mode = resolve_mode(reader, config.mode)
    mask = reader.mask(filters)
    if mode != "hybrid":
        hits = rank_one(reader, query, mode, config.top_k, mask, embed_query)
        results = [
            SearchResult(reader.chunks.get(i), s, ranks={mode: r}, scores={mode: s})
            for r, (i, s) in enumerate(hits, 1)
        ]
    else:
        results = _hybrid(reader, query, config, mask, embed_query)
    if config.score_threshold is not None:
        results = [r for r in results if r.score >= config.score_threshold]
    return results


def _hybrid(
    reader: IndexReader,
    query: str,
    config: SearchConfig,
    mask: np.ndarray | None,
    embed_query: QueryEmbedder | None,
) -> list[SearchResult]:
    lists = {
        name: rank_one(reader, query, name, config.candidates(), mask, embed_query)
        for name in RANKERS
    }
    raw = {name: dict(hits) for name, hits in lists.items()}
    fused = rrf_fuse(
        {name: [i for i, _ in hits] for name, hits in lists.items()},
        k=config.rrf_k,
        weights=config.weights,
    )
    results = []
    for item in fused[: config.top_k]:
        row = int(item.key)  # type: ignore[call-overload]
        scores = {name: raw[name][row] for name in RANKERS if row in raw[name]}
        results.append(SearchResult(reader.chunks.get(row), item.score, dict(item.ranks), scores))
    return results
