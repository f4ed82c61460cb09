"""Warm ``KnowledgeBase.search`` latency of the folder index, per mode, and the cost of
opening and validating it: what the read path's checks cost (issue 24).

    python benchmarks/bench_search_latency.py                # SciFact, 5,183 files
    python benchmarks/bench_search_latency.py --limit 1000   # a smaller folder

The SciFact corpus (../shared/data/beir/scifact) is written as one file per document and
indexed with the ``fake`` model (384 dims: the same vector math as a real model, without
its encoding time, which a real query would add to vector and hybrid alike). Then, on
one BLAS thread: the median and 95th percentile of a warm search over the 300 test
queries (each query once, after one warm-up pass), top 10, for bm25, vector and hybrid;
the time to open the index (a new ``KnowledgeBase`` and its first BM25 search, median of
5) and ``validate()`` (the full check of ``kbgraph stats --validate``, median of 3). Uses
the public API only, so that the same script measures another version of kbgraph.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _quick import parse  # noqa: E402
from bench_engine import blas_threads, load_beir  # noqa: E402

SCIFACT = ROOT.parent / "shared" / "data" / "beir" / "scifact"
MODES = ("bm25", "vector", "hybrid")


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _timed(fn: Callable[[], object], runs: int) -> float:
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def measure(folder: Path, queries: Sequence[str]) -> dict[str, float]:
    from kbgraph.retrieval import KnowledgeBase

    out: dict[str, float] = {}
    with KnowledgeBase(folder, embedding="fake") as kb:
        for mode in MODES:
            for query in queries:  # warm-up: pages mapped, columns checked once
                kb.search(query, top_k=10, mode=mode)
            latencies = []
            for query in queries:
                start = time.perf_counter()
                kb.search(query, top_k=10, mode=mode)
                latencies.append(time.perf_counter() - start)
            out[f"{mode} p50 ms"] = 1000 * statistics.median(latencies)
            out[f"{mode} p95 ms"] = 1000 * _percentile(latencies, 0.95)
        out["validate s"] = _timed(kb.validate, 3)

    def open_and_search() -> None:
        with KnowledgeBase(folder, embedding="fake") as fresh:
            fresh.search(queries[0], top_k=10, mode="bm25")

    out["open + first bm25 search ms"] = 1000 * _timed(open_and_search, 5)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--limit", type=int, default=None, help="first N documents only")
    args = parse(parser, argv, limit=20)
    data = load_beir(args.data)
    texts = data.texts[: args.limit]
    from kbgraph.retrieval import KnowledgeBase

    with tempfile.TemporaryDirectory() as tmp, blas_threads(1):
        folder = Path(tmp) / "scifact"
        folder.mkdir()
        for doc_id, text in zip(data.doc_ids, texts, strict=False):
            (folder / f"{doc_id}.txt").write_text(text, encoding="utf-8")
        with KnowledgeBase(folder, embedding="fake") as kb:
            report = kb.index()
        print(f"{len(texts)} files, {report.stats.chunk_count} chunks, {len(data.queries)} queries")
        for name, value in measure(folder, data.queries).items():
            print(f"{name:<30} {value:10.3f}")


if __name__ == "__main__":
    main()
