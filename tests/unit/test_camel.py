"""The JSON spelling of the records, by pydantic aliases: the index's files and reports in
camelCase; every citation record in snake_case, as its Python fields, with one key for a
chunk id outside the chunk record: ``chunk_id`` in search results, LangChain Document
metadata, the subgraph's candidates and citations, resolved citations and eval passages.
And :func:`snake_keys`, which reads the camelCase citation keys of before 0.2."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

from kbgraph._base.camel import OLD_CITATION_KEYS, snake_keys
from kbgraph._base.citations import ResolvedCitation, UncitedSource, extract_citations
from kbgraph.evals._records import ClaimVerdict, GoldSource, Passage
from kbgraph.graphs._state import Candidate, Citation
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder import VersionInfo
from kbgraph.retrieval._records import Chunk, SearchResult, SkippedFile
from kbgraph.retrieval._reports import IndexReport, IndexStats

CAMEL = re.compile(r"^[a-z]+(?:[A-Z][a-z]*)*$")
SNAKE = re.compile(r"^[a-z]+(?:_[a-z]+)*$")
CHUNK = Chunk("c0ffee", "Retries: 5 — café", "docs/ré try.md", 3, 4, 10, 30, "Retries", None)


def _keys(data: dict[str, object], spelling: re.Pattern[str] = CAMEL) -> list[str]:
    return [k for k in data if not spelling.match(k)]


@pytest.mark.parametrize(
    "record",
    [
        CHUNK,
        SkippedFile("a.bin", "binary"),
        IndexStats(1, 2, 3, None, 0),
        IndexReport(IndexStats(1, 2, 3, None, 0), 1, 0, [SkippedFile("a", "secret")]),
        VersionInfo("gen-1-a", True, "2026-11-23T00:00:00Z", 1, 2, "fake:hash-64"),
        ClaimVerdict("claim", "supported", 0.123456, (1,), (1, 2)),
    ],
)
def test_the_index_records_are_camel_case(record: typing.Any) -> None:
    assert _keys(record.to_dict()) == []


@pytest.mark.parametrize(
    "record",
    [
        SearchResult(CHUNK, 0.5, {"vector": 1}),
        Passage(1, "text", "a.md", 1, 2, "c0ffee"),
        GoldSource("a.md", 1, 2),
    ],
)
def test_the_citation_records_are_snake_case(record: typing.Any) -> None:
    data = record.to_dict()
    assert _keys(data, SNAKE) == [] and {"line_start", "line_end"} <= set(data)


def test_chunk_round_trips_through_its_json_form() -> None:
    assert Chunk.from_dict(CHUNK.to_dict()) == CHUNK
    assert set(CHUNK.to_dict()) >= {"id", "lineStart", "byteEnd"}  # the on-disk record


@pytest.mark.parametrize("typed", [Candidate, Citation, ResolvedCitation], ids=lambda t: t.__name__)
def test_the_subgraph_records_name_the_chunk_id_chunk_id(typed: type) -> None:
    keys = typing.get_type_hints(typed)
    assert "chunk_id" in keys and "id" not in keys
    assert _keys(dict.fromkeys(keys), SNAKE) == []


def test_an_uncited_source_is_snake_case() -> None:
    assert _keys(dict.fromkeys(typing.get_type_hints(UncitedSource)), SNAKE) == []


def test_every_outside_form_names_the_chunk_id_chunk_id(tmp_path: Path) -> None:
    (tmp_path / "retry.md").write_text("# Retries\n\nmax_attempts defaults to 5.\n", "utf-8")
    kb = KnowledgeBase(tmp_path, embedding="fake")
    kb.index()
    result = kb.search("max_attempts", top_k=1)[0]
    document = kb.as_retriever(top_k=1).invoke("max_attempts")[0]
    citation = {"n": 1, "chunk_id": result.chunk.id, "source": "retry.md", "kb": "docs"}
    resolved = extract_citations("Five [1].", [citation]).citations[0]
    assert result.to_dict()["chunk_id"] == document.metadata["chunk_id"] == result.chunk.id
    assert resolved["chunk_id"] == result.chunk.id
    assert Passage.from_any(citation, 1).to_dict()["chunk_id"] == result.chunk.id
    assert "id" not in result.to_dict() and "id" not in document.metadata
    assert ClaimVerdict("c", "supported", 0.123456).to_dict()["score"] == 0.1235


def test_snake_keys_renames_the_old_keys_at_any_depth_with_one_warning() -> None:
    old = {"rag_citations": [{"n": 1, "lineStart": 2, "lineEnd": 3, "chunkId": "c"}],
           "debug": ({"order": [{"chunkId": "c", "byteStart": 0, "byteEnd": 9}]},)}  # fmt: skip
    with pytest.warns(DeprecationWarning) as caught:
        new = snake_keys(old, "a test record")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("a test record: the camelCase keys byteEnd, byteStart, chunkId")
    assert "0.3" in message and "line_start" in message
    assert new == {
        "rag_citations": [{"n": 1, "line_start": 2, "line_end": 3, "chunk_id": "c"}],
        "debug": ({"order": [{"chunk_id": "c", "byte_start": 0, "byte_end": 9}]},),
    }
    assert old["rag_citations"][0]["lineStart"] == 2  # a copy: the input is left as it was


def test_snake_keys_leaves_a_record_of_the_one_spelling_as_it_is() -> None:
    record = {"citations": [{"n": 1, "line_start": 2, "chunk_id": "c", "ranks": {"q0:bm25": 1}}]}
    assert snake_keys(record, "a test record") is record  # no copy, no warning


def test_snake_keys_prefers_the_snake_case_key_when_both_are_given() -> None:
    with pytest.warns(DeprecationWarning):
        assert snake_keys({"lineStart": 1, "line_start": 2}, "x") == {"line_start": 2}
    assert set(OLD_CITATION_KEYS.values()) == {
        "chunk_id", "line_start", "line_end", "byte_start", "byte_end",
    }  # fmt: skip
