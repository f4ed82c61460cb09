"""What the read leases of a memory-mapped generation cost (issue 42 hole 4): warm search
p50 with and without them, and how long a writer waits on an idle reader.

    python benchmarks/bench_mapped_leases.py                # SciFact, 5,183 files
    python benchmarks/bench_mapped_leases.py --limit 1000   # a smaller folder

The SciFact corpus is indexed with the ``fake`` model (as in bench_search_latency.py) and
opened twice in this process with ``KBGRAPH_IN_MEMORY_MAX_MB=0`` (every generation
mapped): once as kbgraph opens it, holding a lease on each file, and once with leases
switched off (the maps as they were before them). On one BLAS thread, after a warm-up
pass each, ``--rounds`` rounds alternate the two (which goes first alternates too), each
running every test query once per mode, top 10; the p50 of each side over all rounds, and
the CPU seconds of each side (both share the one watcher thread: this compares only what a
search does more). First, what the leases add by themselves: the CPU µs of the guard every
search enters and leaves, with and without leases, and the watcher thread's CPU per second
of an idle reader. Last, the reader idle: the median over 5 tries of the time another
process's ``open(O_RDWR)`` of vectors.bin waits (the lease's break), and of the next
search, which opens the generation again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paired import alternate  # noqa: E402
from _quick import parse  # noqa: E402
from bench_engine import blas_threads, load_beir  # noqa: E402

SCIFACT = ROOT.parent / "shared" / "data" / "beir" / "scifact"
MODES = ("bm25", "vector", "hybrid")
_OPEN_FOR_WRITING = (
    "import os, sys, time; t = time.perf_counter(); os.close(os.open(sys.argv[1], os.O_RDWR));"
    " print(time.perf_counter() - t)"
)


@contextmanager
def _leases_off() -> Any:
    from kbgraph.retrieval._folder import _leases

    saved = _leases._LEASES
    _leases._LEASES = False
    try:
        yield
    finally:
        _leases._LEASES = saved


def _round(kb: Any, queries: Sequence[str], mode: str, into: list[float]) -> float:
    cpu = time.process_time()
    for query in queries:
        start = time.perf_counter()
        kb.search(query, top_k=10, mode=mode)
        into.append(time.perf_counter() - start)
    return time.process_time() - cpu


def compare(folder: Path, queries: Sequence[str], rounds: int) -> dict[str, float]:
    """p50 (ms) and CPU seconds per mode, leased vs not, alternating rounds."""
    from kbgraph.retrieval import KnowledgeBase

    leased = KnowledgeBase(folder, embedding="fake")
    bare = KnowledgeBase(folder, embedding="fake")
    from kbgraph.retrieval._folder import _leases

    leased.search(queries[0], top_k=1)  # opens the generation: leases taken
    with _leases_off():
        bare.search(queries[0], top_k=1)
    held = len(_leases._watcher._leases)
    if held != 1:  # measuring the wrong thing: say so rather than print figures
        raise SystemExit(f"{held} generations hold leases, expected 1 (no leases here?)")
    out: dict[str, float] = {}
    try:
        for mode in MODES:
            kbs = {"leased": leased, "no lease": bare}
            lats: dict[str, list[float]] = {name: [] for name in kbs}
            for kb in kbs.values():
                _round(kb, queries, mode, [])  # warm-up: pages mapped, columns checked
            sides = {name: partial(_round, kbs[name], queries, mode, lats[name]) for name in kbs}
            cpus = alternate(sides, rounds)
            for name, lat in lats.items():
                out[f"{mode} p50 ms, {name}"] = 1000 * statistics.median(lat)
                out[f"{mode} CPU s, {name}"] = sum(cpus[name])
            out[f"{mode} p50 leased/no lease"] = (
                out[f"{mode} p50 ms, leased"] / out[f"{mode} p50 ms, no lease"]
            )
    finally:
        leased.close()
        bare.close()
    return out


def overheads(folder: Path, calls: int = 100_000) -> dict[str, float]:
    """What the leases add by themselves: one guarded use of the maps (``reading()``,
    entered and left, as every search does) with and without leases, in CPU µs; and the
    watcher thread's CPU per second of an idle reader holding them."""
    from kbgraph.retrieval._folder import IndexLayout
    from kbgraph.retrieval._folder._generation import IndexReader

    def per_call(reader: IndexReader) -> float:
        cpu = time.process_time()
        for _ in range(calls):
            with reader.reading():
                pass
        return 1e6 * (time.process_time() - cpu) / calls

    layout = IndexLayout(folder / ".kbgraph")
    leased = IndexReader(layout, lock_timeout=5.0)
    with _leases_off():
        bare = IndexReader(layout, lock_timeout=5.0)
    try:
        out = {
            "reading() CPU us, leased": per_call(leased),
            "reading() CPU us, no lease": per_call(bare),
        }
        cpu, wall = time.process_time(), time.perf_counter()
        time.sleep(5.0)  # idle: only the watcher runs
        share = (time.process_time() - cpu) / (time.perf_counter() - wall)
        out["watcher CPU ms per s, idle"] = 1000 * share
    finally:
        leased.close()
        bare.close()
    return out


def writer_wait(folder: Path, query: str, tries: int = 5) -> dict[str, float]:
    """Another process opens vectors.bin for writing (changing nothing) while the reader
    is idle: its wait, and the reader's next search (the generation opened again)."""
    from kbgraph.retrieval import KnowledgeBase

    waits, searches = [], []
    with KnowledgeBase(folder, embedding="fake") as kb:
        kb.search(query, top_k=10)
        vectors = next((folder / ".kbgraph").glob("gen-*/vectors.bin"))
        for _ in range(tries):
            done = subprocess.run(
                [sys.executable, "-c", _OPEN_FOR_WRITING, str(vectors)],
                capture_output=True,
                text=True,
                check=True,
            )
            waits.append(float(done.stdout))
            start = time.perf_counter()
            kb.search(query, top_k=10)
            searches.append(time.perf_counter() - start)
    return {
        "writer's wait on an idle reader ms": 1000 * statistics.median(waits),
        "next search (opens again) ms": 1000 * statistics.median(searches),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--limit", type=int, default=None, help="first N documents only")
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds per mode")
    args = parse(parser, argv, limit=20, rounds=2)
    os.environ["KBGRAPH_IN_MEMORY_MAX_MB"] = "0"  # every generation mapped
    data = load_beir(args.data)
    texts = data.texts[: args.limit]
    queries = data.queries[:20] if args.quick else data.queries
    from kbgraph.retrieval import KnowledgeBase

    with tempfile.TemporaryDirectory() as tmp, blas_threads(1):
        folder = Path(tmp) / "scifact"
        folder.mkdir()
        for doc_id, text in zip(data.doc_ids, texts, strict=False):
            (folder / f"{doc_id}.txt").write_text(text, encoding="utf-8")
        with KnowledgeBase(folder, embedding="fake") as kb:
            report = kb.index()
        print(
            f"{len(texts)} files, {report.stats.chunk_count} chunks, {len(queries)} queries, "
            f"{args.rounds} rounds"
        )
        figures = {
            **overheads(folder, 2_000 if args.quick else 100_000),
            **compare(folder, queries, args.rounds),
            **writer_wait(folder, queries[0]),
        }
        for name, value in figures.items():
            print(f"{name:<38} {value:10.3f}")


if __name__ == "__main__":
    main()
