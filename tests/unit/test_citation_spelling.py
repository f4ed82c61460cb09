"""Issue 43: one spelling for citation fields. Graph state, ``kbgraph search/ask --json``, MCP
and the inspector say ``line_start``, ``line_end``, ``chunk_id``; what kbgraph reads back in
the camelCase of before 0.2 (``lineStart`` ...) is renamed, with one ``DeprecationWarning``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import START, StateGraph

from kbgraph._base.citations import extract_citations
from kbgraph.cli import main
from kbgraph.evals import bundled_dataset_path, load_dataset
from kbgraph.graphs import RagOutput, RagSettings, build_rag_graph
from kbgraph.graphs._langchain_kb import document_chunk
from kbgraph.graphs._recording import read_run, write_run
from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.graphs._tool import previous_citations
from kbgraph.inspector._evals import EvalRef, read_rows
from kbgraph.mcp._schemas import AskCitation, SearchHit

SNAKE = re.compile(r"^[a-z]+(?:_[a-z]+)*$")
QUESTION = "How do I configure max_attempts for retries?"
OLD = {"n": 1, "chunkId": "c1", "source": "retry.md", "kb": "kb", "lineStart": 5, "lineEnd": 7}
NEW = {"n": 1, "chunk_id": "c1", "source": "retry.md", "kb": "kb", "line_start": 5, "line_end": 7}


def deprecated() -> pytest.WarningsRecorder:
    return pytest.warns(DeprecationWarning, match=r"lineStart.*line_start")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    (tmp_path / "kb").mkdir()
    text = "# Retries\n\nIntro.\n\n## Configuration\n\nmax_attempts sets how often it retries.\n"
    (tmp_path / "kb" / "retry.md").write_text(text, encoding="utf-8")
    return tmp_path / "kb"


def _not_snake(records: list[dict[str, Any]]) -> list[str]:
    return sorted({key for record in records for key in record if not SNAKE.match(key)})


def test_a_graph_state_citation_has_line_start(docs: Path) -> None:
    """Regression (issue 43): a user's first ``c["line_start"]`` on a graph state citation
    printed ``None``; the state said ``lineStart``."""
    registry = SearcherRegistry()
    kb = {"name": "kb", "folder": str(docs)}
    settings = RagSettings(knowledge_bases=[kb], embedding="fake", grounding_min_vector_score=None)
    try:
        graph = build_rag_graph(registry=registry)
        out = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=settings)
    finally:
        registry.close_all()
    c = out["rag_citations"][0]
    lines = (docs / c["source"]).read_text(encoding="utf-8").split("\n")
    assert c.get("line_start") is not None and c["line_end"] >= c["line_start"] >= 1
    assert c["text"] in "\n".join(lines[c["line_start"] - 1 : c["line_end"]])
    assert c["chunk_id"] in {candidate["chunk_id"] for candidate in out["rag_candidates"]}
    assert _not_snake([*out["rag_citations"], *out["rag_candidates"]]) == []


def test_search_and_ask_json_use_the_keys_of_mcp(docs: Path) -> None:
    """``--json`` and MCP spell each field they share alike; what only one of them gives is
    listed here (the CLI's chunk ids, ranks and text; MCP's ready citation string, the
    knowledge base and the code symbol)."""

    def kbgraph(*args: str | Path) -> Any:
        result = CliRunner().invoke(main, [str(a) for a in args], prog_name="kbgraph")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout) if "--json" in args else None

    kbgraph("index", docs, "--embedding", "fake", "--quiet")
    hit = kbgraph("search", docs, "max_attempts", "--embedding", "fake", "--json")["results"][0]
    asked = kbgraph("ask", docs, QUESTION, "--embedding", "fake", "--json")["rag_citations"][0]
    search_keys, ask_keys = set(SearchHit.model_fields), set(AskCitation.model_fields)
    assert set(hit) - search_keys == {"chunk_id", "ranks"}
    assert search_keys - set(hit) == {"kb", "symbol", "citation"}
    assert set(asked) - ask_keys == {"chunk_id", "text"}
    assert ask_keys - set(asked) == {"kb", "citation"}


def test_old_keys_given_to_a_graph_are_renamed_with_a_warning() -> None:
    """A parent graph's state (or a previous turn's input) in the old spelling."""
    seen: list[Any] = []

    def read(state: RagOutput) -> dict[str, Any]:
        seen.append(state["rag_citations"][0].get("line_start"))
        return {}

    builder = StateGraph(RagOutput)
    builder.add_node("read", read)
    builder.add_edge(START, "read")
    with deprecated():
        out = builder.compile().invoke({"messages": [], "rag_citations": [OLD]})
    assert seen == [5] and out["rag_citations"] == [NEW]


def test_old_keys_of_earlier_results_and_of_extract_citations_are_read() -> None:
    message = ToolMessage(
        "...", tool_call_id="t1", name="rag_search", artifact={"citations": [OLD]}
    )
    with deprecated():
        assert previous_citations([AIMessage(""), message]) == [NEW]
    with deprecated():
        resolved = extract_citations("Five [1].", [OLD]).citations[0]
    assert (resolved["line_start"], resolved["line_end"], resolved["chunk_id"]) == (5, 7, "c1")


def test_a_run_recorded_before_the_change_reads_with_a_warning(tmp_path: Path) -> None:
    record = {
        "kind": "kbgraph.run", "id": "20261126T101500-0a1b2c3d",
        "state": {"rag_citations": [OLD], "rag_candidates": [{**OLD, "byteStart": 0}]},
    }  # fmt: skip
    write_run(record, tmp_path)
    with deprecated():
        state = read_run(record["id"], tmp_path)["state"]
    assert state["rag_citations"] == [NEW]
    assert state["rag_candidates"] == [{**NEW, "byte_start": 0}]


def test_an_old_data_set_file_still_loads_with_a_warning(tmp_path: Path) -> None:
    bundled = bundled_dataset_path()
    text = bundled.read_text(encoding="utf-8")
    assert "lineStart" not in text and '"line_start"' in text  # converted to the one spelling
    old = tmp_path / "old.jsonl"
    old.write_text(text.replace('"line_start"', '"lineStart"').replace('"line_end"', '"lineEnd"'))
    with deprecated():
        rows = load_dataset(old)
    assert rows == load_dataset(bundled)
    assert any(g.line_start is not None for row in rows for g in row.gold_sources)


def test_an_old_eval_report_shows_in_the_inspector_with_a_warning(tmp_path: Path) -> None:
    row = {"id": "r1", "status": "ok", "citations": [OLD], "gold_sources": [OLD]}
    (tmp_path / "results.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    with deprecated():
        (read,) = read_rows(EvalRef("old", tmp_path))
    assert read["citations"] == [NEW] and read["gold_sources"] == [NEW]


def test_a_store_document_with_old_line_keys_is_read_with_a_warning() -> None:
    doc = Document(
        "Logs rotate daily.", metadata={"source": "ops.md", "lineStart": 4, "lineEnd": 4}
    )
    with deprecated():
        chunk = document_chunk(doc, "wiki")
    assert (chunk.source, chunk.line_start, chunk.line_end) == ("ops.md", 4, 4)
