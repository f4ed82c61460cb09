"""Cold start of ``kbgraph mcp`` to its first answered ``search``, beside ``kbgraph search``
on the same folder and query (issue 32's target: at most 1.2x).

    python benchmarks/bench_mcp_coldstart.py               # medians of 5
    python benchmarks/bench_mcp_coldstart.py --runs 1      # a quick check that it runs
    python benchmarks/bench_mcp_coldstart.py --quick       # one run, the fake model: a smoke run
    python benchmarks/bench_mcp_coldstart.py --folder /path/to/indexed/folder

Both are fresh processes, timed from spawn to the results: ``kbgraph search FOLDER QUERY
--json`` to its exit; ``kbgraph mcp FOLDER`` (stdio) to the JSON-RPC response of its first
``tools/call search``, after ``initialize`` (raw pipes: the client costs nothing here).
Without ``--folder``, a copy of ``examples/docs`` is indexed first with ``--embedding``
(default ``local``: the packaged model, so both processes load it). Runs alternate between
the two commands, so that a machine's load changes both alike, and the ratio is printed both
as the ratio of the medians and as the median of the run-by-run ratios. Timings need a quiet
machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from _quick import parse

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "docs"
QUERY = "How do I configure the retry policy?"
BIN = Path(sys.executable).parent
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def time_search(folder: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [str(BIN / "kbgraph"), "search", str(folder), QUERY, "--json"],
        check=True,
        capture_output=True,
        env=ENV,
    )
    return time.perf_counter() - start


def _rpc(n: int, method: str, params: Mapping[str, object]) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n"
    ).encode()


def time_mcp(folder: Path) -> float:
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "b", "version": "0"},
    }
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(BIN / "kbgraph"), "mcp", str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=ENV,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_rpc(1, "initialize", init))
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    proc.stdin.write(_rpc(2, "tools/call", {"name": "search", "arguments": {"query": QUERY}}))
    proc.stdin.flush()
    for line in proc.stdout:
        message = json.loads(line)
        if message.get("id") == 2:
            elapsed = time.perf_counter() - start
            if message["result"].get("isError"):
                raise SystemExit(f"search failed: {message['result']['content'][0]['text']}")
            break
    else:
        raise SystemExit("kbgraph mcp ended without answering")
    proc.stdin.close()
    proc.wait(60)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--folder", type=Path, default=None, help="An indexed folder.")
    parser.add_argument("--embedding", default="local")
    args = parse(parser, runs=1, embedding="fake")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder
        if folder is None:
            folder = Path(tmp) / "docs"
            shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".kbgraph"))
            subprocess.run(
                [
                    str(BIN / "kbgraph"),
                    "index",
                    str(folder),
                    "--embedding",
                    args.embedding,
                    "--quiet",
                ],
                check=True,
                env=ENV,
            )
        time_search(folder), time_mcp(folder)  # warm the file cache for both
        search, mcp = [], []
        for _ in range(args.runs):
            search.append(time_search(folder))
            mcp.append(time_mcp(folder))
    s, m = statistics.median(search), statistics.median(mcp)
    print(f"folder: {args.folder or 'examples/docs (copy)'}; runs: {args.runs}")
    print(f"kbgraph search, cold:               {s:.2f} s (median; {_all(search)})")
    print(f"kbgraph mcp, cold to first search:  {m:.2f} s (median; {_all(mcp)})")
    print(f"ratio mcp / search:                 {m / s:.2f}x (target <= 1.2x)")
    # Run by run: each mcp run beside the search run just before it, so that a machine
    # whose speed drifts (a shared one) moves both alike.
    paired = statistics.median(b / a for a, b in zip(search, mcp, strict=True))
    print(f"ratio mcp / search, run by run:     {paired:.2f}x (median)")


def _all(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


if __name__ == "__main__":
    main()
