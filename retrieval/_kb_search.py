"""A knowledge base's searches: the arguments checked, then the live version ranked (one
ranker, or fused: :mod:`._search`) with this knowledge base's query model."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._kb_model import EmbeddingModel
from ._kb_reader import LiveReader
from ._search import check_rank_arguments, once, rank_one, resolve_mode, search_config
from ._search import search as search_snapshot
from .config import SearchConfig, SearchMode
from .filters import SearchFilters
from .records import SearchResult
from .storage import RankerName, Snapshot

Embed = Callable[[str], np.ndarray]


def search(
    live: LiveReader,
    model: EmbeddingModel,
    embed: Embed,
    query: str,
    *,
    top_k: int | None,
    mode: SearchMode | None,
    filters: SearchFilters | None,
    config: SearchConfig | None,
) -> list[SearchResult]:
    """``KnowledgeBase.search``; ``embed`` embeds a query (the model's, or a caller's)."""
    cfg = search_config(query, top_k=top_k, mode=mode, filters=filters, config=config)
    return live.reading(
        lambda reader: search_snapshot(
            reader, query, cfg, filters, model.query_embedder(reader, embed)
        )
    )


def rank(
    live: LiveReader,
    model: EmbeddingModel,
    embed: Embed,
    query: str,
    ranker: RankerName,
    *,
    limit: int,
    filters: SearchFilters | None,
) -> list[SearchResult]:
    """``KnowledgeBase.rank``: one ranker's list."""
    check_rank_arguments(query, ranker, limit, filters)

    def rank(reader: Snapshot) -> list[SearchResult]:
        resolve_mode(reader.has_vectors, ranker)  # a ranker that needs vectors: refused
        with reader.ranking(query, once(model.query_embedder(reader, embed))) as ranking:
            return rank_one(ranking, ranker, limit, filters)

    return live.reading(rank)


__all__ = ["Embed", "rank", "search"]
