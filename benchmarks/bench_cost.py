"""Cost per search: CPU milliseconds per search, this process's and the PostgreSQL server's
(every process of it), per search mode, for the folder index and PostgreSQL on BEIR SciFact,
the saturation throughput per core that follows, statements per search, and each store's
memory per million chunks. How each figure is taken: benchmarks/README.md, "Cost per search".

    python benchmarks/bench_cost.py ../shared/data/beir/scifact          # the figures
    python benchmarks/bench_cost.py DATA --limit-queries 20 --embedding fake   # a quick check
    python benchmarks/bench_cost.py DATA --quick   # 3 queries, the fake model: a smoke run

The queries are embedded once, up front (the "query embedding" row); each store, in a fresh
process without the model, then looks their vectors up, so its rows are the store's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from kbgraph.evals._beir import RunSettings, load_beir
from kbgraph.evals._beir._folder import INDEX_DIR, default_work_dir
from kbgraph.evals._beir._run import index_corpus, open_knowledge_base
from kbgraph.retrieval import KnowledgeBase

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _pg_server import (
    count_statements,
    postmaster,
    server_pss,
    server_times,
    server_versions,
    settle,
)
from _quick import parse
from bench_pg_quality import SHARED, seed_cache

from tests.support.postgres import running_postgres

ROOT = Path(__file__).resolve().parents[1]
MODES = ("bm25", "vector", "hybrid")
MB = 1024 * 1024


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


# -- one store, in its own process ------------------------------------------------------
def quantiles(ms: Sequence[float]) -> tuple[float, float]:
    """Median and 95th percentile."""
    return statistics.median(ms), float(np.percentile(ms, 95))


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
    cost = Cost(job.label, mode, n, cpu * 1000 / n, *quantiles(ms))
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
        counted_queries = job.queries[: job.count_queries]
        pass_ = partial(searches, kb, counted_queries, cost.mode, job.top_k)
        counted = count_statements(url, pass_)
        if counted is not None:
            n = len(counted_queries)
            cost.statement_kinds = {k: v / n for k, v in counted.most_common()}
            cost.statements = counted.total() / n
            cost.transactions = counted["BEGIN"] / n
    result.server_pss_bytes = server_pss(root)
    result.versions = server_versions(url)


def in_fresh_process(job: Job) -> StoreResult:
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(measure_store, job).result()


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
    return vectors, Cost(label, "-", n, cpu * 1000 / n, *quantiles(ms))


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
    args = parse(parser, limit_queries=3, embedding="fake", warmup=1, count_queries=2)
    args.modes = tuple(args.modes)
    load = os.getloadavg()
    out = run(args)
    report(args, header_of(args, load, out), out)


if __name__ == "__main__":
    main()
