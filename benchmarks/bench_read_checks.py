"""What the read-time checks cost a search (issue 42: at most 5 % of search p50). Before
every search a reader stats each file of its generation (``MappedFiles.changed``: a file
shrunk, replaced or changed in place since the open is refused, or checked again), so a
long-running server notices damage as ``kbgraph search`` does; this prints search p50
with that check and without it, on a generation held in memory (the default under
256 MiB), and the check's own cost.

    python benchmarks/bench_read_checks.py                    # the httpx docs, 20 rounds
    python benchmarks/bench_read_checks.py --folder DIR --rounds 40

The folder is copied and indexed with the ``fake`` model (no model time in a search). On
one BLAS thread, after a warm-up, ``--rounds`` rounds alternate the two sides (which goes
first alternates too), each running every query once per mode, top 10; "without" replaces
the check by a no-op for the round. The p50 of each side over all its searches, and the
ratio; the median µs of one ``changed()`` call over ``--calls`` calls, and its share of a
search p50 without it (steadier than the ratio on a busy machine).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paired import alternate  # noqa: E402
from _quick import parse  # noqa: E402
from bench_engine import blas_threads  # noqa: E402

HTTPX_DOCS = ROOT.parent / "shared" / "data" / "corpora" / "httpx-docs"
QUERIES = (
    "timeout configuration", "proxy settings", "async client", "authentication", "http2",
    "streaming responses", "cookies", "follow redirects", "ssl certificate verification",
    "event hooks", "retries on connection errors", "upload files multipart",
)  # fmt: skip
MODES = ("bm25", "hybrid")


@contextmanager
def _checks_off() -> Iterator[None]:
    from kbgraph.retrieval._folder._mapped import MappedFiles

    saved = MappedFiles.changed
    MappedFiles.changed = lambda self: False  # type: ignore[method-assign]
    try:
        yield
    finally:
        MappedFiles.changed = saved  # type: ignore[method-assign]


def _round(
    search: Callable[[str, str], object], queries: tuple[str, ...]
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for mode in MODES:
        for query in queries:
            start = time.perf_counter()
            search(query, mode)
            times[mode].append(time.perf_counter() - start)
    return times


def _compare(kb: object, rounds: int, queries: tuple[str, ...]) -> dict[str, dict[str, float]]:
    def search(query: str, mode: str) -> object:
        return kb.search(query, mode=mode, top_k=10)  # type: ignore[attr-defined]

    _round(search, queries)  # warm-up
    with _checks_off():
        _round(search, queries)

    def without() -> dict[str, list[float]]:
        with _checks_off():
            return _round(search, queries)

    sides = alternate({"with": lambda: _round(search, queries), "without": without}, rounds)
    return {
        mode: {
            side: statistics.median([t for got in runs for t in got[mode]])
            for side, runs in sides.items()
        }
        for mode in MODES
    }


def _check_cost(calls: int) -> float:
    import gc

    from kbgraph.retrieval._folder._mapped import MappedFiles

    mapped = next(o for o in gc.get_objects() if isinstance(o, MappedFiles))
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        mapped.changed()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=HTTPX_DOCS)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=5000)
    args = parse(parser, argv, rounds=2, calls=50)
    from kbgraph.retrieval import KnowledgeBase

    queries = QUERIES[:3] if args.quick else QUERIES
    with tempfile.TemporaryDirectory() as tmp, blas_threads(1):
        folder = Path(tmp) / "docs"
        shutil.copytree(args.folder, folder, ignore=shutil.ignore_patterns(".kbgraph"))
        kb = KnowledgeBase(folder, embedding="fake")
        report = kb.index()
        figures = _compare(kb, args.rounds, queries)
        cost = _check_cost(args.calls)
    chunks = report.stats.chunk_count
    print(f"# Read-time checks: {args.folder.name}, {chunks} chunks (held in memory)")
    print(f"{args.rounds} rounds x {len(queries)} queries per mode, top 10, one BLAS thread\n")
    print("| mode | p50 with checks (ms) | p50 without (ms) | ratio | one check / p50 without |")
    print("|---|---:|---:|---:|---:|")
    for mode, p50 in figures.items():
        ratio, share = p50["with"] / p50["without"], cost / p50["without"]
        with_ms, without_ms = p50["with"] * 1e3, p50["without"] * 1e3
        print(f"| {mode} | {with_ms:.3f} | {without_ms:.3f} | {ratio:.3f} | {share:.1%} |")
    print(f"\nOne check (`MappedFiles.changed`), median of {args.calls}: {cost * 1e6:.1f} µs")


if __name__ == "__main__":
    main()
