"""The open-loop machinery of ``benchmarks/bench_load.py`` (``benchmarks/_load_open.py``):
seeded Poisson arrivals, latency from the scheduled arrival (queueing counts), and the
freshness probe. No speed target here: the bounds are what the arithmetic forces."""

from __future__ import annotations

import queue
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _load_open import FreshnessProbe, poisson_offsets, run_open


class Seen:
    """A recorder (``bench_load.Tally``'s interface) that keeps what it was given."""

    def __init__(self) -> None:
        self.ms: list[float] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def add(self, ms: float, hits: list[tuple[str, str]]) -> None:
        with self.lock:
            self.ms.append(ms)

    def fail(self, exc: BaseException) -> None:
        with self.lock:
            self.errors.append(repr(exc))


def test_poisson_arrivals_are_seeded_and_at_the_rate() -> None:
    offsets = poisson_offsets(100.0, 20.0, seed=3)
    assert offsets == poisson_offsets(100.0, 20.0, seed=3)
    assert offsets != poisson_offsets(100.0, 20.0, seed=4)
    assert offsets == sorted(offsets) and offsets[0] > 0 and offsets[-1] < 20.0
    # 2,000 expected; a Poisson count's standard deviation is sqrt(2000) ≈ 45
    assert 1800 < len(offsets) < 2200


def test_latency_runs_from_the_scheduled_arrival_so_queueing_counts() -> None:
    # One agent, 50 ms a search, 100 arrivals a second: it falls behind, and the last
    # searches wait for all the earlier ones. Timed from pick-up, every search would
    # take ~50 ms and the overload would not show.
    service, rate, window = 0.05, 100.0, 0.6
    offered = len(poisson_offsets(rate, window, seed=11))
    seen = Seen()

    def search(k: int, query: str) -> list[tuple[str, str]]:
        time.sleep(service)
        return []

    run = run_open(rate, window, search, pool=1, tally=seen, queries=["q"], seed=11)
    assert run.offered == offered == len(seen.ms) and not seen.errors
    assert run.peak_busy == 1
    # the last arrival came before the window ended, and waited for every search before it
    backlog_ms = (offered * service - window) * 1000
    assert offered > 30 and max(seen.ms) >= backlog_ms > 1000


def test_a_failed_search_is_an_error_not_a_latency() -> None:
    seen = Seen()

    def search(k: int, query: str) -> list[tuple[str, str]]:
        raise ConnectionError("server closed the connection")

    run = run_open(40.0, 0.3, search, pool=2, tally=seen, queries=["q"], seed=2)
    assert run.offered > 0 and len(seen.errors) == run.offered and not seen.ms


def test_the_probe_times_each_edit_until_a_search_returns_it() -> None:
    edits: queue.Queue[tuple[int, int, float]] = queue.Queue()
    published: dict[int, int] = {}  # file -> the version searches return

    probe = FreshnessProbe(edits, lambda i, v: published.get(i, 0) >= v, interval=0.01)
    probe.start()
    edits.put((1, 1, time.perf_counter()))
    edits.put((2, 1, time.perf_counter()))
    time.sleep(0.2)
    published[1] = published[2] = 1  # both indexed 0.2 s after their writes
    time.sleep(0.1)
    edits.put((3, 1, time.perf_counter()))  # never indexed
    result = probe.finish(timeout=0.2)
    assert len(result.lags) == 2 and all(0.2 <= lag < 1.0 for lag in result.lags)
    assert result.unseen == 1 and result.unseen_age >= 0.2
    assert result.summary()["fresh_max_s"] >= 0.2
