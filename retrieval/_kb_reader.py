"""The live version of a knowledge base's index, open for reading: one snapshot shared by
every search, reopened when a writer published a new version."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from kbgraph.errors import DatabaseUnavailableError, IndexCorruptError

from .storage import IndexStore, Snapshot

logger = logging.getLogger("kbgraph.retrieval")
_T = TypeVar("_T")


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
            if self._reader is None or key is None or key != self._reader_key:
                reader = self.store.open()
                if self._reader is not None:
                    self._reader.close()
                self._reader, self._reader_key = reader, key
            return self._reader

    def reading(self, use: Callable[[Snapshot], _T]) -> _T:
        """``use`` the live version. A database connection lost on the way (a standby that
        went away mid-search) is retried once on a new connection, which goes to a server
        that answers (the primary when no standby does): the caller sees no error."""
        try:
            return use(self.open())
        except DatabaseUnavailableError as exc:
            logger.warning("a search lost its server; trying another: %s", exc)
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
