"""The searcher registry serialises the searches of a searcher only when it needs it."""

from __future__ import annotations

import threading
from pathlib import Path

from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.retrieval import KnowledgeBase


class _Plain:
    """A searcher that says nothing about concurrency (a plug-in, a fake)."""

    def close(self) -> None:
        pass


class _Concurrent(_Plain):
    concurrent_searches = True


def _overlap(registry: SearcherRegistry, folder: Path) -> bool:
    """Whether two threads hold the searcher of ``folder`` at the same time."""
    inside, both = threading.Barrier(2, timeout=0.5), []

    def use() -> None:
        with registry.lock(folder, "fake"):
            try:
                inside.wait()
                both.append(True)
            except threading.BrokenBarrierError:
                both.append(False)

    threads = [threading.Thread(target=use) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return all(both)


def test_a_searcher_safe_for_concurrent_searches_is_not_serialised(tmp_path: Path) -> None:
    """Regression: every graph run of `langgraph dev` on one knowledge base waited for the
    others' searches, although KnowledgeBase is thread-safe (and its PostgreSQL searches
    each take a pooled connection)."""
    registry = SearcherRegistry(lambda folder, embedding, **_: _Concurrent())  # type: ignore[arg-type, return-value]
    assert _overlap(registry, tmp_path)


def test_other_searchers_are_still_held_one_at_a_time(tmp_path: Path) -> None:
    registry = SearcherRegistry(lambda folder, embedding, **_: _Plain())  # type: ignore[arg-type, return-value]
    assert not _overlap(registry, tmp_path)


def test_a_knowledge_base_says_its_searches_may_run_at_once() -> None:
    assert KnowledgeBase.concurrent_searches is True
