"""``kbgraph.mcp``'s tools and resources through the MCP SDK's own client, in process
(memory streams): schemas, structured results, errors of one line, path refusals, a
stale index, several knowledge bases. Real folders, real indexes (fake embedding)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import ClientSession, types
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_connected_server_and_client_session
from pydantic import AnyUrl

from kbgraph.mcp import McpSettings, build_server
from kbgraph.retrieval import ChunkConfig, KnowledgeBase

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
REPO = Path(__file__).resolve().parents[2]
SECRET = "root:x:0:0:NEVER-SERVED"
READ_ONLY_TOOLS = ["search", "read", "list_knowledge_bases", "stats", "ask"]


def _copy(target: Path) -> Path:
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns(".kbgraph"))
    KnowledgeBase(target, embedding="fake").index()
    return target


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example folder, indexed, beside a file outside it that nothing may serve."""
    root = tmp_path_factory.mktemp("mcp")
    (root / "outside.txt").write_text(SECRET + "\n", encoding="utf-8")
    return _copy(root / "docs")


@asynccontextmanager
async def session(*folders: Path, **options: Any) -> AsyncIterator[ClientSession]:
    server = build_server(McpSettings.from_folders(folders, **options))
    async with create_connected_server_and_client_session(server) as client:
        yield client


def _error(result: types.CallToolResult) -> str:
    assert result.isError, result.structuredContent
    text = result.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text and SECRET not in text
    return text


async def test_tools_have_typed_input_and_output_schemas(docs: Path) -> None:
    async with session(docs) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == READ_ONLY_TOOLS  # no `index`: read-only by default
    search = tools["search"]
    assert search.inputSchema["required"] == ["query"]
    assert {"query", "top_k", "mode", "paths", "kinds", "languages", "kb"} == set(
        search.inputSchema["properties"]
    )
    hit = search.outputSchema["$defs"]["SearchHit"]["properties"]  # type: ignore[index]
    assert {"source", "line_start", "line_end", "symbol", "score", "citation"} <= set(hit)
    assert tools["read"].annotations.readOnlyHint  # type: ignore[union-attr]
    assert all(tool.outputSchema for tool in tools.values())


async def test_index_is_served_only_with_allow_write(docs: Path) -> None:
    async with session(docs) as client:
        refused = await client.call_tool("index", {})
    assert "served only with --allow-write" in _error(refused)
    async with session(docs, allow_write=True) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        done = await client.call_tool("index", {})
    assert names == [*READ_ONLY_TOOLS, "index"]
    assert done.structuredContent["indexed"][0]["file_count"] == 15  # type: ignore[index]


async def test_stats_and_index_say_how_many_chunks_the_model_cut(tmp_path: Path) -> None:
    """A chunk longer than the model's input has only its beginning in its vector: the
    ``kbgraph stats`` and ``kbgraph index`` figure, and an agent's too."""
    folder = tmp_path / "long"
    folder.mkdir()
    (folder / "long.md").write_text(
        "# Long\n\n" + " ".join(f"wörd{i}" for i in range(1500)) + "\r\n", encoding="utf-8"
    )
    # One chunk of ~12,000 characters: over the fake model's 8,000-character input.
    chunking = ChunkConfig(chunk_size=20_000, overlap=0, max_chunk_chars=50_000)
    assert KnowledgeBase(folder, embedding="fake", chunking=chunking).index().truncated == 1
    async with session(folder, allow_write=True) as client:
        stats = await client.call_tool("stats", {})
        done = await client.call_tool("index", {})
    assert stats.structuredContent["stats"][0]["truncated"] == 1  # type: ignore[index]
    # Nothing changed: every vector is reused, and the index still holds the cut chunk.
    indexed = done.structuredContent["indexed"][0]  # type: ignore[index]
    assert (indexed["embedded"], indexed["truncated"]) == (0, 1)


async def test_search_returns_cited_lines_that_match_the_output_schema(docs: Path) -> None:
    async with session(docs) as client:
        schema = {t.name: t for t in (await client.list_tools()).tools}["search"].outputSchema
        result = await client.call_tool("search", {"query": "retry policy", "top_k": 3})
    assert not result.isError
    data = result.structuredContent
    jsonschema.validate(data, schema)
    hits = data["results"]  # type: ignore[index]
    assert len(hits) == 3 and hits[0]["source"] == "docs/configuration.md"
    first = hits[0]
    assert first["citation"] == f"docs/configuration.md:{first['line_start']}-{first['line_end']}"
    lines = (docs / first["source"]).read_text(encoding="utf-8").split("\n")
    assert "\n".join(lines[first["line_start"] - 1 : first["line_end"]]) == first["text"]
    assert data["freshness"] == [  # type: ignore[index]
        {"kb": "docs", "stale_files": 0, "live": False, "note": None}
    ]


async def test_search_filters_by_path_kind_and_language(docs: Path) -> None:
    async with session(docs) as client:
        code = await client.call_tool("search", {"query": "retry", "languages": ["python"]})
        md = await client.call_tool("search", {"query": "retry", "kinds": ["markdown"]})
        under = await client.call_tool("search", {"query": "retry", "paths": ["src/**"]})
    code_hits = code.structuredContent["results"]  # type: ignore[index]
    assert code_hits and all(h["source"].endswith(".py") for h in code_hits)
    assert any(h["symbol"] for h in code_hits)  # a code chunk names its symbol
    assert all(h["source"].endswith(".md") for h in md.structuredContent["results"])  # type: ignore[index]
    assert all(h["source"].startswith("src/") for h in under.structuredContent["results"])  # type: ignore[index]


async def test_read_returns_the_cited_lines(docs: Path) -> None:
    async with session(docs) as client:
        result = await client.call_tool(
            "read", {"path": "docs/configuration.md", "line_start": 46, "line_end": 48}
        )
        tail = await client.call_tool("read", {"path": "README.md", "line_start": 2})
    data = result.structuredContent
    lines = (docs / "docs/configuration.md").read_text(encoding="utf-8").split("\n")
    assert result.content[1].text == "\n".join(lines[45:48])  # type: ignore[union-attr]
    assert data["chars"] == len(result.content[1].text)  # type: ignore[index,union-attr]
    assert data["citation"] == "docs/configuration.md:46-48" and data["more"]  # type: ignore[index]
    assert not tail.structuredContent["more"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../../etc/passwd", "leaves the knowledge base folder"),
        ("../outside.txt", "leaves the knowledge base folder"),
        ("%2e%2e%2foutside.txt", "is not a file of the index"),
        ("%2e%2e/outside.txt", "is not a file of the index"),
        ("/etc/passwd", "not a path relative"),
        (str(EXAMPLES / "README.md"), "not a path relative"),
        ("docs\\..\\..\\outside.txt", "not a path relative"),
        ("docs/./configuration.md", "not normalised"),
        (".kbgraph/CURRENT", "is not a file of the index"),
    ],
)
async def test_read_refuses_paths_out_of_the_knowledge_base(
    docs: Path, path: str, why: str
) -> None:
    async with session(docs) as client:
        result = await client.call_tool("read", {"path": path})
    assert why in _error(result)


async def test_read_refuses_a_symlink_out_even_in_place_of_an_indexed_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "outside.txt").write_text(SECRET + "\n", encoding="utf-8")
    folder = _copy(tmp_path / "docs")
    (folder / "leak.txt").symlink_to(tmp_path / "outside.txt")  # added after indexing
    swapped = folder / "CHANGELOG.md"  # indexed, then swapped for a link out
    swapped.unlink()
    swapped.symlink_to(tmp_path / "outside.txt")
    async with session(folder) as client:
        leak = await client.call_tool("read", {"path": "leak.txt"})
        link = await client.call_tool("read", {"path": "CHANGELOG.md"})
        found = await client.call_tool("search", {"query": "NEVER-SERVED root"})
    assert "is not a file of the index" in _error(leak)
    assert "the link points outside the folder" in _error(link)
    assert SECRET not in str(found.structuredContent)


async def test_hostile_arguments_are_refused_in_one_short_line(docs: Path) -> None:
    huge = "x" * 10_000_000
    async with session(docs) as client:
        big = await client.call_tool("search", {"query": huge})
        empty = await client.call_tool("search", {"query": ""})
        unknown_tool = await client.call_tool("rm_rf", {"path": "/"})
        unknown_arg = await client.call_tool("search", {"query": "retry", "shell": "ls"})
        bad_mode = await client.call_tool("search", {"query": "retry", "mode": "sql"})
        too_many = await client.call_tool("search", {"query": "retry", "top_k": 10**9})
        missing = await client.call_tool("read", {})
        wrong_kb = await client.call_tool("search", {"query": "retry", "kb": "etc"})
    message = _error(big)
    assert "'query'" in message and "at most 10000 characters" in message and len(message) < 300
    assert "'query'" in _error(empty)
    assert _error(unknown_tool).startswith("unknown tool 'rm_rf'; tools: search, read")
    assert "unknown argument 'shell'" in _error(unknown_arg)
    assert "'mode'" in _error(bad_mode)
    assert "'top_k'" in _error(too_many)
    assert "'path' is missing" in _error(missing)
    assert "no knowledge base named 'etc' here; known: docs" in _error(wrong_kb)


async def test_a_stale_index_is_said_in_the_result_and_auto_index_refreshes_it(
    tmp_path: Path,
) -> None:
    folder = _copy(tmp_path / "docs")
    (folder / "new.md").write_text("# Zebra\n\nZebras cross the harbor at noon.\n")
    async with session(folder) as client:
        stale = await client.call_tool("search", {"query": "zebras harbor noon"})
        stats = await client.call_tool("stats", {})
    data = stale.structuredContent
    assert data["freshness"][0]["stale_files"] == 1  # type: ignore[index]
    assert "1 file(s) behind its folder" in data["note"]  # type: ignore[index]
    assert "new.md" not in [h["source"] for h in data["results"]]  # type: ignore[index]
    assert stats.structuredContent["stats"][0]["freshness"]["stale_files"] == 1  # type: ignore[index]
    async with session(folder, auto_index=True) as client:
        fresh = await client.call_tool("search", {"query": "zebras harbor noon"})
    data = fresh.structuredContent
    assert data["note"] is None and data["results"][0]["source"] == "new.md"  # type: ignore[index]


async def test_watch_keeps_the_index_live(tmp_path: Path) -> None:
    folder = _copy(tmp_path / "docs")
    async with session(folder, watch=True) as client:
        found = await client.call_tool("search", {"query": "retry policy"})
    freshness = found.structuredContent["freshness"][0]  # type: ignore[index]
    assert freshness == {"kb": "docs", "stale_files": 0, "live": True, "note": None}


async def test_a_folder_without_an_index_is_a_one_line_error(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\ntext\n")
    async with session(folder) as client:
        result = await client.call_tool("search", {"query": "text"})
        kbs = await client.call_tool("list_knowledge_bases", {})
    assert "kbgraph index" in _error(result)
    assert kbs.structuredContent["knowledge_bases"][0]["indexed"] is False  # type: ignore[index]


async def test_an_index_kept_elsewhere_is_served_with_index_dir(tmp_path: Path) -> None:
    # `kbgraph index docs --index-dir X` and then `kbgraph mcp docs` found no index (a new
    # user's trial): the server had no --index-dir.
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".kbgraph"))
    index_dir = tmp_path / "elsewhere"
    KnowledgeBase(folder, embedding="fake", index_dir=index_dir).index()
    async with session(folder, index_dirs=[index_dir]) as client:
        result = await client.call_tool("search", {"query": "retry policy", "top_k": 1})
    assert not result.isError, result.content
    assert result.structuredContent["results"][0]["source"] == "docs/configuration.md"  # type: ignore[index]
    assert not (folder / ".kbgraph").exists()


async def test_several_knowledge_bases_are_searched_together_or_one_by_kb(
    tmp_path: Path,
) -> None:
    first = _copy(tmp_path / "first")
    second = tmp_path / "second"
    second.mkdir()
    (second / "fleet.md").write_text("# Fleet\n\nThe retry policy of the fleet is three tries.\n")
    KnowledgeBase(second, embedding="fake").index()
    async with session(first, second) as client:
        both = await client.call_tool("search", {"query": "retry policy fleet", "top_k": 10})
        one = await client.call_tool("search", {"query": "retry", "kb": "second"})
        read = await client.call_tool("read", {"path": "fleet.md"})
        kbs = await client.call_tool("list_knowledge_bases", {})
    hits = both.structuredContent["results"]  # type: ignore[index]
    assert {h["kb"] for h in hits} == {"first", "second"}
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    fleet = next(h for h in hits if h["kb"] == "second")
    assert fleet["citation"] == "second:fleet.md:1-3"
    assert {h["kb"] for h in one.structuredContent["results"]} == {"second"}  # type: ignore[index]
    assert read.structuredContent["kb"] == "second"  # type: ignore[index]
    names = [kb["name"] for kb in kbs.structuredContent["knowledge_bases"]]  # type: ignore[index]
    assert names == ["first", "second"]


async def test_ask_answers_with_citations_from_the_agent(docs: Path) -> None:
    async with session(docs, embedding="fake") as client:
        result = await client.call_tool(
            "ask", {"question": "How do I configure the retry policy?", "top_k": 3}
        )
    data = result.structuredContent
    assert not result.isError and data["answer"]  # type: ignore[index]
    assert data["answer_mode"] == "extractive"  # type: ignore[index]
    cited = data["citations"]  # type: ignore[index]
    assert cited and cited[0]["citation"].startswith(cited[0]["source"] + ":")


async def test_files_are_resources_and_only_indexed_ones_are_read(docs: Path) -> None:
    async with session(docs) as client:
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resourceTemplates
        readme = await client.read_resource(AnyUrl("kbgraph://docs/README.md"))
        refusals = []
        for uri in (
            "kbgraph://docs/%2e%2e/outside.txt",
            "kbgraph://docs/..%2foutside.txt",
            "kbgraph://docs/%2fetc%2fpasswd",
            "kbgraph://other/README.md",
            "file:///etc/passwd",
            "kbgraph://docs/" + "a/" * 5000 + "README.md",
        ):
            with pytest.raises(McpError) as refused:
                await client.read_resource(AnyUrl(uri))
            refusals.append(str(refused.value))
    assert len(listed) == 15 and templates[0].uriTemplate == "kbgraph://{kb}/{path}"
    assert str(listed[0].uri).startswith("kbgraph://docs/")
    text = readme.contents[0].text  # type: ignore[union-attr]
    assert text == (docs / "README.md").read_text(encoding="utf-8")
    assert all(SECRET not in r and "\n" not in r for r in refusals)


def test_the_search_tool_takes_as_many_paths_as_a_filter_holds() -> None:
    # The tool's schema wrote 50 beside the filters' MAX_FILTER_PATHS: a change of one
    # limit left the other behind. A fresh process with the filters' limit at 7 must
    # give a schema of 7.
    code = (
        "import kbgraph.retrieval._globs as g; g.MAX_FILTER_PATHS = 7\n"
        "from kbgraph.mcp._schemas import SearchArgs\n"
        "print(SearchArgs.model_json_schema()['properties']['paths']['maxItems'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "7", out.stderr


def test_settings_refuse_two_folders_of_one_name(tmp_path: Path) -> None:
    from kbgraph.errors import ConfigError

    for sub in ("a/docs", "b/docs"):
        (tmp_path / sub).mkdir(parents=True)
    with pytest.raises(ConfigError, match="two knowledge bases are named 'docs'"):
        McpSettings.from_folders([tmp_path / "a/docs", tmp_path / "b/docs"])


def test_protocol_stdout_keeps_every_other_write_off_stdout() -> None:
    """A print, a write to descriptor 1 (what a native library does) and a child process
    all land on stderr once the protocol owns stdout."""
    script = (
        "import os, subprocess, sys\n"
        "from kbgraph.mcp._transport import protocol_stdout\n"
        "out = protocol_stdout()\n"
        "print('noise from print')\n"
        "os.write(1, b'noise from fd 1\\n')\n"
        "subprocess.run(['echo', 'noise from a child'])\n"
        'out.write(\'{"jsonrpc": "2.0"}\\n\'); out.flush()\n'
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    assert done.stdout == '{"jsonrpc": "2.0"}\n'
    for noise in ("noise from print", "noise from fd 1", "noise from a child"):
        assert noise in done.stderr
