"""What ``bench_load.py`` prints: a header (command, commit, machine, date, server
versions), then each section with the machine's load average before and after it, as
markdown tables; and the same as JSON (``--json OUT``)."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parents[1]
FRESH_TARGET_S = 5.0  # the writer's edits searchable within 5 s at 80 % of saturation


def utc_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def commit() -> str:
    """``git rev-parse --short HEAD``, with ``+changes`` when the work tree differs."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, text=True, capture_output=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return f"{head}+changes" if dirty else head


def machine() -> str:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{platform.node()}: {os.cpu_count()} CPUs ({model}), {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def versions(url: str, server: str) -> str:
    """The PostgreSQL server's and pgvector's versions, and LangGraph's packages."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            pg = conn.execute("SHOW server_version").fetchone()
            vector = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()
        store = f"PostgreSQL {pg[0] if pg else '?'} + pgvector {vector[0] if vector else '?'}"
    except psycopg.Error as exc:
        store = f"PostgreSQL ? ({type(exc).__name__})"
    packages = []
    for name in ("langgraph", "langgraph-api", "langgraph-cli", "langgraph-sdk"):
        try:
            packages.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            packages.append(f"{name} not installed")
    return f"{store} ({server}); {', '.join(packages)}"


DEV_NOTES = (
    "`langgraph dev` is one process with one event loop and an in-memory run queue: it runs "
    "at most `--n-jobs-per-worker` graph runs at once (when the option is absent the dev "
    "server runs 1, whatever its --help says: langgraph_api.cli sets N_JOBS_PER_WORKER to 1); "
    "it has no option for more worker processes (that is the LangGraph server on PostgreSQL "
    "and Redis, `langgraph up`). Its queue looks for new runs again 0.5 s after a look that "
    "found none (langgraph_runtime_inmem's Runs.next), so a run that reaches an idle server "
    "may wait up to 0.5 s before it starts: the idle agent pays that wait, busy servers "
    "less. Each run is a graph of several nodes, all on the server's one event loop and "
    "one GIL: runs at once share one core's worth of Python (one cached `KnowledgeBase` "
    "per knowledge base, whose searches may run at once, each on a pooled connection). "
    "Freshness is measured with the "
    "Python API (the writer publishes to PostgreSQL; the server reads the same rows)."
)
OPEN_NOTES = (
    "Open loop: Poisson arrivals at the offered rate for {seconds:g} s (seeded), served by "
    "{pool} agents; latency from each search's scheduled arrival, so queueing counts; every "
    "offered search is served (achieved/s: served ÷ the time to serve them all, drain "
    "included). The idle agent searched for {idle:g} s with {lo:g}-{hi:g} s pauses, while the "
    "writer wrote, as in every row. `agents busy`: the most searching at once (all of the "
    "pool: arrivals waited for an agent, which the latency includes). Freshness: seconds "
    "from an edit's write until the probe's search returned it (p50 / max; "
    "the probe searches every 0.1 s while an edit is unseen, apart from the rows' searches); "
    "the target at 80 % is ≤ 5 s."
)


def open_notes(args: argparse.Namespace) -> str:
    """The open-loop section's note: how it was run and what its columns mean."""
    lo, hi = args.idle_pause
    return OPEN_NOTES.format(
        seconds=args.seconds, pool=args.pool, idle=args.idle_seconds, lo=lo, hi=hi
    )


@dataclass
class Section:
    """One table: its rows, the load average before and after, and notes under it."""

    title: str
    kind: str  # "closed", "open" or "tenants"
    started: str = ""
    load_before: str = ""
    load_after: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@contextmanager
def measuring(title: str, kind: str, sections: list[Section]) -> Iterator[Section]:
    """A new section in ``sections``, its load average read before and after the block."""
    section = Section(title, kind, utc_now(), load_average())
    sections.append(section)
    print(f"{title} ...", file=sys.stderr, flush=True)
    try:
        yield section
    finally:
        section.load_after = load_average()


def header(versions_line: str) -> dict[str, str]:
    return {
        "command": shlex.join(["python", *sys.argv]),
        "commit": commit(),
        "machine": machine(),
        "date": utc_now() + " UTC",
        "versions": versions_line,
    }


def _f(x: float, digits: int = 1) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _closed_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| agents | searches/s | p50 ms | p95 ms | p99 ms | searches | errors | torn "
        "| writer runs | fresh p50 s | fresh max s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {_f(r['per_s'])} | {_f(r['p50'])} | {_f(r['p95'])} "
            f"| {_f(r['p99'])} | {r['searches']} | {r['errors']} | {r['torn']} "
            f"| {r['writer_runs']} | {_f(r['fresh_p50_s'], 2)} | {_f(r['fresh_max_s'], 2)} |"
        )
    return lines


def _verdict(r: dict[str, Any]) -> str:
    target = r.get("target")
    if target is None or math.isnan(r["ratio"]):
        return "–"
    return f"≤ {target:g}×: {'met' if r['ratio'] <= target else 'NOT met'}"


def _fresh(r: dict[str, Any]) -> str:
    text = f"{_f(r['fresh_p50_s'], 2)} / {_f(r['fresh_max_s'], 2)}"
    if r.get("level") == 0.8:
        ok = r["fresh_max_s"] <= FRESH_TARGET_S and not r["unseen"]
        text += f" (≤ {FRESH_TARGET_S:g} s: {'met' if ok else 'NOT met'})"
    return text


def _open_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| load | offered/s | achieved/s | p50 ms | p95 ms | p99 ms | p95 ÷ idle p95 "
        "| target | searches | errors | torn | fresh p50 / max s | writer runs | agents busy |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        busy = f"{r['peak_busy']} of {r['pool']}" if "pool" in r else "1"
        lines.append(
            f"| {r['name']} | {_f(r['offered_per_s'])} | {_f(r['achieved_per_s'])} "
            f"| {_f(r['p50'])} | {_f(r['p95'])} | {_f(r['p99'])} | {_f(r['ratio'], 2)} "
            f"| {_verdict(r)} | {r['searches']} | {r['errors']} | {r['torn']} | {_fresh(r)} "
            f"| {r['writer_runs']} | {busy} |"
        )
    return lines


def _tenants_line(rows: list[dict[str, Any]]) -> list[str]:
    t = rows[0]
    return [
        f"{t['tenants']} knowledge bases in one database: indexed in {t['index_s']:.0f} s; "
        f"{t['sampled']} searched: cold (open + search) p50 {t['cold_p50']:.1f} ms / p95 "
        f"{t['cold_p95']:.1f} ms, warm p50 {t['warm_p50']:.1f} ms / p95 "
        f"{t['warm_p95']:.1f} ms; results from another tenant: {t['leaks']} of "
        f"{t['results']}"
    ]


def print_report(head: dict[str, str], sections: list[Section]) -> None:
    print(f"\n`{head['command']}`, commit {head['commit']}, {head['date']}")
    print(f"machine: {head['machine']}")
    print(f"servers: {head['versions']}")
    tables = {"closed": _closed_table, "open": _open_table, "tenants": _tenants_line}
    for s in sections:
        print(f"\n### {s.title}\n")
        print(f"from {s.started} UTC; load average (1 / 5 / 15 min) before {s.load_before}, "
              f"after {s.load_after}\n")  # fmt: skip
        print("\n".join(tables[s.kind](s.rows)))
        for r in s.rows:
            if r.get("first_error"):
                print(f"\nfirst error, {r['name']}: {r['first_error']}")
        for note in s.notes:
            print(f"\n{note}")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_WAIT = re.compile(r"\brun_wait_time_ms=(\d+)")
_EXEC = re.compile(r"\brun_exec_ms=(\d+)")


def log_lines(log: Path) -> int:
    return len(log.read_text(errors="replace").splitlines())


def server_runs_note(log: Path, skip: int) -> str:
    """What ``langgraph dev``'s own log says of the runs after its first ``skip`` lines:
    how long each waited in the server's queue and how long it ran."""
    waits, runs = [], []
    for line in log.read_text(errors="replace").splitlines()[skip:]:
        line = _ANSI.sub("", line)
        wait, ran = _WAIT.search(line), _EXEC.search(line)
        if "Background run succeeded" in line and wait and ran:
            waits.append(int(wait.group(1)))
            runs.append(int(ran.group(1)))
    if not runs:
        return "The server's log holds no finished run for this section."
    w50, w95 = np.percentile(waits, [50, 95])
    r50, r95 = np.percentile(runs, [50, 95])
    return (
        f"The server's log ({log}), {len(runs)} runs: waited in its queue p50 {w50:.0f} / p95 "
        f"{w95:.0f} ms (run_wait_time_ms), ran p50 {r50:.0f} / p95 {r95:.0f} ms (run_exec_ms); "
        "the rest of a search's latency is outside the run (HTTP, the server's bookkeeping)."
    )


def dump_json(path: Path, head: dict[str, str], sections: list[Section]) -> None:
    data = {**head, "sections": [asdict(s) for s in sections]}
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
