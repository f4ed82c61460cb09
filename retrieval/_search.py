"""Search over one version of an index, whatever store holds it: each ranker gives a list
(:class:`~kbgraph.retrieval.storage.QueryRanking`); hybrid fuses them by RRF (ranks) or by a
convex combination of normalised scores (``SearchConfig.fusion``). The folder index's
rankers are here too (:class:`FolderRanking`, numpy over memory-mapped files)."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
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
from .records import Chunk, SearchResult
from .storage import RANKERS, QueryEmbedder, QueryRanking, RankerName, Snapshot
from .store import REPAIR, EmbeddingMeta, IndexReader, _ann

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


def resolve_mode(has_vectors: bool, mode: SearchMode | None) -> SearchMode:
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


def check_query_vector(vector: np.ndarray, dims: int, embedding: EmbeddingMeta | None) -> None:
    """The query vector must have the index's size (another model would give noise)."""
    if vector.shape[-1] != dims:
        raise DimensionMismatchError(
            f"the index was built with {dims}-dim vectors "
            f"({embedding.provider if embedding else '?'}:"
            f"{embedding.model if embedding else '?'}) but the query model gives "
            f"{vector.shape[-1]}; search with the same model or re-index with --rebuild"
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


class FolderRanking:
    """One query over an open folder generation: every ranker scores every row once (a BLAS
    product over the memory-mapped vectors, or a sum of BM25 columns); filters become a
    mask applied before selection."""

    def __init__(self, reader: IndexReader, query: str, embed_query: QueryEmbedder | None):
        self._reader, self._query, self._embed = reader, query, embed_query
        self._scores: dict[str, np.ndarray | None] = {}

    def scores(self, ranker: str) -> np.ndarray | None:
        """The ranker's score of every row (None: the index has no vectors)."""
        if ranker not in self._scores:
            self._scores[ranker] = self._score_all(ranker)
        return self._scores[ranker]

    def _score_all(self, ranker: str) -> np.ndarray | None:
        reader = self._reader
        if ranker == "bm25":
            return _finite(reader.bm25.scores(self._query), reader, "bm25")
        if ranker != "vector":
            raise ConfigError(f"unknown ranker {ranker!r}; allowed: {', '.join(RANKERS)}")
        vector = self._query_vector()
        if vector is None or reader.vectors is None:
            return None
        return _cosines(dot_scores(reader.vectors, vector), reader)

    def _query_vector(self) -> np.ndarray | None:
        reader = self._reader
        if reader.vectors is None or self._embed is None:
            return None
        vector = self._embed(self._query)
        check_query_vector(vector, int(reader.vectors.shape[1]), reader.meta.embedding)
        return np.ascontiguousarray(vector, dtype=np.float32)

    def _scored(
        self, rows: np.ndarray, vector: np.ndarray, limit: int
    ) -> tuple[list[int], list[float]]:
        """The ``limit`` best of ``rows`` (ascending), scored exactly from vectors.bin."""
        assert self._reader.vectors is not None
        self._reader.check_vector_rows(rows)
        scores = dot_scores(np.asarray(self._reader.vectors[rows]), vector)
        best, top = top_k_of(scores, limit)
        return [int(rows[i]) for i in best], [float(s) for s in top]

    def _ann_top(self, limit: int, mask: np.ndarray | None) -> tuple[list[int], list[float]] | None:
        """The vector list from the generation's HNSW graph (None: no graph, or the exact
        product is the cheaper way). Filters: the graph is asked for more candidates than
        ``limit`` (the allowed share's inverse, doubled until ``limit`` allowed ones come
        back); few allowed rows are scored exactly instead. Candidates are scored exactly."""
        ann = getattr(self._reader, "ann", None)
        vector = self._query_vector()
        if ann is None or vector is None:
            return None
        total = len(ann.keys)
        allowed = total if mask is None else int(np.count_nonzero(mask))
        if mask is not None and allowed <= _ann.ANN_MIN_ROWS:
            return self._scored(np.flatnonzero(mask), vector, limit)
        want = _ann.overfetch(limit, total, allowed)
        while want <= total // 4:
            rows = ann.candidates(vector, want)
            if mask is not None:
                rows = rows[mask[rows]]
            if len(rows) >= min(limit, allowed):
                return self._scored(np.sort(rows), vector, limit)
            want *= 2
        return None  # too few allowed among the nearest: the exact product over all rows

    def top(
        self, ranker: RankerName, limit: int, filters: SearchFilters | None
    ) -> tuple[list[int], list[float]]:
        if ranker == "vector" and getattr(self._reader, "ann", None) is not None:
            found = self._ann_top(limit, self._reader.mask(filters))
            if found is not None:
                return found
        scores = self.scores(ranker)
        if scores is None:
            return [], []
        rows, best = select(scores, ranker, limit, self._reader.mask(filters))
        if ranker == "vector":  # every row the list ranks by is checked, not only in open
            self._reader.check_vector_rows(rows)
        return [int(i) for i in rows], [float(s) for s in best]

    def exact(self, ranker: RankerName, keys: Sequence[int]) -> np.ndarray:
        vector = self._query_vector() if ranker == "vector" else None
        if vector is not None:
            self._reader.check_vector_rows(keys)
        if vector is not None and "vector" not in self._scores:  # a few rows, not all
            rows = np.asarray(keys, dtype=np.int64)
            assert self._reader.vectors is not None
            return dot_scores(np.asarray(self._reader.vectors[rows]), vector).astype(np.float64)
        scores = self.scores(ranker)
        if scores is None:
            return np.zeros(len(keys), dtype=np.float64)
        return scores[np.asarray(keys, dtype=np.int64)].astype(np.float64)

    def chunks(self, keys: Sequence[int]) -> list[Chunk]:
        return [self._reader.chunk(int(i)) for i in keys]


_COSINE_BOUND = 1.0 + 1e-3  # unit vectors: |cosine| <= 1, up to float32 rounding


def _cosines(scores: np.ndarray, reader: IndexReader) -> np.ndarray:
    """Cosines of unit vectors lie in [-1, 1]: a score outside (or NaN) comes from a
    damaged row, which would rank first for every query. Two reductions, no copy."""
    if len(scores) and not (
        float(scores.min()) >= -_COSINE_BOUND and float(scores.max()) <= _COSINE_BOUND
    ):
        bad = ~(np.abs(scores) <= _COSINE_BOUND)
        row = int(np.flatnonzero(bad)[0])
        raise IndexCorruptError(
            f"{reader.path / 'vectors.bin'}: row {row} gives the score {float(scores[row]):.4g}, "
            f"which no unit vector gives (damaged); {REPAIR}"
        )
    return scores


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


@contextmanager
def folder_ranking(
    reader: IndexReader, query: str, embed_query: QueryEmbedder | None
) -> Iterator[FolderRanking]:
    yield FolderRanking(reader, query, embed_query)


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
        if mode != "hybrid":
            results = rank_one(ranking, mode, config.top_k, filters)
        elif config.fusion == "convex":
            results = _convex(ranking, config, filters)
        else:
            results = _rrf(ranking, config, filters)
    if config.score_threshold is not None:
        results = [r for r in results if r.score >= config.score_threshold]
    return results


def _rrf(
    ranking: QueryRanking, config: SearchConfig, filters: SearchFilters | None
) -> list[SearchResult]:
    lists = {name: ranking.top(name, config.candidates(), filters) for name in RANKERS}
    raw = {name: dict(zip(*hits, strict=True)) for name, hits in lists.items()}
    rankings: dict[str, Sequence[Hashable]] = {name: keys for name, (keys, _) in lists.items()}
    fused = rrf_fuse(rankings, k=config.rrf_k, weights=config.weights)[: config.top_k]
    rows = [int(item.key) for item in fused]  # type: ignore[call-overload]
    results = []
    for item, row, chunk in zip(fused, rows, ranking.chunks(rows), strict=True):
        scores: dict[str, float] = {n: raw[n][row] for n in RANKERS if row in raw[n]}
        results.append(SearchResult(chunk, item.score, dict(item.ranks), scores))
    return results


def _convex(
    ranking: QueryRanking, config: SearchConfig, filters: SearchFilters | None
) -> list[SearchResult]:
    """Candidates are the union of each ranker's top ``candidates()``; each candidate is
    scored by *every* ranker (exact scores, not a default for the ones a list missed), the
    scores are min-max normalised over the candidates and combined by ``weights``."""
    lists = {name: ranking.top(name, config.candidates(), filters)[0] for name in RANKERS}
    rows = sorted({row for keys in lists.values() for row in keys})
    if not rows:
        return []
    per_ranker: dict[str, np.ndarray] = {name: ranking.exact(name, rows) for name in RANKERS}
    fused = convex_fuse(per_ranker, config.weights)
    order, top = top_k_of(fused, config.top_k)
    rank_of = {name: {row: i for i, row in enumerate(keys, 1)} for name, keys in lists.items()}
    chosen = [rows[int(pos)] for pos in order]
    results = []
    for pos, score, chunk in zip(order, top, ranking.chunks(chosen), strict=True):
        row = rows[int(pos)]
        ranks: dict[str, int] = {n: rank_of[n][row] for n in RANKERS if row in rank_of[n]}
        exact: dict[str, float] = {name: float(per_ranker[name][pos]) for name in RANKERS}
        results.append(SearchResult(chunk, float(score), ranks, exact))
    return results
