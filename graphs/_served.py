"""Whether this process serves graphs behind kbgraph's request guard, and whether that
server may write indexes (issue 42 hole 2).

The guard (:mod:`kbgraph.graphs._served_guard`) stamps ``auto_index: false`` on what a
request creates, but a server also starts runs itself: a cron's runs, and the contexts it
stored before the guard stamped them (a cron made by an older kbgraph keeps ``auto_index:
true`` in ``.langgraph_api``). Those never pass the guard, so the Retrieve node asks here
as well: in a guarded process no run writes an index unless the server was started with
``KBGRAPH_ALLOW_INDEX=1``. A process without the guard (a script, ``kbgraph ask``, a
LangGraph server that does not mount kbgraph's app) is not affected."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

INDEX_ENV = "KBGRAPH_ALLOW_INDEX"

_serving = 0


@contextlib.asynccontextmanager
async def serving(_app: Any) -> AsyncIterator[None]:
    """The lifespan of kbgraph's served apps (the server runs it from start to stop,
    before its crons): while it lasts, this process serves requests from outside. A
    lifespan rather than a flag set on import, so that importing an app (a test, a
    script) changes nothing in the process."""
    global _serving
    _serving += 1
    try:
        yield
    finally:
        _serving -= 1


def index_allowed() -> bool:
    """Whether the server was started to let runs write indexes."""
    return os.environ.get(INDEX_ENV, "").strip().lower() in ("1", "true", "yes")


def index_refused() -> bool:
    """True in a guarded process started without ``KBGRAPH_ALLOW_INDEX``: ``auto_index``
    is then ignored, whatever context a run carries."""
    return _serving > 0 and not index_allowed()


__all__ = ["INDEX_ENV", "index_allowed", "index_refused", "serving"]
