"""`kbgraph eval` end to end: the real chat agent over a copy of examples/docs with the
local embedding model, scored by the offline judge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbgraph.agents import ChatAgent
from kbgraph.agents._eval import eval_group
from kbgraph.evals._datasets import bundled_dataset_path

pytestmark = pytest.mark.integration

DOCS = Path(__file__).resolve().parents[2] / "examples" / "docs"


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("harbor") / "docs"
    shutil.copytree(DOCS, target, ignore=shutil.ignore_patterns(".kbgraph"))
    return target


def test_chat_agent_answers_with_citations(docs: Path) -> None:
    import asyncio

    output = asyncio.run(ChatAgent(docs).arun("Which HTTP status codes does Harbor retry?"))
    assert output.answer.strip()
    assert output.passages and all(p.source and p.line_start for p in output.passages)
    assert any("408" in p.text for p in output.passages)


def test_eval_command_on_the_bundled_dataset(docs: Path, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    lines = bundled_dataset_path().read_text(encoding="utf-8").splitlines()
    rows.write_text("\n".join([*lines[:5], lines[-1]]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        eval_group, [str(rows), "--kb", str(docs), "--out", str(out), "--quiet", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["rows"] == {"total": 6, "ok": 6, "failed": 0}
    assert summary["faithfulness"]["n_scored"] >= 5
    assert summary["context_recall"]["n_undetermined"] == 1  # the SLA row has no reference
    assert all(r["faithfulness"] is not None for r in summary["per_row"][:5])
    for name in ("results.jsonl", "summary.json", "report.md", "scores.png"):
        assert (out / name).stat().st_size > 0


def test_eval_without_embedding_uses_the_model_the_index_was_built_with(
    docs: Path, tmp_path: Path
) -> None:
    """Regression: without --embedding the agent opened the knowledge base with the local
    model, and a folder indexed with another one (here `fake`) failed with exit 7 and a
    message telling the user to leave --embedding out, which they had done."""
    from kbgraph.retrieval import KnowledgeBase

    folder = shutil.copytree(
        docs, tmp_path / "fake-docs", ignore=shutil.ignore_patterns(".kbgraph")
    )
    KnowledgeBase(folder, embedding="fake").index()
    rows = tmp_path / "rows.jsonl"
    rows.write_text(bundled_dataset_path().read_text(encoding="utf-8").splitlines()[0] + "\n")
    result = CliRunner().invoke(
        eval_group,
        [str(rows), "--kb", str(folder), "--out", str(tmp_path / "o"), "--quiet", "--json"],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["rows"] == {"total": 1, "ok": 1, "failed": 0}
    assert "embedding auto" in summary["agent"]
