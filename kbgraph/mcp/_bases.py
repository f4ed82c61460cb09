"""The open knowledge bases of a server, and what it knows of their freshness.

Each is opened once, on first use (loading its embedding model then), and shared by every
call: ``KnowledgeBase`` is safe for concurrent searches. Whether an index is stale is a
walk of the folder's metadata, so it is checked at most once per :data:`FRESHNESS_TTL_S`
seconds per knowledge base; a search is never slowed by more than that one walk."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from ._schemas import Freshness
from ._settings import McpSettings, ServedBase

if TYPE_CHECKING:
    from kbgraph.retrieval import KnowledgeBase

FRESHNESS_TTL_S = 5.0


def stale_note(kb: str, stale: int | None) -> str | None:
    """What a stale index means for the results, and what to do."""
    if stale == 0:
        return None
    what = (
        "was built with other settings or is missing"
        if stale is None
        else f"is {stale} file(s) behind its folder"
    )
    return (
        f"the index of {kb} {what}: results may miss new text or cite lines that changed; "
        f"run `kbgraph index` on its folder, or serve with --auto-index or --watch"
    )


class OpenBases:
    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self._open: dict[str, KnowledgeBase] = {}
        self._stale: dict[str, tuple[float, int | None]] = {}
        self._guard = threading.Lock()
        self._locks = {kb.name: threading.Lock() for kb in settings.knowledge_bases}

    def get(self, base: ServedBase) -> KnowledgeBase:
        found = self._open.get(base.name)
        if found is not None:
            return found
        with self._locks[base.name]:  # one opening (one model load) per knowledge base
            found = self._open.get(base.name)
            if found is None:
                found = self._open_one(base)
                with self._guard:
                    self._open[base.name] = found
        return found

    def _open_one(self, base: ServedBase) -> KnowledgeBase:
        from kbgraph.retrieval import KnowledgeBase

        embedding = self.settings.embedding
        return KnowledgeBase(
            base.folder,
            embedding=None if embedding == "none" else embedding,
            store=base.store,
            index_dir=base.index_dir,
            live=self.settings.watch,
        )

    def prepare(self, base: ServedBase) -> KnowledgeBase:
        """The knowledge base, brought up to date first when the server may write."""
        kb = self.get(base)
        if self.settings.auto_index or self.settings.watch:
            kb.ensure_fresh()
            with self._guard:
                self._stale.pop(base.name, None)
        return kb

    def freshness(self, base: ServedBase, *, fresh: bool = False) -> Freshness:
        kb = self.get(base)
        live = kb.live
        if live:
            return Freshness(kb=base.name, stale_files=0, live=True)
        now = time.monotonic()
        with self._guard:
            cached = self._stale.get(base.name)
        if fresh or cached is None or now - cached[0] > FRESHNESS_TTL_S:
            cached = (now, kb.stale_files())
            with self._guard:
                self._stale[base.name] = cached
        stale = cached[1]
        return Freshness(
            kb=base.name, stale_files=stale, live=False, note=stale_note(base.name, stale)
        )

    def forget_freshness(self, name: str) -> None:
        with self._guard:
            self._stale.pop(name, None)

    def close(self) -> None:
        with self._guard:
            opened, self._open = list(self._open.values()), {}
        for kb in opened:
            kb.close()


__all__ = ["FRESHNESS_TTL_S", "OpenBases", "stale_note"]
