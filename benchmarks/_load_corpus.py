"""The knowledge base ``bench_load.py`` loads, and its writer: FILES files whose every line
names its file and version, rewritten and re-indexed over and over while agents search; a
result is *torn* unless its text is lines of one version of its file; the freshness probe
follows the writer's edits until a search returns them."""

from __future__ import annotations

import os
import queue
import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from _load_open import FreshnessProbe, Visible

from kbgraph.retrieval import KnowledgeBase, SearchFilters

FILES = 40
LINES = 24
EDITS_PER_RUN = 3
PROBE_INTERVAL = 0.1  # seconds between the freshness probe's searches while an edit is unseen
QUERIES = [f"budget retry line {n} version" for n in range(LINES)] + [
    "which file keeps the retry budget",
    "exponential backoff budget",
]
_VERSION = re.compile(r"File (\d+) version (\d+) line")
_SOURCE = re.compile(r"f(\d+)\.md")
VERSIONS = [0] * FILES  # the newest version of each file written so far (by every writer)


def content(i: int, version: int) -> str:
    lines = [
        f"File {i} version {version} line {n}: retry budget {version * 1000 + n}, "
        f"exponential backoff step {n}."
        for n in range(LINES)
    ]
    return f"# File {i}\n\n" + "\n".join(lines) + "\n"


def write_file(folder: Path, i: int, version: int) -> None:
    tmp = folder / f".f{i}.tmp"
    tmp.write_text(content(i, version), encoding="utf-8")
    os.replace(tmp, folder / f"f{i:02d}.md")


def torn(source: str, text: str) -> bool:
    """True unless ``text`` is lines of one version of ``source`` (lines it really had)."""
    named = _SOURCE.fullmatch(source)
    if named is None:
        return True
    i = int(named.group(1))
    tags = {(int(f), int(v)) for f, v in _VERSION.findall(text)}
    if len(tags) > 1 or any(f != i for f, _ in tags):
        return True  # lines of two versions, or of another file
    versions = [v for _, v in tags] or range(VERSIONS[i] + 1)  # an untagged fragment
    return not any(text in content(i, v) for v in versions)


@dataclass
class Tally:
    """What a set of agents saw: each search's milliseconds, errors, torn results."""

    ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    torn: int = 0
    results: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, ms: float, hits: list[tuple[str, str]]) -> None:
        bad = sum(torn(source, text) for source, text in hits)
        with self.lock:
            self.ms.append(ms)
            self.results += len(hits)
            self.torn += bad

    def fail(self, exc: BaseException) -> None:
        with self.lock:
            self.errors.append(f"{type(exc).__name__}: {exc}"[:300])


class Writer(threading.Thread):
    """Rewrites EDITS_PER_RUN files and indexes, until stopped, ``pause`` seconds between
    runs (0: back to back); each edit (file, version, when written) goes to ``edits`` for
    the freshness probe."""

    def __init__(self, folder: Path, url: str, pause: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.folder, self.kb = folder, KnowledgeBase(folder, embedding="fake", store=url)
        self.pause = pause
        self.runs, self.failures = 0, 0
        self.edits: queue.Queue[tuple[int, int, float]] = queue.Queue()
        self.stop_now = threading.Event()

    def run(self) -> None:
        rng = random.Random(7)
        while not self.stop_now.is_set():
            for i in rng.sample(range(FILES), EDITS_PER_RUN):
                VERSIONS[i] += 1
                write_file(self.folder, i, VERSIONS[i])
                self.edits.put((i, VERSIONS[i], time.perf_counter()))
            try:
                self.kb.index()
                self.runs += 1
            except Exception:
                self.failures += 1
            # Paced, a writer is what a team's edits are, not a second load on the cores.
            self.stop_now.wait(self.pause)


def visible(kb: KnowledgeBase, i: int, version: int) -> bool:
    """Whether a search of file ``i`` returns ``version`` of it (or a newer one) yet."""
    only = SearchFilters(paths=(f"f{i:02d}.md",))
    hits = kb.search(f"File {i} version {version} line", top_k=3, mode="bm25", filters=only)
    seen = [int(v) for h in hits for f, v in _VERSION.findall(h.chunk.text) if int(f) == i]
    return bool(seen) and max(seen) >= version


@dataclass
class WriterStats:
    runs: int = 0
    failures: int = 0
    fresh: dict[str, float | int] = field(default_factory=dict)


@contextmanager
def writing(
    folder: Path, url: str, pause: float = 0.0, seen: Visible | None = None
) -> Iterator[WriterStats]:
    """The writer (``pause`` seconds between its runs) and the freshness probe that
    follows its edits, for the block; the probe searches with ``seen`` (through a server),
    else with a ``KnowledgeBase`` of its own. The stats are filled in when the block ends
    (the probe waits for the writer's last run)."""
    stats = WriterStats()
    writer = Writer(folder, url, pause)
    probe_kb = KnowledgeBase(folder, embedding="fake", store=url)
    own: Visible = lambda i, v: visible(probe_kb, i, v)  # noqa: E731
    probe = FreshnessProbe(writer.edits, seen or own, PROBE_INTERVAL)
    writer.start()
    probe.start()
    try:
        yield stats
    finally:
        writer.stop_now.set()
        writer.join()
        fresh = probe.finish(timeout=30.0)
        writer.kb.close()
        probe_kb.close()
        stats.runs, stats.failures, stats.fresh = writer.runs, writer.failures, fresh.summary()
