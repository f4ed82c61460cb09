"""camelCase JSON by pydantic aliases, and one key for a chunk id outside the chunk record:
``chunkId`` in search results, LangChain Document metadata, the subgraph's candidates and
citations, resolved citations and eval passages."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

from kbgraph._base.citations import ResolvedCitation, extract_citations
from kbgraph.evals._records import ClaimVerdict, Passage
from kbgraph.graphs._state import Candidate, Citation
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder import VersionInfo
from kbgraph.retrieval._records import Chunk, SearchResult, SkippedFile
from kbgraph.retrieval._reports import IndexReport, IndexStats

CAMEL = re.compile(r"^[a-z]+(?:[A-Z][a-z]*)*$")
CHUNK = Chunk("c0ffee", "Retries: 5 — café", "docs/ré try.md", 3, 4, 10, 30, "Retries", None)


def _keys(data: dict[str, object]) -> list[str]:
    return [k for k in data if not CAMEL.match(k)]


@pytest.mark.parametrize(
    "record",
    [
        CHUNK,
        SearchResult(CHUNK, 0.5, {"vector": 1}),
        SkippedFile("a.bin", "binary"),
        IndexStats(1, 2, 3, None, 0),
        IndexReport(IndexStats(1, 2, 3, None, 0), 1, 0, [SkippedFile("a", "secret")]),
        VersionInfo("gen-1-a", True, "2026-11-23T00:00:00Z", 1, 2, "fake:hash-64"),
        Passage(1, "text", "a.md", 1, 2, "c0ffee"),
        ClaimVerdict("claim", "supported", 0.123456, (1,), (1, 2)),
    ],
)
def test_every_json_key_is_camel_case(record: typing.Any) -> None:
    assert _keys(record.to_dict()) == []


def test_chunk_round_trips_through_its_json_form() -> None:
    assert Chunk.from_dict(CHUNK.to_dict()) == CHUNK
    assert set(CHUNK.to_dict()) >= {"id", "lineStart", "byteEnd"}  # the on-disk record


@pytest.mark.parametrize("typed", [Candidate, Citation, ResolvedCitation], ids=lambda t: t.__name__)
def test_the_subgraph_records_name_the_chunk_id_chunkId(typed: type) -> None:
    keys = typing.get_type_hints(typed)
    assert "chunkId" in keys and "id" not in keys


def test_every_outside_form_names_the_chunk_id_chunkId(tmp_path: Path) -> None:
    (tmp_path / "retry.md").write_text("# Retries\n\nmax_attempts defaults to 5.\n", "utf-8")
    kb = KnowledgeBase(tmp_path, embedding="fake")
    kb.index()
    result = kb.search("max_attempts", top_k=1)[0]
    document = kb.as_retriever(top_k=1).invoke("max_attempts")[0]
    citation = {"n": 1, "chunkId": result.chunk.id, "source": "retry.md", "kb": "docs"}
    resolved = extract_citations("Five [1].", [citation]).citations[0]
    assert result.to_dict()["chunkId"] == document.metadata["chunkId"] == result.chunk.id
    assert resolved["chunkId"] == result.chunk.id
    assert Passage.from_any(citation, 1).to_dict()["chunkId"] == result.chunk.id
    assert "id" not in result.to_dict() and "id" not in document.metadata
    assert ClaimVerdict("c", "supported", 0.123456).to_dict()["score"] == 0.1235
