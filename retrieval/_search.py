"""Search over one version of an index, whatever store holds it: each ranker gives a list
(:class:`~kbgraph.retrieval.storage.QueryRanking`); hybrid fuses those its weights name (by
default the registered rankers with a hybrid weight: vector and BM25) by RRF (ranks) or by a
convex combination of normalised scores (``SearchConfig.fusion``). The rankers themselves
live with their store (``kbgraph.retrieval.folder``, ``kbgraph.retrieval.postgres``)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path

import numpy as np

from kbgraph.errors import (
    ConfigError,
    ModelMismatchError,
)

from ._definitions import DEFINITION_DEPTH, DEFINITION_RANKER, definition_rows
from ._rankers import BM25, HYBRID, get_ranker, hybrid_rankers, lexical_rankers, search_modes
from .config import SearchConfig, SearchMode
from .filters import SearchFilters
from .ranking import convex_fuse, rrf_fuse, top_k_of
from .records import SearchResult
from .storage import EmbeddingMeta, QueryEmbedder, QueryRanking, RankerName, Snapshot

MAX_LIMIT = 100_000  # candidates of one ranker: deep fusion lists, not whole indexes


def search_config(
    query: str,
    *,
    top_k: int | None,
    mode: SearchMode | None,
    filters: SearchFilters | None,
    config: SearchConfig | None,
) -> SearchConfig:
    """The settings of one search, validated the same way whatever the mode: ``top_k`` and
    ``mode`` come from the arguments or from ``config`` (a value set in both must agree),
    every value within its bounds, the query not empty (``ConfigError`` says which)."""
    check_query(query)
    if config is not None and not isinstance(config, SearchConfig):
        raise ConfigError(f"config must be a SearchConfig, got {type(config).__name__}")
    _check_filters(filters)
    base = config or SearchConfig()
    values = base.model_dump()
    for name, given in (("top_k", top_k), ("mode", mode)):
        if given is None:
            continue
        held = getattr(base, name)
        if config is not None and name in config.model_fields_set and held not in (None, given):
            raise ConfigError(
                f"{name}={given!r} conflicts with config.{name}={held!r}; pass {name} either "
                "as an argument or in config, not both"
            )
        if isinstance(given, bool):
            raise ConfigError(f"{name} must not be a bool (got {given!r})")
        if name == "top_k" and not isinstance(given, int):
            # A str or float would be coerced by the settings model ("5" and 5.0 to 5).
            raise ConfigError(
                f"top_k must be a whole number from 1 to 1000, got {type(given).__name__} "
                f"{given!r}; e.g. top_k=5"
            )
        values[name] = given
    return SearchConfig.model_validate(values)  # ConfigError naming the bad setting


def check_query(query: object) -> None:
    if not isinstance(query, str):
        raise ConfigError(f"the query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise ConfigError("the query is empty; pass the words or the question to search for")


def check_rank_arguments(
    query: str, ranker: str, limit: int, filters: SearchFilters | None
) -> None:
    """``KnowledgeBase.rank``'s arguments, refused as ``search`` refuses its own."""
    check_query(query)
    get_ranker(ranker)  # ConfigError naming the registered rankers
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    _check_filters(filters)


def _check_filters(filters: object) -> None:
    if filters is not None and not isinstance(filters, SearchFilters):
        raise ConfigError(
            f"filters must be a SearchFilters (or None), got {type(filters).__name__}"
        )


def resolve_mode(has_vectors: bool, mode: SearchMode | None) -> SearchMode:
    """The mode a search runs: ``hybrid`` when the index has vectors, else BM25 alone."""
    if mode is None:
        return HYBRID if has_vectors else BM25.name
    if mode not in search_modes():
        raise ConfigError(f"unknown search mode {mode!r}; allowed: {', '.join(search_modes())}")
    if not has_vectors and (mode == HYBRID or get_ranker(mode).needs_vectors):
        raise ConfigError(
            f"search mode {mode!r} needs vectors but this index is lexical-only; use "
            f"--mode {' or '.join(lexical_rankers())} or re-index with an embedding model"
        )
    return mode


def check_query_model(index: EmbeddingMeta | None, query: EmbeddingMeta | None) -> None:
    """Refuse to rank the index's vectors with another model's query vector. Vectors of
    two models are not comparable even when their sizes agree (both 384, say): the scores
    would be noise, so the dimension check alone is not enough."""
    if index is None or query is None or same_model(index, query):
        return
    built = f"{index.provider}:{index.model}"
    again = index.spec or built
    raise ModelMismatchError(
        f"the index was built with the embedding model {built} but this search embeds "
        f"queries with {query.provider}:{query.model}; search with --embedding {again} "
        "(or leave --embedding out to use the index's model), or re-index with the new "
        "model (`kbgraph index FOLDER --embedding SPEC`)"
    )


def no_query_model(index: EmbeddingMeta | None) -> ModelMismatchError:
    """A search of an index with vectors, by a knowledge base given no embedding model:
    the vector ranker has no query vector (BM25 alone needs none)."""
    built = _model_name(index)
    again = (index.spec if index else None) or built
    return ModelMismatchError(
        f"the index was built with the embedding model {built}, but this search has no "
        "embedding model (--embedding none, embedding=None) to embed the query for the "
        "vector and hybrid modes; search with --mode bm25 (mode='bm25') for the words alone, "
        f"or leave --embedding out (or pass --embedding {again}) to use the index's model"
    )


def _model_name(meta: EmbeddingMeta | None) -> str:
    return "no embedding model (BM25 only)" if meta is None else f"{meta.provider}:{meta.model}"


def same_model(a: EmbeddingMeta | None, b: EmbeddingMeta | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return (a.provider, a.model) == (b.provider, b.model)


_REBUILD_EXPLICITLY = (
    "or rebuild it with the new one explicitly: `kbgraph index FOLDER --embedding SPEC "
    "--rebuild`, KnowledgeBase.index(), or RagSettings(rebuild_on_model_change=True)"
)
REBUILD_WITH_FLAG = (
    "or rebuild it with the new one on purpose: `kbgraph index FOLDER --embedding SPEC "
    "--rebuild` (KnowledgeBase.index(rebuild=True)), which embeds every chunk again"
)


def check_index_model(
    folder: Path,
    built: EmbeddingMeta | None,
    wanted: EmbeddingMeta | None,
    how_to_rebuild: str = _REBUILD_EXPLICITLY,
) -> None:
    """Refuse to update an index built with another model (or none) than ``wanted``: that
    would be a rebuild, and only an explicit one may change an index's model."""
    if same_model(built, wanted):
        return
    again = (built.spec or f"{built.provider}:{built.model}") if built else "none"
    raise ModelMismatchError(
        f"{folder} is indexed with {_model_name(built)} but this run uses {_model_name(wanted)}; "
        f"kbgraph does not rebuild an index with another model on its own. Leave --embedding "
        f"out (embedding 'auto') or pass {again!r} to use the index's model, {how_to_rebuild}"
    )


def once(embed_query: QueryEmbedder | None) -> QueryEmbedder | None:
    """``embed_query`` that embeds a query once however many rankers ask for it."""
    if embed_query is None:
        return None
    memo: dict[str, np.ndarray] = {}

    def embed(query: str) -> np.ndarray:
        if query not in memo:
            memo[query] = embed_query(query)
        return memo[query]

    return embed


def rank_one(
    ranking: QueryRanking, ranker: RankerName, limit: int, filters: SearchFilters | None
) -> list[SearchResult]:
    """One ranker's list as results (score and rank of that ranker only)."""
    keys, scores = ranking.top(ranker, limit, filters)
    return [
        SearchResult(chunk, s, ranks={ranker: r}, scores={ranker: s})
        for r, (chunk, s) in enumerate(zip(ranking.chunks(keys), scores, strict=True), 1)
    ]


def search(
    snapshot: Snapshot,
    query: str,
    config: SearchConfig,
    filters: SearchFilters | None,
    embed_query: QueryEmbedder | None,
) -> list[SearchResult]:
    mode = resolve_mode(snapshot.has_vectors, config.mode)
    with snapshot.ranking(query, once(embed_query)) as ranking:
        if mode != HYBRID:
            results = rank_one(ranking, mode, config.top_k, filters)
        elif config.fusion == "convex":
            results = _convex(ranking, query, config, filters)
        else:
            results = _rrf(ranking, query, config, filters)
    if config.score_threshold is not None:
        results = [r for r in results if r.score >= config.score_threshold]
    return results


def _definitions(ranking: QueryRanking, query: str, bm25: Sequence[int] | None) -> list[int]:
    """BM25's best rows that define an identifier the query names (``_definitions``);
    none when the fusion leaves BM25 out."""
    head = list((bm25 or [])[:DEFINITION_DEPTH])
    return definition_rows(head, ranking.chunks(head), query) if head else []


def _with_definitions(weights: dict[str, float], defined: list[int]) -> dict[str, float]:
    return {**weights, DEFINITION_RANKER: weights.get(BM25.name, 1.0)} if defined else weights


def _rrf(
    ranking: QueryRanking, query: str, config: SearchConfig, filters: SearchFilters | None
) -> list[SearchResult]:
    names = hybrid_rankers(config.weights)
    lists = {name: ranking.top(name, config.candidates(), filters) for name in names}
    raw = {name: dict(zip(*hits, strict=True)) for name, hits in lists.items()}
    rankings: dict[str, Sequence[Hashable]] = {name: keys for name, (keys, _) in lists.items()}
    defined = _definitions(ranking, query, lists[BM25.name][0] if BM25.name in lists else None)
    if defined:
        rankings[DEFINITION_RANKER] = defined
    weights = _with_definitions(names, defined)
    fused = rrf_fuse(rankings, k=config.rrf_k, weights=weights)[: config.top_k]
    rows = [int(item.key) for item in fused]  # type: ignore[call-overload]
    results = []
    for item, row, chunk in zip(fused, rows, ranking.chunks(rows), strict=True):
        scores: dict[str, float] = {n: raw[n][row] for n in names if row in raw[n]}
        ranks = {n: r for n, r in item.ranks.items() if n != DEFINITION_RANKER}
        results.append(SearchResult(chunk, item.score, ranks, scores))
    return results


def _convex(
    ranking: QueryRanking, query: str, config: SearchConfig, filters: SearchFilters | None
) -> list[SearchResult]:
    """Candidates are the union of each ranker's top ``candidates()``; each candidate is
    scored by *every* ranker (exact scores, not a default for the ones a list missed), the
    scores are min-max normalised over the candidates and combined by ``weights``. The
    definitions of identifiers the query names count as one more ranker (1 or 0)."""
    names = hybrid_rankers(config.weights)
    lists = {name: ranking.top(name, config.candidates(), filters)[0] for name in names}
    rows = sorted({row for keys in lists.values() for row in keys})
    if not rows:
        return []
    per_ranker: dict[str, np.ndarray] = {name: ranking.exact(name, rows) for name in names}
    defined = _definitions(ranking, query, lists.get(BM25.name))
    if defined:
        per_ranker[DEFINITION_RANKER] = np.isin(np.asarray(rows), defined).astype(np.float64)
    fused = convex_fuse(per_ranker, _with_definitions(names, defined))
    order, top = top_k_of(fused, config.top_k)
    rank_of = {name: {row: i for i, row in enumerate(keys, 1)} for name, keys in lists.items()}
    chosen = [rows[int(pos)] for pos in order]
    results = []
    for pos, score, chunk in zip(order, top, ranking.chunks(chosen), strict=True):
        row = rows[int(pos)]
        ranks: dict[str, int] = {n: rank_of[n][row] for n in names if row in rank_of[n]}
        exact: dict[str, float] = {name: float(per_ranker[name][pos]) for name in names}
        results.append(SearchResult(chunk, float(score), ranks, exact))
    return results
