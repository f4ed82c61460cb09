"""The search modes every surface offers come from the ranker registry (issue 43): MCP's
``search`` schema and validation, Studio's context schema (``RagSettings``) and the CLI's
``--mode`` choices. MCP refused ``title`` (its schema kept its own list) and Studio showed
no choice (``SearchMode`` was a plain ``str``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kbgraph.cli import main
from kbgraph.graphs import RagSettings
from kbgraph.mcp._schemas import SearchArgs
from kbgraph.retrieval import (
    Chunk,
    FieldRanker,
    SearchConfig,
    register_ranker,
    search_modes,
    unregister_ranker,
)

from .test_mcp_server import docs, session  # noqa: F401  (the indexed example folder)

EXTRA = "path_words"


@pytest.fixture
def extra_ranker() -> Iterator[str]:
    def text(chunk: Chunk) -> str:
        return chunk.source.replace("/", " ")

    register_ranker(FieldRanker(EXTRA, "BM25 over the path", text))
    yield EXTRA
    unregister_ranker(EXTRA)


def _enum(schema: dict[str, Any]) -> list[str]:
    (choice,) = [s for s in schema["anyOf"] if s.get("type") == "string"]
    return list(choice["enum"])


def test_the_schemas_offer_the_registered_modes(extra_ranker: str) -> None:
    modes = list(search_modes())
    assert "title" in modes and extra_ranker in modes
    assert _enum(SearchArgs.model_json_schema()["properties"]["mode"]) == modes
    assert _enum(SearchConfig.model_json_schema()["properties"]["mode"]) == modes
    studio = RagSettings.model_json_schema()["$defs"]["SearchConfig"]["properties"]["mode"]
    assert _enum(studio) == modes


def test_mcp_accepts_every_registered_mode_and_refuses_others(extra_ranker: str) -> None:
    for mode in search_modes():
        assert SearchArgs(query="retry", mode=mode).mode == mode
    with pytest.raises(ValueError, match="unknown search mode 'sql'; allowed: hybrid"):
        SearchArgs(query="retry", mode="sql")


async def test_mcp_search_ranks_with_title(docs: Path) -> None:  # noqa: F811
    async with session(docs) as client:
        result = await client.call_tool("search", {"query": "configuration", "mode": "title"})
    assert not result.isError, result.content
    assert result.structuredContent["results"]  # type: ignore[index]


def test_the_cli_offers_the_registered_modes(extra_ranker: str) -> None:
    out = CliRunner().invoke(main, ["search", "--help"], terminal_width=200).output
    for mode in search_modes():
        assert mode in out
