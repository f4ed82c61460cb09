"""Which HNSW library the folder index uses: usearch against faiss-cpu (the two
maintained HNSW implementations with a wheel for this Python; hnswlib ships only a source
archive), same synthetic vectors, same graph parameters (M=16, efConstruction=128,
efSearch=64), one query at a time on one thread.

    pip install faiss-cpu   # not a kbgraph dependency; only this comparison needs it
    python benchmarks/bench_ann_libraries.py --rows 100000 --queries 200
    python benchmarks/bench_ann_libraries.py --quick   # 2,000 rows, 5 queries: a smoke run

Prints build time, p50/p95 latency of a top-20 candidate search and recall@10 against the
exact top 10. Timing figures need a quiet machine; recall does not.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _quick import parse
from _synthetic import queries as synthetic_queries
from _synthetic import vectors as synthetic_vectors

K, CANDIDATES, M, EF_ADD, EF_SEARCH = 10, 20, 16, 128, 64


def _timed(search: Any, qs: np.ndarray) -> tuple[list[list[int]], list[float]]:
    search(qs[0])
    found, times = [], []
    for q in qs:
        start = time.perf_counter()
        found.append(search(q))
        times.append((time.perf_counter() - start) * 1000)
    return found, times


def usearch_run(data: np.ndarray, qs: np.ndarray) -> tuple[float, Any]:
    from usearch.index import Index

    index = Index(
        ndim=data.shape[1],
        metric="ip",
        dtype="f16",
        connectivity=M,
        expansion_add=EF_ADD,
        expansion_search=EF_SEARCH,
    )
    start = time.perf_counter()
    index.add(np.arange(len(data), dtype=np.uint64), data, threads=2)
    build = time.perf_counter() - start
    return build, _timed(
        lambda q: [int(k) for k in index.search(q, CANDIDATES, threads=1).keys], qs
    )


def faiss_run(data: np.ndarray, qs: np.ndarray) -> tuple[float, Any]:
    import faiss

    faiss.omp_set_num_threads(2)
    index = faiss.IndexHNSWFlat(data.shape[1], M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_ADD
    start = time.perf_counter()
    index.add(data)
    build = time.perf_counter() - start
    faiss.omp_set_num_threads(1)
    index.hnsw.efSearch = EF_SEARCH
    return build, _timed(lambda q: [int(i) for i in index.search(q[None, :], CANDIDATES)[1][0]], qs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    args = parse(parser, rows=2_000, queries=5)
    data = synthetic_vectors(args.rows, args.dims)
    qs = synthetic_queries(args.queries, args.dims)
    truth = [set(np.argsort(-(data @ q), kind="stable")[:K].tolist()) for q in qs]
    print(f"\n{args.rows:,} synthetic vectors x {args.dims} dims, {args.queries} queries\n")
    print("| library | build s | p50 ms | p95 ms | recall@10 |")
    print("|---|---:|---:|---:|---:|")
    for name, run in (("usearch (f16)", usearch_run), ("faiss-cpu IndexHNSWFlat", faiss_run)):
        if "faiss" in name and importlib.util.find_spec("faiss") is None:
            print(f"| {name} | not installed: pip install faiss-cpu | | | |")
            continue
        build, (found, times) = run(data, qs)
        recall = np.mean([len(set(f) & t) / K for f, t in zip(found, truth, strict=True)])
        print(
            f"| {name} | {build:.1f} | {np.percentile(times, 50):.2f} | "
            f"{np.percentile(times, 95):.2f} | {recall:.4f} |"
        )


if __name__ == "__main__":
    main()
