"""Whether this process serves graphs behind kbgraph's request guard, and whether that
server may write indexes (issue 42 hole 2).

The guard (:mod:`kbgraph.graphs._served_guard`) stamps ``auto_index: false`` on what a
request creates, but a server also starts runs itself: a cron's runs, and the contexts it
stored before the guard stamped them (a cron made by an older kbgraph keeps ``auto_index:
true`` in ``.langgraph_api``). Those never pass the guard, so the Retrieve node asks here
as well: in a guarded process no run writes an index (``auto_index``, or ``live``: a
watcher's first run indexes the folder) unless the server was started with
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
and the searcher registry refuses them in a guarded process.

Model specs too, where they name a place: ``chat_model`` and ``answer_check.judge``
``openai_compatible:<model>@<url>`` (sent the server's ``OPENAI_API_KEY`` to that URL) and
``gguf:<path>``, an ``embedding`` of a URL or of ``local:<model or path>`` other than the
packaged model. A served run may use such a spec only when it is the server's own
``KBGRAPH_CHAT_MODEL`` or ``KBGRAPH_EMBEDDING`` or one of ``KBGRAPH_ALLOWED_MODELS``
(separated by white space), exactly; specs naming a provider (``openai:<model>``,
``anthropic:<model>``, ``fake``, ``local``) reach that provider as the server is set up
for it, and stay allowed."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from kbgraph.errors import ConfigError, NotServedError

from ._settings import masked_url

INDEX_ENV = "KBGRAPH_ALLOW_INDEX"
RETRIEVERS_ENV = "KBGRAPH_ALLOWED_RETRIEVERS"
STORES_ENV = "KBGRAPH_ALLOWED_STORES"
SERVER_STORE_ENVS = ("KBGRAPH_STORE", "KBGRAPH_READ_STORE")
MODELS_ENV = "KBGRAPH_ALLOWED_MODELS"
SERVER_MODEL_ENVS = ("KBGRAPH_CHAT_MODEL", "KBGRAPH_EMBEDDING")
CHAT_PLACES = ("gguf", "openai_compatible")
"""Chat model providers whose spec names where the model is (a file, a server's URL)."""

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
    and ``live`` are then ignored, whatever context a run carries."""
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
    return _started_with(SERVER_STORE_ENVS, STORES_ENV)


def _started_with(own: tuple[str, ...], listed: str) -> tuple[str, ...]:
    """The values of the server's own variables ``own`` and the white-space separated
    values of ``listed``, in that order, each once."""
    given = [os.environ.get(name, "").strip() for name in own]
    return tuple(dict.fromkeys(v for v in [*given, *os.environ.get(listed, "").split()] if v))


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


def names_a_place(key: str, spec: str) -> bool:
    """Whether a model spec (of ``key``: ``embedding``, ``chat_model`` or
    ``answer_check.judge``) names where its model is: a URL or a file, read with the
    parser that resolves it (a spec it refuses, the graph refuses too: no place)."""
    text = spec.strip()
    if key != "embedding":
        return text.partition(":")[0].strip().lower() in CHAT_PLACES
    if text.lower() in ("", "auto", "none"):
        return False
    from kbgraph.retrieval._internal import parse_spec

    try:
        parsed = parse_spec(text)
    except ConfigError:
        return False
    # The packaged model, at fp32 or int8, is the server's own files: no place of a run's.
    packaged = {parse_spec(own).model for own in ("local", "local#int8")}
    return parsed.base_url is not None or (
        parsed.provider == "local" and parsed.model not in packaged
    )


def model_refusal(key: str, spec: str) -> str | None:
    """Why a served run may not use the model ``spec`` as its ``key``, else ``None``."""
    allowed = _started_with(SERVER_MODEL_ENVS, MODELS_ENV)
    if not names_a_place(key, spec) or spec.strip() in allowed:
        return None
    shown = ", ".join(masked_url(a) for a in allowed) or "none"
    return (
        f"the {key} {masked_url(spec.strip())[:200]!r} names a server or a file this server "
        f"was not started with (allowed: {shown}); list the spec in {MODELS_ENV} (separated "
        "by spaces) before starting the server, or name a provider's model "
        "(openai:<model>, anthropic:<model>, ...)"
    )


def check_model(key: str, spec: str | None) -> None:
    """A ``NotServedError`` for a model spec a guarded process was not started with (the
    runs the server starts itself never pass the guard)."""
    refused = model_refusal(key, spec) if spec is not None and _serving > 0 else None
    if refused is not None:
        raise NotServedError(refused)


__all__ = [
    "CHAT_PLACES",
    "INDEX_ENV",
    "MODELS_ENV",
    "RETRIEVERS_ENV",
    "SERVER_MODEL_ENVS",
    "SERVER_STORE_ENVS",
    "STORES_ENV",
    "allowed_retrievers",
    "allowed_stores",
    "check_model",
    "check_retriever",
    "check_stores",
    "index_allowed",
    "index_refused",
    "model_refusal",
    "names_a_place",
    "retriever_refusal",
    "serving",
    "store_refusal",
]
