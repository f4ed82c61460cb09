"""A BEIR run through the real engine: write the corpus as a folder of files, index it with
``KnowledgeBase`` (chunker, embedder, embedding cache, stores and ranking code of a user's
index), run every query per mode and score the document rankings.

Modes (:func:`modes`, from the ranker registry): each ranker (``bm25``, ``title``,
``vector``, ...) and ``hybrid`` call ``KnowledgeBase.search``; ``graph`` invokes
the whole retrieval subgraph in its heuristic mode (:mod:`._graph`). Chunk scores become
document scores by the best chunk of each document (:func:`._metrics.max_pool`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from kbgraph.errors import ConfigError
from kbgraph.retrieval import (
    HYBRID,
    ChunkConfig,
    KnowledgeBase,
    SearchConfig,
    describe_store,
    rankers,
)
from kbgraph.retrieval._internal import FusionMethod

from ._folder import DOCS_DIR, INDEX_DIR, DocFormat, default_work_dir, write_corpus
from ._graph import graph_rankings
from ._load import BeirData, load_beir
from ._metrics import max_pool, mean_metrics, percentile, query_metrics, without_query_id

Mode = str
"""A registered ranker's name, ``hybrid``, or ``graph`` (:func:`modes`)."""
GRAPH = "graph"
IndexKind = Literal["full", "incremental"]
DOCS_PER_QUERY = 100  # recall@100 needs a hundred documents
RunProgress = Callable[[str, int, int], None]

BEIR_DOC_FORMAT: DocFormat = "md"
BEIR_CHUNKING = ChunkConfig(chunk_size=2000, overlap=200)
"""Chunking of a BEIR run, chosen on SciFact *train* only (``benchmarks/tune_beir.py``; the
command and its tables are in ``benchmarks/README.md``, "How the BEIR run settings were
chosen"). One index serves every ranker, so one chunking has to suit all of them: BM25
gains from chunks that hold a whole abstract (train nDCG@10 0.690 at 1000 characters,
0.699 at 2000), vectors from chunks all-MiniLM-L6-v2 reads whole (256 word pieces, ~1000
characters: 0.679 at 1000, 0.663 at 2000). 2000/200 is the chunking whose smallest margin
over the issue's peers on train (bm25s, whole-document MiniLM, their RRF) is largest
(+0.0024 on each of bm25 and vector, +0.017 hybrid); 1000/100 fell 0.006 short of bm25s.
``md`` documents (``# title``) beat ``txt`` for BM25 at every size."""
FUSION_WEIGHTS: dict[FusionMethod, dict[str, float]] = {
    "convex": {"vector": 0.5, "bm25": 0.5},
    "rrf": {"vector": 1.0, "bm25": 1.0},  # plain equal-weight RRF, the engine's default
}
"""Convex fusion with equal weights over 100 candidates per ranker: the best hybrid of the
chosen chunking on train (nDCG@10 0.7374; alpha 0.4 / 0.6: 0.7350 / 0.7359; RRF with any
vector weight from 0.5 to 2: 0.707-0.722)."""
BEIR_SEARCH = SearchConfig(
    top_k=300, candidates_per_ranker=100, fusion="convex", weights=FUSION_WEIGHTS["convex"]
)
"""Search settings of a BEIR run: ``top_k`` chunks per query, enough for a hundred
documents after pooling; fusion over each ranker's best 100 (chosen on train, as above);
``--fusion rrf`` runs the engine's default fusion over the same lists."""


def search_settings(fusion: FusionMethod) -> SearchConfig:
    """:data:`BEIR_SEARCH` with ``fusion`` and its weights."""
    return BEIR_SEARCH.model_copy(update={"fusion": fusion, "weights": FUSION_WEIGHTS[fusion]})


GRAPH_TOP_K = 50


def _ignore(stage: str, done: int, total: int) -> None:
    """The default progress callback."""


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What a BEIR run is configured with. ``embedding`` ``None`` builds a lexical-only
    index (``bm25`` and ``graph`` only); ``graph_top_k`` is the subgraph's ``top_k`` (its
    candidate pool is four times that); ``ignore_identical_ids`` drops a retrieved document
    whose id is the query's id, as BEIR does by default; ``store`` is where the index lives
    (None: the folder index in the work folder; a PostgreSQL URL)."""

    embedding: str | None = "local"
    doc_format: DocFormat = BEIR_DOC_FORMAT
    chunking: ChunkConfig = BEIR_CHUNKING
    search: SearchConfig = BEIR_SEARCH
    graph_top_k: int = GRAPH_TOP_K
    limit_queries: int | None = None
    ignore_identical_ids: bool = True
    store: str | None = field(default=None, repr=False)  # a URL may hold a password

    def to_dict(self) -> dict[str, Any]:
        return {
            "embedding": self.embedding,
            "doc_format": self.doc_format,
            "chunking": self.chunking.model_dump(mode="json"),
            "search": self.search.model_dump(mode="json", exclude={"mode"}),
            "graph_top_k": self.graph_top_k,
            "limit_queries": self.limit_queries,
            "ignore_identical_ids": self.ignore_identical_ids,
            "store": describe_store(self.store),
        }


@dataclass(frozen=True, slots=True)
class IndexInfo:
    """One indexing run: wall time (the model loaded and warmed before it), what it embedded
    and what it reused. ``kind`` is ``full`` when the run built the index from nothing (no
    earlier index of these settings, no cached vector), else ``incremental``: then
    ``index_s`` is the time of an update, not of indexing the corpus."""

    index_s: float
    embedded: int
    reused: int
    documents: int
    chunks: int
    rebuilt: bool
    work_dir: str
    kind: IndexKind = "full"

    def to_dict(self) -> dict[str, Any]:
        return {
            "index_s": round(self.index_s, 3),
            "kind": self.kind,
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

    def summary(self, index: IndexInfo) -> dict[str, float | str]:
        return {
            **{name: round(value, 4) for name, value in self.metrics.items()},
            "index_s": round(index.index_s, 3),
            "index_kind": index.kind,
            "p50_ms": round(percentile(self.latencies_ms, 50), 2),
            "p95_ms": round(percentile(self.latencies_ms, 95), 2),
        }


@dataclass
class BeirRun:
    """``queries`` counts every judged query of the split that was scored, the
    ``missing_queries`` among them (no text: nothing to run, scored 0) included."""

    data: str
    split: str
    queries: int
    missing_queries: int
    settings: RunSettings
    index: IndexInfo
    results: dict[str, ModeResult]
    started_at: str

    def summary(self) -> dict[str, dict[str, float | str]]:
        """``{mode: {ndcg@10, recall@10, recall@100, mrr@10, index_s, index_kind, p50_ms,
        p95_ms}}``."""
        return {mode: r.summary(self.index) for mode, r in self.results.items()}

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
        index_dir=None if settings.store else work_dir / INDEX_DIR,
        chunking=settings.chunking,
        store=settings.store,
    )


def index_corpus(
    data: BeirData,
    work_dir: Path,
    settings: RunSettings,
    progress: RunProgress = _ignore,
    *,
    fresh: bool = False,
) -> tuple[KnowledgeBase, dict[str, str], IndexInfo]:
    """Write the documents and bring the index up to date (``fresh``: delete the index and
    its embedding cache first). The time covers indexing only (scanning, chunking, embedding
    what the cache lacks, BM25, writing the generation): the model is loaded and warmed
    before it, as ``benchmarks/bench_engine.py`` does for both sides of its ratio."""
    names = write_corpus(data.corpus, work_dir / DOCS_DIR, settings.doc_format)
    kb = open_knowledge_base(work_dir, settings)
    index_dir = kb.store.index_dir
    exists = index_dir.exists() if index_dir else kb.store.current_key() is not None
    if fresh and exists:
        kb.delete()  # a database keeps its shared embedding cache
    previous = kb.store.current_key() is not None
    if settings.embedding is not None:
        kb.embedder().embed_query("warm up")
    start = time.perf_counter()
    report = kb.index(progress=lambda e: progress(f"index:{e.stage}", e.done, e.total))
    elapsed = time.perf_counter() - start
    full = report.reused == 0 and (report.rebuilt or not previous)
    info = IndexInfo(
        index_s=elapsed,
        embedded=report.embedded,
        reused=report.reused,
        documents=report.stats.file_count,
        chunks=report.stats.chunk_count,
        rebuilt=report.rebuilt,
        work_dir=str(work_dir),
        kind="full" if full else "incremental",
    )
    return kb, names, info


def doc_ranking(
    hits: Sequence[tuple[str, float]], names: Mapping[str, str], query_id: str | None = None
) -> list[str]:
    """The first :data:`DOCS_PER_QUERY` documents of chunk ``hits`` (file, score), each
    document scored by its best chunk; with ``query_id``, the document of that id is left
    out (BEIR's ``ignore_identical_ids``)."""
    docs = max_pool([(names[source], score) for source, score in hits if source in names])
    if query_id is not None:
        docs = without_query_id(docs, query_id)
    return docs[:DOCS_PER_QUERY]


def search_mode(
    kb: KnowledgeBase,
    queries: Mapping[str, str],
    names: Mapping[str, str],
    mode: Mode,
    config: SearchConfig,
    progress: RunProgress = _ignore,
    *,
    ignore_identical_ids: bool = True,
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
        hits = [(r.chunk.source, r.score) for r in results]
        rankings[qid] = doc_ranking(hits, names, qid if ignore_identical_ids else None)
        latencies.append((time.perf_counter() - start) * 1000)
        progress(mode, done, len(queries))
    return rankings, latencies


def graph_mode(
    kb: KnowledgeBase,
    data_name: str,
    queries: Mapping[str, str],
    names: Mapping[str, str],
    settings: RunSettings,
    progress: RunProgress = _ignore,
) -> tuple[dict[str, list[str]], list[float]]:
    """The whole subgraph, heuristic mode, one invocation per query (:mod:`._graph`)."""

    def rank(qid: str, hits: Sequence[tuple[str, float]]) -> list[str]:
        return doc_ranking(hits, names, qid if settings.ignore_identical_ids else None)

    return graph_rankings(
        kb,
        data_name,
        queries,
        embedding=settings.embedding,
        search=settings.search,
        top_k=settings.graph_top_k,
        rank=rank,
        progress=progress,
    )


def modes(*, default: bool = False) -> tuple[Mode, ...]:
    """The modes a run can score, from the ranker registry: each ranker that needs no
    vectors (bm25, title, ...), each that does (vector), ``hybrid``, ``graph``. With
    ``default``: only the rankers hybrid fuses by default (the run of no ``--mode``)."""
    chosen = [r for r in rankers() if not default or r.hybrid_weight is not None]
    lexical = [r.name for r in chosen if not r.needs_vectors]
    dense = [r.name for r in chosen if r.needs_vectors]
    return (*lexical, *dense, HYBRID, GRAPH)


def lexical_modes(*, default: bool = False) -> tuple[Mode, ...]:
    """The modes of a lexical-only index (no embedding model)."""
    return tuple(m for m in modes(default=default) if m == GRAPH or not _needs_vectors(m))


def _needs_vectors(mode: Mode) -> bool:
    return mode == HYBRID or any(r.name == mode and r.needs_vectors for r in rankers())


def check_modes(modes_: Sequence[str], embedding: str | None) -> list[Mode]:
    """The modes to run, in :func:`modes` order. None given: the default ones (vector,
    BM25, hybrid, graph), or those needing no vectors when there is no embedding model."""
    every = modes()
    default = modes(default=True) if embedding else lexical_modes(default=True)
    chosen = list(dict.fromkeys(modes_)) or list(default)
    unknown = [m for m in chosen if m not in every]
    if unknown:
        raise ConfigError(f"unknown mode {unknown[0]!r}; allowed: {', '.join(every)}")
    if embedding is None and any(m not in lexical_modes() for m in chosen):
        dense = ", ".join(m for m in every if m not in lexical_modes())
        raise ConfigError(
            f"modes {dense} need an embedding model; pass --embedding local (or another "
            f"spec), or run only {', '.join(lexical_modes())}"
        )
    return [m for m in every if m in chosen]


def run_beir(
    beir_dir: str | Path,
    modes: Sequence[str] = (),
    *,
    split: str = "test",
    settings: RunSettings | None = None,
    work_dir: str | Path | None = None,
    fresh: bool = False,
    progress: RunProgress = _ignore,
) -> BeirRun:
    """Index the corpus of ``beir_dir`` (reusing ``work_dir``, default under the cache
    folder; ``fresh`` starts from an empty index) and score every judged query of ``split``
    in each of ``modes`` (default: the rankers hybrid fuses, hybrid and graph, those the
    embedding allows)."""
    data = load_beir(beir_dir, split)
    work = Path(work_dir).expanduser() if work_dir else default_work_dir(beir_dir)
    return run_data(data, modes, settings=settings, work_dir=work, fresh=fresh, progress=progress)


def run_data(
    data: BeirData,
    modes: Sequence[str] = (),
    *,
    settings: RunSettings | None = None,
    work_dir: Path,
    fresh: bool = False,
    progress: RunProgress = _ignore,
) -> BeirRun:
    """:func:`run_beir` over data already loaded. Every judged query is scored; one with no
    text has no ranking and scores 0."""
    settings = settings or RunSettings()
    chosen = check_modes(modes, settings.embedding)
    qids = list(data.qrels)[: settings.limit_queries]
    qrels = {qid: data.qrels[qid] for qid in qids}
    queries = {qid: data.queries[qid] for qid in qids if qid in data.queries}
    started = datetime.now(UTC).isoformat(timespec="seconds")
    kb, names, info = index_corpus(data, work_dir, settings, progress, fresh=fresh)
    results: dict[str, ModeResult] = {}
    try:
        for mode in chosen:
            if mode == GRAPH:
                rankings, latencies = graph_mode(kb, data.name, queries, names, settings, progress)
            else:
                rankings, latencies = search_mode(
                    kb,
                    queries,
                    names,
                    mode,
                    settings.search,
                    progress,
                    ignore_identical_ids=settings.ignore_identical_ids,
                )
            per_query = {qid: query_metrics(rankings.get(qid, []), qrels[qid]) for qid in qrels}
            results[mode] = ModeResult(mode, mean_metrics(rankings, qrels), latencies, per_query)
    finally:
        kb.close()
    return BeirRun(
        data=data.name,
        split=data.split,
        queries=len(qrels),
        missing_queries=len(qrels) - len(queries),
        settings=settings,
        index=info,
        results=results,
        started_at=started,
    )


__all__ = [
    "BEIR_CHUNKING",
    "BEIR_DOC_FORMAT",
    "BEIR_SEARCH",
    "DOCS_PER_QUERY",
    "FUSION_WEIGHTS",
    "GRAPH",
    "GRAPH_TOP_K",
    "BeirRun",
    "IndexInfo",
    "IndexKind",
    "Mode",
    "ModeResult",
    "RunProgress",
    "RunSettings",
    "check_modes",
    "doc_ranking",
    "graph_mode",
    "index_corpus",
    "lexical_modes",
    "modes",
    "open_knowledge_base",
    "run_beir",
    "run_data",
    "search_mode",
    "search_settings",
]
