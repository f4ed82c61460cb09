"""Retrieval quality of the PostgreSQL store next to the folder index, on a BEIR data set
(default SciFact test), with the BEIR settings of ``kbgraph eval retrieval``.

    python benchmarks/bench_pg_quality.py [../shared/data/beir/scifact]

Both stores index the same Markdown files with the same chunking and model. The corpus
is embedded once: the folder index's embedding cache (the BEIR work folder, reused across
runs) is copied into the database's cache before the PostgreSQL run, which then embeds
nothing. PostgreSQL 16 + pgvector comes from ``pgserver`` in a temporary folder. Quality
does not depend on the machine's load; the latency columns do.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

from kbgraph.evals.beir import RunSettings, load_beir, run_data
from kbgraph.evals.beir._folder import default_work_dir
from kbgraph.retrieval.postgres import Database
from kbgraph.retrieval.postgres._store import PgEmbeddingCache

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.postgres import running_postgres

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"
MODES = ("bm25", "vector", "hybrid")


def seed_cache(sqlite_path: Path, url: str) -> int:
    """Copy every cached vector of the folder index into the database's cache."""
    db = Database.parse(url)
    with sqlite3.connect(sqlite_path) as src, db.connect() as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS kbgraph_embedding_cache (model text NOT NULL, hash text "
            "NOT NULL, vector bytea NOT NULL, PRIMARY KEY (model, hash))"
        )
        rows = src.execute("SELECT model, hash, vector FROM embeddings").fetchall()
        by_model: dict[str, dict[str, np.ndarray]] = {}
        for model, digest, blob in rows:
            by_model.setdefault(model, {})[digest] = np.frombuffer(blob, dtype="<f4")
        for model, items in by_model.items():
            PgEmbeddingCache(db, conn, model).put_many(items)
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", default=str(SHARED))
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit-queries", type=int, default=None)
    args = parser.parse_args()
    data = load_beir(args.data, args.split)
    work = default_work_dir(args.data)
    settings = RunSettings(limit_queries=args.limit_queries)
    print("folder index ...", file=sys.stderr, flush=True)
    folder = run_data(data, MODES, settings=settings, work_dir=work)
    pg_dir = Path(tempfile.mkdtemp(prefix="kbgraph-bench-pg-"))
    try:
        with running_postgres(pg_dir) as url:
            seeded = seed_cache(work / "index" / "cache.sqlite", url)
            print(f"PostgreSQL ({seeded} cached vectors copied) ...", file=sys.stderr, flush=True)
            pg_settings = RunSettings(limit_queries=args.limit_queries, store=url)
            pg = run_data(data, MODES, settings=pg_settings, work_dir=work / "pg")
    finally:
        shutil.rmtree(pg_dir, ignore_errors=True)
    a, b = folder.summary(), pg.summary()
    print(
        f"\n{data.name} {args.split}: {len(data.qrels)} queries; PostgreSQL embedded "
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


if __name__ == "__main__":
    main()
