"""The PostgreSQL section of ``bench_scale.py``: load the synthetic rows into a knowledge
base's tables, build the HNSW index the store builds (or one with other parameters), and
time top-10 vector searches through the store's own query path
(``PostgresStore(...).open().ranking(...).top("vector", ...)``), over a sweep of
``hnsw.ef_search``; each ef_search's server-side time (``EXPLAIN ANALYZE`` of the index
query) is measured beside the client's.

With ``--pg-data DIR`` the server's data folder is kept: built when ``DIR`` is empty,
reused when ``DIR/bench.json`` records the same rows, dims, server and index parameters,
so the query timing can be rerun on a quiet machine without a long build.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

K = 10
SOURCES = 100  # the rows are spread over this many files: a filter on one keeps 1 %
FILTERED = "f07.md"  # the file the filtered queries allow
RECORD = "bench.json"  # beside the kept server's data folder: what it was built with
EXPLAINED = 20  # queries whose EXPLAIN ANALYZE gives the server-side time of an ef_search
# The server's memory: pgvector's advice is an index that fits in shared_buffers (the
# default 128 MB is for a laptop) and a build that fits in maintenance_work_mem (a build
# that outgrows it goes on on disk, much slower); the same for both servers.
SETTINGS = {
    "shared_buffers": "2GB",
    "maintenance_work_mem": "4GB",
    "max_parallel_maintenance_workers": "2",
}


@dataclass(frozen=True)
class PgOptions:
    """What the section builds and sweeps."""

    server: str
    m: int
    ef_construction: int
    ef_sweep: tuple[int, ...]
    index: str  # "auto" (what the store builds: halfvec where pgvector has it), "halfvec", "vector"
    data: Path | None  # the kept data folder (None: a temporary one, removed)


def _source(row: int) -> str:
    return f"f{row % SOURCES:02d}.md"


def latency(
    run: Callable[[np.ndarray], Any], qs: np.ndarray
) -> tuple[list[list[int]], list[float]]:
    run(qs[0])  # warm: caches, memory maps
    found, times = [], []
    for q in qs:
        start = time.perf_counter()
        found.append([int(r) for r in run(q)])
        times.append((time.perf_counter() - start) * 1000)
    return found, times


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _wanted(rows: int, dims: int, opts: PgOptions) -> dict[str, Any]:
    return {
        "server": opts.server,
        "rows": rows,
        "dims": dims,
        "m": opts.m,
        "ef_construction": opts.ef_construction,
        "index": opts.index,
    }


def _root(rows: int, dims: int, opts: PgOptions) -> tuple[Path, dict[str, Any] | None]:
    """The folder the server lives in, and the record of the build it holds (None: build)."""
    if opts.data is None:
        return Path(tempfile.mkdtemp(prefix="kbgraph-bench-pg-")), None
    record = opts.data / RECORD
    wanted = _wanted(rows, dims, opts)
    if record.exists():
        built: dict[str, Any] = json.loads(record.read_text())
        if {k: built.get(k) for k in wanted} == wanted:
            return opts.data, built
        raise SystemExit(
            f"{opts.data} holds a database built with "
            f"{ {k: built.get(k) for k in wanted} }, not {wanted}: pass those options to time "
            "it, or an empty --pg-data folder to build another"
        )
    if opts.data.exists() and any(opts.data.iterdir()):
        raise SystemExit(
            f"{opts.data} is not empty and has no {RECORD} (a build that did not finish?): "
            "remove it, or pass an empty --pg-data folder"
        )
    return opts.data, None


@contextmanager
def _server(root: Path, opts: PgOptions) -> Iterator[str]:
    from tests.support.pg_cluster import running_cluster

    keep = opts.data is not None
    with running_cluster(opts.server, root, settings=SETTINGS, keep=keep) as cluster:
        yield cluster.primary.url()


def _binary_copy(vectors: np.ndarray, start: int) -> bytes:
    """Rows (row number, vector) in COPY's binary format: formatting 1M x 384 floats as
    text took minutes of Python; this is one numpy pass."""
    dims = vectors.shape[1]
    row = np.dtype(
        [("fields", ">i2"), ("i_len", ">i4"), ("i", ">i8"), ("v_len", ">i4"),
         ("dims", ">i2"), ("unused", ">i2"), ("v", ">f4", (dims,))]
    )  # fmt: skip
    out = np.zeros(len(vectors), dtype=row)
    out["fields"], out["i_len"], out["v_len"], out["dims"] = 2, 8, 4 + 4 * dims, dims
    out["i"] = np.arange(start, start + len(vectors))
    out["v"] = vectors  # pgvector's binary vector: int16 dims, int16 unused, float4s
    return out.tobytes()


def _copy_rows(conn: Any, tables: Any, vectors: np.ndarray, block: int = 50_000) -> None:
    """The rows (row i: file ``_source(i)``, rid i + 1) through a binary COPY into a
    temporary table, and the knowledge base's files."""
    from psycopg import sql
    from psycopg.types.json import Jsonb

    dims = vectors.shape[1]
    conn.execute(f"CREATE TEMP TABLE bench_rows (i int8, embedding vector({int(dims)}))")
    with conn.cursor() as cur, cur.copy("COPY bench_rows FROM STDIN (FORMAT BINARY)") as out:
        out.write(b"PGCOPY\n\xff\r\n\x00" + bytes(8))  # signature, flags, no extension
        for start in range(0, len(vectors), block):
            out.write(_binary_copy(vectors[start : start + block], start))
        out.write(b"\xff\xff")  # the trailer
    conn.execute(
        sql.SQL(
            "INSERT INTO {} (rid, source, ord, kind, chunk_id, text, line_start, line_end, "
            "byte_start, byte_end, dl, lexemes, embedding) "
            "SELECT i + 1, 'f' || lpad((i % {s})::text, 2, '0') || '.md', i / {s}, "
            "'markdown', lpad(to_hex(i), 16, '0'), '', 1, 1, 0, 0, 0, '', embedding "
            "FROM bench_rows ORDER BY i"
        ).format(tables.chunks, s=sql.Literal(SOURCES))
    )
    conn.execute(
        sql.SQL("SELECT setval(pg_get_serial_sequence({}, 'rid'), %s)").format(
            sql.Literal(tables.chunks.as_string())
        ),
        (len(vectors),),
    )
    conn.execute("DROP TABLE bench_rows")
    with conn.cursor() as cur:
        cur.executemany(
            sql.SQL(
                "INSERT INTO {} (source, size, mtime_ns, sha256, kind, notes, chunk_count) "
                "VALUES (%s, 0, 0, '', 'markdown', %s, %s)"
            ).format(tables.files),
            [(_source(i), Jsonb([]), len(range(i, len(vectors), SOURCES))) for i in range(SOURCES)],
        )


def _build(url: str, folder: Path, rows: int, dims: int, opts: PgOptions) -> dict[str, Any]:
    """COPY the rows and their files, build the HNSW index; what was built, and how long
    each step took."""
    import psycopg
    from _synthetic import vectors as synthetic_vectors

    import kbgraph.retrieval._postgres._schema as schema
    from kbgraph.retrieval._postgres._features import pgvector_of
    from kbgraph.retrieval._postgres._schema import SHARED_DDL, Tables
    from kbgraph.retrieval._storage import EmbeddingMeta, IndexMeta

    tables = Tables(1)
    meta = IndexMeta(
        engine_version="bench",
        embedding=EmbeddingMeta(provider="synthetic", model="mixture", dims=dims),
        chunking={}, scan={}, files={}, file_count=SOURCES, chunk_count=rows, indexed_at="bench",
    )  # fmt: skip
    record = {**_wanted(rows, dims, opts), "load_before": _load(), "settings": SETTINGS}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        pgvector = pgvector_of(conn)
        halfvec = opts.index == "halfvec" or (opts.index == "auto" and pgvector.halfvec)
        for shared in SHARED_DDL:
            conn.execute(shared)
        start = time.perf_counter()
        with conn.transaction():
            for ddl in tables.create(dims):
                conn.execute(ddl)
            _copy_rows(conn, tables, synthetic_vectors(rows, dims))
        record["copy_s"] = time.perf_counter() - start
        start = time.perf_counter()
        # The store's vector_index with this run's parameters (module constants, read
        # when it is called).
        saved = schema.HNSW_M, schema.HNSW_EF_CONSTRUCTION
        schema.HNSW_M, schema.HNSW_EF_CONSTRUCTION = opts.m, opts.ef_construction
        try:
            conn.execute(tables.vector_index(dims, halfvec=halfvec))
        finally:
            schema.HNSW_M, schema.HNSW_EF_CONSTRUCTION = saved
        record["index_s"] = time.perf_counter() - start
        conn.execute(
            "INSERT INTO kbgraph_kbs (id, folder, meta, version, n_docs, total_len) "
            "VALUES (1, %s, %s, 1, %s, 0)",
            (str(folder), psycopg.types.json.Jsonb(
                meta.model_dump(mode="json", exclude={"files", "failed_embeddings"})
            ), rows),
        )  # fmt: skip
        conn.execute(f"VACUUM ANALYZE {tables.chunks.as_string(conn)}")
        conn.execute("CHECKPOINT")  # a kept folder shuts down (and starts) without replaying
    record.update(
        halfvec=halfvec,
        build_s=record["copy_s"] + record["index_s"],
        load_after=_load(),
        built_at=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )
    return record


def _sizes(url: str) -> dict[str, Any]:
    import psycopg

    from kbgraph.retrieval._postgres._features import pgvector_of
    from kbgraph.retrieval._postgres._schema import Tables

    names = [t.as_string() for t in Tables(1).all()]
    with psycopg.connect(url, autocommit=True) as conn:
        sizes = conn.execute(
            "SELECT sum(coalesce(pg_total_relation_size(to_regclass(t)), 0)), "
            "pg_relation_size('kbgraph_kb1_hnsw') FROM unnest(%s::text[]) t",
            (names,),
        ).fetchone()
        assert sizes is not None
        pgvector = pgvector_of(conn)
        # The index into shared_buffers before timing (a kept server starts cold).
        warmed = False
        with suppress(psycopg.Error):
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            conn.execute("SELECT pg_prewarm('kbgraph_kb1_hnsw')")
            warmed = True
    return {
        "disk": int(sizes[0]),
        "index_mb": int(sizes[1]) / 2**20,
        "prewarmed": warmed,
        "pgvector": pgvector.version,
        "iterative_scan": pgvector.iterative_scan,
    }


def _server_mb(root: Path) -> float:
    """The RSS of this server's processes (the postmaster and its children), not of other
    servers on the machine."""
    import psutil

    pid = int((root / "primary" / "postmaster.pid").read_text().split()[0])
    main = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [main, *main.children(recursive=True)]) / 2**20


def _explain(url: str, qs: np.ndarray, dims: int, halfvec: bool, ef: int) -> dict[str, Any]:
    """Server-side time of the index query (the store's approximate vector statement),
    median over EXPLAINED queries by EXPLAIN ANALYZE, and one full plan."""
    import psycopg

    proposed = (
        f"embedding::halfvec({dims}) <#> %(q)s::halfvec({dims})"
        if halfvec
        else ("embedding <#> %(q)s::vector")
    )
    query = (
        "EXPLAIN (ANALYZE, BUFFERS) SELECT rid, -(embedding <#> %(q)s::vector) AS score FROM "
        "(SELECT rid, embedding FROM kbgraph_kb1_chunks WHERE embedding IS NOT NULL "
        f"ORDER BY {proposed} LIMIT %(c)s) c ORDER BY score DESC, rid LIMIT %(n)s"
    )
    execution, planning, plan = [], [], ""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET hnsw.ef_search = {int(ef)}")
        for q in qs[:EXPLAINED]:
            text = "[" + ",".join(repr(float(x)) for x in q) + "]"
            lines = [r[0] for r in conn.execute(query, {"q": text, "c": 2 * K, "n": K})]
            execution.append(float(lines[-1].split(":")[1].split()[0]))
            planning.append(float(lines[-2].split(":")[1].split()[0]))
            plan = re.sub(r"'\[[^']{40,}\]'", "'[...]'", "\n".join(lines))
    return {
        "server_ms": float(np.median(execution)),
        "plan_ms": float(np.median(planning)),
        "plan": plan,
    }


def section_postgres(
    work: Path, rows: int, dims: int, qs: np.ndarray, opts: PgOptions
) -> dict[str, Any]:
    import kbgraph.retrieval._postgres._ranking as pg_ranking
    import kbgraph.retrieval._postgres._snapshot as pg_snapshot
    from kbgraph.retrieval._filters import SearchFilters
    from kbgraph.retrieval._postgres import PostgresStore

    root, built = _root(rows, dims, opts)
    folder = root / "docs"  # the knowledge base's key: the same path every time it is reused
    try:
        with _server(root, opts) as url:
            if built is None:
                built = _build(url, folder, rows, dims, opts)
                if opts.data is not None:
                    (root / RECORD).write_text(json.dumps(built, indent=1))
                built["reused"] = False
            else:
                built["reused"] = True
            result: dict[str, Any] = {**built, **_sizes(url)}
            folder.mkdir(exist_ok=True)
            only = SearchFilters(paths=(FILTERED,))

            def timed(
                ef: int, filters: SearchFilters | None = None
            ) -> tuple[list[list[int]], list[float]]:
                # A store opened per setting: EF_SEARCH_MIN is read as the store sets up.
                pg_ranking.EF_SEARCH_MIN = ef
                snapshot = PostgresStore(url, folder.resolve()).open()

                def run(q: np.ndarray) -> list[int]:
                    with snapshot.ranking("q", lambda _: q) as ranking:
                        return [
                            k - 1 for k in ranking.top("vector", K, filters)[0]
                        ]  # rid = row + 1

                try:
                    return latency(run, qs)
                finally:
                    snapshot.close()

            default_ef = pg_ranking.EF_SEARCH_MIN
            try:
                # One untimed pass at the widest setting: the table's pages the queries
                # read come into memory (the first timed pass was slower than the same
                # setting timed later in the sweep: 7.4 against 5.7 ms p50 at 1M).
                timed(max((default_ef, *opts.ef_sweep)))
                result["found"], result["times"] = timed(default_ef)
                result["filtered"], result["filtered_times"] = timed(default_ef, only)
                sweep = {}
                for ef in opts.ef_sweep:
                    found, times = timed(ef)
                    sweep[str(ef)] = {"found": found, "times": times}
                    sweep[str(ef)].update(_explain(url, qs, dims, result["halfvec"], ef))
            finally:
                pg_ranking.EF_SEARCH_MIN = default_ef
            result.update(ef_search=default_ef, sweep=sweep, server_mb=_server_mb(root))
            # The store's filtered path: few allowed rows are scanned exactly.
            result["filter_exact"] = rows // SOURCES < pg_snapshot.EXACT_BELOW
    finally:
        if opts.data is None:
            shutil.rmtree(root, ignore_errors=True)
    return result


def options_record(opts: PgOptions) -> dict[str, Any]:
    return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(opts).items()}


def commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
        check=False,
    )
    return done.stdout.strip() or "unknown"
