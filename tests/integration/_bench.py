"""What the benchmark smoke tests (test_bench_commands*.py) share: a tiny BEIR folder and
a benchmark script run in a subprocess, as its published command is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = (
    "protein", "cell", "gene", "vaccine", "virus", "tumour",
    "insulin", "neuron", "enzyme", "antibody", "bacteria", "hormone",
)  # fmt: skip


def beir_folder(root: Path, splits: tuple[str, ...] = ("test",)) -> Path:
    """A BEIR folder of a dozen documents (more than a top 10), three queries that share
    words with them and a qrels file for each of ``splits`` (the same three)."""
    docs = [
        {"_id": f"d{i}", "title": f"{w} study", "text": f"The {w} and the {WORDS[i - 1]} {i}."}
        for i, w in enumerate(WORDS)
    ]
    queries = [{"_id": f"q{i}", "text": f"{w} effects"} for i, w in enumerate(WORDS[:3])]
    root.mkdir()
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    for name in ("queries.jsonl", "queries_all.jsonl"):  # the test split's, every split's
        (root / name).write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels").mkdir()
    rows = "".join(f"q{i}\td{i}\t1\n" for i in range(3))
    for split in splits:
        (root / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return root


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python *args`` from the repository root, this checkout's code first."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def run_quick(script: str, *args: str) -> str:
    """``benchmarks/<script> --quick *args``: its stdout, once it exited 0."""
    done = run(f"benchmarks/{script}", "--quick", *args)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout
