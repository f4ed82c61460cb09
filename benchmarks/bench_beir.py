"""Retrieval quality and latency on a BEIR data set: kbgraph next to the engines a user would
pick instead, in the same run, with the same embedding model. Prints figures; not a test.

    python benchmarks/bench_beir.py [--data DIR] [--split test] [--work-dir DIR]
                                    [--index-timing] [--graph] [--limit-queries N]

Rows (document rankings of 100, scored as ``kbgraph eval retrieval`` scores them):

- kbgraph bm25 / vector / hybrid (/ graph): ``evals.beir.run_beir`` through the real engine,
  with the run settings of ``kbgraph eval retrieval`` (hybrid: convex fusion); "kbgraph
  hybrid (RRF)" is the same index searched with the engine's default fusion.
- bm25s: ``bm25s.tokenize(stopwords="en", stemmer=Snowball English)`` + ``bm25s.BM25()``
  (Lucene variant) over whole documents (title + text).
- MiniLM whole-doc: all-MiniLM-L6-v2 vectors of whole documents (the model keeps their
  first 256 tokens), exact cosine top-100.
- RRF bm25s + MiniLM: plain equal-weight Reciprocal Rank Fusion (k = 60) of the two rows
  above, each 1,000 deep: the reference point of the issue.
- LanceDB hybrid (docs): a LanceDB table of whole documents with the same MiniLM vectors
  and a native full-text index (stemming, stop words), ``query_type="hybrid"`` with
  ``RRFReranker()`` (k = 60).
- LanceDB hybrid (chunks): the same over kbgraph's own chunks and chunk vectors (read from
  its index), documents scored by their best chunk, so both sides fuse the same passages.

Every vector is computed once and shared: the whole-document vectors are cached in the
work folder (``whole-doc-<model>.npy``, with the time the encode took), the chunk vectors are
the engine's. Query latency includes embedding the query (the same local model everywhere)
and is measured one query at a time after a warm-up, on the same machine in the same run.

``--index-timing`` also indexes the corpus into a fresh folder (nothing cached) and encodes
the very same chunk texts with the bare sentence-transformers model: the ratio of the two is
the engine's indexing overhead (target ≤ 1.2×); a second index run shows what it re-embeds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from evals.beir import (
    BeirData,
    IndexInfo,
    RunSettings,
    load_beir,
    mean_metrics,
    percentile,
    run_beir,
    search_settings,
)
from evals.beir._folder import default_work_dir, document_text
from evals.beir._metrics import max_pool
from evals.beir._report import machine, table
from evals.beir._run import open_knowledge_base
from retrieval.ranking import rrf_fuse

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"
DEPTH = 100  # documents per query
FUSION_DEPTH = 1000  # list depth of the RRF reference
Ranking = list[str]
Encoder = Callable[[Sequence[str]], np.ndarray]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- the model


class Model:
    """The packaged all-MiniLM-L6-v2, bare sentence-transformers (batch 32, normalised)."""

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        from retrieval.embeddings import packaged_model_dir

        self.st = SentenceTransformer(str(packaged_model_dir()), local_files_only=True)
        self.st.encode(["warm up"] * 4)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            self.st.encode(list(texts), batch_size=32, normalize_embeddings=True),
            dtype=np.float32,
        )

    def query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


def whole_doc_vectors(model: Model, texts: Sequence[str], cache: Path) -> tuple[np.ndarray, float]:
    """Whole-document vectors and the seconds the bare encode took (from the cache when the
    same texts were encoded before)."""
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
    vec_path, meta_path = cache / "whole-doc-minilm.npy", cache / "whole-doc-minilm.json"
    if vec_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text("utf-8"))
        if meta.get("sha256") == digest:
            log(f"whole-document vectors from {vec_path} (encoded in {meta['encode_s']:.1f} s)")
            return np.load(vec_path), float(meta["encode_s"])
    log(f"encoding {len(texts)} whole documents (bare sentence-transformers) ...")
    start = time.perf_counter()
    vectors = model.encode(texts)
    seconds = time.perf_counter() - start
    cache.mkdir(parents=True, exist_ok=True)
    np.save(vec_path, vectors)
    meta_path.write_text(json.dumps({"sha256": digest, "encode_s": seconds}), "utf-8")
    return vectors, seconds


# ---------------------------------------------------------------------------- scoring


def timed_run(
    queries: Mapping[str, str], search: Callable[[str], Ranking]
) -> tuple[dict[str, Ranking], list[float]]:
    """Rankings and per-query latencies (ms); one untimed warm-up query first."""
    search(next(iter(queries.values())))
    rankings, latencies = {}, []
    for qid, query in queries.items():
        start = time.perf_counter()
        rankings[qid] = search(query)[:DEPTH]
        latencies.append((time.perf_counter() - start) * 1000)
    return rankings, latencies


def row(
    rankings: Mapping[str, Ranking],
    latencies: Sequence[float],
    qrels: Mapping[str, Mapping[str, int]],
    index_s: float | None,
) -> dict[str, float]:
    out = mean_metrics(rankings, qrels)
    if latencies:
        out |= {"p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95)}
    if index_s is not None:
        out["index_s"] = index_s
    return out


# ---------------------------------------------------------------------------- peers


class Bm25s:
    def __init__(self, doc_ids: Sequence[str], texts: Sequence[str]) -> None:
        import bm25s
        import Stemmer

        self.bm25s, self.stemmer, self.doc_ids = bm25s, Stemmer.Stemmer("english"), doc_ids
        start = time.perf_counter()
        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=self.stemmer,
                                show_progress=False)  # fmt: skip
        self.retriever = bm25s.BM25()  # method "lucene", k1 = 1.5, b = 0.75
        self.retriever.index(tokens, show_progress=False)
        self.index_s = time.perf_counter() - start

    def search(self, query: str, k: int = DEPTH) -> Ranking:
        tokens = self.bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer,
                                     show_progress=False)  # fmt: skip
        if not tokens.vocab:
            return []
        k = min(k, len(self.doc_ids))
        docs, scores = self.retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [self.doc_ids[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


def dense_search(
    doc_ids: Sequence[str], vectors: np.ndarray, model: Model
) -> Callable[[str, int], Ranking]:
    def search(query: str, k: int) -> Ranking:
        scores = vectors @ model.query(query)
        top = np.argpartition(-scores, k)[:k] if k < len(scores) else np.arange(len(scores))
        return [doc_ids[int(i)] for i in top[np.argsort(-scores[top], kind="stable")]]

    return search


def rrf_reference(bm25: Bm25s, dense: Callable[[str, int], Ranking]) -> Callable[[str], Ranking]:
    """Equal-weight RRF (k = 60) of the two whole-document rankings, each FUSION_DEPTH deep."""

    def search(query: str) -> Ranking:
        lists = {"bm25": bm25.search(query, FUSION_DEPTH), "vector": dense(query, FUSION_DEPTH)}
        return [str(item.key) for item in rrf_fuse(lists, k=60)]

    return search


class LanceHybrid:
    """A LanceDB table of ``rows`` (``doc`` id, ``text``, ``vector``), a native full-text
    index on ``text``, hybrid queries fused by ``RRFReranker`` (k = 60)."""

    def __init__(
        self, folder: Path, docs: Sequence[str], texts: Sequence[str], vectors: np.ndarray,
        model: Model, limit: int,
    ) -> None:  # fmt: skip
        import lancedb
        import pyarrow as pa
        from lancedb.rerankers import RRFReranker

        start = time.perf_counter()
        db = lancedb.connect(str(folder))
        data = pa.table({
            "doc": pa.array(list(docs), pa.string()),
            "text": pa.array(list(texts), pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1]
            ),
        })  # fmt: skip
        self.table = db.create_table("beir", data=data, mode="overwrite")
        self.table.create_fts_index("text", replace=True)  # stemming and stop words: defaults
        self.index_s = time.perf_counter() - start
        self.model, self.limit, self.reranker = model, limit, RRFReranker()

    def search(self, query: str) -> Ranking:
        vector = self.model.query(query)
        hits = (
            self.table.search(query_type="hybrid")
            .vector(vector)
            .text(query)
            .rerank(self.reranker)
            .limit(self.limit)
            .to_list()
        )
        return max_pool([(h["doc"], float(h["_relevance_score"])) for h in hits])


def engine_chunks(work_dir: Path, settings: RunSettings) -> tuple[list[str], list[str], np.ndarray]:
    """kbgraph's chunks (doc id, indexed text) and their vectors, from its live index."""
    from evals.beir._folder import file_name
    from retrieval.records import index_text

    kb = open_knowledge_base(work_dir, settings)
    reader = kb._open()
    try:
        if reader.vectors is None:
            raise SystemExit("the engine's index has no vectors")
        rows = [reader.chunks.get(i) for i in range(reader.meta.chunk_count)]
        vectors = np.array(reader.vectors, dtype=np.float32)
    finally:
        kb.close()
    docs = {file_name(d): d for d in json.loads((work_dir / "doc-ids.json").read_text("utf-8"))}
    return [docs[c.source] for c in rows], [index_text(c) for c in rows], vectors


# ---------------------------------------------------------------------------- index timing


def index_timing(
    data: BeirData, model: Model, settings: RunSettings, work: Path, first: IndexInfo
) -> list[str]:
    """Indexing from scratch against the bare encode of the same chunk texts, then a second
    run over the unchanged corpus. The run above counts as the first when it embedded every
    chunk (a fresh work folder); otherwise a fresh folder is indexed here."""
    from evals.beir._run import index_corpus
    from retrieval.records import index_text

    with tempfile.TemporaryDirectory(prefix="kbgraph-beir-") as tmp:
        folder = work
        if first.embedded != first.chunks:
            log("index timing: indexing into an empty folder ...")
            folder = Path(tmp)
            kb, _, first = index_corpus(data, folder, settings)
            kb.close()
        kb = open_knowledge_base(folder, settings)
        reader = kb._open()
        texts = [index_text(reader.chunks.get(i)) for i in range(reader.meta.chunk_count)]
        kb.close()
        log(f"index timing: bare encode of the same {len(texts)} chunk texts ...")
        start = time.perf_counter()
        model.encode(texts)
        bare = time.perf_counter() - start
        kb, _, second = index_corpus(data, folder, settings)
        kb.close()
    return [
        f"- indexing from scratch: {first.index_s:.1f} s ({first.embedded:,} chunks embedded); "
        f"bare `model.encode` of the same {len(texts):,} chunk texts: {bare:.1f} s; "
        f"ratio {first.index_s / bare:.2f}× (target ≤ 1.2×)",
        f"- second run over the unchanged corpus: {second.index_s:.1f} s, "
        f"{second.embedded} chunks embedded, {second.reused:,} reused",
    ]


# ---------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", default="test")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--graph", action="store_true", help="also the subgraph (slow)")
    parser.add_argument("--index-timing", action="store_true", help="fresh index vs encode")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here too")
    args = parser.parse_args(argv)

    settings = RunSettings(embedding="local", limit_queries=args.limit_queries)
    work = args.work_dir or default_work_dir(args.data)
    modes = ["bm25", "vector", "hybrid", *(["graph"] if args.graph else [])]
    log(f"kbgraph: {', '.join(modes)} (work folder {work}) ...")
    run = run_beir(args.data, modes, split=args.split, settings=settings, work_dir=work)
    data = load_beir(args.data, args.split)
    queries = dict(list(data.queries.items())[: args.limit_queries])
    qrels = {qid: data.qrels[qid] for qid in queries}
    rows: dict[str, dict[str, float]] = {
        f"kbgraph {mode}": values for mode, values in run.summary().items()
    }
    log("kbgraph hybrid with the engine's default fusion (RRF) ...")
    rrf_settings = replace(settings, search=search_settings("rrf"))
    rrf_run = run_beir(
        args.data, ["hybrid"], split=args.split, settings=rrf_settings, work_dir=work
    )
    rows["kbgraph hybrid (RRF)"] = rrf_run.summary()["hybrid"]

    model = Model()
    doc_ids = list(data.corpus)
    texts = [document_text(data.corpus[d]) for d in doc_ids]
    vectors, encode_s = whole_doc_vectors(model, texts, work)
    (work / "doc-ids.json").write_text(json.dumps(doc_ids), "utf-8")

    log("bm25s ...")
    bm25 = Bm25s(doc_ids, texts)
    rows["bm25s (stemmed)"] = row(*timed_run(queries, bm25.search), qrels, bm25.index_s)
    log("MiniLM whole-document vectors ...")
    dense = dense_search(doc_ids, vectors, model)
    rows["MiniLM whole-doc"] = row(*timed_run(queries, lambda q: dense(q, DEPTH)), qrels, encode_s)
    log("RRF bm25s + MiniLM ...")
    reference = rrf_reference(bm25, dense)
    rows["RRF(k=60) bm25s + MiniLM"] = row(*timed_run(queries, reference), qrels, None)

    with tempfile.TemporaryDirectory(prefix="kbgraph-lance-") as tmp:
        log("LanceDB hybrid over whole documents ...")
        lance = LanceHybrid(Path(tmp) / "docs", doc_ids, texts, vectors, model, DEPTH)
        rows["LanceDB hybrid (docs)"] = row(
            *timed_run(queries, lance.search), qrels, encode_s + lance.index_s
        )
        log("LanceDB hybrid over kbgraph's chunks ...")
        c_docs, c_texts, c_vectors = engine_chunks(work, settings)
        limit = settings.search.top_k
        lance_c = LanceHybrid(Path(tmp) / "chunks", c_docs, c_texts, c_vectors, model, limit)
        rows["LanceDB hybrid (chunks)"] = row(
            *timed_run(queries, lance_c.search), qrels, run.index.index_s + lance_c.index_s
        )

    print(f"## BEIR {data.name} ({args.split} split, {len(queries)} queries), "
          "all-MiniLM-L6-v2 everywhere\n")  # fmt: skip
    print(table(rows, label="system"))
    print()
    print(f"- {run.started_at}, {machine()}")
    print(f"- kbgraph: {run.index.chunks:,} chunks of {run.index.documents:,} documents; "
          f"index time of this run {run.index.index_s:.1f} s ({run.index.embedded:,} embedded, "
          f"{run.index.reused:,} reused)")  # fmt: skip
    print(f"- whole-document encode (bare sentence-transformers): {encode_s:.1f} s; peers' "
          "`index s` = that encode + their own index build")  # fmt: skip
    if args.index_timing:
        for line in index_timing(data, model, settings, work, run.index):
            print(line)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
