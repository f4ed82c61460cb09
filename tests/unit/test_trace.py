"""The one-line summaries of ``kbgraph ask --trace`` (and of the inspector's timelines),
from the debug steps the nodes really record."""

from __future__ import annotations

from pathlib import Path

from kbgraph.agents._trace import summarize_step
from kbgraph.graphs import RagSettings, build_rag_graph


def test_the_rerank_line_names_the_top_chunks(tmp_path: Path) -> None:
    (tmp_path / "retry.md").write_text(
        "# Retry policy\n\nFailed requests are retried with exponential backoff.\n",
        encoding="utf-8",
    )
    out = build_rag_graph().invoke(
        {"messages": [("user", "How are failed requests retried?")]},
        context=RagSettings(knowledge_bases=str(tmp_path), embedding="fake"),
    )
    step = next(s for s in out["rag_retrieval_debug"]["steps"] if s["node"] == "rerank")
    first = step["data"]["order"][0]
    line = summarize_step(step)
    # It used to read the order's "id", which Rerank never wrote, and fell back to raw JSON.
    assert f"mode=heuristic; top: {first['chunk_id'][:8]}={first['score']}" in line
    assert "{" not in line
