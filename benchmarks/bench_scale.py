"""Vector search at scale: the folder index's exact product, the folder index's HNSW graph
(usearch) and PostgreSQL's HNSW (pgvector), on the same synthetic vectors.

    python benchmarks/bench_scale.py                       # 1M x 384, every section
    python benchmarks/bench_scale.py --rows 20000 --queries 50   # a quick proof

The vectors are SYNTHETIC (``benchmarks/_synthetic.py``: L2-normalised draws around 4,096
random centres, so that neighbours exist as in real embeddings; uniform noise would have
none). Each section runs in a child process of its own, so that its peak memory (max RSS)
is its own; PostgreSQL's memory is the server processes' RSS after the queries. Figures:
build time (writing the vectors / building the graph / COPY + CREATE INDEX), p50 and p95
of one top-10 query on one thread, recall@10 against the exact top 10, peak memory and
disk. Timing figures need a quiet machine; recall does not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _synthetic import queries as synthetic_queries
from _synthetic import vectors as synthetic_vectors

K = 10
SECTIONS = ("exact", "ann", "postgres")
EF_SWEEP = (40, 100, 200, 400)  # PostgreSQL's hnsw.ef_search, besides the store's default


def _disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _latency(run: Any, qs: np.ndarray) -> tuple[list[list[int]], list[float]]:
    run(qs[0])  # warm: caches, memory maps
    found, times = [], []
    for q in qs:
        start = time.perf_counter()
        found.append([int(r) for r in run(q)])
        times.append((time.perf_counter() - start) * 1000)
    return found, times


def _write_vectors(work: Path, rows: int, dims: int) -> float:
    from kbgraph.retrieval.store import write_vectors

    start = time.perf_counter()
    write_vectors(work / "vectors.bin", synthetic_vectors(rows, dims))
    return time.perf_counter() - start


def section_exact(work: Path, rows: int, dims: int, qs: np.ndarray) -> dict[str, Any]:
    from kbgraph.retrieval.ranking import top_k_dot
    from kbgraph.retrieval.store import open_vectors

    build = _write_vectors(work, rows, dims)
    matrix = open_vectors(work / "vectors.bin")
    found, times = _latency(lambda q: top_k_dot(matrix, q, K)[0], qs)
    np.save(work / "truth.npy", np.array(found))
    return {"build_s": build, "times": times, "found": found, "disk": _disk(work)}


def section_ann(work: Path, rows: int, dims: int, qs: np.ndarray) -> dict[str, Any]:
    from kbgraph.retrieval._search import FolderRanking
    from kbgraph.retrieval.store import AnnIndex, open_vectors, write_ann

    if not (work / "vectors.bin").exists():
        _write_vectors(work, rows, dims)
    matrix = open_vectors(work / "vectors.bin")
    ids = [f"{i:016x}" for i in range(rows)]
    start = time.perf_counter()
    written = write_ann(work, ids, np.asarray(matrix), None)
    build = time.perf_counter() - start
    if not written:
        raise SystemExit(f"{rows} rows is below the ANN threshold; pass --rows 50000 or more")
    ann = AnnIndex.open(work, rows)
    # The product's query path: FolderRanking over a generation with a graph.
    reader = SimpleNamespace(
        vectors=matrix, ann=ann, meta=SimpleNamespace(embedding=None), mask=lambda filters: None
    )

    def run(q: np.ndarray) -> list[int]:
        ranking = FolderRanking(reader, "q", lambda _: q)  # type: ignore[arg-type]
        return ranking.top("vector", K, None)[0]

    found, times = _latency(run, qs)
    disk = sum((work / n).stat().st_size for n in ("ann.usearch", "ann.keys.npy", "ann.rows.npy"))
    return {"build_s": build, "times": times, "found": found, "disk": disk}


def section_postgres(work: Path, rows: int, dims: int, qs: np.ndarray) -> dict[str, Any]:
    import psutil
    import psycopg
    from psycopg import sql

    import kbgraph.retrieval.postgres._snapshot as pg_snapshot
    from kbgraph.retrieval.postgres import PostgresStore
    from kbgraph.retrieval.postgres._schema import SHARED_DDL, Tables
    from kbgraph.retrieval.store import EmbeddingMeta, IndexMeta
    from tests.support.postgres import running_postgres

    data = Path(tempfile.mkdtemp(prefix="kbgraph-bench-pg-"))
    try:
        with running_postgres(data) as url:
            folder = work / "docs"
            folder.mkdir(exist_ok=True)
            tables = Tables(1)
            meta = IndexMeta(
                engine_version="bench",
                embedding=EmbeddingMeta(provider="synthetic", model="mixture", dims=dims),
                chunking={},
                scan={},
                files={},
                file_count=1,
                chunk_count=rows,
                indexed_at="bench",
            )
            vectors = synthetic_vectors(rows, dims)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute("SET maintenance_work_mem = '8GB'")
                for ddl in SHARED_DDL:
                    conn.execute(ddl)
                start = time.perf_counter()
                with conn.transaction():
                    for ddl in tables.create(dims):
                        conn.execute(ddl)
                    copy = sql.SQL(
                        "COPY {} (source, ord, kind, chunk_id, text, line_start, "
                        "line_end, byte_start, byte_end, dl, lexemes, embedding) "
                        "FROM STDIN"
                    ).format(tables.chunks)
                    with conn.cursor() as cur, cur.copy(copy) as out:
                        for i, v in enumerate(vectors):
                            text = "[" + ",".join(f"{x:.7g}" for x in v) + "]"
                            out.write_row(
                                (
                                    "synthetic.md",
                                    i,
                                    "markdown",
                                    f"{i:016x}",
                                    "",
                                    1,
                                    1,
                                    0,
                                    0,
                                    0,
                                    "",
                                    text,
                                )
                            )
                    conn.execute(tables.vector_index())
                    conn.execute(
                        "INSERT INTO kbgraph_kbs (id, folder, meta, version, n_docs, total_len) "
                        "VALUES (1, %s, %s, 1, %s, 0)",
                        (
                            str(folder.resolve()),
                            psycopg.types.json.Jsonb(
                                meta.model_dump(mode="json", exclude={"files", "failed_embeddings"})
                            ),
                            rows,
                        ),
                    )
                build = time.perf_counter() - start
                disk = sum(
                    int(
                        conn.execute(
                            "SELECT pg_total_relation_size(%s::regclass)", (t.as_string(conn),)
                        ).fetchone()[0]
                    )  # type: ignore[index]
                    for t in tables.all()
                )
            del vectors
            snapshot = PostgresStore(url, folder.resolve()).open()

            def run(q: np.ndarray) -> list[int]:
                with snapshot.ranking("q", lambda _: q) as ranking:
                    return [k - 1 for k in ranking.top("vector", K, None)[0]]  # rid = row + 1

            found, times = _latency(run, qs)
            sweep = {}  # the recall / latency trade-off of hnsw.ef_search around the default
            default_ef = pg_snapshot.EF_SEARCH_MIN
            for ef in EF_SWEEP:
                pg_snapshot.EF_SEARCH_MIN = ef
                ef_found, ef_times = _latency(run, qs)
                sweep[str(ef)] = {"found": ef_found, "times": ef_times}
            pg_snapshot.EF_SEARCH_MIN = default_ef
            snapshot.close()
            server = sum(
                p.memory_info().rss
                for p in psutil.process_iter()
                if p.name().startswith("postgres")
            )
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return {
        "build_s": build,
        "times": times,
        "found": found,
        "disk": disk,
        "server_mb": server / 2**20,
        "ef_search": default_ef,
        "sweep": sweep,
    }


def child(args: argparse.Namespace) -> None:
    qs = synthetic_queries(args.queries, args.dims)
    work = Path(args.work)
    result = globals()[f"section_{args.child}"](work, args.rows, args.dims, qs)
    result["peak_mb"] = _peak_mb()
    (work / f"{args.child}.json").write_text(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--section", action="append", choices=SECTIONS)
    parser.add_argument("--child", choices=SECTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sections = args.section or list(SECTIONS)
    if "exact" not in sections:
        sections.insert(0, "exact")  # the truth recall is measured against
    work = Path(tempfile.mkdtemp(prefix="kbgraph-bench-scale-"))
    try:
        results = {}
        for name in sections:
            print(f"{name} ...", file=sys.stderr, flush=True)
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    name,
                    "--work",
                    str(work),
                    "--rows",
                    str(args.rows),
                    "--dims",
                    str(args.dims),
                    "--queries",
                    str(args.queries),
                ],
                check=True,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
            )
            results[name] = json.loads((work / f"{name}.json").read_text())
        report(results, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    truth = results["exact"]["found"]
    print(
        f"\n{args.rows:,} synthetic vectors x {args.dims} dims, {args.queries} queries, "
        f"top-{K}, one query at a time\n"
    )
    print("| store | build s | p50 ms | p95 ms | recall@10 | peak MB | disk MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    names = {
        "exact": "folder, exact",
        "ann": "folder, HNSW (usearch)",
        "postgres": "PostgreSQL, HNSW (pgvector)",
    }
    for name, r in results.items():
        recall = _recall(r["found"], truth)
        memory = f"{r['peak_mb']:.0f}"
        if "server_mb" in r:
            memory += f" + server {r['server_mb']:.0f}"
        print(
            f"| {names[name]} | {r['build_s']:.1f} | {np.percentile(r['times'], 50):.2f} | "
            f"{np.percentile(r['times'], 95):.2f} | {recall:.4f} | {memory} | "
            f"{r['disk'] / 2**20:.0f} |"
        )
    sweep = results.get("postgres", {}).get("sweep")
    if sweep:
        print(f"\nPostgreSQL, hnsw.ef_search (the store sets {results['postgres']['ef_search']}):")
        print("| ef_search | p50 ms | p95 ms | recall@10 |\n|---:|---:|---:|---:|")
        for ef, r in sweep.items():
            print(
                f"| {ef} | {np.percentile(r['times'], 50):.2f} | "
                f"{np.percentile(r['times'], 95):.2f} | {_recall(r['found'], truth):.4f} |"
            )


def _recall(found: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)]))


if __name__ == "__main__":
    main()
