"""An embedding spec resolved by LangChain's ``init_embeddings`` indexes and searches a
folder for real: ``huggingface:<folder>`` (langchain-huggingface) loads the packaged
all-MiniLM-L6-v2 from its folder, offline, and the index records that model."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._embeddings import packaged_model_dir

pytestmark = pytest.mark.integration


def test_huggingface_spec_indexes_and_searches(tmp_path: Path) -> None:
    pytest.importorskip("langchain_huggingface")
    (tmp_path / "retry.md").write_text(
        "# Retries\n\nFailed calls are retried with exponential backoff.\n", encoding="utf-8"
    )
    (tmp_path / "café.md").write_text("# Café\r\n\r\nLe café ouvre à huit heures.\r\n", "utf-8")
    spec = f"huggingface:{packaged_model_dir()}"
    kb = KnowledgeBase(tmp_path, embedding=spec)
    report = kb.index()
    assert report.embedded == 2
    assert report.stats.embedding["provider"] == "huggingface"
    assert report.stats.embedding["dims"] == 384
    hits = kb.search("how are failed requests retried?", top_k=1, mode="vector")
    assert hits[0].chunk.source == "retry.md"
    kb.close()
    # The index remembers the spec: "auto" opens it with the same model.
    again = KnowledgeBase(tmp_path)
    assert again.search("opening hours of the café", top_k=1, mode="vector")[0].chunk.source == (
        "café.md"
    )
    again.close()
