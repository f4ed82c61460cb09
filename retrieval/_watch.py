"""Keeping an index live: a file watcher turns bursts of changes into incremental runs.

    watcher = FolderWatcher(kb, ignore=kb.store.index_dir, on_run=report)
    watcher.run()      # in the foreground (``kbgraph watch``) until Ctrl-C or stop()
    watcher.start()    # or on a background thread (``KnowledgeBase(live=True)``)

watchfiles (the Rust ``notify`` crate: inotify, FSEvents, ReadDirectoryChangesW) reports
changes and groups a burst into one set: changes less than ``step_ms`` apart, for at most
``debounce_ms``. Changes that arrive while a run is busy wait in its queue and make the
next set, so a ``git checkout`` of a thousand files is one or a few runs, never a
thousand. Each run is the knowledge base's own incremental ``index()``: it rescans file
metadata with the same include/exclude/deny rules, reuses unchanged files and embeds only
new text. A run that fails (the embedding provider is down, another writer holds the lock
too long) leaves the last good index in place and is tried again later with backoff;
changes that arrive meanwhile join that retry. A configuration error (a model mismatch,
settings that do not validate) cannot heal by waiting, and stops the watcher.

The watcher needs only :class:`WatchTarget` of a knowledge base, so it works for any store
behind ``index()``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kbgraph.errors import ConfigError, KbgraphError, ModelMismatchError

from ._config import ScanConfig
from ._embeddings import backoff_delay
from ._scan_paths import PathRules
from ._storage import FileRecord

if TYPE_CHECKING:
    from ._progress import ProgressCallback
    from ._reports import IndexReport

DEBOUNCE_MS = 1600  # watchfiles' default: the longest a burst is grouped for
STEP_MS = 50  # quiet time that ends a burst
TICK_MS = 500  # how often an idle watcher wakes up (retries, stop requests)
RETRY_BASE_S = 2.0
RETRY_CAP_S = 60.0


class WatchTarget(Protocol):
    """What the watcher needs of a knowledge base."""

    folder: Path
    scan_config: ScanConfig

    def index(
        self,
        *,
        progress: ProgressCallback | None = None,
        rebuild: bool = False,
        allow_model_change: bool = True,
    ) -> IndexReport: ...

    def indexed_files(self) -> dict[str, FileRecord]: ...


@dataclass(frozen=True, slots=True)
class FileChanges:
    """What one run changed in the index, by file (a rename is a file whose content
    disappeared under one name and appeared under another)."""

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.deleted or self.renamed)

    def describe(self, *, listed: int = 3) -> str:
        """``1 modified (guide.md), 1 renamed (a.md -> b.md)``; "no file changed" when empty."""
        parts = []
        groups: list[tuple[str, list[str]]] = [
            ("added", list(self.added)),
            ("modified", list(self.modified)),
            ("deleted", list(self.deleted)),
            ("renamed", [f"{a} -> {b}" for a, b in self.renamed]),
        ]
        for name, items in groups:
            if items:
                shown = ", ".join(items[:listed]) + (", …" if len(items) > listed else "")
                parts.append(f"{len(items)} {name} ({shown})")
        return ", ".join(parts) or "no file changed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": list(self.added),
            "modified": list(self.modified),
            "deleted": list(self.deleted),
            "renamed": [{"from": a, "to": b} for a, b in self.renamed],
        }


def diff_files(before: Mapping[str, FileRecord], after: Mapping[str, FileRecord]) -> FileChanges:
    """The files an index run added, modified (other content), deleted or renamed (the same
    content under a new name)."""
    added = sorted(after.keys() - before.keys())
    deleted = sorted(before.keys() - after.keys())
    modified = sorted(
        k for k in before.keys() & after.keys() if before[k].sha256 != after[k].sha256
    )
    by_content: dict[str, list[str]] = {}
    for rel in added:
        by_content.setdefault(after[rel].sha256, []).append(rel)
    renamed: list[tuple[str, str]] = []
    for rel in deleted:
        targets = by_content.get(before[rel].sha256)
        if targets:
            renamed.append((rel, targets.pop(0)))
    moved_from = {a for a, _ in renamed}
    moved_to = {b for _, b in renamed}
    return FileChanges(
        added=tuple(r for r in added if r not in moved_to),
        modified=tuple(modified),
        deleted=tuple(r for r in deleted if r not in moved_from),
        renamed=tuple(renamed),
    )


@dataclass(frozen=True, slots=True)
class WatchRun:
    """One index run of the watcher: what it changed, or why it failed. ``retry_in`` is the
    delay before the next attempt after a failure."""

    changes: FileChanges
    seconds: float
    events: int  # file-system events that led to this run (0 for the first, catch-up run)
    report: IndexReport | None = None
    error: Exception | None = None
    retry_in: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ok": self.ok,
            "events": self.events,
            "seconds": round(self.seconds, 3),
            "changes": self.changes.to_dict(),
        }
        if self.report is not None:
            data = self.report.to_dict()
            keys = ("embedded", "reused", "fileCount", "chunkCount", "failedEmbeddings")
            out.update({k: data[k] for k in keys})
        if self.error is not None:
            out["error"] = f"{type(self.error).__name__}: {self.error}"
            out["retryIn"] = self.retry_in
        return out


@dataclass
class _State:
    pending: bool = True  # the first run catches up with changes made while unwatched
    busy: bool = False
    events: int = 0
    runs: int = 0
    last: WatchRun | None = None
    fatal: BaseException | None = None
    known: set[str] = field(default_factory=set)  # indexed files and their folders


class FolderWatcher:
    """Watch ``target.folder`` and bring its index up to date after every burst of changes.
    ``ignore`` is the index folder when it lies inside the watched folder; ``on_run`` is
    called after every run, successful or not (from the watching thread)."""

    def __init__(
        self,
        target: WatchTarget,
        *,
        ignore: Path | None = None,
        on_run: Callable[[WatchRun], None] | None = None,
        debounce_ms: int = DEBOUNCE_MS,
        step_ms: int = STEP_MS,
        tick_ms: int = TICK_MS,
        retry_base: float = RETRY_BASE_S,
        retry_cap: float = RETRY_CAP_S,
    ) -> None:
        self.target = target
        self.rules = PathRules(target.folder, target.scan_config, index_dir=ignore)
        self.on_run = on_run
        self.debounce_ms, self.step_ms, self.tick_ms = debounce_ms, step_ms, tick_ms
        self.retry_base, self.retry_cap = retry_base, retry_cap
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._state = _State()
        self._thread: threading.Thread | None = None
        self._rng = random.Random()

    # -- running ----------------------------------------------------------------------
    def run(self) -> None:
        """Watch until :meth:`stop` (or Ctrl-C, which propagates as ``KeyboardInterrupt``).
        Raises the ``ConfigError`` that stopped it, if any."""
        import watchfiles

        failures = 0
        retry_at = 0.0
        try:
            for raw in watchfiles.watch(
                self.rules.root,
                watch_filter=lambda _change, path: self.rules.could_hold(path),
                debounce=self.debounce_ms,
                step=self.step_ms,
                stop_event=self._stop,
                rust_timeout=self.tick_ms,
                yield_on_timeout=True,
                raise_interrupt=True,
            ):
                if raw and self._relevant(raw):
                    with self._cond:
                        self._state.pending = True
                        self._state.events += len(raw)
                if not self._state.pending or time.monotonic() < retry_at:
                    continue
                run = self._apply(failures)
                if run.ok:
                    failures, retry_at = 0, 0.0
                else:
                    failures += 1
                    retry_at = time.monotonic() + (run.retry_in or 0.0)
        except BaseException as exc:
            with self._cond:
                self._state.fatal = exc
                self._cond.notify_all()
            raise
        finally:
            with self._cond:
                self._state.busy = False
                self._cond.notify_all()

    def start(self) -> None:
        """Run on a daemon thread (idempotent)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run_quietly, name="kbgraph-watch", daemon=True)
        self._thread.start()

    def _run_quietly(self) -> None:
        try:
            self.run()
        except Exception:  # kept in the state; wait_idle() raises it to the caller
            return

    def stop(self, timeout: float | None = 10.0) -> None:
        """Ask the watcher to stop after the run in progress, and wait for its thread."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- state ------------------------------------------------------------------------
    def wait_idle(self, timeout: float) -> WatchRun | None:
        """Wait (at most ``timeout`` seconds) until no change is waiting for a run and none
        is running, then return the last run. A run that failed and waits for its retry
        counts as idle: the last good index is what there is. Raises the error that
        stopped the watcher, if one did."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                state = self._state
                if state.fatal is not None and not isinstance(state.fatal, KeyboardInterrupt):
                    raise state.fatal
                waiting = state.busy or (state.pending and not self._failed_last())
                remaining = deadline - time.monotonic()
                if not waiting or remaining <= 0 or self._stop.is_set():
                    return state.last
                self._cond.wait(min(remaining, self.tick_ms / 1000))

    def _failed_last(self) -> bool:
        return self._state.last is not None and not self._state.last.ok

    @property
    def last_run(self) -> WatchRun | None:
        with self._cond:
            return self._state.last

    # -- one run ----------------------------------------------------------------------
    def _relevant(self, raw: set[tuple[Any, str]]) -> bool:
        """A change the scan could see: an included file, a folder (a folder moved in or
        out carries its files), or the deletion of an indexed file or folder."""
        import watchfiles

        known = self._state.known
        for change, path in raw:
            rel = self.rules.relative(path)
            if rel is None:
                continue
            if self.rules.includes(rel) or rel in known:
                return True
            if change != watchfiles.Change.deleted and os.path.isdir(path):
                return True
        return False

    def _files(self) -> dict[str, FileRecord]:
        try:
            return self.target.indexed_files()
        except KbgraphError:  # no index yet, or an unreadable one the run will rebuild
            return {}

    def _apply(self, failures: int) -> WatchRun:
        with self._cond:
            events, self._state.events = self._state.events, 0
            self._state.pending, self._state.busy = False, True
        before = self._files()
        start = time.perf_counter()
        try:
            # A watcher never re-embeds a whole index with another model on its own.
            report = self.target.index(allow_model_change=False)
        except (ConfigError, ModelMismatchError):
            raise  # cannot heal by waiting: stops the watcher
        except (KbgraphError, OSError) as exc:
            delay = backoff_delay(
                failures, None, jitter=self._rng.random(), base=self.retry_base, cap=self.retry_cap
            )
            run = WatchRun(
                FileChanges(), time.perf_counter() - start, events, error=exc, retry_in=delay
            )
            with self._cond:
                self._state.pending = True
        else:
            after = self._files()
            changes = diff_files(before, after)
            run = WatchRun(changes, time.perf_counter() - start, events, report=report)
            self._remember(after)
        with self._cond:
            self._state.busy = False
            self._state.runs += 1
            self._state.last = run
            self._cond.notify_all()
        if self.on_run is not None:
            self.on_run(run)
        return run

    def _remember(self, files: Mapping[str, FileRecord]) -> None:
        known: set[str] = set()
        for rel in files:
            parts = rel.split("/")
            known.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        with self._cond:
            self._state.known = known


__all__ = ["FileChanges", "FolderWatcher", "WatchRun", "WatchTarget", "diff_files"]
