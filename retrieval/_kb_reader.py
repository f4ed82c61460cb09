"""The live version of a knowledge base's index, open for reading: one snapshot shared by
every search, reopened when a writer published a new version (found by asking the store
before a search, or, for a snapshot that checks its version itself, by its ranking)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from kbgraph._base.logs import warn
from kbgraph.errors import DatabaseTimeoutError, DatabaseUnavailableError, IndexCorruptError

from ._storage import IndexStore, Snapshot, SnapshotMoved

_LOGGER = "kbgraph.retrieval"
_T = TypeVar("_T")
MOVED_TRIES = 3
"""Searches run again at most this often when a writer publishes during each of them."""


class LiveReader:
    """The store's live version, open (thread-safe)."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self._reader: Snapshot | None = None
        self._reader_key: str | None = None
        self._lock = threading.RLock()

    def open(self) -> Snapshot:
        """The live version, reopened when a writer published a new one."""
        with self._lock:
            key = self.store.current_key()
            # No index: the store's open() raises IndexNotFoundError saying what to run
            # (a database store's command needs its --store).
            if (
                self._reader is None
                or key is None
                or key != self._reader_key
                or getattr(self._reader, "outdated", False)  # it says a fresh open is due
            ):
                reader = self.store.open()
                if self._reader is not None:
                    self._reader.close()
                self._reader, self._reader_key = reader, key
            return self._reader

    def _for_search(self) -> Snapshot:
        """The open version when it checks its version itself (no question to the store
        before each search), else :meth:`open`."""
        with self._lock:
            reader = self._reader
        if (
            reader is not None
            and getattr(reader, "checks_version", False)
            and not getattr(reader, "outdated", False)
        ):
            return reader
        return self.open()

    def _forget(self, moved: Snapshot) -> None:
        with self._lock:
            if self._reader is moved:
                moved.close()
                self._reader, self._reader_key = None, None

    def reading(self, use: Callable[[Snapshot], _T]) -> _T:
        """``use`` the live version. A database connection lost on the way (a standby that
        went away mid-search) is retried once on a new connection, which goes to a server
        that answers (the primary when no standby does): the caller sees no error. A
        search that read a newer version than its snapshot's runs again on that version."""
        for _ in range(MOVED_TRIES):
            reader = self._for_search()
            try:
                return self._once(use, reader)
            except SnapshotMoved:
                self._forget(reader)
        raise DatabaseUnavailableError(
            f"the index of {self.store.location} changed during each of {MOVED_TRIES} tries "
            "of this search (a writer publishing faster than a search runs); search again"
        )

    def _once(self, use: Callable[[Snapshot], _T], reader: Snapshot) -> _T:
        try:
            return use(reader)
        except DatabaseTimeoutError:
            raise  # a lock or a slow statement: the server is there, another try waits again
        except DatabaseUnavailableError as exc:
            warn(_LOGGER, "a search lost its server; trying another: %s", exc)
            self.close()  # every connection of the lost server goes
            return use(self.open())

    def has_index(self) -> bool:
        try:
            return self.store.current_key() is not None
        except IndexCorruptError:
            return False

    def close(self) -> None:
        """Close the open version and the store's connections (a later read reopens)."""
        with self._lock:
            if self._reader is not None:
                self._reader.close()
            self._reader, self._reader_key = None, None
            self.store.close()


__all__ = ["LiveReader"]
