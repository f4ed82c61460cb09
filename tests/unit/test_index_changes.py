"""What the Index view reads from a knowledge base: which files changed since the live
index was built (``KnowledgeBase.changes``), and every file left out of it with its reason
(``KnowledgeBase.skipped_files``: the scan's skips now and the loader's of the last run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbgraph.errors import IndexNotFoundError
from kbgraph.retrieval import ChunkConfig, IndexChanges, KnowledgeBase


@pytest.fixture
def kb(tmp_path: Path) -> KnowledgeBase:
    root = tmp_path / "docs"
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "retry.md").write_text("# Retry\n\nBackoff doubles.\n", encoding="utf-8")
    (root / "notes.txt").write_bytes("Café notes: opens at 8.\r\n".encode())
    (root / "gone.md").write_text("# Gone\n\nSoon deleted.\n", encoding="utf-8")
    (root / "empty.md").write_text("", encoding="utf-8")
    (root / "blob.txt").write_bytes(bytes(range(256)) * 4)
    (root / ".env").write_text("TOKEN=x\n", encoding="utf-8")
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "index.js").write_text("x = 1\n", encoding="utf-8")
    knowledge_base = KnowledgeBase(root, embedding="fake")
    knowledge_base.index()
    return knowledge_base


def test_a_fresh_index_has_no_changes(kb: KnowledgeBase) -> None:
    assert kb.changes() == IndexChanges()
    assert kb.changes().count == 0


def test_changes_name_added_modified_and_deleted_files(kb: KnowledgeBase) -> None:
    root = kb.folder
    (root / "straße.md").write_text("# Neu\n\nGrößen.\n", encoding="utf-8")
    retry = root / "guide" / "retry.md"
    retry.write_text("# Retry\n\nBackoff doubles, up to a minute.\n", encoding="utf-8")
    os.utime(retry, ns=(retry.stat().st_atime_ns, retry.stat().st_mtime_ns + 10**9))
    (root / "gone.md").unlink()
    changes = kb.changes()
    assert changes.added == ["straße.md"]
    assert changes.modified == ["guide/retry.md"]
    assert changes.deleted == ["gone.md"]
    assert changes.count == kb.stale_files() == 3
    assert changes.to_dict() == {
        "added": ["straße.md"],
        "modified": ["guide/retry.md"],
        "deleted": ["gone.md"],
        "rebuild": False,
    }


def test_other_settings_mean_a_rebuild(kb: KnowledgeBase) -> None:
    other = KnowledgeBase(kb.folder, embedding="fake", chunking=ChunkConfig(chunk_size=64))
    assert other.changes() == IndexChanges(rebuild=True)


def test_skipped_files_hold_the_scans_and_the_loaders_reasons(kb: KnowledgeBase) -> None:
    reasons = {s.path: s.reason for s in kb.skipped_files()}
    assert reasons == {
        ".env": "secret",
        "node_modules/": "excluded-dir",
        "empty.md": "empty",
        "blob.txt": "binary",
    }


def test_a_folder_never_indexed_says_so(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path, embedding="fake") as fresh:
        with pytest.raises(IndexNotFoundError):
            fresh.changes()
        with pytest.raises(IndexNotFoundError):
            fresh.skipped_files()
