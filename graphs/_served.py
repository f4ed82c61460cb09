"""Whether this process serves graphs behind kbgraph's request guard, and whether that
server may write indexes (issue 42 hole 2).

The guard (:mod:`kbgraph.graphs._served_guard`) stamps ``auto_index: false`` on what a
request creates, but a server also starts runs itself: a cron's runs, and the contexts it
stored before the guard stamped them (a cron made by an older kbgraph keeps ``auto_index:
true`` in ``.langgraph_api``). Those never pass the guard, so the Retrieve node asks here
as well: in a guarded process no run writes an index unless the server was started with
``KBGRAPH_ALLOW_INDEX=1``. A process without the guard (a script, ``kbgraph ask``, a
LangGraph server that does not mount kbgraph's app) is not affected.

The same holds for code: a knowledge base's ``retriever`` is an import path whose object
(or the function of no arguments returning it) kbgraph calls, so a request naming one
could call any function of the server's Python (``os:abort`` stopped it). A served run may
name only the objects its graph was built with (``object:<name>``) and the import paths of
``KBGRAPH_ALLOWED_RETRIEVERS`` (comma-separated, set before the server starts): the guard
refuses any other in the request, and the importer refuses it in a guarded process, for
the runs the server starts itself.

And for connections: a knowledge base's ``store`` and ``read_store`` are URLs the server
connects to (a request naming ``postgresql://…@anyhost`` made it connect anywhere). A
served run may name only the server's own ``KBGRAPH_STORE`` and ``KBGRAPH_READ_STORE`` and
the URLs of ``KBGRAPH_ALLOWED_STORES`` (separated by white space: a URL holds none, and a
URL of several hosts holds commas), exactly as written there; the guard refuses others,
and the searcher registry refuses them in a guarded process."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from kbgraph.errors import NotServedError

from ._settings import masked_url

INDEX_ENV = "KBGRAPH_ALLOW_INDEX"
RETRIEVERS_ENV = "KBGRAPH_ALLOWED_RETRIEVERS"
STORES_ENV = "KBGRAPH_ALLOWED_STORES"
SERVER_STORE_ENVS = ("KBGRAPH_STORE", "KBGRAPH_READ_STORE")

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


def allowed_retrievers() -> tuple[str, ...]:
    """The import paths a served run may name as a ``retriever``: those of
    ``KBGRAPH_ALLOWED_RETRIEVERS`` (comma-separated; an import path holds no comma)."""
    raw = os.environ.get(RETRIEVERS_ENV, "")
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def retriever_refusal(ref: str) -> str | None:
    """Why a served run may not import the retriever ``ref`` (an import path, stripped as
    the settings strip it), else ``None``."""
    allowed = allowed_retrievers()
    if ref in allowed:
        return None
    return (
        f"the retriever {ref[:200]!r} is not one this server was started with (allowed: "
        f"{', '.join(allowed) or 'none'}); a request may not name code to import: list its "
        f"import path in {RETRIEVERS_ENV} before starting the server, or build a graph with "
        "build_rag_graph(knowledge_bases={name: store}) and name that graph in langgraph.json"
    )


def check_retriever(ref: str) -> None:
    """A ``NotServedError`` for a retriever a guarded process was not started with: runs
    the server starts itself (a cron's, a stored assistant's) never pass the guard."""
    refused = retriever_refusal(ref) if _serving > 0 else None
    if refused is not None:
        raise NotServedError(refused)


def allowed_stores() -> tuple[str, ...]:
    """The store URLs a served run may name (see the module docstring)."""
    given = [os.environ.get(name, "").strip() for name in SERVER_STORE_ENVS]
    listed = os.environ.get(STORES_ENV, "").split()
    return tuple(dict.fromkeys(url for url in [*given, *listed] if url))


def store_refusal(key: str, url: str) -> str | None:
    """Why a served run may not connect to ``url`` as its ``key`` (``store`` or
    ``read_store``, stripped as the settings strip it), else ``None``. Passwords are masked:
    the line goes back to the client and into logs."""
    allowed = allowed_stores()
    if url in allowed:
        return None
    shown = ", ".join(masked_url(a) for a in allowed) or "none"
    return (
        f"the {key} {masked_url(url)[:200]!r} is not one this server was started with "
        f"(allowed: {shown}); a request connects only to the server's own stores: list the "
        f"URL in {STORES_ENV} (separated by spaces) or set {SERVER_STORE_ENVS[0]} before "
        "starting the server"
    )


def check_stores(store: str | None, read_store: str | None) -> None:
    """A ``NotServedError`` for a store a guarded process was not started with (the runs
    the server starts itself never pass the guard)."""
    if _serving == 0:
        return
    for key, url in (("store", store), ("read_store", read_store)):
        refused = store_refusal(key, url) if url is not None else None
        if refused is not None:
            raise NotServedError(refused)


__all__ = [
    "INDEX_ENV",
    "RETRIEVERS_ENV",
    "SERVER_STORE_ENVS",
    "STORES_ENV",
    "allowed_retrievers",
    "allowed_stores",
    "check_retriever",
    "check_stores",
    "index_allowed",
    "index_refused",
    "retriever_refusal",
    "serving",
    "store_refusal",
]
