"""Search over an open generation: each ranker gives a list; hybrid fuses them by RRF (ranks)
or by a convex combination of normalised scores (``SearchConfig.fusion``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from kbgraph.errors import (
    ConfigError,
    DimensionMismatchError,
    IndexCorruptError,
    ModelMismatchError,
)

from .config import SearchConfig, SearchMode
from .filters import SearchFilters
from .ranking import check_mask, convex_fuse, dot_scores, rrf_fuse, top_k_of
from .records import SearchResult
from .store import REPAIR, EmbeddingMeta, IndexReader

QueryEmbedder = Callable[[str], np.ndarray]
RANKERS = ("vector", "bm25")
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
    if ranker not in RANKERS:
        raise ConfigError(f"unknown ranker {ranker!r}; allowed: {', '.join(RANKERS)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    _check_filters(filters)


def _check_filters(filters: object) -> None:
    if filters is not None and not isinstance(filters, SearchFilters):
        raise ConfigError(
            f"filters must be a SearchFilters (or None), got {type(filters).__name__}"
        )


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


def _model_name(meta: EmbeddingMeta | None) -> str:
    return "no embedding model (BM25 only)" if meta is None else f"{meta.provider}:{meta.model}"


def same_model(a: EmbeddingMeta | None, b: EmbeddingMeta | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return (a.provider, a.model) == (b.provider, b.model)


def check_index_model(
    folder: Path, built: EmbeddingMeta | None, wanted: EmbeddingMeta | None
) -> None:
    """Refuse to update an index built with another model (or none) than ``wanted``: that
    would be a rebuild, and only an explicit one may change an index's model."""
    if same_model(built, wanted):
        return
    again = (built.spec or f"{built.provider}:{built.model}") if built else "none"
    raise ModelMismatchError(
        f"{folder} is indexed with {_model_name(built)} but this run uses {_model_name(wanted)}; "
        f"kbgraph does not rebuild an index with another model on its own. Pass embedding "
        f"'auto' (or {again!r}) to use the index's model, or rebuild it with the new one "
        "explicitly: `kbgraph index FOLDER --embedding SPEC`, KnowledgeBase.index(), or "
        "RagSettings(rebuild_on_model_change=True)"
    )


def ranker_scores(
    reader: IndexReader, query: str, ranker: str, embed_query: QueryEmbedder | None
) -> np.ndarray | None:
    """One ranker's score of every chunk row (None: the index has no vectors)."""
    if ranker == "bm25":
        return _finite(reader.bm25.scores(query), reader, "bm25")
    if ranker != "vector":
        raise ConfigError(f"unknown ranker {ranker!r}; allowed: {', '.join(RANKERS)}")
    if reader.vectors is None or embed_query is None:
        return None
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
    return _finite(dot_scores(reader.vectors, vector), reader, "vectors.bin")


def _finite(scores: np.ndarray, reader: IndexReader, name: str) -> np.ndarray:
    """A NaN or infinite score comes from a damaged row: it would sort anywhere and push
    real matches out of the list, so it is reported, not ranked."""
    if not np.isfinite(scores).all():
        row = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise IndexCorruptError(
            f"{reader.path / name}: row {row} gives a score that is not a number "
            f"(damaged); {REPAIR}"
        )
    return scores


def select(
    scores: np.ndarray, ranker: str, limit: int, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``limit`` best allowed rows of one ranker, best first, ties by row. BM25 returns
    only rows with a score > 0: a chunk sharing no term with the query is not a match."""
    mask = check_mask(mask, len(scores))
    allowed = None if mask is None else np.flatnonzero(mask)
    if ranker == "bm25":
        positive = np.flatnonzero(scores > 0)
        allowed = positive if allowed is None else np.intersect1d(allowed, positive)
    return top_k_of(scores, limit, allowed)


def rank_one(
    reader: IndexReader,
    query: str,
    ranker: str,
    limit: int,
    mask: np.ndarray | None,
    embed_query: QueryEmbedder | None,
) -> list[tuple[int, float]]:
    """(chunk row, score) of one ranker, best first, over the allowed chunks only."""
    scores = ranker_scores(reader, query, ranker, embed_query)
    if scores is None:
        return []
    idx, best = select(scores, ranker, limit, mask)
    return [(int(i), float(s)) for i, s in zip(idx, best, strict=True)]


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
            SearchResult(reader.chunk(i), s, ranks={mode: r}, scores={mode: s})
            for r, (i, s) in enumerate(hits, 1)
        ]
    elif config.fusion == "convex":
        results = _convex(reader, query, config, mask, embed_query)
    else:
        results = _rrf(reader, query, config, mask, embed_query)
    if config.score_threshold is not None:
        results = [r for r in results if r.score >= config.score_threshold]
    return results


def _rrf(
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
        results.append(SearchResult(reader.chunk(row), item.score, dict(item.ranks), scores))
    return results


def _convex(
    reader: IndexReader,
    query: str,
    config: SearchConfig,
    mask: np.ndarray | None,
    embed_query: QueryEmbedder | None,
) -> list[SearchResult]:
    """Candidates are the union of each ranker's top ``candidates()``; each candidate is
    scored by *every* ranker (exact scores, not a default for the ones a list missed), the
    scores are min-max normalised over the candidates and combined by ``weights``."""
    full = {name: ranker_scores(reader, query, name, embed_query) for name in RANKERS}
    lists: dict[str, np.ndarray] = {}
    for name, all_scores in full.items():
        if all_scores is not None:
            lists[name] = select(all_scores, name, config.candidates(), mask)[0]
    if not lists:
        return []
    rows = np.unique(np.concatenate(list(lists.values())))
    per_ranker = {name: full[name][rows] for name in lists}  # type: ignore[index]
    fused = convex_fuse(per_ranker, config.weights)
    order, top = top_k_of(fused, config.top_k)
    rank_of = {name: {int(r): i for i, r in enumerate(hits, 1)} for name, hits in lists.items()}
    results = []
    for pos, score in zip(order, top, strict=True):
        row = int(rows[pos])
        ranks = {name: rank_of[name][row] for name in lists if row in rank_of[name]}
        exact = {name: float(per_ranker[name][pos]) for name in lists}
        results.append(SearchResult(reader.chunk(row), float(score), ranks, exact))
    return results
