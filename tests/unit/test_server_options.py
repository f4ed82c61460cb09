"""The two servers' shared options are written once (kbgraph/_server_options.py): the
folders, --store, --host, --port, --allow-host and --embedding of ``kbgraph mcp`` and
``kbgraph inspect`` had been copied option by option (issue 43), and ``--help`` of both
still shows each with its own default port and words."""

from __future__ import annotations

import ast
from pathlib import Path

from click.testing import CliRunner

from kbgraph.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHARED = {"--store", "--index-dir", "--host", "--port", "--allow-host", "--embedding", "folders"}


def _declared(path: Path) -> set[str]:
    """The option names a command module spells out itself."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in (
            "click.option",
            "click.argument",
        ):
            found |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return found


def test_the_servers_declare_none_of_the_shared_options_again() -> None:
    for rel in ("kbgraph/mcp/_command.py", "kbgraph/inspector/_command.py"):
        assert _declared(ROOT / rel) & SHARED == set(), rel


def test_each_server_keeps_its_own_port_and_words() -> None:
    mcp, inspect = (
        " ".join(CliRunner().invoke(main, [c, "--help"]).output.split()) for c in ("mcp", "inspect")
    )
    assert "[default: 8766;" in mcp and "With --http; 0 picks a free port." in mcp
    assert "[default: 8765;" in inspect and "anything but loopback prints a warning" in inspect
    for text in (mcp, inspect):
        assert "--store URL" in text and "--allow-host NAME" in text


def test_index_dirs_pair_with_the_folders_in_order(tmp_path: Path) -> None:
    # One --index-dir per FOLDER or none: a second folder must not quietly share, or miss,
    # the first one's index.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for command in ("mcp", "inspect"):
        args = [command, str(tmp_path / "a"), str(tmp_path / "b"), "--index-dir", str(tmp_path)]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (command, result.output)
        assert "1 --index-dir for 2 folders: give one per FOLDER" in result.output
