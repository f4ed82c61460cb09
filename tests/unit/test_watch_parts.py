"""The pure parts of watching: which paths can matter (the scan's own rules), what a run
changed by file, and an unchanged folder that writes no new generation."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.retrieval import KnowledgeBase, ScanConfig
from kbgraph.retrieval._scan_paths import PathRules
from kbgraph.retrieval._storage import FileRecord
from kbgraph.retrieval._watch import FileChanges, diff_files


def _record(sha: str) -> FileRecord:
    return FileRecord(size=1, mtime_ns=1, sha256=sha, kind="markdown", chunk_start=0, chunk_end=1)


def test_diff_names_added_modified_deleted_and_renamed_files() -> None:
    before = {"a.md": _record("1"), "b.md": _record("2"), "old/名前.md": _record("3")}
    after = {"a.md": _record("1x"), "new/名前.md": _record("3"), "c.md": _record("4")}
    changes = diff_files(before, after)
    assert changes == FileChanges(
        added=("c.md",),
        modified=("a.md",),
        deleted=("b.md",),
        renamed=(("old/名前.md", "new/名前.md"),),
    )
    assert changes.describe() == (
        "1 added (c.md), 1 modified (a.md), 1 deleted (b.md), "
        "1 renamed (old/名前.md -> new/名前.md)"
    )
    assert changes.to_dict()["renamed"] == [{"from": "old/名前.md", "to": "new/名前.md"}]
    assert not diff_files(before, before) and diff_files(before, before).describe() == (
        "no file changed"
    )


def test_two_copies_of_one_deleted_file_are_a_rename_and_an_addition() -> None:
    changes = diff_files({"a.md": _record("1")}, {"b.md": _record("1"), "c.md": _record("1")})
    assert changes.renamed == (("a.md", "b.md"),) and changes.added == ("c.md",)
    listed = FileChanges(added=tuple(f"f{i}.md" for i in range(5))).describe(listed=2)
    assert listed == "5 added (f0.md, f1.md, …)"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for rel in ("guide/a.md", "node_modules/x/readme.md", "venv/lib/b.md", ".ssh/key.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("text", encoding="utf-8")
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    (root / ".kbgraph").mkdir()
    return root


@pytest.mark.parametrize(
    ("rel", "verdict"),
    [
        ("guide/a.md", True),
        ("guide", True),
        ("guide/deleted.md", True),  # gone: judged by its name
        ("guide/deleted-folder", True),
        ("guide/photo.png", True),  # not included, yet it passes: it may be a folder
        ("node_modules/x/readme.md", False),  # an excluded folder on the way
        ("venv/lib/b.md", False),  # a virtualenv, found by its marker
        (".ssh/key.md", False),  # a secret folder
        (".env", False),  # a secret name
        ("guide/.env.local", False),
        (".kbgraph/CURRENT", False),  # the index itself
        (".git/index", False),
    ],
)
def test_paths_the_scan_could_index(tree: Path, rel: str, verdict: bool) -> None:
    rules = PathRules(tree, ScanConfig())
    assert rules.could_hold(tree / rel) is verdict


def test_path_rules_outside_the_folder_and_a_custom_index_dir(tree: Path, tmp_path: Path) -> None:
    rules = PathRules(tree, ScanConfig(), index_dir=tree / "custom-index")
    assert rules.relative(tmp_path / "elsewhere.md") is None
    assert not rules.could_hold(tmp_path / "elsewhere.md")
    assert rules.could_hold(tree)
    assert not rules.could_hold(tree / "custom-index" / "meta.json")
    assert rules.includes("guide/a.md") and not rules.includes("guide/photo.png")


def test_an_unchanged_folder_writes_no_new_generation(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    with KnowledgeBase(folder, embedding="fake") as kb:
        kb.index()
        first = kb.layout.current_name()
        report = kb.index()
        assert kb.layout.current_name() == first
        assert report.embedded == 0 and report.reused == 1 and report.stats.file_count == 1
        (folder / "a.md").write_text("# A\n\nbeta\n", encoding="utf-8")
        assert kb.index().embedded == 1
        assert kb.layout.current_name() != first
