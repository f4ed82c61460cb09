"""What servers read of an indexed file after the index run (issue 42 holes 1 and 12): an
indexed file swapped for a link to ``.git/config``, ``.env``, ``.kbgraph/HISTORY`` or a file
no include pattern matches (``Makefile``), all inside the folder, or for a folder, is
refused in one line by MCP ``read``, MCP resources and the inspector's source view (the
app ``langgraph dev`` mounts too), as the scan refuses the same links at index time."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from mcp import types
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_connected_server_and_client_session
from pydantic import AnyUrl
from starlette.testclient import TestClient

from kbgraph.inspector import InspectorConfig, create_app
from kbgraph.mcp import McpSettings, build_server
from kbgraph.retrieval import KnowledgeBase

pytestmark = [pytest.mark.faults]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
SECRET = "NEVER-SERVED-token"
# indexed file -> what takes its place after the index run (a link target in the folder)
SWAPS = {
    "CHANGELOG.md": ".git/config",
    "README.md": ".env",
    "docs/configuration.md": ".kbgraph/HISTORY",
    "docs/troubleshooting.md": "Makefile",  # no include pattern matches it (h1b)
}
FOLDER_IN_PLACE = "docs/faq.txt"


@pytest.fixture(scope="module")
def swapped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("served") / "docs"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".kbgraph"))
    KnowledgeBase(folder, embedding="fake").index()
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text(f"[remote]\n\turl = {SECRET}\n")
    (folder / ".env").write_text(f"API_KEY={SECRET}\n")
    (folder / "Makefile").write_text(f"deploy:\n\techo {SECRET}\n")
    for rel, target in SWAPS.items():
        (folder / rel).unlink()
        depth = rel.count("/")
        (folder / rel).symlink_to(os.path.join(*([".."] * depth), target) if depth else target)
    (folder / FOLDER_IN_PLACE).unlink()
    (folder / FOLDER_IN_PLACE).mkdir()
    return folder


def _one_line(text: str) -> str:
    assert "\n" not in text and "Traceback" not in text and SECRET not in text, text
    assert "HISTORY" not in text or "points at" in text, text  # no generation names
    return text


async def test_mcp_read_and_resources_refuse_what_took_an_indexed_files_place(
    swapped: Path,
) -> None:
    server = build_server(McpSettings.from_folders([swapped]))
    async with create_connected_server_and_client_session(server) as client:
        for rel in [*SWAPS, FOLDER_IN_PLACE]:
            result: types.CallToolResult = await client.call_tool("read", {"path": rel})
            assert result.isError, (rel, result.structuredContent)
            text = _one_line(result.content[0].text)  # type: ignore[union-attr]
            assert "is not served now" in text, text
            # Refused for its target (a Makefile link was refused as a hard link before).
            assert rel not in SWAPS or f"the link points at {SWAPS[rel]}" in text, text
            with pytest.raises(McpError) as refused:
                await client.read_resource(AnyUrl(f"kbgraph://docs/{rel}"))
            _one_line(str(refused.value))
        fine = await client.call_tool("read", {"path": "docs/deployment.md"})
    assert not fine.isError and fine.content[1].text  # type: ignore[union-attr]
    assert "a folder, not a file" in text  # the last one: the folder


def test_the_source_view_refuses_what_took_an_indexed_files_place(swapped: Path) -> None:
    config = InspectorConfig.from_folders([swapped], embedding="fake")
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        for rel in [*SWAPS, FOLDER_IN_PLACE]:
            for route in ("/api/source", "/source"):
                page = client.get(f"{route}/docs/{rel}")
                assert page.status_code == 403, (route, rel, page.status_code)
                assert SECRET not in page.text and "Traceback" not in page.text
        assert client.get("/api/source/docs/docs/deployment.md").status_code == 200


async def test_mcp_read_is_capped_in_characters_and_says_how_to_read_on(tmp_path: Path) -> None:
    """Issue 42 hole 9: a 7.5 MB one-line file came back whole (its one line fit 2,000)."""
    from kbgraph.mcp._settings import MAX_READ_CHARS

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "one.txt").write_text("retry " * (MAX_READ_CHARS // 2) + "\n")
    (folder / "many.txt").write_text("".join(f"{n:05d} retry {'x' * 90}\n" for n in range(1500)))
    KnowledgeBase(folder, embedding="fake").index()
    server = build_server(McpSettings.from_folders([folder]))
    async with create_connected_server_and_client_session(server) as client:
        first = await client.call_tool("read", {"path": "one.txt"})
        some = await client.call_tool("read", {"path": "many.txt"})
        one, many = first.structuredContent, some.structuredContent
        assert one is not None and many is not None
        rest = await client.call_tool(
            "read", {"path": "many.txt", "line_start": many["line_end"] + 1}
        )
    assert len(_lines_of(first)) == MAX_READ_CHARS == one["chars"]
    assert "line 1 has" in one["note"] and "open one.txt" in one["note"]
    assert len(_lines_of(some)) <= MAX_READ_CHARS and many["more"]
    assert many["line_end"] < 1500 and f"line_start {many['line_end'] + 1}" in many["note"]
    assert _lines_of(rest).startswith(f"{many['line_end']:05d}")


def _lines_of(result: types.CallToolResult) -> str:
    """A read's lines: its second text block (the first is the structured JSON)."""
    assert len(result.content) == 2 and result.structuredContent is not None
    block = result.content[1]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_mcp_read_sends_the_text_once(tmp_path: Path) -> None:
    """Issue 42 hole 9: the lines went out twice, in ``structuredContent`` and again in
    the JSON of the text block (~15 MB on the wire for a 7.5 MB file)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    marker = 'ünïque-marker "quoted" line'
    (folder / "notes.md").write_text(f"# Notes\r\n{marker}\r\n" + "filler line\r\n" * 50)
    KnowledgeBase(folder, embedding="fake").index()
    server = build_server(McpSettings.from_folders([folder]))
    async with create_connected_server_and_client_session(server) as client:
        result = await client.call_tool("read", {"path": "notes.md"})
    wire = result.model_dump_json(by_alias=True)
    assert wire.count("ünïque-marker") == 1 and marker in _lines_of(result)
    assert result.structuredContent is not None and "text" not in result.structuredContent


async def test_a_resource_longer_than_a_read_is_refused_in_one_line(tmp_path: Path) -> None:
    """The matrix rerun: ``resources/read`` of a 7.5 MB file sent it whole while the read
    tool stops at 100,000 characters."""
    from kbgraph.mcp._settings import MAX_READ_CHARS

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "big.txt").write_text("retry " * (MAX_READ_CHARS // 5) + "\n")
    (folder / "small.md").write_text("# Ünïcode\r\nretry once\r\n")
    KnowledgeBase(folder, embedding="fake").index()
    server = build_server(McpSettings.from_folders([folder]))
    async with create_connected_server_and_client_session(server) as client:
        with pytest.raises(McpError) as refused:
            await client.read_resource(AnyUrl("kbgraph://docs/big.txt"))
        small = await client.read_resource(AnyUrl("kbgraph://docs/small.md"))
    message = str(refused.value)
    assert "more than the 100,000 a resource read returns" in message and "\n" not in message
    assert "read tool" in message
    assert small.contents[0].text == "# Ünïcode\nretry once\n"  # type: ignore[union-attr]


async def test_a_hard_link_in_place_of_an_indexed_file_is_not_served(tmp_path: Path) -> None:
    """The matrix rerun: ``ln -f .env docs/deployment.md`` after indexing kept the name an
    index holds and brought the secret's inode; MCP read and the inspector served it."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / ".env").write_text(f"API_KEY={SECRET}\n")
    (folder / "deployment.md").write_text("# Deployment\r\n\r\nDeploy with `make ship`.\n")
    (folder / "edited.md").write_text("# Edited\n\nOld text.\n")
    (folder / "twin.md").write_text("# Twin\n\nIndexed text.\n")
    (folder / "other.md").write_text("# Other\n\nAnother file's text.\n")
    KnowledgeBase(folder, embedding="fake").index()
    os.unlink(folder / "deployment.md")
    os.link(folder / ".env", folder / "deployment.md")
    os.unlink(folder / "twin.md")  # every name of this inode is indexed: its bytes tell
    os.link(folder / "other.md", folder / "twin.md")
    (folder / "edited.md").write_text("# Edited\n\nNew text, one name: the user's own edit.\n")
    server = build_server(McpSettings.from_folders([folder]))
    async with create_connected_server_and_client_session(server) as client:
        linked = await client.call_tool("read", {"path": "deployment.md"})
        twin = await client.call_tool("read", {"path": "twin.md"})
        edited = await client.call_tool("read", {"path": "edited.md"})
    assert linked.isError and SECRET not in str(linked.content)
    # scan rule 7, as the walk judges it: the other name is a secret
    assert "the file has 2 names, of which the scan indexes 1" in _one_line(
        linked.content[0].text  # type: ignore[union-attr]
    )
    assert twin.isError and "Another file" not in str(twin.content)
    assert "a hard link took the place" in _one_line(twin.content[0].text)  # type: ignore[union-attr]
    assert not edited.isError and "New text" in _lines_of(edited)
    config = InspectorConfig.from_folders([folder], embedding="fake")
    with TestClient(create_app(config), base_url="http://127.0.0.1") as browser:
        page = browser.get("/api/source/docs/deployment.md")
    assert page.status_code == 403 and SECRET not in page.text
