"""`kbgraph watch` as a user runs it (a real process, real file-system events) and live
knowledge bases in a long-running process: edits, new files, deletions and renames reach
the index; a burst of writes is a few runs; a kill mid-run leaves a valid index; an
embedding provider outage (a real loopback server) does not stop the watcher.

Waits are bounded and generous; nothing asserts how long anything took."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kbgraph.retrieval._kb_index as kb_module
from kbgraph.graphs import build_rag_graph
from kbgraph.graphs.searcher import SearcherRegistry
from kbgraph.retrieval import KnowledgeBase
from tests.support.openai_server import EMBEDDINGS_PATH, OpenAIServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "test-key"}
WAIT_S = 60.0
KBGRAPH = [sys.executable, "-m", "kbgraph"]
FAST = ["--debounce", "400"]
Run = dict[str, Any]


class WatchProcess:
    """``kbgraph watch FOLDER --json`` in a subprocess; its runs (one JSON object per line
    of stdout) and stderr lines are collected by reader threads."""

    def __init__(
        self, folder: Path, embedding: str = "fake", *, sigint: Any = signal.SIG_DFL
    ) -> None:
        # The child starts with SIGINT as a shell gives it: default from a terminal, ignored
        # for a background job (`make test &`, nohup). Ctrl-C must stop it either way.
        self.proc = subprocess.Popen(
            [*KBGRAPH, "watch", str(folder), "--json", "--embedding", embedding, *FAST],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
        )
        self.runs: queue.Queue[Run] = queue.Queue()
        self.seen: list[Run] = []
        self.errors: list[str] = []
        threading.Thread(target=self._read_runs, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()

    def _read_runs(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.runs.put(json.loads(line))

    def _read_errors(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.errors.append(line.rstrip("\n"))

    def wait_for(self, check: Callable[[Run], bool], what: str) -> Run:
        """The first run (from now on) that ``check`` accepts."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                run = self.runs.get(timeout=0.5)
            except queue.Empty:
                assert self.proc.poll() is None, f"watch exited: {self.errors}"
                continue
            self.seen.append(run)
            if check(run):
                return run
        raise AssertionError(f"no run {what} within {WAIT_S} s; runs: {self.seen}")

    def interrupt(self) -> int:
        """Ctrl-C, then the exit code."""
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(WAIT_S)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT_S)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "retry.md").write_text(
        "# Retry\n\nThe retry policy uses exponential backoff.\n", encoding="utf-8"
    )
    (root / "notes.txt").write_text("Café notes: the office opens at 8.\r\n", encoding="utf-8")
    return root


@pytest.fixture
def watching(folder: Path) -> Iterator[Callable[..., WatchProcess]]:
    started: list[WatchProcess] = []

    def start(embedding: str = "fake", sigint: Any = signal.SIG_DFL) -> WatchProcess:
        watch = WatchProcess(folder, embedding, sigint=sigint)
        started.append(watch)
        return watch

    yield start
    for watch in started:
        watch.kill()


def _search(folder: Path, query: str, embedding: str = "fake") -> list[str]:
    with KnowledgeBase(folder, embedding=embedding) as kb:
        kb.validate()
        return [r.chunk.source for r in kb.search(query, top_k=3, mode="bm25")]


def _changed(kind: str, path: str) -> Callable[[Run], bool]:
    return lambda run: run["ok"] and path in run["changes"][kind]


def test_watch_applies_edits_new_files_deletions_and_renames(
    folder: Path, watching: Callable[..., WatchProcess]
) -> None:
    watch = watching()
    first = watch.wait_for(lambda r: r["ok"], "catching up")
    assert sorted(first["changes"]["added"]) == ["guide/retry.md", "notes.txt"]

    (folder / "guide" / "retry.md").write_text(
        "# Retry\n\nRetries give up after seven attempts.\n", encoding="utf-8"
    )
    edit = watch.wait_for(_changed("modified", "guide/retry.md"), "for the edit")
    assert edit["embedded"] >= 1 and edit["fileCount"] == 2
    assert _search(folder, "seven attempts")[0] == "guide/retry.md"

    (folder / "guide" / "auth.md").write_text("# Auth\n\nKeys rotate yearly.\n", encoding="utf-8")
    watch.wait_for(_changed("added", "guide/auth.md"), "for the new file")
    assert _search(folder, "keys rotate")[0] == "guide/auth.md"

    (folder / "notes.txt").unlink()
    watch.wait_for(_changed("deleted", "notes.txt"), "for the deletion")
    assert "notes.txt" not in _search(folder, "office opens")

    (folder / "guide" / "auth.md").rename(folder / "guide" / "keys.md")
    renamed = watch.wait_for(lambda r: r["ok"] and r["changes"]["renamed"], "for the rename")
    assert renamed["changes"]["renamed"] == [{"from": "guide/auth.md", "to": "guide/keys.md"}]
    assert renamed["embedded"] == 0  # the same text: vectors come from the cache
    assert _search(folder, "keys rotate")[0] == "guide/keys.md"

    # Files the index does not include, and the index's own writes, start no run.
    mark = len(watch.seen)
    (folder / "picture.png").write_bytes(b"\x89PNG\r\n")
    (folder / ".env").write_text("SECRET=1\n", encoding="utf-8")
    (folder / "guide" / "retry.md").write_text("# Retry\n\nFinal words.\n", encoding="utf-8")
    last = watch.wait_for(_changed("modified", "guide/retry.md"), "for the last edit")
    assert watch.seen[mark:] == [last]
    assert last["fileCount"] == 2
    assert watch.interrupt() == 0
    assert watch.errors[-1] == "kbgraph: watch stopped"


def test_ctrl_c_stops_a_watcher_started_with_sigint_ignored(
    folder: Path, watching: Callable[..., WatchProcess]
) -> None:
    # `make test &` or `nohup kbgraph watch DOCS &`: SIGINT arrives ignored from the shell.
    watch = watching(sigint=signal.SIG_IGN)
    watch.wait_for(lambda run: True, "of the first catch-up")
    assert watch.interrupt() == 0
    assert "kbgraph: watch stopped" in watch.errors


def test_a_burst_of_200_writes_is_a_few_runs(
    folder: Path, watching: Callable[..., WatchProcess]
) -> None:
    watch = watching()
    watch.wait_for(lambda r: r["ok"], "catching up")
    burst = folder / "burst"
    burst.mkdir()
    for i in range(200):
        (burst / f"page-{i:03d}.md").write_text(f"# Page {i}\n\nBurst page {i}.\n", "utf-8")
    done = watch.wait_for(lambda r: r["ok"] and r["fileCount"] == 202, "covering the burst")
    runs = watch.seen[1:]
    assert done in runs and len(runs) <= 4, [r["changes"]["added"][:3] for r in runs]
    assert sum(len(r["changes"]["added"]) for r in runs) == 200
    assert watch.interrupt() == 0


def test_a_watcher_killed_mid_run_leaves_a_valid_index(
    folder: Path, watching: Callable[..., WatchProcess]
) -> None:
    with OpenAIServer() as server:
        spec = f"openai_compatible:{server.embedding_model}@{server.base_url}"
        watch = watching(spec)
        watch.wait_for(lambda r: r["ok"], "catching up")
        server.clear_requests()
        server.hang_next(1, seconds=WAIT_S)  # the next run stops mid-embedding
        (folder / "guide" / "new.md").write_text("# New\n\nHanging page.\n", encoding="utf-8")
        deadline = time.monotonic() + WAIT_S
        while not server.requests_to(EMBEDDINGS_PATH) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server.requests_to(EMBEDDINGS_PATH), "the watcher never started embedding"
        watch.kill()  # SIGKILL, mid-run
        assert sorted(_search(folder, "retry policy backoff office", spec)) == [
            "guide/retry.md",
            "notes.txt",
        ]
        server.clear_faults()
        with KnowledgeBase(folder, embedding=spec) as kb:  # the next writer completes
            report = kb.index()
            kb.validate()
        assert report.stats.file_count == 3 and not report.rebuilt


def test_a_provider_outage_does_not_stop_the_watcher(
    folder: Path, watching: Callable[..., WatchProcess]
) -> None:
    with OpenAIServer() as server:
        spec = f"openai_compatible:{server.embedding_model}@{server.base_url}"
        watch = watching(spec)
        watch.wait_for(lambda r: r["ok"], "catching up")
        # Every attempt of the next two runs fails (503, retry at once): each run gives up.
        server.fail_next(12, status=503, headers={"Retry-After": "0"}, message="down")
        (folder / "guide" / "outage.md").write_text("# Outage\n\nWritten while down.\n", "utf-8")
        failed = watch.wait_for(lambda r: not r["ok"], "failing")
        assert "EmbeddingError" in failed["error"] and failed["retryIn"] > 0
        # Meanwhile the last good index serves.
        assert "guide/outage.md" not in _search(folder, "written while down", spec)
        recovered = watch.wait_for(_changed("added", "guide/outage.md"), "after the outage")
        assert recovered["embedded"] >= 1
        assert _search(folder, "written while down", spec)[0] == "guide/outage.md"
        assert watch.interrupt() == 0


def test_a_live_knowledge_base_indexes_changes_without_walking_per_query(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks: list[Path] = []
    real_scan = kb_module.scan_folder
    monkeypatch.setattr(
        kb_module, "scan_folder", lambda *a, **k: walks.append(a[0]) or real_scan(*a, **k)
    )
    with KnowledgeBase(folder, embedding="fake", live=True, freshness_ttl=0) as kb:
        assert kb.live
        kb.ensure_fresh()  # waits for the catch-up run
        before = len(walks)
        for _ in range(10):
            assert kb.ensure_fresh() is None
            assert kb.search("backoff", top_k=1, mode="bm25")[0].chunk.source == "guide/retry.md"
        assert len(walks) == before  # no query walked the folder
        (folder / "guide" / "live.md").write_text("# Live\n\nAn instant page.\n", "utf-8")
        deadline = time.monotonic() + WAIT_S
        found: list[str] = []
        while time.monotonic() < deadline:
            kb.ensure_fresh()
            found = [r.chunk.source for r in kb.search("instant page", top_k=1, mode="bm25")]
            if found == ["guide/live.md"]:
                break
            time.sleep(0.2)
        assert found == ["guide/live.md"]
    assert not kb.live


def test_live_in_the_subgraph_context_keeps_the_knowledge_base_fresh(folder: Path) -> None:
    registry = SearcherRegistry()
    graph = build_rag_graph(registry=registry)
    context = {
        "knowledge_bases": [{"name": "docs", "folder": str(folder)}],
        "embedding": "fake",
        "live": True,
        "max_rewrites": 0,
    }

    def cited(question: str) -> list[str]:
        out = graph.invoke({"messages": [("user", question)]}, context=context)
        return [c["source"] for c in out["rag_citations"]]

    try:
        assert "guide/retry.md" in cited("How does the retry policy back off?")
        searcher = registry.open(folder, "fake")
        assert isinstance(searcher, KnowledgeBase) and searcher.live
        (folder / "guide" / "quota.md").write_text(
            "# Quota\n\nThe harbor quota allows forty ships per tide.\n", "utf-8"
        )
        deadline = time.monotonic() + WAIT_S
        sources: list[str] = []
        while time.monotonic() < deadline and "guide/quota.md" not in sources:
            sources = cited("How many ships does the harbor quota allow per tide?")
            time.sleep(0.2)
        assert "guide/quota.md" in sources
    finally:
        registry.close_all()
