"""Kept generations: the last N survive a write, `versions` lists them, `restore` makes one
current again atomically, and a reader of a pruned generation goes on working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbgraph.errors import ConfigError, IndexNotFoundError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder import IndexLayout, IndexReader, resolve_version

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    return root


def _write_version(folder: Path, n: int) -> None:
    (folder / "page.md").write_text(f"# Page\n\nVersion marker v{n} of the café page.\n", "utf-8")


def _indexed(folder: Path, versions: int, **kwargs: object) -> KnowledgeBase:
    kb = KnowledgeBase(folder, embedding="fake", **kwargs)  # type: ignore[arg-type]
    for n in range(1, versions + 1):
        _write_version(folder, n)
        kb.index()
    return kb


def _marker(kb: KnowledgeBase) -> str:
    [hit] = kb.search("version marker", top_k=1, mode="bm25")
    return hit.chunk.text.split("marker ")[1].split()[0]


def test_the_last_three_generations_are_kept_and_listed(folder: Path) -> None:
    with _indexed(folder, 5) as kb:
        rows = kb.versions()
        assert len(rows) == 3 and [r.current for r in rows] == [True, False, False]
        assert len(list(kb.layout.root.glob("gen-*"))) == 3
        assert all(r.file_count == 1 and r.embedding == "fake:bow-384" for r in rows)
        assert [r.indexed_at is not None for r in rows] == [True] * 3
        stats = kb.stats().to_dict()
        assert stats["versions"] == 3 and stats["keepVersions"] == 3
        assert rows[0].name == kb.layout.current_name()


def test_restore_round_trip(folder: Path) -> None:
    with _indexed(folder, 3) as kb:
        assert _marker(kb) == "v3"
        names = [r.name for r in kb.versions()]
        restored = kb.restore("3")  # the oldest kept
        assert restored.name == names[2] and restored.current
        assert _marker(kb) == "v1"
        assert kb.versions()[0].name == names[2]  # now the newest entry of the history
        assert kb.restore(names[1].rsplit("-", 1)[0]).name == names[1]  # a unique prefix
        assert _marker(kb) == "v2"
        kb.restore(names[0])
        assert _marker(kb) == "v3"
        # A restored index is updated from where it stands: the folder says v3.
        kb.restore("2")
        assert kb.is_fresh() is False
        assert kb.index().embedded == 0  # v3's text is in the embedding cache
        assert _marker(kb) == "v3"


@pytest.mark.parametrize("wanted", ["9", "0", "gen-", "nope", "gen-ffff"])
def test_restore_refuses_what_it_cannot_name(folder: Path, wanted: str) -> None:
    with _indexed(folder, 2) as kb, pytest.raises(ConfigError, match="kbgraph versions"):
        kb.restore(wanted)


def test_resolve_version_needs_a_unique_generation_prefix() -> None:
    names = ["gen-18b-aa", "gen-18a-bb", "gen-17f-cc"]
    assert resolve_version(names, "1") == "gen-18b-aa"
    assert resolve_version(names, "gen-17") == "gen-17f-cc"
    with pytest.raises(ConfigError, match="matches several"):
        resolve_version(names, "gen-18")
    with pytest.raises(ConfigError, match="not one of the kept"):
        resolve_version(names, "18b")  # a bare fragment is not a name


def test_keep_versions_is_remembered_and_validated(folder: Path) -> None:
    with _indexed(folder, 3, keep_versions=1) as kb:
        assert len(kb.versions()) == 1
    with _indexed(folder, 2) as kb:  # None: the recorded setting
        assert kb.keep_versions == 1 and len(kb.versions()) == 1
    with _indexed(folder, 3, keep_versions=2) as kb:
        assert len(kb.versions()) == 2
    with pytest.raises(ConfigError, match="keep_versions"):
        KnowledgeBase(folder, embedding="fake", keep_versions=0)


def test_a_reader_of_a_pruned_generation_keeps_working(folder: Path) -> None:
    with _indexed(folder, 1, keep_versions=1) as kb:
        layout = kb.layout
        reader = IndexReader(layout, lock_timeout=5)
        old = reader.name
        for n in range(2, 5):
            _write_version(folder, n)
            kb.index()
        assert not layout.generation(old).exists()  # pruned while open
        assert "v1" in reader.chunks.get(0).text
        assert reader.bm25.scores("marker").max() > 0
        assert reader.vectors is not None and float(reader.vectors[0] @ reader.vectors[0]) > 0.99
        reader.close()


def test_an_index_from_before_the_history_lists_its_current_generation(folder: Path) -> None:
    with _indexed(folder, 1) as kb:
        kb.layout.history.unlink()
        # Written before HISTORY existed: index format 1 (a format-2 writer always writes
        # HISTORY, so there its loss is damage: tests/faults/test_index_folder_damage.py).
        meta_path = kb.layout.generation(kb.layout.current_name() or "") / "meta.json"
        meta = json.loads(meta_path.read_bytes())
        meta["format_version"] = 1
        meta_path.write_text(json.dumps(meta))
        assert [r.current for r in kb.versions()] == [True]
        _write_version(folder, 2)
        kb.index()
        assert len(kb.versions()) == 2


def test_unpublished_generations_are_removed_by_the_next_writer(folder: Path) -> None:
    with _indexed(folder, 1) as kb:
        junk = kb.layout.new_generation()  # a writer that died before publishing
        _write_version(folder, 2)
        kb.index()
        assert not junk.exists()
        assert junk.name not in [r.name for r in kb.versions()]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "kbgraph", *args], capture_output=True, text=True, env=env
    )


def test_cli_versions_and_restore(folder: Path) -> None:
    _indexed(folder, 3).close()
    listed = _cli("versions", str(folder), "--json")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert data["keepVersions"] == 3 and len(data["versions"]) == 3
    oldest = data["versions"][2]["generation"]
    table = _cli("versions", str(folder)).stdout
    assert oldest in table and "*" in table
    done = _cli("restore", str(folder), "3", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["generation"] == oldest
    assert IndexLayout(folder / ".kbgraph").current_name() == oldest
    bad = _cli("restore", str(folder), "gen-nothing")
    assert bad.returncode == 2 and bad.stderr.startswith("kbgraph: version 'gen-nothing'")
    stats = json.loads(_cli("stats", str(folder), "--json").stdout)
    assert stats["versions"] == 3


@pytest.mark.parametrize("command", [("versions",), ("versions", "--json"), ("restore", "1")])
def test_a_folder_never_indexed_has_no_versions_to_list_or_restore(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """It said "no index yet" with exit 0 (versions) or that the index "no longer exists
    (deleted by another process)" (restore), and left nothing behind either way."""
    folder = tmp_path / "nötes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\r\nnever indexed\r\n", encoding="utf-8")
    done = _cli(command[0], str(folder), *command[1:])
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr == f"kbgraph: {folder} has no index yet; run `kbgraph index {folder}`\n"
    assert sorted(p.name for p in folder.iterdir()) == ["a.md"]
    with pytest.raises(IndexNotFoundError, match="has no index yet"):
        KnowledgeBase(folder, embedding=None).versions()
