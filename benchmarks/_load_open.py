"""Open-loop load for ``bench_load.py``: searches arrive as a Poisson process at a set rate
and a pool of agents serves them; a single idle agent gives the reference latency; a probe
measures how soon the writer's edits become searchable.

An arrival's latency runs from its SCHEDULED time, not from when an agent picked it up: a
closed loop (or an open loop timed from pick-up) would hide the time a search waits behind
others (coordinated omission), which is exactly what load adds.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

Hits = list[tuple[str, str]]
Search = Callable[[int, str], Hits]


class Recorder(Protocol):
    """Where searches land (``bench_load.Tally``): milliseconds and results, or an error."""

    def add(self, ms: float, hits: Hits) -> None: ...

    def fail(self, exc: BaseException) -> None: ...


def poisson_offsets(rate: float, seconds: float, seed: int) -> list[float]:
    """Arrival times (seconds from the start) of a Poisson process of ``rate`` per second:
    exponential gaps from a seeded generator, so two runs offer the same arrivals."""
    rng = random.Random(seed)
    offsets, t = [], rng.expovariate(rate)
    while t < seconds:
        offsets.append(t)
        t += rng.expovariate(rate)
    return offsets


def run_closed(
    n: int, seconds: float, search: Search, tally: Recorder, queries: Sequence[str]
) -> None:
    """The closed loop: ``n`` agents, each searching again as soon as it has its results,
    for ``seconds``."""
    deadline = time.monotonic() + seconds

    def agent(k: int) -> None:
        rng = random.Random(k)
        while time.monotonic() < deadline:
            query = rng.choice(queries)
            start = time.perf_counter()
            try:
                hits = search(k, query)
            except Exception as exc:
                tally.fail(exc)
                continue
            tally.add((time.perf_counter() - start) * 1000, hits)

    threads = [threading.Thread(target=agent, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@dataclass
class OpenRun:
    """What an open-loop run offered and how long it took to serve (drain included)."""

    offered: int
    elapsed_s: float
    peak_busy: int
    pool: int
    late_dispatch_ms: float  # the dispatcher's worst lag behind the schedule


class _Busy:
    """How many agents are searching now, and the most at once."""

    def __init__(self) -> None:
        self.now, self.peak, self.lock = 0, 0, threading.Lock()

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


def run_open(
    rate: float,
    seconds: float,
    search: Search,
    pool: int,
    tally: Recorder,
    queries: Sequence[str],
    seed: int = 11,
) -> OpenRun:
    """Offer Poisson arrivals at ``rate`` for ``seconds`` to ``pool`` agents (agent k calls
    ``search(k, query)``); every offered search is served, the last ones after the window."""
    offsets = poisson_offsets(rate, seconds, seed)
    work: queue.Queue[tuple[float, str] | None] = queue.Queue()
    busy = _Busy()

    def agent(k: int) -> None:
        while (item := work.get()) is not None:
            scheduled, query = item
            with busy:
                try:
                    hits = search(k, query)
                except Exception as exc:
                    tally.fail(exc)
                    continue
            tally.add((time.perf_counter() - scheduled) * 1000, hits)

    threads = [threading.Thread(target=agent, args=(k,), daemon=True) for k in range(pool)]
    for t in threads:
        t.start()
    rng = random.Random(seed + 1)
    start = time.perf_counter() + 0.05
    late = 0.0
    for offset in offsets:
        due = start + offset
        time.sleep(max(0.0, due - time.perf_counter()))
        late = max(late, time.perf_counter() - due)
        work.put((due, rng.choice(queries)))
    for _ in threads:
        work.put(None)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    return OpenRun(len(offsets), elapsed, busy.peak, pool, late * 1000)


def run_idle(
    seconds: float,
    search: Search,
    pause: tuple[float, float],
    tally: Recorder,
    queries: Sequence[str],
    seed: int = 5,
) -> None:
    """One agent that searches, then pauses a uniform ``pause`` (seconds) as an agent does
    while its model writes, until ``seconds`` have passed: the reference latency."""
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        start = time.perf_counter()
        try:
            hits = search(0, rng.choice(queries))
        except Exception as exc:
            tally.fail(exc)
        else:
            tally.add((time.perf_counter() - start) * 1000, hits)
        time.sleep(rng.uniform(*pause))


@dataclass
class Freshness:
    """Seconds from each edit's write to the first probe search that returned it."""

    lags: list[float] = field(default_factory=list)
    unseen: int = 0  # edits still not searchable when the run ended
    unseen_age: float = 0.0  # the oldest of those, seconds
    probes: int = 0  # the probe's own searches (not in the load's figures)

    def summary(self) -> dict[str, float | int]:
        lags = self.lags or [float("nan")]
        return {
            "edits": len(self.lags),
            "fresh_p50_s": float(np.percentile(lags, 50)),
            "fresh_max_s": max(max(lags), self.unseen_age),
            "unseen": self.unseen,
            "probe_searches": self.probes,
        }


Visible = Callable[[int, int], bool]  # (file, version) -> does a search return it yet


class FreshnessProbe(threading.Thread):
    """Follows the writer's edits (``edits``: file, version, time written by
    ``time.perf_counter``), oldest first: searches for each until a search returns that
    version (or a newer one), every ``interval`` seconds while one is pending."""

    def __init__(
        self, edits: queue.Queue[tuple[int, int, float]], visible: Visible, interval: float
    ) -> None:
        super().__init__(daemon=True)
        self.edits, self.visible, self.interval = edits, visible, interval
        self.result = Freshness()
        self.stop_now = threading.Event()
        self._pending: list[tuple[int, int, float]] = []

    def run(self) -> None:
        while not self.stop_now.is_set():
            self._take_new()
            if not self._pending:
                self.stop_now.wait(self.interval)
                continue
            i, version, written = self._pending[0]
            self.result.probes += 1
            try:
                seen = self.visible(i, version)
            except Exception:
                seen = False  # a failed probe is a miss; the load's errors are counted apart
            if seen:
                self.result.lags.append(time.perf_counter() - written)
                self._pending.pop(0)
            else:
                self.stop_now.wait(self.interval)
        self._take_new()
        now = time.perf_counter()
        self.result.unseen = len(self._pending)
        self.result.unseen_age = max((now - w for _, _, w in self._pending), default=0.0)

    def finish(self, timeout: float) -> Freshness:
        """Wait (at most ``timeout`` seconds) until every edit written so far was seen,
        then stop: call after the writer stopped, so its last run's edits are measured."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and (self._pending or not self.edits.empty()):
            time.sleep(self.interval)
        self.stop_now.set()
        self.join()
        return self.result

    def _take_new(self) -> None:
        while True:
            try:
                self._pending.append(self.edits.get_nowait())
            except queue.Empty:
                return


def latency_summary(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {"p50": float("nan"), "p95": float("nan"), "p99": float("nan")}
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return {"p50": float(p50), "p95": float(p95), "p99": float(p99)}
