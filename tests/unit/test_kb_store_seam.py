"""``KnowledgeBase`` reaches its store through the storage seam only: a store that is
neither of the two kbgraph ships indexes, searches and reports through it, and says itself
what it cannot do (no ``isinstance`` of a store above the seam decides it for the store).

The store here keeps the folder index's files outside the documents but exposes no folder
(``index_dir`` None), keeps the live version only and may be mounted read-only."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

import kbgraph.retrieval.kb as kb_module
from kbgraph.errors import ConfigError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval.folder import FolderStore
from kbgraph.retrieval.storage import IndexStore, IndexWriter, Recorded, Snapshot, VersionInfo

LIVE_ONLY = "live-only store: it keeps the current version and nothing before it"


class LiveOnlyStore:
    """An :class:`IndexStore` of its own: the folder index's files under ``root``, seen
    as a store with no folder, no earlier versions and a server of its own."""

    def __init__(self, documents: Path, root: Path) -> None:
        self._files = FolderStore(documents, root, 30.0)
        self.writable = True

    @property
    def location(self) -> str:
        return f"live-only:{self._files.location}"

    @property
    def index_dir(self) -> Path | None:
        return None  # its files lie outside the documents: nothing for the scan to skip

    def recorded(self) -> Recorded:
        return self._files.recorded()

    def open(self) -> Snapshot:
        return self._files.open()

    def current_key(self) -> str | None:
        return self._files.current_key()

    def writing(self, lock_timeout: float) -> AbstractContextManager[IndexWriter]:
        return self._files.writing(lock_timeout)

    def read_only(self) -> bool:
        return not self.writable and self._files.current_key() is not None

    def versions(self) -> list[VersionInfo]:
        raise ConfigError(f"{self.location}: {LIVE_ONLY}")

    def version_count(self) -> int:
        return 1

    def restore(self, wanted: str, lock_timeout: float) -> VersionInfo:
        raise ConfigError(f"{self.location}: {LIVE_ONLY}; cannot restore {wanted!r}")

    def server(self) -> dict[str, Any]:
        return {"address": "in-process", "standby": False}

    def delete(self, documents: Path, lock_timeout: float) -> None:
        self._files.delete(documents, lock_timeout)

    def close(self) -> None:
        self._files.close()


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LiveOnlyStore:
    documents = tmp_path / "docs"
    documents.mkdir()
    (documents / "retry.md").write_text(
        "# Retry\n\nThe retry policy uses exponential backoff.\n", encoding="utf-8"
    )
    made = LiveOnlyStore(documents.resolve(), tmp_path / "index")
    typed: IndexStore = made  # the seam's protocol, checked by mypy
    monkeypatch.setattr(kb_module, "open_store", lambda *args: typed)
    return made


@pytest.fixture
def kb(store: LiveOnlyStore, tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase(tmp_path / "docs", embedding="fake", freshness_ttl=0) as base:
        yield base


def test_a_store_of_its_own_indexes_searches_and_reports(
    kb: KnowledgeBase, store: LiveOnlyStore
) -> None:
    report = kb.index()
    assert report.stats.file_count == 1 and report.stats.versions == 1
    assert kb.search("exponential backoff")[0].chunk.source == "retry.md"
    stats = kb.stats()
    assert stats.server == {"address": "in-process", "standby": False}
    assert stats.versions == 1 and stats.stale_files == 0
    kb.validate()  # the store's snapshot checks itself against the documents


def test_what_the_store_cannot_do_it_says_itself(kb: KnowledgeBase) -> None:
    kb.index()
    with pytest.raises(ConfigError, match=LIVE_ONLY):
        kb.versions()
    with pytest.raises(ConfigError, match="cannot restore '1'"):
        kb.restore(1)
    with pytest.raises(ConfigError, match="not in a folder"):
        _ = kb.layout


def test_a_read_only_store_is_searched_as_it_is(
    kb: KnowledgeBase, store: LiveOnlyStore, tmp_path: Path
) -> None:
    kb.index()
    (tmp_path / "docs" / "new.md").write_text("# New\n\nA new page.\n", encoding="utf-8")
    store.writable = False
    assert kb.ensure_fresh() is None  # the store said it may not be written: no run
    assert kb.stale_files() == 1
    store.writable = True
    report = kb.ensure_fresh()
    assert report is not None and report.stats.file_count == 2
