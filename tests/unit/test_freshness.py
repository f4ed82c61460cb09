"""Freshness checks cost a folder walk: at most one per time-to-live, one at a time, and
never under the lock that searches wait for (issue 10: with auto_index every Retrieve
walked the whole folder while holding the knowledge base's lock)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kbgraph.retrieval._kb_index as kb_module
from kbgraph.graphs.nodes.retrieve import KbRun, search_kb
from kbgraph.graphs.searcher import Searcher, SearcherRegistry
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._freshness import Freshness

from ._rag_fakes import deps_for, settings_for

WAIT_S = 30.0  # generous: a bound, never a timing assertion


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "retry.md").write_text(
        "# Retry\n\nThe retry policy uses exponential backoff.\n", encoding="utf-8"
    )
    (root / "notes.txt").write_text("Café notes: the office opens at 8.\r\n", encoding="utf-8")
    return root


class Walks:
    """Counts the folder walks of ``KnowledgeBase`` freshness checks; ``hold`` makes the
    next walk wait until ``release`` (a slow scan of a big folder)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.entered = threading.Event()
        self._gate: threading.Event | None = None
        real = kb_module.scan_folder

        def scan(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            gate, self._gate = self._gate, None
            if gate is not None:
                self.entered.set()
                gate.wait(WAIT_S * 2)
            return real(*args, **kwargs)

        monkeypatch.setattr(kb_module, "scan_folder", scan)

    def hold(self) -> threading.Event:
        self._gate = threading.Event()
        return self._gate


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Walks:
    return Walks(monkeypatch)


def test_repeated_freshness_checks_walk_the_folder_once(folder: Path, walks: Walks) -> None:
    with KnowledgeBase(folder, embedding="fake") as kb:
        kb.index()
        before = walks.count
        reports = [kb.ensure_fresh() for _ in range(10)]
    assert reports == [None] * 10
    assert walks.count - before == 1  # main walked 10 times


def test_a_time_to_live_of_zero_checks_every_time_and_sees_edits(
    folder: Path, walks: Walks
) -> None:
    with KnowledgeBase(folder, embedding="fake", freshness_ttl=0) as kb:
        kb.index()
        before = walks.count
        assert kb.ensure_fresh() is None
        (folder / "guide" / "new.md").write_text("# New\n\nA new page.\n", encoding="utf-8")
        report = kb.ensure_fresh()
        assert report is not None and report.stats.file_count == 3
        assert walks.count - before >= 2
        assert kb.search("new page", top_k=1, mode="bm25")[0].chunk.source == "guide/new.md"


def test_a_check_waits_for_no_one_while_the_index_can_be_searched(
    folder: Path, walks: Walks
) -> None:
    with KnowledgeBase(folder, embedding="fake", freshness_ttl=0) as kb:
        kb.index()
        release = walks.hold()
        slow = threading.Thread(target=kb.ensure_fresh)
        slow.start()
        try:
            assert walks.entered.wait(WAIT_S)
            # A second caller does not queue behind the walk: it searches what there is.
            assert kb.ensure_fresh() is None
            assert kb.search("backoff", top_k=1, mode="bm25")
            assert slow.is_alive()
        finally:
            release.set()
            slow.join(WAIT_S)


def _in_thread(fn: Callable[[], KbRun]) -> tuple[threading.Thread, list[KbRun]]:
    out: list[KbRun] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def test_retrieve_searches_while_another_run_walks_the_folder(folder: Path, walks: Walks) -> None:
    """Two graph runs on one knowledge base: the first one's freshness check is a slow
    folder walk; the second one searches meanwhile (on main it waited for the walk,
    because the walk ran under the searcher's lock)."""

    def factory(folder: str, embedding: str | None, /, **options: Any) -> Searcher:
        return KnowledgeBase(folder, embedding=embedding, freshness_ttl=0)

    registry = SearcherRegistry(factory)
    KnowledgeBase(folder, embedding="fake").index()
    settings = settings_for(folder, auto_index=True)
    [kb] = settings.resolved_knowledge_bases()
    deps = deps_for(registry)

    def run() -> KbRun:
        return search_kb(kb, ["retry backoff"], settings, None, deps, lambda _e: None)

    release = walks.hold()
    first, _ = _in_thread(run)
    try:
        assert walks.entered.wait(WAIT_S)
        second, results = _in_thread(run)
        second.join(WAIT_S)
        assert not second.is_alive(), "the search waited for another run's folder walk"
        [done] = results
        assert not done.errors and any(done.lists.values())
        assert first.is_alive()  # still walking
    finally:
        release.set()
        first.join(WAIT_S)
    registry.close_all()


def test_freshness_decisions_with_a_clock() -> None:
    now = [0.0]
    checks: list[str] = []

    def is_fresh() -> bool:
        checks.append("walk")
        return len(checks) != 2  # the second walk finds a change

    def index(_progress: Any) -> Any:
        checks.append("index")
        return "report"

    gate = Freshness(
        ttl=2.0,
        is_fresh=is_fresh,
        index=index,
        has_index=lambda: True,
        wait_s=1.0,
        clock=lambda: now[0],
    )
    assert gate.ensure(None) is None and checks == ["walk"]
    now[0] = 1.9
    assert gate.ensure(None) is None and checks == ["walk"]
    now[0] = 2.0
    assert gate.ensure(None) == "report" and checks == ["walk", "walk", "index"]
    gate.forget()
    assert gate.ensure(None) is None and checks[-1] == "walk"
    with pytest.raises(ValueError, match="time-to-live"):
        Freshness(ttl=-1, is_fresh=is_fresh, index=index, has_index=lambda: True, wait_s=1)
