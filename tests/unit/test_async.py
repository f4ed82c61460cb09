"""The async API never blocks the event loop: a heartbeat coroutine keeps ticking while a
deliberately slow search runs (``KnowledgeBase.asearch`` / ``aindex``, the retriever's
``ainvoke`` and ``rag_search.ainvoke``). A blocking call would leave zero ticks inside the
search; the tests count ticks, they do not time anything."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.prebuilt import ToolRuntime

from kbgraph.graphs._subgraph import build_rag_graph
from kbgraph.graphs._tool import TOOL_NAME, make_rag_search
from kbgraph.retrieval import KnowledgeBase, SearchConfig
from kbgraph.retrieval._progress import ProgressCallback
from kbgraph.retrieval._records import SearchResult

from ._rag_fakes import FakeSearcher, fake_kb, registry_with, settings_for

SLOW_SECONDS = 0.4
TICK_SECONDS = 0.01
DOCS = {
    "retry.md": "# Retry policy\n\nFailed requests are retried with exponential backoff.\n",
    "größe.md": "# Größe\r\n\r\nDie Größe des Caches in Megabyte.\r\n",
}


async def ticks_during(busy: threading.Event, work: Awaitable[Any]) -> tuple[int, Any]:
    """Run ``work`` beside a heartbeat; count the ticks that happened while ``busy`` was
    set (that is, while the slow part of the work was running in its thread)."""
    ticks = 0
    done = False

    async def heartbeat() -> None:
        nonlocal ticks
        while not done:
            await asyncio.sleep(TICK_SECONDS)
            ticks += busy.is_set()

    beat = asyncio.create_task(heartbeat())
    try:
        result = await work
    finally:
        done = True
        await beat
    return ticks, result


def slowly(busy: threading.Event, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        busy.set()
        try:
            time.sleep(SLOW_SECONDS)
            return fn(*args, **kwargs)
        finally:
            busy.clear()

    return wrapped


@pytest.fixture
def kb(tmp_path: Path) -> KnowledgeBase:
    for rel, text in DOCS.items():
        (tmp_path / rel).write_bytes(text.encode("utf-8"))
    base = KnowledgeBase(tmp_path, embedding="fake")
    base.index()
    return base


def test_asearch_returns_what_search_returns_without_blocking(kb: KnowledgeBase) -> None:
    expected = kb.search("Größe des Caches", top_k=2)
    busy = threading.Event()
    kb.search = slowly(busy, kb.search)  # type: ignore[method-assign]
    ticks, results = asyncio.run(ticks_during(busy, kb.asearch("Größe des Caches", top_k=2)))
    assert [r.chunk.id for r in results] == [r.chunk.id for r in expected]
    assert ticks >= 3


def test_asearch_takes_top_k_from_a_search_config(kb: KnowledgeBase) -> None:
    # asearch defaulted top_k=5, which a SearchConfig(top_k=2) contradicted (ConfigError)
    config = SearchConfig(top_k=2)
    expected = kb.search("Größe des Caches", config=config)
    results = asyncio.run(kb.asearch("Größe des Caches", config=config))
    assert [r.chunk.id for r in results] == [r.chunk.id for r in expected]
    assert len(results) == 2
    assert len(asyncio.run(kb.asearch("Größe des Caches"))) == len(kb.search("Größe des Caches"))


def test_aindex_indexes_without_blocking(kb: KnowledgeBase, tmp_path: Path) -> None:
    (tmp_path / "new.md").write_text("# New\n\nA new page about webhooks.\n", encoding="utf-8")
    busy = threading.Event()
    kb.index = slowly(busy, kb.index)  # type: ignore[method-assign]
    ticks, report = asyncio.run(ticks_during(busy, kb.aindex()))
    assert report.stats.file_count == 3
    assert ticks >= 3


def test_retriever_ainvoke_does_not_block(kb: KnowledgeBase) -> None:
    busy = threading.Event()
    kb.search = slowly(busy, kb.search)  # type: ignore[method-assign]
    retriever = kb.as_retriever(top_k=1)
    ticks, docs = asyncio.run(ticks_during(busy, retriever.ainvoke("exponential backoff")))
    assert [d.metadata["source"] for d in docs] == ["retry.md"]
    assert ticks >= 3


class SlowSearcher(FakeSearcher):
    busy: threading.Event

    def rank(self, query: str, ranker: str, **kwargs: Any) -> list[SearchResult]:
        return slowly(self.busy, super().rank)(query, ranker, **kwargs)  # type: ignore[no-any-return]

    def ensure_fresh(self, *, progress: ProgressCallback | None = None, **_: Any) -> Any:
        return None


def test_rag_search_ainvoke_runs_the_graph_off_the_event_loop(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    base = fake_kb(folder)
    slow = SlowSearcher(base.chunks)
    slow.busy = threading.Event()
    tool = make_rag_search(build_rag_graph(registry=registry_with({folder: slow})))
    assert tool.coroutine is not None  # a native coroutine, not the sync function in a thread
    runtime = ToolRuntime(
        state={"messages": []}, context=settings_for(folder, search={"mode": "vector"}), config={},
        stream_writer=lambda _: None, tool_call_id="call_1", store=None,
    )  # fmt: skip
    call = {
        "type": "tool_call", "id": "call_1", "name": TOOL_NAME,
        "args": {"query": "How do I configure the retry policy?", "runtime": runtime},
    }  # fmt: skip
    ticks, message = asyncio.run(ticks_during(slow.busy, tool.ainvoke(call)))
    assert isinstance(message, ToolMessage)
    assert message.status == "success"
    assert message.artifact["citations"][0]["source"] == "docs/configuration.md"
    assert ticks >= 3
    assert all(name != "MainThread" for name in slow.threads)
