"""A BEIR run through the real engine: write the corpus as a folder of files, index it with
``KnowledgeBase`` (chunker, embedder, embedding cache, stores and ranking code of a user's
index), run every query per mode and score the document rankings.

Modes: ``bm25``, ``vector`` and ``hybrid`` call ``KnowledgeBase.search``; ``graph`` invokes
the whole retrieval subgraph (``build_rag_graph``) in its heuristic mode (no chat model), so
that what RewriteQuery and Rerank do to the ranking is measured. Chunk scores become document
scores by the best chunk of each document (:func:`._metrics.max_pool`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import HumanMessage

from graphs.state import RagInput
from retrieval.config import ChunkConfig, FusionMethod, SearchConfig
from retrieval.errors import ConfigError
from retrieval.kb import KnowledgeBase

from ._folder import DOCS_DIR, INDEX_DIR, default_work_dir, write_corpus
from ._load import BeirData, load_beir
from ._metrics import max_pool, mean_metrics, percentile, query_metrics

Mode = Literal["bm25", "vector", "hybrid", "graph"]
MODES: tuple[Mode, ...] = ("bm25", "vector", "hybrid", "graph")
DOCS_PER_QUERY = 100  # recall@100 needs a hundred documents
RunProgress = Callable[[str, int, int], None]

BEIR_CHUNKING = ChunkConfig(chunk_size=1000, overlap=100)
"""Chunking of a BEIR run, chosen on SciFact train (``benchmarks/tune_beir.py``): about
what all-MiniLM-L6-v2 reads (256 word pieces), and larger chunks than the engine's default
500 characters suit BM25 on abstracts."""
FUSION_WEIGHTS: dict[FusionMethod, dict[str, float]] = {
    "convex": {"vector": 0.7, "bm25": 0.3},  # chosen on SciFact train
    "rrf": {"vector": 1.0, "bm25": 1.0},  # plain equal-weight RRF, the engine's default
}
BEIR_SEARCH = SearchConfig(
    top_k=300, candidates_per_ranker=300, fusion="convex", weights=FUSION_WEIGHTS["convex"]
)
"""Search settings of a BEIR run: ``top_k`` chunks per query, enough for a hundred
documents after pooling, fusion over lists as deep; hybrid fuses by convex combination with
the weights chosen on train (``--fusion rrf`` runs the engine's default fusion)."""


def search_settings(fusion: FusionMethod) -> SearchConfig:
    """:data:`BEIR_SEARCH` with ``fusion`` and its weights."""
    return BEIR_SEARCH.model_copy(update={"fusion": fusion, "weights": FUSION_WEIGHTS[fusion]})


GRAPH_TOP_K = 50


def _ignore(stage: str, done: int, total: int) -> None:
    """The default progress callback."""


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What a BEIR run is configured with. ``embedding`` ``None`` builds a lexical-only
    index (``bm25`` only); ``graph_top_k`` is the subgraph's ``top_k`` (its candidate pool
    is four times that)."""

    embedding: str | None = "local"
    chunking: ChunkConfig = BEIR_CHUNKING
    search: SearchConfig = BEIR_SEARCH
    graph_top_k: int = GRAPH_TOP_K
    limit_queries: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "embedding": self.embedding,
            "chunking": self.chunking.model_dump(mode="json"),
            "search": self.search.model_dump(mode="json", exclude={"mode"}),
            "graph_top_k": self.graph_top_k,
            "limit_queries": self.limit_queries,
        }


@dataclass(frozen=True, slots=True)
class IndexInfo:
    """One indexing run: wall time, what it embedded and what it reused."""

    index_s: float
    embedded: int
    reused: int
    documents: int
    chunks: int
    rebuilt: bool
    work_dir: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "index_s": round(self.index_s, 3),
            "embedded": self.embedded,
            "reused": self.reused,
            "documents": self.documents,
            "chunks": self.chunks,
            "rebuilt": self.rebuilt,
            "work_dir": self.work_dir,
        }


@dataclass
class ModeResult:
    """Scores of one mode: the means, the latency of each query (ms, query embedding
    included) and each query's own metrics."""

    mode: Mode
    metrics: dict[str, float]
    latencies_ms: list[float]
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)

    def summary(self, index_s: float) -> dict[str, float]:
        return {
            **{name: round(value, 4) for name, value in self.metrics.items()},
            "index_s": round(index_s, 3),
            "p50_ms": round(percentile(self.latencies_ms, 50), 2),
            "p95_ms": round(percentile(self.latencies_ms, 95), 2),
        }


@dataclass
class BeirRun:
    data: str
    split: str
    queries: int
    missing_queries: int
    settings: RunSettings
    index: IndexInfo
    results: dict[str, ModeResult]
    started_at: str

    def summary(self) -> dict[str, dict[str, float]]:
        """``{mode: {ndcg@10, recall@10, recall@100, mrr@10, index_s, p50_ms, p95_ms}}``."""
        return {mode: r.summary(self.index.index_s) for mode, r in self.results.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "split": self.split,
            "queries": self.queries,
            "missing_queries": self.missing_queries,
            "started_at": self.started_at,
            "settings": self.settings.to_dict(),
            "index": self.index.to_dict(),
            "results": self.summary(),
            "per_query": {mode: r.per_query for mode, r in self.results.items()},
        }


def open_knowledge_base(work_dir: Path, settings: RunSettings) -> KnowledgeBase:
    return KnowledgeBase(
        work_dir / DOCS_DIR,
        embedding=settings.embedding,
        index_dir=work_dir / INDEX_DIR,
        chunking=settings.chunking,
    )


def index_corpus(
    data: BeirData, work_dir: Path, settings: RunSettings, progress: RunProgress = _ignore
) -> tuple[KnowledgeBase, dict[str, str], IndexInfo]:
    """Write the documents and bring the index up to date; the time covers indexing only
    (scanning, chunking, embedding what the cache lacks, BM25, writing the generation)."""
    names = write_corpus(data.corpus, work_dir / DOCS_DIR)
    kb = open_knowledge_base(work_dir, settings)
    start = time.perf_counter()
    report = kb.index(progress=lambda e: progress(f"index:{e.stage}", e.done, e.total))
    elapsed = time.perf_counter() - start
    info = IndexInfo(
        index_s=elapsed,
        embedded=report.embedded,
        reused=report.reused,
        documents=report.stats.file_count,
        chunks=report.stats.chunk_count,
        rebuilt=report.rebuilt,
        work_dir=str(work_dir),
    )
    return kb, names, info


def _doc_ranking(hits: Sequence[tuple[str, float]], names: Mapping[str, str]) -> list[str]:
    docs = [(names[source], score) for source, score in hits if source in names]
    return max_pool(docs)[:DOCS_PER_QUERY]


def search_mode(
    kb: KnowledgeBase,
    queries: Mapping[str, str],
    names: Mapping[str, str],
    mode: Literal["bm25", "vector", "hybrid"],
    config: SearchConfig,
    progress: RunProgress = _ignore,
) -> tuple[dict[str, list[str]], list[float]]:
    """Document rankings and per-query latencies (ms) of one engine mode. One search runs
    before the timed ones, so loading the model and the index is not counted."""
    cfg = config.model_copy(update={"mode": mode})
    kb.search(next(iter(queries.values()), "warm up"), config=cfg)
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    for done, (qid, query) in enumerate(queries.items(), 1):
        start = time.perf_counter()
        results = kb.search(query, config=cfg)
        rankings[qid] = _doc_ranking([(r.chunk.source, r.score) for r in results], names)
        latencies.append((time.perf_counter() - start) * 1000)
        progress(mode, done, len(queries))
    return rankings, latencies


def _question(text: str) -> RagInput:
    """The subgraph's input: the query as the user's message (``("user", text)``)."""
    return {"messages": [HumanMessage(text)]}


def graph_mode(
    kb: KnowledgeBase,
    data_name: str,
    queries: Mapping[str, str],
    names: Mapping[str, str],
    settings: RunSettings,
    progress: RunProgress = _ignore,
) -> tuple[dict[str, list[str]], list[float]]:
    """The whole subgraph, heuristic mode, one invocation per query. The subgraph searches
    ``kb`` itself (registered for its folder), not a default-configured copy of it."""
    from graphs.searcher import SearcherRegistry
    from graphs.settings import RagSettings
    from graphs.subgraph import build_rag_graph

    spec = settings.embedding or "none"
    registry = SearcherRegistry()
    registry.register(kb.folder, None if spec == "none" else spec, kb)
    search = settings.search
    context = RagSettings(
        knowledge_bases=[{"folder": str(kb.folder), "name": data_name}],
        embedding=spec,
        chat_model=None,
        top_k=settings.graph_top_k,
        candidates_per_ranker=search.candidates_per_ranker,
        rrf_k=search.rrf_k,
        fusion=search.fusion,
        rrf_weights=dict(search.weights),
        search_mode="hybrid" if settings.embedding else "bm25",
        auto_index=False,  # indexed above, with the run's chunking
    )
    graph = build_rag_graph(registry=registry)
    graph.invoke(_question("warm up"), context=context)
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    for done, (qid, query) in enumerate(queries.items(), 1):
        start = time.perf_counter()
        out = graph.invoke(_question(query), context=context)
        hits = [(c["source"], float(c["score"])) for c in out.get("rag_candidates") or []]
        rankings[qid] = _doc_ranking(hits, names)
        latencies.append((time.perf_counter() - start) * 1000)
        progress("graph", done, len(queries))
    return rankings, latencies


def check_modes(modes: Sequence[str], embedding: str | None) -> list[Mode]:
    chosen = list(dict.fromkeys(modes)) or list(MODES)
    unknown = [m for m in chosen if m not in MODES]
    if unknown:
        raise ConfigError(f"unknown mode {unknown[0]!r}; allowed: {', '.join(MODES)}")
    if embedding is None and any(m in ("vector", "hybrid") for m in chosen):
        raise ConfigError(
            "modes vector and hybrid need an embedding model; pass --embedding local (or "
            "another spec), or run --mode bm25 / --mode graph only"
        )
    return [m for m in MODES if m in chosen]


def run_beir(
    beir_dir: str | Path,
    modes: Sequence[str] = MODES,
    *,
    split: str = "test",
    settings: RunSettings | None = None,
    work_dir: str | Path | None = None,
    progress: RunProgress = _ignore,
) -> BeirRun:
    """Index the corpus of ``beir_dir`` (reusing ``work_dir``, default under the cache
    folder) and score every query of ``split`` in each of ``modes``."""
    settings = settings or RunSettings()
    chosen = check_modes(modes, settings.embedding)
    data = load_beir(beir_dir, split)
    queries = dict(list(data.queries.items())[: settings.limit_queries])
    qrels = {qid: data.qrels[qid] for qid in queries}
    work = Path(work_dir).expanduser() if work_dir else default_work_dir(beir_dir)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    kb, names, info = index_corpus(data, work, settings, progress)
    results: dict[str, ModeResult] = {}
    try:
        for mode in chosen:
            if mode == "graph":
                rankings, latencies = graph_mode(kb, data.name, queries, names, settings, progress)
            else:
                rankings, latencies = search_mode(
                    kb, queries, names, mode, settings.search, progress
                )
            per_query = {qid: query_metrics(rankings.get(qid, []), qrels[qid]) for qid in qrels}
            results[mode] = ModeResult(mode, mean_metrics(rankings, qrels), latencies, per_query)
    finally:
        kb.close()
    return BeirRun(
        data=data.name,
        split=split,
        queries=len(queries),
        missing_queries=data.missing_queries,
        settings=settings,
        index=info,
        results=results,
        started_at=started,
    )


__all__ = [
    "BEIR_CHUNKING",
    "BEIR_SEARCH",
    "DOCS_PER_QUERY",
    "FUSION_WEIGHTS",
    "GRAPH_TOP_K",
    "MODES",
    "BeirRun",
    "IndexInfo",
    "Mode",
    "ModeResult",
    "RunProgress",
    "RunSettings",
    "check_modes",
    "graph_mode",
    "index_corpus",
    "open_knowledge_base",
    "run_beir",
    "search_mode",
    "search_settings",
]
