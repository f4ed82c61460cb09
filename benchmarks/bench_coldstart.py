"""Cold-start figures: how long the first query takes in a fresh process, and where the time
goes.

    python benchmarks/bench_coldstart.py              # medians of 5, ~3 min on 2 cores
    python benchmarks/bench_coldstart.py --runs 1     # a quick check that it all runs
    python benchmarks/bench_coldstart.py --quick      # one run, no torch, no results file

Every figure is the median of ``--runs`` runs in this one invocation, on a copy of
``examples/docs`` indexed with the packaged all-MiniLM-L6-v2 model:

- ``cold search, local model``: a fresh ``kbgraph search FOLDER QUERY`` process (hybrid, the
  query embedded on the ONNX path), wall time from spawn to exit, and its peak RSS;
- ``cold search, local model on torch``: the same with ``KBGRAPH_LOCAL_BACKEND=torch``, the
  path every cold search took before the ONNX export;
- ``cold search, BM25``: ``kbgraph search ... --mode bm25`` (no model);
- ``langgraph dev, first query``: a fresh ``langgraph dev`` server; the time from its ``/ok``
  answering to the end of the first ``rag_subgraph`` run on the folder (local model);
- ``live edit to searchable``: ``KnowledgeBase(live=True)`` with the local model in this
  process; the time from writing a small file to the first search that finds it.

Then one fresh process per backend splits the cold path into imports, model load and the
first encode. Time figures need a quiet machine; the script prints what it measured and
writes ``benchmarks/results/bench-coldstart.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _quick import parse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support: the langgraph dev launcher the e2e tests use
EXAMPLES = REPO / "examples" / "docs"
RESULTS = REPO / "benchmarks" / "results"
QUERY = "How do I configure the retry policy?"
BIN = Path(sys.executable).parent
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
}
_SPLIT = r"""
import json, sys, time
t0 = time.perf_counter()
backend = sys.argv[1]
if backend == "onnx":
    import onnxruntime, tokenizers
else:
    import sentence_transformers
t1 = time.perf_counter()
from kbgraph.retrieval._embeddings import LocalEmbeddings
t1b = time.perf_counter()
model = LocalEmbeddings()
assert model.backend == backend, model.backend
if backend == "onnx":
    model._encoder()
else:
    model.client
t2 = time.perf_counter()
model.embed_query("How do I configure the retry policy?")
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "kbgraph_import_s": t1b - t1, "load_s": t2 - t1b,
                  "first_encode_s": t3 - t2}))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**env, **OFFLINE, **extra}


def timed_process(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds from spawn to exit, and the process's peak RSS in MiB (wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024  # KiB on Linux


def median_of(runs: int, measure: Callable[[], tuple[float, ...]]) -> list[float]:
    samples = [measure() for _ in range(runs)]
    return [statistics.median(column) for column in zip(*samples, strict=True)]


def prepare(work: Path) -> Path:
    """A copy of examples/docs indexed with the local model; loading it with
    sentence-transformers also writes the ONNX export the cold searches use."""
    folder = Path(
        shutil.copytree(EXAMPLES, work / "docs", ignore=shutil.ignore_patterns(".kbgraph"))
    )
    subprocess.run(
        [str(BIN / "kbgraph"), "index", str(folder), "--embedding", "local"],
        env=_env(),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    # In a child: a model loaded here would count in the peak RSS of every process this
    # one spawns (ru_maxrss sees the parent's pages between fork and exec).
    check = "from kbgraph.retrieval._embeddings import LocalEmbeddings as L; print(L().backend)"
    backend = subprocess.run(
        [sys.executable, "-c", check], env=_env(), capture_output=True, text=True, check=True
    ).stdout.strip()
    if backend != "onnx":
        raise SystemExit("no ONNX export after indexing: is onnx / onnxruntime installed?")
    return folder


def cold_searches(folder: Path, runs: int, torch: bool = True) -> dict[str, dict[str, float]]:
    search = [str(BIN / "kbgraph"), "search", str(folder), QUERY]
    cases = {
        "cold search, local model": (search, _env()),
        "cold search, local model on torch": (search, _env(KBGRAPH_LOCAL_BACKEND="torch")),
        "cold search, BM25": ([*search, "--mode", "bm25"], _env()),
    }
    if not torch:  # a smoke run: torch's imports alone take 15 s
        del cases["cold search, local model on torch"]
    out = {}
    for name, (command, env) in cases.items():
        wall, rss = median_of(runs, lambda c=command, e=env: timed_process(c, e))
        out[name] = {"seconds": wall, "peak_rss_mib": rss}
        print(f"  {name}: {wall:.2f} s, {rss:.0f} MiB", file=sys.stderr)
    return out


def first_server_query(folder: Path, log: Path) -> float:
    """Seconds from a fresh server's first /ok to the end of its first subgraph run."""
    from langgraph_sdk import get_sync_client

    from tests.support.langgraph_dev import start_dev_server, stop_dev_server

    allowed = {"KBGRAPH_ALLOWED_FOLDERS": str(folder)}  # the served guard refuses others
    server = start_dev_server(log, timeout=300, env=allowed)
    ready = time.perf_counter()  # start_dev_server returns as /ok first answers
    try:
        out = get_sync_client(url=server.url).runs.wait(
            None,
            "rag_subgraph",
            input={"messages": [{"role": "user", "content": QUERY}]},
            context={"knowledge_bases": [{"name": "docs", "folder": str(folder)}]},
        )
        took = time.perf_counter() - ready
    finally:
        stop_dev_server(server.process)
    if not isinstance(out, dict) or not out.get("rag_citations"):
        raise SystemExit(f"the first query cited nothing: {out}")
    return took


def live_edit_to_searchable(folder: Path, runs: int) -> float:
    from kbgraph.retrieval import KnowledgeBase

    samples = []
    with KnowledgeBase(folder, embedding="local", live=True) as kb:
        kb.ensure_fresh()
        for _ in range(runs):
            word = f"zq{uuid.uuid4().hex[:10]}"
            start = time.perf_counter()
            (folder / "live-edit.md").write_text(f"# Live\n\nThe marker is {word}.\n", "utf-8")
            while not any(word in r.chunk.text for r in kb.search(word, top_k=3, mode="bm25")):
                if time.perf_counter() - start > 120:
                    raise SystemExit("a live edit was not searchable within 120 s")
                time.sleep(0.01)
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def split_cold_path(backends: tuple[str, ...] = ("onnx", "torch")) -> dict[str, dict[str, float]]:
    out = {}
    for backend in backends:
        proc = subprocess.run(
            [sys.executable, "-c", _SPLIT, backend],
            env=_env(KBGRAPH_LOCAL_BACKEND=backend),
            capture_output=True,
            text=True,
            check=True,
        )
        out[backend] = json.loads(proc.stdout)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--skip-server", action="store_true", help="no langgraph dev figure")
    args = parse(parser, runs=1)
    with tempfile.TemporaryDirectory(prefix="kbgraph-coldstart-") as tmp:
        work = Path(tmp)
        print("indexing examples/docs with the local model …", file=sys.stderr)
        folder = prepare(work)
        figures: dict[str, Any] = cold_searches(folder, args.runs, torch=not args.quick)
        if not args.skip_server:
            took = statistics.median(
                first_server_query(folder, work / "server.log") for _ in range(args.runs)
            )
            figures["langgraph dev, first query"] = {"seconds": took}
            print(f"  langgraph dev, first query: {took:.2f} s", file=sys.stderr)
        figures["live edit to searchable"] = {"seconds": live_edit_to_searchable(folder, args.runs)}
        split = split_cold_path(("onnx",) if args.quick else ("onnx", "torch"))
    report(figures, split, args.runs, record=not args.quick)


def report(
    figures: dict[str, Any], split: dict[str, dict[str, float]], runs: int, record: bool = True
) -> None:
    local = figures["cold search, local model"]["seconds"]
    bm25 = figures["cold search, BM25"]["seconds"]
    print(f"\n| figure (median of {runs}) | seconds | peak RSS MiB |\n|---|---:|---:|")
    for name, value in figures.items():
        rss = value.get("peak_rss_mib")
        print(f"| {name} | {value['seconds']:.2f} | {'' if rss is None else f'{rss:.0f}'} |")
    print(f"\ncold local / cold BM25 = {local / bm25:.2f}x (target <= 2x)")
    if "langgraph dev, first query" in figures:
        first = figures["langgraph dev, first query"]["seconds"]
        print(f"first query after langgraph dev is ready = {first:.2f} s (target <= 3 s)")
    print(
        "\n| backend | runtime imports s | kbgraph import s | model load s | first encode s |"
        "\n|---|---:|---:|---:|---:|"
    )
    for backend, parts in split.items():
        print(
            f"| {backend} | {parts['import_s']:.2f} | {parts['kbgraph_import_s']:.2f} | "
            f"{parts['load_s']:.2f} | {parts['first_encode_s']:.3f} |"
        )
    if record:
        write_record(figures, split, runs)


def write_record(figures: dict[str, Any], split: dict[str, dict[str, float]], runs: int) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "bench-coldstart.json"
    record = {
        "runs": runs,
        "figures": figures,
        "split": split,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }
    out.write_text(json.dumps(record, indent=1), encoding="utf-8")
    print(f"\nwrote {out.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
