"""Published benchmark commands in their small mode (``--quick``, issue 43), second part
(see test_bench_commands.py): the ones that start ``kbgraph`` processes or answer
questions. Only that each runs to its report is checked."""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from tests.integration._bench import ROOT, run_quick
from tests.support.gguf import smollm2_path

sys.path.insert(0, str(ROOT / "benchmarks"))
from judge_dev_sets import SUMMEDITS_DOMAINS  # the domains the script reads, written here

pytestmark = pytest.mark.integration  # real processes, the real scripts

EXAMPLES = ROOT / "examples" / "docs"


def _docs(tmp_path: Path) -> Path:
    """A copy of examples/docs: no index is written beside the repository's own."""
    return Path(
        shutil.copytree(EXAMPLES, tmp_path / "docs", ignore=shutil.ignore_patterns(".kbgraph"))
    )


def test_bench_coldstart_quick() -> None:
    """Indexes examples/docs with the local model, then cold processes and one langgraph dev
    server (it failed: the served guard refused the benchmark's folder): about 40 s, torch's
    imports, which the full run also times, left out."""
    out = run_quick("bench_coldstart.py")
    assert "| cold search, BM25 |" in out
    assert "first query after langgraph dev is ready" in out
    assert "| onnx |" in out


def test_bench_index_quick() -> None:
    """Two files of examples/docs indexed cold, and the packaged model alone on their chunk
    texts (both floors): about 20 s."""
    out = run_quick("bench_index.py")
    assert "| examples-docs (2 files) |" in out
    assert "floor CPU-s, ≤1,024 tokens" in out
    assert "| scan+parse+chunk |" in out
    # The shares come from the CLI's progress events: all "startup" when none was recorded.
    assert "| 100% | 0% | 0% | 0% |" not in out


def test_bench_mcp_coldstart_quick() -> None:
    assert "ratio mcp / search" in run_quick("bench_mcp_coldstart.py")


def test_bench_async_quick(tmp_path: Path) -> None:
    out = run_quick("bench_async.py", "--folder", str(_docs(tmp_path)))
    assert "| rag_search.ainvoke (subgraph) |" in out


def test_bench_code_quick(tmp_path: Path) -> None:
    """The pinned wheel is a stand-in of two files, so that nothing is downloaded."""
    wheels = tmp_path / "work" / "wheel"
    wheels.mkdir(parents=True)
    with zipfile.ZipFile(wheels / "requests-2.32.3-py3-none-any.whl", "w") as wheel:
        wheel.writestr(
            "requests/adapters.py", "DEFAULT_RETRIES = 0\n\n\nclass HTTPAdapter:\n    pass\n"
        )
        wheel.writestr("requests/sessions.py", "def merge_setting(a, b):\n    return a or b\n")
    out = run_quick("bench_code.py", "--work-dir", str(tmp_path / "work"))
    assert "| bm25s (same chunks) |" in out


def test_bench_facts_quick() -> None:
    """Two bundled questions, extractive answers, the offline judge."""
    assert "states the fact" in run_quick("bench_facts.py")


def test_bench_grounding_quick() -> None:
    """Two answerable and two unanswerable questions, the fake model, no chat model."""
    assert "unanswerable called grounded" in run_quick("bench_grounding.py")


def _frank_clone(root: Path) -> Path:
    """The two files of a FRANK clone that judge_dev_sets.py reads, four summaries."""
    article = "The council approved 12 new buses on Monday . Mayor Smith said the fleet will grow ."
    texts = [
        {"hash": f"h{i}", "model_name": "m", "article": article, "summary": summary,
         "reference": "the council approved 12 new buses . the mayor said the fleet will grow"}
        for i, summary in enumerate(("12 buses were approved.", "30 buses were approved."))
    ]  # fmt: skip
    labels = [
        {"hash": r["hash"], "model_name": "m", "Factuality": float(i == 0), "dataset": origin}
        for origin in ("cnndm", "bbc")
        for i, r in enumerate(texts)
    ]
    (root / "data").mkdir(parents=True)
    (root / "data" / "benchmark_data.json").write_text(json.dumps(texts))
    (root / "data" / "human_annotations.json").write_text(json.dumps(labels))
    return root


def test_judge_dev_sets_then_bench_judge_quick(tmp_path: Path) -> None:
    """The published pair: judge_dev_sets.py writes the sets bench_judge.py scores."""
    sets, edits = tmp_path / "sets", tmp_path / "summedits"
    edits.mkdir()
    for domain in SUMMEDITS_DOMAINS:
        row = {"doc": "The call ended at noon.", "summary": "It ended at noon.", "label": 1}
        (edits / f"summedits_{domain}.json").write_text(json.dumps([row]))
    frank = str(_frank_clone(tmp_path / "frank"))
    out = run_quick(
        "judge_dev_sets.py", "--frank", frank, "--summedits", str(edits), "--out", str(sets)
    )
    assert "synthetic_claims.jsonl" in out
    files = [str(sets / f"{name}.jsonl") for name in ("frank_cnndm", "synthetic_claims")]
    out = run_quick("bench_judge.py", *files)
    assert "| contrast pairs |" in out
    assert "| synthetic_claims |" in out


def test_bench_gguf_quick() -> None:
    """SmolLM2 on one short prompt, 8 tokens."""
    smollm2_path()  # skips without the model
    assert "| 1 |" in run_quick("bench_gguf.py")


def test_bench_gguf_tools_quick() -> None:
    """One question, tool_choice forced as shipped (the cut call made again): about 15 s."""
    smollm2_path()
    assert "| rag_search | as shipped |" in run_quick("bench_gguf_tools.py")


def test_bench_agentic_quick(tmp_path: Path) -> None:
    """One question over one file of examples/docs, both paths, SmolLM2 replies of 16
    tokens: about 30 s (its agent asks the model several times), the slowest here."""
    smollm2_path()
    (tmp_path / "kb" / "docs").mkdir(parents=True)
    shutil.copy(EXAMPLES / "docs" / "faq.txt", tmp_path / "kb" / "docs" / "faq.txt")
    out = run_quick("bench_agentic.py", "--kb", str(tmp_path / "kb"))
    assert "| chat model SmolLM2" in out
    assert "lost (the final answer misses a fact" in out  # the bundled question has a key
