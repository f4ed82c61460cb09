"""How long the event loop stalls while kbgraph's async API works. Prints figures; not a test.

    python benchmarks/bench_async.py [--folder examples/docs] [--queries 50] [--embedding local]
    python benchmarks/bench_async.py --folder DIR --quick   # 3 queries, the fake model

An asyncio heartbeat sleeps ``--tick-ms`` (default 5 ms) in a loop and records how late
each wake-up is; meanwhile warm queries run one after another through
``KnowledgeBase.asearch`` and then through the ``rag_search`` tool's coroutine (the whole
retrieval subgraph). The figure is the heartbeat's worst lateness (the longest the loop
was blocked) and its 99th percentile, with the query latencies beside them. Target: the
worst stall of a warm ``asearch`` stays under 50 ms (issue 10). The index is built (or
reused) first, and one query warms the model before measuring.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _quick import parse
from langgraph.prebuilt import ToolRuntime

from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._tool import TOOL_NAME, rag_search
from kbgraph.retrieval import KnowledgeBase

REPO_ROOT = Path(__file__).resolve().parents[1]
QUERIES = (
    "How do I configure the retry policy?",
    "What does error HB-601 mean?",
    "How are webhooks signed?",
    "How do I rotate an API key without downtime?",
    "What is the default timeout?",
)


async def measure(
    work: Callable[[int], Awaitable[Any]], queries: int, tick: float
) -> tuple[list[float], list[float]]:
    """Run ``work(i)`` ``queries`` times beside a heartbeat; return the heartbeat's lateness
    and the queries' latencies, both in ms."""
    late: list[float] = []
    done = False

    async def heartbeat() -> None:
        while not done:
            start = time.perf_counter()
            await asyncio.sleep(tick)
            late.append((time.perf_counter() - start - tick) * 1000)

    beat = asyncio.create_task(heartbeat())
    latencies = []
    for i in range(queries):
        start = time.perf_counter()
        await work(i)
        latencies.append((time.perf_counter() - start) * 1000)
    done = True
    await beat
    return late, latencies


def row(name: str, late: list[float], latencies: list[float]) -> str:
    p99 = statistics.quantiles(late, n=100, method="inclusive")[98] if len(late) >= 2 else late[0]
    return (
        f"| {name} | {max(late):.1f} | {p99:.1f} | {statistics.median(latencies):.1f} | "
        f"{len(latencies)} |"
    )


def tool_call(settings: RagSettings, query: str) -> dict[str, Any]:
    runtime = ToolRuntime(
        state={"messages": []}, context=settings, config={}, stream_writer=lambda _: None,
        tool_call_id="bench", store=None,
    )  # fmt: skip
    return {
        "type": "tool_call", "id": "bench", "name": TOOL_NAME,
        "args": {"query": query, "runtime": runtime},
    }  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    folder = Path(args.folder).resolve()
    kb = KnowledgeBase(folder, embedding=args.embedding)
    await kb.aindex()
    await kb.asearch(QUERIES[0])  # warm: the model is loaded and the index mapped
    tick = args.tick_ms / 1000

    async def search(i: int) -> None:
        await kb.asearch(QUERIES[i % len(QUERIES)], top_k=5)

    settings = RagSettings(
        knowledge_bases=[{"name": folder.name, "folder": str(folder)}], embedding=args.embedding
    )
    await rag_search.ainvoke(tool_call(settings, QUERIES[0]))  # warm the subgraph's cache

    async def tool(i: int) -> None:
        await rag_search.ainvoke(tool_call(settings, QUERIES[i % len(QUERIES)]))

    print(f"folder {folder}, embedding {args.embedding}, heartbeat every {args.tick_ms} ms")
    print("| path | worst stall, ms | p99 stall, ms | query median, ms | queries |")
    print("|---|---|---|---|---|")
    print(row("KnowledgeBase.asearch", *await measure(search, args.queries, tick)))
    print(row("rag_search.ainvoke (subgraph)", *await measure(tool, args.queries, tick)))
    kb.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default=str(REPO_ROOT / "examples" / "docs"))
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--embedding", default="local")
    parser.add_argument("--tick-ms", type=float, default=5.0)
    asyncio.run(main(parse(parser, queries=3, embedding="fake")))
