"""The rows of ``bench_load.py``'s tables, for any agents (the Python API's, a ``langgraph
dev`` server's, a ``kbgraph mcp`` server's): the closed loop (saturation), the idle agent
and the open loop at levels of the saturation, each while the writer writes; with a meter,
each row also says how much CPU each part of the system spent per search."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _load_corpus import QUERIES, Tally, WriterStats, writing
from _load_open import Search, Visible, latency_summary, run_closed, run_idle, run_open

TARGETS = {0.5: 3.0, 0.8: 6.0}  # level of saturation: most p95 may be, × the idle agent's

# ``agents(n)``: a search function over n agents (agent k searches with ``search(k, q)``).
Agents = Callable[[int], AbstractContextManager[Search]]
# CPU seconds so far, by part (``server``, ``PostgreSQL``, ``bench``): read around a row.
Meter = Callable[[], dict[str, float]]


@dataclass
class Bench:
    """What every row runs against: the folder the writer edits, the store, the writer's
    pause between runs (0: back to back), how the freshness probe searches (``None``: a
    ``KnowledgeBase`` of its own) and the CPU meter (``None``: none)."""

    folder: Path
    url: str
    pause: float = 0.0
    seen: Visible | None = None
    meter: Meter | None = None

    def writing(self) -> AbstractContextManager[WriterStats]:
        return writing(self.folder, self.url, self.pause, self.seen)

    @contextmanager
    def metered(self, row: dict[str, Any]) -> Iterator[None]:
        """Adds ``cpu_ms`` (per search) and ``cores`` (CPU ÷ wall time) by part to ``row``
        once the block ended and ``row["searches"]`` is set."""
        if self.meter is None:
            yield
            return
        before, start = self.meter(), time.perf_counter()
        yield
        after, wall = self.meter(), time.perf_counter() - start
        spent = {part: after[part] - before.get(part, 0.0) for part in after}
        searches = max(1, row.get("searches", 0))
        row["cpu_ms"] = {part: s * 1000 / searches for part, s in spent.items()}
        row["cores"] = {part: s / wall for part, s in spent.items()}


def tally_row(tally: Tally, writer: WriterStats) -> dict[str, Any]:
    return {
        "searches": len(tally.ms),
        **latency_summary(tally.ms),
        "results": tally.results,
        "errors": len(tally.errors),
        "first_error": tally.errors[0] if tally.errors else "",
        "torn": tally.torn,
        "writer_runs": writer.runs,
        "writer_failures": writer.failures,
        **writer.fresh,
    }


def closed_rows(
    label: str, agents: Agents, counts: list[int], seconds: float, bench: Bench
) -> list[dict[str, Any]]:
    rows = []
    for n in counts:
        print(f"  {label}, {n} agents, closed loop", file=sys.stderr, flush=True)
        tally = Tally()
        row: dict[str, Any] = {"name": f"{label}, {n} agents", "agents": n}
        with agents(n) as search, bench.writing() as writer, bench.metered(row):
            run_closed(n, seconds, search, tally, QUERIES)
            row |= {"searches": len(tally.ms)}
        row |= {"per_s": len(tally.ms) / seconds}
        rows.append(row | tally_row(tally, writer))
    return rows


def idle_row(label: str, search: Search, args: argparse.Namespace, bench: Bench) -> dict[str, Any]:
    print(f"  {label}, one idle agent", file=sys.stderr, flush=True)
    tally = Tally()
    with bench.writing() as writer:
        run_idle(args.idle_seconds, search, tuple(args.idle_pause), tally, QUERIES)
    row = {"name": f"{label}, one idle agent", "level": 0.0, "offered_per_s": float("nan")}
    row |= {"achieved_per_s": len(tally.ms) / args.idle_seconds, "ratio": 1.0}
    return row | tally_row(tally, writer)


def open_rows(
    label: str, agents: Agents, saturation: float, args: argparse.Namespace, bench: Bench
) -> list[dict[str, Any]]:
    """The idle agent, then each level of ``saturation`` offered as Poisson arrivals."""
    with agents(args.pool) as search:
        rows = [idle_row(label, search, args, bench)]
        for level in args.levels:
            rate = level * saturation
            print(f"  {label}, {level:.0%} = {rate:.1f}/s, open loop", file=sys.stderr, flush=True)
            tally = Tally()
            row: dict[str, Any] = {"name": f"{level:.0%} of {saturation:.1f}/s", "level": level}
            with bench.writing() as writer, bench.metered(row):
                run = run_open(rate, args.seconds, search, args.pool, tally, QUERIES)
                row |= {"searches": len(tally.ms)}
            row |= {"rate": rate, "offered_per_s": run.offered / args.seconds}
            row |= {"achieved_per_s": len(tally.ms) / run.elapsed_s, "target": TARGETS.get(level)}
            row |= {"peak_busy": run.peak_busy, "pool": run.pool}
            row |= {"late_dispatch_ms": run.late_dispatch_ms, "elapsed_s": run.elapsed_s}
            row |= tally_row(tally, writer)
            row["ratio"] = row["p95"] / rows[0]["p95"]
            rows.append(row)
    return rows


def saturation_of(rows: list[dict[str, Any]], given: float | None) -> float:
    """``given``, else the best searches/s of the closed-loop rows."""
    return given if given else max(r["per_s"] for r in rows)
