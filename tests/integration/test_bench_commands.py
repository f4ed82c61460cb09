"""Published benchmark commands, each run in a small mode (``--quick``) in a subprocess on
tiny inputs, so that none can break unseen (issue 43): the figures are not checked, only
that the command runs to its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # a real PostgreSQL server, the real script

ROOT = Path(__file__).resolve().parents[2]


def _beir_folder(root: Path) -> Path:
    """A BEIR folder of a few documents and queries that share words with them."""
    words = ("protein", "cell", "gene", "vaccine", "virus", "tumour", "insulin", "neuron")
    docs = [
        {"_id": f"d{i}", "title": f"{w} study", "text": f"The {w} and the {words[i - 1]} {i}."}
        for i, w in enumerate(words)
    ]
    queries = [{"_id": f"q{i}", "text": f"{w} effects"} for i, w in enumerate(words[:3])]
    root.mkdir()
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels").mkdir()
    rows = "".join(f"q{i}\td{i}\t1\n" for i in range(3))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return root


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_bench_pg_quality_lexical_quick(tmp_path: Path) -> None:
    """Failed with ``query parameter missing: chunks`` in its EXPLAIN helper; one server
    start, a few seconds."""
    data = _beir_folder(tmp_path / "beir")
    done = _run("benchmarks/bench_pg_quality.py", str(data), "--section", "lexical", "--quick")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "EXPLAIN ANALYZE" in done.stdout
    assert "| folder index |" in done.stdout
