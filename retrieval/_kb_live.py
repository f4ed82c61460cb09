"""A knowledge base kept fresh: a folder walk at most once per time-to-live before a
search (:mod:`._freshness`), or, in live mode, a file watcher indexing changes as they
happen (:mod:`.watch`) while a freshness check walks nothing."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from kbgraph._base.logs import warn
from kbgraph.errors import ReadOnlyStoreError

from ._freshness import Freshness
from ._kb_reader import LiveReader

if TYPE_CHECKING:  # the watcher loads when it starts: most knowledge bases never watch
    from ._progress import ProgressCallback
    from ._reports import IndexReport
    from ._watch import FolderWatcher, WatchTarget

    class Kept(WatchTarget, Protocol):
        """What keeping a knowledge base fresh needs of it: its own ``index`` (the one a
        caller may have wrapped) and the metadata walk that says whether it is fresh."""

        def is_fresh(self) -> bool: ...


_LOGGER = "kbgraph.retrieval"


class LiveMode:
    """Freshness checks and the file watcher of one knowledge base."""

    def __init__(self, kb: Kept, live: LiveReader, ttl: float, wait_s: float) -> None:
        self._kb = kb
        self._live = live
        self._lock = threading.Lock()
        self._watcher: FolderWatcher | None = None
        self.freshness = Freshness(
            ttl=ttl,
            is_fresh=kb.is_fresh,
            index=self._index_unless_read_only,
            has_index=live.has_index,
            wait_s=wait_s,
        )

    def _index_unless_read_only(self, progress: ProgressCallback | None) -> IndexReport | None:
        """``ensure_fresh``'s run: an index nobody may write (a read-only mount, a
        snapshot) is searched as it is, stale or not, with a warning, instead of failing
        every search of the subgraph."""
        store = self._live.store
        if store.read_only():
            warn(_LOGGER, "%s is stale but read-only; searching it as it is", store.location)
            return None
        try:
            return self._kb.index(progress=progress)
        except ReadOnlyStoreError as exc:  # a standby: refused before anything was written
            if not self._live.has_index():
                raise
            warn(_LOGGER, "%s is stale; searching it as it is: %s", self._kb.folder, exc)
            return None

    def start(self) -> None:
        """Start the watcher (idempotent)."""
        with self._lock:
            if self._watcher is None:
                from ._watch import FolderWatcher

                self._watcher = FolderWatcher(self._kb, ignore=self._live.store.index_dir)
            self._watcher.start()
            self.freshness.watcher = self._watcher

    def stop(self) -> None:
        """Stop the watcher (after the run in progress); freshness checks walk again."""
        with self._lock:
            watcher, self._watcher = self._watcher, None
            self.freshness.watcher = None
            self.freshness.forget()
        if watcher is not None:
            watcher.stop()

    @property
    def running(self) -> bool:
        watcher = self._watcher
        return watcher is not None and watcher.running


__all__ = ["LiveMode"]
